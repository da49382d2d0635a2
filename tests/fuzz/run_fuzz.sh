#!/usr/bin/env bash
# run_fuzz.sh — builds the libFuzzer parser target with clang (ASan + UBSan) and runs it for a
# bounded time on the seed corpus.
#
#   bash tests/fuzz/run_fuzz.sh [SECONDS] [extra libFuzzer flags...]
#
# SECONDS defaults to 30. The parser-only library sources (src/ir, src/kernels, src/util/util.c, src/util/strmap.c)
# are compiled straight into the fuzzer, so no CMake build is needed. Environment:
#   CLANG            the compiler (default: clang, else clang-14)
#   XIR_FUZZ_WORK    work directory (default: a fresh temp dir, removed unless a crash is found)
#   XIR_FUZZ_KEEP=1  keep the work directory
#   XIR_FUZZ_TIMEOUT seconds one input may take (default 2): slowness is a failure
#   XIR_FUZZ_BIG     statements in the generated large inputs (default 100000; 0 skips them)
#   XIR_FUZZ_BIG_TIMEOUT  seconds one large input may take (default 20; linear code needs about
#                    3 s under ASan, the quadratic parser needed minutes)
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

LIBSRC=$(ls "$SRC"/src/ir/*.c "$SRC"/src/kernels/*.c "$SRC"/src/util/util.c "$SRC"/src/util/strmap.c)
echo "run_fuzz.sh: building $BIN with $CC"
# shellcheck disable=SC2086
if ! "$CC" -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $EXTRA_SAN \
    -I"$SRC/include" -I"$SRC/src" -DXIR_SOURCE_FINGERPRINT="\"fuzz\"" \
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
TIMEOUT=${XIR_FUZZ_TIMEOUT:-2}
BIG=${XIR_FUZZ_BIG:-100000}
BIG_TIMEOUT=${XIR_FUZZ_BIG_TIMEOUT:-20}

# Large inputs first, each run once under the per-input time limit: a parser, verifier or printer
# that is quadratic in the program size times out here (100 k statements once took over 60 s).
if [ "$BIG" -gt 0 ]; then
  mkdir -p "$WORK/big"
  awk -v n="$BIG" 'BEGIN { print "kernel chain[R](x: f32[R], y: out f32[R])\nroot r in R {\n  v0 = load x[r]";
    for (i = 1; i <= n; i++) printf "  v%d = v%d + 1.0\n", i, i - 1;
    printf "  store y[r] = v%d\n}\n", n }' >"$WORK/big/chain_named.xir"
  awk -v n="$BIG" 'BEGIN { printf "kernel sum[R](x: f32[R], y: out f32[R])\nroot r in R {\n  store y[r] = load x[r]";
    for (i = 1; i <= n; i++) printf " + 1.0"; print "\n}" }' >"$WORK/big/sum_unnamed.xir"
  awk -v n="$BIG" 'BEGIN { print "kernel many[R](x: f32[R], y: out f32[R])\nroot r in R {\n  a = load x[r]";
    for (i = 1; i <= n; i++) printf "  n%d = a * %d.0\n", i, i;
    print "  store y[r] = a\n}" }' >"$WORK/big/unused_named.xir"
  echo "run_fuzz.sh: large inputs ($BIG statements), ${BIG_TIMEOUT}s each"
  if ! ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
       "$BIN" -timeout="$BIG_TIMEOUT" -rss_limit_mb=2048 "$WORK"/big/*.xir >"$WORK/big.log" 2>&1; then
    tail -n 25 "$WORK/big.log"
    echo "run_fuzz.sh: FAILED on a large input (slower than ${BIG_TIMEOUT}s, or a crash)" >&2
    exit 1
  fi
fi

echo "run_fuzz.sh: fuzzing for ${SECS}s (work dir $WORK)"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
"$BIN" "${DICT[@]}" -max_total_time="$SECS" -rss_limit_mb=2048 -timeout="$TIMEOUT" -max_len=8192 \
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
