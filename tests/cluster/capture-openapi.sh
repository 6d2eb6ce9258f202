#!/usr/bin/env bash
# Captures the OpenAPI v3 documents that a REAL kube-apiserver of a given release serves, for the
# schema-diff tests (tests/data/schema/openapi/). Builds kube-apiserver at VERSION and etcd with
# build.sh (cached, keyed by version, so a rerun builds nothing), starts a throwaway etcd and
# kube-apiserver on free 127.0.0.1 ports, waits for /readyz, fetches each /openapi/v3/PATH and
# writes it as pretty JSON with sorted keys to OUTDIR/<PATH with / as ->.json, then stops both and
# removes its temporary directory.
#
#   tests/cluster/capture-openapi.sh VERSION OUTDIR [PATH...]
#   e.g. tests/cluster/capture-openapi.sh v1.34.4 tests/data/schema/openapi/v1.34
#
# PATH defaults to: apis/apps/v1 apis/batch/v1 api/v1  (-> apis-apps-v1.json, apis-batch-v1.json,
# api-v1.json). Environment: KM_CACHE_DIR as for build.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=pki.sh
source "$here/pki.sh"
log() { printf 'capture-openapi: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ $# -ge 2 ] || { sed -n '2,13s/^# \{0,1\}//p' "$0" >&2; exit 2; }
version=$1 outdir=$2; shift 2
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(apis/apps/v1 apis/batch/v1 api/v1)
[[ $version =~ ^v1\.[0-9]+\.[0-9]+$ ]] || die "VERSION must look like v1.34.4, not '$version'"
for p in "${paths[@]}"; do
  [[ $p =~ ^(api|apis/[a-z0-9.-]+)/v[a-z0-9]+$ ]] || die "PATH must look like api/v1 or apis/GROUP/VERSION, not '$p'"
done
for c in openssl curl python3 setsid; do command -v "$c" >/dev/null || die "$c is required"; done

bin=$(KM_KUBERNETES_VERSION=$version KM_BUILD_ONLY="kube-apiserver etcd" "$here/build.sh")
apiserver=$bin/kube-apiserver etcd=$bin/etcd
[ -x "$apiserver" ] && [ -x "$etcd" ] || die "build.sh did not produce kube-apiserver and etcd in $bin"
built=$("$apiserver" --version | awk '{print $2}')
[ "$built" = "$version" ] || die "$apiserver reports $built, expected $version"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/km-capture-openapi.XXXXXX")
started=() # PIDs of the processes this script started, and only those
cleanup() {
  local status=$? pid i n
  trap '' INT TERM # a second signal must not cut the cleanup short
  # In reverse order, as stop.sh does: kube-apiserver shuts down slowly once etcd is gone.
  for ((n = ${#started[@]} - 1; n >= 0; n--)); do
    pid=${started[n]}
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Three distinct free ports, held open together while the kernel picks them.
read -r etcd_port etcd_peer_port api_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
for s in socks: s.close()')

# Certificates: one CA and one admin cert that is also the serving cert (see pki.sh).
pki=$tmp/pki
make_pki "$pki" kubectl-migrate-capture-ca 1

spawn() { # spawn LOGFILE CMD...: start detached and remember the PID
  local logfile=$1; shift
  setsid "$@" >"$logfile" 2>&1 </dev/null &
  started+=("$!")
}

wait_for() { # wait_for SECONDS DESCRIPTION LOGFILE CMD...
  local limit=$1 what=$2 logfile=$3; shift 3
  local deadline=$(( $(date +%s) + limit )) pid
  until "$@" >/dev/null 2>&1; do
    for pid in "${started[@]}"; do
      kill -0 "$pid" 2>/dev/null || { tail -n 25 "$logfile" >&2; die "a process exited while waiting for $what"; }
    done
    if [ "$(date +%s)" -ge "$deadline" ]; then
      tail -n 25 "$logfile" >&2 || true
      die "timed out after ${limit}s waiting for $what"
    fi
    sleep 0.5
  done
}

spawn "$tmp/etcd.log" "$etcd" --name km-capture --data-dir "$tmp/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
  --initial-cluster "km-capture=http://127.0.0.1:$etcd_peer_port" --unsafe-no-fsync=true \
  --auto-compaction-retention=1
wait_for 30 etcd "$tmp/etcd.log" curl -sf "http://127.0.0.1:$etcd_port/health"

spawn "$tmp/kube-apiserver.log" "$apiserver" \
  --etcd-servers "http://127.0.0.1:$etcd_port" --etcd-prefix /km-capture/registry \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
  --tls-cert-file "$pki/admin.crt" --tls-private-key-file "$pki/admin.key" --client-ca-file "$pki/ca.crt" \
  --service-account-issuer "https://kubernetes.default.svc.cluster.local" \
  --service-account-key-file "$pki/admin.key" --service-account-signing-key-file "$pki/admin.key" \
  --authorization-mode Node,RBAC --service-cluster-ip-range 10.96.0.0/16 --allow-privileged=true \
  --endpoint-reconciler-type none --enable-priority-and-fairness=false \
  --max-requests-inflight 0 --max-mutating-requests-inflight 0
api() { curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$api_port/$1" "${@:2}"; }
wait_for 120 "kube-apiserver (/readyz)" "$tmp/kube-apiserver.log" api readyz
served=$(api version | python3 -c 'import json,sys; print(json.load(sys.stdin)["gitVersion"])')
[ "$served" = "$version" ] || die "the API server reports $served, expected $version"
log "kube-apiserver $served is ready on 127.0.0.1:$api_port"

mkdir -p "$outdir"
for p in "${paths[@]}"; do
  raw=$tmp/raw.json out=$outdir/${p//\//-}.json
  wait_for 30 "/openapi/v3/$p" "$tmp/kube-apiserver.log" api "openapi/v3/$p" -H 'Accept: application/json' -o "$raw"
  python3 -m json.tool --sort-keys --indent 2 "$raw" > "$tmp/pretty.json"
  mv "$tmp/pretty.json" "$out"
  log "wrote $out ($(wc -c < "$out") bytes)"
done
