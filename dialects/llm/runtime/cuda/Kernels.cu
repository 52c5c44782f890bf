//===- Kernels.cu - the llm extension's CUDA kernels ----------------------===//
//
// The same functions as runtime/cpu/Kernels.cpp (tessera/llm/Runtime.h) on
// the CUDA backend's tensors, launched on its compute stream so that they
// are ordered with the core ops. Same operand checks (common/Operands.cpp),
// same arithmetic: row sums accumulate in double through the backend's
// deterministic block reduction, so f32 results agree with the CPU kernels
// to rounding. Written against the runtime's public headers only
// (tessera/runtime/CudaDevice.cuh for launching and reducing).
//
//===----------------------------------------------------------------------===//

#include "tessera/llm/Runtime.h"
#include "tessera/runtime/CudaDevice.cuh"

#include "Operands.h"

#include <algorithm>
#include <string>

namespace tessera::rt::llm {

using namespace detail;
using rt::cuda::blockReduce;
using rt::cuda::launch;
using rt::cuda::SumOp;

namespace {

constexpr int kBlock = 256;

/// Blocks of an elementwise kernel over n > 0 elements (grid-stride loops
/// cover the rest).
int gridFor(int64_t n) {
  return static_cast<int>(std::min<int64_t>((n + kBlock - 1) / kBlock, 8192));
}

/// One block per row: the row count must fit a grid.
int rowGrid(int64_t rows, const char *op) {
  if (rows > 0x7fffffff)
    fail(op, std::to_string(rows) + " rows do not fit one CUDA grid");
  return static_cast<int>(rows);
}

template <typename T> const T *in(const Tensor &t) {
  return static_cast<const T *>(t.deviceData());
}
template <typename T> T *out(Tensor &t) {
  return static_cast<T *>(t.deviceData());
}

//===----------------------------------------------------------------------===//
// RMSNorm
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void rmsNormKernel(const T *x, const T *w, T *y, T *rstd, int64_t d,
                              double epsilon) {
  const T *row = x + blockIdx.x * d;
  double sq = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
    sq += static_cast<double>(row[i]) * row[i];
  sq = blockReduce(sq, SumOp(), 0.0);
  T s = static_cast<T>(1.0 / ::sqrt((d ? sq / d : 0.0) + epsilon));
  if (threadIdx.x == 0)
    rstd[blockIdx.x] = s;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
    y[blockIdx.x * d + i] = row[i] * s * w[i];
}

/// dx_j = s g_j w_j - x_j s^3 mean_i(g_i w_i x_i) per row (see the CPU
/// kernel for the derivation).
template <typename T>
__global__ void rmsNormGradKernel(const T *g, const T *x, const T *w,
                                  const T *rstd, T *dx, int64_t d) {
  int64_t base = blockIdx.x * d;
  double s = rstd[blockIdx.x];
  double dot = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
    dot += static_cast<double>(g[base + i]) * w[i] * x[base + i];
  dot = blockReduce(dot, SumOp(), 0.0);
  double c = d ? s * s * s * dot / d : 0.0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
    dx[base + i] = static_cast<T>(s * g[base + i] * w[i] - x[base + i] * c);
}

/// dweight in two deterministic passes: partial[c][i] sums g x s over the
/// rows of chunk c (threads along i, so reads are coalesced), then each
/// column sums its chunks in order.
template <typename T>
__global__ void rmsNormWeightPartialKernel(const T *g, const T *x,
                                           const T *rstd, double *partial,
                                           int64_t rows, int64_t d,
                                           int64_t rowsPerChunk) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= d)
    return;
  int64_t begin = blockIdx.y * rowsPerChunk;
  int64_t end = begin + rowsPerChunk < rows ? begin + rowsPerChunk : rows;
  double acc = 0;
  for (int64_t r = begin; r < end; ++r)
    acc += static_cast<double>(g[r * d + i]) * x[r * d + i] *
           static_cast<double>(rstd[r]);
  partial[blockIdx.y * d + i] = acc;
}

template <typename T>
__global__ void sumChunksKernel(const double *partial, T *dw, int64_t chunks,
                                int64_t d) {
  TESSERA_CUDA_LOOP(i, d) {
    double acc = 0;
    for (int64_t c = 0; c < chunks; ++c)
      acc += partial[c * d + i];
    dw[i] = static_cast<T>(acc);
  }
}

