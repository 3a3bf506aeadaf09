#!/usr/bin/env bash
# Builds (once) the helm command pinned by this Go module and prints the
# absolute path of the cached binary on stdout -- and nothing else on stdout.
#
#   helm="$(tests/tools/build-helm.sh)" && "$helm" version
#
# The version comes from go.mod/go.sum beside this script (helm.sh/helm/v3,
# imported by tools.go). The cache key is the sha256 of go.mod + go.sum + this
# script + `go version`, so changing any of them builds a new binary:
#   ${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}/helm/<key>/helm
# A warm cache returns at once. A cold one runs `go build` (needs the Go
# toolchain and the Go module proxy, or a filled module cache) into a temporary
# file and renames it into place, so a concurrent or interrupted build never
# leaves a half-written binary behind. Progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
script="$here/$(basename "${BASH_SOURCE[0]}")"

log() { printf 'build-helm: %s\n' "$*" >&2; }

if ! command -v go >/dev/null 2>&1; then
    log "the Go toolchain (go) is not on PATH"
    exit 1
fi

# Always use the installed toolchain: never download another one.
export GOTOOLCHAIN=local
# A go.work further up must not change which versions this module resolves.
export GOWORK=off
# A static binary that does not depend on the C library of the build machine.
export CGO_ENABLED=0

go_version="$(go version)"
key="$(
    {
        cat "$here/go.mod" "$here/go.sum" "$script"
        printf '%s\n' "$go_version"
    } | sha256sum | cut -d' ' -f1
)"

cache_root="${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}"
dir="$cache_root/helm/$key"
bin="$dir/helm"

if [[ -x "$bin" ]]; then
    printf '%s\n' "$bin"
    exit 0
fi

mkdir -p "$dir"
tmp="$(mktemp "$dir/.helm.tmp.XXXXXX")"
trap 'rm -f "$tmp"' EXIT

# What helm's own Makefile stamps in at link time: its version (else `helm version` says
# "v3.22"), and the Kubernetes version of its client-go, which `helm template` and
# `helm lint` assume for .Capabilities.KubeVersion and the chart's kubeVersion (else 1.20).
helm_version="$(cd "$here" && go list -mod=readonly -m -f '{{.Version}}' helm.sh/helm/v3)"
client_go="$(cd "$here" && go list -mod=readonly -m -f '{{.Version}}' k8s.io/client-go)"
IFS=. read -r cg_major cg_minor _ <<<"${client_go#v}"
k8s_major=$((cg_major + 1))
k8s_minor="$cg_minor"
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    ldflags+=" -X $pkg.k8sVersionMajor=$k8s_major -X $pkg.k8sVersionMinor=$k8s_minor"
done

log "building helm $helm_version (Kubernetes $k8s_major.$k8s_minor) with $go_version"
log "into $bin (takes minutes the first time)"
start=$SECONDS
(
    cd "$here"
    go build -mod=readonly -trimpath -ldflags="$ldflags" -o "$tmp" helm.sh/helm/v3/cmd/helm
) >&2
chmod 0755 "$tmp"
mv -f "$tmp" "$bin"
trap - EXIT
log "built in $((SECONDS - start)) s, $(du -h "$bin" | cut -f1)"

printf '%s\n' "$bin"
