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
have_torch() { "$PY" -c 'import torch, numpy' >/dev/null 2>&1; }
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
fi
have_torch || { log "torch is not importable from $PY"; exit 1; }

# ---- 3. oneDNN (C API) ---------------------------------------------------------------------
find_dnnl_h() { find "$VENV" -name dnnl.h -path '*include*' 2>/dev/null | head -n1; }
dnnl_h=$(find_dnnl_h)
if [ -z "$dnnl_h" ] || [ "${XIR_PEERS_UPGRADE:-0}" = 1 ]; then
  t0=$(now)
  log "pip install onednn-devel — log: $DIR/logs/pip-onednn.log"
  if "${PIP[@]}" install "${pipflags[@]}" onednn-devel >"$DIR/logs/pip-onednn.log" 2>&1; then
    log "onednn-devel installed from PyPI in $(( $(now) - t0 )) s"
  else
    log "PyPI onednn-devel install FAILED (see $DIR/logs/pip-onednn.log)"
  fi
  dnnl_h=$(find_dnnl_h)
fi
if [ -n "$dnnl_h" ]; then
  DNNL_INC=$(dirname "$dnnl_h")
  DNNL_LIB=$(dirname "$(find "$VENV" \( -name 'libdnnl.so' -o -name 'libdnnl.so.*' \) 2>/dev/null | head -n1)")
else
  log "no dnnl.h from PyPI; falling back to Debian's libdnnl-dev"
  fallback_notes="$fallback_notes onednn:debian"
  apt_install libdnnl-dev
  DNNL_INC=/usr/include
  DNNL_LIB=$(dirname "$(ls /usr/lib/*/libdnnl.so 2>/dev/null | head -n1)")
fi

# ---- 4. build the oneDNN peer --------------------------------------------------------------
src=$here/peers/ext/onednn_peer.c
exe=$DIR/bin/onednn_peer
# libdnnl from the wheel may ship only as libdnnl.so.N: link against it by path then.
dnnl_so=$DNNL_LIB/libdnnl.so
[ -e "$dnnl_so" ] || dnnl_so=$(ls "$DNNL_LIB"/libdnnl.so.* | head -n1)
stamp=$DIR/bin/.onednn_peer.cmd
cmd="gcc -std=c11 -O2 -Wall -Wextra -o $exe $src -I$DNNL_INC $dnnl_so -Wl,-rpath,$DNNL_LIB -Wl,--enable-new-dtags -lm"
if [ ! -x "$exe" ] || [ "$src" -nt "$exe" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$cmd" ]; then
  log "building $exe"
  if $cmd; then
    echo "$cmd" >"$stamp"
  else
    log "building the oneDNN peer FAILED (oneDNN headers: $DNNL_INC)"
    rm -f "$exe"
  fi
fi

# ---- 5. report -----------------------------------------------------------------------------
"$PY" - <<'EOF' >&2
import importlib.metadata as md, sys
def v(n):
    try: return md.version(n)
    except Exception: return "-"
import torch, numpy
print(f"setup_peers: python {sys.version.split()[0]}  torch {torch.__version__} (cuda build {torch.version.cuda}, "
      f"cuda available {torch.cuda.is_available()})  numpy {numpy.__version__}  "
      f"onednn-devel {v('onednn-devel')}  onednn {v('onednn')}")
EOF
[ -n "$fallback_notes" ] && log "FALLBACKS used:$fallback_notes"
log "venv: $VENV ($(du -sh "$VENV" 2>/dev/null | cut -f1))"
log "peer commands:"
echo "$PY $here/peers/ext/torch_peer.py --mode eager"
echo "$PY $here/peers/ext/torch_peer.py --mode compile"
if [ -x "$exe" ]; then echo "$exe"; ver=$("$exe" --version 2>/dev/null || true); [ -n "$ver" ] && log "onednn_peer: $ver"; fi
