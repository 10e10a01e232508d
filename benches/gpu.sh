#!/usr/bin/env bash
# GPU benchmark: the programs in benches/gpu/ (sum of squares, Black-Scholes over spot
# prices, a 256-bin histogram, n-body accelerations) and Rodinia's hotspot
# (benches/hotspot/hotspot.ir: a stencil in a time loop), compiled with
# l0-opt --pass='fuse,lower{target=gpu}' --target=nvptx.
#
#   benches/gpu.sh
#
# With an NVIDIA GPU (nvidia-smi -L works, or libcuda.so.1 is installed): generates
# N = 10^8 f64 inputs (numpy, default_rng(0)), runs each program with --bench=REPS and
# prints the median time, the bandwidth (bytes of input read / median) and its share of
# the peak (PEAK_GBS, default 3350 GB/s = H100 SXM); checks each GPU result against the
# CPU (Cranelift) result of the same program. hotspot runs on an HS_N x HS_N grid for
# HS_STEPS steps (its bandwidth counts the two grids read and the one written per step);
# n-body on NB bodies (O(NB^2) work, so no bandwidth is printed). Then, and also without a GPU, prints
# ptxas's resource usage (registers, shared memory, spills) for every kernel on sm_80
# and sm_90 (ptxas comes from .ci/ptxas.sh; no GPU needed for that).
#
# Environment (all optional):
#   L0_OPT    l0-opt to use; when set, nothing is built (default: cargo build --release
#             -p opt-tool, then $CARGO_TARGET_DIR/release/l0-opt)
#   L0_GPU    auto (default) | yes | no: whether to run on the GPU
#   N         elements per input vector (default 100000000)
#   HS_N, HS_STEPS  hotspot's grid side and time steps (default 1024 and 100)
#   NB        n-body's bodies (default 100000)
#   REPS      --bench repetitions (default 20)
#   PEAK_GBS  peak memory bandwidth in GB/s for the percentage (default 3350)
#   CHECK     1 (default) compares each GPU result with the CPU result; 0 skips that
#   TOL       relative tolerance of that comparison (default 1e-9)
#   ARCHS     architectures for the ptxas table (default "sm_80 sm_90")
#   NVCC_ARCH -arch of the hand-written CUDA baseline (default native); the baseline
#             (benches/gpu/baseline.cu) is built and timed where nvcc is installed,
#             unless L0_CUDA_BASELINE=0
#   L0_PTXAS  ptxas to use (default: the one .ci/ptxas.sh installs)
#   WORK      scratch directory for inputs, PTX and logs (default /tmp/l0-gpu-bench)
set -Eeuo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

N="${N:-100000000}"
REPS="${REPS:-20}"
PEAK_GIVEN="${PEAK_GBS:-}"
PEAK_GBS="${PEAK_GBS:-3350}"
CHECK="${CHECK:-1}"
TOL="${TOL:-1e-9}"
ARCHS="${ARCHS:-sm_80 sm_90}"
WORK="${WORK:-/tmp/l0-gpu-bench}"
L0_GPU="${L0_GPU:-auto}"
PIPELINE='fuse,lower{target=gpu}'
HS_N="${HS_N:-1024}"
HS_STEPS="${HS_STEPS:-100}"
NB="${NB:-100000}"
PROGS=(sumsq blackscholes hist hotspot nbody)

log() { echo "gpu.sh: $*" >&2; }
die() { echo "gpu.sh: error: $*" >&2; exit 1; }
trap 'rc=$?; echo "gpu.sh: error: command failed (exit $rc) at line $LINENO: $BASH_COMMAND" >&2' ERR

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
is_uint "$N" && [ "$N" -gt 0 ] || die "N must be a positive integer, got '$N'"
is_uint "$REPS" && [ "$REPS" -gt 0 ] || die "REPS must be a positive integer, got '$REPS'"
is_uint "$HS_N" && [ "$HS_N" -gt 0 ] || die "HS_N must be a positive integer, got '$HS_N'"
is_uint "$HS_STEPS" || die "HS_STEPS must be a non-negative integer, got '$HS_STEPS'"
is_uint "$NB" && [ "$NB" -gt 0 ] || die "NB must be a positive integer, got '$NB'"
[[ "$PEAK_GBS" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "PEAK_GBS must be a number (GB/s), got '$PEAK_GBS'"
case "$L0_GPU" in auto | yes | no) ;; *) die "L0_GPU must be auto, yes or no, got '$L0_GPU'" ;; esac

