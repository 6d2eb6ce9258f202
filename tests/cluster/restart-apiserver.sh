#!/usr/bin/env bash
# Restarts one cluster's kube-apiserver with the command line start.sh used, as an outage test:
#   tests/cluster/restart-apiserver.sh NAME [DOWN_SECONDS]
# Stops the recorded process, keeps it down for DOWN_SECONDS (default 2), starts it again, records
# the new PID in place of the old one, waits for /readyz, then restarts that cluster's
# controller-manager.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
state=${KM_CLUSTERS_DIR:-$repo/target/clusters}
name=${1:?usage: restart-apiserver.sh NAME [DOWN_SECONDS]}
down=${2:-2}
pids=$state/pids
# The recorded command names the binary; find it where start.sh did.
export PATH="$("$here/build.sh"):$PATH"
line=$(grep " $name/kube-apiserver " "$pids") || { echo "no kube-apiserver recorded for $name in $pids" >&2; exit 1; }
pid=${line%% *}
kill -TERM "$pid" 2>/dev/null || true
for _ in $(seq 1 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
[ -d "/proc/$pid" ] && kill -KILL "$pid"
sleep "$down"
mapfile -d '' argv < "$state/$name/kube-apiserver.args"
setsid "${argv[@]}" >>"$state/$name/kube-apiserver.log" 2>&1 < /dev/null &
new=$!
sed -i "s|^$pid $name/kube-apiserver |$new $name/kube-apiserver |" "$pids"
port=$(cat "$state/$name/apiserver-port")
pki=$state/pki
for _ in $(seq 1 120); do
  if curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$port/readyz" >/dev/null; then
    echo "restarted kube-apiserver of $name ($pid -> $new)" >&2
    # The controller-manager's informers were seen to stay stale for minutes after the restart
    # (the StatefulSet controller refusing with "read version ... is not as new as written
    # version"), which broke later tests on the same cluster. The outage is the apiserver's; the
    # controllers get a fresh start so that it ends with the test that caused it.
    line=$(grep " $name/kube-controller-manager " "$pids") || exit 0
    kcm=${line%% *}
    kill -TERM "$kcm" 2>/dev/null || true
    for _ in $(seq 1 100); do [ -d "/proc/$kcm" ] || break; sleep 0.1; done
    [ -d "/proc/$kcm" ] && kill -KILL "$kcm"
    mapfile -d '' argv < "$state/$name/kube-controller-manager.args"
    setsid "${argv[@]}" >>"$state/$name/kube-controller-manager.log" 2>&1 < /dev/null &
    sed -i "s|^$kcm $name/kube-controller-manager |$! $name/kube-controller-manager |" "$pids"
    echo "restarted kube-controller-manager of $name ($kcm -> $!)" >&2
    exit 0
  fi
  sleep 0.5
done
echo "kube-apiserver of $name did not become ready again; see $state/$name/kube-apiserver.log" >&2
exit 1
