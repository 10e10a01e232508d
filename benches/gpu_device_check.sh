#!/usr/bin/env bash
# The GPU checks for a borrowed GPU machine that has no Rust toolchain and no LLVM 14:
# build here, carry the binaries and libLLVM-14 over, run the GPU tests there.
#
#   benches/gpu_device_check.sh pack   # here: cargo builds the release test binaries and
#                                      # l0-opt, packs them with libLLVM-14 and the
#                                      # libraries it needs into .device/bundle.tar.xz
#                                      # (about 50 MB; .device/ is git-ignored)
#   benches/gpu_device_check.sh run    # there, in the repository root: unpacks the
#                                      # bundle and runs, with L0_REQUIRE_GPU=1,
#                                      #  - the ptx tests (--target=nvptx against the interpreter),
#                                      #  - differential's nvptx_agrees_with_the_interpreter,
#                                      #  - RANDOM_PROGRAMS random programs on the GPU
#                                      #    configuration alone (RANDOM_ONLY=nvptx),
#                                      #  - benches/gpu.sh (bandwidth, CUDA baseline).
#
# Environment of `run`: RANDOM_PROGRAMS (default 200), RANDOM_SEED (default 1),
# N and REPS for gpu.sh (defaults 10^8 and 10), SKIP_BENCH=1 leaves gpu.sh out.
# ALL_UNTIL_S=T then runs random programs in every configuration (the GPU's and
# the CPU ones), one worker per core, in chunks of ALL_CHUNK programs (default
# 1000) from seed ALL_SEED (default 100000), starting chunks until T seconds
# after `run` began; each chunk prints its own summary line. CPU_ONLY=1 skips
# the GPU checks and hides the GPU from those chunks (CPU configurations only,
# which run about ten times faster than with the GPU's, one context per program).
# Logs go to $OUT when it is set (the device tool's output folder), else /tmp.
#
# The test binaries find l0-opt and the repository through the absolute paths cargo
# compiled into them (this checkout's); `run` makes those paths exist there.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
BUNDLE=.device/bundle.tar.xz

test_binary() { # newest release test binary of that name
  ls -t target/release/deps/"$1"-* 2>/dev/null | grep -v '\.d$' | head -1
}

case "${1:-}" in
pack)
  cargo build --release -p opt-tool --bins </dev/null
  cargo test --release -p opt-tool --no-run </dev/null
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib"
  cp target/release/l0-opt "$stage/bin/"
  for t in ptx differential random; do
    f=$(test_binary "$t")
    [ -n "$f" ] || { echo "no test binary '$t'" >&2; exit 1; }
    cp "$f" "$stage/bin/$t"
  done
  strip "$stage"/bin/*
  # libLLVM-14 and what it links that a CUDA image may lack.
  for l in $(ldd target/release/l0-opt | awk '/=> \// {print $3}'); do
    case "$(basename "$l")" in
    libc.so* | libm.so* | libpthread.so* | libdl.so* | libgcc_s.so* | librt.so* | libstdc++.so*) ;;
    *) cp -L "$l" "$stage/lib/" ;;
    esac
  done
  echo "$ROOT" >"$stage/root"
  mkdir -p .device
  tar cf - -C "$stage" . | xz -T2 -6 >"$BUNDLE"
  rm -rf "$stage"
  ls -la "$BUNDLE"
  ;;
run)
  LOG="${OUT:-/tmp}"
  dev=/tmp/l0-device
  rm -rf "$dev" && mkdir -p "$dev"
  tar xJf "$BUNDLE" -C "$dev"
  export LD_LIBRARY_PATH="$dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  built_root=$(cat "$dev/root")
  if [ "$built_root" != "$ROOT" ]; then
    mkdir -p "$(dirname "$built_root")"
    rm -rf "$built_root"
    ln -s "$ROOT" "$built_root"
  fi
  mkdir -p target/release
  cp "$dev/bin/l0-opt" target/release/l0-opt
  nvidia-smi -L || true
  export L0_REQUIRE_GPU=1
  L0_PTXAS="$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)"
  export L0_PTXAS
  status=0
  if [ "${CPU_ONLY:-0}" = 1 ]; then
    export CUDA_VISIBLE_DEVICES=
    unset L0_REQUIRE_GPU
  else
    "$dev/bin/ptx" --test-threads=4 2>&1 | tee "$LOG/ptx.log" || status=1
    "$dev/bin/differential" nvptx --nocapture 2>&1 | tee "$LOG/differential.log" || status=1
    RANDOM_ONLY=nvptx RANDOM_PROGRAMS="${RANDOM_PROGRAMS:-200}" RANDOM_SEED="${RANDOM_SEED:-1}" \
      "$dev/bin/random" --nocapture 2>&1 | tee "$LOG/random.log" || status=1
  fi
  seed="${ALL_SEED:-100000}"
  chunk="${ALL_CHUNK:-1000}"
  while [ "$SECONDS" -lt "${ALL_UNTIL_S:-0}" ]; do
    if ! RANDOM_JOBS="$(nproc)" RANDOM_PROGRAMS="$chunk" RANDOM_SEED="$seed" \
      "$dev/bin/random" --nocapture 2>&1 | tee -a "$LOG/random_all.log" |
      grep -E "^random:|disagree|panicked|test result"; then
      status=1
      break
    fi
    seed=$((seed + chunk))
  done
  if [ "${SKIP_BENCH:-0}" != 1 ]; then
    L0_OPT="$ROOT/target/release/l0-opt" \
      N="${N:-100000000}" REPS="${REPS:-10}" bash benches/gpu.sh 2>&1 | tee "$LOG/gpu_bench.log" || status=1
  fi
  echo "gpu_device_check: exit $status"
  exit "$status"
  ;;
*)
  echo "usage: $0 pack|run" >&2
  exit 2
  ;;
esac
