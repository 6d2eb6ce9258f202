#!/usr/bin/env bash
# Builds the YAML truth helper (tests/yamltruth: manifests converted to JSON exactly as kubectl
# converts them, with apimachinery and sigs.k8s.io/yaml from the Go module proxy) and caches it
# outside the repository, keyed by the pinned apimachinery version and the helper's source.
#
#   tests/yamltruth/build.sh      prints the helper's path on stdout when done
#
# Environment: KM_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-migrate).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../cluster/versions.env
source "$here/../cluster/versions.env"
log() { printf 'yamltruth: %s\n' "$*" >&2; }
# go.mod must pin what versions.env pins: the one place is versions.env.
grep -q "^require k8s.io/apimachinery $APIMACHINERY_VERSION\$" "$here/go.mod" ||
  { log "go.mod does not require k8s.io/apimachinery $APIMACHINERY_VERSION (tests/cluster/versions.env)"; exit 1; }
command -v go >/dev/null || { log "Go is required to build the YAML truth helper (see README)"; exit 1; }
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local

source_id=$(cat "$here/main.go" "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-12)
cache=${KM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-migrate}
dir=$cache/yamltruth-$APIMACHINERY_VERSION-$source_id
if [ ! -x "$dir/yamltruth" ]; then
  log "building with k8s.io/apimachinery $APIMACHINERY_VERSION (first time only)"
  mkdir -p "$dir"
  (cd "$here" && go build -trimpath -o "$dir/yamltruth.tmp" .)
  mv "$dir/yamltruth.tmp" "$dir/yamltruth"
fi
echo "$dir/yamltruth"
