#!/usr/bin/env bash
# setup.sh — installs the Debian packages xir needs (only the missing ones) and builds it.
#   scripts/setup.sh [BUILD_DIR] [extra cmake args...]
# XIR_BUILD_TARGETS (space-separated target names) builds only those targets (scripts/test.sh
# uses it for the ThreadSanitizer build, which runs only the runtime tests); default: everything.
# Run as root on Debian 12. Nothing is downloaded except Debian packages.
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS="build-essential cmake pkg-config git llvm-19-dev libcjson-dev nettle-dev zlib1g-dev libcmocka-dev clang-14 libclang-rt-14-dev gnuplot-nox"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup: installing$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q $missing >/dev/null
fi
build=${1:-build}
shift || true
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
targets=()
for t in ${XIR_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j"$(nproc)" "${targets[@]}" >/dev/null
echo "setup: built $build" >&2
