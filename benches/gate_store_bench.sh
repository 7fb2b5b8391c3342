#!/usr/bin/env bash
# Approvals per second through the gateway: one instance on SQLite vs two instances sharing one
# PostgreSQL database, side by side in one run (examples/gate_store_bench.rs, release build).
# Starts a throwaway PostgreSQL server with fsync on (.ci/postgres.sh, PG_DURABLE=1), as SQLite
# runs with synchronous=FULL; needs root (or the postgres user) to run initdb.
#
#   benches/gate_store_bench.sh [items per round] [concurrent supervisors] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --example gate_store_bench
source .ci/postgres.sh
trap pg_down EXIT
PG_DURABLE=1 pg_up
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
AGENTDESK_BENCH_PG="$AGENTDESK_TEST_PG" target/release/examples/gate_store_bench "${1:-400}" "${2:-16}" "${3:-3}"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
