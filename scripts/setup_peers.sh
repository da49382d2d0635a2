#!/usr/bin/env bash
# setup_peers.sh — installs the external peers of `xir bench` (docs/peers.md, "External peers").
#   scripts/setup_peers.sh [DIR]          DIR defaults to $HOME/.cache/xir-peers
#
# Creates DIR/venv (a Python virtual environment) and installs into it, from PyPI:
#   torch (newest that installs; PyPI's Linux wheel pulls the nvidia-* CUDA wheels, there is no
#   CPU-only torch on PyPI), numpy, and onednn-devel (oneDNN 3.x: dnnl.h + libdnnl.so).
# Builds DIR/bin/onednn_peer from peers/ext/onednn_peer.c with gcc against the venv's oneDNN.
# Nothing outside DIR is touched except Debian packages (apt-get, only when something is missing).
# pip runs with --no-cache-dir, so ~/.cache/pip is not used.
# Idempotent: a second run checks what is there and only rebuilds the peer if its source changed.
# Set XIR_PEERS_UPGRADE=1 to ask pip for newer versions of what is already installed.
# If PyPI fails, falls back to Debian's python3-torch / libdnnl-dev and says so.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-$HOME/.cache/xir-peers}
mkdir -p "$DIR/bin" "$DIR/logs"
DIR=$(cd "$DIR" && pwd)
VENV=$DIR/venv
PY=$VENV/bin/python
log() { echo "setup_peers: $*" >&2; }
now() { date +%s; }
fallback_notes=""

apt_install() {   # apt_install PKG... — installs the missing ones only
  local missing="" p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  log "apt-get install$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q $missing >/dev/null
}

# ---- 1. the virtual environment ------------------------------------------------------------
if [ ! -x "$PY" ]; then
  base=""
  if command -v python3 >/dev/null && python3 -c 'import venv, ensurepip' 2>/dev/null; then
    base=$(command -v python3)
  else
    apt_install python3 python3-venv python3-dev
    base=/usr/bin/python3
  fi
  log "creating $VENV with $base ($("$base" --version 2>&1))"
  "$base" -m venv "$VENV"
  "$PY" -m pip install -q --no-cache-dir --upgrade pip >/dev/null 2>&1 || true
fi
PIP=("$PY" -m pip --disable-pip-version-check)
pipflags=(--no-cache-dir --progress-bar off)
[ "${XIR_PEERS_UPGRADE:-0}" = 1 ] && pipflags+=(--upgrade)

# torch.compile's Inductor backend needs a C++ compiler at run time; the oneDNN peer needs gcc.
command -v g++ >/dev/null && command -v gcc >/dev/null || apt_install build-essential

# ---- 2. torch + numpy ----------------------------------------------------------------------
# Quick check (no import: importing torch takes seconds); a real import after an install.
have_torch() {
  "$PY" -c 'import importlib.util as u, sys; sys.exit(0 if u.find_spec("torch") and u.find_spec("numpy") else 1)' 2>/dev/null
}
if ! have_torch || [ "${XIR_PEERS_UPGRADE:-0}" = 1 ]; then
  t0=$(now)
  log "pip install torch numpy (PyPI; large: the CUDA wheels come along) — log: $DIR/logs/pip-torch.log"
  if "${PIP[@]}" install "${pipflags[@]}" torch numpy >"$DIR/logs/pip-torch.log" 2>&1; then
    log "torch installed from PyPI in $(( $(now) - t0 )) s"
  else
    log "PyPI torch install FAILED (see $DIR/logs/pip-torch.log); falling back to Debian's python3-torch"
    fallback_notes="$fallback_notes torch:debian"
    apt_install python3-torch python3-numpy
    # Recreate the venv on Debian's python3 so that it sees the system's torch.
    rm -rf "$VENV"
    apt_install python3-venv
    /usr/bin/python3 -m venv --system-site-packages "$VENV"
  fi
  "$PY" -c 'import torch, numpy' >/dev/null 2>&1 || { log "torch is not importable from $PY"; exit 1; }
fi
have_torch || { log "torch is not installed in $VENV"; exit 1; }

# ---- 3. oneDNN (C API) ---------------------------------------------------------------------
# PyPI's `onednn-devel` (2024.0 .. 2026.x = oneDNN 3.5 .. 3.13) is the DPC++/SYCL build: its CPU
# engine is a SYCL CPU device.  2026.x's runtime ships no OpenCL adapter, so dnnl_engine_create
# (dnnl_cpu) fails ("SYCL cpu devices queried but not found"); 2025.3 with OCL_ICD_FILENAMES set
# runs, but on oneDNN's generic SYCL kernels (impl "ref:any", ~1.4 ms for swiglu 64x256), not its
# x64 JIT.  Neither is oneDNN on a CPU as a user would use it.  The newest native-CPU build on
# PyPI is onednn-devel-cpu-gomp 2023.2.0 = oneDNN 3.2.0, GNU OpenMP: that is what we install.
# (XIR_PEERS_ONEDNN=onednn-devel-cpu-iomp / -cpu-tbb picks another threading flavour.)
ONEDNN_PKG=${XIR_PEERS_ONEDNN:-onednn-devel-cpu-gomp}
have_pkg() { "${PIP[@]}" show "$1" >/dev/null 2>&1; }
cfg=$VENV/include/oneapi/dnnl/dnnl_config.h
if [ -f "$cfg" ] && grep -q '^#define DNNL_CPU_RUNTIME DNNL_RUNTIME_SYCL' "$cfg"; then
  log "removing the SYCL build of oneDNN from the venv (no usable CPU engine, see above)"
  "${PIP[@]}" uninstall -y -q onednn-devel onednn >/dev/null 2>&1 || true
