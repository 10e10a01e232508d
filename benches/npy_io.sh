#!/usr/bin/env bash
# `--run` on a large `.npy` input and output (issues 44 item 5, 41 item 1): the whole
# l0-opt process, from start to exit, against reading the file once (`cat FILE >
# /dev/null`, from the page cache) and copying it (`cp`), in one run. Programs: the sum of
# the input (input only) and its square written with -o (input and output).
#
#   benches/npy_io.sh
#
# Environment (all optional): L0_OPT (default: cargo build --release -p opt-tool, then
# $CARGO_TARGET_DIR/release/l0-opt), N (f64 elements, default 10^7 = 80 MB), REPS
# (processes per row, default 7; the median is printed), WORK (scratch directory,
# default /tmp/l0-npy-bench).
set -Eeuo pipefail
cd "$(dirname "$0")/.."
N=${N:-10000000}
REPS=${REPS:-7}
WORK=${WORK:-/tmp/l0-npy-bench}
mkdir -p "$WORK"
if [ -z "${L0_OPT:-}" ]; then
  cargo build --release -q -p opt-tool
  L0_OPT="${CARGO_TARGET_DIR:-$PWD/target}/release/l0-opt"
fi
cat > "$WORK/sum.ir" <<'IR'
func.func @main(%x: vec<f64>) -> f64 {
  %s = vec.sum %x : vec<f64>
  func.return %s : f64
}
IR
cat > "$WORK/square.ir" <<'IR'
func.func @main(%x: vec<f64>) -> vec<f64> {
  %y = vec.map (%x) : vec<f64> -> vec<f64> {
  ^bb0(%e: f64):
    %m = arith.mulf %e, %e : f64
    vec.yield %m : f64
  }
  func.return %y : vec<f64>
}
IR
cat > "$WORK/make.ir" <<'IR'
func.func @main(%n: index) -> vec<f64> {
  %i = vec.iota %n
  %y = vec.map (%i) : vec<index> -> vec<f64> {
  ^bb0(%e: index):
    %k = arith.index_cast %e : index to i64
    %f = arith.sitofp %k : i64 to f64
    %c = arith.constant 0.001 : f64
    %m = arith.mulf %f, %c : f64
    vec.yield %m : f64
  }
  func.return %y : vec<f64>
}
IR
"$L0_OPT" "$WORK/make.ir" --run=main --arg="$N" --backend=cranelift -o "$WORK/x.npy"
cat "$WORK/x.npy" > /dev/null
# The median wall time, in ms, of REPS runs of a command.
median_ms() {
  python3 - "$REPS" "$@" <<'PY'
import subprocess, sys, time
reps, cmd = int(sys.argv[1]), sys.argv[2:]
ts = []
for _ in range(reps):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    ts.append((time.perf_counter() - t) * 1e3)
print(f"{sorted(ts)[len(ts) // 2]:.1f}")
PY
}
bytes=$(stat -c %s "$WORK/x.npy")
echo "N=$N ($bytes bytes), median of $REPS processes, ms"
read_ms=$(median_ms sh -c "cat '$WORK/x.npy' > /dev/null")
copy_ms=$(median_ms cp "$WORK/x.npy" "$WORK/copy.npy")
echo "read once (cat): $read_ms"
echo "copy (cp):       $copy_ms"
for b in cranelift llvm interp; do
  s=$(median_ms "$L0_OPT" "$WORK/sum.ir" --run=main --arg=@"$WORK/x.npy" --backend=$b)
  q=$(median_ms "$L0_OPT" "$WORK/square.ir" --run=main --arg=@"$WORK/x.npy" --backend=$b -o "$WORK/y.npy")
  echo "$b: sum $s ($(python3 -c "print(f'{$s/$read_ms:.2f}')")x read), square -o $q ($(python3 -c "print(f'{$q/$copy_ms:.2f}')")x copy)"
done
