#!/bin/sh
# Pattern benchmark (issue 41, finding 2): one validation of a 1 MiB argument against patterns
# that backtrack or run long, against a trivial pattern and no pattern, and through the crate's
# backtracking engine as before, all in one run on one core; then `check` of 300 brief metrics
# (see crates/servio-manifest/examples/pattern_validation.rs). Results go in BENCHMARKS.md.
# Arguments go to the example (`--rounds N`).
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
cargo build --release --quiet -p servio-manifest --example pattern_validation
target_dir=$(target_dir)
taskset -c 0 "$target_dir/release/examples/pattern_validation" "$@"
