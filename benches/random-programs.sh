#!/usr/bin/env bash
# Long runs of the random-program differential test (opt-tool/tests/random.rs).
# Usage: benches/random-programs.sh [N [FIRST_SEED]]   (default 2000 programs from seed 1)
# Env: RANDOM_JOBS, worker threads (default: the number of cores, at most 16).
# Prints the number of programs, runs and programs per minute; a disagreement stops the run
# with a reduced reproducer under target/random-failures/.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-2000}"
SEED="${2:-1}"
RANDOM_PROGRAMS="$N" RANDOM_SEED="$SEED" \
  cargo test --release -p opt-tool --test random -- --nocapture 2>&1 | grep -E "^random:|panicked|disagrees|test result"
