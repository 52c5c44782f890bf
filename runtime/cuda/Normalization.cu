//===- Normalization.cu - row kernels, reductions, optimizers (CUDA) ------===//
//
// softmax / log_softmax, layer_norm, cross-entropy fused with softmax, their
// gradients, reduce_sum/mean/max, SGD, AdamW and the global gradient norm.
//
// Row ops run one thread block per row (rows are the normalised axis, made
// the last one by a transpose when it is not). Sums accumulate in double,
// as the CPU backend's, so that f32 results do not depend on the row length
// or the reduction tree; the tree is fixed by the thread layout, so results
// are deterministic run to run. Column reductions (bias gradients, layer
// norm's weight gradient) write per-block partial sums that a second kernel
// adds in a fixed order instead of using atomics, for the same reason.
// Hyperparameters and the step counter are read on the device, so an
// optimizer step never waits for the host.
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Cuda.h"
#include "tessera/runtime/Ops.h"

#include "DeviceUtil.cuh"

#include <limits>

namespace tessera {
namespace rt {
using namespace detail;
using namespace cuda;

namespace {

constexpr int kRowBlock = 256;

int rowGrid(int64_t rows, const char *name) {
  if (rows > std::numeric_limits<int>::max())
    fail(name, "too many rows (" + std::to_string(rows) + ")");
  return static_cast<int>(rows);
}

//===----------------------------------------------------------------------===//
// softmax / log_softmax
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void softmaxKernel(const T *x, T *y, int64_t d, bool logSoftmax) {
  const T *in = x + blockIdx.x * d;
  T *out = y + blockIdx.x * d;
  T mx = blockRowMax(in, d);
  double sum = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
    sum += static_cast<double>(elem::exp(in[i] - mx));
  sum = blockReduce(sum, SumOp(), 0.0);
  if (logSoftmax) {
    T shift = static_cast<T>(static_cast<double>(mx) + ::log(sum));
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
      out[i] = in[i] - shift;
  } else {
    T inv = static_cast<T>(1.0 / sum);
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
      out[i] = elem::exp(in[i] - mx) * inv;
  }
}

template <typename T>
__global__ void softmaxGradKernel(const T *y, const T *dy, T *dx, int64_t d,
                                  bool logSoftmax) {
  int64_t base = blockIdx.x * d;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
    sum += logSoftmax ? static_cast<double>(dy[base + i])
                      : static_cast<double>(dy[base + i]) * y[base + i];
  T s = static_cast<T>(blockReduce(sum, SumOp(), 0.0));
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    int64_t k = base + i;
    // softmax: dx = y * (dy - sum(dy * y)); log: dx = dy - exp(y) sum(dy)
    dx[k] = logSoftmax ? dy[k] - elem::exp(y[k]) * s : y[k] * (dy[k] - s);
  }
}

/// The permutation that moves `axis` last, and its inverse.
std::vector<int64_t> axisLastPerm(int64_t rank, int64_t axis) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  return perm;
}
std::vector<int64_t> inversePerm(const std::vector<int64_t> &perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inv[perm[i]] = static_cast<int64_t>(i);
  return inv;
}

/// Runs a last-axis row op on `inputs` (same shape) along `axis`; a
/// non-last axis goes through transposes (the model only uses the last).
template <typename Launch>
Tensor alongAxis(const std::vector<Tensor> &inputs, int64_t axis,
                 Launch launchRows) {
  const Tensor &x = inputs.front();
  AxisSplit s = splitAt(x.shape(), axis);
  if (s.inner == 1) {
    Tensor out(x.shape(), x.dtype());
    if (x.numel())
      launchRows(inputs, out, s.outer, s.size);
    return out;
  }
  std::vector<int64_t> perm = axisLastPerm(x.rank(), axis);
  std::vector<Tensor> moved;
  for (const Tensor &t : inputs)
    moved.push_back(transpose(t, perm));
  Tensor out(moved.front().shape(), x.dtype());
  if (x.numel())
    launchRows(moved, out, s.outer * s.inner, s.size);
  return transpose(out, inversePerm(perm));
}

Tensor softmaxImpl(const Tensor &xIn, int64_t axis, bool logSoftmax,
                   const char *name) {
  int64_t a = softmaxAxis(xIn, axis, name);
  Tensor x = onDevice(xIn);
  return alongAxis(
      {x}, a,
      [&](const std::vector<Tensor> &in, Tensor &out, int64_t rows, int64_t d) {
        dispatchFloat(x.dtype(), name, [&](auto tag) {
          using T = decltype(tag);
          launch(name, softmaxKernel<T>, rowGrid(rows, name), kRowBlock, 0,
                 dptr<T>(in[0]), dptrMut<T>(out), d, logSoftmax);
        });
      });
}

Tensor softmaxGradImpl(const Tensor &outputIn, const Tensor &gradIn,
                       int64_t axis, bool logSoftmax, const char *name) {
  int64_t a = softmaxGradAxis(outputIn, gradIn, axis, name);
  Tensor output = onDevice(outputIn), grad = onDevice(gradIn);
  return alongAxis(
      {output, grad}, a,
      [&](const std::vector<Tensor> &in, Tensor &out, int64_t rows, int64_t d) {
        dispatchFloat(output.dtype(), name, [&](auto tag) {
          using T = decltype(tag);
          launch(name, softmaxGradKernel<T>, rowGrid(rows, name), kRowBlock, 0,
                 dptr<T>(in[0]), dptr<T>(in[1]), dptrMut<T>(out), d,
                 logSoftmax);
        });
      });
}

//===----------------------------------------------------------------------===//
// Column reductions: out[o, c] = sum_r f(o, r, c) over an [O][R][C] space
//===----------------------------------------------------------------------===//

constexpr int kColTile = 32; // columns per block (one warp wide)
constexpr int kColRows = 8;  // row lanes per block
constexpr int kMaxRowParts = 64;

/// Stage 1: block (x: column tile, y: row part, z: outer) sums its rows of
/// its 32 columns into partial[o][part][c].
template <typename F, typename A>
__global__ void colPartialKernel(int64_t R, int64_t C, int parts, F f,
                                 A *partial, A identity) {
  __shared__ A tile[kColRows][kColTile];
  int64_t c = blockIdx.x * static_cast<int64_t>(kColTile) + threadIdx.x;
  int part = blockIdx.y;
  int64_t o = blockIdx.z;
  int64_t rowsPerPart = (R + parts - 1) / parts;
  int64_t r0 = part * rowsPerPart, r1 = min(R, r0 + rowsPerPart);
  A acc = identity;
  if (c < C)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kColRows)
      acc = f.combine(acc, f(o, r, c));
  tile[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int k = 1; k < kColRows; ++k)
      acc = f.combine(acc, tile[k][threadIdx.x]);
    partial[(o * parts + part) * C + c] = acc;
  }
}

