#!/usr/bin/env bash
# Starts N named local Kubernetes clusters (default: a b) on 127.0.0.1: one shared etcd (each
# cluster under its own prefix), and per cluster the real kube-apiserver, kube-controller-manager
# and kube-scheduler, with KWOK playing the kubelet. Each cluster gets 3 Ready nodes, a default
# StorageClass and a pool of static PVs, so volumeClaimTemplates bind through the real PV binder.
#
#   tests/cluster/start.sh [NAME...]     e.g. start.sh a b c
#
# Writes $KM_CLUSTERS_DIR/kubeconfig with one context "km-NAME" per cluster and records every PID
# it starts in $KM_CLUSTERS_DIR/pids, which stop.sh uses. Builds the binaries first if needed.
#
# Environment: KM_CLUSTERS_DIR (default <repo>/target/clusters), KM_PV_POOL (PVs per cluster,
# default 40), KM_NODES (nodes per cluster, default 3), KM_PORT_BASE (default 31000).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=pki.sh
source "$here/pki.sh"
repo=$(cd "$here/../.." && pwd)
state=${KM_CLUSTERS_DIR:-$repo/target/clusters}
pv_pool=${KM_PV_POOL:-40}
node_count=${KM_NODES:-3}
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(a b)
started_at=$(date +%s)
log() { printf 'clusters: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

for n in "${names[@]}"; do
  [[ $n =~ ^[a-z0-9]([a-z0-9-]*[a-z0-9])?$ ]] || die "cluster name '$n' must be a DNS label"
done
command -v openssl >/dev/null || die "openssl is required (apt-get install openssl)"
command -v curl >/dev/null || die "curl is required (apt-get install curl)"

bin=$("$here/build.sh")
export PATH="$bin:$PATH"

# A previous run's processes would hold the ports and the etcd data: stop them first.
"$here/stop.sh" >/dev/null 2>&1 || true
rm -rf "$state"
mkdir -p "$state/pki"
pids=$state/pids
: > "$pids"

# If anything below fails, do not leave half a control plane running.
trap 'status=$?; if [ $status -ne 0 ]; then log "start failed; logs are in $state/*/*.log"; "$here/stop.sh" >/dev/null 2>&1 || true; fi' EXIT

# --- ports ---------------------------------------------------------------------------------
next_port=${KM_PORT_BASE:-31000}
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
alloc_port() { # alloc_port VAR
  while port_busy "$next_port"; do next_port=$((next_port + 1)); done
  printf -v "$1" '%s' "$next_port"
  next_port=$((next_port + 1))
}

# Certificates: one CA and one admin cert that is also the serving cert (see pki.sh).
pki=$state/pki
make_pki "$pki" kubectl-migrate-test-ca 3650

spawn() { # spawn NAME LOGFILE CMD... : start detached, record the PID and the command line
  local name=$1 logfile=$2; shift 2
  setsid "$@" >"$logfile" 2>&1 < /dev/null &
  echo "$! $name $1" >> "$pids"
  # restart-apiserver.sh starts the same command again.
  printf '%s\0' "$@" > "$state/$name.args"
}

wait_for() { # wait_for SECONDS DESCRIPTION LOGFILE CMD...
  local limit=$1 what=$2 logfile=$3; shift 3
  local deadline=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "timed out after ${limit}s waiting for $what; last lines of $logfile:"
      tail -n 25 "$logfile" >&2 || true
      exit 1
    fi
    sleep 0.5
  done
}

# --- etcd, shared by all clusters ------------------------------------------------------------
alloc_port etcd_port; alloc_port etcd_peer_port
mkdir -p "$state/etcd"
spawn etcd "$state/etcd/etcd.log" etcd --name km --data-dir "$state/etcd/data" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
  --initial-cluster "km=http://127.0.0.1:$etcd_peer_port" --unsafe-no-fsync=true \
  --auto-compaction-retention=1 --quota-backend-bytes=4294967296
wait_for 30 etcd "$state/etcd/etcd.log" curl -sf "http://127.0.0.1:$etcd_port/health"

kubeconfig=$state/kubeconfig
: > "$kubeconfig"
for name in "${names[@]}"; do
  dir=$state/$name
  mkdir -p "$dir/volumes"
  alloc_port api_port
  echo "$api_port" > "$dir/apiserver-port"
  ckc=$dir/kubeconfig
  KUBECONFIG=$ckc kubectl config set-cluster "km-$name" --server "https://127.0.0.1:$api_port" \
    --certificate-authority "$pki/ca.crt" --embed-certs >/dev/null
  KUBECONFIG=$ckc kubectl config set-credentials "km-$name-admin" --client-certificate "$pki/admin.crt" \
    --client-key "$pki/admin.key" --embed-certs >/dev/null
  KUBECONFIG=$ckc kubectl config set-context "km-$name" --cluster "km-$name" --user "km-$name-admin" >/dev/null
  KUBECONFIG=$ckc kubectl config use-context "km-$name" >/dev/null

  spawn "$name/kube-apiserver" "$dir/kube-apiserver.log" kube-apiserver \
    --etcd-servers "http://127.0.0.1:$etcd_port" --etcd-prefix "/km-$name/registry" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --tls-cert-file "$pki/admin.crt" --tls-private-key-file "$pki/admin.key" --client-ca-file "$pki/ca.crt" \
    --service-account-issuer "https://kubernetes.default.svc.cluster.local" \
    --service-account-key-file "$pki/admin.key" --service-account-signing-key-file "$pki/admin.key" \
    --authorization-mode Node,RBAC --service-cluster-ip-range 10.96.0.0/16 --allow-privileged=true \
    --endpoint-reconciler-type none --enable-priority-and-fairness=false \
    --max-requests-inflight 0 --max-mutating-requests-inflight 0
done

for name in "${names[@]}"; do
  dir=$state/$name
  api_port=$(cat "$dir/apiserver-port")
  wait_for 60 "kube-apiserver of $name (/readyz)" "$dir/kube-apiserver.log" \
    curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$api_port/readyz"
done

i=0
for name in "${names[@]}"; do
  i=$((i + 1))
  dir=$state/$name
  ckc=$dir/kubeconfig
  alloc_port kcm_port; alloc_port sched_port; alloc_port kwok_port
  spawn "$name/kube-controller-manager" "$dir/kube-controller-manager.log" kube-controller-manager \
    --kubeconfig "$ckc" --authentication-kubeconfig "$ckc" --authorization-kubeconfig "$ckc" \
    --root-ca-file "$pki/ca.crt" --service-account-private-key-file "$pki/admin.key" \
    --bind-address 127.0.0.1 --secure-port "$kcm_port" --leader-elect=false --controllers '*' \
    --use-service-account-credentials=false --kube-api-qps 200 --kube-api-burst 300
  spawn "$name/kube-scheduler" "$dir/kube-scheduler.log" kube-scheduler \
    --kubeconfig "$ckc" --authentication-kubeconfig "$ckc" --authorization-kubeconfig "$ckc" \
    --bind-address 127.0.0.1 --secure-port "$sched_port" --leader-elect=false
  spawn "$name/kwok" "$dir/kwok.log" kwok \
    --kubeconfig "$ckc" --config "$bin/stages.yaml" --manage-all-nodes=true \
    --node-ip 127.0.0.1 --cidr "10.$((i + 100)).0.0/16" --node-lease-duration-seconds 40 \
    --server-address "127.0.0.1:$kwok_port"

  # Nodes, a default StorageClass and a pool of static hostPath PVs (reclaim policy Delete, the
  # usual default that the migration has to protect).
  {
    for n in $(seq 0 $((node_count - 1))); do
      cat <<NODE
apiVersion: v1
kind: Node
metadata:
  name: $name-node-$n
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {kubernetes.io/hostname: $name-node-$n, kubernetes.io/os: linux, kubernetes.io/arch: amd64, type: kwok}
---
NODE
    done
    cat <<SC
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: Immediate
reclaimPolicy: Delete
SC
    for n in $(seq -w 1 "$pv_pool"); do
      cat <<PV
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: $name-pv-$n
  labels: {km-pool: "true"}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Delete
  storageClassName: standard
  hostPath: {path: $dir/volumes/pv-$n, type: DirectoryOrCreate}
PV
    done
  } | KUBECONFIG=$ckc kubectl apply -f - >/dev/null

  # Append this cluster's context to the combined kubeconfig.
  KUBECONFIG="$kubeconfig:$ckc" kubectl config view --flatten > "$state/kubeconfig.new"
  mv "$state/kubeconfig.new" "$kubeconfig"
done
KUBECONFIG=$kubeconfig kubectl config use-context "km-${names[0]}" >/dev/null

for name in "${names[@]}"; do
  dir=$state/$name
  export KUBECONFIG=$dir/kubeconfig
  wait_for 60 "$node_count Ready nodes in $name" "$dir/kwok.log" \
    kubectl wait --for=condition=Ready node --all --timeout=2s
  # Pods are only admitted once the controller manager has made the default ServiceAccount.
  wait_for 60 "the default ServiceAccount in $name" "$dir/kube-controller-manager.log" \
    kubectl get serviceaccount default -n default
done
unset KUBECONFIG

trap - EXIT
log "started ${names[*]} in $(( $(date +%s) - started_at ))s (Kubernetes $("$bin/kube-apiserver" --version | awk '{print $2}'))"
log "export KUBECONFIG=$kubeconfig   # contexts: $(printf 'km-%s ' "${names[@]}")"
echo "$kubeconfig"
