#!/bin/sh
# Gateway benchmark: the latency the platform adds to a tool call (p50, p99), against calling
# the demo site directly, in one run (see crates/servio-platform/examples/gateway_bench.rs).
# Results go in BENCHMARKS.md.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
# BIN_DIR: take `gateway_bench` from there instead of building it (to compare two commits).
if [ -n "${BIN_DIR:-}" ]; then
    exec "$BIN_DIR/gateway_bench"
fi
cargo build --release --quiet -p servio-platform --example gateway_bench
"$(target_dir)/release/examples/gateway_bench"
