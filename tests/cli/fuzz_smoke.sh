#!/usr/bin/env bash
# fuzz_smoke.sh — a short bounded run of the libFuzzer parser target (run by CTest:
# bash fuzz_smoke.sh XIR SRC). Builds tests/fuzz/fuzz_parse.c with clang (ASan + UBSan) and fuzzes
# for XIR_FUZZ_SECONDS (default 20) seconds from the seed corpus; any crash, sanitizer report or
# print/parse round-trip mismatch fails the test. Skipped (exit 0, with a message) only when clang
# is not installed.
set -u
SRC=${2:?usage: fuzz_smoke.sh XIR_BINARY SOURCE_DIR}
bash "$SRC/tests/fuzz/run_fuzz.sh" "${XIR_FUZZ_SECONDS:-20}"
rc=$?
if [ "$rc" -eq 77 ]; then
  echo "fuzz_smoke: SKIPPED: clang is not installed (apt-get install clang libclang-rt-14-dev)"
  exit 0
fi
exit "$rc"
