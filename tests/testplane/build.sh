#!/usr/bin/env bash
# Builds the testplane binary (cached) and prints its absolute path on stdout.
# Everything else goes to stderr.
#
# Cache key: sha256 over `go version`, go.mod, go.sum and every *.go file of
# this directory. Binary: ${FLINK_OPERATOR_CACHE:-$HOME/.cache/flink-operator}/testplane/<key>/testplane
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
sources=(go.mod go.sum *.go)
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
go build -trimpath -ldflags='-s -w' -o "$tmpdir/testplane" . >&2
mv -f "$tmpdir/testplane" "$bin"
echo "testplane/build.sh: built in $((SECONDS - start))s" >&2
echo "$bin"
