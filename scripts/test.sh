#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: unit (GoogleTest),
# lit (FileCheck) and end-to-end. Ends with one line "N passed, N failed".
#
# The end-to-end equivalence tests run a second time under another OpenBLAS
# kernel type (TESSERA_BLAS_RECHECK, default Prescott, the generic x86-64
# kernels; empty: skip), so that no test depends on the BLAS kernels of the
# machine at hand. OPENBLAS_CORETYPE and OPENBLAS_NUM_THREADS set by the
# caller reach every test.
#
# Also a short smoke run of every fuzz target (scripts/fuzz.sh; seconds per
# target from TESSERA_FUZZ_SECONDS, default 10; 0: skip).
#
#   scripts/test.sh --sanitize   the unit and lit suites on a build with
#                                AddressSanitizer and UBSan (build-asan/;
#                                no BLAS recheck, no fuzzing, no
#                                gnmt.test: see below)
set -uo pipefail
cd "$(dirname "$0")/.."

sanitize=0
lit_args=()
if [ "${1:-}" = "--sanitize" ]; then
  sanitize=1
  export TESSERA_BUILD_DIR=${TESSERA_BUILD_DIR:-build-asan}
  export TESSERA_CMAKE_ARGS="-DTESSERA_SANITIZE=ON"
  # Every finding fails the test that hit it; leaks too.
  # allow_user_poisoning=0: see scripts/fuzz.sh (LLVM's headers poison
  # memory that the uninstrumented libMLIR.so then uses).
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allow_user_poisoning=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  # Leaks that Open MPI makes in MPI_Init, MPI_Finalize and its progress
  # thread are suppressed (scripts/sanitizers/lsan.supp says which and why);
  # no other. The suppressions name Open MPI functions deep in the stack, and
  # its libraries have no frame pointers: hence the full (slower) unwinder
  # at every allocation, which also gives our own leaks whole stacks.
  export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/scripts/sanitizers/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0}
  if [ -x /usr/lib/llvm-22/bin/llvm-symbolizer ]; then
    export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
  fi
  # Not run here: gnmt.test runs tessera-plan under `ulimit -v` (3 GB, 1 GB),
  # and an ASan process cannot start under an address-space limit (it
  # reserves terabytes of shadow memory at start-up: "ReserveShadowMemoryRange
  # failed ... Perhaps you're using ulimit -v"). It runs in the normal suite.
  lit_args+=(--filter-out 'Tools/tessera-plan/gnmt\.test')
elif [ $# -gt 0 ]; then
  echo "usage: scripts/test.sh [--sanitize]" >&2
  exit 2
fi

scripts/build.sh || { echo "0 passed, 1 failed"; exit 1; }

BUILD_DIR=${TESSERA_BUILD_DIR:-build}
LIT=/usr/lib/llvm-22/bin/lit
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# lit reads the system python3 (it needs no extra packages). Each
# extension under dialects/ has its own lit suite.
ext_suites=()
for d in "$BUILD_DIR"/dialects/*/test; do
  [ -f "$d/lit.site.cfg.py" ] && ext_suites+=("$d")
done
"$LIT" -sv "${lit_args[@]}" "$BUILD_DIR/test" "$BUILD_DIR/test/Unit" \
  "${ext_suites[@]}" 2>&1 |
  tee "$log"
rc=${PIPESTATUS[0]}

recheck=${TESSERA_BLAS_RECHECK-Prescott}
if [ -n "$recheck" ] && [ $sanitize -eq 0 ]; then
  echo "== end-to-end equivalence again with OPENBLAS_CORETYPE=$recheck"
  OPENBLAS_CORETYPE=$recheck "$LIT" -sv "$BUILD_DIR/test/E2E" \
    --filter 'equivalence|gpt-' 2>&1 | tee -a "$log"
  rc2=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] && rc=$rc2
fi

fuzz_seconds=${TESSERA_FUZZ_SECONDS-10}
if [ "$fuzz_seconds" != 0 ] && [ $sanitize -eq 0 ]; then
  echo "== fuzz targets, $fuzz_seconds s each"
  scripts/fuzz.sh "$fuzz_seconds" 2>&1 | tee -a "$log"
  rc3=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] && rc=$rc3
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
