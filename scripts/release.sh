#!/usr/bin/env bash
# Builds the release archive of kubectl-migrate for this machine's platform and its krew plugin
# manifest, and prints their two paths on stdout (the archive first):
#
#   scripts/release.sh
#   <target>/release-archive/kubectl-migrate-v<version>-<os>-<arch>.tar.gz
#   <target>/release-archive/migrate.yaml
#
# The archive holds kubectl-migrate, LICENSE and kubectl_complete-migrate (kubectl's completion
# helper; krew installs only the one executable named by `bin`, so the manifest's caveats tell
# the user to copy the helper by hand). The manifest is krew/migrate.yaml.tmpl with the version
# from Cargo.toml, the platform, the archive's URL and the sha256 of the archive just built. Try
# it without publishing anything (--archive makes krew use the local file instead of the URL):
#
#   kubectl krew install --manifest=<target>/release-archive/migrate.yaml \
#     --archive=<target>/release-archive/kubectl-migrate-v<version>-linux-amd64.tar.gz
#
# Environment: KM_HOMEPAGE and KM_RELEASE_URL (the directory URL the archive is published under;
# default <homepage>/releases/download/v<version>) go into the manifest; set them when publishing.
# SOURCE_DATE_EPOCH sets the archive's file times (default: the last commit's time), so that the
# same binary always gives the same archive and sha256.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
log() { printf 'release: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

command -v cargo >/dev/null || die "cargo is required (https://rustup.rs)"
version=$(awk -F'"' '/^\[/ { pkg = ($0 == "[package]") } pkg && /^version *=/ { print $2; exit }' Cargo.toml)
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "no semver version in Cargo.toml's [package] (found '$version')"

case $(uname -s) in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) die "unsupported OS $(uname -s)" ;;
esac
case $(uname -m) in
  x86_64 | amd64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "unsupported architecture $(uname -m)" ;;
esac

# There is no public address for the project yet: these defaults are placeholders until one is chosen.
homepage=${KM_HOMEPAGE:-https://github.com/OWNER/kubectl-migrate}
release_url=${KM_RELEASE_URL:-$homepage/releases/download/v$version}

log "building kubectl-migrate $version (cargo build --release --locked)"
cargo build --release --locked
target_dir=$(cargo metadata --format-version 1 --no-deps --locked |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
[ -x "$target_dir/release/kubectl-migrate" ] || die "$target_dir/release/kubectl-migrate was not built"
# build.rs decides what counts as uncommitted; ask the binary what it reports.
commit=$("$target_dir/release/kubectl-migrate" version --client -o json |
  sed -n 's/.*"gitCommit": *"\([^"]*\)".*/\1/p')
case $commit in
  *-dirty) log "note: uncommitted changes to the sources; the binary reports its commit as $commit" ;;
esac

out=$target_dir/release-archive
name=kubectl-migrate-v$version-$os-$arch.tar.gz
archive=$out/$name
manifest=$out/migrate.yaml
mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
install -m 0755 "$target_dir/release/kubectl-migrate" "$stage/kubectl-migrate"
install -m 0755 completions/kubectl_complete-migrate "$stage/kubectl_complete-migrate"
install -m 0644 LICENSE "$stage/LICENSE"
mtime=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
# Fixed order, owners and times, and no name or time in the gzip header: a reproducible archive.
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" \
  -cf - kubectl-migrate kubectl_complete-migrate LICENSE | gzip -n -9 > "$archive.tmp"
mv "$archive.tmp" "$archive"
sha256=$(sha256sum "$archive" | cut -d' ' -f1)

# Quoted replacements: an & in a URL stays an & (bash 5.2 would otherwise insert the match).
text=$(sed '/^apiVersion:/,$!d' krew/migrate.yaml.tmpl)
text=${text//@VERSION@/"$version"}
text=${text//@HOMEPAGE@/"$homepage"}
text=${text//@OS@/"$os"}
text=${text//@ARCH@/"$arch"}
text=${text//@URI@/"$release_url/$name"}
text=${text//@SHA256@/"$sha256"}
left=$(grep -o '@[A-Z0-9_]*@' <<<"$text" | sort -u | tr '\n' ' ' || true)
[ -z "$left" ] || die "krew/migrate.yaml.tmpl has fields this script does not fill: $left"
printf '%s\n' "$text" > "$manifest"

log "archive sha256 $sha256"
echo "$archive"
echo "$manifest"
