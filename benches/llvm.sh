#!/usr/bin/env bash
# LLVM backend benchmark (issue 6): for each kernel, one run on the same
# data of the hand-written C baseline (gcc -O3 -march=native, no fast-math),
# l0-opt --pass=fuse,lower{split=1} on the LLVM JIT (LLVM splits reductions
# itself: their accumulators carry reassoc), and --pass=fuse,lower on the
# Cranelift JIT (four accumulators per reduction).
# Prints median ns (over REPS calls after one warm-up, compile time
# excluded), the ratios to C, and the LLVM JIT compile time per example.
#
#   benches/llvm.sh      (env: DATA dir, default /tmp/l0-bench-data; L0_OPT; REPS=21)
# Needs python3 and gcc; NumPy (for the data) is installed with pip where missing.
set -eu
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
DATA="${DATA:-/tmp/l0-bench-data}"
L0_OPT="${L0_OPT:-$ROOT/target/release/l0-opt}"
REPS="${REPS:-21}"
[ -x "$L0_OPT" ] || (cd "$ROOT" && cargo build --release -p opt-tool)
mkdir -p "$DATA"
. "$ROOT/benches/need_numpy.sh"
# Data: sumsq_x (10^7 uniform in [-1, 1)), Black-Scholes (10^6 options),
# and sqrt_x (10^7 uniform in [0, 1)) for sum(sqrt(2x+1)).
[ -f "$DATA/sumsq_x.npy" ] || python3 "$ROOT/examples/gen_sumsq_data.py" "$DATA" > "$DATA/sumsq_expected.txt"
[ -f "$DATA/bs_v.npy" ] || python3 "$ROOT/examples/gen_blackscholes_data.py" "$DATA" > "$DATA/bs_expected.txt"
[ -f "$DATA/sqrt_x.npy" ] || python3 -c "import numpy as np; np.save('$DATA/sqrt_x.npy', np.random.default_rng(3).uniform(0, 1, 10**7).astype('<f8'))"

BUILD="$(mktemp -d)"
trap 'rm -rf "$BUILD"' EXIT
CFLAGS="-O3 -march=native -Wall"
gcc $CFLAGS -o "$BUILD/sumsq" "$HERE/c/sumsq.c" -lm
gcc $CFLAGS -o "$BUILD/blackscholes" "$HERE/c/blackscholes.c" -lm
gcc $CFLAGS -o "$BUILD/kernels" "$HERE/c/kernels.c" -lm
echo "# $(gcc --version | head -1); $CFLAGS; cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

med() { sed -n 's/^median_ns=//p'; }
X="$DATA/sumsq_x.npy"; SX="$DATA/sqrt_x.npy"
BS=(--arg=@"$DATA/bs_s.npy" --arg=@"$DATA/bs_k.npy" --arg=@"$DATA/bs_t.npy" --arg=@"$DATA/bs_v.npy")
l0() { # backend file args...
  local be="$1" file="$2"; shift 2
  local pipe=fuse,lower; [ "$be" = llvm ] && pipe="fuse,lower{split=1}"
  "$L0_OPT" --pass="$pipe" "$ROOT/examples/$file" --run=main --backend="$be" "$@" --bench="$REPS" 2>&1 >/dev/null
}
row() { # name c_ns file args...
  local name="$1" c="$2" file="$3"; shift 3
  local lo cl
  lo="$(l0 llvm "$file" "$@")"; cl="$(l0 cranelift "$file" "$@")"
  local l c2 ct
  l=$(echo "$lo" | med); c2=$(echo "$cl" | med)
  ct=$(echo "$lo" | sed -n 's/^compile_ns=//p')
  printf "%-14s %12s %12s %12s %8s %8s %10s\n" "$name" "$c" "$l" "$c2" \
    "$(python3 -c "print(round($l/$c,3))")" "$(python3 -c "print(round($c2/$c,3))")" \
    "$(python3 -c "print(round($ct/1e6,1))")"
}
c_sumsq=$("$BUILD/sumsq" "$X" "$REPS" | med)
c_sqrt=$("$BUILD/kernels" sqrtsum "$SX" "$REPS" | med)
c_bs=$("$BUILD/blackscholes" "$DATA/bs_s.npy" "$DATA/bs_k.npy" "$DATA/bs_t.npy" "$DATA/bs_v.npy" "$REPS" | med)
c_mv=$("$BUILD/kernels" meanvar "$X" "$REPS" | med)
c_fs=$("$BUILD/kernels" filtersum "$X" "$REPS" | med)
echo "results: sumsq llvm=$("$L0_OPT" --pass=fuse,lower "$ROOT/examples/sumsq.ir" --run=main --backend=llvm --arg=@"$X") C=$("$BUILD/sumsq" "$X" 1 | sed -n 's/^result=//p')"
echo
echo "== median ns over $REPS runs (N = 10^7 f64; Black-Scholes 10^6 options)"
printf "%-14s %12s %12s %12s %8s %8s %10s\n" kernel C llvm cranelift llvm/C cl/C jit_ms
row sumsq "$c_sumsq" sumsq.ir --arg=@"$X"
row sqrt_sum "$c_sqrt" sqrt_sum.ir --arg=@"$SX"
row blackscholes "$c_bs" blackscholes.ir "${BS[@]}"
row mean_var "$c_mv" mean_var.ir --arg=@"$X"
row filter_sum "$c_fs" filter_sum.ir --arg=@"$X"
