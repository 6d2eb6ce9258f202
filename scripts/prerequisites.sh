# Sourced by test.sh and demo.sh: what a fresh machine lacks is installed when this can be done
# here, and otherwise named with the exact command that installs it. Nothing is built before.
#
#   need_commands COMMAND:PACKAGE...  the Debian package of each missing command, installed with
#                                     apt-get as root or with passwordless sudo; a COMMAND that
#                                     starts with / is a file the package installs
#   need_go                           Go >= 1.26 (Kubernetes 1.36 needs it)
#   need_cargo                        cargo (rustup)
#   need_rust_components COMPONENT... rustup components, such as clippy and rustfmt
#
# Each exits 1 with the command to run when it cannot do its part. The caller sets `me` (the
# script's name, for messages).

prerequisite_missing() { # prerequisite_missing WHAT COMMAND: name it and the command, exit 1
  printf '%s: %s. Install with:\n\n  %s\n\nthen run %s again.\n' "$me" "$1" "$2" "$me" >&2
  exit 1
}

# As root, commands that need root are run as they are; otherwise through sudo.
as_root=""
[ "$(id -u)" -eq 0 ] || as_root="sudo "

need_commands() {
  local entry command package packages=() missing=()
  for entry in "$@"; do
    command=${entry%%:*} package=${entry#*:}
    case $command in
      /*) [ -e "$command" ] && continue ;;
      *) command -v "$command" >/dev/null && continue ;;
    esac
    missing+=("$command")
    case " ${packages[*]} " in *" $package "*) ;; *) packages+=("$package") ;; esac
  done
  [ ${#packages[@]} -gt 0 ] || return 0
  if ! command -v apt-get >/dev/null; then
    printf '%s: %s not found; install them with the package manager (on Debian: apt-get install -y %s), then run %s again.\n' \
      "$me" "${missing[*]}" "${packages[*]}" "$me" >&2
    exit 1
  fi
  local root=()
  if [ -n "$as_root" ]; then
    command -v sudo >/dev/null && sudo -n true 2>/dev/null ||
      prerequisite_missing "${missing[*]} not found, and installing needs root" \
        "sudo apt-get update && sudo apt-get install -y ${packages[*]}"
    root=(sudo -n)
  fi
  printf '%s: installing %s for %s (apt-get)\n' "$me" "${packages[*]}" "${missing[*]}" >&2
  "${root[@]}" apt-get update -qq
  "${root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
}

# Kubernetes 1.36 needs Go >= 1.26 to build; Debian's golang-go is far older, so Go comes from
# go.dev rather than apt.
need_go() {
  local minor arch
  minor=$(go env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p') || true
  [ "${minor:-0}" -ge 26 ] && return 0
  arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
  prerequisite_missing "Go >= 1.26 is needed to build the local clusters (found: $(go version 2>/dev/null || echo 'no go on PATH'))" \
    "${as_root}rm -rf /usr/local/go && curl -fsSL https://go.dev/dl/go1.26.0.linux-$arch.tar.gz | ${as_root}tar -C /usr/local -xz && export PATH=/usr/local/go/bin:\$PATH"
}

need_cargo() {
  command -v cargo >/dev/null ||
    prerequisite_missing "cargo not found (Rust)" \
      "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y && . \"\$HOME/.cargo/env\""
}

need_rust_components() {
  local component installed
  installed=$(rustup component list --installed 2>/dev/null) ||
    prerequisite_missing "rustup not found (the Rust components $* come with it)" \
      "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y && . \"\$HOME/.cargo/env\""
  for component in "$@"; do
    grep -q "^$component" <<<"$installed" || rustup component add "$component"
  done
}
