#!/usr/bin/env bash
# bench_config_measured.sh XIR CONFIGS CONFIG: a one-round peers run of rmsnorm R=3,C=1000 with
# --configs CONFIGS (the shortest protocol) whose tables list CONFIG as a measured xir case (a
# candidate), and whose records `xir audit` accepts. Used by the bench's configuration tests.
set -e -o pipefail
xir=$1; configs=$2; config=$3
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
"$xir" bench --suite peers --kernels rmsnorm --shapes 'R=3,C=1000' --configs "$configs" \
  --rounds 1 --warmup-ms 1 --sample-ms 1 --samples 2 --settle-ms 0 --no-plot --out "$d/r" >"$d/log" 2>&1 ||
  { cat "$d/log"; exit 1; }
grep -Fq "| rmsnorm | R=3,C=1000 | $config | perm=" "$d/r/tables.md" || { cat "$d/r/tables.md"; exit 1; }
"$xir" audit "$d/r"
