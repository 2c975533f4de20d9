#!/bin/sh
# Gateway benchmark: the latency the platform adds to a tool call (p50, p99), against calling
# the demo site directly, in one run (see crates/servio-platform/examples/gateway_bench.rs).
# Results go in BENCHMARKS.md.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
cargo build --release --quiet -p servio-platform --example gateway_bench
target_dir=$(target_dir)
"$target_dir/release/examples/gateway_bench"
