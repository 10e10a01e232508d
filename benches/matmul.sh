#!/usr/bin/env bash
# Matrix product (issue 9, item 9): an N x N f64 mat.mul (benches/matmul/
# matmul.ir, the product checksummed) with --pass=fuse,lower on Cranelift
# and LLVM, against C's i-k-j loop (benches/c/matmul.c, gcc -O3
# -march=native, no fast-math; gcc contracts a * b + c by default), one
# thread, all in one run; the *-fma rows add --fp-contract=fast.
# Usage: benches/matmul.sh [N] [REPS] [ROUNDS]   (medians of REPS runs;
# ROUNDS alternating rounds, the median over rounds is printed)
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/need_numpy.sh
N=${1:-512}
REPS=${2:-7}
ROUNDS=${3:-3}
cargo build --release -q -p opt-tool
L0=target/release/l0-opt
D=target/matmul
mkdir -p "$D"
python3 - "$N" "$D" <<'PY'
import sys
import numpy as np
n, d = int(sys.argv[1]), sys.argv[2]
g = np.random.default_rng(9)
a, b = g.random(n * n), g.random(n * n)
np.save(f"{d}/a.npy", a)
np.save(f"{d}/b.npy", b)
with open(f"{d}/expected", "w") as f:
    f.write(repr(float((a.reshape(n, n) @ b.reshape(n, n)).sum())))
PY
gcc -O3 -march=native -o "$D/matmul" benches/c/matmul.c -lm
args="--arg=@$D/a.npy --arg=@$D/b.npy --arg=$N"
declare -A times
for round in $(seq "$ROUNDS"); do
  c=$("$D/matmul" "$D/a.npy" "$D/b.npy" "$N" "$REPS" | sed -n 's/^median_ns=//p')
  times[c]+="$c "
  for config in cranelift llvm cranelift-fma llvm-fma; do
    backend=${config%-fma}
    contract=off
    [ "$config" = "$backend" ] || contract=fast
    # shellcheck disable=SC2086
    out=$("$L0" benches/matmul/matmul.ir --run=main $args --backend="$backend" --fp-contract=$contract --threads=1 --bench="$REPS" 2>&1)
    got=$(echo "$out" | grep -v '=' | tail -1)
    python3 -c "import sys; e=float(open('$D/expected').read()); g=float('$got'); sys.exit(abs(g-e) > 1e-9*abs(e))" \
      || { echo "matmul: $config result $got differs from numpy's $(cat "$D/expected")" >&2; exit 1; }
    times[$config]+="$(echo "$out" | sed -n 's/^median_ns=//p') "
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
c=$(echo "${times[c]}" | median)
printf "%-10s %12s %8s\n" "N=$N" "median ms" "vs C"
for k in c cranelift llvm cranelift-fma llvm-fma; do
  m=$(echo "${times[$k]}" | median)
  printf "%-10s %12.2f %8.2f\n" "$k" "$(echo "$m / 1000000" | bc -l)" "$(echo "$m / $c" | bc -l)"
done
