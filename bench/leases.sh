#!/bin/sh
# Fair leases: the time of a lease of 128 jobs while one user has 200,000 pending backfill jobs
# and 100 other users have scheduled ones (see crates/servio-store/examples/lease_bench.rs), on
# SQLite and, with SERVIO_TEST_DATABASE_URL set, PostgreSQL. The time is the database's: the
# example runs in the dev profile unless PROFILE=release. Results go in BENCHMARKS.md.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
profile=${PROFILE:-dev}
cargo build --quiet --profile "$profile" -p servio-store --example lease_bench
dir=$([ "$profile" = dev ] && echo debug || echo "$profile")
"$(target_dir)/$dir/examples/lease_bench"
