#!/usr/bin/env bash
# Build and run the hand-written C baselines on generated data.
#
#   benches/run_c.sh            (env: DATA=dir for the .npy inputs, default /tmp/l0-bench-data;
#                                CC=gcc; REPS_SUMSQ=21; REPS_BS=11)
#
# Generates (once; reused if present) 10^7 f64 for sumsq and 10^6 options for
# Black-Scholes with examples/gen_*_data.py, builds benches/c/*.c with
# gcc -O3 -march=native (no fast-math) -lm, and prints for each benchmark the
# expected value (numpy, correctly rounded), the C result, `median_ns=`, `min_ns=` and `cpu_median_ns=`.
set -eu
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
. "$ROOT/benches/need_numpy.sh"
DATA="${DATA:-/tmp/l0-bench-data}"
CC="${CC:-gcc}"
CFLAGS="-O3 -march=native -Wall"
BUILD="$(mktemp -d)"
trap 'rm -rf "$BUILD"' EXIT
mkdir -p "$DATA"

if [ ! -f "$DATA/sumsq_x.npy" ] || [ ! -f "$DATA/sumsq_expected.txt" ]; then
  python3 "$ROOT/examples/gen_sumsq_data.py" "$DATA" > "$DATA/sumsq_expected.txt"
fi
if [ ! -f "$DATA/bs_v.npy" ] || [ ! -f "$DATA/bs_expected.txt" ]; then
  python3 "$ROOT/examples/gen_blackscholes_data.py" "$DATA" > "$DATA/bs_expected.txt"
fi

$CC $CFLAGS -o "$BUILD/sumsq" "$HERE/c/sumsq.c" -lm
$CC $CFLAGS -o "$BUILD/blackscholes" "$HERE/c/blackscholes.c" -lm
echo "# $($CC --version | head -1); flags: $CFLAGS -lm; cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

echo "== sumsq (10^7 f64)"
sed -n 's/^expected=/expected (numpy, fsum): /p' "$DATA/sumsq_expected.txt"
"$BUILD/sumsq" "$DATA/sumsq_x.npy" "${REPS_SUMSQ:-21}"

echo "== blackscholes (10^6 options)"
sed -n 's/^checksum=/expected (numpy, fsum): /p' "$DATA/bs_expected.txt"
"$BUILD/blackscholes" "$DATA/bs_s.npy" "$DATA/bs_k.npy" "$DATA/bs_t.npy" "$DATA/bs_v.npy" "${REPS_BS:-11}"
