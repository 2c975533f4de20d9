#!/bin/sh
# Dashboard benchmark: p99 latency of GET /api/dashboard under 64 concurrent connections for a
# user with 50 metrics and 730 days of daily values, against the same server answering the same
# bytes as a static file (see crates/servio-platform/examples/dashboard_bench.rs; Nagle's
# algorithm off on both, as in `servio serve`), and the dashboard page (HTML, the default 28-day
# charts) for the same user. Then the uncached mode: the same dashboard of USERS other users
# (default 64) from a server keeping none, a different user on every request, under 64
# connections ("uncached") and one connection ("render": one render at a time, its p50 is what
# one render costs).
# Runs alternate, static first: ROUNDS rounds (default 3) of DURATION each (default 10s).
# Results go in BENCHMARKS.md.
set -eu
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
duration=${DURATION:-10s}
. bench/lib.sh
need_wrk
# BIN_DIR: take `dashboard_bench` from there instead of building it (to compare two commits).
if [ -n "${BIN_DIR:-}" ]; then
    bench_bin="$BIN_DIR/dashboard_bench"
else
    cargo build --release --quiet -p servio-platform --example dashboard_bench
    bench_bin="$(target_dir)/release/examples/dashboard_bench"
fi

# Seeding prints its progress on stderr; READY on stdout once the server answers.
"$bench_bin" "$tmp/data" > "$tmp/server.out" &
server_pid=$!
waited=0
until grep -q '^READY ' "$tmp/server.out" 2>/dev/null; do
    if ! kill -0 "$server_pid" 2>/dev/null; then echo "the bench server exited" >&2; exit 2; fi
    waited=$((waited + 1))
    if [ "$waited" -gt 600 ]; then echo "the bench server is not ready after 60 s" >&2; exit 2; fi
    sleep 0.1
done
ready=$(sed -n 's/^READY //p' "$tmp/server.out")
field() { printf '%s' "$ready" | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
base=$(field base)
token=$(field token)
cookie=$(field cookie)
static_path=$(field static)
uncached=$(field uncached)
tokens=$(field tokens)
echo "dashboard: $(field bytes) bytes" >&2
# wrk counts a redirect (to sign in) as a success: make sure the page is the page.
page_status=$(curl -s -o /dev/null -w '%{http_code}' -H "Cookie: __Host-servio_session=$cookie" "$base/dashboard")
[ "$page_status" = 200 ] || { echo "the dashboard page answered $page_status" >&2; exit 2; }

# One wrk run: prints "p50_ms p99_ms requests_per_s errors" (CONNECTIONS, default 64).
run() {
    connections=${CONNECTIONS:-64}
    threads=2
    [ "$connections" -ge 2 ] || threads=1
    wrk -t"$threads" -c"$connections" -d"$duration" --timeout 30s --latency "$@" | python3 -c '
import re, sys
text = sys.stdin.read()
def ms(p):
    m = re.search(r"^\s+%s%%\s+([\d.]+)(us|ms|s)\s*$" % p, text, re.M)
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", text)
print("%.3f %.3f %.0f %s" % (ms(50), ms(99), rps, errors.group(0).replace(" ", "_") if errors else "none"))'
}

printf '%-6s %-8s %10s %10s %10s %s\n' round target p50_ms p99_ms req_per_s errors
i=1
while [ "$i" -le "$rounds" ]; do
    s=$(run "$base$static_path")
    a=$(run -H "Authorization: Bearer $token" "$base/api/dashboard")
    p=$(run -H "Cookie: __Host-servio_session=$cookie" "$base/dashboard")
    u=$(SERVIO_BENCH_TOKENS=$tokens run -s bench/dashboard_users.lua "$uncached/api/dashboard")
    r=$(SERVIO_BENCH_TOKENS=$tokens CONNECTIONS=1 run -s bench/dashboard_users.lua "$uncached/api/dashboard")
    printf '%-6s %-8s %10s %10s %10s %s\n' "$i" static $s
    printf '%-6s %-8s %10s %10s %10s %s\n' "$i" api $a
    printf '%-6s %-8s %10s %10s %10s %s\n' "$i" page $p
    printf '%-6s %-8s %10s %10s %10s %s\n' "$i" uncached $u
    printf '%-6s %-8s %10s %10s %10s %s\n' "$i" render $r
    for pair in "api:$a" "page:$p" "uncached:$u"; do
        echo "$s" | awk -v a="${pair#*:}" -v what="${pair%%:*}" -v i="$i" '{ split(a, x, " "); printf "%-6s p99 ratio %s/static %.1fx, p50 ratio %.1fx\n", i, what, x[2] / $2, x[1] / $1 }'
    done
    i=$((i + 1))
done
