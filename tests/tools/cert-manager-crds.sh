#!/usr/bin/env bash
# Prints the absolute path of a directory that holds cert-manager's
# CustomResourceDefinitions (certificates, issuers, clusterissuers,
# certificaterequests, and the acme orders/challenges), one YAML file each --
# and nothing else on stdout.
#
#   kubectl apply -f "$(tests/tools/cert-manager-crds.sh)"
#
# The tests install them into their API server so that the chart's
# cert-manager mode (Issuer, Certificate) can be applied with a server-side
# dry run. cert-manager itself is not run.
#
# Source: the Go module github.com/cert-manager/cert-manager at the version
# pinned below, fetched with `go mod download` from the Go module proxy. Its
# zip carries deploy/crds/*.yaml, the controller-gen output from which
# cert-manager's own Helm chart templates its CRDs (same spec; the chart adds
# only labels and a keep annotation). The module's h1: hash is pinned too and
# checked, in addition to the checksum database that `go` consults.
#
# Cached at ${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}/cert-manager-crds/<key>/
# where <key> is the sha256 of this script (which holds the version and hash).
# A warm cache returns at once. Progress goes to stderr.
set -euo pipefail

CERT_MANAGER_MODULE=github.com/cert-manager/cert-manager
CERT_MANAGER_VERSION=v1.21.2
CERT_MANAGER_SUM='h1:UWgoYM+KLNtRlqmoWOKjKBOBUPVHeepQ6/ac3ERJW68='

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
script="$here/$(basename "${BASH_SOURCE[0]}")"

log() { printf 'cert-manager-crds: %s\n' "$*" >&2; }

key="$(sha256sum "$script" | cut -d' ' -f1)"
cache_root="${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}"
parent="$cache_root/cert-manager-crds"
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

log "downloading $CERT_MANAGER_MODULE@$CERT_MANAGER_VERSION (Go module proxy)"
# Run outside any module, so that no go.mod or go.sum is touched.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
json="$(cd "$work" && GOFLAGS='' go mod download -json "$CERT_MANAGER_MODULE@$CERT_MANAGER_VERSION")"

field() { printf '%s\n' "$json" | sed -n "s/^[[:space:]]*\"$1\": \"\\(.*\\)\",\\{0,1\\}\$/\\1/p"; }
sum="$(field Sum)"
src="$(field Dir)"
if [[ "$sum" != "$CERT_MANAGER_SUM" ]]; then
    log "unexpected module hash '$sum' (pinned $CERT_MANAGER_SUM)"
    printf '%s\n' "$json" >&2
    exit 1
fi
if [[ -z "$src" || ! -d "$src/deploy/crds" ]]; then
    log "no deploy/crds in the module (Dir '$src')"
    exit 1
fi

mkdir -p "$parent"
stage="$(mktemp -d "$parent/.stage.XXXXXX")"
chmod 0755 "$stage"
trap 'rm -rf "$work" "$stage"' EXIT
n=0
for f in "$src"/deploy/crds/*.yaml; do
    install -m 0644 "$f" "$stage/$(basename "$f")"
    n=$((n + 1))
done
if [[ "$n" -eq 0 ]]; then
    log "deploy/crds holds no YAML"
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