# The program file of a benchmark.
prog_ir() {
  case "$1" in
    hotspot) echo benches/hotspot/hotspot.ir ;;
    *) echo "benches/gpu/$1.ir" ;;
  esac
}
for p in "${PROGS[@]}"; do
  [ -f "$(prog_ir "$p")" ] || die "missing benchmark program $(prog_ir "$p")"
done
mkdir -p "$WORK" || die "cannot create WORK=$WORK"

# --- l0-opt ---
if [ -n "${L0_OPT:-}" ]; then
  log "using L0_OPT=$L0_OPT (not building)"
else
  log "building l0-opt (cargo build --release -p opt-tool)"
  cargo build --release -p opt-tool >&2 || die "cargo build --release -p opt-tool failed"
  L0_OPT="${CARGO_TARGET_DIR:-$ROOT/target}/release/l0-opt"
fi
[ -x "$L0_OPT" ] || die "l0-opt not found or not executable at $L0_OPT"

# --- GPU detection ---
# Prints a description of the GPU on stdout and succeeds when there is one.
detect_gpu() {
  local smi ldc libs
  if command -v nvidia-smi >/dev/null 2>&1 && smi="$(nvidia-smi -L 2>/dev/null)" && [ -n "$smi" ]; then
    head -n 1 <<<"$smi"
    return 0
  fi
  # ldconfig is in /sbin on some systems and not on a normal user's PATH. Capture its
  # output first: `ldconfig -p | grep -q` fails under pipefail when grep exits early.
  ldc="$(command -v ldconfig || echo /sbin/ldconfig)"
  if [ -x "$ldc" ] && libs="$("$ldc" -p 2>/dev/null)" && grep -q 'libcuda\.so\.1' <<<"$libs"; then
    echo "libcuda.so.1 present (nvidia-smi not available)"
    return 0
  fi
  return 1
}

# --- ptxas resource usage table ---
# Emits PTX for every program, assembles it for each arch in $ARCHS with `ptxas -v`, and
# prints program, arch, kernel, registers, shared memory (bytes), stack frame and spill
# bytes per kernel.
ptxas_table() {
  local ptxas prog ptx arch plog rows="$WORK/ptxas_rows.tsv"
  if [ -n "${L0_PTXAS:-}" ] && [ -x "$L0_PTXAS" ]; then
    ptxas="$L0_PTXAS"
  else
    ptxas="$(bash "$ROOT/.ci/ptxas.sh")" || die "could not make ptxas available (.ci/ptxas.sh failed, see above)"
  fi
  [ -x "$ptxas" ] || die ".ci/ptxas.sh printed '$ptxas', which is not an executable"
  # libdevice (for exp/log in kernels) ships next to ptxas; l0-opt finds it through L0_PTXAS.
  export L0_PTXAS="$ptxas"
  local ver
  ver="$("$ptxas" --version | sed -n 's/.*release \([0-9.]*\), \(V[0-9.]*\).*/ptxas \2/p')"
  log "ptxas: $ptxas (${ver:-version unknown})"
  : >"$rows"
  for prog in "${PROGS[@]}"; do
    ptx="$WORK/$prog.ptx"
    rm -f "$ptx"
    if ! "$L0_OPT" --pass="$PIPELINE" --target=nvptx --emit=ptx "$(prog_ir "$prog")" -o "$ptx" \
      2>"$WORK/$prog.emit.log"; then
      cat "$WORK/$prog.emit.log" >&2
      die "l0-opt could not emit PTX for $(prog_ir "$prog")"
    fi
    [ -s "$ptx" ] || die "l0-opt succeeded but wrote no PTX to $ptx"
    for arch in $ARCHS; do
      plog="$WORK/$prog.$arch.ptxas.log"
      if ! "$ptxas" -arch="$arch" -v "$ptx" -o "$WORK/$prog.$arch.cubin" >"$plog" 2>&1; then
        cat "$plog" >&2
        die "ptxas -arch=$arch rejected $ptx (log: $plog)"
      fi
      grep -i 'warning' "$plog" | sed "s|^|gpu.sh: $prog/$arch: |" >&2 || true
      # ptxas -v prints, per entry function:
      #   ptxas info    : Compiling entry function 'NAME' for 'sm_80'
      #   ptxas info    : Function properties for NAME
      #       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
      #   ptxas info    : Used 12 registers, used 1 barriers, 2048 bytes smem, 376 bytes cmem[0]
      # ("N bytes smem" is left out when it is 0.)
      if ! awk -v q="'" -v prog="$prog" -v arch="$arch" '
        function num(re,   s) { if (match($0, re)) { s = substr($0, RSTART, RLENGTH); gsub(/[^0-9]/, "", s); return s } return "" }
        /Compiling entry function/ { split($0, a, q); cur = a[2]; stack = st = ld = "?"; next }
        /Function properties for / { props = $0; sub(/.*Function properties for /, "", props); next }
        /bytes stack frame/ && props == cur && cur != "" {
          stack = num("[0-9]+ bytes stack frame"); st = num("[0-9]+ bytes spill stores"); ld = num("[0-9]+ bytes spill loads"); next }
        /Used [0-9]+ registers/ && cur != "" {
          regs = num("Used [0-9]+ registers")
          smem = num("[0-9]+ bytes smem"); if (smem == "") smem = 0
          print prog "\t" arch "\t" cur "\t" regs "\t" smem "\t" stack "\t" st "\t" ld
          found++; cur = ""
        }
        END { exit found ? 0 : 1 }' "$plog" >>"$rows"; then
        cat "$plog" >&2
        die "no kernel usage found in ptxas -v output for $prog/$arch (log: $plog)"
      fi
    done
  done
  echo
  echo "== ptxas resource usage (${ver:-ptxas}, -v; per kernel)"
  { printf 'program\tarch\tkernel\tregisters\tsmem_bytes\tstack_bytes\tspill_st_bytes\tspill_ld_bytes\n'; cat "$rows"; } |
    awk -F'\t' '{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NR; nf = NF }
      END { for (r = 1; r <= n; r++) { line = ""; for (i = 1; i <= nf; i++) line = line sprintf("%" (i <= 3 ? "-" : "") w[i] "s  ", c[r, i]); sub(/ +$/, "", line); print line } }'
}

