#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: unit (GoogleTest),
# lit (FileCheck) and end-to-end. Ends with one line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/build.sh || { echo "0 passed, 1 failed"; exit 1; }

BUILD_DIR=${TESSERA_BUILD_DIR:-build}
LIT=/usr/lib/llvm-22/bin/lit
log=$(mktemp)
# lit reads the system python3 (it needs no extra packages).
"$LIT" -sv "$BUILD_DIR/test" "$BUILD_DIR/test/Unit" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

# Sum a category over lit's summaries ("  Passed: 12 (100.00%)").
count() {
  awk -v key="$1" '$0 ~ "^ *" key " *: *[0-9]+" {
    sub("^ *" key " *: *", ""); n += $1 } END { print n + 0 }' "$log"
}
passed=$(count Passed)
failed=$(( $(count Failed) + $(count Unresolved) + $(count "Timed Out") ))
rm -f "$log"
echo "${passed} passed, ${failed} failed"
exit $rc