//===----------------------------------------------------------------------===//
// SiLU, SwiGLU
//===----------------------------------------------------------------------===//

template <typename T> __global__ void siluKernel(const T *x, T *y, int64_t n) {
  TESSERA_CUDA_LOOP(i, n) { y[i] = x[i] / (T(1) + exp(-x[i])); }
}

template <typename T>
__global__ void swigluKernel(const T *gate, const T *up, T *y, int64_t n) {
  TESSERA_CUDA_LOOP(i, n) { y[i] = gate[i] / (T(1) + exp(-gate[i])) * up[i]; }
}

//===----------------------------------------------------------------------===//
// RoPE
//===----------------------------------------------------------------------===//

/// Element e of x [rows, t, d]: x * cos + rotate(x) * sin, or with
/// `transpose` x * cos + rotate^T(x * sin) (the CPU kernel's rules).
template <typename T>
__global__ void ropeKernel(const T *x, const T *cos, const T *sin, T *y,
                           int64_t n, int64_t t, int64_t d, bool interleaved,
                           bool transpose) {
  int64_t half = d / 2;
  TESSERA_CUDA_LOOP(e, n) {
    int64_t i = e % d, p = (e / d) % t;
    int64_t j = interleaved ? (i ^ 1) : (i < half ? i + half : i - half);
    bool first = interleaved ? (i % 2 == 0) : (i < half);
    T sign = first ? T(-1) : T(1);
    T xj = x[e - i + j];
    T rotated =
        transpose ? -sign * xj * sin[p * d + j] : sign * xj * sin[p * d + i];
    y[e] = x[e] * cos[p * d + i] + rotated;
  }
}

template <typename T>
__global__ void ropeTablesKernel(T *cos, T *sin, int64_t t, int64_t d,
                                 double theta, bool interleaved) {
  int64_t half = d / 2;
  TESSERA_CUDA_LOOP(e, t * d) {
    int64_t p = e / d, i = e % d;
    int64_t j = interleaved ? i / 2 : i % half;
    double angle = static_cast<double>(p) *
                   ::pow(theta, -2.0 * static_cast<double>(j) / d);
    cos[e] = static_cast<T>(::cos(angle));
    sin[e] = static_cast<T>(::sin(angle));
  }
}

} // namespace

std::tuple<Tensor, Tensor> rms_norm(const Tensor &xIn, const Tensor &weightIn,
                                    double epsilon) {
  const char *op = "llm::rms_norm";
  auto [rows, d] = rmsNormOperands(xIn, weightIn, op);
  Tensor x = toDevice(xIn), weight = toDevice(weightIn);
  Tensor y(x.shape(), x.dtype()), rstd(rowStatShape(x), x.dtype());
  if (!rows)
    return {y, rstd};
  dispatchFloat(x.dtype(), [&, rows = rows, d = d](auto tag) {
    using T = decltype(tag);
    launch(op, rmsNormKernel<T>, rowGrid(rows, op), kBlock, 0, in<T>(x),
           in<T>(weight), out<T>(y), out<T>(rstd), d, epsilon);
  });
  return {y, rstd};
}

std::tuple<Tensor, Tensor> rms_norm_grad(const Tensor &gradIn,
                                         const Tensor &xIn,
                                         const Tensor &weightIn,
                                         const Tensor &rstdIn) {
  const char *op = "llm::rms_norm_grad";
  auto [rows, d] = rmsNormGradOperands(gradIn, xIn, weightIn, rstdIn, op);
  Tensor grad = toDevice(gradIn), x = toDevice(xIn),
         weight = toDevice(weightIn), rstd = toDevice(rstdIn);
  Tensor dx(x.shape(), x.dtype());
  if (!rows || !d)
    return {dx, full(weight.shape(), x.dtype(), 0.0)};
  Tensor dw(weight.shape(), x.dtype());
  // Enough chunks to fill the GPU, each of at least 32 rows.
  int64_t chunks = std::min<int64_t>((rows + 31) / 32, 256);
  int64_t rowsPerChunk = (rows + chunks - 1) / chunks;
  chunks = (rows + rowsPerChunk - 1) / rowsPerChunk;
  Tensor partial(Shape{chunks, d}, DType::f64);
  dispatchFloat(x.dtype(), [&, rows = rows, d = d](auto tag) {
    using T = decltype(tag);
    launch(op, rmsNormGradKernel<T>, rowGrid(rows, op), kBlock, 0, in<T>(grad),
           in<T>(x), in<T>(weight), in<T>(rstd), out<T>(dx), d);
    dim3 grid(static_cast<unsigned>((d + kBlock - 1) / kBlock),
              static_cast<unsigned>(chunks));
    launch(op, rmsNormWeightPartialKernel<T>, grid, kBlock, 0, in<T>(grad),
           in<T>(x), in<T>(rstd), out<double>(partial), rows, d, rowsPerChunk);
    launch(op, sumChunksKernel<T>, gridFor(d), kBlock, 0, in<double>(partial),
           out<T>(dw), chunks, d);
  });
  return {dx, dw};
}

