//===- Elementwise.cu - elementwise, broadcast, layout and index kernels --===//
//
// The many small ops of Ops.h on the GPU: unary and binary (numpy
// broadcasting), compare, where, cast, dropout, the layout copies
// (transpose, broadcast_to, slice, split, concat), gather and the embedding
// gradient. Each op checks its operands as the CPU backend does (same
// messages, from the shared common/Checks.h helpers), allocates its result and
// launches one kernel on the compute stream. Broadcasts and layout copies
// share one strided n-d kernel: dimensions are merged on the host first, so
// the per-element index arithmetic covers one to three dimensions in
// practice.
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Ops.h"

#include "DeviceUtil.cuh"
#include "Dropout.h"
#include "ScalarOps.h"

#include <cuda_bf16.h>

namespace tessera {
namespace rt {
using namespace detail;
using namespace cuda;

namespace cuda {

//===----------------------------------------------------------------------===//
// Fill and bf16 conversion (used by Tensor.cpp and Matmul.cpp)
//===----------------------------------------------------------------------===//

template <typename T> __global__ void fillKernel(T *dst, int64_t n, T value) {
  TESSERA_CUDA_LOOP(i, n) { dst[i] = value; }
}

void fillDevice(void *dst, DType dtype, int64_t n, double value) {
  if (n == 0)
    return;
  dispatchAll(dtype, [&](auto tag) {
    using T = decltype(tag);
    launch("fill", fillKernel<T>, gridFor(n), kBlock, 0, static_cast<T *>(dst),
           n, convertFromDouble<T>(value));
  });
}

__global__ void toBf16Kernel(const float *src, __nv_bfloat16 *dst, int64_t n) {
  TESSERA_CUDA_LOOP(i, n) { dst[i] = __float2bfloat16_rn(src[i]); }
}

void convertToBf16(const float *src, void *dst, int64_t n) {
  if (n == 0)
    return;
  launch("to_bf16", toBf16Kernel, gridFor(n), kBlock, 0, src,
         static_cast<__nv_bfloat16 *>(dst), n);
}

} // namespace cuda

namespace {

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

template <typename T, typename Op>
__global__ void unaryKernel(const T *x, T *y, int64_t n, Op op) {
  TESSERA_CUDA_LOOP(i, n) { y[i] = op(x[i]); }
}

//===----------------------------------------------------------------------===//
// Binary with broadcasting, compare, where
//===----------------------------------------------------------------------===//

/// same: both operands have the output's shape (no index arithmetic).
template <typename T, typename U, typename Op>
__global__ void binaryKernel(const T *a, const T *b, U *out, int64_t n,
                             Strided<2> s, bool same, Op op) {
  TESSERA_CUDA_LOOP(i, n) {
    if (same) {
      out[i] = op(a[i], b[i]);
    } else {
      int64_t off[2];
      stridedOffsets(s, i, off);
      out[i] = op(a[off[0]], b[off[1]]);
    }
  }
}

template <typename T, typename U, typename Op>
void launchBinary(const Tensor &a, const Tensor &b, Tensor &out, Op op,
                  const char *name) {
  int64_t n = out.numel();
  if (!n)
    return;
  const Shape &shape = out.shape();
  bool same = a.shape() == shape && b.shape() == shape;
  Strided<2> s;
  if (!same)
    s = makeStrided<2>(shape,
                       {broadcastStrides(a.shape(), shape),
                        broadcastStrides(b.shape(), shape)},
                       name);
  launch(name, binaryKernel<T, U, Op>, gridFor(n), kBlock, 0, dptr<T>(a),
         dptr<T>(b), dptrMut<U>(out), n, s, same, op);
}

template <typename T>
__global__ void whereKernel(const uint8_t *c, const T *a, const T *b, T *out,
                            int64_t n, Strided<3> s) {
  TESSERA_CUDA_LOOP(i, n) {
    int64_t off[3];
    stridedOffsets(s, i, off);
    out[i] = c[off[0]] ? a[off[1]] : b[off[2]];
  }
}

template <typename To, typename From>
__global__ void castKernel(const From *x, To *out, int64_t n) {
  TESSERA_CUDA_LOOP(i, n) { out[i] = convert<To, From>(x[i]); }
}

//===----------------------------------------------------------------------===//
// Dropout (common/Dropout.h's masks, as the CPU backend's)
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void dropoutKernel(const T *x, T *out, uint8_t *mask, int64_t n,
                              uint64_t stream, DropoutPiece piece, double ratio,
                              T scale) {
  TESSERA_CUDA_LOOP(i, n) {
    bool keep = dropoutKeeps(stream, dropoutGlobalIndex(piece, i), ratio);
    mask[i] = keep;
    out[i] = keep ? x[i] * scale : T(0);
  }
}

//===----------------------------------------------------------------------===//
// Layout copies, gather, embedding gradient
//===----------------------------------------------------------------------===//

/// out[i] = in[base + strided offset of i]; T is a same-sized carrier type
/// (the copy is dtype-agnostic).
template <typename T>
__global__ void stridedCopyKernel(const T *in, int64_t base, T *out, int64_t n,
                                  Strided<1> s) {
  TESSERA_CUDA_LOOP(i, n) {
    int64_t off[1];
    stridedOffsets(s, i, off);
    out[i] = in[base + off[0]];
  }
}

/// Calls f(Carrier{}) with an unsigned type of dtype's size.
template <typename F> void dispatchBySize(DType dtype, F &&f) {
  switch (dtypeSize(dtype)) {
  case 1:
    return f(uint8_t{});
  case 4:
    return f(uint32_t{});
  default:
    return f(uint64_t{});
  }
}

void stridedCopy(const Tensor &in, int64_t base,
                 const std::vector<int64_t> &inStrides, Tensor &out,
                 const char *name) {
  int64_t n = out.numel();
  if (!n)
    return;
  Strided<1> s = makeStrided<1>(out.shape(), {inStrides}, name);
  dispatchBySize(in.dtype(), [&](auto tag) {
    using C = decltype(tag);
    launch(name, stridedCopyKernel<C>, gridFor(n), kBlock, 0, dptr<C>(in), base,
           dptrMut<C>(out), n, s);
  });
}

template <typename C, typename I>
__global__ void gatherKernel(const C *data, const I *idx, C *out, int64_t outer,
                             int64_t size, int64_t count, int64_t inner,
                             DeviceErrorRecord *errors) {
  int64_t n = outer * count * inner;
  TESSERA_CUDA_LOOP(e, n) {
    int64_t j = e % inner;
    int64_t i = (e / inner) % count;
    int64_t o = e / (inner * count);
    int64_t k = idx[i];
    if (k < 0 || k >= size) {
      reportError(errors, DeviceErrorCode::gatherIndex, k, i, size);
      out[e] = C(0);
    } else {
      out[e] = data[(o * size + k) * inner + j];
    }
  }
}

template <typename T, typename I>
__global__ void embeddingGradKernel(const T *grad, const I *idx, T *table,
                                    int64_t count, int64_t rows, int64_t cols,
                                    DeviceErrorRecord *errors) {
  TESSERA_CUDA_LOOP(e, count * cols) {
    int64_t i = e / cols, c = e % cols;
    int64_t k = idx[i];
    if (k < 0 || k >= rows) {
      if (c == 0)
        reportError(errors, DeviceErrorCode::embeddingIndex, k, i, rows);
      continue;
    }
    // Repeated tokens add into one row: atomics (sum order not fixed).
    atomicAdd(&table[k * cols + c], grad[e]);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

Tensor detail::unary(const Tensor &xIn, UnaryFn fn, const char *name) {
  requireFloat(xIn, name, "input");
  Tensor x = onDevice(xIn);
  Tensor out(x.shape(), x.dtype());
  if (!x.numel())
    return out;
  elem::visitUnary(fn, [&](auto op) {
    using Op = decltype(op);
    dispatchFloat(x.dtype(), name, [&](auto tag) {
      using T = decltype(tag);
      launch(name, unaryKernel<T, Op>, gridFor(x.numel()), kBlock, 0,
             dptr<T>(x), dptrMut<T>(out), x.numel(), op);
    });
  });
  return out;
}

Tensor detail::binary(const Tensor &aIn, const Tensor &bIn, BinaryFn fn,
                      const char *name) {
  Shape shape = binaryFloatShape(aIn, bIn, name);
  Tensor a = onDevice(aIn), b = onDevice(bIn);
  Tensor out(shape, a.dtype());
  elem::visitBinary(fn, [&](auto op) {
    dispatchFloat(a.dtype(), name, [&](auto tag) {
      using T = decltype(tag);
      launchBinary<T, T>(a, b, out, op, name);
    });
  });
  return out;
}

Tensor compare(Compare predicate, const Tensor &aIn, const Tensor &bIn) {
  const char *name = "compare";
  Shape shape = compareShape(aIn, bIn);
  Tensor a = onDevice(aIn), b = onDevice(bIn);
  Tensor out(shape, DType::i1);
  elem::visitCompare(predicate, [&](auto op) {
    dispatchAll(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      launchBinary<T, uint8_t>(a, b, out, op, name);
    });
  });
  return out;
}

Tensor where(const Tensor &conditionIn, const Tensor &aIn, const Tensor &bIn) {
  const char *name = "where";
  Shape shape = whereShape(conditionIn, aIn, bIn);
  Tensor condition = onDevice(conditionIn), a = onDevice(aIn),
         b = onDevice(bIn);
  Tensor out(shape, a.dtype());
  int64_t n = out.numel();
  if (!n)
    return out;
  Strided<3> s = makeStrided<3>(shape,
                                {broadcastStrides(condition.shape(), shape),
                                 broadcastStrides(a.shape(), shape),
                                 broadcastStrides(b.shape(), shape)},
                                name);
  dispatchBySize(a.dtype(), [&](auto tag) {
    using C = decltype(tag);
    launch(name, whereKernel<C>, gridFor(n), kBlock, 0,
           dptr<uint8_t>(condition), dptr<C>(a), dptr<C>(b), dptrMut<C>(out), n,
           s);
  });
  return out;
}

Tensor cast(const Tensor &xIn, DType to) {
  requireDefined(xIn, "cast", "input");
  Tensor x = onDevice(xIn);
  if (x.dtype() == to)
    return x; // storage is immutable to ops, so sharing it is a copy
  Tensor out(x.shape(), to);
  int64_t n = x.numel();
  if (!n)
    return out;
  dispatchAll(x.dtype(), [&](auto fromTag) {
    using From = decltype(fromTag);
    dispatchAll(to, [&](auto toTag) {
      using To = decltype(toTag);
      launch("cast", castKernel<To, From>, gridFor(n), kBlock, 0, dptr<From>(x),
             dptrMut<To>(out), n);
    });
  });
  return out;
}

std::tuple<Tensor, Tensor> dropout(const Tensor &xIn, double ratio,
                                   int64_t seed,
                                   const std::vector<int64_t> &global,
                                   const std::vector<int64_t> &offsets) {
  const char *name = "dropout";
  DropoutPiece piece = checkDropout(xIn, ratio, global, offsets);
  Tensor x = onDevice(xIn);
  uint64_t stream = dropoutStream(seed);
  Tensor out(x.shape(), x.dtype());
  Tensor mask(x.shape(), DType::i1);
  int64_t n = x.numel();
  if (!n)
    return {out, mask};
  dispatchFloat(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    T scale = dropoutScale<T>(ratio);
    launch(name, dropoutKernel<T>, gridFor(n), kBlock, 0, dptr<T>(x),
           dptrMut<T>(out), dptrMut<uint8_t>(mask), n, stream, piece, ratio,
           scale);
  });
  return {out, mask};
}

Tensor reshape(const Tensor &x, const Shape &shape) {
  checkReshape(x, shape);
  return onDevice(x).view(shape);
}

Tensor transpose(const Tensor &xIn, const std::vector<int64_t> &perm) {
  StridedView v = transposeView(xIn, perm);
  Tensor x = onDevice(xIn);
  Tensor out(v.shape, x.dtype());
  stridedCopy(x, 0, v.strides, out, "transpose");
  return out;
}

Tensor broadcast_to(const Tensor &xIn, const Shape &shape) {
  const char *name = "broadcast_to";
  checkBroadcastTo(xIn, shape);
  Tensor x = onDevice(xIn);
  if (x.shape() == shape)
    return x;
  Tensor out(shape, x.dtype());
  stridedCopy(x, 0, broadcastStrides(x.shape(), shape), out, name);
  return out;
}

Tensor slice(const Tensor &xIn, const std::vector<int64_t> &starts,
             const std::vector<int64_t> &limits,
             const std::vector<int64_t> &steps) {
  StridedView v = sliceView(xIn, starts, limits, steps);
  Tensor x = onDevice(xIn);
  Tensor out(v.shape, x.dtype());
  stridedCopy(x, v.base, v.strides, out, "slice");
  return out;
}

std::vector<Tensor> split(const Tensor &xIn, int64_t axis,
                          const std::vector<int64_t> &sizes) {
  const char *name = "split";
  int64_t a = splitAxis(xIn, axis, sizes);
  Tensor x = onDevice(xIn);
  AxisPieces p = axisPieces(x.shape(), a, sizes, dtypeSize(x.dtype()));
  const char *src =
      x.numel() ? static_cast<const char *>(x.deviceData()) : nullptr;
  std::vector<Tensor> pieces;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Tensor piece(p.shapes[i], x.dtype());
    // One 2-d copy per piece: `outer` runs of runs[i] bytes.
    if (piece.numel())
      copy2D(piece.deviceData(), p.runs[i], src + p.offsets[i], p.pitch,
             p.runs[i], p.outer, name);
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

Tensor concat(const std::vector<Tensor> &inputsIn, int64_t axis) {
  const char *name = "concat";
  auto [outShape, a] = concatShape(inputsIn, axis, name);
  std::vector<Tensor> inputs;
  for (const Tensor &t : inputsIn)
    inputs.push_back(onDevice(t));
  const Tensor &first = inputs.front();
  Tensor out(outShape, first.dtype());
  if (!out.numel())
    return out;
  AxisPieces p = axisPieces(outShape, a, inputs, dtypeSize(first.dtype()));
  char *dst = static_cast<char *>(out.deviceData());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (p.runs[i])
      copy2D(dst + p.offsets[i], p.pitch, inputs[i].deviceData(), p.runs[i],
             p.runs[i], p.outer, name);
  return out;
}

Tensor gather(const Tensor &dataIn, const Tensor &indicesIn, int64_t axis) {
  const char *name = "gather";
  int64_t a;
  Shape outShape = gatherShape(dataIn, indicesIn, axis, &a);
  Tensor data = onDevice(dataIn), indices = onDevice(indicesIn);
  Tensor out(outShape, data.dtype());
  AxisSplit s = splitAt(data.shape(), a);
  int64_t count = indices.numel();
  dispatchIndex(indices.dtype(), name, [&](auto itag) {
    using I = decltype(itag);
    if (!out.numel())
      return;
    dispatchBySize(data.dtype(), [&](auto tag) {
      using C = decltype(tag);
      launch(name, gatherKernel<C, I>, gridFor(out.numel()), kBlock, 0,
             dptr<C>(data), dptr<I>(indices), dptrMut<C>(out), s.outer, s.size,
             count, s.inner, ctx().errors);
    });
  });
  return out;
}

Tensor embedding_grad(const Tensor &gradIn, const Tensor &indicesIn,
                      const Shape &tableShape) {
  const char *name = "embedding_grad";
  checkEmbeddingGrad(gradIn, indicesIn, tableShape);
  Tensor grad = onDevice(gradIn), indices = onDevice(indicesIn);
  Tensor out = zeros(tableShape, grad.dtype());
  int64_t rows = tableShape[0], cols = tableShape[1];
  int64_t n = indices.numel() * cols;
  dispatchFloat(grad.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    dispatchIndex(indices.dtype(), name, [&](auto itag) {
      using I = decltype(itag);
      if (!n)
        return;
      launch(name, embeddingGradKernel<T, I>, gridFor(n), kBlock, 0,
             dptr<T>(grad), dptr<I>(indices), dptrMut<T>(out), indices.numel(),
             rows, cols, ctx().errors);
    });
  });
  return out;
}

//===----------------------------------------------------------------------===//
// firstNonFinite: the driver's check of every step's parameters
//===----------------------------------------------------------------------===//

namespace {
template <typename T>
__global__ void nonFiniteKernel(const T *x, int64_t n, int32_t *flag) {
  // Racing writes all store 1.
  TESSERA_CUDA_LOOP(i, n) {
    if (!isfinite(x[i]))
      *flag = 1;
  }
}
} // namespace

int64_t firstNonFinite(const std::vector<Tensor> &tensors) {
  const char *name = "firstNonFinite";
  if (tensors.empty())
    return -1;
  // One flag per tensor, one copy back for all of them.
  Tensor flags = zeros({static_cast<int64_t>(tensors.size())}, DType::i32);
  for (size_t k = 0; k < tensors.size(); ++k) {
    const Tensor &t = tensors[k];
    if (!t.defined() || !isFloat(t.dtype()) || !t.numel())
      continue;
    Tensor x = onDevice(t);
    dispatchFloat(x.dtype(), name, [&](auto tag) {
      using T = decltype(tag);
      launch(name, nonFiniteKernel<T>, gridFor(x.numel()), kBlock, 0,
             dptr<T>(x), x.numel(), dptrMut<int32_t>(flags) + k);
    });
  }
  std::vector<double> found = toDoubles(flags);
  for (size_t k = 0; k < found.size(); ++k)
    if (found[k] != 0)
      return static_cast<int64_t>(k);
  return -1;
}

} // namespace rt
} // namespace tessera
