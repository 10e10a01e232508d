#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS seconds each (default 60), with corpora seeded
# from the lit tests and examples. Needs the nightly toolchain and cargo-fuzz
# (`cargo install cargo-fuzz`); .ci/run calls it with a short time.
# The seed is fixed (L0_FUZZ_SEED, default 1) so a CI failure reproduces from a clean clone.
# A crash leaves its input under fuzz/artifacts/<target>/; add it to the lit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-60}"
# The nightly fuzz builds keep out of a target directory that stable builds share (cargo's
# cached rustc probe there can be the stable compiler's: the nightly probe then fails).
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
  export CARGO_TARGET_DIR="$CARGO_TARGET_DIR/fuzz"
fi
for t in parse_verify pipeline interp patterns; do
  corpus="fuzz/corpus/$t"
  mkdir -p "$corpus"
  # Seed from every .ir test and example (file names are content hashes, so re-seeding is idempotent).
  find lit-tests/tests/ir examples -name '*.ir' | while read -r f; do
    cp "$f" "$corpus/seed-$(sha1sum "$f" | cut -c1-16)"
  done
  echo "fuzz: $t for ${SECONDS_EACH}s"
  log="fuzz/artifacts/$t.log"
  mkdir -p fuzz/artifacts
  # A crash, a timeout or a build failure makes cargo fuzz exit non-zero (a crash also
  # leaves its input under fuzz/artifacts/<target>/).
  run() {
    cargo +nightly fuzz run --fuzz-dir fuzz "$t" "$corpus" -- \
      -max_total_time="$SECONDS_EACH" -seed="${L0_FUZZ_SEED:-1}" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 >"$log" 2>&1
  }
  ok=0
  run || ok=$?
  # On fresh clones, twice, the first fuzz build right after installing cargo-fuzz failed in
  # cargo's rustc probe ("failed to run `rustc` to learn about target-specific information":
  # the probe was handed another compiler's error message as its source); the same build
  # passed when run again, and the failure did not reproduce on its own. Retry that failure
  # once; any other failure (a crash, a timeout, a compile error) fails at once.
  if [ "$ok" != 0 ] && grep -q "failed to run \`rustc\` to learn about target-specific information" "$log"; then
    echo "fuzz: $t: cargo's rustc probe failed; retrying once"
    tail -n 20 "$log"
    ok=0
    run || ok=$?
  fi
  if [ "$ok" != 0 ]; then
    tail -n 60 "$log"
    echo "fuzz: $t failed (log: $log)"
    exit 1
  fi
  grep -E "^(Done|stat::number_of_executed_units|stat::average_exec_per_sec)" "$log" || true
done
