#!/usr/bin/env bash
# Guarded hoisting (issue 9, item 5): run time of programs whose loops hold
# an invariant op that may fault (benches/hoist/programs.ir), compiled with
# `--pass=fuse,lower` on Cranelift and LLVM, one thread, against a
# hand-written baseline that computes the invariant part before the loop,
# in one run (medians of --bench=REPS); then loop versioning (reads at
# i + 1), lowered with and without it. With L0_BEFORE=path/to/l0-opt (an
# older build) it also times that binary on the same programs.
# Usage: benches/hoist_checks.sh [N] [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/need_numpy.sh
N=${1:-100000}
REPS=${2:-11}
cargo build --release -q -p opt-tool
L0=target/release/l0-opt
P=benches/hoist/programs.ir
D=target/hoist-checks
mkdir -p "$D"
python3 - "$N" "$D" <<'PY'
import sys
import numpy as np
n, d = int(sys.argv[1]), sys.argv[2]
g = np.random.default_rng(5)
np.save(f"{d}/x.npy", g.random(n) + 0.5)
np.save(f"{d}/y.npy", g.random(n) + 0.5)
r = max(1, int(n ** 0.5))
np.save(f"{d}/m.npy", g.random((r, r)))
np.save(f"{d}/b.npy", g.random(r))
PY
X="--arg=@$D/x.npy"; Y="--arg=@$D/y.npy"
# program | function | baseline | arguments
cases=(
  "dot in a map|scale|scale_by_hand|$X $Y"
  "read at a fixed index|shift|shift_by_hand|$X $Y --arg=7"
  "zipWith of each row|rows|rows_by_hand|--arg=@$D/m.npy --arg=@$D/b.npy"
)
t() { # binary function backend
  # shellcheck disable=SC2086
  "$1" "$P" --pass=fuse,lower --run="$2" $args --backend="$3" --threads=1 --bench="$REPS" 2>&1 >/dev/null |
    sed -n 's/^median_ns=//p'
}
ms() { if [ -n "$1" ]; then echo "$1/1000000" | bc -l; else echo nan; fi; }
printf "%-24s %-10s %8s %12s %12s %8s %12s\n" program backend guarded "L0 ms" "by hand ms" ratio "before ms"
for c in "${cases[@]}"; do
  IFS='|' read -r name fn base args <<<"$c"
  # Guarded hoists in this function alone (fuse's statistic).
  python3 - "$P" "$fn" >"$D/$fn.ir" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
print(re.search(r"^func\.func @" + sys.argv[2] + r"\(.*?^}\n", text, re.S | re.M).group(0))
PY
  g=$("$L0" "$D/$fn.ir" --pass=fuse --pass-statistics 2>&1 >/dev/null | sed -n 's/^ *hoisted-guarded = //p' | head -1)
  for be in cranelift llvm; do
    a=$(t "$L0" "$fn" "$be")
    b=""; [ -n "$base" ] && b=$(t "$L0" "$base" "$be")
    o=""; [ -n "${L0_BEFORE:-}" ] && o=$(t "$L0_BEFORE" "$fn" "$be")
    ratio=nan; [ -n "$b" ] && ratio=$(echo "$a/$b" | bc -l)
    printf "%-24s %-10s %8s %12.3f %12.3f %8.2f %12.3f\n" "$name" "$be" "$g" \
      "$(ms "$a")" "$(ms "$b")" "$ratio" "$(ms "$o")"
  done
done
# Loop versioning: the same program lowered with and without it.
printf "\n%-24s %-10s %14s %14s %8s\n" program backend "versioned ms" "checked ms" speedup
for c in "stencil x[i+1] - x[i]|diff" "sum of x[i+1] * x[i]|lag_dot" "pairs x[2i] + x[2i+1]|pair_sums"; do
  IFS='|' read -r name fn <<<"$c"
  args="$X"
  for be in cranelift llvm; do
    v() { # shellcheck disable=SC2086
      "$L0" "$P" --pass="fuse,lower{$1}" --run="$fn" $args --backend="$be" --threads=1 --bench="$REPS" 2>&1 >/dev/null |
        sed -n 's/^median_ns=//p'
    }
    a=$(v "version=true"); b=$(v "version=false")
    printf "%-24s %-10s %14.3f %14.3f %8.2f\n" "$name" "$be" "$(ms "$a")" "$(ms "$b")" "$(echo "$b/$a" | bc -l)"
  done
done
