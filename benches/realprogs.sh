#!/usr/bin/env bash
# Real programs against NumPy (issue 44, "Black-Scholes and mri-q, all cores: at most
# 0.5x NumPy's time"): PARSEC's Black-Scholes (examples/blackscholes.ir, N options) and
# Parboil's mri-q (benches/realprogs/mriq.ir, NX voxels and NK k-space samples), with the
# default pipeline on Cranelift and LLVM, one thread and all cores, against NumPy on one
# (whole arrays: Black-Scholes as examples/gen_blackscholes_data.py computes it, mri-q as
# outer products in blocks of 512 voxels, cos/sin of each block, then a matrix-vector
# product with phiMag), all in one run. Every result is checked against NumPy's
# (relative 1e-9: sums split differently, libm's and NumPy's sin/cos differ in the last bit).
# Usage: benches/realprogs.sh [N=1000000] [NX=32768] [NK=2048] [REPS=5] [ROUNDS=3]
#   (medians of REPS runs; ROUNDS alternating rounds, the median over rounds is printed)
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/need_numpy.sh
N=${1:-1000000}
NX=${2:-32768}
NK=${3:-2048}
REPS=${4:-5}
ROUNDS=${5:-3}
CORES=$(nproc)
if [ -z "${L0_OPT:-}" ]; then
  cargo build --release -q -p opt-tool
  L0_OPT=target/release/l0-opt
fi
D=target/realprogs
mkdir -p "$D"
python3 examples/gen_blackscholes_data.py "$D" -n "$N" > /dev/null 2>&1
python3 - "$NX" "$NK" "$D" <<'PY'
import sys
import numpy as np
nx, nk, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
g = np.random.default_rng(5)
for name, n, lo, hi in (("kx", nk, -0.5, 0.5), ("ky", nk, -0.5, 0.5), ("kz", nk, -0.5, 0.5),
                        ("phir", nk, -1.0, 1.0), ("phii", nk, -1.0, 1.0),
                        ("x", nx, -32.0, 32.0), ("y", nx, -32.0, 32.0), ("z", nx, -32.0, 32.0)):
    np.save(f"{d}/mq_{name}.npy", g.uniform(lo, hi, n))
PY
bs_args="--arg=@$D/bs_s.npy --arg=@$D/bs_k.npy --arg=@$D/bs_t.npy --arg=@$D/bs_v.npy"
mq_args=""
for a in kx ky kz phir phii x y z; do mq_args+=" --arg=@$D/mq_$a.npy"; done
declare -A times expected
check() { # what got expected
  python3 -c "import sys; e=[float(x) for x in '$3'.split()]; g=[float(x) for x in '$2'.split()]; sys.exit(len(e) != len(g) or any(abs(a-b) > 1e-9*abs(b) for a, b in zip(g, e)))" \
    || { echo "realprogs: $1 result '$2' differs from NumPy's '$3'" >&2; exit 1; }
}
for round in $(seq "$ROUNDS"); do
  out=$(python3 - "$D" "$REPS" <<'PY'
import sys, time
import numpy as np
sys.path.insert(0, "examples")
from gen_blackscholes_data import call_prices
d, reps = sys.argv[1], int(sys.argv[2])
s, k, t, v = (np.load(f"{d}/bs_{n}.npy") for n in "sktv")
m = {n: np.load(f"{d}/mq_{n}.npy") for n in ("kx", "ky", "kz", "phir", "phii", "x", "y", "z")}
def bs():
    return (float(call_prices(s, k, t, v).sum()),)
def mriq(block=512):
    mag = m["phir"] * m["phir"] + m["phii"] * m["phii"]
    qr, qi = np.empty(len(m["x"])), np.empty(len(m["x"]))
    for b in range(0, len(m["x"]), block):
        e = b + block
        arg = 2 * np.pi * (np.outer(m["x"][b:e], m["kx"]) + np.outer(m["y"][b:e], m["ky"])
                           + np.outer(m["z"][b:e], m["kz"]))
        qr[b:e] = np.cos(arg) @ mag
        qi[b:e] = np.sin(arg) @ mag
    return float(qr.sum()), float(qi.sum())
for name, f in (("bs", bs), ("mriq", mriq)):
    r = f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter_ns(); r = f(); ts.append(time.perf_counter_ns() - t0)
    ts.sort()
    print(f"{name}_result={' '.join(repr(x) for x in r)}")
    print(f"{name}_median_ns={ts[len(ts) // 2]}")
PY
)
  for prog in bs mriq; do
    expected[$prog]=$(echo "$out" | sed -n "s/^${prog}_result=//p")
    times[numpy-$prog]+="$(echo "$out" | sed -n "s/^${prog}_median_ns=//p") "
  done
  for prog in bs mriq; do
    ir=examples/blackscholes.ir
    args=$bs_args
    if [ "$prog" = mriq ]; then ir=benches/realprogs/mriq.ir; args=$mq_args; fi
    for config in cranelift-1 llvm-1 "cranelift-$CORES" "llvm-$CORES"; do
      backend=${config%-*}
      threads=${config##*-}
      # shellcheck disable=SC2086
      out=$("$L0_OPT" "$ir" --run=main $args --backend="$backend" --threads="$threads" --bench="$REPS" 2>&1)
      check "$prog $config" "$(echo "$out" | grep -v '=' | tr '\n' ' ')" "${expected[$prog]}"
      times[$config-$prog]+="$(echo "$out" | sed -n 's/^median_ns=//p') "
    done
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for prog in bs mriq; do
  np_=$(echo "${times[numpy-$prog]}" | median)
  label="Black-Scholes N=$N"
  [ "$prog" = mriq ] && label="mri-q ${NX}x$NK"
  printf "%-28s %12s %9s\n" "$label" "median ms" "vs NumPy"
  for k in numpy cranelift-1 llvm-1 "cranelift-$CORES" "llvm-$CORES"; do
    m=$(echo "${times[$k-$prog]}" | median)
    printf "%-28s %12.2f %9.2f\n" "$k" "$(echo "$m / 1000000" | bc -l)" "$(echo "$m / $np_" | bc -l)"
  done
done
