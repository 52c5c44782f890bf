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

#include <math_constants.h>

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

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

// A first CUDA attention, written for correctness (the CPU kernel is its
// reference, KernelCheck.cpp): one thread per query row (forward, dq) or
// key row (dk, dv), an online softmax in double, no [t, s] matrix. Not
// tuned: no tensor cores and no shared-memory tiles yet (issue 16's GPU
// work replaces it with a tiled sm_90 kernel).

/// The largest head width (d and e) these kernels hold in registers.
constexpr int64_t kMaxHead = 256;
constexpr int kRowsPerBlock = 64;

/// This thread's slice and row of a grid of kRowsPerBlock-row blocks,
/// `rows` rows per slice; false past the end.
__device__ bool sliceAndRow(int64_t slices, int64_t rows, int64_t &slice,
                            int64_t &row) {
  int64_t blocksPerSlice = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  slice = blockIdx.x / blocksPerSlice;
  row = (blockIdx.x % blocksPerSlice) * kRowsPerBlock + threadIdx.x;
  return slice < slices && row < rows;
}

template <typename T>
__global__ void attentionForwardKernel(const T *q, const T *k, const T *v, T *y,
                                       T *lse, int64_t slices, int64_t t,
                                       int64_t s, int64_t d, int64_t e,
                                       double scale, bool causal) {
  int64_t b, i;
  if (!sliceAndRow(slices, t, b, i))
    return;
  const T *qi = q + (b * t + i) * d;
  const T *kb = k + b * s * d, *vb = v + b * s * e;
  double acc[kMaxHead];
  for (int64_t c = 0; c < e; ++c)
    acc[c] = 0;
  double m = -CUDART_INF, l = 0;
  int64_t keys = causal ? (i + 1 < s ? i + 1 : s) : s;
  for (int64_t j = 0; j < keys; ++j) {
    double x = 0;
    for (int64_t a = 0; a < d; ++a)
      x += static_cast<double>(qi[a]) * kb[j * d + a];
    x *= scale;
    double newMax = x > m ? x : m;
    double rescale = ::exp(m - newMax), p = ::exp(x - newMax);
    l = l * rescale + p;
    for (int64_t c = 0; c < e; ++c)
      acc[c] = acc[c] * rescale + p * vb[j * e + c];
    m = newMax;
  }
  for (int64_t c = 0; c < e; ++c)
    y[(b * t + i) * e + c] = static_cast<T>(l > 0 ? acc[c] / l : 0.0);
  lse[b * t + i] = static_cast<T>(l > 0 ? m + ::log(l) : -CUDART_INF);
}

/// D_i = g_i . y_i per query row.
template <typename T>
__global__ void attentionRowDotKernel(const T *g, const T *y, double *dot,
                                      int64_t rows, int64_t e) {
  TESSERA_CUDA_LOOP(r, rows) {
    double sum = 0;
    for (int64_t c = 0; c < e; ++c)
      sum += static_cast<double>(g[r * e + c]) * y[r * e + c];
    dot[r] = sum;
  }
}

/// dq_i = scale sum_j p_ij (g_i . v_j - D_i) k_j, one thread per query row.
template <typename T>
__global__ void
attentionGradQueryKernel(const T *g, const T *q, const T *k, const T *v,
                         const T *lse, const double *dot, T *dq, int64_t slices,
                         int64_t t, int64_t s, int64_t d, int64_t e,
                         double scale, bool causal) {
  int64_t b, i;
  if (!sliceAndRow(slices, t, b, i))
    return;
  const T *qi = q + (b * t + i) * d, *gi = g + (b * t + i) * e;
  const T *kb = k + b * s * d, *vb = v + b * s * e;
  double acc[kMaxHead];
  for (int64_t a = 0; a < d; ++a)
    acc[a] = 0;
  double li = lse[b * t + i], di = dot[b * t + i];
  int64_t keys = causal ? (i + 1 < s ? i + 1 : s) : s;
  for (int64_t j = 0; j < keys; ++j) {
    double x = 0, dp = 0;
    for (int64_t a = 0; a < d; ++a)
      x += static_cast<double>(qi[a]) * kb[j * d + a];
    for (int64_t c = 0; c < e; ++c)
      dp += static_cast<double>(gi[c]) * vb[j * e + c];
    double ds = scale * ::exp(scale * x - li) * (dp - di);
    for (int64_t a = 0; a < d; ++a)
      acc[a] += ds * kb[j * d + a];
  }
  for (int64_t a = 0; a < d; ++a)
    dq[(b * t + i) * d + a] = static_cast<T>(acc[a]);
}

