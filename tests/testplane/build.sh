#!/usr/bin/env bash
# Builds the testplane binary (cached) and prints its absolute path on stdout.
# Everything else goes to stderr.
#
# Cache key: sha256 over `go version`, go.mod, go.sum, every *.go file of this
# directory and this script. Binary: ${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}/testplane/<key>/testplane
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

export GOTOOLCHAIN=local
case " ${GOFLAGS:-} " in
  *" -buildvcs="*) ;;
  *) export GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false" ;;
esac

if ! command -v go >/dev/null 2>&1; then
  echo "testplane/build.sh: 'go' not found in PATH" >&2
  exit 1
fi

shopt -s nullglob
sources=(go.mod go.sum *.go build.sh)
key="$( { go version; sha256sum "${sources[@]}"; } | sha256sum | cut -d' ' -f1 )"
cache="${FLINK_OPERATOR_CACHE:-${HOME:?set HOME or FLINK_OPERATOR_CACHE}/.cache/flink-operator}/testplane/$key"
bin="$cache/testplane"

if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache"
tmpdir="$(mktemp -d "$cache/.build.XXXXXX")"
trap 'rm -rf "$tmpdir"' EXIT

echo "testplane/build.sh: building $bin (first build downloads modules and compiles k8s.io/kubernetes: minutes)" >&2
start=$SECONDS
# The API server reports the release it is built from (what `kubectl version` and Helm's
# kubeVersion checks read); a plain build would say v0.0.0-master.
k8s_version="$(sed -n 's/^[[:space:]]*k8s.io\/kubernetes v\([0-9.]*\).*/\1/p' go.mod | head -1)"
IFS=. read -r k8s_major k8s_minor _ <<<"$k8s_version"
version_pkg=k8s.io/component-base/version
ldflags="-s -w -X $version_pkg.gitVersion=v$k8s_version -X $version_pkg.gitMajor=$k8s_major -X $version_pkg.gitMinor=$k8s_minor -X $version_pkg.gitTreeState=clean"
go build -trimpath -ldflags="$ldflags" -o "$tmpdir/testplane" . >&2
mv -f "$tmpdir/testplane" "$bin"
echo "testplane/build.sh: built in $((SECONDS - start))s" >&2
echo "$bin"
