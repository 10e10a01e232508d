#!/usr/bin/env bash
# CSE + canonicalize on a large generated function: MLIR's mlir-opt vs L0's l0-opt.
#
#   benches/cse_vs_mlir.sh [N]          (default N = 1000000; run from anywhere)
#
# Env: MLIR_OPT (default: /usr/lib/llvm-16/bin/mlir-opt, else mlir-opt-16/mlir-opt on PATH)
#      L0_OPT   (default: target/release/l0-opt in the repo root)
#      WORK     (scratch dir, default: a fresh mktemp dir, removed at exit)
#      SEED     (generator seed, default 12345)
# Needs python3 and GNU time (/usr/bin/time; Debian package `time`).
# Reports wall time, CPU time (user+sys; robust when the machine is busy), peak RSS and the number of arith.addf/mulf/constant ops after the
# passes, for both tools, and the l0/mlir ratios.  Either tool may be missing.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
N="${1:-1000000}"
SEED="${SEED:-12345}"

if [ -z "${MLIR_OPT:-}" ]; then
  for c in /usr/lib/llvm-16/bin/mlir-opt "$(command -v mlir-opt-16 || true)" "$(command -v mlir-opt || true)"; do
    if [ -n "$c" ] && [ -x "$c" ]; then MLIR_OPT="$c"; break; fi
  done
fi
MLIR_OPT="${MLIR_OPT:-}"
L0_OPT="${L0_OPT:-$ROOT/target/release/l0-opt}"
TIME=/usr/bin/time
if [ ! -x "$TIME" ]; then
  echo "error: GNU time not found at $TIME (apt-get install time)" >&2
  exit 2
fi

if [ -z "${WORK:-}" ]; then
  WORK="$(mktemp -d)"
  trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK"
IN="$WORK/cse_bench_$N.mlir"

echo "== generating $N ops (seed $SEED) -> $IN"
python3 "$HERE/gen_cse_bench.py" -n "$N" --seed "$SEED" -o "$IN" 2>"$WORK/gen.txt" || { cat "$WORK/gen.txt"; exit 1; }
cat "$WORK/gen.txt"
EXPECTED="$(sed -n 's/.*addf_mulf=\([0-9]*\).*/\1/p' "$WORK/gen.txt")"
echo "input: $(grep -cE '"arith\.(addf|mulf)"' "$IN") addf/mulf, $(du -h "$IN" | cut -f1)"

# run NAME OUTFILE CMD... : runs under GNU time, prints wall/rss/op counts,
# sets ${NAME}_WALL (seconds) and ${NAME}_RSS (KiB).
run() {
  local name="$1" out="$2"; shift 2
  local tv="$WORK/$name.time"
  "$TIME" -v "$@" >"$out" 2>"$WORK/$name.err"
  local rc=$?
  # GNU time appends its report to stderr
  grep -E '^\s+(Elapsed|Maximum resident|User time|System time)' "$WORK/$name.err" >"$tv"
  if [ $rc -ne 0 ]; then
    echo "$name: FAILED (exit $rc)"; grep -vE '^\s' "$WORK/$name.err" | head -5
    return 1
  fi
  local wall rss
  wall="$(awk -F': ' '/Elapsed/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$tv")"
  rss="$(awk -F': ' '/Maximum resident/ {print $2}' "$tv")"
  local cpu
  cpu="$(awk -F': ' '/User time|System time/ {s+=$2} END {print s}' "$tv")"
  local ops consts
  ops="$(grep -v '^\s*//' "$out" | grep -cE 'arith\.(addf|mulf)')"
  consts="$(grep -v '^\s*//' "$out" | grep -cE 'arith\.constant')"
  printf '%s: wall_s=%s cpu_s=%s peak_rss_kib=%s (%.1f MiB) addf_mulf_after=%s constants_after=%s expected=%s %s\n' \
    "$name" "$wall" "$cpu" "$rss" "$(awk "BEGIN{print $rss/1024}")" "$ops" "$consts" "$EXPECTED" \
    "$([ "$ops" = "$EXPECTED" ] && [ "$consts" = 0 ] && echo OK || echo MISMATCH)"
  eval "${name}_WALL=$wall; ${name}_CPU=$cpu; ${name}_RSS=$rss"
}

mlir_WALL=""; l0_WALL=""
if [ -n "$MLIR_OPT" ]; then
  echo "== $MLIR_OPT --cse --canonicalize"
  "$MLIR_OPT" --version | grep -i version | head -1
  run mlir "$WORK/out.mlir.mlir" "$MLIR_OPT" --cse --canonicalize "$IN"
else
  echo "== mlir-opt not found (apt-get install mlir-16-tools); skipping"
fi

if [ -x "$L0_OPT" ]; then
  echo "== $L0_OPT --pass=cse,canonicalize"
  run l0 "$WORK/out.l0.ir" "$L0_OPT" --pass=cse,canonicalize "$IN"
else
  echo "== $L0_OPT not built (cargo build --release); skipping"
fi

if [ -n "$mlir_WALL" ] && [ -n "$l0_WALL" ]; then
  printf 'ratio l0/mlir: wall=%.3f cpu=%.3f peak_rss=%.3f\n' \
    "$(awk "BEGIN{print $l0_WALL/$mlir_WALL}")" "$(awk "BEGIN{print $l0_CPU/$mlir_CPU}")" \
    "$(awk "BEGIN{print $l0_RSS/$mlir_RSS}")"
fi
