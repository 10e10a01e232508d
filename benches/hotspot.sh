#!/usr/bin/env bash
# Stencil (issue 44, item 3): Rodinia's hotspot on an N x N f64 grid for STEPS
# time steps (benches/hotspot/hotspot.ir, the final grid checksummed) with the
# default pipeline on Cranelift and LLVM, one thread and all cores, against
# C (benches/c/hotspot.c, gcc -O3 -march=native, one thread) and NumPy (whole
# arrays per step: shifted copies of the grid for the four neighbours), all
# in one run. Every result is checked against C's (relative 1e-9: the sums
# of the checksum are split differently).
# Usage: benches/hotspot.sh [N] [STEPS] [REPS] [ROUNDS]   (medians of REPS
# runs; ROUNDS alternating rounds, the median over rounds is printed)
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/need_numpy.sh
N=${1:-512}
STEPS=${2:-20}
REPS=${3:-5}
ROUNDS=${4:-3}
CORES=$(nproc)
cargo build --release -q -p opt-tool
L0=target/release/l0-opt
D=target/hotspot
mkdir -p "$D"
python3 - "$N" "$D" <<'PY'
import sys
import numpy as np
n, d = int(sys.argv[1]), sys.argv[2]
g = np.random.default_rng(5)
np.save(f"{d}/temp.npy", 323.0 + g.random(n * n) * 20)
np.save(f"{d}/power.npy", g.random(n * n) * 0.5)
PY
gcc -O3 -march=native -o "$D/hotspot" benches/c/hotspot.c -lm
args="--arg=@$D/temp.npy --arg=@$D/power.npy --arg=$N --arg=$N --arg=$STEPS"
declare -A times
check() { # config result expected
  python3 -c "import sys; e=float('$3'); g=float('$2'); sys.exit(abs(g-e) > 1e-9*abs(e))" \
    || { echo "hotspot: $1 result $2 differs from C's $3" >&2; exit 1; }
}
for round in $(seq "$ROUNDS"); do
  out=$("$D/hotspot" "$D/temp.npy" "$D/power.npy" "$N" "$N" "$STEPS" "$REPS")
  expected=$(echo "$out" | sed -n 's/^result=//p')
  times[c]+="$(echo "$out" | sed -n 's/^median_ns=//p') "
  for config in cranelift-1 llvm-1 "cranelift-$CORES" "llvm-$CORES"; do
    backend=${config%-*}
    threads=${config##*-}
    # shellcheck disable=SC2086
    out=$("$L0" benches/hotspot/hotspot.ir --run=main $args --backend="$backend" --threads="$threads" --bench="$REPS" 2>&1)
    check "$config" "$(echo "$out" | grep -v '=' | tail -1)" "$expected"
    times[$config]+="$(echo "$out" | sed -n 's/^median_ns=//p') "
  done
  out=$(python3 - "$D" "$N" "$STEPS" "$REPS" <<'PY'
import sys, time
import numpy as np
d, n, steps, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
temp = np.load(f"{d}/temp.npy").reshape(n, n)
power = np.load(f"{d}/power.npy").reshape(n, n)
sc, rx1, ry1, rz1, amb = 0.3413333333333333, 0.1, 0.1, 0.0031250000000000002, 80.0
def run():
    t = temp
    for _ in range(steps):
        up = np.vstack([t[:1], t[:-1]])
        down = np.vstack([t[1:], t[-1:]])
        left = np.hstack([t[:, :1], t[:, :-1]])
        right = np.hstack([t[:, 1:], t[:, -1:]])
        t2 = 2.0 * t
        t = t + sc * (((power + ((up + down) - t2) * ry1) + ((left + right) - t2) * rx1) + (amb - t) * rz1)
    return t.sum()
r = run()
ts = []
for _ in range(reps):
    t0 = time.perf_counter_ns(); r = run(); ts.append(time.perf_counter_ns() - t0)
ts.sort()
print(f"result={float(r)!r}")
print(f"median_ns={ts[len(ts) // 2]}")
PY
)
  check numpy "$(echo "$out" | sed -n 's/^result=//p')" "$expected"
  times[numpy]+="$(echo "$out" | sed -n 's/^median_ns=//p') "
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
c=$(echo "${times[c]}" | median)
np_=$(echo "${times[numpy]}" | median)
printf "%-16s %12s %8s %9s\n" "${N}x${N} x$STEPS" "median ms" "vs C" "vs NumPy"
for k in c numpy cranelift-1 llvm-1 "cranelift-$CORES" "llvm-$CORES"; do
  m=$(echo "${times[$k]}" | median)
  printf "%-16s %12.2f %8.2f %9.2f\n" "$k" "$(echo "$m / 1000000" | bc -l)" "$(echo "$m / $c" | bc -l)" "$(echo "$m / $np_" | bc -l)"
done
