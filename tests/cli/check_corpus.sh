#!/usr/bin/env bash
# check_corpus.sh — `xir check` on the XIR corpus (run by CTest: bash check_corpus.sh XIR SRC).
#
# tests/corpus/invalid/*.xir: each file's first line is `# expect: LINE:COL: TEXT`. `xir check`
# must exit 1 (never crash: an exit status >= 128 or a timeout is a failure) and print
# `FILE:LINE:COL: error: ...TEXT...`. A second line `# known-bug: WHY` marks a case whose correct
# behaviour is written down but not implemented yet: it is reported, not failed, while the bug is
# there, and fails once the expectation holds (so that the marker gets removed).
# tests/corpus/valid/*.xir: `xir check` exits 0, and `xir print` of the printed text reproduces it.
# tests/fuzz/regressions/*: inputs that once crashed: `xir check` must not crash or hang.
# Generated stress inputs (too big to keep as files): nesting 100000 deep must be rejected with
# a "nested too deeply" error, not overflow the stack; a `require` of 30000 terms must print and
# read back. KNOWN_STRESS lists the ones src/ does not handle yet (reported, not failed).
set -u
XIR=${1:?usage: check_corpus.sh XIR_BINARY SOURCE_DIR}
SRC=${2:?usage: check_corpus.sh XIR_BINARY SOURCE_DIR}
if [ ! -x "$XIR" ]; then echo "FAIL: $XIR is not an executable (is the build complete?)"; exit 1; fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/xir-corpus.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail=0 n_inv=0 n_val=0 n_known=0

