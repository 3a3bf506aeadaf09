#!/usr/bin/env bash
# Measures the operator itself (needs root, like the end-to-end tests), with one command:
#
#   bench/operator.sh [all|upgrade|memory|steady|rescale]      (default: all)
#
#   - upgrade: its share of a savepoint upgrade of a real job (3 upgrades): from the spec
#     change being stored to Flink triggering the stop-with-savepoint (Flink's own trigger
#     time, from the JobManager log), and from the savepoint completing (its _metadata file
#     written) to the new JobManager Deployment existing; median and max over the upgrades,
#     and where the time goes (the operator's `acting` log lines: StopWithSavepoint,
#     DeleteCluster, Deploy, and when the old JobManager pods were gone);
#   - memory: its resident memory and its Kubernetes API requests per minute (its /metrics)
#     idle (started, caches synchronised, nothing to reconcile: 0 FlinkDeployments), then
#     with 100 and 1,000 FlinkDeployments (session clusters whose pods are never scheduled,
#     so that only the operator and the API server work), each over 60 s once all are
#     deployed;
#   - steady: what it costs while nothing changes: 10 FlinkDeployments of the real counting
#     job (native application clusters, Flink 1.20, savepoint upgrade mode, checkpoints every
#     5 s), RUNNING and Ready for 30 s, then measured for STEADY_SECONDS (default 300): per
#     resource per minute its status writes (resourceVersion changes seen by a watch, and
#     the operator's own count), its reconciles and the operator's Kubernetes API requests
#     (all of them / 10), per job per minute the REST calls to its JobManager, and the
#     operator's CPU time (the counts come from the operator's /metrics);
#   - rescale: the counting job (Flink 1.20, adaptive scheduler) changed 2 -> 3 -> 2 -> 3
#     in parallelism, from the change being stored to the job running at its new parallelism
#     with all tasks running: in place, then with in-place scaling switched off (a savepoint
#     upgrade each time); median and max of the three; and the REST calls per minute to
#     the JobManager of one RUNNING counting job over 3 minutes, with the autoscaler off and
#     on (`job.autoscaler.enabled`, default reconcile interval).
#
# It prints the MEASURED lines as they come, then one table of every figure (with the
# targets of the issue that asked for them). The whole test output is kept in a file under
# $TMPDIR (named at the end), and the operator's log beside it (…-operator.log).
#
# The operator measured is a release build (`cargo build --release`), as users run it;
# BENCH_OPERATOR=debug measures the tests' own debug build instead (whose code pages alone
# are some 35 MiB of resident memory).
#
# Another build of the operator (e.g. an older commit, for a before/after comparison):
# BENCH_CHECKOUT names a checkout of it (a `git worktree add` outside this repository) with
# this checkout's tests/e2e/scale.rs and tests/e2e/steady_state.rs copied in (and their
# `mod` lines); the tests are built and run there, so the end-to-end harness starts that
# checkout's operator. Give it its own target directory, outside /tmp: the operator runs in
# its pod from that directory, and the chart mounts a volume of its own at the pod's /tmp,
# which hides a binary there (the install then times out):
#
#   BENCH_CHECKOUT=/tmp/before CARGO_TARGET_DIR=$PWD/target/before bench/operator.sh all
set -euo pipefail
cd "${BENCH_CHECKOUT:-$(dirname "${BASH_SOURCE[0]}")/..}"

case "${1:-all}" in
all)
    tests=(bench_operator_share_of_a_savepoint_upgrade bench_operator_memory_with_many_flinkdeployments
        bench_operator_steady_state bench_rescale_in_place_and_by_upgrade bench_autoscaler_rest_calls_per_job) ;;
upgrade) tests=(bench_operator_share_of_a_savepoint_upgrade) ;;
memory) tests=(bench_operator_memory_with_many_flinkdeployments) ;;
steady) tests=(bench_operator_steady_state) ;;
rescale) tests=(bench_rescale_in_place_and_by_upgrade bench_autoscaler_rest_calls_per_job) ;;
*)
    echo "usage: $0 [all|upgrade|memory|steady|rescale]" >&2
    exit 2
    ;;
esac

cargo test --quiet --test e2e --no-run >/dev/null 2>&1 || cargo test --test e2e --no-run
if [[ "${BENCH_OPERATOR:-release}" == release ]]; then
    cargo build --quiet --release --bin flink-operator
    export FLINK_OPERATOR_BIN="${CARGO_TARGET_DIR:-$PWD/target}/release/flink-operator"
    echo "measuring the release build: $FLINK_OPERATOR_BIN"
fi
log=$(mktemp -t bench-operator.XXXXXX.log)
export BENCH_OPERATOR_LOG="${log%.log}-operator.log"
status=0
cargo test --quiet --test e2e -- --ignored --test-threads=1 --nocapture "${tests[@]}" \
    2>&1 | tee "$log" | grep --line-buffered -o 'MEASURED.*' || status=$?

# The table: one row per SUMMARY|part|figure|value|target line, in the order of the issue
# (steady state, memory, upgrade).
echo
echo "| part | figure | value | target |"
echo "|---|---|---|---|"
for part in steady memory upgrade rescale; do
    { grep -o 'SUMMARY|.*' "$log" || true; } | awk -F'|' -v part="$part" \
        'index($2, part) == 1 { printf "| %s | %s | %s | %s |\n", $2, $3, $4, $5 }'
done
echo
echo "the whole output: $log; the operator's log: $BENCH_OPERATOR_LOG"
exit "$status"
