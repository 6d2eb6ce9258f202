#!/usr/bin/env bash
# Builds the release binary and installs kubectl-migrate, its kubectl completion helper and its
# man pages. Binaries go to $PREFIX/bin (default PREFIX: ~/.local, so ~/.local/bin).
#
#   ./install.sh                    # ~/.local/bin
#   PREFIX=/usr/local ./install.sh  # /usr/local/bin
set -euo pipefail
repo=$(cd "$(dirname "$0")" && pwd)
prefix=${PREFIX:-$HOME/.local}
bindir=$prefix/bin
mandir=$prefix/share/man/man1

command -v cargo >/dev/null || { echo "install.sh: cargo is required (https://rustup.rs)" >&2; exit 1; }
echo "Building kubectl-migrate (release)..." >&2
cargo build --release --locked --quiet --manifest-path "$repo/Cargo.toml"
target_dir=$(cargo metadata --format-version 1 --no-deps --manifest-path "$repo/Cargo.toml" |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')

mkdir -p "$bindir" "$mandir"
install -m 0755 "$target_dir/release/kubectl-migrate" "$bindir/kubectl-migrate"
install -m 0755 "$repo/completions/kubectl_complete-migrate" "$bindir/kubectl_complete-migrate"
install -m 0644 "$repo"/man/*.1 "$mandir/"

echo "Installed:"
echo "  $bindir/kubectl-migrate            (run as: kubectl migrate ...)"
echo "  $bindir/kubectl_complete-migrate   (lets kubectl complete 'kubectl migrate <TAB>')"
echo "  $mandir/kubectl-migrate*.1         (man kubectl-migrate)"
case ":$PATH:" in
  *":$bindir:"*) ;;
  *) echo
     echo "$bindir is not on your PATH. Add it, e.g. in ~/.bashrc or ~/.zshrc:"
     echo "  export PATH=\"$bindir:\$PATH\"" ;;
esac
