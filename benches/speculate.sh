#!/usr/bin/env bash
# Speculative rewriting (issue 13): op counts and run time of
# benches/speculate/mode.ir before and after `speculate`, against the
# hand-written loop without the mode variable (baseline.ir), on 1e6 f64.
# Usage: benches/speculate.sh [REPS]   (medians of --bench=REPS runs)
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/need_numpy.sh
REPS=${1:-20}
cargo build --release -q -p opt-tool
L0=target/release/l0-opt
X=target/speculate_x.npy
python3 -c "import numpy as np; np.save('$X', np.random.default_rng(1).random(1_000_000))"
ops() { "$L0" "$1" --pass="$2" | grep -cE '^\s+(%[^ ]+ = )?[a-z]+\.[a-z_]+' ; }
for backend in cranelift llvm; do
  for cfg in "mode.ir:mem2reg,canonicalize,dce" "mode.ir:mem2reg,speculate,canonicalize,dce" "baseline.ir:canonicalize"; do
    f=benches/speculate/${cfg%%:*}; p=${cfg#*:}
    ns=$("$L0" "$f" --pass="$p" --run=main --arg=@$X --backend=$backend --bench="$REPS" 2>&1 >/dev/null | sed -n 's/median_ns=//p')
    echo "$backend  ${cfg%%:*}  --pass=$p  ops=$(ops "$f" "$p")  median_ns=$ns"
  done
done
