#!/usr/bin/env bash
# Records (issue 12): run time of the complex example (examples/complex.ir:
# the real part of sum(k * z)) split by split-structs (struct-of-arrays:
# only z.re is read), against the same program written by hand with two
# vectors (benches/structs/complex_hand.ir), and against the program as it
# runs without split-structs (benches/structs/complex_aos.ir: the records
# interleaved in memory, both parts computed), on N complex numbers.
# Usage: benches/structs.sh [N] [REPS] [ROUNDS]   (medians of --bench=REPS
# runs; ROUNDS alternating rounds, so that drifts hit every program alike;
# THREADS=k for --threads=k, default all cores)
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/need_numpy.sh
N=${1:-4000000}
REPS=${2:-20}
ROUNDS=${3:-1}
THREADS=${THREADS:+--threads=$THREADS}
cargo build --release -q -p opt-tool
L0=target/release/l0-opt
D=target/structs
mkdir -p "$D"
python3 - "$N" "$D" <<'PY'
import sys
import numpy as np
n, d = int(sys.argv[1]), sys.argv[2]
g = np.random.default_rng(12)
re, im = g.random(n), g.random(n)
np.save(f"{d}/re.npy", re)
np.save(f"{d}/im.npy", im)
np.save(f"{d}/z.npy", np.stack([re, im], 1).reshape(-1))
PY
soa="--arg=@$D/re.npy --arg=@$D/im.npy --arg=1.5"
aos="--arg=@$D/z.npy --arg=1.5"
time_of() { "$L0" "$@" $THREADS --bench="$REPS" 2>&1 >/dev/null | sed -n 's/median_ns=//p'; }
for round in $(seq "$ROUNDS"); do
for backend in cranelift llvm; do
  for cfg in "complex_soa.ir|$soa" "complex_hand.ir|$soa" "complex_aos.ir|$aos"; do
    f=benches/structs/${cfg%%|*}; args=${cfg#*|}
    # shellcheck disable=SC2086
    ns=$(time_of "$f" --run=main $args --backend="$backend")
    # shellcheck disable=SC2086
    out=$("$L0" "$f" --run=main $args --backend="$backend" | head -1)
    echo "round=$round  $backend  ${cfg%%|*}  median_ns=$ns  re=$out"
  done
done
done
