#!/usr/bin/env bash
# check_layering.sh — enforces the dependency rules of docs/architecture.md on #include lines.
#   scripts/check_layering.sh [SOURCE_DIR]        (CTest: test_layering)
# For every file of include/ and src/<part>/, each quoted include must be allowed for its part:
# a header of the same folder, a part listed below (src/<part>/...), or a public header listed
# below. Third-party headers: <llvm-c/...> only in src/lower; <nettle/...> only in src/util
# (sha256); <zlib.h> and <cjson/...> only in src/bench, tools/ and tests/. Fails naming every
# offending file:line.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

# part: allowed parts and public headers (besides the part's own folder)
declare -A allow=(
  [include]="xir.h xir_ops.h xir_status.h xir_bridge.h xir_runtime.h xir_compile.h xir_plan.h xir_session.h"
  [util]="xir_status.h xir_fingerprint.h"  # the latter generated in the build tree (cmake/fingerprint.cmake)
  [ir]="util xir.h xir_ops.h xir_status.h"
  [kernels]="ir util xir.h xir_ops.h xir_status.h"
  [check]="ir util xir.h xir_ops.h xir_status.h"
  [bridge]="ir util xir.h xir_ops.h xir_status.h xir_bridge.h"
  [cost]="ir util xir.h xir_ops.h xir_status.h xir_bridge.h xir_runtime.h xir_plan.h"
  [plan]="ir util xir.h xir_ops.h xir_status.h xir_bridge.h xir_runtime.h xir_plan.h lower/jit.h"
  [lower]="ir util xir.h xir_ops.h xir_status.h xir_bridge.h xir_compile.h"
  [runtime]="util xir_status.h xir_runtime.h"
  [tune]="ir util check bridge cost plan lower runtime xir.h xir_ops.h xir_status.h xir_bridge.h xir_compile.h xir_runtime.h xir_plan.h"
  [session]="ir util check bridge cost plan lower runtime tune xir.h xir_ops.h xir_status.h xir_bridge.h xir_compile.h xir_runtime.h xir_plan.h xir_session.h"
  [bench]="util xir_status.h xir_runtime.h"
)
# what each public header may include (the runtime's knows no IR; the bridge's no cost)
declare -A allow_public=(
  [xir_status.h]="" [xir_ops.h]="" [xir.h]="xir_ops.h xir_status.h"
  [xir_runtime.h]="xir_status.h" [xir_bridge.h]="xir.h"
  [xir_compile.h]="xir.h xir_bridge.h" [xir_plan.h]="xir.h xir_bridge.h xir_runtime.h"
  [xir_session.h]="xir.h xir_compile.h xir_plan.h xir_runtime.h"
)

bad=0
report() { echo "$1: $2" >&2; bad=1; }

check_file() { # FILE PART ALLOWED
  local f=$1 part=$2 allowed=" $3 " line inc dir
  dir=$(dirname "$f")
  local who=$part
  [[ $part == include ]] && who=$(basename "$f")
  while IFS= read -r line; do
    local ln=${line%%:*} text=${line#*:}
    if [[ $text =~ \#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]]; then
      inc=${BASH_REMATCH[1]}
      if [[ $inc == */* ]]; then
        local p=${inc%%/*}
        [[ "$p" == "$part" || $allowed == *" $p "* || $allowed == *" $inc "* ]] ||
          report "$f:$ln" "$who must not include \"$inc\" (docs/architecture.md)"
      elif [[ $part != include && -f "$dir/$inc" ]]; then
        :
      else
        [[ $allowed == *" $inc "* ]] ||
          report "$f:$ln" "$who must not include \"$inc\" (docs/architecture.md)"
      fi
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include' "$f" || true)
}

for f in include/*.h; do
  b=$(basename "$f")
  check_file "$f" include "${allow_public[$b]-}"
done
for d in src/*/; do
  part=$(basename "$d")
  if [[ -z "${allow[$part]+x}" ]]; then
    report "$d" "a part with no dependency rule: add it to scripts/check_layering.sh and docs/architecture.md"
    continue
  fi
  for f in "$d"*.c "$d"*.h; do
    [[ -e "$f" ]] && check_file "$f" "$part" "${allow[$part]}"
  done
done

# third-party headers
grep_libs() { # REGEX ALLOWED_PATH_REGEX WHAT
  local hits
  hits=$(grep -rnE --include='*.c' --include='*.h' --include='*.inc' "^[[:space:]]*#[[:space:]]*include[[:space:]]*<$1" \
         include src tools bench peers tests 2>/dev/null | grep -Ev "^($2)" || true)
  while IFS= read -r h; do
    if [[ -n "$h" ]]; then report "${h%%:*}:$(cut -d: -f2 <<<"$h")" "$3"; fi
  done <<<"$hits"
}
grep_libs 'llvm-c/' 'src/lower/|tests/' "llvm-c appears only in src/lower"
grep_libs 'nettle/' 'src/util/sha256\.' "nettle is used through src/util/sha256.h only"
grep_libs '(zlib\.h|cjson/)' 'src/bench/|tools/|tests/' "zlib and cJSON are for the records (src/bench), tools and tests, not the core library"

if ((bad)); then
  echo "check_layering: FAIL (rules: docs/architecture.md)" >&2
  exit 1
fi
echo "check_layering: ok ($(ls include/*.h src/*/*.[ch] | wc -l) files)"
