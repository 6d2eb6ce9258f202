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
# Prints the kubeconfig's path only once every component is up (components.sh); otherwise it
# stops what it started and names the component and its log.
#
# Environment: KM_CLUSTERS_DIR (default <repo>/target/clusters), KM_PV_POOL (PVs per cluster,
# default 40), KM_NODES (nodes per cluster, default 3), KM_PORT_BASE (the first port to try,
# default 31000; ports in the kernel's ephemeral range are skipped).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=pki.sh
source "$here/pki.sh"
# shellcheck source=components.sh
source "$here/components.sh"
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
# Ports go upward from KM_PORT_BASE, past those something listens on, and never into the
# kernel's ephemeral range: an outgoing connection takes its local port from there, and could
# take one between the probe here and the component's bind. A component that loses its port
# anyway (to another start.sh probing the same ports) is started again on new ones (`await`).
next_port=${KM_PORT_BASE:-31000}
[[ $next_port =~ ^[0-9]+$ ]] && [ "$next_port" -ge 1024 ] && [ "$next_port" -le 65535 ] ||
  die "KM_PORT_BASE=$next_port is not a port from 1024 to 65535"
read -r ephemeral_low ephemeral_high < /proc/sys/net/ipv4/ip_local_port_range ||
  { ephemeral_low=32768; ephemeral_high=60999; }
ephemeral() { [ "$1" -ge "$ephemeral_low" ] && [ "$1" -le "$ephemeral_high" ]; }
if ephemeral "$next_port"; then
  log "KM_PORT_BASE=$next_port is in the ephemeral port range $ephemeral_low-$ephemeral_high (/proc/sys/net/ipv4/ip_local_port_range): using ports from $((ephemeral_high + 1))"
fi
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
alloc_port() { # alloc_port VAR
  while ephemeral "$next_port" || port_busy "$next_port"; do
    if ephemeral "$next_port"; then next_port=$((ephemeral_high + 1)); else next_port=$((next_port + 1)); fi
    [ "$next_port" -le 65535 ] || die "no free port left from KM_PORT_BASE=${KM_PORT_BASE:-31000} up"
  done
  printf -v "$1" '%s' "$next_port"
  next_port=$((next_port + 1))
}

# Certificates: one CA and one admin cert that is also the serving cert (see pki.sh).
pki=$state/pki
make_pki "$pki" kubectl-migrate-test-ca 3650

# --- components ------------------------------------------------------------------------------
# Per component (etcd, a/kube-apiserver, ...): its PID, log, ports, health check (components.sh),
# the command that starts it, the log size when it was started, and its attempts.
declare -A pid_of log_of ports_of check_of start_of log_offset_of attempts_of

spawn() { # spawn NAME LOGFILE CHECK "PORT..." CMD... : start detached, record the PID and the command line
  local name=$1 logfile=$2 check=$3 ports=$4; shift 4
  log_offset_of[$name]=$(stat -c %s "$logfile" 2>/dev/null || echo 0)
  setsid "$@" >>"$logfile" 2>&1 < /dev/null &
  local pid=$!
  # A new attempt's record replaces the one before.
  grep -v " $name " "$pids" > "$pids.new" || true
  mv "$pids.new" "$pids"
  echo "$pid $name $1" >> "$pids"
  # restart-apiserver.sh starts the same command again.
  printf '%s\0' "$@" > "$state/$name.args"
  pid_of[$name]=$pid log_of[$name]=$logfile check_of[$name]=$check ports_of[$name]=$ports
}

failed() { # failed NAME PROBLEM: stop here, naming the component and showing its log
  log "ERROR: $1 $2; last lines of ${log_of[$1]}:"
  tail -n 25 "${log_of[$1]}" >&2 || true
  exit 1
}

