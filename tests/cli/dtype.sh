#!/usr/bin/env bash
# dtype.sh — `xir run --dtype` (run by CTest: bash dtype.sh XIR SRC): a bf16/f16 run saves
# '<f2' / 'bfloat16' .npy files; reading them back (--inputs) gives the same inputs (the same
# fingerprint) and bit-identical outputs; an f32 file for a bf16 input is rounded; retyping an
# i64 buffer or a scalar is refused with its name.
set -u
XIR=${1:?usage: dtype.sh XIR_BINARY SOURCE_DIR}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/xir-dtype.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail=0
die() { echo "FAIL: $*"; fail=1; }
cd "$TMP" || exit 1
"$XIR" run rmsnorm --shape R=5,C=33 --dtype x=bf16,w=f16,y=bf16 --save a >a.txt 2>&1 || die "bf16 run failed: $(cat a.txt)"
grep -q "'descr': 'bfloat16'" a/x.npy || die "x.npy is not bfloat16"
grep -q "'descr': '<f2'" a/w.npy || die "w.npy is not <f2"
grep -q "'descr': 'bfloat16'" a/y.npy || die "y.npy is not bfloat16"
"$XIR" run rmsnorm --shape R=5,C=33 --dtype x=bf16,w=f16,y=bf16 --inputs a --save b >b.txt 2>&1 || die "reading the files back failed: $(cat b.txt)"
fa=$(grep -o 'sha256 [0-9a-f]*' a.txt | head -1); fb=$(grep -o 'sha256 [0-9a-f]*' b.txt | head -1)
[ -n "$fa" ] && [ "$fa" = "$fb" ] || die "the inputs read back differ ($fa vs $fb)"
cmp -s a/y.npy b/y.npy || die "the outputs differ after a round trip"
# an f32 file for a bf16 buffer is rounded to nearest even: the f32 run's x as the bf16 x
"$XIR" run rmsnorm --shape R=5,C=33 --save f >/dev/null 2>&1 || die "f32 run failed"
"$XIR" run rmsnorm --shape R=5,C=33 --dtype x=bf16 --inputs f >c.txt 2>&1 || die "an f32 file for a bf16 input was refused: $(cat c.txt)"
# the interpreter path writes the oracle rounded to the output type
"$XIR" run rmsnorm --shape R=5,C=33 --dtype f16 --interpret --save i >/dev/null 2>&1 || die "--interpret with f16 failed"
grep -q "'descr': '<f2'" i/y.npy || die "interpreted y.npy is not <f2"
# refusals name the parameter
"$XIR" run rope_cache --shape R=4,C=8,HD=4,P=6,H2=2 --dtype pos=bf16 >e.txt 2>&1 && die "retyping an i64 buffer was accepted"
grep -q "'pos'.*i64 buffer" e.txt || die "the i64 refusal does not name pos: $(cat e.txt)"
"$XIR" run rope --shape R=4,C=8,HD=4 --dtype theta=f16 >e.txt 2>&1 && die "retyping a scalar was accepted"
grep -q "'theta'.*scalar" e.txt || die "the scalar refusal does not name theta: $(cat e.txt)"
"$XIR" run rmsnorm --shape R=4,C=8 --dtype f8 >e.txt 2>&1 && die "an unknown type was accepted"
grep -q "unknown type 'f8'" e.txt || die "the unknown type is not named: $(cat e.txt)"
# plan and compile take --dtype too; the bf16 object converts with the target's instructions
"$XIR" plan swiglu --shape R=4,C=64 --dtype bf16 >/dev/null 2>&1 || die "xir plan --dtype failed"
"$XIR" compile swiglu --shape R=4,C=64 --dtype bf16 >p.txt 2>&1 || die "xir compile --dtype failed"
"$XIR" print rmsnorm >/dev/null || die "print failed"
[ $fail = 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
