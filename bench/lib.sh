# What the benchmark scripts share; sourced (`. bench/lib.sh`) from the repository root.

# Installs wrk when the machine lacks it (Debian).
need_wrk() {
    command -v wrk >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq wrk; }
}

# Cargo's target directory (CARGO_TARGET_DIR may put it anywhere).
target_dir() {
    cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])'
}

# A TCP port free on 127.0.0.1 right now.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# N random bytes as hex.
random_hex() {
    od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'
}

# Waits up to 10 s for 127.0.0.1:PORT to accept connections.
wait_for_port() {
    for _ in $(seq 100); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 1)" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nothing listens on 127.0.0.1:$1 after 10 s" >&2
    return 1
}

# A scratch directory in $tmp, removed on exit with the background process whose pid is in
# $server_pid (set it once started).
tmp=$(mktemp -d)
server_pid=
cleanup() {
    [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
