#!/usr/bin/env bash
# Installs what is missing, configures (once) and builds Tessera into build/.
# A second run rebuilds only what changed.
#
# TESSERA_BUILD_DIR   build directory (default build)
# TESSERA_CMAKE_ARGS  extra arguments for the first configure (a checked build
#                     of scripts/test.sh --sanitize or scripts/fuzz.sh)
# TESSERA_TARGETS     what to build (default: every tool, the unit tests and
#                     the generated docs)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

LLVM_PREFIX=/usr/lib/llvm-22
BUILD_DIR=${TESSERA_BUILD_DIR:-build}
export CCACHE_BASEDIR="$PWD"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  linker=()
  if command -v ld.lld >/dev/null; then
    linker=(-DLLVM_USE_LINKER=lld)
  fi
  # shellcheck disable=SC2206 # word splitting of the extra arguments is meant
  extra=(${TESSERA_CMAKE_ARGS:-})
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DLLVM_DIR="$LLVM_PREFIX/lib/cmake/llvm" \
    "${launcher[@]}" "${linker[@]}" "${extra[@]}" >/dev/null
fi

# shellcheck disable=SC2206
targets=(${TESSERA_TARGETS:-all TesseraUnitTests mlir-doc})
cmake --build "$BUILD_DIR" --target "${targets[@]}" -- -j"${TESSERA_JOBS:-$(nproc)}"
