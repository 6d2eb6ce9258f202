#!/usr/bin/env bash
# The one command that runs every test: it installs what a fresh Debian machine lacks (or says
# what to run), builds the control plane (cached outside the repo), starts the real local
# clusters, runs the lint gates and the whole cargo test suite against them, checks install.sh
# and the krew install of the release archive, stops the clusters (whatever happened), and fuzzes
# every input entry point for a bounded time.
#
# Environment: KM_PORT_BASE (default 31000): the clusters' ports start there, the older cluster's
# 500 above and the middle one's 700 above, so that two checkouts can run the suite at once on
# different bases.
# KM_FUZZ_SECONDS (default 10): the fuzzing time per target.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
me=scripts/test.sh
step() { printf '\n==> %s\n' "$*" >&2; }

# What the tests run, installed or named before anything is built: openssl makes the clusters'
# certificates, curl waits for them, setsid starts them, script gives a test a terminal, zsh
# and fish run the completion tests (bash-completion: kubectl's own bash completion needs it), and
# a C and C++ compiler builds the crates with C parts (ring, mimalloc) and libFuzzer.
# shellcheck source=prerequisites.sh
source scripts/prerequisites.sh
need_commands openssl:openssl curl:curl setsid:util-linux script:bsdutils zsh:zsh fish:fish \
  /usr/share/bash-completion/bash_completion:bash-completion cc:build-essential c++:build-essential
need_go
need_cargo
need_rust_components clippy rustfmt

# A full disk shows up as a linker error half-way through the build; say so up front instead.
# A clean run's cargo builds, test clusters and fuzz targets take about 15 GB; what an earlier
# run left in target/ and fuzz/target/ is part of that.
need_gb=15
have_kb=0
for dir in target fuzz/target; do
  if [ -d "$dir" ]; then have_kb=$((have_kb + $(du -sk "$dir" | cut -f1))); fi
done
have_gb=$((have_kb / 1048576))
free_gb=$(df -Pk . | awk 'NR == 2 { print int($4 / 1048576) }')
[ $((free_gb + have_gb)) -ge "$need_gb" ] || {
  echo "$me: only ${free_gb} GB free on $(df -P . | awk 'NR == 2 { print $6 }'); a clean build, the test clusters and the fuzz targets need about ${need_gb} GB" >&2
  exit 1
}

step "building the control plane (cached after the first run)"
bin=$(tests/cluster/build.sh)
# The older control plane the failure-policy differential also runs against (versions.env).
# shellcheck source=../tests/cluster/versions.env
older_version=$(source tests/cluster/versions.env && echo "$OLDER_KUBERNETES_VERSION")
step "building the older control plane, Kubernetes $older_version (cached after the first run)"
KM_KUBERNETES_VERSION=$older_version tests/cluster/build.sh >/dev/null
# And the one between (a cold build took 56 min on two busy cores; cached afterwards).
middle_version=$(source tests/cluster/versions.env && echo "$MIDDLE_KUBERNETES_VERSION")
step "building the middle control plane, Kubernetes $middle_version (cached after the first run)"
KM_KUBERNETES_VERSION=$middle_version tests/cluster/build.sh >/dev/null
step "building the YAML truth helper: kubectl's YAML-to-JSON (cached after the first run)"
export KM_YAML_TRUTH
KM_YAML_TRUTH=$(tests/yamltruth/build.sh)

# Both lock files must be current before the long run: a stale fuzz/Cargo.lock would otherwise
# fail only at the end, after every test has run.
step "the lock files are current (Cargo.lock, fuzz/Cargo.lock)"
for manifest in Cargo.toml fuzz/Cargo.toml; do
  cargo metadata --locked --format-version 1 --manifest-path "$manifest" >/dev/null ||
    { echo "scripts/test.sh: ${manifest%Cargo.toml}Cargo.lock is stale: run cargo update -w --manifest-path $manifest and commit it" >&2; exit 1; }
done
step "cargo fmt --check"
cargo fmt --check
step "cargo clippy --all-targets -- -D warnings"
cargo clippy --locked --all-targets -- -D warnings
step "cargo build --all-targets"
cargo build --locked --all-targets

# The tests get clusters of their own, so a demo running next to them is left alone.
export KM_CLUSTERS_DIR=$repo/target/test-clusters
older_dir=$repo/target/test-clusters-older
middle_dir=$repo/target/test-clusters-middle
port_base=${KM_PORT_BASE:-31000}
trap 'step "stopping the test clusters"; tests/cluster/stop.sh; KM_CLUSTERS_DIR=$older_dir tests/cluster/stop.sh; KM_CLUSTERS_DIR=$middle_dir tests/cluster/stop.sh' EXIT
step "starting the test clusters"
# Every test binds fresh PVs from the pool, and retained ones are not reused. km-outage is for
# the tests that stop or restart an API server, and for them only.
kubeconfig=$(KM_PORT_BASE=$port_base KM_PV_POOL=300 tests/cluster/start.sh a b c outage)
step "starting the cluster of the older version ($older_version)"
older_kubeconfig=$(KM_KUBERNETES_VERSION=$older_version KM_CLUSTERS_DIR=$older_dir \
  KM_PORT_BASE=$((port_base + 500)) KM_PV_POOL=5 tests/cluster/start.sh older)

