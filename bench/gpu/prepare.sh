#!/usr/bin/env bash
# Builds, on the development machine (no GPU), everything the GPU machine
# runs for issue 16's bring-up and benchmark, into one bundle that travels
# with the device call:
#
#   bench/gpu/prepare.sh [BUNDLE_DIR]     (default .gpu, git-ignored)
#
# The GPU machine has CUDA 13 (nvcc, cuBLASLt, NCCL), PyTorch and CMake, but
# none of the Debian packages the runtime links (Open MPI, OpenBLAS,
# nlohmann_json, GoogleTest) and no network. So the programs are built here
# with this machine's nvcc (the same CUDA 13.0) and travel with the shared
# libraries they need that the GPU machine lacks, Open MPI's launcher and
# plugins among them (relocated with OPAL_PREFIX); CUDA's own libraries are
# the GPU machine's. bench/gpu/run_on_gpu.sh unpacks and runs it there.
#
# Contents: bin/ (TesseraCudaKernelCheck, TesseraCudaNoGpuProgram,
# TesseraCudaGemmBench), tiny/
# (test/E2E/target-cuda-gpu.test's 2-layer GPT: model, the single-device
# CUDA program and those of dp2, tp2, pp2 and dp2xtp2), g124/ (GPT-2 124M, batch B, context 1024: the CUDA
# program without its 500 MB weights, which torch_gpt.py init writes there),
# lib/, ompi/. The CPU program's results for the tiny model stay here, in
# build/gpu-prep/cpu (compare_gpu.py reads them).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
bundle=${1:-$src/.gpu}
build=${TESSERA_BUILD_DIR:-$src/build}
B124=${B124:-8}
export PATH=/usr/lib/llvm-22/bin:$PATH
prep=$build/gpu-prep
stage=$prep/stage
rm -rf "$stage" && mkdir -p "$stage"/{bin,tiny,g124,lib,ompi}

ninja -C "$build" tessera-compile TesseraCudaKernelCheck TesseraCudaNoGpuProgram \
  TesseraCudaGemmBench
cp "$build"/bin/TesseraCudaKernelCheck "$build"/bin/TesseraCudaNoGpuProgram \
  "$build"/bin/TesseraCudaGemmBench "$stage/bin/"

# The tiny GPT of test/E2E/target-cuda-gpu.test.
data=$src/examples/gpt/data/train.bin
/usr/bin/python3 "$src/examples/gpt/export.py" --layers 2 --heads 4 \
  --width 64 --context 32 --batch 8 --no-bias --out "$prep/tiny-model" \
  --quiet --no-final
"$src/test/E2E/run_plan.sh" "$build/bin/tessera-compile" \
  "$prep/tiny-model/model.onnx" "$data" "$prep/cpu"
# The CUDA programs: one device, and plans whose ranks share the one GPU
# (their communication then goes through MPI on host copies).
compile_tiny() { # compile_tiny NAME FLAGS...
  local name=$1
  shift
  "$build/bin/tessera-compile" "$prep/tiny-model/model.onnx" \
    -o "$prep/tiny-$name" --quiet --target cuda "$@"
}
tiny_plans="cuda cuda-dp2 cuda-tp2 cuda-pp2 cuda-dp2xtp2"
compile_tiny cuda
compile_tiny cuda-dp2 --devices 2 --plan dp
compile_tiny cuda-tp2 --devices 2 --plan tp
compile_tiny cuda-pp2 --devices 2 --plan pp --micro-batches 2
compile_tiny cuda-dp2xtp2 --devices 4 --plan dp2xtp2
mkdir -p "$stage/tiny/model"
cp "$prep"/tiny-model/{reference.json,init.safetensors} "$stage/tiny/model/"
# A compiled program's directory without its sources and build tree.
copy_program() { # copy_program FROM TO
  mkdir -p "$2"
  tar -C "$1" --exclude=build --exclude='*.cpp' --exclude='*.mlir' \
    --exclude=CMakeLists.txt --exclude=build.log -cf - . | tar -C "$2" -xf -
}
for p in $tiny_plans; do
  copy_program "$prep/tiny-$p" "$stage/tiny/tiny-$p"
done

# GPT-2 124M (examples/gpt's GPT: erf GELU, biases), batch B124.
m124=$prep/gpt2-124m-b$B124
# bench/compile's export of the same model, when there.
[[ -f $build/bench-gpt2-124m-b$B124/model.onnx ]] && m124=$build/bench-gpt2-124m-b$B124
if [[ ! -f $m124/model.onnx ]]; then
  /usr/bin/python3 "$src/examples/gpt/export.py" --layers 12 --heads 12 \
    --width 768 --context 1024 --batch "$B124" --vocab 50257 --seed 1 \
    --no-final --steps 1 --out "$m124" --quiet
fi
"$build/bin/tessera-compile" "$m124/model.onnx" -o "$prep/g124-cuda" --quiet \
  --target cuda
copy_program "$prep/g124-cuda" "$stage/g124"
rm -f "$stage/g124/init.safetensors" # 500 MB: torch_gpt.py init writes it there
cat > "$stage/g124/config.json" <<EOF
{"layers": 12, "heads": 12, "width": 768, "context": 1024, "vocab": 50257,
 "batch": $B124, "dropout": 0.0, "bias": true, "gelu": "erf"}
EOF

# Open MPI (Debian's 4.1, prefix /usr) relocated under ompi/usr.
omp=$stage/ompi/usr
mkdir -p "$omp/bin" "$omp/lib/x86_64-linux-gnu/openmpi/lib" "$omp/share"
cp /usr/bin/orterun /usr/bin/orted "$omp/bin/"
ln -s orterun "$omp/bin/mpirun"
cp -r /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 \
  "$omp/lib/x86_64-linux-gnu/openmpi/lib/"
cp -r /usr/share/openmpi "$omp/share/"

# The libraries those need, less the C library, the C++ runtime (the GPU
# machine's is newer) and CUDA's (the GPU machine's own).
skip='^(linux-vdso|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|ld-linux|libstdc\+\+|libgcc_s|libcuda\.so|libcudart|libcublas|libnccl|libnvidia)'
{
  find "$stage/bin" "$stage/tiny" "$stage/g124" -type f \( -name program -o -path "$stage/bin/*" \)
  echo "$omp/bin/orterun" "$omp/bin/orted"
  find "$omp/lib" -name '*.so'
} | xargs -n1 | sort -u | while read -r f; do
  ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] && continue
  cp -L "$path" "$stage/lib/$name"
done

mkdir -p "$bundle"
rm -f "$bundle"/bundle.tar.xz
tar -C "$stage" -cf - . | xz -T2 -6 > "$bundle/bundle.tar.xz"
echo "prepare: $(du -h "$bundle/bundle.tar.xz" | cut -f1) in $bundle/bundle.tar.xz" \
  "($(ls "$stage/lib" | wc -l) libraries)"