/// Stage 2: the parts of each (o, c) in order; out = finish(sum).
template <typename F, typename A, typename T>
__global__ void colFinalKernel(int64_t O, int64_t C, int parts, F f,
                               const A *partial, T *out, A identity) {
  TESSERA_CUDA_LOOP(e, O * C) {
    int64_t o = e / C, c = e % C;
    A acc = identity;
    for (int p = 0; p < parts; ++p)
      acc = f.combine(acc, partial[(o * parts + p) * C + c]);
    out[e] = f.finish(acc);
  }
}

/// Runs both stages; `partialScratch` is allocated here (cached memory).
template <typename A, typename T, typename F>
void columnReduce(int64_t O, int64_t R, int64_t C, F f, T *out, A identity,
                  const char *name) {
  int parts = static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(kMaxRowParts, R / 64)));
  Tensor partial({O * parts * C},
                 sizeof(A) == 8 ? DType::f64 : DType::f32); // scratch
  dim3 grid(static_cast<unsigned>((C + kColTile - 1) / kColTile),
            static_cast<unsigned>(parts), static_cast<unsigned>(O));
  if (O > 65535)
    fail(name, "too many outer rows for a column reduction");
  colPartialKernel<F, A><<<grid, dim3(kColTile, kColRows), 0, ctx().compute>>>(
      R, C, parts, f, static_cast<A *>(partial.deviceData()), identity);
  checkLaunch(name);
  launch(name, colFinalKernel<F, A, T>, gridFor(O * C), kBlock, 0, O, C, parts,
         f, static_cast<const A *>(partial.deviceData()), out, identity);
}

//===----------------------------------------------------------------------===//
// reduce_sum / reduce_mean / reduce_max
//===----------------------------------------------------------------------===//

/// Row reduction: out[r] over x[r * d .. r * d + d).
template <typename T>
__global__ void rowReduceKernel(const T *x, T *out, int64_t d, ReduceFn kind,
                                double scale) {
  const T *in = x + blockIdx.x * d;
  if (kind == ReduceFn::max) {
    T acc = blockRowMax(in, d);
    if (threadIdx.x == 0)
      out[blockIdx.x] = acc;
    return;
  }
  double acc = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
    acc += static_cast<double>(in[i]);
  acc = blockReduce(acc, SumOp(), 0.0);
  if (threadIdx.x == 0)
    out[blockIdx.x] = static_cast<T>(acc * scale);
}

