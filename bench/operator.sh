#!/usr/bin/env bash
# Measures the operator itself (needs root, like the end-to-end tests):
#   - its share of a savepoint upgrade of a real job (3 upgrades): from the spec change
#     being stored to Flink triggering the stop-with-savepoint (Flink's own trigger time,
#     from the JobManager log), and from the savepoint completing (its _metadata file
#     written) to the new JobManager Deployment existing;
#   - its resident memory with 100 and then 1,000 FlinkDeployments (session clusters whose
#     pods are never scheduled, so that only the operator and the API server work), when
#     all are deployed and after 60 s of steady reconciling.
#
#   bench/operator.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cargo test --quiet --test e2e --no-run >/dev/null 2>&1 || cargo test --test e2e --no-run
cargo test --quiet --test e2e -- --ignored --test-threads=1 --nocapture \
    bench_operator_share_of_a_savepoint_upgrade \
    bench_operator_memory_with_many_flinkdeployments \
    2>&1 | grep -o 'MEASURED.*'
