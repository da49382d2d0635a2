#!/usr/bin/env bash
# check_install.sh — installs a build into a temporary prefix and builds + runs the out-of-tree
# examples (examples/: rmsnorm.c, the step-by-step API, and session.c, the README's one-call
# example) against it four ways: find_package(xir) with xir::xir (shared) and
# xir::xir_static, and pkg-config with `--libs xir` (shared) and `--static --libs xir` (libxir.a
# and its Libs.private / Requires.private). Also checks that libxir.so exports only the public
# xir_ API (nm -D --defined-only) and that the shared example needs nothing but libxir.so and libc.
#   scripts/check_install.sh BUILD_DIR [CC]     (CTest: test_install)
set -euo pipefail
build=$(cd "${1:?usage: check_install.sh BUILD_DIR [CC]}" && pwd)
cc=${2:-cc}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "check_install: FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
echo "installed:"; (cd "$prefix" && find . \( -type f -o -type l \) | sort | sed 's/^\./  /')
libdir=$(dirname "$(find "$prefix" -name libxir.a | head -1)")
[ -n "$libdir" ] && [ -f "$libdir/libxir.a" ] || fail "no libxir.a"
[ -e "$libdir/libxir.so" ] || fail "no libxir.so"
for f in include/xir.h include/xir_bridge.h include/xir_compile.h include/xir_plan.h \
         include/xir_runtime.h include/xir_status.h include/xir_ops.h include/xir_session.h; do
  [ -f "$prefix/$f" ] || fail "no $f"
done
[ -x "$prefix/bin/xir" ] || fail "no bin/xir"
[ -f "$libdir/pkgconfig/xir.pc" ] || fail "no xir.pc"
[ -f "$libdir/cmake/xir/xirConfig.cmake" ] || fail "no xirConfig.cmake"

# the shared library exports the public API and nothing else
syms=$(nm -D --defined-only "$libdir/libxir.so" | awk '{print $3}')
bad=$(grep -v '^xir_[a-z0-9]' <<<"$syms" || true)
[ -z "$bad" ] || fail "libxir.so exports non-public symbols: $(head -5 <<<"$bad" | tr '\n' ' ')"
echo "libxir.so exports $(wc -l <<<"$syms") symbols, all xir_* (no xir__*)"

run() { # NAME BINARY
  out=$("$2") || { echo "$out"; fail "$1: the example failed"; }
  grep -q ': ok$' <<<"$out" || fail "$1: $out"
  echo "$1: $out"
}

# find_package(xir)
for kind in shared static; do
  st=OFF; [ "$kind" = static ] && st=ON
  cmake -S "$src/examples" -B "$tmp/cm-$kind" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    -DXIR_EXAMPLE_STATIC=$st -DCMAKE_BUILD_TYPE=Release >"$tmp/cm-$kind.log" 2>&1 ||
    { cat "$tmp/cm-$kind.log"; fail "find_package ($kind): configure"; }
  cmake --build "$tmp/cm-$kind" >>"$tmp/cm-$kind.log" 2>&1 || { cat "$tmp/cm-$kind.log"; fail "find_package ($kind): build"; }
  for ex in rmsnorm session; do
    run "find_package xir::xir$([ $kind = static ] && echo _static) $ex" "$tmp/cm-$kind/$ex"
  done
done

# pkg-config
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cflags=$(pkg-config --cflags xir)
libs=$(pkg-config --libs xir)
slibs=$(pkg-config --static --libs xir)
for ex in rmsnorm session; do
  # shellcheck disable=SC2086
  "$cc" -std=c11 -O2 $cflags "$src/examples/$ex.c" -o "$tmp/pc-shared-$ex" $libs -lm -Wl,-rpath,"$libdir" ||
    fail "pkg-config (shared): build $ex"
  needed=$(readelf -d "$tmp/pc-shared-$ex" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  grep -q 'libxir\.so' <<<"$needed" || fail "the shared example $ex does not link libxir.so ($needed)"
  for n in $needed; do
    case $n in libxir.so*|libm.so*|libc.so*|ld-linux*) ;; *) fail "the shared example $ex needs $n" ;; esac
  done
  run "pkg-config --libs xir ($libs) $ex" "$tmp/pc-shared-$ex"
  # shellcheck disable=SC2086
  "$cc" -std=c11 -O2 $cflags "$src/examples/$ex.c" -o "$tmp/pc-static-$ex" $(sed "s/-lxir\b/-l:libxir.a/" <<<"$slibs") -lm ||
    fail "pkg-config (static): build $ex with $slibs"
  if readelf -d "$tmp/pc-static-$ex" | grep -q 'libxir\.so'; then fail "the static example $ex links libxir.so"; fi
  run "pkg-config --static --libs xir ($slibs) $ex" "$tmp/pc-static-$ex"
done
echo "check_install: ok"
