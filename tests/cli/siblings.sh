#!/usr/bin/env bash
# siblings.sh — programs whose rank-0 reductions share loops (docs/lowering.md, "sibling
# reductions"; tests/corpus/valid/siblings_*.xir), run by every legal candidate at ragged and
# tiny shapes, f32 and with a bf16 input, each output checked against the fp64 oracle by
# `xir run --all-candidates` (run by CTest: bash siblings.sh XIR SRC).
set -u
XIR=${1:?usage: siblings.sh XIR_BINARY SOURCE_DIR}
SRC=${2:?usage: siblings.sh XIR_BINARY SOURCE_DIR}
fail=0 runs=0
for f in "$SRC"/tests/corpus/valid/siblings_*.xir; do
  for shape in R=7,C=1003 R=5,C=37 R=33,C=8 R=2,C=256; do
    for dt in "" "--dtype x=bf16"; do
      # shellcheck disable=SC2086
      out=$("$XIR" run "$f" --shape "$shape" $dt --all-candidates 2>&1)
      rc=$?
      ok=$(grep -c ' ok$' <<<"$out")
      bad=$(grep -ci 'fail' <<<"$out")
      runs=$((runs + 1))
      if [ $rc -ne 0 ] || [ "$ok" -lt 10 ] || [ "$bad" -ne 0 ]; then
        echo "FAIL $(basename "$f") $shape $dt: exit $rc, $ok candidates ok, $bad failing"
        echo "$out" | tail -5
        fail=1
      fi
    done
  done
done
echo "siblings: $runs runs"
exit $fail
