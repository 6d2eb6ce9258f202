#!/usr/bin/env bash
# Builds the release binary and installs kubectl-migrate, its kubectl completion helper, its man
# pages and its shell completions. Binaries go to $PREFIX/bin (default PREFIX: ~/.local, so
# ~/.local/bin), the rest under $PREFIX/share.
#
#   ./install.sh                    # ~/.local/bin
#   PREFIX=/usr/local ./install.sh  # /usr/local/bin
set -euo pipefail
repo=$(cd "$(dirname "$0")" && pwd)
prefix=${PREFIX:-$HOME/.local}
bindir=$prefix/bin
mandir=$prefix/share/man/man1
bashdir=$prefix/share/bash-completion/completions
zshdir=$prefix/share/zsh/site-functions
fishdir=$prefix/share/fish/vendor_completions.d

command -v cargo >/dev/null || { echo "install.sh: cargo is required (https://rustup.rs)" >&2; exit 1; }
echo "Building kubectl-migrate (release; the first build takes a few minutes)..." >&2
cargo build --release --locked --quiet --manifest-path "$repo/Cargo.toml"
target_dir=$(cargo metadata --format-version 1 --no-deps --manifest-path "$repo/Cargo.toml" |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')

mkdir -p "$bindir" "$mandir" "$bashdir" "$zshdir" "$fishdir"
install -m 0755 "$target_dir/release/kubectl-migrate" "$bindir/kubectl-migrate"
install -m 0755 "$repo/completions/kubectl_complete-migrate" "$bindir/kubectl_complete-migrate"
install -m 0644 "$repo"/man/*.1 "$mandir/"
install -m 0644 "$repo/completions/kubectl-migrate.bash" "$bashdir/kubectl-migrate"
install -m 0644 "$repo/completions/_kubectl-migrate" "$zshdir/_kubectl-migrate"
install -m 0644 "$repo/completions/kubectl-migrate.fish" "$fishdir/kubectl-migrate.fish"

echo "Installed:"
echo "  $bindir/kubectl-migrate            (run as: kubectl migrate ...)"
echo "  $bindir/kubectl_complete-migrate   (lets kubectl complete 'kubectl migrate <TAB>')"
echo "  $mandir/kubectl-migrate*.1   (man kubectl-migrate; one page per command)"
echo "  completions for calling kubectl-migrate directly:"
echo "    bash  $bashdir/kubectl-migrate"
echo "    zsh   $zshdir/_kubectl-migrate"
echo "    fish  $fishdir/kubectl-migrate.fish"
case ":$PATH:" in
  *":$bindir:"*) ;;
  *) echo
     echo "$bindir is not on your PATH. Add it, e.g. in ~/.bashrc or ~/.zshrc:"
     echo "  export PATH=\"$bindir:\$PATH\"" ;;
esac
echo
echo "Shells load those completions if they search $prefix/share: bash-completion and fish search"
echo "\$XDG_DATA_DIRS (bash-completion also ~/.local/share); zsh searches \$fpath, so add, e.g. in"
echo "~/.zshrc before compinit:"
echo "  fpath=(\"$zshdir\" \$fpath)"
