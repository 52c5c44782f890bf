#!/usr/bin/env bash
# Regenerates the reference docs from TableGen (build target mlir-doc) and
# copies them into docs/. The test suite fails while docs/ is out of date.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${TESSERA_BUILD_DIR:-build}
cmake --build "$BUILD_DIR" --target mlir-doc >/dev/null
for d in Dialects Interfaces Passes; do
  mkdir -p "docs/$d"
  cp "$BUILD_DIR/docs/$d/"*.md "docs/$d/"
done
echo "docs/ updated from $BUILD_DIR/docs"
