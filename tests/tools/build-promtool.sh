#!/usr/bin/env bash
# Builds (once) Prometheus' promtool of the version pinned below and prints the absolute path
# of the cached binary on stdout -- and nothing else on stdout.
#
#   promtool="$(tests/tools/build-promtool.sh)" && "$promtool" check metrics < metrics.txt
#
# The monitoring test lints the operator's /metrics with it and checks and unit-tests the
# chart's alerting rules. `go install` of the module version (outside any module, so no go.mod
# or go.sum is touched; the checksum database vouches for the module). The cache key is the
# sha256 of this script + `go version`:
#   ${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}/promtool/<key>/promtool
# A warm cache returns at once. A cold one takes about 5 minutes on two cores and needs the
# Go module proxy; the binary is installed into a staging directory and renamed into place.
set -euo pipefail

# Prometheus 3.16 (its Go module numbers releases v0.<major><minor>.<patch>).
MODULE=github.com/prometheus/prometheus
VERSION=v0.316.0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
script="$here/$(basename "${BASH_SOURCE[0]}")"

log() { printf 'build-promtool: %s\n' "$*" >&2; }

if ! command -v go >/dev/null 2>&1; then
    log "the Go toolchain (go) is not on PATH"
    exit 1
fi
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0

go_version="$(go version)"
key="$({ cat "$script"; printf '%s\n' "$go_version"; } | sha256sum | cut -d' ' -f1)"
cache_root="${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}"
parent="$cache_root/promtool"
dir="$parent/$key"
if [[ -x "$dir/promtool" ]]; then
    printf '%s\n' "$dir/promtool"
    exit 0
fi

mkdir -p "$parent"
stage="$(mktemp -d "$parent/.stage.XXXXXX")"
work="$(mktemp -d)"
trap 'rm -rf "$stage" "$work"' EXIT
log "building promtool from $MODULE@$VERSION with $go_version (minutes the first time)"
start=$SECONDS
(cd "$work" && GOFLAGS='' GOBIN="$stage" go install -trimpath -ldflags='-s -w' "$MODULE/cmd/promtool@$VERSION") >&2
chmod 0755 "$stage"
# Another run may have finished first: keep its directory, drop ours.
if mv -T "$stage" "$dir" 2>/dev/null; then
    log "built in $((SECONDS - start)) s: $dir/promtool"
fi
printf '%s\n' "$dir/promtool"
