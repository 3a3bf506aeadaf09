#!/usr/bin/env bash
# The body of the scripts that print a directory of CustomResourceDefinitions taken out of a
# Go module (cert-manager-crds.sh, prometheus-operator-crds.sh): each sets NAME (its cache
# directory and log prefix), MODULE, VERSION, SUM (the module's pinned h1: hash, checked in
# addition to the checksum database that `go` consults), SUBDIR (where the module keeps its
# CRD YAMLs) and CALLER (its own path), then runs this file.
#
# The module is fetched with `go mod download` from the Go module proxy, outside any module
# so that no go.mod or go.sum is touched. Cached at
# ${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}/<NAME>/<key>/ where <key> is the
# sha256 of the caller and this file (which hold the version and hash). A warm cache returns
# at once. Prints only the directory's absolute path on stdout; progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

log() { printf '%s: %s\n' "$NAME" "$*" >&2; }

key="$(cat "$CALLER" "$here/module-crds.sh" | sha256sum | cut -d' ' -f1)"
cache_root="${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}"
parent="$cache_root/$NAME"
dir="$parent/$key"

# The directory only ever appears whole (renamed into place from a staging directory).
if [[ -d "$dir" ]]; then
    printf '%s\n' "$dir"
    exit 0
fi

if ! command -v go >/dev/null 2>&1; then
    log "the Go toolchain (go) is not on PATH"
    exit 1
fi
export GOTOOLCHAIN=local GOWORK=off

log "downloading $MODULE@$VERSION (Go module proxy)"
# Run outside any module, so that no go.mod or go.sum is touched.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
json="$(cd "$work" && GOFLAGS='' go mod download -json "$MODULE@$VERSION")"

field() { printf '%s\n' "$json" | sed -n "s/^[[:space:]]*\"$1\": \"\\(.*\\)\",\\{0,1\\}\$/\\1/p"; }
sum="$(field Sum)"
src="$(field Dir)"
if [[ "$sum" != "$SUM" ]]; then
    log "unexpected module hash '$sum' (pinned $SUM)"
    printf '%s\n' "$json" >&2
    exit 1
fi
if [[ -z "$src" || ! -d "$src/$SUBDIR" ]]; then
    log "no $SUBDIR in the module (Dir '$src')"
    exit 1
fi

mkdir -p "$parent"
stage="$(mktemp -d "$parent/.stage.XXXXXX")"
chmod 0755 "$stage"
trap 'rm -rf "$work" "$stage"' EXIT
n=0
for f in "$src"/"$SUBDIR"/*.yaml; do
    install -m 0644 "$f" "$stage/$(basename "$f")"
    n=$((n + 1))
done
if [[ "$n" -eq 0 ]]; then
    log "$SUBDIR holds no YAML"
    exit 1
fi

# Another run may have finished first: keep its directory, drop ours.
if mv -T "$stage" "$dir" 2>/dev/null; then
    log "$n CRD files in $dir"
else
    rm -rf "$stage"
fi
trap 'rm -rf "$work"' EXIT
printf '%s\n' "$dir"
