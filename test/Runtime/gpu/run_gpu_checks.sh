#!/usr/bin/env bash
# Builds the CUDA runtime (runtime/cuda) and runs its GPU checks; for a
# machine with an NVIDIA GPU (CI has none: test/Runtime/cuda-no-gpu.test
# covers that case).
#
#   test/Runtime/gpu/run_gpu_checks.sh [BUILD_DIR] [-- extra cmake args]
#
#   1. TesseraCudaKernelCheck: every op against the CPU runtime on random
#      inputs (f32 1e-5, f64 1e-10, bf16/tf32 GEMMs 1e-2), poisoned outputs.
#   2. The same under TESSERA_CUDA_SYNC=1 (a sync after every kernel).
#   3. TesseraCudaNoGpuProgram: the driver end to end (weights to the GPU,
#      SGD steps, loss back); the loss must fall every step.
#   4. With two or more GPUs and mpirun: the CPU backend's communicator
#      tests (runtime/unittests/CommMpiTest.cpp) on NCCL, two ranks.
#   5. TesseraLlmCudaKernelCheck: the llm extension's CUDA kernels
#      (dialects/llm/runtime/cuda) against its CPU kernels, as in 1 and 2.
#
# CUDA_ARCH (default: the GPU's own, from nvidia-smi) sets
# CMAKE_CUDA_ARCHITECTURES. Exits non-zero on the first failure.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
build=${1:-$src/build-cuda-checks}
shift || true
[[ "${1:-}" == "--" ]] && shift

if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
  echo "run_gpu_checks: no NVIDIA GPU here (nvidia-smi -L failed)" >&2
  exit 1
fi
gpus=$(nvidia-smi -L | wc -l)
if [[ -z "${CUDA_ARCH:-}" ]]; then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1)
  CUDA_ARCH=${cap/./}
  # Hopper and Blackwell: the architecture-specific variants (wgmma, TMA).
  [[ "$CUDA_ARCH" == 90 || "$CUDA_ARCH" == 100 ]] && CUDA_ARCH=${CUDA_ARCH}a
fi
echo "run_gpu_checks: $gpus GPU(s), architecture $CUDA_ARCH, build in $build"

cmake -G Ninja -S "$src/runtime" -B "$build" -DTESSERA_RUNTIME_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" "$@"
start=$(date +%s)
ninja -C "$build" TesseraRuntimeCuda TesseraCudaKernelCheck \
  TesseraCudaNoGpuProgram
echo "run_gpu_checks: built in $(( $(date +%s) - start )) s"

echo "== 1. kernels against the CPU runtime"
"$build/bin/TesseraCudaKernelCheck" --gtest_color=no

echo "== 2. the same, synchronising after every kernel"
TESSERA_CUDA_SYNC=1 "$build/bin/TesseraCudaKernelCheck" --gtest_color=no \
  --gtest_brief=1

echo "== 3. the driver end to end"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/bin/TesseraCudaNoGpuProgram" write-init "$tmp/w.safetensors"
"$build/bin/TesseraCudaNoGpuProgram" --steps 5 --init "$tmp/w.safetensors" \
  --optimizer sgd --lr 0.1 --save "$tmp/out.safetensors" > "$tmp/log.jsonl"
python3 - "$tmp/log.jsonl" <<'PY'
import json, sys
losses = [json.loads(line)["loss"] for line in open(sys.argv[1])]
# w0 = [1, -2, 3, -4], loss = sum(w^2) = 30, each SGD step scales w by 0.8.
expected = [30 * 0.64 ** i for i in range(5)]
assert len(losses) == 5, losses
for got, want in zip(losses, expected):
    assert abs(got - want) <= 1e-5 * want, (losses, expected)
print("driver: losses", " ".join(f"{l:.6f}" for l in losses), "as expected")
PY

if (( gpus >= 2 )) && command -v mpirun > /dev/null; then
  echo "== 4. communicators on NCCL, 2 ranks"
  ninja -C "$build" TesseraCudaCommCheck
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
    "$build/bin/TesseraCudaCommCheck" --gtest_color=no
else
  echo "== 4. skipped: needs two GPUs and mpirun"
fi
echo "== 5. the llm extension's kernels against its CPU kernels"
cmake -G Ninja -S "$src/dialects/llm/runtime/cuda" -B "$build/llm" \
  -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" "$@"
ninja -C "$build/llm" TesseraLlmCudaKernelCheck
"$build/llm/bin/TesseraLlmCudaKernelCheck" --gtest_color=no
TESSERA_CUDA_SYNC=1 "$build/llm/bin/TesseraLlmCudaKernelCheck" \
  --gtest_color=no --gtest_brief=1
echo "run_gpu_checks: all passed"
