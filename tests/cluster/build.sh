#!/usr/bin/env bash
# Builds the real control plane, and krew, from Go modules (no downloads from release sites are
# possible here) and caches the binaries outside the repository, keyed by version, so that reruns
# build nothing.
#
#   tests/cluster/build.sh        prints the bin directory on stdout when done
#
# Environment: KM_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-migrate);
#   KM_KUBERNETES_VERSION   build this Kubernetes release instead of the pinned one (e.g. v1.34.4;
#                           capture-openapi.sh uses it); its binaries get their own cache directory
#   KM_BUILD_ONLY           build only these, space-separated, out of: kube-apiserver
#                           kube-controller-manager kube-scheduler kubectl etcd kwok krew
#                           (default: all); the bin directory then links only what is in the cache
#
# The bin directory holds kubectl and the control plane, and krew as `kubectl-krew`, the name under
# which kubectl finds it as a plugin (scripts/test.sh installs the release archive with it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
KUBERNETES_VERSION=${KM_KUBERNETES_VERSION:-$KUBERNETES_VERSION}
[[ $KUBERNETES_VERSION =~ ^v1\.[0-9]+\.[0-9]+$ ]] || { echo "build: bad Kubernetes version '$KUBERNETES_VERSION' (want v1.X.Y)" >&2; exit 1; }
k8s_all=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
read -r -a only <<<"${KM_BUILD_ONLY:-${k8s_all[*]} etcd kwok krew}"
for b in "${only[@]}"; do
  case " ${k8s_all[*]} etcd kwok krew " in *" $b "*) ;; *) echo "build: KM_BUILD_ONLY: unknown '$b'" >&2; exit 1 ;; esac
