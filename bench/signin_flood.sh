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

if ! command -v wrk >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq wrk
fi
if [ -z "${SERVIO:-}" ]; then
    cargo build --release --quiet -p servio-cli --bin servio
    target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
    SERVIO="$target_dir/release/servio"
fi

tmp=$(mktemp -d)
server_pid=
cleanup() {
    [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
SERVIO_SECRET_KEY=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n') \
    "$SERVIO" serve --addr "127.0.0.1:$port" --data-dir "$tmp/data" >"$tmp/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
    sleep 0.1
done

email=flood-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')@example.com
password="the bench user's password"
curl -sS -o /dev/null -D "$tmp/signup.txt" -H 'content-type: application/json' \
    -d "{\"email\":\"$email\",\"password\":\"$password\",\"time_zone\":\"UTC\"}" "http://127.0.0.1:$port/api/signup"
cookie=$(sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\);.*/\1/p' "$tmp/signup.txt")
[ -n "$cookie" ] || { echo "sign-up failed:" >&2; cat "$tmp/signup.txt" >&2; exit 1; }

echo "wrk: POST /api/signin, $connections connections, ${duration}s; /api/me probed meanwhile"
python3 bench/signin_flood.py "$port" "$cookie" "$server_pid" "$duration" >"$tmp/probe.txt" &
probe_pid=$!
SERVIO_BENCH_EMAIL=$email SERVIO_BENCH_PASSWORD=$password \
    wrk -t2 -c"$connections" -d"${duration}s" --timeout 30s -s bench/signin_flood.lua "http://127.0.0.1:$port/api/signin"
wait "$probe_pid"
cat "$tmp/probe.txt"
