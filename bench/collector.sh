#!/bin/sh
# Collector throughput against the HTTP limit: wrk POSTs the demo site's metric tool
# (shop.getSalesSummary, the brief's args, the bearer token) at CONCURRENCY connections; then
# servio worker processes collect JOBS due values from the same site with the same number of
# calls in flight (CONCURRENCY, split over WORKERS), each value committed durably to PostgreSQL
# in the workers' fenced group commits. Prints collections/s / wrk requests/s (target >= 0.5).
# Results go in BENCHMARKS.md.
#
# Environment: SERVIO_BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test; a
# fresh schema is used), JOBS (40000), CONCURRENCY (64), WORKERS (2), BATCH (jobs per lease,
# 128), DURATION (10s), PROFILE (release; `dev` for a quick smoke test of the script, whose
# figures mean nothing), BIN_DIR (take `servio` and `collector_bench` from there instead of
# building them: to compare builds of two commits in one session), WRK (0 skips the wrk run).
#
# Also prints the CPU each side spent per collection while the workers ran (bench/cpu.py, from
# /proc: every process of a PostgreSQL server on this machine, exited backends included; the
# workers, as the collector waited for them; the demo site).
set -eu
cd "$(dirname "$0")/.."
database_url=${SERVIO_BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
jobs=${JOBS:-40000}
concurrency=${CONCURRENCY:-64}
workers=${WORKERS:-2}
batch=${BATCH:-128}
duration=${DURATION:-10s}
profile=${PROFILE:-release}
case $profile in dev) out=debug ;; *) out=$profile ;; esac
in_flight=$((concurrency / workers))
[ "$in_flight" -ge 1 ] || { echo "CONCURRENCY must be at least WORKERS" >&2; exit 2; }

. bench/lib.sh
need_wrk
if [ -n "${BIN_DIR:-}" ]; then
    servio="$BIN_DIR/servio"
    collector_bench="$BIN_DIR/collector_bench"
else
    cargo build --profile "$profile" --quiet -p servio-cli --bin servio
    cargo build --profile "$profile" --quiet -p servio-platform --example collector_bench
    target_dir=$(target_dir)
    servio="$target_dir/$out/servio"
    collector_bench="$target_dir/$out/examples/collector_bench"
fi

port=$(free_port)
token=bench-$(random_hex 8)
"$servio" demo-site --addr "127.0.0.1:$port" --tls-dir "$tmp" --token "$token" >"$tmp/site.log" 2>&1 &
server_pid=$!
wait_for_port "$port"
[ -s "$tmp/ca.pem" ] || { echo "the demo site wrote no CA certificate" >&2; exit 2; }
origin="https://localhost:$port"
url="$origin/api/servio/tools/shop.getSalesSummary"

if [ "${WRK:-1}" != 0 ]; then
    echo "wrk: $concurrency connections, $duration"
    SERVIO_BENCH_TOKEN=$token wrk -t2 -c"$concurrency" -d"$duration" -s bench/collector.lua "$url" | tee "$tmp/wrk.txt"
    if grep -q "Non-2xx" "$tmp/wrk.txt"; then
        echo "wrk got error answers: the benchmark is void" >&2
        exit 1
    fi
fi

echo "collector: $jobs jobs, $workers workers x $in_flight calls in flight, leases of $batch"
# The CPU window opens when the jobs are seeded (the workers start then) and closes when the
# collector exits, its workers done.
"$collector_bench" "$servio" "$origin" "$token" "$tmp/ca.pem" "$database_url" \
    "$jobs" "$workers" "$in_flight" "$batch" >"$tmp/collector.txt" 2>"$tmp/collector.err" &
collector_pid=$!
until grep -q "^seeded" "$tmp/collector.err" || ! kill -0 "$collector_pid" 2>/dev/null; do sleep 0.02; done
python3 bench/cpu.py snapshot "$server_pid" >"$tmp/cpu-before.json"
wait "$collector_pid" || { cat "$tmp/collector.err" >&2; exit 1; }
python3 bench/cpu.py snapshot "$server_pid" >"$tmp/cpu-after.json"
cat "$tmp/collector.err" "$tmp/collector.txt"
collector_rps=$(awk '/^collections\/s:/ { print $2 }' "$tmp/collector.txt")
worker_ticks=$(awk '/^worker_cpu_ticks:/ { print $2 }' "$tmp/collector.txt")
python3 bench/cpu.py split "$tmp/cpu-before.json" "$tmp/cpu-after.json" "$jobs" "${worker_ticks:-0}"

if [ "${WRK:-1}" != 0 ]; then
    wrk_rps=$(awk '/^Requests\/sec:/ { print $2 }' "$tmp/wrk.txt")
    python3 -c "print(f'collector {float($collector_rps):.0f}/s vs wrk {float($wrk_rps):.0f}/s: {float($collector_rps) / float($wrk_rps):.2f}x (target >= 0.5x)')"
fi