fi
if ! have_pkg "$ONEDNN_PKG" || [ ! -f "$VENV/include/dnnl.h" ] || [ "${XIR_PEERS_UPGRADE:-0}" = 1 ]; then
  t0=$(now)
  log "pip install $ONEDNN_PKG — log: $DIR/logs/pip-onednn.log"
  if "${PIP[@]}" install "${pipflags[@]}" "$ONEDNN_PKG" >"$DIR/logs/pip-onednn.log" 2>&1; then
    log "$ONEDNN_PKG installed from PyPI in $(( $(now) - t0 )) s"
  else
    log "PyPI $ONEDNN_PKG install FAILED (see $DIR/logs/pip-onednn.log)"
  fi
fi
# The wheel puts dnnl.h in $VENV/include (torch ships its own copy under site-packages: not that).
if [ -f "$VENV/include/dnnl.h" ] && [ -e "$VENV/lib/libdnnl.so" ]; then
  DNNL_INC=$VENV/include
  DNNL_LIB=$VENV/lib
else
  fallback_notes="$fallback_notes onednn:debian"
  cand=$(apt-cache policy libdnnl-dev 2>/dev/null | awk '/Candidate:/ {print $2}')
  case "$cand" in
    3.*|[4-9].*)
      log "no oneDNN from PyPI; falling back to Debian's libdnnl-dev $cand"
      apt_install libdnnl-dev
      DNNL_INC=/usr/include
      DNNL_LIB=$(dirname "$(ls /usr/lib/*/libdnnl.so 2>/dev/null | head -n1)") ;;
    *)
      log "no oneDNN from PyPI, and Debian's libdnnl-dev is '${cand:-absent}' (the peer needs the 3.x API): oneDNN peer NOT built"
      DNNL_INC="" ;;
  esac
fi

# ---- 4. build the oneDNN peer --------------------------------------------------------------
src=$here/peers/ext/onednn_peer.c
exe=$DIR/bin/onednn_peer
stamp=$DIR/bin/.onednn_peer.cmd
if [ -n "$DNNL_INC" ]; then
  # dnnl_rms_norm (layer normalization in RMS mode) is not in oneDNN 3.2: rmsnorm is then unsupported.
  defs=""
  grep -q 'dnnl_rms_norm' "$DNNL_INC/oneapi/dnnl/dnnl_types.h" 2>/dev/null && defs="-DXIR_HAVE_DNNL_RMS_NORM"
  # DT_RPATH (not RUNPATH) so that libdnnl's own dependencies beside it are found too.
  cmd="gcc -std=c11 -O2 -Wall -Wextra $defs -o $exe $src -I$DNNL_INC -L$DNNL_LIB -ldnnl -Wl,-rpath,$DNNL_LIB -Wl,--disable-new-dtags -ldl -lm"
  if [ ! -x "$exe" ] || [ "$src" -nt "$exe" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$cmd" ]; then
    log "building $exe"
    if $cmd; then
      echo "$cmd" >"$stamp"
    else
      log "building the oneDNN peer FAILED (oneDNN headers: $DNNL_INC)"
      rm -f "$exe" "$stamp"
    fi
  fi
else
  rm -f "$exe" "$stamp"
fi

# ---- 5. report -----------------------------------------------------------------------------
ONEDNN_PKG=$ONEDNN_PKG "$PY" - <<'EOF' >&2
import importlib.metadata as md, os, sys
def v(n):
    try: return md.version(n)
    except Exception: return "-"
pkg = os.environ["ONEDNN_PKG"]
print(f"setup_peers: installed: python {sys.version.split()[0]}, torch {v('torch')}, numpy {v('numpy')}, "
      f"triton {v('triton')}, {pkg} {v(pkg)}, {pkg.replace('-devel', '')} {v(pkg.replace('-devel', ''))}")
EOF
[ -n "$fallback_notes" ] && log "FALLBACKS used:$fallback_notes"
log "venv: $VENV"
if [ -x "$exe" ]; then log "onednn_peer: $("$exe" --version 2>&1 || true)"; else log "onednn_peer: not built"; fi
log "peer commands:"
echo "$PY $here/peers/ext/torch_peer.py --mode eager"
echo "$PY $here/peers/ext/torch_peer.py --mode compile"
[ -x "$exe" ] && echo "$exe"
exit 0
