#!/usr/bin/env bash
# Builds (once) the test job jar against the Flink distribution in FLINK_HOME and prints the
# absolute path of the cached jar on stdout -- and nothing else on stdout.
#
#   jar="$(tests/jobs/build.sh "$(tests/flink/install.sh 2.3.0)")"
#
# The jar holds flinkoperator.testjobs.KeyedCounterJob (Main-Class in its manifest) and
# flinkoperator.testjobs.SequenceJob with the blue/green record gate it bundles (the sources
# of gate/), compiled with `javac --release 11` against $FLINK_HOME/lib/*. The cache key is the sha256 of the
# sources, this script, the Flink version (the name of lib/flink-dist-*.jar) and
# `javac -version`:
#   ${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}/jobs/<key>/keyed-counter.jar
# A warm cache returns at once. A cold one compiles into a temporary directory and renames the
# jar into place. Progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
script="$here/$(basename "${BASH_SOURCE[0]}")"

log() { printf 'build-job: %s\n' "$*" >&2; }

if [[ $# -ne 1 ]]; then
    log "usage: $0 FLINK_HOME"
    exit 2
fi
flink_home="${1%/}"
shopt -s nullglob
dist=("$flink_home"/lib/flink-dist*.jar)
shopt -u nullglob
if [[ ${#dist[@]} -ne 1 ]]; then
    log "$flink_home/lib has no (single) flink-dist jar: is it a FLINK_HOME?"
    exit 1
fi
for tool in javac jar; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        log "$tool (a JDK, 11 or newer) is not on PATH"
        exit 1
    fi
done

# The jobs, and the blue/green record gate (gate/), which the sequence job puts in front of
# its sink and, as users do, bundles into its jar.
mapfile -t sources < <(
    cd "$here" && { find src -name '*.java'; find ../../gate/src/main/java -name '*.java'; } | LC_ALL=C sort
)
key="$(
    {
        for f in "${sources[@]}"; do
            printf '%s\n' "$f"
            cat "$here/$f"
        done
        cat "$script"
        basename "${dist[0]}"
        readlink -f "$(command -v javac)"
    } | sha256sum | cut -d' ' -f1
)"

cache_root="${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}"
dir="$cache_root/jobs/$key"
out="$dir/keyed-counter.jar"

if [[ -f "$out" ]]; then
    printf '%s\n' "$out"
    exit 0
fi

mkdir -p "$dir"
work="$(mktemp -d "$dir/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

log "compiling ${#sources[@]} source file(s) against $(basename "${dist[0]}")"
mkdir -p "$work/classes"
(cd "$here" && javac --release 11 -nowarn -encoding UTF-8 -cp "$flink_home/lib/*" \
    -d "$work/classes" "${sources[@]}") >&2
printf 'Main-Class: flinkoperator.testjobs.KeyedCounterJob\n' >"$work/manifest.txt"
jar --create --file "$work/keyed-counter.jar" --manifest "$work/manifest.txt" \
    -C "$work/classes" . >&2
mv -f "$work/keyed-counter.jar" "$out"
log "built $out"
printf '%s\n' "$out"
