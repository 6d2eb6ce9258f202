#!/usr/bin/env bash
# Stops exactly the processes that start.sh started, by the PIDs it recorded, and nothing else:
# a PID is only signalled while it still runs the binary that was recorded for it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
state=${KM_CLUSTERS_DIR:-$repo/target/clusters}
pids=$state/pids
[ -f "$pids" ] || { echo "clusters: nothing to stop ($pids not found)" >&2; exit 0; }

ours() { # ours PID BINARY: is PID still the process we started?
  [ -r "/proc/$1/cmdline" ] || return 1
  local argv0
  argv0=$(tr '\0' '\n' < "/proc/$1/cmdline" | head -n 1)
  [ "$(basename "$argv0")" = "$(basename "$2")" ]
}

# Stop in reverse order: kubelets and controllers before the apiservers, etcd last.
mapfile -t lines < <(tac "$pids")
for line in "${lines[@]}"; do
  read -r pid name binary <<<"$line"
  if ours "$pid" "$binary"; then kill -TERM "$pid" 2>/dev/null && echo "clusters: stopped $name ($pid)" >&2; fi
done
deadline=$(( $(date +%s) + 10 ))
for line in "${lines[@]}"; do
  read -r pid name binary <<<"$line"
  while ours "$pid" "$binary"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then kill -KILL "$pid" 2>/dev/null; break; fi
    sleep 0.2
  done
done
rm -f "$pids"