# await NAME SECONDS: waits until the component is up: its process alive, listening on its ports
# itself, its health endpoint answering. One that exits because its port was taken after
# alloc_port found it free is started again on new ports, twice at most; any other exit, or no
# answer within SECONDS, stops start.sh.
await() {
  local name=$1 limit=$2 deadline
  deadline=$(( $(date +%s) + limit ))
  # shellcheck disable=SC2086 # the ports are words
  until up "${pid_of[$name]}" "${check_of[$name]}" ${ports_of[$name]}; do
    if ! running "${pid_of[$name]}"; then
      if [ "${attempts_of[$name]:-1}" -lt 3 ] &&
        tail -c +"$(( log_offset_of[$name] + 1 ))" "${log_of[$name]}" | grep -q 'address already in use'; then
        attempts_of[$name]=$(( ${attempts_of[$name]:-1} + 1 ))
        log "$name could not bind port(s) ${ports_of[$name]}, taken since they were found free; starting it again on others"
        ${start_of[$name]}
        deadline=$(( $(date +%s) + limit ))
        continue
      fi
      failed "$name" "exited (process ${pid_of[$name]}, port(s) ${ports_of[$name]})"
    fi
    [ "$(date +%s)" -lt "$deadline" ] ||
      failed "$name" "is not up after ${limit}s (process ${pid_of[$name]}, port(s) ${ports_of[$name]}, check ${check_of[$name]})"
    sleep 0.5
  done
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
start_etcd() {
  local etcd_peer_port
  alloc_port etcd_port; alloc_port etcd_peer_port
  start_of[etcd]=start_etcd
  # A member that failed to start must not leave its peer URL behind for the next attempt.
  rm -rf "$state/etcd/data"
  spawn etcd "$state/etcd/etcd.log" healthy_etcd "$etcd_port $etcd_peer_port" \
    etcd --name km --data-dir "$state/etcd/data" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "km=http://127.0.0.1:$etcd_peer_port" --unsafe-no-fsync=true \
    --auto-compaction-retention=1 --quota-backend-bytes=4294967296
}
mkdir -p "$state/etcd"
start_etcd
await etcd 30

# --- per cluster: kube-apiserver, then kube-controller-manager, kube-scheduler and KWOK ------
start_apiserver() { # start_apiserver NAME
  local name=$1 dir=$state/$1 api_port
  alloc_port api_port
  echo "$api_port" > "$dir/apiserver-port"
  start_of[$name/kube-apiserver]="start_apiserver $name"
  spawn "$name/kube-apiserver" "$dir/kube-apiserver.log" healthy_apiserver "$api_port" kube-apiserver \
    --etcd-servers "http://127.0.0.1:$etcd_port" --etcd-prefix "/km-$name/registry" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --tls-cert-file "$pki/admin.crt" --tls-private-key-file "$pki/admin.key" --client-ca-file "$pki/ca.crt" \
    --service-account-issuer "https://kubernetes.default.svc.cluster.local" \
    --service-account-key-file "$pki/admin.key" --service-account-signing-key-file "$pki/admin.key" \
    --authorization-mode Node,RBAC --service-cluster-ip-range 10.96.0.0/16 --allow-privileged=true \
    --endpoint-reconciler-type none --enable-priority-and-fairness=false \
    --max-requests-inflight 0 --max-mutating-requests-inflight 0
}

start_controller_manager() { # start_controller_manager NAME
  local name=$1 dir=$state/$1 port
  alloc_port port
  start_of[$name/kube-controller-manager]="start_controller_manager $name"
  spawn "$name/kube-controller-manager" "$dir/kube-controller-manager.log" healthy_secure "$port" \
    kube-controller-manager \
    --kubeconfig "$dir/kubeconfig" --authentication-kubeconfig "$dir/kubeconfig" --authorization-kubeconfig "$dir/kubeconfig" \
    --root-ca-file "$pki/ca.crt" --service-account-private-key-file "$pki/admin.key" \
    --bind-address 127.0.0.1 --secure-port "$port" --leader-elect=false --controllers '*' \
    --use-service-account-credentials=false --kube-api-qps 200 --kube-api-burst 300
}

start_scheduler() { # start_scheduler NAME
  local name=$1 dir=$state/$1 port
  alloc_port port
  start_of[$name/kube-scheduler]="start_scheduler $name"
  spawn "$name/kube-scheduler" "$dir/kube-scheduler.log" healthy_secure "$port" kube-scheduler \
    --kubeconfig "$dir/kubeconfig" --authentication-kubeconfig "$dir/kubeconfig" --authorization-kubeconfig "$dir/kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$port" --leader-elect=false
}

start_kwok() { # start_kwok NAME INDEX: INDEX gives the cluster its own pod CIDR
  local name=$1 dir=$state/$1 port
  alloc_port port
  start_of[$name/kwok]="start_kwok $name $2"
  # The second --config: the stages of the pods the zero-downtime pod runner runs as real
  # processes (see that file); it changes nothing for any other pod.
  spawn "$name/kwok" "$dir/kwok.log" healthy_kwok "$port" kwok \
    --kubeconfig "$dir/kubeconfig" --config "$bin/stages.yaml" --config "$here/pod-runner-stages.yaml" \
    --manage-all-nodes=true \
    --node-ip 127.0.0.1 --cidr "10.$(($2 + 100)).0.0/16" --node-lease-duration-seconds 40 \
    --server-address "127.0.0.1:$port"
}

for name in "${names[@]}"; do
  mkdir -p "$state/$name/volumes"
  start_apiserver "$name"
done

kubeconfig=$state/kubeconfig
: > "$kubeconfig"
for name in "${names[@]}"; do
  await "$name/kube-apiserver" 60
  # The port is known for sure only now (a retry takes another).
  ckc=$state/$name/kubeconfig
  KUBECONFIG=$ckc kubectl config set-cluster "km-$name" --server "https://127.0.0.1:$(cat "$state/$name/apiserver-port")" \
    --certificate-authority "$pki/ca.crt" --embed-certs >/dev/null
  KUBECONFIG=$ckc kubectl config set-credentials "km-$name-admin" --client-certificate "$pki/admin.crt" \
    --client-key "$pki/admin.key" --embed-certs >/dev/null
  KUBECONFIG=$ckc kubectl config set-context "km-$name" --cluster "km-$name" --user "km-$name-admin" >/dev/null
  KUBECONFIG=$ckc kubectl config use-context "km-$name" >/dev/null
done

i=0
for name in "${names[@]}"; do
  i=$((i + 1))
  dir=$state/$name
  ckc=$dir/kubeconfig
  start_controller_manager "$name"
  start_scheduler "$name"
  start_kwok "$name" "$i"

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
  for component in kube-controller-manager kube-scheduler kwok; do
    await "$name/$component" 60
  done
  export KUBECONFIG=$dir/kubeconfig
  wait_for 60 "$node_count Ready nodes in $name" "$dir/kwok.log" \
    kubectl wait --for=condition=Ready node --all --timeout=2s
  # Pods are only admitted once the controller manager has made the default ServiceAccount.
  wait_for 60 "the default ServiceAccount in $name" "$dir/kube-controller-manager.log" \
    kubectl get serviceaccount default -n default
done
unset KUBECONFIG

# Every component is still up at the end: one that died after it first answered would otherwise
# show up only as a test waiting for its full timeout.
while read -r _ name _; do
  # shellcheck disable=SC2086 # the ports are words
  up "${pid_of[$name]}" "${check_of[$name]}" ${ports_of[$name]} ||
    failed "$name" "is no longer up (process ${pid_of[$name]}, port(s) ${ports_of[$name]})"
done < "$pids"

trap - EXIT
log "started ${names[*]} in $(( $(date +%s) - started_at ))s (Kubernetes $("$bin/kube-apiserver" --version | awk '{print $2}'))"
log "export KUBECONFIG=$kubeconfig   # contexts: $(printf 'km-%s ' "${names[@]}")"
echo "$kubeconfig"
