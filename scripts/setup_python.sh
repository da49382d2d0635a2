#!/usr/bin/env bash
# setup_python.sh — builds the Python package `xir` (python/) into a virtual environment, against
# the library of an existing build tree, with its test dependencies from PyPI.
#   scripts/setup_python.sh [BUILD_DIR]      (default build; the environment: BUILD_DIR/pyenv)
# Steps: `cmake --install BUILD_DIR` into BUILD_DIR/pyprefix; a venv in BUILD_DIR/pyenv (or
# $XIR_PYENV); pip installs numpy, pytest, ml_dtypes and scikit-build-core there, then
# `pip install ./python` linking BUILD_DIR/pyprefix's libxir.so (no second build of the library).
# PyPI unreachable: fails loudly (exit 2) — the Python package is then NOT tested; nothing is faked.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
env=${XIR_PYENV:-$build/pyenv}
prefix=$build/pyprefix
py=${PYTHON:-python3}
cmake --install "$build" --prefix "$prefix" >/dev/null
[ -x "$env/bin/python" ] || "$py" -m venv "$env"
if ! "$env/bin/pip" install -q numpy pytest ml_dtypes 'scikit-build-core>=0.8' >"$build/pyenv-pip.log" 2>&1; then
  cat "$build/pyenv-pip.log" >&2
  echo "setup_python: FAIL: could not install numpy, pytest, ml_dtypes, scikit-build-core from PyPI:" \
       "the Python package is NOT built or tested (set XIR_SKIP_PYTHON=1 to skip it knowingly)" >&2
  exit 2
fi
"$env/bin/pip" install -q --no-build-isolation --force-reinstall --no-deps ./python \
  -C cmake.define.XIR_PREFIX="$prefix" -C build-dir="$build/pybuild" >"$build/pyenv-build.log" 2>&1 ||
  { cat "$build/pyenv-build.log" >&2; echo "setup_python: FAIL: pip install ./python" >&2; exit 1; }
echo "setup_python: xir $("$env/bin/python" -c 'import xir; print(xir.__version__)') in $env" >&2
