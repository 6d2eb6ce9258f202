#!/usr/bin/env bash
# The one command that runs every test: it builds the control plane (cached outside the repo),
# starts three real local clusters, runs the lint gates and the whole cargo test suite against them,
# checks install.sh, and stops the clusters afterwards, whatever happened.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
step() { printf '\n==> %s\n' "$*" >&2; }

step "building the control plane (cached after the first run)"
bin=$(tests/cluster/build.sh)

step "cargo fmt --check"
cargo fmt --check
step "cargo clippy --all-targets -- -D warnings"
cargo clippy --locked --all-targets -- -D warnings
step "cargo build --all-targets"
cargo build --locked --all-targets

# The tests get clusters of their own, so a demo running next to them is left alone.
export KM_CLUSTERS_DIR=$repo/target/test-clusters
trap 'step "stopping the test clusters"; tests/cluster/stop.sh' EXIT
step "starting the test clusters"
# Every test binds fresh PVs from the pool, and retained ones are not reused.
kubeconfig=$(KM_PV_POOL=200 tests/cluster/start.sh a b c)

step "cargo test"
# Not --all-targets: that would also run the benchmarks, which have their own command.
KM_TEST_KUBECONFIG=$kubeconfig KM_TEST_BIN_DIR=$bin cargo test --locked

step "install.sh into a scratch prefix"
prefix=$(mktemp -d)
PREFIX=$prefix ./install.sh >/dev/null
"$prefix/bin/kubectl-migrate" --version
PATH="$prefix/bin:$bin:$PATH" kubectl __complete migrate sta | grep -qx statefulset ||
  { echo "installed kubectl_complete-migrate does not complete" >&2; exit 1; }
rm -rf "$prefix"
step "all tests passed"
