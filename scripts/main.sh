#!/usr/bin/env bash
# main.sh — the main job: set up, build, run the built-in kernel suite (plan, compile, run, check
# against the fp64 oracle; a table), then the pilot benchmark suite (joint_legacy vs joint_tasks,
# paired ratios, every output checked) and its audit.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build
./build/xir suite --workers 2
echo
out="results/pilot-$(date -u +%Y%m%d-%H%M%S)"
./build/xir bench --suite pilot --out "$out" "$@"
./build/xir audit "$out"
