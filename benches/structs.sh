#!/usr/bin/env bash
# Records (issue 12): run time of the complex example (examples/complex.ir)
# split by split-structs (struct-of-arrays, only the real part computed),
# against the same program written by hand with one vector per part
# (benches/structs/complex_hand.ir), and against the program as it runs
# without split-structs (benches/structs/complex_aos.ir: records
# interleaved in memory, both parts computed), on N complex numbers.
# Usage: benches/structs.sh [N] [REPS]   (medians of --bench=REPS runs)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-4000000}
REPS=${2:-20}
cargo build --release -q -p opt-tool
L0=target/release/l0-opt
D=target/structs
mkdir -p "$D"
python3 - "$N" "$D" <<'PY'
import sys
import numpy as np
n, d = int(sys.argv[1]), sys.argv[2]
g = np.random.default_rng(12)
parts = {k: g.random(n) for k in ("ar", "ai", "br", "bi")}
for k, v in parts.items():
    np.save(f"{d}/{k}.npy", v)
np.save(f"{d}/a.npy", np.stack([parts["ar"], parts["ai"]], 1).reshape(-1))
np.save(f"{d}/b.npy", np.stack([parts["br"], parts["bi"]], 1).reshape(-1))
PY
soa="--arg=@$D/ar.npy --arg=@$D/ai.npy --arg=@$D/br.npy --arg=@$D/bi.npy"
aos="--arg=@$D/a.npy --arg=@$D/b.npy"
time_of() { "$L0" "$@" --bench="$REPS" 2>&1 >/dev/null | sed -n 's/median_ns=//p'; }
for backend in cranelift llvm; do
  for cfg in "complex_soa.ir|$soa" "complex_hand.ir|$soa" "complex_aos.ir|$aos"; do
    f=benches/structs/${cfg%%|*}; args=${cfg#*|}
    # shellcheck disable=SC2086
    ns=$(time_of "$f" --run=main $args --backend="$backend")
    # shellcheck disable=SC2086
    out=$("$L0" "$f" --run=main $args --backend="$backend" | head -1)
    echo "$backend  ${cfg%%|*}  median_ns=$ns  re=$out"
  done
done