template <typename T> struct ColSum {
  const T *x;
  double scale;
  __device__ double operator()(int64_t o, int64_t r, int64_t c) const {
    (void)o;
    return static_cast<double>(x[r * cStride + c + o * oStride]);
  }
  int64_t cStride, oStride;
  __device__ double combine(double a, double b) const { return a + b; }
  __device__ T finish(double a) const { return static_cast<T>(a * scale); }
};

template <typename T> struct ColMax {
  const T *x;
  int64_t cStride, oStride;
  __device__ T operator()(int64_t o, int64_t r, int64_t c) const {
    return x[r * cStride + c + o * oStride];
  }
  __device__ T combine(T a, T b) const { return MaxOp()(a, b); }
  __device__ T finish(T a) const { return a; }
};

} // namespace

Tensor detail::reduce(const Tensor &xIn, const std::vector<int64_t> &axes,
                      bool keepdims, ReduceFn kind, const char *name) {
  ReducePlan plan = planReduce(xIn, axes, keepdims, name);
  if (kind == ReduceFn::max)
    checkMaxOverElements(xIn, plan, name);
  const std::vector<bool> &reduced = plan.reduced;
  const Shape &resultShape = plan.resultShape;
  int64_t count = plan.count;
  Tensor x = onDevice(xIn);
  Tensor out(resultShape, x.dtype());
  if (!out.numel())
    return out;
  if (count == 0) { // sum of nothing: 0; mean: 0/0
    return full(resultShape, x.dtype(),
                kind == ReduceFn::mean
                    ? std::numeric_limits<double>::quiet_NaN()
                    : 0.0);
  }
  // Group the dims into runs of reduced / kept (size-1 dims join either).
  std::vector<std::pair<bool, int64_t>> groups; // (reduced, size)
  for (int64_t d = 0; d < x.rank(); ++d) {
    int64_t size = x.shape()[d];
    if (size == 1)
      continue;
    if (!groups.empty() && groups.back().first == reduced[d])
      groups.back().second *= size;
    else
      groups.push_back({reduced[d], size});
  }
  // O x R x C with R the one reduced group, O and C kept; anything else
  // (several reduced groups) is transposed into K x R first.
  int64_t O = 1, R = 1, C = 1;
  bool fits = true;
  int reducedGroups = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].first) {
      ++reducedGroups;
      R = groups[g].second;
    } else if (reducedGroups == 0) {
      O *= groups[g].second;
    } else {
      C *= groups[g].second;
    }
  }
  fits = reducedGroups <= 1;
  Tensor in = x;
  if (!fits) {
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < x.rank(); ++d)
      if (!reduced[d])
        perm.push_back(d);
    for (int64_t d = 0; d < x.rank(); ++d)
      if (reduced[d])
        perm.push_back(d);
    in = transpose(x, perm);
    O = out.numel();
    R = count;
    C = 1;
  }
  double scale =
      kind == ReduceFn::mean ? 1.0 / static_cast<double>(count) : 1.0;
  dispatchFloat(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    if (C == 1) {
      launch(name, rowReduceKernel<T>, rowGrid(O, name), kRowBlock, 0,
             dptr<T>(in), dptrMut<T>(out), R, kind, scale);
    } else if (kind == ReduceFn::max) {
      ColMax<T> f{dptr<T>(in), C, R * C};
      columnReduce<T, T>(O, R, C, f, dptrMut<T>(out), elem::negInfinity<T>(),
                         name);
    } else {
      ColSum<T> f{dptr<T>(in), scale, C, R * C};
      columnReduce<double, T>(O, R, C, f, dptrMut<T>(out), 0.0, name);
    }
  });
  return out;
}

namespace {

//===----------------------------------------------------------------------===//
// layer_norm
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void layerNormKernel(const T *x, const T *w, const T *b, T *y,
                                T *mean, T *rstd, int64_t d, double epsilon) {
  int64_t base = blockIdx.x * d;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
    sum += static_cast<double>(x[base + i]);
  sum = blockReduce(sum, SumOp(), 0.0);
  double mu = d ? sum / d : 0.0;
  // Two passes (the row is in L1/L2): no cancellation in E[x^2] - E[x]^2.
  double sq = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    double c = x[base + i] - mu;
    sq += c * c;
  }
  sq = blockReduce(sq, SumOp(), 0.0);
  double inv = 1.0 / ::sqrt((d ? sq / d : 0.0) + epsilon);
  T m = static_cast<T>(mu), s = static_cast<T>(inv);
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = m;
    rstd[blockIdx.x] = s;
  }
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    T v = (x[base + i] - m) * s * w[i];
    y[base + i] = b ? v + b[i] : v;
  }
}

/// dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat)) per row.
template <typename T>
__global__ void layerNormGradKernel(const T *g, const T *x, const T *w,
                                    const T *mean, const T *rstd, T *dx,
                                    int64_t d) {
  int64_t base = blockIdx.x * d;
  T m = mean[blockIdx.x], s = rstd[blockIdx.x];
  double sumG = 0, sumGX = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    T xhat = (x[base + i] - m) * s;
    double gw = static_cast<double>(g[base + i]) * w[i];
    sumG += gw;
    sumGX += gw * xhat;
  }
  sumG = blockReduce(sumG, SumOp(), 0.0);
  sumGX = blockReduce(sumGX, SumOp(), 0.0);
  T meanG = static_cast<T>(sumG / d), meanGX = static_cast<T>(sumGX / d);
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    T xhat = (x[base + i] - m) * s;
    dx[base + i] = s * (g[base + i] * w[i] - meanG - xhat * meanGX);
  }
}

/// dweight (sum of g * xhat) or dbias (sum of g) over rows.
template <typename T> struct LayerNormParamGrad {
  const T *g, *x, *mean, *rstd;
  bool weight;
  __device__ double operator()(int64_t, int64_t r, int64_t c) const {
    T gv = g[r * cols + c];
    if (!weight)
      return static_cast<double>(gv);
    T xhat = (x[r * cols + c] - mean[r]) * rstd[r];
    return static_cast<double>(gv) * xhat;
  }
  int64_t cols;
  __device__ double combine(double a, double b) const { return a + b; }
  __device__ T finish(double a) const { return static_cast<T>(a); }
};

//===----------------------------------------------------------------------===//
// Cross-entropy fused with softmax
//===----------------------------------------------------------------------===//

/// log(sum(exp(row))) of a row of c values, by the whole block (every
/// thread gets it): max first, then the sum of exp(x - max) in double; a row
/// whose max is infinite gives that infinity.
template <typename T>
__device__ double blockLogSumExp(const T *row, int64_t c) {
  T mx = blockRowMax(row, c);
  double sum = 0;
  for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
    sum += ::exp(static_cast<double>(row[i] - mx));
  sum = blockReduce(sum, SumOp(), 0.0);
  return isinf(static_cast<double>(mx)) ? static_cast<double>(mx)
                                        : mx + ::log(sum);
}

/// Per row: loss = logsumexp(row) - row[label] (0 for ignored labels) into
/// rowLoss (double), label checks into the error record.
template <typename T, typename I>
__global__ void crossEntropyRowKernel(const T *logits, const I *labels,
                                      double *rowLoss, int64_t c,
                                      int64_t ignoreIndex,
                                      DeviceErrorRecord *errors) {
  int64_t r = blockIdx.x;
  int64_t label = labels[r];
  if (label == ignoreIndex) {
    if (threadIdx.x == 0)
      rowLoss[r] = 0;
    return;
  }
  if (label < 0 || label >= c) {
    if (threadIdx.x == 0) {
      reportError(errors, DeviceErrorCode::crossEntropyLabel, label, r, c,
                  ignoreIndex);
      rowLoss[r] = 0;
    }
    return;
  }
  const T *row = logits + r * c;
  double lse = blockLogSumExp(row, c);
  if (threadIdx.x == 0)
    rowLoss[r] = lse - static_cast<double>(row[label]);
}

/// One block: the sum of the row losses (fixed order) and the count of
/// labels that are not ignored; writes the reduced loss.
template <typename T, typename I>
__global__ void crossEntropyFinalKernel(const double *rowLoss, const I *labels,
                                        int64_t n, int64_t ignoreIndex,
                                        Reduction reduction, T *out,
                                        double *countOut) {
  double total = 0, count = 0;
  for (int64_t r = threadIdx.x; r < n; r += blockDim.x) {
    total += rowLoss[r];
    count += labels[r] != ignoreIndex ? 1.0 : 0.0;
  }
  total = blockReduce(total, SumOp(), 0.0);
  count = blockReduce(count, SumOp(), 0.0);
  if (threadIdx.x != 0)
    return;
  if (countOut)
    *countOut = count;
  if (out)
    out[0] =
        static_cast<T>(reduction == Reduction::mean ? total / count : total);
}