done
wanted() { case " ${only[*]} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

cache=${KM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-migrate}
k8s_bin=$cache/kubernetes-$KUBERNETES_VERSION
etcd_bin=$cache/etcd-$ETCD_VERSION
kwok_bin=$cache/kwok-$KWOK_VERSION
krew_bin=$cache/krew-$KREW_VERSION
log() { printf 'build: %s\n' "$*" >&2; }

command -v go >/dev/null || { log "Go is required to build the control plane (see README)"; exit 1; }
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local

# The wrapper module for k8s.io/kubernetes: its own go.mod replaces each staging module with a
# relative path, which a dependency may not do, so we replace them with the published versions.
build_kubernetes() {
  local missing=()
  for b in "${k8s_all[@]}"; do wanted "$b" && { [ -x "$k8s_bin/$b" ] || missing+=("$b"); }; done
  [ ${#missing[@]} -eq 0 ] && return 0
  local ver=$KUBERNETES_VERSION staging_ver=v0.${KUBERNETES_VERSION#v1.}
  local minor=${ver#v1.}; minor=${minor%%.*}
  local work; work=$(mktemp -d)
  log "kubernetes $ver: building ${missing[*]} in $work (takes a while the first time)"
  (
    cd "$work"
    go mod init km-kubernetes-wrapper >/dev/null 2>&1
    local upstream_mod
    upstream_mod=$(go mod download -json "k8s.io/kubernetes@$ver" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')
    [ -f "$upstream_mod" ] || { log "could not download k8s.io/kubernetes@$ver"; exit 1; }
    # Go version and godebug settings must match upstream's, or behaviour differs.
    go mod edit -go="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$upstream_mod")"
    awk '/^godebug \(/{block=1} block{print} block&&/^\)/{block=0} /^godebug [^(]/{print}' "$upstream_mod" >> go.mod
    go mod edit -require="k8s.io/kubernetes@$ver"
    grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$upstream_mod" | awk '{print $1}' | sort -u |
      while read -r m; do go mod edit -replace="$m=$m@$staging_ver"; done
    local pkg=k8s.io/component-base/version cpkg=k8s.io/client-go/pkg/version
    local ld="-s -w -X $pkg.gitVersion=$ver -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
    ld+=" -X $cpkg.gitVersion=$ver -X $cpkg.gitMajor=1 -X $cpkg.gitMinor=$minor -X $cpkg.gitTreeState=clean"
    ld+=" -X $pkg.buildDate=1970-01-01T00:00:00Z -X $cpkg.buildDate=1970-01-01T00:00:00Z"
    mkdir -p out
    for b in "${missing[@]}"; do
      log "go build $b"
      go build -trimpath -tags selinux,notest -ldflags "$ld" -o "out/$b" "k8s.io/kubernetes/cmd/$b"
    done
    mkdir -p "$k8s_bin"
    for b in "${missing[@]}"; do mv "out/$b" "$k8s_bin/$b"; done
  )
  rm -rf "$work"
}

build_etcd() {
  wanted etcd || return 0
  [ -x "$etcd_bin/etcd" ] && return 0
  local work; work=$(mktemp -d)
  log "etcd $ETCD_VERSION: building"
  (
    cd "$work"
    go mod init km-etcd-wrapper >/dev/null 2>&1
    go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    go build -trimpath -ldflags "-s -w" -o etcd go.etcd.io/etcd/server/v3
    mkdir -p "$etcd_bin" && mv etcd "$etcd_bin/etcd"
  )
  rm -rf "$work"
}

# KWOK lives in its own module so that its k8s.io versions do not fight the control plane's.
build_kwok() {
  wanted kwok || return 0
  [ -x "$kwok_bin/kwok" ] && [ -f "$kwok_bin/stages.yaml" ] && return 0
  local work; work=$(mktemp -d)
  log "kwok $KWOK_VERSION: building"
  (
    cd "$work"
    go mod init km-kwok-wrapper >/dev/null 2>&1
    go mod edit -require="sigs.k8s.io/kwok@$KWOK_VERSION"
    go mod download "sigs.k8s.io/kwok@$KWOK_VERSION"
    go mod edit -go="$(go list -m -f '{{.GoVersion}}' "sigs.k8s.io/kwok@$KWOK_VERSION" 2>/dev/null || echo 1.26.0)"
    go build -trimpath -ldflags "-s -w" -o kwok sigs.k8s.io/kwok/cmd/kwok
    local src; src=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
    mkdir -p "$kwok_bin"
    # The stages that make KWOK act as a kubelet: nodes Ready, pods Ready/complete/deleted, and
    # the chaos stage that fails a container with a chosen exit code.
    local first=1
    for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml \
             pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml \
             pod/chaos/pod-container-running-failed.yaml; do
      [ $first -eq 1 ] || echo '---'
      first=0
      cat "$src/kustomize/stage/$f"
    done > stages.yaml
    mv kwok "$kwok_bin/kwok" && mv stages.yaml "$kwok_bin/stages.yaml"
  )
  rm -rf "$work"
}

# krew, the plugin manager, to install the release archive as users would (scripts/test.sh).
# Its own module too: its go.mod is old (go 1.17, k8s.io 0.21), and nothing else shares it.
build_krew() {
  wanted krew || return 0
  [ -x "$krew_bin/krew" ] && return 0
  local work; work=$(mktemp -d)
  log "krew $KREW_VERSION: building"
  (
    cd "$work"
    go mod init km-krew-wrapper >/dev/null 2>&1
    go mod edit -require="sigs.k8s.io/krew@$KREW_VERSION"
    go mod download "sigs.k8s.io/krew@$KREW_VERSION"
    # Built as upstream builds it: its go version sets the GODEBUG defaults.
    go mod edit -go="$(go list -m -f '{{.GoVersion}}' "sigs.k8s.io/krew@$KREW_VERSION" 2>/dev/null || echo 1.26.0)"
    # The tag makes `kubectl krew version` say which krew this is (an untagged build says unknown).
    # A tagged krew also asks GitHub for newer releases now and then: set KREW_NO_UPGRADE_CHECK.
    go build -trimpath -ldflags "-s -w -X sigs.k8s.io/krew/internal/version.gitTag=$KREW_VERSION" \
      -o krew sigs.k8s.io/krew/cmd/krew
    mkdir -p "$krew_bin" && mv krew "$krew_bin/krew"
  )
  rm -rf "$work"
}

build_etcd
build_kwok
build_krew
build_kubernetes

bin=$cache/bin-$KUBERNETES_VERSION-$ETCD_VERSION-$KWOK_VERSION
mkdir -p "$bin"
for f in "$k8s_bin"/* "$etcd_bin/etcd" "$kwok_bin/kwok" "$kwok_bin/stages.yaml"; do
  [ -e "$f" ] || continue # only with KM_BUILD_ONLY: the full build makes all of them
  ln -sf "$f" "$bin/$(basename "$f")"
done
# kubectl runs `kubectl krew` as the plugin kubectl-krew found on PATH.
if [ -x "$krew_bin/krew" ]; then ln -sf "$krew_bin/krew" "$bin/kubectl-krew"; fi
echo "$bin"
