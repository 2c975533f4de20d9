#!/bin/sh
# Gateway benchmark: the latency the platform adds to a tool call (p50, p99), against calling
# the demo site directly, in one run (see crates/servio-platform/examples/gateway_bench.rs).
# Results go in BENCHMARKS.md.
set -eu
cd "$(dirname "$0")/.."
cargo build --release --quiet -p servio-platform --example gateway_bench
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
exec "$target_dir/release/examples/gateway_bench"
