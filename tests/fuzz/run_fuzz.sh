#!/usr/bin/env bash
# run_fuzz.sh — builds the libFuzzer parser target with clang (ASan + UBSan) and runs it for a
# bounded time on the seed corpus.
#
#   bash tests/fuzz/run_fuzz.sh [SECONDS] [extra libFuzzer flags...]
#
# SECONDS defaults to 30. The parser-only library sources (src/ir, src/kernels, src/util/util.c)
# are compiled straight into the fuzzer, so no CMake build is needed. Environment:
#   CLANG            the compiler (default: clang, else clang-14)
#   XIR_FUZZ_WORK    work directory (default: a fresh temp dir, removed unless a crash is found)
#   XIR_FUZZ_KEEP=1  keep the work directory
#   XIR_FUZZ_TARGET  parse (default: fuzz_parse.c, parse + print round trip) or interp
#                    (fuzz_interp.c: also runs the interpreter on tiny shapes; built without
#                    -fsanitize=float-cast-overflow,signed-integer-overflow: see that file)
# Exit status: 0 when the run finished without a crash; 1 on a crash, leak, timeout, sanitizer
# report or round-trip mismatch (the crashing input is printed and kept in WORK/artifacts/);
# 2 when the target cannot be built; 77 when no clang is installed.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
SECS=${1:-30}
[ $# -gt 0 ] && shift

CC=${CLANG:-}
if [ -z "$CC" ]; then
  for c in clang clang-14; do
    if command -v "$c" >/dev/null 2>&1; then CC=$c; break; fi
  done
fi
if [ -z "$CC" ]; then
  echo "run_fuzz.sh: clang is not installed" >&2
  exit 77
fi

WORK=${XIR_FUZZ_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/xir-fuzz.XXXXXX")}
mkdir -p "$WORK/corpus" "$WORK/artifacts"
TARGET=${XIR_FUZZ_TARGET:-parse}
case "$TARGET" in
  parse) EXTRA_SAN="" ;;
  interp) EXTRA_SAN="-fno-sanitize=float-cast-overflow,signed-integer-overflow" ;;
  *) echo "run_fuzz.sh: XIR_FUZZ_TARGET must be parse or interp" >&2; exit 2 ;;
esac
BIN="$WORK/fuzz_$TARGET"

LIBSRC=$(ls "$SRC"/src/ir/*.c "$SRC"/src/kernels/*.c "$SRC"/src/util/util.c)
echo "run_fuzz.sh: building $BIN with $CC"
# shellcheck disable=SC2086
if ! "$CC" -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $EXTRA_SAN \
    -I"$SRC/include" -I"$SRC/src" \
    "$HERE/fuzz_$TARGET.c" $LIBSRC -lm -o "$BIN" 2>"$WORK/build.log"; then
  cat "$WORK/build.log" >&2
  echo "run_fuzz.sh: the fuzz target does not build" >&2
  exit 2
fi

cp "$HERE"/seeds/* "$WORK/corpus/" 2>/dev/null
cp "$SRC"/tests/corpus/valid/*.xir "$WORK/corpus/" 2>/dev/null
cp "$HERE"/regressions/* "$WORK/corpus/" 2>/dev/null  # inputs that once failed
DICT=()
[ -f "$HERE/xir.dict" ] && DICT=(-dict="$HERE/xir.dict")

echo "run_fuzz.sh: fuzzing for ${SECS}s (work dir $WORK)"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
"$BIN" "${DICT[@]}" -max_total_time="$SECS" -rss_limit_mb=2048 -timeout=10 -max_len=8192 \
  -print_final_stats=1 -artifact_prefix="$WORK/artifacts/" "$@" "$WORK/corpus" \
  >"$WORK/fuzz.log" 2>&1
rc=$?
tail -n 25 "$WORK/fuzz.log"
crashes=$(ls "$WORK/artifacts" 2>/dev/null | wc -l)
if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
  echo "run_fuzz.sh: FAILED (libFuzzer exit $rc, $crashes artifact(s) in $WORK/artifacts)" >&2
  for f in "$WORK"/artifacts/*; do
    [ -f "$f" ] || continue
    echo "--- $f (base64) ---" >&2
    base64 "$f" >&2
  done
  exit 1
fi
echo "run_fuzz.sh: ok ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$WORK/fuzz.log" | grep -o '[0-9]*$') inputs)"
if [ -z "${XIR_FUZZ_WORK:-}" ] && [ "${XIR_FUZZ_KEEP:-0}" != 1 ]; then rm -rf "$WORK"; fi
exit 0
