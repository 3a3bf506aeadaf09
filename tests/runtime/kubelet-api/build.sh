#!/usr/bin/env bash
# Builds the kubelet-api binary (cached) and prints its absolute path on stdout.
# Everything else goes to stderr.
#
# Cache key: sha256 over `go version`, go.mod, go.sum, every *.go file of this
# directory and this script. Binary:
#   ${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}/kubelet-api/<key>/kubelet-api
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

export GOTOOLCHAIN=local
export GOWORK=off
export CGO_ENABLED=0
case " ${GOFLAGS:-} " in
  *" -buildvcs="*) ;;
  *) export GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false" ;;
esac

if ! command -v go >/dev/null 2>&1; then
  echo "kubelet-api/build.sh: 'go' not found in PATH" >&2
  exit 1
fi

shopt -s nullglob
sources=(go.mod go.sum *.go build.sh)
key="$( { go version; sha256sum "${sources[@]}"; } | sha256sum | cut -d' ' -f1 )"
cache="${FLINK_OPERATOR_CACHE:-${HOME:?set HOME or FLINK_OPERATOR_CACHE}/.cache/flink-operator}/kubelet-api/$key"
bin="$cache/kubelet-api"

if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache"
tmpdir="$(mktemp -d "$cache/.build.XXXXXX")"
trap 'rm -rf "$tmpdir"' EXIT

echo "kubelet-api/build.sh: building $bin" >&2
start=$SECONDS
go build -mod=readonly -trimpath -ldflags='-s -w' -o "$tmpdir/kubelet-api" . >&2
mv -f "$tmpdir/kubelet-api" "$bin"
echo "kubelet-api/build.sh: built in $((SECONDS - start))s" >&2
echo "$bin"