Tensor silu(const Tensor &xIn) {
  const char *op = "llm::silu";
  requireFloat(xIn, op);
  Tensor x = toDevice(xIn);
  Tensor y(x.shape(), x.dtype());
  if (int64_t n = x.numel())
    dispatchFloat(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      launch(op, siluKernel<T>, gridFor(n), kBlock, 0, in<T>(x), out<T>(y), n);
    });
  return y;
}

Tensor swiglu(const Tensor &gateIn, const Tensor &upIn) {
  const char *op = "llm::swiglu";
  swigluOperands(gateIn, upIn, op);
  Tensor gate = toDevice(gateIn), up = toDevice(upIn);
  Tensor y(gate.shape(), gate.dtype());
  if (int64_t n = gate.numel())
    dispatchFloat(gate.dtype(), [&](auto tag) {
      using T = decltype(tag);
      launch(op, swigluKernel<T>, gridFor(n), kBlock, 0, in<T>(gate), in<T>(up),
             out<T>(y), n);
    });
  return y;
}

Tensor rope(const Tensor &xIn, const Tensor &cosIn, const Tensor &sinIn,
            bool interleaved, bool transpose) {
  const char *op = "llm::rope";
  auto [rows, t, d] = ropeOperands(xIn, cosIn, sinIn, op);
  Tensor x = toDevice(xIn), cos = toDevice(cosIn), sin = toDevice(sinIn);
  Tensor y(x.shape(), x.dtype());
  if (int64_t n = x.numel())
    dispatchFloat(x.dtype(), [&, t = t, d = d](auto tag) {
      using T = decltype(tag);
      launch(op, ropeKernel<T>, gridFor(n), kBlock, 0, in<T>(x), in<T>(cos),
             in<T>(sin), out<T>(y), n, t, d, interleaved, transpose);
    });
  return y;
}

std::tuple<Tensor, Tensor> rope_tables(double theta, bool interleaved,
                                       const Shape &shape, DType dtype) {
  const char *op = "llm::rope_tables";
  auto [rows, t, d] = ropeTablesOperands(shape, dtype, op);
  Tensor c(shape, dtype, Device::cuda), s(shape, dtype, Device::cuda);
  if (int64_t n = t * d)
    dispatchFloat(dtype, [&, t = t, d = d](auto tag) {
      using T = decltype(tag);
      launch(op, ropeTablesKernel<T>, gridFor(n), kBlock, 0, out<T>(c),
             out<T>(s), t, d, theta, interleaved);
    });
  return {c, s};
}

Tensor repeat_kv(const Tensor &xIn, int64_t repeats) {
  const char *op = "llm::repeat_kv";
  RepeatKv r = repeatKvOperands(xIn, repeats, op);
  Tensor x = toDevice(xIn);
  Tensor y(r.out, x.dtype());
  if (!r.blocks || !r.blockElems)
    return y;
  // Output block b * repeats + k is input block b: for each k, one strided
  // copy of every block (no kernel of our own).
  size_t bytes = static_cast<size_t>(r.blockElems) * dtypeSize(x.dtype());
  for (int64_t k = 0; k < repeats; ++k) {
    cudaError_t rc = cudaMemcpy2DAsync(
        static_cast<char *>(y.deviceData()) + k * bytes, bytes * repeats,
        x.deviceData(), bytes, bytes, static_cast<size_t>(r.blocks),
        cudaMemcpyDeviceToDevice, cudaComputeStream());
    if (rc != cudaSuccess)
      fail(op, std::string("cudaMemcpy2DAsync: ") + cudaGetErrorName(rc) +
                   ": " + cudaGetErrorString(rc));
  }
  cudaCheckLaunch(op);
  return y;
}

} // namespace tessera::rt::llm
