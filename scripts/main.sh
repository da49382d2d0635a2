#!/usr/bin/env bash
# main.sh — the main job: set up, build, then run the built-in kernel suite (plan, compile, run,
# check against the fp64 oracle) and print its table.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build
./build/xir suite "$@"
