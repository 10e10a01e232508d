#!/usr/bin/env bash
# Fusion rules of this round (issue 9): per rule, the gen.loop count of one
# program before `fuse` (after the gen lowering) and after it, and the run
# time of `--pass=lower` against `--pass=fuse,lower` on Cranelift, one
# thread, N elements (the invariant sum: over 1000; the bucket: 16 keys;
# the emit: 10 outer iterations; the matrices: 1000 rows of N/1000), in one run (medians of --bench=REPS).
# Usage: benches/fusion_rules.sh [N] [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/need_numpy.sh
N=${1:-1000000}
REPS=${2:-11}
cargo build --release -q -p opt-tool
L0=target/release/l0-opt
D=target/fusion-rules
mkdir -p "$D"
python3 - "$N" "$D" <<'PY'
import sys
import numpy as np
n, d = int(sys.argv[1]), sys.argv[2]
g = np.random.default_rng(4)
np.save(f"{d}/x.npy", g.random(n))
np.save(f"{d}/y.npy", g.random(n))
np.save(f"{d}/small.npy", g.random(1000))
np.save(f"{d}/k.npy", g.integers(0, 16, n, dtype=np.int64))
np.save(f"{d}/xi.npy", g.integers(-100, 100, n, dtype=np.int64))
c = max(n // 1000, 1)
np.save(f"{d}/m.npy", g.random((1000, c)))
np.save(f"{d}/xr.npy", g.random(1000 * c))
np.save(f"{d}/w8.npy", g.random(8))
PY
X="--arg=@$D/x.npy"; Y="--arg=@$D/y.npy"
C=$(( N / 1000 > 0 ? N / 1000 : 1 ))
T=lit-tests/tests/ir
# rule | file | function | arguments
rules=(
  "sizes (zipWith check)|$T/fuse/sizes.ir|zip_then_sums|$X $Y"
  "hoisting (invariant sum)|$T/code-motion/loops.ir|normalize|$X --arg=@$D/small.npy"
  "across variable ops|$T/fuse/between.ir|apart|$X"
  "index function (n-1-i)|$T/fuse/index.ir|reversed|$X --arg=$N"
  "emit between inner loops|$T/fuse/emit-between.ir|stats|$X --arg=10"
  "bucket (group sums)|$T/fuse/bucket.ir|group_sums|--arg=@$D/k.npy $X"
  "map of a scan|$T/fuse/scan-consumer.ir|map_scan|--arg=@$D/xi.npy"
  "sum of a scan|$T/fuse/scan-consumer.ir|sum_scan|$X"
  "flatMap into its consumer|$T/fuse/flatmap-consumer.ir|flat_sum|$X"
  "column sums of a transpose|$T/mat/transpose-row.ir|colsums|--arg=@$D/m.npy"
  "map through a reshape|$T/fuse/reshape.ir|rowsums|--arg=@$D/xr.npy --arg=1000 --arg=$C"
  "reshape flattened again|$T/fuse/reshape.ir|flat|--arg=@$D/xr.npy --arg=1000 --arg=$C"
  "across another loop|$T/fuse/across-loop.ir|across|$X --arg=@$D/small.npy"
  "column read at j, j+1, j+2|$T/fuse/column-reads.ir|colstencil|--arg=@$D/m.npy"
  "heavy map read at i-1|$T/fuse/expensive-producer.ir|shifted|$X --arg=@$D/w8.npy"
  "replicated transpose|$T/fuse/replicate.ir|replicated|--arg=@$D/m.npy --arg=100"
  "flatten of a transpose|$T/fuse/reshape.ir|flat_transposed|--arg=@$D/xr.npy --arg=1000 --arg=$C"
)
printf "%-26s %7s %7s %12s %12s %8s\n" rule before after "lower ms" "fuse ms" speedup
for r in "${rules[@]}"; do
  IFS='|' read -r name file fn args <<<"$r"
  only() { python3 - "$file" "$fn" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"^func\.func @" + sys.argv[2] + r"\(.*?^}\n", text, re.S | re.M)
print(m.group(0))
PY
  }
  only >"$D/$fn.ir"
  before=$("$L0" "$D/$fn.ir" --pass='lower{until=gen}' | grep -c 'gen.loop' || true)
  after=$("$L0" "$D/$fn.ir" --pass=fuse | grep -c 'gen.loop' || true)
  t() {
    # shellcheck disable=SC2086
    "$L0" "$D/$fn.ir" --pass="$1" --run="$fn" $args --backend=cranelift --threads=1 --bench="$REPS" 2>&1 >/dev/null |
      sed -n 's/^median_ns=//p'
  }
  a=$(t lower); b=$(t fuse,lower)
  printf "%-26s %7s %7s %12.3f %12.3f %8.2f\n" "$name" "$before" "$after" \
    "$(echo "$a/1000000" | bc -l)" "$(echo "$b/1000000" | bc -l)" "$(echo "$a/$b" | bc -l)"
done
