#!/usr/bin/env bash
# test.sh — set up, build and run every test: the normal build, the Python package (built into
# build/pyenv by scripts/setup_python.sh, then pytest), then AddressSanitizer +
# UndefinedBehaviorSanitizer, then ThreadSanitizer (runtime tests). Exits non-zero on any failure.
# The Python package needs PyPI (numpy, pytest, ml_dtypes, scikit-build-core): when it cannot be
# reached the run FAILS, saying so; XIR_SKIP_PYTHON=1 skips the Python part knowingly (and says so).
# The normal pass checks every candidate of every test against the oracle. The sanitizer pass
# looks for memory errors and undefined behaviour in the library's own code, so it runs with
# XIR_TEST_QUICK=1: without the `slow` sweeps and the fuzzer, without the 4M-element shapes
# (test_native, test_kernels_ref) and with every third candidate (test_native, by shape and
# width so that every residue is exercised; test_ref_special every second), because LLVM's
# uninstrumented compile of each candidate is most of its time. For the same reason the
# sanitizer builds' tests share the normal build's cache folder (XIR_TEST_CACHE_DIR,
# tests/CMakeLists.txt), keyed by the lowered IR (XIR_KERNEL_CACHE_KEY=ir, as are the Python
# package's tests): they load the kernels the normal pass compiled instead of running LLVM's
# code generator on them again. CI's budget is 15 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
bash scripts/setup.sh build
(cd build && ctest --output-on-failure -j"$jobs")
if [ "${XIR_SKIP_PYTHON:-0}" = 1 ]; then
  echo "test.sh: WARNING: XIR_SKIP_PYTHON=1: the Python package is NOT built or tested" >&2
else
  bash scripts/setup_python.sh build
  XIR_CACHE_DIR="$PWD/build/test-cache" XIR_KERNEL_CACHE_KEY=ir build/pyenv/bin/pytest -q python/tests
  # The torch tests (every test whose name or file name says torch) skip above: build/pyenv has no
  # torch (3 GB; CI installs none). Where the peers' venv (docs/peers.md) has torch, they run
  # again with its python and build/pyenv's site-packages APPENDED to sys.path (numpy and torch
  # stay the venv's; xir, pytest and ml_dtypes come from build/pyenv; neither venv is modified);
  # XIR_REQUIRE_TORCH=1 turns a skip for a missing torch into a failure.
  peers_py="$HOME/.cache/xir-peers/venv/bin/python"
  pyver='import sys; print("%d.%d" % sys.version_info[:2])'
  if [ -x "$peers_py" ] && "$peers_py" -c 'import torch' >/dev/null 2>&1 &&
     [ "$("$peers_py" -c "$pyver")" = "$(build/pyenv/bin/python -c "$pyver")" ]; then
    site=$(build/pyenv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    XIR_CACHE_DIR="$PWD/build/test-cache" XIR_KERNEL_CACHE_KEY=ir XIR_REQUIRE_TORCH=1 "$peers_py" -c \
      'import sys; sys.path.append(sys.argv[1]); import pytest; sys.exit(pytest.main(sys.argv[2:]))' \
      "$site" -q -k torch python/tests
  else
    echo "test.sh: the torch tests were SKIPPED: no $peers_py that imports torch" \
         "(with build/pyenv's Python version)" >&2
  fi
fi
bash scripts/setup.sh build-asan -DXIR_SANITIZE=address,undefined -DXIR_TEST_CACHE_DIR="$PWD/build/test-cache"
(cd build-asan && XIR_TEST_QUICK=1 ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j"$jobs" -LE slow -E 'cli_fuzz')
# only the runtime tests run under ThreadSanitizer, so only they are built
XIR_BUILD_TARGETS="$(cd tests && ls test_runtime*.c | sed 's/\.c$//' | tr '\n' ' ')" \
  bash scripts/setup.sh build-tsan -DXIR_SANITIZE=thread -DXIR_TEST_CACHE_DIR="$PWD/build/test-cache"
(cd build-tsan && ctest --output-on-failure -j"$jobs" -R 'runtime')
echo "test.sh: all test runs passed"
