#!/bin/sh
# Planning benchmark: due collections among 1,000,000 (user, metric) pairs over every zone,
# on one core (see crates/servio-collector/examples/plan_bench.rs). Results go in BENCHMARKS.md.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
cargo build --release --quiet -p servio-collector --example plan_bench
target_dir=$(target_dir)
taskset -c 0 "$target_dir/release/examples/plan_bench"
