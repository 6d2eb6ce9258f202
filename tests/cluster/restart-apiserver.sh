#!/usr/bin/env bash
# Restarts one cluster's kube-apiserver with the command line start.sh used, as an outage test:
#   tests/cluster/restart-apiserver.sh NAME [DOWN_SECONDS]
# Stops the recorded process, keeps it down for DOWN_SECONDS (default 2), starts it again, records
# the new PID in place of the old one, waits until it is up (components.sh), then restarts that
# cluster's controller-manager and waits until that is up too.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
state=${KM_CLUSTERS_DIR:-$repo/target/clusters}
# shellcheck source=components.sh
source "$here/components.sh"
name=${1:?usage: restart-apiserver.sh NAME [DOWN_SECONDS]}
down=${2:-2}
pids=$state/pids
# The recorded command names the binary; find it where start.sh did.
export PATH="$("$here/build.sh"):$PATH"

stop() { # stop COMPONENT: the recorded process, TERM then KILL
  local line pid
  line=$(grep " $name/$1 " "$pids") || { echo "no $1 recorded for $name in $pids" >&2; exit 1; }
  pid=${line%% *}
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
  [ -d "/proc/$pid" ] && kill -KILL "$pid"
  stopped=$pid
}

start() { # start COMPONENT CHECK PORT: the recorded command line again, until it is up
  local args=$state/$name/$1.args argv new
  mapfile -d '' argv < "$args"
  setsid "${argv[@]}" >>"$state/$name/$1.log" 2>&1 < /dev/null &
  new=$!
  sed -i "s|^$stopped $name/$1 |$new $name/$1 |" "$pids"
  for _ in $(seq 1 120); do
    if up "$new" "$2" "$3"; then
      echo "restarted $1 of $name ($stopped -> $new)" >&2
      return 0
    fi
    running "$new" || break
    sleep 0.5
  done
  echo "$1 of $name is not up again; see $state/$name/$1.log" >&2
  exit 1
}

stop kube-apiserver
sleep "$down"
start kube-apiserver healthy_apiserver "$(cat "$state/$name/apiserver-port")"
# The controller-manager's informers were seen to stay stale for minutes after the restart (the
# StatefulSet controller refusing with "read version ... is not as new as written version"),
# which broke later tests on the same cluster. The outage is the apiserver's; the controllers
# get a fresh start so that it ends with the test that caused it.
grep -q " $name/kube-controller-manager " "$pids" || exit 0
stop kube-controller-manager
start kube-controller-manager healthy_secure "$(secure_port "$state/$name/kube-controller-manager.args")"
