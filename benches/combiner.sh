#!/usr/bin/env bash
# User-defined reduce and scan operators (issue 42): an argmin over records,
# a linear recurrence as a scan of pairs, and a 256-bin histogram
# (vec.hist) of 10^7 indices, and of 10^7 weights (a float sum per bin:
# chunked, so it runs on every core) (benches/combiner/programs.ir),
# compiled with --pass=fuse,lower on Cranelift and LLVM, against the
# hand-written C loops of benches/c/combiner.c, in one run (medians of
# --bench=REPS; one thread and all threads).
#
#   benches/combiner.sh [N=10000000] [REPS=11]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000000}
REPS=${2:-11}
D=${WORK:-/tmp/l0-combiner-bench}
mkdir -p "$D"
if [ -z "${L0_OPT:-}" ]; then
  cargo build --release -q -p opt-tool
  L0_OPT="${CARGO_TARGET_DIR:-$PWD/target}/release/l0-opt"
fi
# Inputs written by l0-opt itself (no numpy): a[i] in (0.5, 1.0), b[i] in [-1, 1).
cat > "$D/make.ir" <<'IR'
func.func @a(%n: index) -> vec<f64> {
  %i = vec.iota %n
  %y = vec.map (%i) : vec<index> -> vec<f64> {
  ^bb0(%e: index):
    %k = arith.index_cast %e : index to i64
    %c = arith.constant 7919 : i64
    %m = arith.muli %k, %c : i64
    %q = arith.constant 1000 : i64
    %r = arith.remsi %m, %q : i64
    %f = arith.sitofp %r : i64 to f64
    %s = arith.constant 0.0005 : f64
    %h = arith.constant 0.5 : f64
    %t = arith.mulf %f, %s : f64
    %u = arith.addf %t, %h : f64
    vec.yield %u : f64
  }
  func.return %y : vec<f64>
}
func.func @b(%n: index) -> vec<f64> {
  %i = vec.iota %n
  %y = vec.map (%i) : vec<index> -> vec<f64> {
  ^bb0(%e: index):
    %k = arith.index_cast %e : index to i64
    %c = arith.constant 104729 : i64
    %m = arith.muli %k, %c : i64
    %q = arith.constant 2000 : i64
    %r = arith.remsi %m, %q : i64
    %f = arith.sitofp %r : i64 to f64
    %s = arith.constant 0.001 : f64
    %o = arith.constant 1.0 : f64
    %t = arith.mulf %f, %s : f64
    %u = arith.subf %t, %o : f64
    vec.yield %u : f64
  }
  func.return %y : vec<f64>
}
func.func @idx(%n: index) -> vec<index> {
  %i = vec.iota %n
  %y = vec.map (%i) : vec<index> -> vec<index> {
  ^bb0(%e: index):
    %c = arith.constant 7919 : index
    %m = arith.muli %e, %c : index
    %q = arith.constant 256 : index
    %r = arith.remsi %m, %q : index
    vec.yield %r : index
  }
  func.return %y : vec<index>
}
IR
"$L0_OPT" "$D/make.ir" --run=idx --arg="$N" --backend=cranelift -o "$D/idx.npy"
"$L0_OPT" "$D/make.ir" --run=a --arg="$N" --backend=cranelift -o "$D/a.npy"
"$L0_OPT" "$D/make.ir" --run=b --arg="$N" --backend=cranelift -o "$D/b.npy"
${CC:-gcc} -O3 -march=native -o "$D/combiner" benches/c/combiner.c -lm
c_out=$("$D/combiner" "$D/a.npy" "$D/b.npy" "$REPS")
c_arg=$(sed -n 's/^argmin_median_ns=//p' <<<"$c_out")
c_lin=$(sed -n 's/^linrec_median_ns=//p' <<<"$c_out")
c_hist=$(sed -n 's/^hist_median_ns=//p' <<<"$c_out")
c_fhist=$(sed -n 's/^fhist_median_ns=//p' <<<"$c_out")
P=benches/combiner/programs.ir
t() { # function backend threads args...
  local f=$1 b=$2 th=$3; shift 3
  "$L0_OPT" "$P" --pass=fuse,lower --run="$f" "$@" --backend="$b" --threads="$th" --bench="$REPS" 2>&1 >/dev/null |
    sed -n 's/^median_ns=//p'
}
echo "N=$N, median of $REPS calls, ms (ratio to C, one thread)"
printf "%-8s %-10s %8s %14s %14s\n" program backend "C" "L0 1 thread" "L0 all"
for b in cranelift llvm; do
  for f in argmin linrec hist fhist; do
    case $f in
      argmin) args=(--arg=@"$D/a.npy"); c=$c_arg ;;
      linrec) args=(--arg=@"$D/a.npy" --arg=@"$D/b.npy"); c=$c_lin ;;
      hist) args=(--arg=@"$D/idx.npy"); c=$c_hist ;;
      fhist) args=(--arg=@"$D/idx.npy" --arg=@"$D/a.npy"); c=$c_fhist ;;
    esac
    one=$(t "$f" "$b" 1 "${args[@]}")
    all=$(t "$f" "$b" "$(nproc)" "${args[@]}")
    python3 -c "c,o,a=$c/1e6,$one/1e6,$all/1e6; print(f'%-8s %-10s %8.2f %8.2f (%.2fx) %8.2f (%.2fx)' % ('$f','$b',c,o,o/c,a,a/c))"
  done
