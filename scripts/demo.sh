#!/usr/bin/env bash
# The main job in one command: moves a 5-replica StatefulSet with volumes from one local cluster to
# another with `kubectl migrate statefulset`, and shows both sides before and after.
#
#   scripts/demo.sh
#
# It builds the plugin (release), starts two local clusters km-a and km-b (tests/cluster/start.sh;
# the control plane is built and cached on the first run, which takes a while), creates namespace
# `demo` with a headless Service and a StatefulSet `web` (5 replicas, one PVC each) in km-a, waits
# until it is Ready and its claims are Bound, migrates it to km-b, prints `--status`, and shows
# the pods, claims and volumes in km-b. The clusters are left running so you can look around; the
# last lines say how to use and stop them. Rerunning starts fresh clusters.
#
# Environment: KM_CLUSTERS_DIR (default <repo>/target/demo-clusters, so clusters of the test suite
# are left alone); the other variables of tests/cluster/start.sh (KM_PORT_BASE, ...) pass through.
set -Eeuo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export KM_CLUSTERS_DIR=${KM_CLUSTERS_DIR:-$repo/target/demo-clusters}
step() { printf '\n==> %s\n' "$*" >&2; }
run() { printf '$ %s\n' "$*" >&2; "$@"; }
stop_hint() {
  printf '  KM_CLUSTERS_DIR=%q tests/cluster/stop.sh\n' "$KM_CLUSTERS_DIR" >&2
}

# Everything the demo needs, installed (or named with the command that installs it) before
# anything is built: cargo builds the plugin, Go the control plane, openssl makes the clusters'
# certificates, curl waits for them to be ready, setsid starts them, a C compiler builds the
# crates with C parts (ring, mimalloc).
me=scripts/demo.sh
# shellcheck source=prerequisites.sh
source scripts/prerequisites.sh
need_commands openssl:openssl curl:curl setsid:util-linux cc:build-essential
need_go
need_cargo

trap 'printf "\ndemo: FAILED at line %s: %s\n" "$LINENO" "$BASH_COMMAND" >&2' ERR
trap 'status=$?; if [ $status -ne 0 ]; then
  printf "demo: exit %s. Clusters that were started are left running for inspection; stop them with:\n" "$status" >&2
  stop_hint; fi' EXIT

ns=demo
src=km-a
dst=km-b

step "building the plugin (cargo build --release)"
cargo build --release --locked
plugin_dir=${CARGO_TARGET_DIR:-$repo/target}/release
[ -x "$plugin_dir/kubectl-migrate" ] || { echo "demo: $plugin_dir/kubectl-migrate was not built" >&2; exit 1; }

step "building the control plane (cached after the first run)"
bin=$(tests/cluster/build.sh)
# `kubectl migrate` resolves to the kubectl-migrate binary found on PATH.
export PATH="$plugin_dir:$bin:$PATH"

step "starting clusters km-a and km-b in $KM_CLUSTERS_DIR"
kubeconfig=$(tests/cluster/start.sh a b </dev/null)
export KUBECONFIG=$kubeconfig

step "creating namespace $ns, a headless Service and StatefulSet web (5 replicas, one PVC each) in $src"
run kubectl --context "$src" create namespace "$ns"
# Pods are admitted only once the namespace's default ServiceAccount exists.
for _ in $(seq 1 60); do
  kubectl --context "$src" -n "$ns" get serviceaccount default >/dev/null 2>&1 && break
  sleep 0.5
done
run kubectl --context "$src" -n "$ns" apply -f - <<'YAML'
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: web}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{name: http, port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 5
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: nginx
          image: nginx:1.27 # KWOK plays the kubelet: nothing is pulled or run
          ports: [{name: http, containerPort: 80}]
          volumeMounts: [{name: data, mountPath: /usr/share/nginx/html}]
  volumeClaimTemplates:
    - metadata:
        name: data
      spec:
        accessModes: [ReadWriteOnce]
        resources:
          requests: {storage: 1Gi}
YAML

step "waiting until web is Ready and its claims are Bound in $src"
run kubectl --context "$src" -n "$ns" rollout status statefulset/web --timeout=180s
run kubectl --context "$src" -n "$ns" wait pvc --all --for=jsonpath='{.status.phase}'=Bound --timeout=120s

step "before: $src"
run kubectl --context "$src" -n "$ns" get pods,pvc -o wide

step "migrating web from $src to $dst"
run kubectl migrate statefulset web -n "$ns" --context "$src" --to-context "$dst" \
  --create-namespace --copy-dependencies --yes </dev/null

step "status"
run kubectl migrate statefulset web -n "$ns" --context "$src" --to-context "$dst" --status </dev/null

step "after: $dst"
run kubectl --context "$dst" -n "$ns" get statefulset,pods,pvc -o wide
printf '$ kubectl --context %s get pv | grep %s/   # the volumes of the claims in %s\n' "$dst" "$ns" "$ns" >&2
kubectl --context "$dst" get pv | awk -v ns="$ns/" 'NR == 1 || index($0, ns)'
step "after: $src (the source keeps its StatefulSet at 0 replicas and its claims until --cleanup)"
run kubectl --context "$src" -n "$ns" get statefulset,pods,pvc

trap - EXIT
cat >&2 <<EOF

==> done: web now runs in $dst. The clusters are still running; to look around:
  export PATH="$plugin_dir:$bin:\$PATH"
  export KUBECONFIG=$kubeconfig
  kubectl --context $dst -n $ns get pods,pvc
  kubectl migrate statefulset web -n $ns --context $src --to-context $dst --rollback --yes   # move it back
Stop the clusters with:
EOF
stop_hint