template <typename T, typename I>
__global__ void rowLossToOutKernel(const double *rowLoss, T *out, int64_t n) {
  TESSERA_CUDA_LOOP(r, n) { out[r] = static_cast<T>(rowLoss[r]); }
}

/// Per row: (softmax - onehot(label)) * scale, scale = grad (per row or
/// the rank-0 grad) divided by the label count for `mean`.
template <typename T, typename I>
__global__ void
crossEntropyGradKernel(const T *logits, const I *labels, const void *grad,
                       int gradDType, bool perRow, const double *count,
                       bool mean, T *out, int64_t c, int64_t ignoreIndex) {
  int64_t r = blockIdx.x;
  const T *row = logits + r * c;
  T *dst = out + r * c;
  int64_t label = labels[r];
  if (label == ignoreIndex || label < 0 || label >= c) {
    for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
      dst[i] = T(0);
    return;
  }
  double scale = loadScalar(grad, gradDType, perRow ? r : 0);
  if (mean)
    scale /= *count;
  double lse = blockLogSumExp(row, c);
  for (int64_t i = threadIdx.x; i < c; i += blockDim.x) {
    double p = ::exp(static_cast<double>(row[i]) - lse);
    // (p - 1) * scale in double: subtracting in T would round twice.
    dst[i] = static_cast<T>((i == label ? p - 1.0 : p) * scale);
  }
}

//===----------------------------------------------------------------------===//
// Optimizers and the global norm
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void sgdKernel(const T *p, const T *g, T *out, int64_t n,
                          const void *lr, int lrType, const void *wd,
                          int wdType) {
  T l = static_cast<T>(loadScalar(lr, lrType));
  double wdValue = loadScalar(wd, wdType);
  T w = static_cast<T>(wdValue);
  TESSERA_CUDA_LOOP(i, n) {
    // torch.optim.SGD: d_p = g + wd * p (only when wd != 0); p -= lr * d_p.
    out[i] = wdValue != 0 ? p[i] - l * (g[i] + w * p[i]) : p[i] - l * g[i];
  }
}

/// The step's scalars, computed once in double as torch.optim does in
/// Python floats: decay, b1, b2, 1-b1, 1-b2, sqrt(bias correction 2), eps,
/// -lr / bias correction 1.
struct AdamScalars {
  const void *step, *lr, *b1, *b2, *eps, *wd;
  int stepT, lrT, b1T, b2T, epsT, wdT;
};

__global__ void adamwScalarsKernel(AdamScalars s, double *out,
                                   DeviceErrorRecord *errors) {
  double t = loadScalar(s.step, s.stepT);
  if (t < 1)
    reportError(errors, DeviceErrorCode::adamwStep, static_cast<int64_t>(t), 0,
                0);
  double lr = loadScalar(s.lr, s.lrT), b1 = loadScalar(s.b1, s.b1T),
         b2 = loadScalar(s.b2, s.b2T), eps = loadScalar(s.eps, s.epsT),
         wd = loadScalar(s.wd, s.wdT);
  out[0] = 1 - lr * wd;
  out[1] = b1;
  out[2] = b2;
  out[3] = 1 - b1;
  out[4] = 1 - b2;
  out[5] = ::sqrt(1 - ::pow(b2, t));
  out[6] = eps;
  out[7] = -(lr / (1 - ::pow(b1, t)));
}

template <typename T>
__global__ void adamwKernel(const T *p, const T *g, const T *m, const T *v,
                            T *op, T *om, T *ov, int64_t n, const double *k) {
  const T decay = static_cast<T>(k[0]), tb1 = static_cast<T>(k[1]),
          tb2 = static_cast<T>(k[2]), oneMinusB1 = static_cast<T>(k[3]),
          oneMinusB2 = static_cast<T>(k[4]), bc2 = static_cast<T>(k[5]),
          te = static_cast<T>(k[6]), negStep = static_cast<T>(k[7]);
  TESSERA_CUDA_LOOP(i, n) {
    // The CPU backend's (torch's) order of operations, in T.
    T pi = p[i] * decay;
    T mi = m[i] * tb1 + g[i] * oneMinusB1;
    T vi = v[i] * tb2 + oneMinusB2 * g[i] * g[i];
    T denom = elem::sqrt(vi) / bc2 + te;
    om[i] = mi;
    ov[i] = vi;
    op[i] = pi + negStep * mi / denom;
  }
}

