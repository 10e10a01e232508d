#!/usr/bin/env bash
# Parallel loops benchmark (issue 8): --threads=1 vs --threads=2 on both
# native backends, against the hand-written C baselines built with OpenMP
# (gcc -O3 -march=native -fopenmp, OMP_NUM_THREADS=1 and 2), in one run.
#   Black-Scholes over 10^6 options (compute bound), sum of squares over
#   10^7 f64 (memory bound: 80 MB, from DRAM), over 10^6 (8 MB, from
#   the 32 MB L3), sum of squares over 1000 f64 (one chunk: must
#   be no slower with 2 threads) and over 8192 (two chunks of 4096: the
#   smallest loop handed to a second thread with the default grain).
# Prints median ns per call (REPS calls after one warm-up, compile time
# excluded; --threads=1 and 2 measured alternately ROUNDS times, and the
# median round kept, since this shared machine's bandwidth drifts) and the
# speedups t1/t2.
#
#   benches/threads.sh      (env: DATA dir, default /tmp/l0-bench-data; L0_OPT; REPS=21; ROUNDS=3)
# Needs python3 and gcc with OpenMP; NumPy (for the data) is installed with pip where missing.
set -eu
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
DATA="${DATA:-/tmp/l0-bench-data}"
L0_OPT="${L0_OPT:-$ROOT/target/release/l0-opt}"
REPS="${REPS:-21}"
ROUNDS="${ROUNDS:-3}"
[ -x "$L0_OPT" ] || (cd "$ROOT" && cargo build --release -p opt-tool)
mkdir -p "$DATA"
. "$ROOT/benches/need_numpy.sh"
[ -f "$DATA/sumsq_x.npy" ] || python3 "$ROOT/examples/gen_sumsq_data.py" "$DATA" > "$DATA/sumsq_expected.txt"
[ -f "$DATA/bs_v.npy" ] || python3 "$ROOT/examples/gen_blackscholes_data.py" "$DATA" > "$DATA/bs_expected.txt"
for n in 1000 8192 1000000; do
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
ratio() { python3 -c "print(round($1/$2,2))"; }
mid() { python3 -c "import sys; v=sorted(map(int, sys.argv[1:])); print(v[len(v)//2])" "$@"; }
printf "%-18s %-10s %12s %12s %8s\n" kernel impl t1_ns t2_ns t1/t2
# row NAME IMPL CMD...: CMD is run with T=1 and T=2 in the environment,
# alternately, ROUNDS times; it prints median_ns=.
row() {
  local name="$1" impl="$2"; shift 2
  local a=() b=()
  for _ in $(seq "$ROUNDS"); do
    a+=("$(T=1 "$@")"); b+=("$(T=2 "$@")")
  done
  local t1 t2; t1=$(mid "${a[@]}"); t2=$(mid "${b[@]}")
  printf "%-18s %-10s %12s %12s %8s\n" "$name" "$impl" "$t1" "$t2" "$(ratio "$t1" "$t2")"
}
l0() { # backend file args... (threads from $T)
  local be="$1" file="$2"; shift 2
  local pipe=fuse,lower; [ "$be" = llvm ] && pipe="fuse,lower{split=1}"
  "$L0_OPT" --pass="$pipe" "$ROOT/examples/$file" --run=main --backend="$be" --threads="$T" "$@" --bench="$REPS" 2>&1 >/dev/null | med
}
cbs() { OMP_NUM_THREADS=$T "$BUILD/blackscholes" "$DATA/bs_s.npy" "$DATA/bs_k.npy" "$DATA/bs_t.npy" "$DATA/bs_v.npy" "$REPS" | med; }
csumsq() { OMP_NUM_THREADS=$T "$BUILD/sumsq" "$1" "$REPS" | med; }
for be in llvm cranelift; do
  row "blackscholes 1e6" "$be" l0 "$be" blackscholes.ir "${BS[@]}"
done
row "blackscholes 1e6" "C+OpenMP" cbs
for x in sumsq_x sumsq_1000000 sumsq_8192 sumsq_1000; do
  case $x in sumsq_x) name="sumsq 1e7";; sumsq_1000000) name="sumsq 1e6";; sumsq_8192) name="sumsq 8192";; *) name="sumsq 1000";; esac
  for be in llvm cranelift; do
    row "$name" "$be" l0 "$be" sumsq.ir --arg=@"$DATA/$x.npy"
  done
  row "$name" "C+OpenMP" csumsq "$DATA/$x.npy"
done
