#!/usr/bin/env bash
# test.sh — set up, build and run every test: the normal build, then AddressSanitizer +
# UndefinedBehaviorSanitizer, then ThreadSanitizer (runtime tests). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
bash scripts/setup.sh build
(cd build && ctest --output-on-failure -j"$jobs")
bash scripts/setup.sh build-asan -DXIR_SANITIZE=address,undefined
(cd build-asan && XIR_TEST_QUICK=1 ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j"$jobs" -LE slow -E 'cli_fuzz')
bash scripts/setup.sh build-tsan -DXIR_SANITIZE=thread
(cd build-tsan && ctest --output-on-failure -j"$jobs" -R 'runtime')
echo "test.sh: all test runs passed"
