#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: unit (GoogleTest),
# lit (FileCheck) and end-to-end. Ends with one line "N passed, N failed".
#
# The end-to-end equivalence tests run a second time under another OpenBLAS
# kernel type (TESSERA_BLAS_RECHECK, default Prescott, the generic x86-64
# kernels; empty: skip), so that no test depends on the BLAS kernels of the
# machine at hand. OPENBLAS_CORETYPE and OPENBLAS_NUM_THREADS set by the
# caller reach every test.
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/build.sh || { echo "0 passed, 1 failed"; exit 1; }

BUILD_DIR=${TESSERA_BUILD_DIR:-build}
LIT=/usr/lib/llvm-22/bin/lit
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# lit reads the system python3 (it needs no extra packages).
"$LIT" -sv "$BUILD_DIR/test" "$BUILD_DIR/test/Unit" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

recheck=${TESSERA_BLAS_RECHECK-Prescott}
if [ -n "$recheck" ]; then
  echo "== end-to-end equivalence again with OPENBLAS_CORETYPE=$recheck"
  OPENBLAS_CORETYPE=$recheck "$LIT" -sv "$BUILD_DIR/test/E2E" \
    --filter 'equivalence|gpt-' 2>&1 | tee -a "$log"
  rc2=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] && rc=$rc2
fi

# Sum a category over lit's summaries ("  Passed: 12 (100.00%)").
count() {
  awk -v key="$1" '$0 ~ "^ *" key " *: *[0-9]+" {
    sub("^ *" key " *: *", ""); n += $1 } END { print n + 0 }' "$log"
}
passed=$(count Passed)
failed=$(( $(count Failed) + $(count Unresolved) + $(count "Timed Out") ))
echo "${passed} passed, ${failed} failed"
exit $rc
