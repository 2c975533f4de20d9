#!/bin/sh
# Sign-in under a flood: a release `servio serve` on a fresh data directory (SQLite), one user
# signed up, then wrk floods POST /api/signin (three wrong passwords for each right one) from
# CONNECTIONS connections for DURATION, while bench/signin_flood.py asks GET /api/me with the
# user's session every 50 ms and polls the server's RSS. Prints /api/me's median latency
# (target < 100 ms) and the peak RSS growth (target < 200 MiB). Results go in BENCHMARKS.md.
#
# Environment: SERVIO (a servio binary to measure, such as one built from an older commit;
# default: build this tree's release binary), CONNECTIONS (32), DURATION (20, seconds).
set -eu
cd "$(dirname "$0")/.."
connections=${CONNECTIONS:-32}
duration=${DURATION:-20}

. bench/lib.sh
need_wrk
if [ -z "${SERVIO:-}" ]; then
    cargo build --release --quiet -p servio-cli --bin servio
    SERVIO="$(target_dir)/release/servio"
fi

port=$(free_port)
SERVIO_SECRET_KEY=$(random_hex 32) \
    "$SERVIO" serve --addr "127.0.0.1:$port" --data-dir "$tmp/data" >"$tmp/server.log" 2>&1 &
server_pid=$!
wait_for_port "$port"

email=flood-$(random_hex 4)@example.com
password="the bench user's password"
curl -sS -o /dev/null -D "$tmp/signup.txt" -H 'content-type: application/json' \
    -d "{\"email\":\"$email\",\"password\":\"$password\",\"time_zone\":\"UTC\"}" "http://127.0.0.1:$port/api/signup"
cookie=$(sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\);.*/\1/p' "$tmp/signup.txt")
[ -n "$cookie" ] || { echo "sign-up failed:" >&2; cat "$tmp/signup.txt" >&2; exit 1; }

# Memory before the flood, read here before wrk or the probe start: read by the probe in the
# background, it was read after the flood had begun and the growth came out as 0 MiB.
before_kib=$(awk '/^VmRSS:/ { print $2 }' "/proc/$server_pid/status")
echo "wrk: POST /api/signin, $connections connections, ${duration}s; /api/me probed meanwhile"
python3 bench/signin_flood.py "$port" "$cookie" "$server_pid" "$duration" "$before_kib" >"$tmp/probe.txt" &
probe_pid=$!
SERVIO_BENCH_EMAIL=$email SERVIO_BENCH_PASSWORD=$password \
    wrk -t2 -c"$connections" -d"${duration}s" --timeout 30s -s bench/signin_flood.lua "http://127.0.0.1:$port/api/signin"
wait "$probe_pid"
cat "$tmp/probe.txt"