# --- inputs (GPU mode) ---
# $1: output .npy, $2: low, $3: high, $4: length (default N); f64 uniform in [low, high),
# np.random.default_rng(SEED) (SEED default 0). Reuses a file that already holds that
# many f64; writes through a temporary file so an interrupted run leaves nothing
# half-written.
gen_input() {
  local f="$1" lo="$2" hi="$3" len="${4:-$N}"
  if python3 - "$f" "$len" <<'EOF' 2>/dev/null; then
import sys, numpy as np
a = np.load(sys.argv[1], mmap_mode="r")
sys.exit(0 if a.dtype == np.dtype("<f8") and a.shape == (int(sys.argv[2]),) else 1)
EOF
    log "reusing $f"
    return 0
  fi
  log "generating $f ($len f64 uniform in [$lo, $hi), default_rng(${SEED:-0}))"
  rm -f "$f" "$f.tmp.npy"
  python3 - "$f.tmp.npy" "$len" "$lo" "$hi" "${SEED:-0}" <<'EOF' || die "could not generate $f"
import sys, numpy as np
path, n, lo, hi, seed = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
np.save(path, np.random.default_rng(seed).uniform(lo, hi, n).astype("<f8"))
EOF
  mv "$f.tmp.npy" "$f"
}

# Sets bench_status=1 when a GPU result differs from the CPU result. (Not called in an
# `||` or `if` context: that would switch off `set -e` inside it.)
gpu_bench() {
  local prog out err median result cpu gbs pct rel status
  python3 -c 'import numpy' 2>/dev/null ||
    die "python3 with numpy is needed for the inputs (python3 -m pip install numpy)"
  local need_kb=$(((2 * 8 * N + 2 * 4096) / 1024 + 1)) free_kb
  free_kb="$(df -Pk "$WORK" | awk 'NR == 2 { print $4 }')"
  local x="$WORK/sumsq_x_n$N.npy" s="$WORK/bs_spot_n$N.npy"
  if [ ! -f "$x" ] || [ ! -f "$s" ]; then
    [ -z "$free_kb" ] || [ "$free_kb" -ge "$need_kb" ] ||
      die "WORK=$WORK has $((free_kb / 1024)) MiB free; the inputs need $((need_kb / 1024)) MiB (set WORK or N)"
  fi
  gen_input "$x" -1.0 1.0
  gen_input "$s" 50.0 150.0
  # hotspot's grids (as benches/hotspot.sh: temperatures 323-343, power 0-0.5) and the
  # bodies (positions in [-1, 1)^3, masses in [0.5, 1.5)), each input its own seed.
  local hn=$((HS_N * HS_N)) ht="$WORK/hs_temp_n$HS_N.npy" hp="$WORK/hs_power_n$HS_N.npy"
  SEED=1 gen_input "$ht" 323.0 343.0 "$hn"
  SEED=2 gen_input "$hp" 0.0 0.5 "$hn"
  local nb=()
  for a in x:-1.0:1.0:3 y:-1.0:1.0:4 z:-1.0:1.0:5 m:0.5:1.5:6; do
    IFS=: read -r nm lo hi seed <<<"$a"
    SEED="$seed" gen_input "$WORK/nb_${nm}_n$NB.npy" "$lo" "$hi" "$NB"
    nb+=("$WORK/nb_${nm}_n$NB.npy")
  done

  # The hand-written CUDA baseline (benches/gpu/baseline.cu), where nvcc is installed.
  local nvcc baseline="" cuda_ns cuda_res vs
  nvcc="$(command -v nvcc || true)"
  [ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc
  [ "${L0_CUDA_BASELINE:-1}" != 0 ] || nvcc=""
  if [ -n "$nvcc" ]; then
    baseline="$WORK/baseline"
    "$nvcc" -O3 -arch="${NVCC_ARCH:-native}" -o "$baseline" benches/gpu/baseline.cu ||
      die "nvcc could not build benches/gpu/baseline.cu"
  else
    log "no nvcc: the hand-written CUDA baseline is left out"
  fi

  echo
  echo "== GPU: median of --bench=$REPS, N = $N f64 per input, peak ${PEAK_GBS} GB/s"
  echo "(GB/s from kernel_ns: time inside the kernels; median_ns also counts the host part and the copies;"
  echo " cuda_ns: the hand-written CUDA kernels of benches/gpu/baseline.cu, median of $REPS, same input)"
  printf '%-14s %14s %14s %10s %8s %12s %8s  %-24s %s\n' program median_ns kernel_ns GB/s %peak cuda_ns l0/cuda result check
  local args base bytes
  for prog in "${PROGS[@]}"; do
    # args: l0-opt's arguments; base: the baseline's after the program name (its first
    # input, REPS, then the others); bytes: the bytes the kernels move (0: not
    # bandwidth-bound, no GB/s).
    case "$prog" in
      sumsq | hist) args=(--arg=@"$x"); base=("$x" "$REPS"); bytes=$((8 * N)) ;;
      blackscholes) args=(--arg=@"$s"); base=("$s" "$REPS"); bytes=$((8 * N)) ;;
      hotspot)
        args=(--arg=@"$ht" --arg=@"$hp" --arg="$HS_N" --arg="$HS_N" --arg="$HS_STEPS")
        base=("$ht" "$REPS" "$hp" "$HS_N" "$HS_N" "$HS_STEPS")
        bytes=$((24 * hn * HS_STEPS + 8 * hn))
        ;;
      nbody)
        args=(--arg=@"${nb[0]}" --arg=@"${nb[1]}" --arg=@"${nb[2]}" --arg=@"${nb[3]}")
        base=("${nb[0]}" "$REPS" "${nb[1]}" "${nb[2]}" "${nb[3]}")
        bytes=0
        ;;
      *) die "no input defined for $prog" ;;
    esac
    out="$WORK/$prog.gpu.out"; err="$WORK/$prog.gpu.err"
    if ! "$L0_OPT" --pass="$PIPELINE" --target=nvptx "$(prog_ir "$prog")" --run=main \
      "${args[@]}" --bench="$REPS" >"$out" 2>"$err"; then
      cat "$err" >&2
      die "l0-opt --target=nvptx --run=main failed for $prog (L0_GPU=no reports ptxas resource usage only)"
    fi
    median="$(sed -n 's/^median_ns=\([0-9][0-9]*\)$/\1/p' "$err" | tail -n 1)"
    [ -n "$median" ] || { cat "$err" >&2; die "no median_ns= on l0-opt's stderr for $prog"; }
    [ "$median" -gt 0 ] || die "median_ns=0 for $prog"
    kernel="$(sed -n 's/^kernel_ns=\([0-9][0-9]*\)$/\1/p' "$err" | tail -n 1)"
    [ -n "$kernel" ] && [ "$kernel" -gt 0 ] || { cat "$err" >&2; die "no kernel_ns= on l0-opt's stderr for $prog"; }
    result="$(tail -n 1 "$out")"
    [ -n "$result" ] || die "l0-opt printed no result for $prog"
    # bytes / ns = GB/s
    gbs="-"; pct="-"
    if [ "$bytes" -gt 0 ]; then
      gbs="$(awk -v b="$bytes" -v t="$kernel" 'BEGIN { printf "%.1f", b / t }')"
      pct="$(awk -v g="$gbs" -v p="$PEAK_GBS" 'BEGIN { printf "%.1f%%", 100 * g / p }')"
    fi
    status="-"
    if [ "$CHECK" = 1 ]; then
      cpu="$("$L0_OPT" --pass=fuse,lower "$(prog_ir "$prog")" --run=main "${args[@]}" 2>"$WORK/$prog.cpu.err" | tail -n 1)" ||
        { cat "$WORK/$prog.cpu.err" >&2; die "the CPU reference run failed for $prog"; }
      rel="$(python3 -c 'import sys; g, c = float(sys.argv[1]), float(sys.argv[2]); print("%.2e" % (abs(g - c) / max(abs(c), 1e-300)))' "$result" "$cpu")" ||
        die "cannot compare GPU result '$result' with CPU result '$cpu' for $prog"
      if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)' "$rel" "$TOL"; then
        status="ok (cpu $cpu, rel $rel)"
      else
        status="MISMATCH (cpu $cpu, rel $rel > $TOL)"
        bench_status=1
      fi
    fi
    cuda_ns="-"
    vs="-"
    if [ -n "$baseline" ]; then
      cuda_res="$("$baseline" "$prog" "${base[@]}" 2>"$WORK/$prog.cuda.err")" ||
        { cat "$WORK/$prog.cuda.err" >&2; die "the CUDA baseline failed for $prog"; }
      cuda_ns="$(sed -n 's/^baseline_ns=\([0-9][0-9]*\)$/\1/p' "$WORK/$prog.cuda.err")"
      [ -n "$cuda_ns" ] && [ "$cuda_ns" -gt 0 ] || die "no baseline_ns= from the CUDA baseline for $prog"
      vs="$(awk -v a="$kernel" -v b="$cuda_ns" 'BEGIN { printf "%.2f", a / b }')"
      rel="$(python3 -c 'import sys; g, c = float(sys.argv[1]), float(sys.argv[2]); print("%.2e" % (abs(g - c) / max(abs(c), 1e-300)))' "$result" "$cuda_res")"
      if ! python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)' "$rel" "$TOL"; then
        status="$status; CUDA baseline MISMATCH ($cuda_res, rel $rel)"
        bench_status=1
      fi
    fi
    printf '%-14s %14s %14s %10s %8s %12s %8s  %-24s %s\n' "$prog" "$median" "$kernel" "$gbs" "$pct" "$cuda_ns" "$vs" "$result" "$status"
  done
}

bench_status=0
gpu=""
case "$L0_GPU" in
  no) ;;
  yes) gpu="$(detect_gpu)" || gpu="(forced by L0_GPU=yes; none detected)" ;;
  auto) gpu="$(detect_gpu)" || gpu="" ;;
esac

if [ "$L0_GPU" = no ]; then
  echo "L0_GPU=no: reporting ptxas resource usage instead of bandwidth"
  ptxas_table
elif [ -z "$gpu" ]; then
  echo "no NVIDIA GPU/driver on this machine: reporting ptxas resource usage instead of bandwidth"
  ptxas_table
else
  echo "GPU: $gpu"
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null |
      sed 's/^/GPU info: /' || true
  fi
  if [ -z "$PEAK_GIVEN" ] && ! grep -q 'H100.*HBM3' <<<"$gpu"; then
    echo "note: the peak of ${PEAK_GBS} GB/s is the H100 SXM's; set PEAK_GBS for this GPU"
  fi
  gpu_bench
  ptxas_table
fi

if [ "$bench_status" != 0 ]; then
  echo
  echo "gpu.sh: FAIL: a GPU result differs from the CPU result (see the table above)" >&2
  exit 1
fi