/// dk_j = scale sum_i ds_ij q_i and dv_j = sum_i p_ij g_i, one thread per
/// key row (causal: the queries i >= j).
template <typename T>
__global__ void
attentionGradKeyValueKernel(const T *g, const T *q, const T *k, const T *v,
                            const T *lse, const double *dot, T *dk, T *dv,
                            int64_t slices, int64_t t, int64_t s, int64_t d,
                            int64_t e, double scale, bool causal) {
  int64_t b, j;
  if (!sliceAndRow(slices, s, b, j))
    return;
  const T *kj = k + (b * s + j) * d, *vj = v + (b * s + j) * e;
  const T *qb = q + b * t * d, *gb = g + b * t * e;
  double accK[kMaxHead], accV[kMaxHead];
  for (int64_t a = 0; a < d; ++a)
    accK[a] = 0;
  for (int64_t c = 0; c < e; ++c)
    accV[c] = 0;
  for (int64_t i = causal ? j : 0; i < t; ++i) {
    double x = 0, dp = 0;
    for (int64_t a = 0; a < d; ++a)
      x += static_cast<double>(qb[i * d + a]) * kj[a];
    for (int64_t c = 0; c < e; ++c)
      dp += static_cast<double>(gb[i * e + c]) * vj[c];
    double p = ::exp(scale * x - static_cast<double>(lse[b * t + i]));
    double ds = scale * p * (dp - dot[b * t + i]);
    for (int64_t a = 0; a < d; ++a)
      accK[a] += ds * qb[i * d + a];
    for (int64_t c = 0; c < e; ++c)
      accV[c] += p * gb[i * e + c];
  }
  for (int64_t a = 0; a < d; ++a)
    dk[(b * s + j) * d + a] = static_cast<T>(accK[a]);
  for (int64_t c = 0; c < e; ++c)
    dv[(b * s + j) * e + c] = static_cast<T>(accV[c]);
}

/// Blocks of kRowsPerBlock rows, `rows` per slice, in one grid.
int attentionGrid(int64_t slices, int64_t rows, const char *op) {
  int64_t blocks = slices * ((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  if (blocks > 0x7fffffff)
    fail(op, std::to_string(blocks) + " blocks do not fit one CUDA grid");
  return static_cast<int>(blocks);
}

void requireHeadWidth(const AttentionDims &dims, const char *op) {
  if (dims.d > kMaxHead || dims.e > kMaxHead)
    fail(op, "the CUDA kernel takes head widths up to " +
                 std::to_string(kMaxHead) + ", got " + std::to_string(dims.d) +
                 " and " + std::to_string(dims.e));
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

std::tuple<Tensor, Tensor> attention(const Tensor &qIn, const Tensor &kIn,
                                     const Tensor &vIn, double scale,
                                     bool causal) {
  const char *op = "llm::attention";
  AttentionDims n = attentionOperands(qIn, kIn, vIn, causal, op);
  requireHeadWidth(n, op);
  Tensor q = toDevice(qIn), k = toDevice(kIn), v = toDevice(vIn);
  Tensor y(attentionResultShape(q, n), q.dtype());
  Tensor lse(rowStatShape(q), q.dtype());
  if (n.slices && n.t)
    dispatchFloat(q.dtype(), [&](auto tag) {
      using T = decltype(tag);
      launch(op, attentionForwardKernel<T>, attentionGrid(n.slices, n.t, op),
             kRowsPerBlock, 0, in<T>(q), in<T>(k), in<T>(v), out<T>(y),
             out<T>(lse), n.slices, n.t, n.s, n.d, n.e, scale, causal);
    });
  return {y, lse};
}

std::tuple<Tensor, Tensor, Tensor>
attention_grad(const Tensor &gradIn, const Tensor &qIn, const Tensor &kIn,
               const Tensor &vIn, const Tensor &yIn, const Tensor &lseIn,
               double scale, bool causal) {
  const char *op = "llm::attention_grad";
  AttentionDims n =
      attentionGradOperands(gradIn, qIn, kIn, vIn, yIn, lseIn, causal, op);
  requireHeadWidth(n, op);
  Tensor grad = toDevice(gradIn), q = toDevice(qIn), k = toDevice(kIn),
         v = toDevice(vIn), y = toDevice(yIn), lse = toDevice(lseIn);
  if (!n.slices || !n.t || !n.s)
    return {full(q.shape(), q.dtype(), 0.0), full(k.shape(), k.dtype(), 0.0),
            full(v.shape(), v.dtype(), 0.0)};
  Tensor dq(q.shape(), q.dtype()), dk(k.shape(), k.dtype()),
      dv(v.shape(), v.dtype());
  Tensor dot(Shape{n.slices * n.t}, DType::f64);
  dispatchFloat(q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    launch(op, attentionRowDotKernel<T>, gridFor(n.slices * n.t), kBlock, 0,
           in<T>(grad), in<T>(y), out<double>(dot), n.slices * n.t, n.e);
    launch(op, attentionGradQueryKernel<T>, attentionGrid(n.slices, n.t, op),
           kRowsPerBlock, 0, in<T>(grad), in<T>(q), in<T>(k), in<T>(v),
           in<T>(lse), in<double>(dot), out<T>(dq), n.slices, n.t, n.s, n.d,
           n.e, scale, causal);
    launch(op, attentionGradKeyValueKernel<T>, attentionGrid(n.slices, n.s, op),
           kRowsPerBlock, 0, in<T>(grad), in<T>(q), in<T>(k), in<T>(v),
           in<T>(lse), in<double>(dot), out<T>(dk), out<T>(dv), n.slices, n.t,
           n.s, n.d, n.e, scale, causal);
  });
  return {dq, dk, dv};
}

} // namespace tessera::rt::llm
