#!/usr/bin/env bash
# The host code of the gpu level compiled (Cranelift, LLVM) against interpreted, both over
# the simulated device (--target=nvptx --device=sim, kernels in the gpu-level interpreter),
# in one run: issue 41 asks that the native host over the simulated device cost no more
# than the interpreter's host did. No GPU needed.
#
#   benches/gpu_sim_host.sh
#
# Environment (all optional): L0_OPT (default: cargo build --release -p opt-tool, then
# $CARGO_TARGET_DIR/release/l0-opt), N (elements, default 100000), REPS (--bench
# repetitions, default 5), WORK (scratch directory, default /tmp/l0-gpu-sim-bench).
set -Eeuo pipefail
cd "$(dirname "$0")/.."
N=${N:-100000}
REPS=${REPS:-5}
WORK=${WORK:-/tmp/l0-gpu-sim-bench}
mkdir -p "$WORK"
if [ -z "${L0_OPT:-}" ]; then
  cargo build --release -q -p opt-tool
  L0_OPT="${CARGO_TARGET_DIR:-$PWD/target}/release/l0-opt"
fi
# Inputs: .npy files of N f64 (written without numpy).
python3 - "$WORK" "$N" <<'PY'
import struct, sys
work, n = sys.argv[1], int(sys.argv[2])
def save(name, xs):
    hdr = "{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }" % len(xs)
    hdr += ' ' * (118 - len(hdr)) + '\n'
    with open(f'{work}/{name}.npy', 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode())
        f.write(struct.pack('<%dd' % len(xs), *xs))
save('x', [(i % 1000) / 100.0 for i in range(n)])
save('s', [80.0 + (i % 40) for i in range(n)])
save('k', [100.0] * n)
save('t', [0.5 + (i % 4) / 4 for i in range(n)])
save('v', [0.2 + (i % 5) / 20 for i in range(n)])
PY
run() { # name file args...
  local name=$1 file=$2; shift 2
  local base=""
  printf '%-14s' "$name"
  for be in interp cranelift llvm; do
    local ns
    ns=$("$L0_OPT" "$file" --target=nvptx --device=sim --backend=$be --run=main "$@" \
      --bench="$REPS" 2>&1 >/dev/null | sed -n 's/^median_ns=//p')
    [ -z "$base" ] && base=$ns
    awk -v be="$be" -v ns="$ns" -v base="$base" \
      'BEGIN { printf "  %-9s %8.1f ms (%.2fx)", be, ns / 1e6, ns / base }'
  done
  echo
}
echo "N = $N, median of $REPS calls, --target=nvptx --device=sim; ratio to the interpreted host"
run sumsq examples/sumsq.ir --arg=@"$WORK/x.npy"
run blackscholes examples/blackscholes.ir --arg=@"$WORK/s.npy" --arg=@"$WORK/k.npy" \
  --arg=@"$WORK/t.npy" --arg=@"$WORK/v.npy"
