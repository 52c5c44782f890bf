//===- CudaDevice.cuh - what CUDA kernels outside the runtime use -*- CUDA -*-//
//
// For the .cu files of dialect extensions (dialects/llm/runtime/cuda) and of
// the backend itself: launching on the backend's compute stream with the
// same error reporting and profiling as its own kernels, the grid-stride
// loop and the deterministic block reductions. Only nvcc-compiled files include
// it.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_CUDADEVICE_CUH
#define TESSERA_RUNTIME_CUDADEVICE_CUH

#include "tessera/runtime/Cuda.h"

#include <cuda_runtime.h>

/// Grid-stride loop over [0, n).
#define TESSERA_CUDA_LOOP(i, n)                                                \
  for (int64_t i =                                                             \
           blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;        \
       i < (n); i += static_cast<int64_t>(blockDim.x) * gridDim.x)

namespace tessera {
namespace rt {
namespace cuda {

/// Launches `kernel` on the compute stream (cudaComputeStream) and checks
/// the launch; errors name the kernel by `name` (the op, or the op's
/// kernel). A function, not a macro, so that template kernels need no
/// parentheses.
template <typename... KArgs, typename... Args>
void launch(const char *name, void (*kernel)(KArgs...), dim3 grid, dim3 block,
            size_t sharedBytes, Args &&...args) {
  kernel<<<grid, block, sharedBytes, cudaComputeStream()>>>(
      static_cast<KArgs>(args)...);
  cudaCheckLaunch(name);
}

//===----------------------------------------------------------------------===//
// Block reductions (blockDim.x a multiple of 32, at most 1024)
//===----------------------------------------------------------------------===//

template <typename A, typename Op> __device__ inline A warpReduce(A v, Op op) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}

/// The reduction of every thread's v, returned to all threads of the block.
/// The tree is fixed by the thread layout, so results are deterministic.
template <typename A, typename Op>
__device__ inline A blockReduce(A v, Op op, A identity) {
  __shared__ A partial[32];
  __shared__ A result;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warpReduce(v, op);
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int warps = (blockDim.x + 31) / 32;
    A w = lane < warps ? partial[lane] : identity;
    w = warpReduce(w, op);
    if (lane == 0)
      result = w;
  }
  __syncthreads();
  A out = result;
  __syncthreads(); // partial/result may be reused by the next call
  return out;
}

struct SumOp {
  template <typename A> __device__ A operator()(A a, A b) const {
    return a + b;
  }
};

} // namespace cuda
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_CUDADEVICE_CUH