constexpr int kNormBlocks = 256;

/// Per-block partial sums of squares into partial[blockIdx.x].
template <typename T>
__global__ void sumSquaresKernel(const T *x, int64_t n, double *partial) {
  double acc = 0;
  TESSERA_CUDA_LOOP(i, n) {
    double v = x[i];
    acc += v * v;
  }
  acc = blockReduce(acc, SumOp(), 0.0);
  if (threadIdx.x == 0)
    partial[blockIdx.x] = acc;
}

template <typename T>
__global__ void normFinalKernel(const double *partial, int64_t n, T *out) {
  double acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    acc += partial[i];
  acc = blockReduce(acc, SumOp(), 0.0);
  if (threadIdx.x == 0)
    out[0] = static_cast<T>(::sqrt(acc));
}

template <typename T>
__global__ void clipKernel(const T *x, T *out, int64_t n, const T *norm,
                           double maxNorm) {
  double coef = maxNorm / (static_cast<double>(*norm) + 1e-6);
  T scale = static_cast<T>(coef < 1.0 ? coef : 1.0);
  TESSERA_CUDA_LOOP(i, n) { out[i] = x[i] * scale; }
}

int dtypeCode(const Tensor &t) { return static_cast<int>(t.dtype()); }

/// A one-element operand on the device (host tensors are copied).
Tensor scalarOperand(const Tensor &t, const char *op, const char *what) {
  requireScalar(t, op, what);
  return onDevice(t);
}

} // namespace

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

Tensor softmax(const Tensor &x, int64_t axis) {
  return softmaxImpl(x, axis, false, "softmax");
}

Tensor log_softmax(const Tensor &x, int64_t axis) {
  return softmaxImpl(x, axis, true, "log_softmax");
}

Tensor softmax_grad(const Tensor &output, const Tensor &grad, int64_t axis) {
  return softmaxGradImpl(output, grad, axis, false, "softmax_grad");
}

Tensor log_softmax_grad(const Tensor &output, const Tensor &grad,
                        int64_t axis) {
  return softmaxGradImpl(output, grad, axis, true, "log_softmax_grad");
}

std::tuple<Tensor, Tensor, Tensor> layer_norm(const Tensor &xIn,
                                              const Tensor &weightIn,
                                              const Tensor &biasIn,
                                              int64_t axis, double epsilon) {
  const char *name = "layer_norm";
  LayerNormShape ln = layerNormOperands(xIn, weightIn, biasIn, axis);
  int64_t rows = ln.rows, d = ln.d;
  Tensor x = onDevice(xIn), weight = onDevice(weightIn),
         bias = onDevice(biasIn);
  Tensor y(x.shape(), x.dtype()), mean(ln.statShape, x.dtype()),
      rstd(ln.statShape, x.dtype());
  if (!rows)
    return {y, mean, rstd};
  dispatchFloat(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    launch(name, layerNormKernel<T>, rowGrid(rows, name), kRowBlock, 0,
           d ? dptr<T>(x) : nullptr, d ? dptr<T>(weight) : nullptr,
           bias.defined() && d ? dptr<T>(bias) : nullptr,
           d ? dptrMut<T>(y) : nullptr, dptrMut<T>(mean), dptrMut<T>(rstd), d,
           epsilon);
  });
  return {y, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor>
layer_norm_grad(const Tensor &gradIn, const Tensor &xIn, const Tensor &weightIn,
                const Tensor &meanIn, const Tensor &rstdIn, int64_t axis) {
  const char *name = "layer_norm_grad";
  LayerNormShape ln =
      layerNormGradOperands(gradIn, xIn, weightIn, meanIn, rstdIn, axis);
  int64_t rows = ln.rows, d = ln.d;
  Tensor grad = onDevice(gradIn), x = onDevice(xIn),
         weight = onDevice(weightIn), mean = onDevice(meanIn),
         rstd = onDevice(rstdIn);
  Tensor dx(x.shape(), x.dtype());
  if (!rows || !d)
    return {dx, zeros(weight.shape(), x.dtype()),
            zeros(weight.shape(), x.dtype())};
  Tensor dw(weight.shape(), x.dtype()), db(weight.shape(), x.dtype());
  dispatchFloat(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    launch(name, layerNormGradKernel<T>, rowGrid(rows, name), kRowBlock, 0,
           dptr<T>(grad), dptr<T>(x), dptr<T>(weight), dptr<T>(mean),
           dptr<T>(rstd), dptrMut<T>(dx), d);
    LayerNormParamGrad<T> fw{dptr<T>(grad), dptr<T>(x), dptr<T>(mean),
                             dptr<T>(rstd), true,       d};
    columnReduce<double, T>(1, rows, d, fw, dptrMut<T>(dw), 0.0, name);
    LayerNormParamGrad<T> fb = fw;
    fb.weight = false;
    columnReduce<double, T>(1, rows, d, fb, dptrMut<T>(db), 0.0, name);
  });
  return {dx, dw, db};
}