for f in "$SRC"/tests/corpus/invalid/*.xir; do
  [ -e "$f" ] || continue
  n_inv=$((n_inv + 1))
  first=$(head -n 1 "$f")
  case "$first" in
    "# expect: "*) ;;
    *) echo "FAIL $f: the first line is not '# expect: LINE:COL: TEXT'"; fail=1; continue ;;
  esac
  spec=${first#"# expect: "}
  pos=$(printf '%s' "$spec" | sed -n 's/^\([0-9][0-9]*:[0-9][0-9]*\): .*/\1/p')
  text=${spec#*: }
  text=${text#*: }
  if [ -z "$pos" ]; then echo "FAIL $f: malformed expectation '$spec'"; fail=1; continue; fi
  known=$(sed -n '2s/^# known-bug: //p' "$f")
  timeout 30 "$XIR" check "$f" >"$TMP/out" 2>&1
  rc=$?
  problem=""
  if [ "$rc" -eq 124 ]; then problem="xir check timed out (hang)"
  elif [ "$rc" -ge 128 ]; then problem="xir check crashed (exit status $rc)"
  elif [ "$rc" -eq 0 ]; then problem="xir check accepted an invalid program"
  elif [ "$rc" -ne 1 ]; then problem="xir check exited with $rc (expected 1)"
  elif ! grep -F -- "$f:$pos: error: " "$TMP/out" | grep -q -F -- "$text"; then
    problem="expected '$f:$pos: error: ...$text...', got: $(head -c 400 "$TMP/out")"
  fi
  if [ -n "$known" ]; then
    if [ -n "$problem" ]; then
      n_known=$((n_known + 1))
      echo "KNOWN BUG $(basename "$f"): $known -- $problem"
    else
      echo "FAIL $f: marked known-bug but now behaves as expected: remove the '# known-bug' line"
      fail=1
    fi
  elif [ -n "$problem" ]; then
    echo "FAIL $f: $problem"
    fail=1
  fi
done

for f in "$SRC"/tests/corpus/valid/*.xir; do
  [ -e "$f" ] || continue
  n_val=$((n_val + 1))
  timeout 30 "$XIR" check "$f" >"$TMP/out" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ]; then echo "FAIL $f: xir check exited with $rc: $(cat "$TMP/out")"; fail=1; continue; fi
  if ! timeout 30 "$XIR" print "$f" >"$TMP/p1.xir" 2>"$TMP/err" ||
     ! timeout 30 "$XIR" print "$TMP/p1.xir" >"$TMP/p2.xir" 2>>"$TMP/err"; then
    echo "FAIL $f: xir print failed: $(cat "$TMP/err")"; fail=1; continue
  fi
  if ! cmp -s "$TMP/p1.xir" "$TMP/p2.xir"; then
    echo "FAIL $f: printing the printed text changes it:"; diff "$TMP/p1.xir" "$TMP/p2.xir"; fail=1
  fi
done

for f in "$SRC"/tests/fuzz/regressions/*; do
  [ -f "$f" ] || continue
  timeout 30 "$XIR" check "$f" >"$TMP/out" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
    echo "FAIL $f: xir check exited with $rc (crash or hang): $(head -c 300 "$TMP/out")"; fail=1
  fi
done

KNOWN_STRESS=${XIR_KNOWN_STRESS-""}
HEAD='kernel k[R, C](x: f32[R, C], y: out f32[R, C])
root r in R {
  store y[r, :] = '
rep() { yes "$2" 2>/dev/null | head -n "$1" | tr -d '\n'; }
stress() { # NAME FILE MODE(reject|roundtrip)
  local name=$1 file=$2 mode=$3 problem=""
  timeout 60 "$XIR" check "$file" >"$TMP/out" 2>&1
  local rc=$?
  if [ "$rc" -eq 124 ]; then problem="xir check timed out"
  elif [ "$rc" -ge 128 ]; then problem="xir check crashed (exit status $rc)"
  elif [ "$mode" = reject ]; then
    if [ "$rc" -ne 1 ] || ! grep -q "nested too deeply" "$TMP/out"; then
      problem="expected a 'nested too deeply' error, got exit $rc: $(head -c 200 "$TMP/out")"
    fi
  elif [ "$rc" -ne 0 ]; then problem="xir check rejected it: $(head -c 200 "$TMP/out")"
  else
    timeout 60 "$XIR" print "$file" >"$TMP/s1.xir" 2>/dev/null
    timeout 60 "$XIR" print "$TMP/s1.xir" >"$TMP/s2.xir" 2>"$TMP/out"
    rc=$?
    if [ "$rc" -ne 0 ]; then problem="its printed form does not read back (exit $rc: $(head -c 200 "$TMP/out"))"
    elif ! cmp -s "$TMP/s1.xir" "$TMP/s2.xir"; then problem="print(parse(print)) differs"; fi
  fi
  case " $KNOWN_STRESS " in
    *" $name "*)
      if [ -n "$problem" ]; then echo "KNOWN BUG stress $name: $problem"; n_known=$((n_known + 1))
      else echo "FAIL stress $name: now handled: remove it from KNOWN_STRESS in $0"; fail=1; fi ;;
    *) if [ -n "$problem" ]; then echo "FAIL stress $name: $problem"; fail=1; fi ;;
  esac
}
N=100000
{ printf '%s' "$HEAD"; rep $N '('; printf '1.0'; rep $N ')'; printf '\n}\n'; } >"$TMP/deep_parens.xir"
{ printf '%s' "$HEAD"; rep $N '-'; printf 'load x[r, :]\n}\n'; } >"$TMP/deep_minus.xir"
{ printf '%s' "$HEAD"; printf 'f32('; rep $N '!'; printf '(r > 0))\n}\n'; } >"$TMP/deep_not.xir"
{ printf '%s' "$HEAD"; rep $N 'exp('; printf 'load x[r, :]'; rep $N ')'; printf '\n}\n'; } >"$TMP/deep_calls.xir"
{ printf '%s' "$HEAD"; rep $N 'load x[r, '; printf '0'; rep $N ']'; printf '\n}\n'; } >"$TMP/deep_index.xir"
{ printf 'kernel k[R, C](x: f32[R, C], y: out f32[R, C])\n  require R'; rep 30000 ' + 1'
  printf ' > 0\nroot r in R {\n  store y[r, :] = load x[r, :]\n}\n'; } >"$TMP/require_chain.xir"
for s in deep_parens deep_minus deep_not deep_calls deep_index; do stress $s "$TMP/$s.xir" reject; done
stress require_chain "$TMP/require_chain.xir" reject

if [ "$n_inv" -eq 0 ] || [ "$n_val" -eq 0 ]; then echo "FAIL: empty corpus under $SRC/tests/corpus"; fail=1; fi
echo "check_corpus: $n_inv invalid ($n_known known bugs), $n_val valid: $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail
