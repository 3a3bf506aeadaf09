#!/usr/bin/env bash
# Prints the absolute path of a directory that holds the Apache Flink Kubernetes Operator's
# CustomResourceDefinitions of one release (FlinkDeployment, FlinkSessionJob,
# FlinkStateSnapshot; apiextensions.k8s.io/v1), one YAML file each -- and nothing else on
# stdout.
#
# The migration test installs them into its API server as a cluster that runs the Apache
# operator has them, before it replaces them with this operator's CRDs.
#
# Source: the release's API jar on Maven Central
# (org.apache.flink:flink-kubernetes-operator-api), which carries the CRDs its build
# generates under META-INF/fabric8/ -- the same files its Helm chart ships. The jar's sha256
# is pinned below. Cached at
# ${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}/apache-operator-crds/<key>/ where
# <key> is the sha256 of this script. A warm cache returns at once; progress goes to stderr.
set -euo pipefail

VERSION=1.10.0
JAR_SHA256=b1f44814e17514fa8395c61b329a3ee9087123a5bda5b21fe1a495d5182c30b6
ARTIFACT="org.apache.flink:flink-kubernetes-operator-api:$VERSION"

log() { printf 'apache-operator-crds: %s\n' "$*" >&2; }

script="${BASH_SOURCE[0]}"
key="$(sha256sum "$script" | cut -d' ' -f1)"
cache_root="${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}"
parent="$cache_root/apache-operator-crds"
dir="$parent/$key"

# The directory only ever appears whole (renamed into place from a staging directory).
if [[ -d "$dir" ]]; then
    printf '%s\n' "$dir"
    exit 0
fi

for tool in mvn jar; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        log "$tool is not on PATH (Maven and a JDK fetch and open the release's jar)"
        exit 1
    fi
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
log "downloading $ARTIFACT (Maven Central)"
mvn -q -B dependency:copy -Dartifact="$ARTIFACT" -DoutputDirectory="$work" \
    -Dmdep.useBaseVersion=true >&2
jar_file="$work/flink-kubernetes-operator-api-$VERSION.jar"
sum="$(sha256sum "$jar_file" | cut -d' ' -f1)"
if [[ "$sum" != "$JAR_SHA256" ]]; then
    log "unexpected sha256 $sum of $ARTIFACT (pinned $JAR_SHA256)"
    exit 1
fi

mkdir -p "$parent"
stage="$(mktemp -d "$parent/.stage.XXXXXX")"
chmod 0755 "$stage"
trap 'rm -rf "$work" "$stage"' EXIT
(cd "$work" && jar xf "$jar_file" META-INF/fabric8)
n=0
# The -v1 files are the apiextensions.k8s.io/v1 CRDs (the -v1beta1 ones are for API
# servers older than Kubernetes 1.16).
for f in "$work"/META-INF/fabric8/*.flink.apache.org-v1.yml; do
    install -m 0644 "$f" "$stage/$(basename "$f" .yml).yaml"
    n=$((n + 1))
done
if [[ "$n" -eq 0 ]]; then
    log "the jar holds no META-INF/fabric8/*-v1.yml"
    exit 1
fi

# Another run may have finished first: keep its directory, drop ours.
if mv -T "$stage" "$dir" 2>/dev/null; then
    log "$n CRD files of release $VERSION in $dir"
else
    rm -rf "$stage"
fi
trap 'rm -rf "$work"' EXIT
printf '%s\n' "$dir"