Tensor softmax_cross_entropy(const Tensor &logitsIn, const Tensor &labelsIn,
                             int64_t ignoreIndex, Reduction reduction) {
  const char *name = "softmax_cross_entropy";
  checkCrossEntropyOperands(logitsIn, labelsIn, name);
  Tensor logits = onDevice(logitsIn), labels = onDevice(labelsIn);
  int64_t n = logits.dim(0), c = logits.dim(1);
  Tensor out(reduction == Reduction::none ? Shape{n} : Shape{}, logits.dtype());
  Tensor rowLoss({std::max<int64_t>(n, 1)}, DType::f64);
  dispatchFloat(logits.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    dispatchIndex(labels.dtype(), name, [&](auto itag) {
      using I = decltype(itag);
      double *rl = dptrMut<double>(rowLoss);
      if (n)
        launch(name, crossEntropyRowKernel<T, I>, rowGrid(n, name), kRowBlock,
               0, dptr<T>(logits), dptr<I>(labels), rl, c, ignoreIndex,
               ctx().errors);
      if (reduction == Reduction::none) {
        if (n)
          launch(name, rowLossToOutKernel<T, I>, gridFor(n), kBlock, 0,
                 static_cast<const double *>(rl), dptrMut<T>(out), n);
      } else {
        launch(name, crossEntropyFinalKernel<T, I>, 1, 1024, 0,
               static_cast<const double *>(rl), n ? dptr<I>(labels) : nullptr,
               n, ignoreIndex, reduction, dptrMut<T>(out),
               static_cast<double *>(nullptr));
      }
    });
  });
  return out;
}

Tensor softmax_cross_entropy_grad(const Tensor &logitsIn,
                                  const Tensor &labelsIn, const Tensor &gradIn,
                                  int64_t ignoreIndex, Reduction reduction) {
  const char *name = "softmax_cross_entropy_grad";
  checkCrossEntropyGrad(logitsIn, labelsIn, gradIn, reduction);
  int64_t n = logitsIn.dim(0), c = logitsIn.dim(1);
  Tensor logits = onDevice(logitsIn), labels = onDevice(labelsIn),
         grad = onDevice(gradIn);
  Tensor out(logits.shape(), logits.dtype());
  if (!n)
    return out;
  Tensor rowLoss({n}, DType::f64), count({1}, DType::f64);
  dispatchFloat(logits.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    dispatchIndex(labels.dtype(), name, [&](auto itag) {
      using I = decltype(itag);
      // The label check (as the forward's) and, for mean, the count.
      launch(name, crossEntropyRowKernel<T, I>, rowGrid(n, name), kRowBlock, 0,
             dptr<T>(logits), dptr<I>(labels), dptrMut<double>(rowLoss), c,
             ignoreIndex, ctx().errors);
      launch(name, crossEntropyFinalKernel<T, I>, 1, 1024, 0,
             static_cast<const double *>(dptr<double>(rowLoss)),
             dptr<I>(labels), n, ignoreIndex, reduction,
             static_cast<T *>(nullptr), dptrMut<double>(count));
      launch(name, crossEntropyGradKernel<T, I>, rowGrid(n, name), kRowBlock, 0,
             dptr<T>(logits), dptr<I>(labels), grad.deviceData(),
             dtypeCode(grad), reduction == Reduction::none, dptr<double>(count),
             reduction == Reduction::mean, dptrMut<T>(out), c, ignoreIndex);
    });
  });
  return out;
}

Tensor detail::sgd(const Tensor &paramIn, const Tensor &gradIn,
                   const SgdScalars &scalars) {
  const char *name = "sgd_update";
  Tensor lr = scalarOperand(scalars.lr, name, "lr");
  Tensor wd = scalarOperand(scalars.weightDecay, name, "weight_decay");
  Tensor param = onDevice(paramIn), grad = onDevice(gradIn);
  Tensor out(param.shape(), param.dtype());
  int64_t n = param.numel();
  if (!n)
    return out;
  dispatchFloat(param.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    launch(name, sgdKernel<T>, gridFor(n), kBlock, 0, dptr<T>(param),
           dptr<T>(grad), dptrMut<T>(out), n, lr.deviceData(), dtypeCode(lr),
           wd.deviceData(), dtypeCode(wd));
  });
  return out;
}