step "cargo test"
# Not --all-targets: that would also run the benchmarks, which have their own command. Every
# test target runs even when an earlier one fails, so that one failure hides no other; so do the
# tests of the middle version below.
tests_passed=true
KM_TEST_KUBECONFIG=$kubeconfig KM_TEST_OLDER_KUBECONFIG=$older_kubeconfig KM_TEST_BIN_DIR=$bin \
  cargo test --locked --no-fail-fast -- --skip middle_version || tests_passed=false

# The failure-policy differentials at the middle version (the tests named *middle_version*) get
# their cluster only while they run, not for the whole suite.
step "starting the cluster of the middle version ($middle_version) for its differentials"
middle_kubeconfig=$(KM_KUBERNETES_VERSION=$middle_version KM_CLUSTERS_DIR=$middle_dir \
  KM_PORT_BASE=$((port_base + 700)) KM_PV_POOL=5 tests/cluster/start.sh middle)
step "cargo test: the failure-policy differentials at $middle_version"
KM_TEST_KUBECONFIG=$kubeconfig KM_TEST_MIDDLE_KUBECONFIG=$middle_kubeconfig KM_TEST_BIN_DIR=$bin \
  cargo test --locked --test suite middle_version || tests_passed=false
KM_CLUSTERS_DIR=$middle_dir tests/cluster/stop.sh
$tests_passed || { echo "$me: tests failed (above)" >&2; exit 1; }

step "install.sh into a scratch prefix"
prefix=$(mktemp -d)
PREFIX=$prefix ./install.sh >/dev/null
"$prefix/bin/kubectl-migrate" --version
# Output captured first: with pipefail, grep -q quitting at its match could make kubectl die of
# SIGPIPE while writing the rest, and fail the check (seen once in CI).
completed=$(PATH="$prefix/bin:$bin:$PATH" kubectl __complete migrate sta) || true
grep -qx statefulset <<<"$completed" ||
  { echo "installed kubectl_complete-migrate does not complete: $completed" >&2; exit 1; }
for f in share/bash-completion/completions/kubectl-migrate share/zsh/site-functions/_kubectl-migrate \
         share/fish/vendor_completions.d/kubectl-migrate.fish share/man/man1/kubectl-migrate.1; do
  [ -s "$prefix/$f" ] || { echo "install.sh did not install $f into $prefix" >&2; exit 1; }
done
rm -rf "$prefix"

step "release archive and krew manifest (scripts/release.sh), installed with krew"
# krew reads the manifest and the archive from disk (--manifest, --archive) and so needs neither
# its plugin index nor the network; KREW_NO_UPGRADE_CHECK keeps it from asking for new releases.
krew_fail() { echo "krew install check: $*" >&2; exit 1; }
release=$(scripts/release.sh)
archive=$(sed -n 1p <<<"$release")
manifest=$(sed -n 2p <<<"$release")
[ -f "$archive" ] && [ -f "$manifest" ] || krew_fail "release.sh printed '$release', not an archive and a manifest"
version=$(awk -F'"' '/^\[/ { pkg = ($0 == "[package]") } pkg && /^version *=/ { print $2; exit }' Cargo.toml)
krew_root=$(mktemp -d)
(
  export KREW_ROOT=$krew_root KREW_NO_UPGRADE_CHECK=1 PATH="$krew_root/bin:$bin:$PATH"
  kubectl krew install --manifest="$manifest" --archive="$archive" ||
    krew_fail "kubectl krew install failed (KREW_ROOT $krew_root kept)"
  [ -z "$(ls -A "$krew_root/index")" ] || krew_fail "krew fetched an index into $krew_root/index"
  [ "$(command -v kubectl-migrate)" = "$krew_root/bin/kubectl-migrate" ] ||
    krew_fail "kubectl-migrate on PATH is $(command -v kubectl-migrate), not krew's"
  out=$(kubectl migrate version --client) || krew_fail "kubectl migrate version --client failed: $out"
  grep -qwF -- "$version" <<<"$out" || krew_fail "kubectl migrate version --client does not say $version: $out"
  # The manifest's caveats tell users to copy the completion helper; check that it works so.
  cp "$krew_root/store/migrate/v$version/kubectl_complete-migrate" "$krew_root/bin/" ||
    krew_fail "the completion helper is not where the caveats say"
  completed=$(kubectl __complete migrate sta) || true
  grep -qx statefulset <<<"$completed" ||
    krew_fail "the completion helper from the krew install does not complete: $completed"
)
rm -rf "$krew_root"

# Every entry point that reads user input, fuzzed for a bounded time (installs nightly and
# cargo-fuzz on first use; the corpus grows in a cache outside the repo between runs).
step "fuzzing every input entry point for ${KM_FUZZ_SECONDS:-10}s each (scripts/fuzz.sh)"
scripts/fuzz.sh "${KM_FUZZ_SECONDS:-10}"

step "all tests passed"
