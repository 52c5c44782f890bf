#!/usr/bin/env bash
# Builds the libFuzzer targets (tools/tessera-fuzz: clang, ASan + UBSan) into
# build-fuzz/ and runs each for SECONDS (default 60) on a corpus seeded from
# the repository's examples and tests. Ends with lit-style counts (a target
# passes when it ran its time without a finding); a crashing input is kept
# in build-fuzz/artifacts/. See docs/fuzzing.md.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 600 onnx
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

seconds=${1:-60}
shift || true
all=(mlir onnx plan-file piper placement)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

CLANG_VERSION=14 # Debian's clang with libFuzzer (libclang-rt-14-dev)
export TESSERA_BUILD_DIR=${TESSERA_FUZZ_BUILD_DIR:-build-fuzz}
export TESSERA_CMAKE_ARGS="-DTESSERA_ENABLE_FUZZERS=ON -DCMAKE_C_COMPILER=clang-$CLANG_VERSION -DCMAKE_CXX_COMPILER=clang++-$CLANG_VERSION -DCMAKE_BUILD_TYPE=RelWithDebInfo"
names=()
for t in "${targets[@]}"; do names+=("tessera-fuzz-$t"); done
export TESSERA_TARGETS="${names[*]}"
if ! scripts/build.sh; then
  echo "fuzz: building the targets failed"
  printf '  Passed: 0\n  Failed: %d\n' "${#targets[@]}"
  exit 1
fi
BUILD=$ROOT/$TESSERA_BUILD_DIR

# Seeds: small, valid inputs of each reader, copied from the repository.
seed() { # seed TARGET FILE...
  local dir=$BUILD/seeds/$1
  shift
  mkdir -p "$dir"
  for f in "$@"; do
    if [ -f "$f" ]; then cp "$f" "$dir/$(echo "$f" | tr / _)"; fi
  done
}
rm -rf "$BUILD/seeds"
seed mlir test/Dialect/Tsr/ops/*.mlir test/Dialect/Dist/*.mlir \
  test/Dialect/Dist/ops/*.mlir test/Dialect/Dist/Transforms/Inputs/step.mlir
seed onnx examples/gpt/tiny/model.onnx \
  $(ls /usr/share/libonnx-testdata/data/node/test_{add,matmul_2d,gather_0,softmax_axis_1,layer_normalization_2d_axis0,reshape_reordered_all_dims,transpose_default,gelu_default_1,softmax_cross_entropy_mean}/model.onnx 2>/dev/null)
seed plan-file test/Dialect/Dist/Transforms/Inputs/*.json
seed piper bench/workloads/piper/*.json test/Tools/tessera-plan/Inputs/*.json
seed placement bench/workloads/tessel/*.json test/Tools/tessera-schedule/Inputs/*.json

if [ -x /usr/lib/llvm-22/bin/llvm-symbolizer ]; then
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
fi
# allow_user_poisoning=0: LLVM's headers poison memory in BumpPtrAllocator
# when they see ASan; our instrumented code and the uninstrumented libMLIR.so
# then disagree about which bytes are live (false use-after-poison reports).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1:allow_user_poisoning=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
passed=0
failed=0
for t in "${targets[@]}"; do
  corpus=$BUILD/corpus/$t
  mkdir -p "$corpus" "$BUILD/artifacts"
  log=$BUILD/fuzz-$t.log
  # -timeout: an input running longer is a finding (a hang); -rss_limit_mb:
  # so is one that allocates past 2 GiB.
  "$BUILD/bin/tessera-fuzz-$t" "$corpus" "$BUILD/seeds/$t" \
    -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
    -max_len=262144 -print_final_stats=1 \
    -artifact_prefix="$BUILD/artifacts/$t-" >"$log" 2>&1
  rc=$?
  runs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  if [ $rc -eq 0 ]; then
    echo "fuzz $t: ${runs:-0} inputs in ${seconds} s, no finding (corpus $(ls "$corpus" | wc -l) files)"
    passed=$((passed + 1))
  else
    echo "fuzz $t: FINDING (exit $rc) after ${runs:-?} inputs; see $log and $BUILD/artifacts/"
    grep -m3 -E "ERROR|SUMMARY|deadly signal|timeout" "$log" | sed 's/^/  /'
    failed=$((failed + 1))
  fi
done
echo "fuzz summary:"
printf '  Passed: %d\n  Failed: %d\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
