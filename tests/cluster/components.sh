# Sourced by start.sh and restart-apiserver.sh: is a component of a local cluster up? A component
# is up when its process is alive, listens on its ports itself (not another process that holds
# them) and its health endpoint answers. Expects `state` (the clusters directory) to be set.

# running PID: the process exists and has not exited (a child that exited stays a zombie until
# the shell reaps it).
running() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# listens PID PORT: process PID has a socket listening on TCP port PORT.
listens() {
  local inode hex
  hex=$(printf ':%04X' "$2")
  for inode in $(awk -v port="$hex" '$2 ~ port"$" && $4 == "0A" { print $10 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null); do
    [ -n "$(find "/proc/$1/fd" -lname "socket:\[$inode\]" -print -quit 2>/dev/null)" ] && return 0
  done
  return 1
}

# The health endpoints, by kind of component; each takes the component's (first) port.
healthy_etcd() { curl -sf --max-time 5 "http://127.0.0.1:$1/health" | grep -q '"health":"true"'; }
healthy_apiserver() {
  curl -sf --max-time 5 --cacert "$state/pki/ca.crt" --cert "$state/pki/admin.crt" \
    --key "$state/pki/admin.key" "https://127.0.0.1:$1/readyz" | grep -qx ok
}
# kube-controller-manager and kube-scheduler serve /healthz on their secure port without
# authentication; their serving certificates are self-signed.
healthy_secure() { curl -sfk --max-time 5 "https://127.0.0.1:$1/healthz" | grep -qx ok; }
healthy_kwok() { curl -sf --max-time 5 "http://127.0.0.1:$1/healthz" | grep -qx ok; }

# up PID CHECK PORT...: PID runs, listens on every PORT, and `CHECK FIRST_PORT` passes.
up() {
  local pid=$1 check=$2 port; shift 2
  running "$pid" || return 1
  for port in "$@"; do listens "$pid" "$port" || return 1; done
  "$check" "$1" >/dev/null 2>&1
}

# secure_port ARGS_FILE: the --secure-port in a command line recorded by start.sh.
secure_port() { tr '\0' '\n' < "$1" | sed -n '/^--secure-port$/{n;p;q}'; }
