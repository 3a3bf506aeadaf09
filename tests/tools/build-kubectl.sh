#!/usr/bin/env bash
# Builds (once) the kubectl of the Kubernetes release the test control plane runs and
# prints the absolute path of the cached binary on stdout -- and nothing else on stdout.
#
#   kubectl="$(tests/tools/build-kubectl.sh)" && "$kubectl" version --client
#
# The version comes from kubectl/go.mod and go.sum (k8s.io/kubectl v0.X.Y is Kubernetes
# v1.X.Y; kubectl/main.go is k8s.io/kubernetes/cmd/kubectl's main). The cache key is the
# sha256 of those files + this script + `go version`:
#   ${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}/kubectl/<key>/kubectl
# A warm cache returns at once. A cold one runs `go build` (needs the Go module proxy or a
# filled module cache; minutes on two cores) into a temporary file and renames it into
# place. Progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
script="$here/$(basename "${BASH_SOURCE[0]}")"
module="$here/kubectl"

log() { printf 'build-kubectl: %s\n' "$*" >&2; }

if ! command -v go >/dev/null 2>&1; then
    log "the Go toolchain (go) is not on PATH"
    exit 1
fi

export GOTOOLCHAIN=local
export GOWORK=off
export CGO_ENABLED=0
case " ${GOFLAGS:-} " in
  *" -buildvcs="*) ;;
  *) export GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false" ;;
esac

go_version="$(go version)"
key="$(
    {
        cat "$module/go.mod" "$module/go.sum" "$module/main.go" "$script"
        printf '%s\n' "$go_version"
    } | sha256sum | cut -d' ' -f1
)"

dir="${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}/kubectl/$key"
bin="$dir/kubectl"

if [[ -x "$bin" ]]; then
    printf '%s\n' "$bin"
    exit 0
fi

mkdir -p "$dir"
tmp="$(mktemp "$dir/.kubectl.tmp.XXXXXX")"
trap 'rm -f "$tmp"' EXIT

# What Kubernetes' own build stamps in (hack/lib/version.sh), so that `kubectl version`
# names its release.
kubectl_module="$(cd "$module" && go list -mod=readonly -m -f '{{.Version}}' k8s.io/kubectl)"
IFS=. read -r _ minor patch <<<"${kubectl_module#v}"
release="v1.$minor.$patch"
ldflags="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ldflags+=" -X $pkg.gitVersion=$release -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean"
done

log "building kubectl $release with $go_version"
log "into $bin (takes minutes the first time)"
start=$SECONDS
(
    cd "$module"
    go build -mod=readonly -trimpath -ldflags="$ldflags" -o "$tmp" .
) >&2
chmod 0755 "$tmp"
mv -f "$tmp" "$bin"
trap - EXIT
log "built in $((SECONDS - start)) s, $(du -h "$bin" | cut -f1)"

printf '%s\n' "$bin"
