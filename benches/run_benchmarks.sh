#!/usr/bin/env bash
# Runtime benchmarks, all measured in one run on the same data:
#   sum of squares over 10^7 f64: C (gcc -O3 -march=native, 8 accumulators) vs
#     l0-opt --pass=fuse,lower (Cranelift JIT) vs l0-opt --pass=lower (no fusion);
#   Black-Scholes over 10^6 options: C -O3 (no fast-math) vs l0-opt --pass=fuse,lower.
# Prints each median (ns) and the ratios the issues ask for.
#
#   benches/run_benchmarks.sh      (env: DATA dir, default /tmp/l0-bench-data; L0_OPT; REPS)
set -eu
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
DATA="${DATA:-/tmp/l0-bench-data}"
L0_OPT="${L0_OPT:-$ROOT/target/release/l0-opt}"
REPS="${REPS:-21}"
[ -x "$L0_OPT" ] || (cd "$ROOT" && cargo build --release -p opt-tool)
C_OUT="$(DATA="$DATA" REPS_SUMSQ="$REPS" REPS_BS="$REPS" bash "$HERE/run_c.sh")"
echo "$C_OUT"
c_sumsq=$(echo "$C_OUT" | awk '/== sumsq/{f=1} /== blackscholes/{f=0} f && /^median_ns=/{sub("median_ns=","");print}')
c_bs=$(echo "$C_OUT" | awk '/== blackscholes/{f=1} f && /^median_ns=/{sub("median_ns=","");print}')

l0() { # pipeline file args...
  local pipe="$1" file="$2"; shift 2
  "$L0_OPT" --pass="$pipe" "$ROOT/examples/$file" --run=main "$@" --bench="$REPS" 2>&1 >/dev/null | sed -n 's/^median_ns=//p'
}
BS_ARGS=(--arg=@"$DATA/bs_s.npy" --arg=@"$DATA/bs_k.npy" --arg=@"$DATA/bs_t.npy" --arg=@"$DATA/bs_v.npy")
echo "== l0-opt results"
echo "sumsq fuse,lower result: $("$L0_OPT" --pass=fuse,lower "$ROOT/examples/sumsq.ir" --run=main --arg=@"$DATA/sumsq_x.npy")"
echo "blackscholes fuse,lower result: $("$L0_OPT" --pass=fuse,lower "$ROOT/examples/blackscholes.ir" --run=main "${BS_ARGS[@]}")"
s_fused=$(l0 fuse,lower sumsq.ir --arg=@"$DATA/sumsq_x.npy")
s_unfused=$(l0 lower sumsq.ir --arg=@"$DATA/sumsq_x.npy")
b_fused=$(l0 fuse,lower blackscholes.ir "${BS_ARGS[@]}")
echo
echo "== summary (median ns over $REPS runs after a warm-up)"
printf "sumsq   C -O3 8 acc      %12s\n" "$c_sumsq"
printf "sumsq   l0 fuse,lower    %12s   ratio to C: %s (target <= 1.6)\n" "$s_fused" "$(python3 -c "print(round($s_fused/$c_sumsq,3))")"
printf "sumsq   l0 lower         %12s   fuse,lower speedup: %s (target >= 2.5)\n" "$s_unfused" "$(python3 -c "print(round($s_unfused/$s_fused,3))")"
printf "bs      C -O3            %12s\n" "$c_bs"
printf "bs      l0 fuse,lower    %12s   ratio to C: %s (target <= 1.5)\n" "$b_fused" "$(python3 -c "print(round($b_fused/$c_bs,3))")"
