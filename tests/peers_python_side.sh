#!/usr/bin/env bash
# peers_python_side.sh — the peers suite's Python side measured (one tiny case, one round): xir
# from Python and torch eager in one process, the table row, the audit (CTest:
# test_peers_python_side, bash peers_python_side.sh XIR BUILD_DIR). Needs the peers venv
# (XIR_PEERS_DIR, default ~/.cache/xir-peers) with the Python version of this build's pyenv
# (scripts/setup_python.sh BUILD_DIR) — the server imports xir from the pyenv into the venv's
# python, as scripts/test.sh's torch step does; skipped (77) with the reason otherwise.
set -e -o pipefail
xir=${1:?usage: peers_python_side.sh XIR BUILD_DIR}; build=${2:?usage: peers_python_side.sh XIR BUILD_DIR}
pyenv=$build/pyenv; D=${XIR_PEERS_DIR:-$HOME/.cache/xir-peers}
if [ ! -x "$D/venv/bin/python" ]; then
  echo "skipped: no peer venv at $D (run scripts/setup_peers.sh)"; exit 77; fi
if ! ls "$pyenv"/lib/python3*/site-packages/xir/__init__.py >/dev/null 2>&1; then
  echo "skipped: no xir package in $pyenv (run scripts/setup_python.sh $build)"; exit 77; fi
pyver='import sys; print("%d.%d" % sys.version_info[:2])'
vv=$("$D/venv/bin/python" -c "$pyver" 2>/dev/null || true)
pv=$("$pyenv/bin/python" -c "$pyver" 2>/dev/null || true)
if [ -z "$vv" ] || [ "$vv" != "$pv" ]; then
  echo "skipped: the peer venv's Python is ${vv:-unknown} ($D/venv/bin/python), the pyenv's" \
       "${pv:-unknown} ($pyenv): the xir package cannot load into the venv's python"; exit 77; fi
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
"$xir" bench --suite peers --kernels rmsnorm --shapes 'R=3,C=1000' \
  --configs default,ext:xir_python,ext:torch_eager_py --rounds 1 --warmup-ms 1 \
  --sample-ms 1 --samples 2 --settle-ms 0 --no-plot --peers-dir "$D" --pyenv "$pyenv" \
  --out "$d/r" >"$d/log" 2>&1 || { cat "$d/log"; exit 1; }
t="$d/r/tables.md"
n='[0-9.]+'
grep -Eq "^\| rmsnorm \| R=3,C=1000 \| $n \| $n \| $n \| $n–$n \| $n \| $n \| $n–$n \| -?$n \|$" "$t" ||
  { cat "$t"; exit 1; }
grep -q '^- xir_python + torch_eager_py ' "$t"
grep -Eq '^xir from Python vs torch eager \(same process\) over 1 cases' "$d/log"
"$xir" audit "$d/r"
