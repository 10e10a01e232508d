#!/usr/bin/env bash
# Compiler throughput (issue 14): MLIR's mlir-opt vs L0's l0-opt on large generated
# functions, in the same run.
#
#   benches/cse_vs_mlir.sh [N] [SHAPES]   (default N = 1000000, SHAPES = "dag chain")
#
# Shapes: `dag` (gen_cse_bench.py: a wide reduction DAG, values with many uses) and
# `chain` (gen_chain.py: one long dependency chain). For each shape and tool:
#   * `parse+print`: no pass, output to a file: wall time and peak RSS, and the
#     tool's own timing report split into parse (+verify) and output (print);
#   * `cse,canonicalize`: wall time, CPU time, peak RSS, and the ops left
#     (checked against the generator's expected counts).
# The l0/mlir ratios follow. Either tool may be missing.
#
# Env: MLIR_OPT (default: /usr/lib/llvm-16/bin/mlir-opt, else mlir-opt-16/mlir-opt on PATH)
#      L0_OPT   (default: target/release/l0-opt in the repo root)
#      WORK     (scratch dir, default: a fresh mktemp dir, removed at exit)
#      SEED     (generator seed, default 12345)
# Needs python3 and GNU time (/usr/bin/time; Debian package `time`).
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
N="${1:-1000000}"
SHAPES="${2:-dag chain}"
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

# run NAME OUTFILE CMD... : runs under GNU time; sets ${NAME}_WALL/_CPU (s), _RSS (KiB).
run() {
  local name="$1" out="$2"; shift 2
  "$TIME" -v "$@" >"$out" 2>"$WORK/$name.err"
  local rc=$?
  grep -E '^\s+(Elapsed|Maximum resident|User time|System time)' "$WORK/$name.err" >"$WORK/$name.time"
  if [ $rc -ne 0 ]; then
    echo "$name: FAILED (exit $rc)"; grep -vE '^\s' "$WORK/$name.err" | head -5
    return 1
  fi
  local wall rss cpu
  wall="$(awk -F': ' '/Elapsed/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$WORK/$name.time")"
  rss="$(awk -F': ' '/Maximum resident/ {print $2}' "$WORK/$name.time")"
  cpu="$(awk -F': ' '/User time|System time/ {s+=$2} END {print s}' "$WORK/$name.time")"
  eval "${name}_WALL=$wall; ${name}_CPU=$cpu; ${name}_RSS=$rss"
}

# phases NAME: parse and output seconds from the tool's timing report in NAME.err.
phases() {
  local f="$WORK/$1.err"
  if grep -q 'Execution time report' "$f" && grep -q 'Parser' "$f"; then
    # mlir-opt --mlir-timing: "  0.5527 ( 37.5%)  Parser"
    awk '/ Parser$/ {p=$1} / Verifier$/ {v+=$1} / Output$/ {o=$1} END {printf "parse+verify_s=%.3f print_s=%.3f", p+v, o}' "$f"
  else
    # l0-opt --timing: "  3985.596 ms  parse + verify"
    awk '/ ms  parse \+ verify$/ {p=$1} / ms  output$/ {o=$1} END {printf "parse+verify_s=%.3f print_s=%.3f", p/1000, o/1000}' "$f"
  fi
}

ratio() { awk "BEGIN{ if ($2 > 0) printf \"%.3f\", $1/$2; else print \"n/a\" }"; }

for shape in $SHAPES; do
  case "$shape" in
    dag) GEN="$HERE/gen_cse_bench.py" ;;
    chain) GEN="$HERE/gen_chain.py" ;;
    *) echo "unknown shape $shape (dag, chain)" >&2; exit 2 ;;
  esac
  IN="$WORK/${shape}_$N.mlir"
  echo "== shape $shape: generating $N ops (seed $SEED) -> $IN"
  python3 "$GEN" -n "$N" --seed "$SEED" -o "$IN" 2>"$WORK/gen.txt" || { cat "$WORK/gen.txt"; exit 1; }
  EXPECTED="$(sed -n 's/.*addf_mulf=\([0-9]*\).*/\1/p' "$WORK/gen.txt")"
  BYTES="$(stat -c %s "$IN")"
  echo "input: $N addf/mulf, $BYTES bytes"
  mlir_p_WALL=""; l0_p_WALL=""; mlir_WALL=""; l0_WALL=""
  for tool in mlir l0; do
    if [ "$tool" = mlir ]; then
      [ -n "$MLIR_OPT" ] || { echo "mlir-opt not found (apt-get install mlir-16-tools); skipping"; continue; }
      BIN="$MLIR_OPT"; TIMING=--mlir-timing; PASSES="--cse --canonicalize"
    else
      [ -x "$L0_OPT" ] || { echo "$L0_OPT not built (cargo build --release); skipping"; continue; }
      BIN="$L0_OPT"; TIMING=--timing; PASSES="--pass=cse,canonicalize"
    fi
    if run "${tool}_p" "$WORK/out.$tool.p" "$BIN" $TIMING "$IN" -o "$WORK/out.$tool.p"; then
      v="${tool}_p_WALL"; r="${tool}_p_RSS"
      printf '%-5s parse+print:      wall_s=%s peak_rss_mib=%.1f %s (%.0f MB/s parsed)\n' "$tool" "${!v}" \
        "$(awk "BEGIN{print ${!r}/1024}")" "$(phases "${tool}_p")" \
        "$(phases "${tool}_p" | awk -v b="$BYTES" -F'[= ]' '{ if ($2 > 0) print b/1e6/$2; else print 0 }')"
    fi
    # shellcheck disable=SC2086
    if run "$tool" "$WORK/out.$tool" "$BIN" $PASSES "$IN"; then
      local_ops="$(grep -v '^\s*//' "$WORK/out.$tool" | grep -cE 'arith\.(addf|mulf)')"
      local_consts="$(grep -v '^\s*//' "$WORK/out.$tool" | grep -cE 'arith\.constant')"
      v="${tool}_WALL"; c="${tool}_CPU"; r="${tool}_RSS"
      printf '%-5s cse,canonicalize: wall_s=%s cpu_s=%s peak_rss_mib=%.1f addf_mulf_after=%s constants_after=%s expected=%s %s\n' \
        "$tool" "${!v}" "${!c}" "$(awk "BEGIN{print ${!r}/1024}")" "$local_ops" "$local_consts" "$EXPECTED" \
        "$([ "$local_ops" = "$EXPECTED" ] && [ "$local_consts" = 0 ] && echo OK || echo MISMATCH)"
    fi
  done
  if [ -n "$mlir_WALL" ] && [ -n "$l0_WALL" ]; then
    printf 'ratio l0/mlir (%s): cse,canonicalize wall=%s peak_rss=%s; parse+print wall=%s peak_rss=%s\n' "$shape" \
      "$(ratio "$l0_WALL" "$mlir_WALL")" "$(ratio "$l0_RSS" "$mlir_RSS")" \
      "$(ratio "${l0_p_WALL:-0}" "${mlir_p_WALL:-1}")" "$(ratio "${l0_p_RSS:-0}" "${mlir_p_RSS:-1}")"
  fi
done
