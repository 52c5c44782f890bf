//===- Cuda.h - what only the CUDA backend offers ---------------*- C++ -*-===//
//
// Declared for programs and tests that link TesseraRuntimeCuda, whose
// include path alone has this header (runtime/cuda/include): the CPU
// backend does not implement these, and Runtime.h does not include it.
// Everything of Runtime.h works on the CUDA backend unchanged (its tensors
// live in GPU memory; see Tensor.h's Device).
//
// Environment:
//   TESSERA_CUDA_MATMUL=fp32|tf32|bf16  GEMM precision (default fp32)
//   TESSERA_CUDA_SYNC=1   synchronise after every kernel, so that an
//                         execution error names the kernel that caused it
//   TESSERA_CUDA_POISON=1 fill new tensor storage with 0xff bytes (NaN), so
//                         that tests see elements a kernel did not write
//   LOCAL_RANK (or OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID): the GPU of
//                         this process is LOCAL_RANK modulo the GPU count
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_CUDA_H
#define TESSERA_RUNTIME_CUDA_H

#include "tessera/runtime/Tensor.h"

#include <string>
#include <vector>

// cudaStream_t is `struct CUstream_st *` (cuda_runtime.h); declared here so
// that host-only C++ may include this header without the CUDA headers.
struct CUstream_st;

namespace tessera {
namespace rt {

/// How matmul multiplies f32 tensors. fp32: exact f32 products (matches the
/// CPU runtime within rounding). tf32: tensor cores with 10-bit mantissas.
/// bf16: inputs rounded to bf16, products accumulated in f32 (the
/// mixed-precision training setting). f64 tensors always use f64.
enum class MatmulPrecision { fp32, tf32, bf16 };
void setMatmulPrecision(MatmulPrecision precision);
MatmulPrecision matmulPrecision();

/// a @ b + bias (bias of shape [n], added along the last dimension), with
/// GELU (tanh approximation) applied when `gelu`: one cuBLASLt call with a
/// fused epilogue. b is rank 2 (k x n) and a is [..., k] (a Linear layer).
/// The compiler does not emit it yet; it is here for its fusion pass.
Tensor matmul_bias(const Tensor &a, const Tensor &b, const Tensor &bias,
                   bool gelu);

/// sqrt of the sum of squares of every element of every tensor (f32 or
/// f64, accumulated in double): a rank-0 tensor of the first's dtype.
Tensor global_norm(const std::vector<Tensor> &tensors);
/// torch.nn.utils.clip_grad_norm_: every tensor scaled by
/// min(1, maxNorm / (norm + 1e-6)) with norm = global_norm(tensors); the
/// scale is applied on the GPU (no host sync). `norm` receives the norm
/// when not null.
std::vector<Tensor> clip_by_global_norm(const std::vector<Tensor> &tensors,
                                        double maxNorm, Tensor *norm = nullptr);

/// For kernels outside the runtime (dialect extensions): the stream that
/// every kernel, copy and GEMM of the backend runs on, set up on first use.
/// Kernels launched on it are ordered with the core ops, so their outputs
/// need no synchronisation. tessera/runtime/CudaDevice.cuh's launch uses it.
CUstream_st *cudaComputeStream();
/// After such a launch: throws Error("launch of kernel <kernel>: ...") if it
/// failed; with TESSERA_CUDA_SYNC=1 also if the kernel failed to run, and
/// with TESSERA_CUDA_PROFILE=1 its GPU time is reported under `kernel`, as
/// for the backend's own kernels.
void cudaCheckLaunch(const char *kernel);

struct CudaDeviceInfo {
  int device = -1; ///< the ordinal in use
  int count = 0;   ///< GPUs visible to this process
  std::string name;
  int major = 0, minor = 0; ///< compute capability
  int64_t totalBytes = 0;
};
/// Sets up the device if needed; throws Error("no CUDA device: ...").
CudaDeviceInfo cudaDeviceInfo();

} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_CUDA_H
