#!/bin/sh
# Collector throughput against the HTTP limit: wrk POSTs the demo site's metric tool
# (shop.getSalesSummary, the brief's args, the bearer token) at CONCURRENCY connections; then
# servio worker processes collect JOBS due values from the same site with the same number of
# calls in flight (CONCURRENCY, split over WORKERS), each value committed durably to PostgreSQL
# in the workers' fenced group commits. Prints collections/s / wrk requests/s (target >= 0.5).
# Results go in BENCHMARKS.md.
#
# Environment: SERVIO_BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test; a
# fresh schema is used), JOBS (40000), CONCURRENCY (64), WORKERS (2), BATCH (jobs per claim,
# 128), DURATION (10s), PROFILE (release; `dev` for a quick smoke test of the script, whose
# figures mean nothing).
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
cargo build --profile "$profile" --quiet -p servio-cli --bin servio
cargo build --profile "$profile" --quiet -p servio-platform --example collector_bench
target_dir=$(target_dir)
servio="$target_dir/$out/servio"

port=$(free_port)
token=bench-$(random_hex 8)
"$servio" demo-site --addr "127.0.0.1:$port" --tls-dir "$tmp" --token "$token" >"$tmp/site.log" 2>&1 &
server_pid=$!
wait_for_port "$port"
[ -s "$tmp/ca.pem" ] || { echo "the demo site wrote no CA certificate" >&2; exit 2; }
origin="https://localhost:$port"
url="$origin/api/servio/tools/shop.getSalesSummary"

echo "wrk: $concurrency connections, $duration"
SERVIO_BENCH_TOKEN=$token wrk -t2 -c"$concurrency" -d"$duration" -s bench/collector.lua "$url" | tee "$tmp/wrk.txt"
if grep -q "Non-2xx" "$tmp/wrk.txt"; then
    echo "wrk got error answers: the benchmark is void" >&2
    exit 1
fi
wrk_rps=$(awk '/^Requests\/sec:/ { print $2 }' "$tmp/wrk.txt")

echo "collector: $jobs jobs, $workers workers x $in_flight calls in flight, claims of $batch"
"$target_dir/$out/examples/collector_bench" "$servio" "$origin" "$token" "$tmp/ca.pem" "$database_url" \
    "$jobs" "$workers" "$in_flight" "$batch" | tee "$tmp/collector.txt"
collector_rps=$(awk '/^collections\/s:/ { print $2 }' "$tmp/collector.txt")

python3 -c "print(f'collector {float($collector_rps):.0f}/s vs wrk {float($wrk_rps):.0f}/s: {float($collector_rps) / float($wrk_rps):.2f}x (target >= 0.5x)')"
