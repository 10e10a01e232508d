#!/usr/bin/env bash
# Makes NVIDIA's `ptxas` (the PTX assembler) available without a GPU, driver or CUDA
# toolkit, and prints its absolute path on stdout (nothing else goes to stdout;
# progress and errors go to stderr).
#
#   L0_PTXAS="$(bash .ci/ptxas.sh)"
#
# ptxas comes from the PyPI wheel nvidia-cuda-nvcc-cu12 (pinned), installed into a
# Python virtual environment at $L0_TOOLS_DIR/ptxas-venv (default
# $HOME/.cache/l0-tools/ptxas-venv); when `python3 -m venv` does not work, into
# $L0_TOOLS_DIR/ptxas-pkg with `pip install --target`. A second run reuses the install.
#
# Environment:
#   L0_TOOLS_DIR           where to install (default $HOME/.cache/l0-tools)
#   L0_PTXAS_WHEEL_VERSION version of nvidia-cuda-nvcc-cu12 (default 12.9.86)
#   PYTHON                 the Python to create the environment with (default python3)
#   PIP_FIND_LINKS etc.    pip's own environment variables are honoured (e.g.
#                          PIP_FIND_LINKS=/dir/with/wheels to install from a local copy)
set -euo pipefail

VERSION="${L0_PTXAS_WHEEL_VERSION:-12.9.86}"
PKG="nvidia-cuda-nvcc-cu12"
TOOLS_DIR="${L0_TOOLS_DIR:-${HOME:?HOME is not set and L0_TOOLS_DIR is not given}/.cache/l0-tools}"
VENV="$TOOLS_DIR/ptxas-venv"
TARGET_DIR="$TOOLS_DIR/ptxas-pkg"
PYTHON="${PYTHON:-python3}"

log() { echo "ptxas.sh: $*" >&2; }
die() { echo "ptxas.sh: error: $*" >&2; exit 1; }

case "$(uname -s)/$(uname -m)" in
  Linux/x86_64 | Linux/aarch64) ;;
  *) die "the $PKG wheel exists only for Linux x86_64/aarch64, not $(uname -s)/$(uname -m)" ;;
esac

# The ptxas under a site-packages-like directory, if any (first match).
find_ptxas_in() { # dir...
  local d f
  for d in "$@"; do
    for f in "$d"/nvidia/cuda_nvcc/bin/ptxas; do
      if [ -f "$f" ]; then echo "$f"; return 0; fi
    done
  done
  return 1
}

# Checks that $1 is a working ptxas of the pinned version; on success prints its
# absolute path on stdout.
check_ptxas() { # path
  local p="$1" out
  [ -f "$p" ] || return 1
  [ -x "$p" ] || chmod +x "$p" 2>/dev/null || { log "$p is not executable and chmod failed"; return 1; }
  if ! out="$("$p" --version 2>&1)"; then
    log "$p --version failed:"; echo "$out" >&2; return 1
  fi
  if ! grep -q "ptxas" <<<"$out"; then
    log "$p --version printed something unexpected:"; echo "$out" >&2; return 1
  fi
  readlink -f "$p"
}

# Already installed (venv first, then the --target fallback)?
installed() {
  local p
  p="$(find_ptxas_in "$VENV"/lib/python*/site-packages "$VENV"/lib64/python*/site-packages "$TARGET_DIR")" || return 1
  # Reuse only an install of the pinned version: its dist-info sits next to nvidia/.
  local site="${p%/nvidia/cuda_nvcc/bin/ptxas}"
  if [ ! -d "$site/${PKG//-/_}-$VERSION.dist-info" ]; then
    log "found $p, but not version $VERSION; reinstalling"
    return 1
  fi
  check_ptxas "$p"
}

mkdir -p "$TOOLS_DIR" || die "cannot create $TOOLS_DIR"

# Serialise concurrent runs (e.g. two CI jobs sharing the cache).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$TOOLS_DIR/ptxas.lock"
  flock 9 || die "cannot lock $TOOLS_DIR/ptxas.lock"
fi

if path="$(installed)"; then
  log "reusing $path"
  echo "$path"
  exit 0
fi

command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (needed to install $PKG==$VERSION from PyPI)"

PIP_ARGS=(install --disable-pip-version-check --no-input --only-binary=:all: --no-deps
          --no-cache-dir --upgrade "$PKG==$VERSION")

path=""
log "installing $PKG==$VERSION (about 40 MB) into $VENV"
rm -rf "$VENV"
if "$PYTHON" -m venv "$VENV" >&2 && [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
  "$VENV/bin/python" -m pip "${PIP_ARGS[@]}" >&2 \
    || die "pip install $PKG==$VERSION into $VENV failed (see above; is PyPI reachable?)"
  # Ask the environment's Python where its site-packages is, fall back to a glob.
  site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null || true)"
  p="$(find_ptxas_in ${site:+"$site"} "$VENV"/lib/python*/site-packages "$VENV"/lib64/python*/site-packages)" \
    || die "installed $PKG==$VERSION, but found no nvidia/cuda_nvcc/bin/ptxas under $VENV"
  path="$(check_ptxas "$p")" || die "$p does not run"
else
  log "'$PYTHON -m venv' is not usable here (on Debian/Ubuntu: apt-get install python3-venv);"
  log "falling back to '$PYTHON -m pip install --target $TARGET_DIR'"
  rm -rf "$VENV"
  "$PYTHON" -m pip --version >/dev/null 2>&1 || die "neither '$PYTHON -m venv' nor '$PYTHON -m pip' works; install python3-venv or python3-pip"
  rm -rf "$TARGET_DIR"
  "$PYTHON" -m pip "${PIP_ARGS[@]}" --target "$TARGET_DIR" >&2 \
    || die "pip install --target $TARGET_DIR $PKG==$VERSION failed (see above; is PyPI reachable?)"
  p="$(find_ptxas_in "$TARGET_DIR")" \
    || die "installed $PKG==$VERSION, but found no nvidia/cuda_nvcc/bin/ptxas under $TARGET_DIR"
  path="$(check_ptxas "$p")" || die "$p does not run"
fi

log "$("$path" --version | tail -n 2 | tr '\n' ' ')"
log "ptxas is $path"
echo "$path"
