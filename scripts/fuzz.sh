#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ (cargo fuzz, libFuzzer) for a bounded time each:
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 20)
#
# Installs what is missing first: the nightly toolchain (cargo fuzz needs it) and cargo-fuzz at
# the version below. Each target starts from its committed seeds (fuzz/seeds/TARGET) and from
# what earlier runs learnt, kept outside the repo in $KM_FUZZ_DIR (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-migrate/fuzz): corpus/TARGET, and artifacts/TARGET
# for the inputs that crash, time out or run out of memory, with each run's log in logs/.
# Exits 1, naming each crashing input, if any target failed.
#
# Reproduce a crash:  cargo +nightly fuzz run -s none TARGET PATH
# Minimize it:        cargo +nightly fuzz tmin -s none TARGET PATH
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
step() { printf '\n==> %s\n' "$*" >&2; }

seconds=${1:-20}
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] ||
  { echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET]" >&2; exit 2; }
cargo_fuzz_version=0.13.2
work=${KM_FUZZ_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-migrate/fuzz}

# Target, and the longest input it is given: enough for what the target reads (a CRD with a
# few versions, a Job, a scenario), small enough that each run tries many inputs.
targets=(
  "manifest 32768"
  "validate 8192"
  "validate_arbitrary 4096"
  "scenario_file 4096"
  "inline_spec 1024"
  "job_manifest 8192"
  "kubeconfig 4096"
  "duration 64"
)
# Memory per target process (libFuzzer reports anything above as a crash), and the time one
# input may take before it counts as a hang.
rss_limit_mb=2048
timeout_seconds=10

if ! rustup toolchain list | grep -q '^nightly'; then
  step "installing the nightly toolchain (cargo fuzz needs it)"
  rustup toolchain install nightly --profile minimal
fi
if ! command -v cargo-fuzz >/dev/null; then
  step "installing cargo-fuzz $cargo_fuzz_version"
  cargo install --locked cargo-fuzz --version "$cargo_fuzz_version"
elif ! cargo fuzz --version | grep -q " $cargo_fuzz_version\$"; then
  echo "note: using $(cargo fuzz --version), not $cargo_fuzz_version" >&2
fi

# No sanitizer: the crate has no unsafe code, and the targets run several times faster without
# one. Debug assertions and overflow checks stay on (cargo fuzz's default).
fuzz=(cargo +nightly fuzz)
step "building the fuzz targets"
cargo +nightly fetch --quiet --locked --manifest-path fuzz/Cargo.toml
"${fuzz[@]}" build -s none

failed=()
for entry in "${targets[@]}"; do
  read -r target max_len <<<"$entry"
  corpus=$work/corpus/$target
  artifacts=$work/artifacts/$target
  log=$work/logs/$target.log
  mkdir -p "$corpus" "$artifacts" "$work/logs"
  step "fuzzing $target for ${seconds}s"
  if "${fuzz[@]}" run -s none "$target" "$corpus" "fuzz/seeds/$target" -- \
    -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb="$rss_limit_mb" \
    -timeout="$timeout_seconds" -artifact_prefix="$artifacts/" -print_final_stats=1 \
    >"$log" 2>&1; then
    grep -E '^stat::(number_of_executed_units|new_units_added):' "$log" | sed 's/^/  /' >&2 || true
  else
    # libFuzzer names the input it saved: "Test unit written to PATH".
    input=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    grep -E '^(==[0-9]+== ERROR|thread .* panicked|SUMMARY)' "$log" | head -n 5 >&2 || true
    echo "  FAILED: ${input:-no input saved; see the log}  (log: $log)" >&2
    failed+=("$target: ${input:-see $log}")
  fi
done

if ((${#failed[@]})); then
  step "${#failed[@]} target(s) failed"
  printf '%s\n' "${failed[@]}"
  exit 1
fi
step "all ${#targets[@]} targets ran ${seconds}s each without a failure"