done
# The recurrence against C without contraction (gcc contracts `a*x + b`
# into a fused multiply-add by default, L0 only with --fp-contract=fast),
# and L0 contracted against C's default.
${CC:-gcc} -O3 -march=native -ffp-contract=off -o "$D/combiner_nc" benches/c/combiner.c -lm
c_lin_nc=$("$D/combiner_nc" "$D/a.npy" "$D/b.npy" "$REPS" | sed -n 's/^linrec_median_ns=//p')
for b in cranelift llvm; do
  args=(--arg=@"$D/a.npy" --arg=@"$D/b.npy")
  one=$(t linrec "$b" 1 "${args[@]}")
  all=$(t linrec "$b" "$(nproc)" "${args[@]}")
  python3 -c "c,o,a=$c_lin_nc/1e6,$one/1e6,$all/1e6; print(f'%-8s %-10s %8.2f %8.2f (%.2fx) %8.2f (%.2fx)  vs C -ffp-contract=off' % ('linrec','$b',c,o,o/c,a,a/c))"
  one=$(t linrec "$b" 1 "${args[@]}" --fp-contract=fast)
  all=$(t linrec "$b" "$(nproc)" "${args[@]}" --fp-contract=fast)
  python3 -c "c,o,a=$c_lin/1e6,$one/1e6,$all/1e6; print(f'%-8s %-10s %8.2f %8.2f (%.2fx) %8.2f (%.2fx)  --fp-contract=fast vs C' % ('linrec','$b',c,o,o/c,a,a/c))"
done
# The results agree with C's.
echo "C: $(grep -E '^(argmin|linrec_last|hist_bin0|fhist_bin0)=' <<<"$c_out" | tr '\n' ' ')"
echo "L0 argmin: $("$L0_OPT" "$P" --pass=fuse,lower --run=argmin --arg=@"$D/a.npy" --backend=llvm | tr '\n' ' ')"
echo "L0 hist bin 0: $("$L0_OPT" "$P" --pass=fuse,lower --run=hist --arg=@"$D/idx.npy" --backend=llvm | sed 's/^\[\([0-9]*\),.*/\1/')"
echo "L0 fhist bin 0: $("$L0_OPT" "$P" --pass=fuse,lower --run=fhist --arg=@"$D/idx.npy" --arg=@"$D/a.npy" --backend=llvm | sed 's/^\[\([0-9.e+-]*\),.*/\1/')"
