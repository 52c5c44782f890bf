#!/usr/bin/env bash
# Runs issue 16's GPU steps on the GPU machine, from the bundle that
# bench/gpu/prepare.sh made on the development machine:
#
#   bench/gpu/run_on_gpu.sh BUNDLE_DIR OUT_DIR [STEP...]
#
# Steps (default: all, in this order; each under its own time limit, so
# that one hang does not take the others' results with it):
#   probe     the machine: GPU, OS, C library, CUDA, PyTorch, libraries
#   kernels   TesseraCudaKernelCheck (every op against the CPU runtime),
#             then again with a sync after every kernel
#   driver    TesseraCudaNoGpuProgram: 5 SGD steps of sum(w^2), exact losses
#   tiny      the 2-layer GPT's CUDA programs, one device and each plan
#             whose ranks share the GPU (test/E2E/run_plan.sh's runs: 5
#             AdamW steps, the first-step gradient probe), and PyTorch's
#             float32 reference on the same GPU
#   g124      GPT-2 124M: the CUDA program at each GEMM precision, its GPU
#             time per op (TESSERA_CUDA_PROFILE=1), PyTorch eager and
#             torch.compile; tokens/s and MFU
#   tune      GPT-2 124M's GPU time per op with a sync after every op, and
#             with TESSERA_CUDA_GEMM_TUNE=1 (tf32 and bf16 GEMMs)
#   gemm      TesseraCudaGemmBench: rt::matmul alone on GPT-2 124M's Linear
#             shapes, tf32 and bf16, with its GPU time per op
#   diag      GPT-2 124M's GEMM plans (TESSERA_CUDA_GEMM_LOG=1) beside
#             PyTorch's times for the same shapes; compute-sanitizer's
#             memcheck and racecheck on the kernel checks and the tiny GPT
# Results go to OUT_DIR/results.tar.gz (and the log to OUT_DIR/log.txt);
# bench/gpu/compare_gpu.py reads them on the development machine.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$1 out=$2
shift 2
steps=${*:-probe kernels driver tiny g124 gemm}
work=/tmp/tessera-gpu
res=$out/results
rm -rf "$work" "$res" && mkdir -p "$work" "$res"
tar -C "$work" -xJf "$bundle/bundle.tar.xz" || { echo "bundle: cannot unpack"; exit 1; }
data=$src/examples/gpt/data/train.bin
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1

# CUDA's libraries: the machine's own (toolkit or PyTorch's wheels).
cudadirs=""
for lib in libcudart.so.13 libcublasLt.so.13 libcublas.so.13 libnccl.so.2; do
  f=$(find /usr/local /usr/lib /usr/lib64 /opt -name "$lib" 2>/dev/null | head -1)
  [[ -n $f ]] && cudadirs="$cudadirs:$(dirname "$f")"
done
export LD_LIBRARY_PATH="$work/lib$cudadirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The carried Open MPI, relocated.
export OPAL_PREFIX=$work/ompi/usr
export PATH=$OPAL_PREFIX/bin:$PATH
export OMPI_MCA_mca_base_component_path=$OPAL_PREFIX/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
# The carried libpmix has no plugins; the machine's own are another version.
export PMIX_MCA_mca_base_component_path=$work/no-pmix-plugins
export PMIX_MCA_pcompress_base_silence_warning=1

run() { # run LIMIT NAME CMD...: CMD with its output in $res/NAME.txt
  local limit=$1 name=$2
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$res/$name.txt" 2>&1
  local rc=$?
  echo "-- $name: rc $rc, $((SECONDS - t0)) s"
  tail -n "${TAIL:-6}" "$res/$name.txt"
  return $rc
}

