#!/usr/bin/env bash
# Measures the local runtime: how long from creating a Flink cluster's Deployments to its
# job RUNNING, and the resident memory of the cluster's processes, for a standalone and a
# native application cluster (oldest Flink version of tests/flink/versions) and a native
# session cluster (newest version), plus two session clusters side by side.
#
#   bench/local-runtime.sh [runs]     (default 3; needs root, like the end-to-end tests)
#
# Each run is one pass of the measuring end-to-end tests, one test at a time so that the
# figures are not inflated by other clusters starting on the same cores. Prints every
# MEASURED line and then the median of each.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs="${1:-3}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

cargo test --quiet --test e2e --no-run >/dev/null 2>&1 || cargo test --test e2e --no-run
for i in $(seq 1 "$runs"); do
    echo "run $i/$runs" >&2
    cargo test --quiet --test e2e -- --test-threads=1 --nocapture \
        a_standalone_application_cluster_runs_the_test_job \
        a_native_session_cluster_creates_its_taskmanagers_through_the_api_server \
        a_native_application_cluster_runs_the_test_job_from_its_local_jar \
        two_clusters_run_side_by_side_with_the_same_names_and_ports \
        2>&1 | grep -o 'MEASURED.*' | tee -a "$out/measured"
done

python3 - "$out/measured" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    kind = line.split(":")[0].removeprefix("MEASURED ").strip()
    numbers = [float(n) for n in re.findall(r"(\d+(?:\.\d+)?) (?:s|MiB)", line)]
    rows.setdefault(kind, []).append(numbers)
print()
for kind, values in rows.items():
    medians = [statistics.median(column) for column in zip(*values)]
    print(f"{kind}: median of {len(values)} runs: " + ", ".join(f"{m:g}" for m in medians))
PY
