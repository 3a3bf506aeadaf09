#!/usr/bin/env bash
# Adds (once) Flink's StateMachineExample to a distribution installed by install.sh, at the
# path the official image has it, and prints that path on stdout -- and nothing else.
#
#   jar="$(tests/flink/install-examples.sh "$(tests/flink/install.sh 1.20.5)")"
#   # -> FLINK_HOME/examples/streaming/StateMachineExample.jar
#
# The PyPI packages install.sh takes the distribution from carry no examples/, so the
# examples/ manifests (jarURI local:///opt/flink/examples/streaming/StateMachineExample.jar)
# would find no jar. The classes come from Flink's own artifact on Maven Central,
# org.apache.flink:flink-examples-streaming:VERSION (fetched with `mvn dependency:copy`; the
# same jar the Apache operator's session-job example names), with
# org.apache.flink.streaming.examples.statemachine.StateMachineExample set as its Main-Class,
# as in the image's StateMachineExample.jar. Without a Kafka topic argument the example reads
# its built-in generator, which needs nothing beyond the distribution's lib/. When Maven
# Central has no artifact of the exact patch version (1.20.5 is on PyPI only), the first
# release of the same minor version is taken (VERSION.0): the example uses public APIs only.
#
# A warm install answers at once; a cold one writes a temporary file and renames it into
# place, under the same per-version lock as install.sh. Progress goes to stderr.
set -euo pipefail

log() { printf 'flink-examples: %s\n' "$*" >&2; }

if [[ $# -ne 1 ]]; then
    log "usage: $0 FLINK_HOME"
    exit 2
fi
home="${1%/}"
shopt -s nullglob
dist=("$home"/lib/flink-dist*.jar)
shopt -u nullglob
if [[ ${#dist[@]} -ne 1 ]]; then
    log "$home/lib has no (single) flink-dist jar: is it a FLINK_HOME?"
    exit 1
fi
version="$(basename "${dist[0]}" .jar)"
version="${version#flink-dist-}"
version="${version#flink-dist_2.12-}"
out="$home/examples/streaming/StateMachineExample.jar"
main_class=org.apache.flink.streaming.examples.statemachine.StateMachineExample

if [[ -f "$out" ]]; then
    printf '%s\n' "$out"
    exit 0
fi

exec 9>"$(dirname "$home")/.lock-examples-$(basename "$home")"
flock 9
if [[ -f "$out" ]]; then
    printf '%s\n' "$out"
    exit 0
fi
if ! command -v mvn >/dev/null 2>&1; then
    log "mvn (Apache Maven) is not on PATH"
    exit 1
fi

mkdir -p "$home/examples/streaming"
work="$(mktemp -d "$home/examples/streaming/.install.XXXXXX")"
trap 'rm -rf "$work"' EXIT

fetched=""
for v in "$version" "${version%.*}.0"; do
    log "fetching org.apache.flink:flink-examples-streaming:$v from Maven Central"
    if mvn --batch-mode --quiet dependency:copy \
        -Dartifact="org.apache.flink:flink-examples-streaming:$v:jar" \
        -DoutputDirectory="$work" -Dmdep.stripVersion=true >"$work/mvn.log" 2>&1; then
        fetched="$v"
        break
    fi
done
if [[ -z "$fetched" ]]; then
    cat "$work/mvn.log" >&2
    log "no flink-examples-streaming artifact for $version or ${version%.*}.0"
    exit 1
fi
jar="$work/flink-examples-streaming.jar"
# unzip's own member match, not `unzip -l | grep -q`: grep -q quits at the first match,
# unzip then dies of SIGPIPE and pipefail reports a jar that has the class as one without.
if ! unzip -l "$jar" "${main_class//.//}.class" >/dev/null 2>&1; then
    log "flink-examples-streaming-$fetched has no $main_class"
    exit 1
fi
jar --update --file "$jar" --main-class "$main_class" >&2
mv -f "$jar" "$out"
log "installed $out (flink-examples-streaming-$fetched)"
printf '%s\n' "$out"
