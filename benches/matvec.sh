#!/usr/bin/env bash
# Matrix-vector products (issue 44, item 1): ITERS steps of x <- (M x) / n
# (benches/matvec/matvec.ir) and of x <- (M^T x) / n (matvec-t.ir), M an
# N x N f64 matrix, with --pass=fuse,lower on Cranelift and LLVM, against C
# (benches/c/matvec.c, gcc -O3 -march=native, no fast-math), one thread, all
# in one run; every result is checked against NumPy's.
# Usage: benches/matvec.sh [N] [ITERS] [REPS] [ROUNDS]   (medians of REPS
# runs; ROUNDS alternating rounds, the median over rounds is printed)
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/need_numpy.sh
N=${1:-1024}
ITERS=${2:-20}
REPS=${3:-7}
ROUNDS=${4:-3}
if [ -z "${L0_OPT:-}" ]; then
  cargo build --release -q -p opt-tool
  L0_OPT=target/release/l0-opt
fi
D=target/matvec
mkdir -p "$D"
python3 - "$N" "$ITERS" "$D" <<'PY'
import sys
import numpy as np
n, iters, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
a = np.random.default_rng(9).random(n * n)
np.save(f"{d}/a.npy", a)
m = a.reshape(n, n)
for mode, mm in (("n", m), ("t", m.T)):
    x = np.ones(n)
    for _ in range(iters):
        x = (mm @ x) * (1.0 / n)
    with open(f"{d}/expected-{mode}", "w") as f:
        f.write(repr(float(x.sum())))
PY
gcc -O3 -march=native -o "$D/matvec" benches/c/matvec.c -lm
args="--arg=@$D/a.npy --arg=$N --arg=$ITERS"
declare -A times
for round in $(seq "$ROUNDS"); do
  for mode in n t; do
    ir=benches/matvec/matvec.ir
    [ "$mode" = t ] && ir=benches/matvec/matvec-t.ir
    c=$("$D/matvec" "$D/a.npy" "$N" "$ITERS" "$mode" "$REPS" | sed -n 's/^median_ns=//p')
    times[c-$mode]+="$c "
    for backend in cranelift llvm; do
      # shellcheck disable=SC2086
      out=$("$L0_OPT" "$ir" --run=main $args --backend="$backend" --threads=1 --bench="$REPS" 2>&1)
      got=$(echo "$out" | grep -v '=' | tail -1)
      python3 -c "import sys; e=float(open('$D/expected-$mode').read()); g=float('$got'); sys.exit(abs(g-e) > 1e-9*abs(e))" \
        || { echo "matvec: $backend ($mode) result $got differs from numpy's $(cat "$D/expected-$mode")" >&2; exit 1; }
      times[$backend-$mode]+="$(echo "$out" | sed -n 's/^median_ns=//p') "
    done
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf "%-16s %12s %8s\n" "N=$N x$ITERS" "median ms" "vs C"
for mode in n t; do
  c=$(echo "${times[c-$mode]}" | median)
  for k in c cranelift llvm; do
    m=$(echo "${times[$k-$mode]}" | median)
    printf "%-16s %12.3f %8.2f\n" "$k ($mode)" "$(echo "$m / 1000000" | bc -l)" "$(echo "$m / $c" | bc -l)"
  done
done