step_probe() {
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
  grep PRETTY /etc/os-release; ldd --version | head -1
  command -v nvcc > /dev/null && nvcc --version | tail -1
  $py -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
  echo "CUDA libraries from: $cudadirs"
  command -v mpirun; mpirun --version | head -1
  for b in "$work"/bin/* "$work"/tiny/tiny-cuda/program "$work"/g124/program; do
    ldd "$b" | grep -i "not found" && echo "  in $b"
  done
  echo "probe done"
}

step_kernels() {
  TAIL=4 run 300 kernels "$work/bin/TesseraCudaKernelCheck" --gtest_color=no
  TESSERA_CUDA_SYNC=1 TAIL=3 run 300 kernels-sync \
    "$work/bin/TesseraCudaKernelCheck" --gtest_color=no --gtest_brief=1
}

step_driver() {
  local d=$work/driver
  mkdir -p "$d"
  "$work/bin/TesseraCudaNoGpuProgram" write-init "$d/w.safetensors"
  run 120 driver "$work/bin/TesseraCudaNoGpuProgram" --steps 5 --init \
    "$d/w.safetensors" --optimizer sgd --lr 0.1 --log "$res/driver.jsonl"
}

plan_runs() { # plan_runs NAME LAUNCH...: run_plan.sh's two runs
  local name=$1
  shift
  mkdir -p "$res/$name"
  run 180 "$name/train" "$@" --data "$data" --steps 5 --optimizer adamw --lr 1e-3 \
    --save "$res/$name/final.safetensors" --log "$res/$name/train.jsonl"
  run 180 "$name/probe" "$@" --data "$data" --steps 1 --optimizer sgd \
    --lr 1048576 --weight-decay 0 --save "$res/$name/probe.safetensors" \
    --log "$res/$name/probe.jsonl"
}

step_tiny() {
  local p
  for p in "$work"/tiny/tiny-cuda*; do
    plan_runs "$(basename "$p")" "$p/run"
  done
  run 300 torchref $py "$src/bench/gpu/torch_gpt.py" reference \
    "$work/tiny/model" "$data" "$res/torchref"
}

g124_init() { # the 124M weights (500 MB: written here rather than carried)
  [[ -f $work/g124/init.safetensors ]] ||
    run 300 g124-init $py "$src/bench/gpu/torch_gpt.py" init \
      "$work/g124/config.json" "$work/g124/init.safetensors"
}

step_g124() {
  local g=$work/g124
  g124_init || return
  for p in fp32 tf32 bf16; do
    TESSERA_CUDA_MATMUL=$p TAIL=2 run 240 "g124-tessera-$p" "$g/run" --data "$data" \
      --steps 12 --optimizer adamw --lr 1e-4 --log "$res/g124-tessera-$p.jsonl"
  done
  # Where the time goes: GPU time per op (runtime/cuda/Profile.cpp).
  TESSERA_CUDA_MATMUL=tf32 TESSERA_CUDA_PROFILE=1 TAIL=30 run 240 \
    g124-tessera-tf32-profile "$g/run" --data "$data" --steps 6 \
    --optimizer adamw --lr 1e-4
  TAIL=1 run 240 g124-torch-eager-math $py "$src/bench/gpu/torch_gpt.py" bench \
    "$g/config.json" "$data" --steps 15
  TAIL=1 run 240 g124-torch-eager-sdpa $py "$src/bench/gpu/torch_gpt.py" bench \
    "$g/config.json" "$data" --steps 15 --attention sdpa
  TAIL=1 run 240 g124-torch-eager-tf32 $py "$src/bench/gpu/torch_gpt.py" bench \
    "$g/config.json" "$data" --steps 15 --precision tf32
  TAIL=1 run 400 g124-torch-compile-sdpa $py "$src/bench/gpu/torch_gpt.py" bench \
    "$g/config.json" "$data" --steps 25 --attention sdpa --compile
}

step_tune() { # the GEMMs of GPT-2 124M: the heuristic's choice against tuning
  local g=$work/g124
  g124_init || return
  # A sync after every op: each op's own time, without host gaps.
  TESSERA_CUDA_SYNC=1 TESSERA_CUDA_MATMUL=tf32 TESSERA_CUDA_PROFILE=1 TAIL=16 \
    run 240 g124-tf32-sync-profile "$g/run" --data "$data" --steps 4 \
    --optimizer adamw --lr 1e-4
  for p in tf32 bf16; do
    TESSERA_CUDA_GEMM_TUNE=1 TESSERA_CUDA_MATMUL=$p TESSERA_CUDA_PROFILE=1 \
      TAIL=16 run 240 "g124-tessera-$p-tuned-profile" "$g/run" --data "$data" \
      --steps 12 --optimizer adamw --lr 1e-4 \
      --log "$res/g124-tessera-$p-tuned.jsonl"
  done
}

step_diag() { # GEMM plans of GPT-2 124M; compute-sanitizer on the runtime
  local g=$work/g124
  g124_init || return
  TESSERA_CUDA_GEMM_LOG=1 TESSERA_CUDA_MATMUL=tf32 TAIL=0 run 240 g124-gemm-log \
    "$g/run" --data "$data" --steps 2 --optimizer adamw --lr 1e-4
  grep "gemm plan" "$res/g124-gemm-log.txt" | sort | uniq -c
  TAIL=20 run 120 torch-gemms $py - <<'PY'
import torch
torch.backends.cuda.matmul.allow_tf32 = True
for n in (2304, 3072, 768):
    a = torch.randn(8192, 768, device="cuda")
    b = torch.randn(768, n, device="cuda")
    for _ in range(3):
        a @ b
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(20):
        a @ b
    e.record()
    torch.cuda.synchronize()
    ms = s.elapsed_time(e) / 20
    print(f"torch tf32 [8192x768]@[768x{n}]: {ms * 1e3:.1f} us, "
          f"{2 * 8192 * 768 * n / ms / 1e9:.1f} TFLOP/s")
PY
  local cs
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  [[ -n $cs ]] || { echo "no compute-sanitizer"; return; }
  TAIL=4 run 300 sanitize-kernels "$cs" --tool memcheck --error-exitcode 9 \
    "$work/bin/TesseraCudaKernelCheck" --gtest_brief=1
  TAIL=4 run 300 sanitize-tiny "$cs" --tool memcheck --error-exitcode 9 \
    "$work/tiny/tiny-cuda/program" --data "$data" --steps 2
  TAIL=4 run 300 racecheck-kernels "$cs" --tool racecheck --error-exitcode 9 \
    "$work/bin/TesseraCudaKernelCheck" --gtest_brief=1
}

step_gemm() { # rt::matmul alone on GPT-2 124M's Linear shapes
  local p
  for p in tf32 bf16; do
    TESSERA_CUDA_MATMUL=$p TESSERA_CUDA_PROFILE=1 TAIL=20 run 120 \
      "gemm-bench-$p" "$work/bin/TesseraCudaGemmBench"
  done
}

for s in $steps; do
  echo "== $s"
  t0=$SECONDS
  "step_$s" > "$res/step-$s.log" 2>&1
  cat "$res/step-$s.log"
  echo "== $s: $((SECONDS - t0)) s"
done
tar -C "$out" -czf "$out/results.tar.gz" results && rm -rf "$res"
