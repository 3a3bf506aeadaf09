#!/usr/bin/env bash
# Builds (once) the blue/green gate library and prints the absolute path of the cached jar on
# stdout -- and nothing else on stdout.
#
#   jar="$(gate/build.sh)"
#
# The jar is flink-bluegreen-gate-0.1.0.jar (package flinkoperator.bluegreen), built with
# `mvn -q -B package`, which also runs the gate's tests (against the default Flink version of
# pom.xml). The cache key is the sha256 of the sources, pom.xml, this script and
# `java -version`:
#   ${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}/gate/<key>/flink-bluegreen-gate-0.1.0.jar
# A warm cache returns at once. A cold one builds a copy of the project in a temporary directory
# and renames the jar into place, so the work tree is left alone. Progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
script="$here/$(basename "${BASH_SOURCE[0]}")"
jar_name="flink-bluegreen-gate-0.1.0.jar"

log() { printf 'build-gate: %s\n' "$*" >&2; }

if [[ $# -ne 0 ]]; then
    log "usage: $0"
    exit 2
fi
for tool in java mvn; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        log "$tool is not on PATH (the gate needs a JDK, 11 or newer, and Maven)"
        exit 1
    fi
done

mapfile -t sources < <(cd "$here" && find src -type f | LC_ALL=C sort)
key="$(
    {
        for f in "${sources[@]}"; do
            printf '%s\n' "$f"
            cat "$here/$f"
        done
        cat "$here/pom.xml"
        cat "$script"
        java -version 2>&1
    } | sha256sum | cut -d' ' -f1
)"

cache_root="${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}"
dir="$cache_root/gate/$key"
out="$dir/$jar_name"

if [[ -f "$out" ]]; then
    printf '%s\n' "$out"
    exit 0
fi

mkdir -p "$dir"
work="$(mktemp -d "$dir/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

log "building $jar_name from ${#sources[@]} file(s) (runs the tests)"
cp -R "$here/src" "$here/pom.xml" "$work/"
(cd "$work" && mvn -q -B package) >&2
if [[ ! -f "$work/target/$jar_name" ]]; then
    log "maven built no target/$jar_name"
    exit 1
fi
mv -f "$work/target/$jar_name" "$out"
log "built $out"
printf '%s\n' "$out"
