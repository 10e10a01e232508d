#!/usr/bin/env bash
# Parallel loops benchmark (issue 8): --threads=1 vs --threads=2 on both
# native backends, against the hand-written C baselines built with OpenMP
# (gcc -O3 -march=native -fopenmp, OMP_NUM_THREADS=1 and 2), in one run.
#   Black-Scholes over 10^6 options (compute bound), sum of squares over
#   10^7 f64 (memory bound), sum of squares over 1000 f64 (one chunk: must
#   be no slower with 2 threads) and over 8192 (two chunks of 4096: the
#   smallest loop handed to a second thread with the default grain).
# Prints median ns per call (REPS calls after one warm-up, compile time
# excluded) and the speedups t1/t2.
#
#   benches/threads.sh      (env: DATA dir, default /tmp/l0-bench-data; L0_OPT; REPS=21)
# Needs python3 with numpy (for the data) and gcc with OpenMP.
set -eu
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
DATA="${DATA:-/tmp/l0-bench-data}"
L0_OPT="${L0_OPT:-$ROOT/target/release/l0-opt}"
REPS="${REPS:-21}"
[ -x "$L0_OPT" ] || (cd "$ROOT" && cargo build --release -p opt-tool)
mkdir -p "$DATA"
python3 -c 'import numpy' 2>/dev/null || python3 -m pip install --quiet numpy
[ -f "$DATA/sumsq_x.npy" ] || python3 "$ROOT/examples/gen_sumsq_data.py" "$DATA" > "$DATA/sumsq_expected.txt"
[ -f "$DATA/bs_v.npy" ] || python3 "$ROOT/examples/gen_blackscholes_data.py" "$DATA" > "$DATA/bs_expected.txt"
for n in 1000 8192; do
  [ -f "$DATA/sumsq_$n.npy" ] || python3 -c "import numpy as np; np.save('$DATA/sumsq_$n.npy', np.random.default_rng(5).uniform(-1, 1, $n).astype('<f8'))"
done

BUILD="$(mktemp -d)"
trap 'rm -rf "$BUILD"' EXIT
CFLAGS="-O3 -march=native -Wall -fopenmp"
gcc $CFLAGS -o "$BUILD/sumsq" "$HERE/c/sumsq.c" -lm
gcc $CFLAGS -o "$BUILD/blackscholes" "$HERE/c/blackscholes.c" -lm
echo "# $(gcc --version | head -1); $CFLAGS; cpus: $(nproc); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

med() { sed -n 's/^median_ns=//p'; }
BS=(--arg=@"$DATA/bs_s.npy" --arg=@"$DATA/bs_k.npy" --arg=@"$DATA/bs_t.npy" --arg=@"$DATA/bs_v.npy")
l0() { # backend threads file args...
  local be="$1" t="$2" file="$3"; shift 3
  local pipe=fuse,lower; [ "$be" = llvm ] && pipe="fuse,lower{split=1}"
  "$L0_OPT" --pass="$pipe" "$ROOT/examples/$file" --run=main --backend="$be" --threads="$t" "$@" --bench="$REPS" 2>&1 >/dev/null | med
}
ratio() { python3 -c "print(round($1/$2,2))"; }
printf "%-18s %-10s %12s %12s %8s\n" kernel impl t1_ns t2_ns t1/t2
row() { # name impl t1 t2
  printf "%-18s %-10s %12s %12s %8s\n" "$1" "$2" "$3" "$4" "$(ratio "$3" "$4")"
}
for be in llvm cranelift; do
  row "blackscholes 1e6" "$be" "$(l0 $be 1 blackscholes.ir "${BS[@]}")" "$(l0 $be 2 blackscholes.ir "${BS[@]}")"
done
c1=$(OMP_NUM_THREADS=1 "$BUILD/blackscholes" "$DATA/bs_s.npy" "$DATA/bs_k.npy" "$DATA/bs_t.npy" "$DATA/bs_v.npy" "$REPS" | med)
c2=$(OMP_NUM_THREADS=2 "$BUILD/blackscholes" "$DATA/bs_s.npy" "$DATA/bs_k.npy" "$DATA/bs_t.npy" "$DATA/bs_v.npy" "$REPS" | med)
row "blackscholes 1e6" "C+OpenMP" "$c1" "$c2"
for x in sumsq_x sumsq_8192 sumsq_1000; do
  case $x in sumsq_x) name="sumsq 1e7";; sumsq_8192) name="sumsq 8192";; *) name="sumsq 1000";; esac
  for be in llvm cranelift; do
    row "$name" "$be" "$(l0 $be 1 sumsq.ir --arg=@"$DATA/$x.npy")" "$(l0 $be 2 sumsq.ir --arg=@"$DATA/$x.npy")"
  done
  c1=$(OMP_NUM_THREADS=1 "$BUILD/sumsq" "$DATA/$x.npy" "$REPS" | med)
  c2=$(OMP_NUM_THREADS=2 "$BUILD/sumsq" "$DATA/$x.npy" "$REPS" | med)
  row "$name" "C+OpenMP" "$c1" "$c2"
done