std::tuple<Tensor, Tensor, Tensor>
detail::adamw(const Tensor &paramIn, const Tensor &gradIn, const Tensor &mIn,
              const Tensor &vIn, const AdamwScalars &scalars) {
  const char *name = "adamw_update";
  Tensor step = scalarOperand(scalars.step, name, "step");
  Tensor lr = scalarOperand(scalars.lr, name, "lr");
  Tensor b1 = scalarOperand(scalars.beta1, name, "beta1");
  Tensor b2 = scalarOperand(scalars.beta2, name, "beta2");
  Tensor eps = scalarOperand(scalars.eps, name, "eps");
  Tensor wd = scalarOperand(scalars.weightDecay, name, "weight_decay");
  Tensor param = onDevice(paramIn), grad = onDevice(gradIn), m = onDevice(mIn),
         v = onDevice(vIn);
  Tensor coefficients({8}, DType::f64);
  AdamScalars s{step.deviceData(), lr.deviceData(),  b1.deviceData(),
                b2.deviceData(),   eps.deviceData(), wd.deviceData(),
                dtypeCode(step),   dtypeCode(lr),    dtypeCode(b1),
                dtypeCode(b2),     dtypeCode(eps),   dtypeCode(wd)};
  launch(name, adamwScalarsKernel, 1, 1, 0, s, dptrMut<double>(coefficients),
         ctx().errors);
  Tensor newP(param.shape(), param.dtype()), newM(param.shape(), param.dtype()),
      newV(param.shape(), param.dtype());
  int64_t n = param.numel();
  if (!n)
    return {newP, newM, newV};
  dispatchFloat(param.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    launch(name, adamwKernel<T>, gridFor(n), kBlock, 0, dptr<T>(param),
           dptr<T>(grad), dptr<T>(m), dptr<T>(v), dptrMut<T>(newP),
           dptrMut<T>(newM), dptrMut<T>(newV), n, dptr<double>(coefficients));
  });
  return {newP, newM, newV};
}

Tensor global_norm(const std::vector<Tensor> &tensorsIn) {
  const char *name = "global_norm";
  if (tensorsIn.empty())
    fail(name, "needs at least one tensor");
  std::vector<Tensor> tensors;
  for (const Tensor &t : tensorsIn) {
    requireFloat(t, name, "input");
    tensors.push_back(onDevice(t));
  }
  int64_t k = static_cast<int64_t>(tensors.size());
  Tensor partial({k * kNormBlocks}, DType::f64);
  check(
      cudaMemsetAsync(partial.deviceData(), 0, partial.nbytes(), ctx().compute),
      "global_norm: cudaMemsetAsync");
  double *pp = dptrMut<double>(partial);
  for (int64_t i = 0; i < k; ++i) {
    const Tensor &t = tensors[i];
    if (!t.numel())
      continue;
    dispatchFloat(t.dtype(), name, [&](auto tag) {
      using T = decltype(tag);
      launch(name, sumSquaresKernel<T>, kNormBlocks, kBlock, 0, dptr<T>(t),
             t.numel(), pp + i * kNormBlocks);
    });
  }
  Tensor out({}, tensors.front().dtype());
  dispatchFloat(out.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    launch(name, normFinalKernel<T>, 1, 1024, 0,
           static_cast<const double *>(pp), k * kNormBlocks, dptrMut<T>(out));
  });
  return out;
}

std::vector<Tensor> clip_by_global_norm(const std::vector<Tensor> &tensors,
                                        double maxNorm, Tensor *norm) {
  const char *name = "clip_by_global_norm";
  Tensor total = global_norm(tensors);
  if (norm)
    *norm = total;
  std::vector<Tensor> out;
  for (const Tensor &tIn : tensors) {
    Tensor t = onDevice(tIn);
    Tensor r(t.shape(), t.dtype());
    if (t.numel()) {
      if (t.dtype() != total.dtype())
        fail(name, "tensors of different dtypes");
      dispatchFloat(t.dtype(), name, [&](auto tag) {
        using T = decltype(tag);
        launch(name, clipKernel<T>, gridFor(t.numel()), kBlock, 0, dptr<T>(t),
               dptrMut<T>(r), t.numel(), dptr<T>(total), maxNorm);
      });
    }
    out.push_back(r);
  }
  return out;
}

} // namespace rt
} // namespace tessera
