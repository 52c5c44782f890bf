//===- CudaRuntime.h - the CUDA backend's shared state (private) -*- C++
//-*-===//
//
// The device context (GPU, streams, cuBLASLt handle, deferred-error record),
// error checks that name the failing call or kernel, and the small helpers
// the .cu and .cpp files of runtime/cuda share. Not installed: only the
// backend's own sources include it. Host-only C++ (no device code), so that
// g++-compiled files (Tensor.cpp, Matmul.cpp, Comm.cpp) include it too.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_CUDA_CUDARUNTIME_H
#define TESSERA_RUNTIME_CUDA_CUDARUNTIME_H

#include "tessera/runtime/Cuda.h"
#include "tessera/runtime/Tensor.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace tessera {
namespace rt {
namespace cuda {

/// What a kernel found wrong with its data (an out-of-range index, a bad
/// label): written by the first failing thread, read by the host at the
/// next synchronisation point. GPU kernels cannot throw, and checking
/// indices on the host would cost a copy and a sync per op.
enum class DeviceErrorCode : int32_t {
  none = 0,
  gatherIndex,
  embeddingIndex,
  crossEntropyLabel,
  adamwStep,
};
struct DeviceErrorRecord {
  int32_t code; ///< DeviceErrorCode; 0 while nothing failed
  int32_t pad;
  int64_t value;    ///< the offending index / label / step
  int64_t position; ///< its position in the index tensor
  int64_t bound;    ///< the valid range is [0, bound)
  int64_t extra;    ///< ignore_index for labels
};

struct Context {
  int device = -1;
  cudaStream_t compute = nullptr; ///< every kernel, copy and GEMM
  cudaStream_t comm = nullptr;    ///< NCCL collectives
  /// NCCL send/recv: their own stream, so that a send waiting for its
  /// receiver never holds up a collective queued after it (MPI's Isend
  /// never blocks either).
  cudaStream_t p2p = nullptr;
  void *cublasLt = nullptr;  ///< cublasLtHandle_t (kept opaque here)
  void *workspace = nullptr; ///< cuBLASLt workspace
  size_t workspaceBytes = 0;
  DeviceErrorRecord *errors = nullptr; ///< device memory
  bool syncEachOp = false; ///< TESSERA_CUDA_SYNC=1: sync after every launch
  /// TESSERA_CUDA_POISON=1: new tensor storage is filled with 0xff bytes
  /// (NaN for floats), so that tests see elements a kernel failed to write.
  bool poison = false;
  MatmulPrecision precision = MatmulPrecision::fp32;
  /// TESSERA_CUDA_PROFILE=1: GPU time per op (Profile.cpp).
  bool profile = false;
};

/// The context, set up on first use (device 0 unless initDevice chose one).
/// Throws Error("no CUDA device: ...") when there is no usable GPU.
Context &ctx();
/// True once ctx() succeeded (the allocator and teardown paths ask).
bool contextReady();

/// Throws Error("<what>: <CUDA's error name>: <string>") unless rc is
/// cudaSuccess.
void check(cudaError_t rc, const std::string &what);
/// After a launch: launch errors name `kernel` (and with TESSERA_CUDA_SYNC=1
/// so do execution errors, found by a sync right away).
void checkLaunch(const char *kernel);
/// TESSERA_CUDA_PROFILE=1 (Profile.cpp): after each launch on the compute
/// stream, an event named by the op; profileReport prints the GPU time per
/// op name to stderr (at exit: setUp registers it).
void profileMark(const std::string &name);
void profileReport();
/// Reads the deferred-error record (syncs the compute stream) and throws
/// the error it holds, naming the op.
void checkDeviceErrors();

/// Threads per block of the elementwise kernels, and their grid size for n
/// elements (grid-stride loops cover the rest).
constexpr int kBlock = 256;
int gridFor(int64_t n);

/// The device pointer of a cuda tensor, checked (the op and operand name
/// an error). Host tensors are moved with toDevice by the ops' entry.
template <typename T> const T *dptr(const Tensor &t) {
  return static_cast<const T *>(t.deviceData());
}
template <typename T> T *dptrMut(Tensor &t) {
  return static_cast<T *>(t.deviceData());
}

/// An op's operand on the device: itself, or a copy when it is a host
/// tensor (host constants built by tests or by hand-written programs).
Tensor onDevice(const Tensor &t);

/// Copies `rows` runs of `runBytes` from src (run i at i * srcPitch) to dst
/// (at i * dstPitch) on the compute stream; names `what` on failure.
void copy2D(void *dst, int64_t dstPitch, const void *src, int64_t srcPitch,
            int64_t runBytes, int64_t rows, const char *what);

/// f32 values converted to bf16 (matmul's bf16 mode); n elements.
void convertToBf16(const float *src, void *dst, int64_t n);

} // namespace cuda
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_CUDA_CUDARUNTIME_H
