//===- Layout.cpp - reshape, transpose, broadcast, slice, split, concat,
//                  gather and its gradient
//                  --------------------------------===//

#include "tessera/runtime/Ops.h"

#include "Kernels.h"

#include <algorithm>
#include <cstring>

namespace tessera {
namespace rt {
using namespace detail;

namespace {

/// Copies the elements of `in`, read with `inStrides` (elements) from
/// `inBase`, into the contiguous `out`. dtype-generic: elements are moved as
/// their C++ type so that the inner loops stay simple copies.
void stridedCopy(const Tensor &in, int64_t inBase,
                 const std::vector<int64_t> &inStrides, Tensor &out) {
  dispatchAll(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *src = in.data<T>() + inBase;
    T *dst = out.data<T>();
    forEachRun<2>(out.shape(), {contiguousStrides(out.shape()), inStrides},
                  [&](const std::array<int64_t, 2> &off, int64_t len,
                      const std::array<int64_t, 2> &s) {
                    T *o = dst + off[0];
                    const T *x = src + off[1];
                    if (s[1] == 1) {
                      std::memcpy(o, x, len * sizeof(T));
                    } else if (s[1] == 0) {
                      for (int64_t i = 0; i < len; ++i)
                        o[i] = *x;
                    } else {
                      for (int64_t i = 0; i < len; ++i)
                        o[i] = x[i * s[1]];
                    }
                  });
  });
}

/// Transposes that move the input's contiguous dimension away from the
/// innermost position read it with a large stride; a plain strided copy
/// then misses cache on every element. This copies in square tiles instead,
/// so each tile's source lines stay in L1. Returns false when the pattern
/// does not apply (the caller falls back to stridedCopy).
bool tiledTranspose(const Tensor &in, const Shape &outShape,
                    const std::vector<int64_t> &inStrides, Tensor &out) {
  // Coalesce output dims that are also adjacent in the input; drop 1s.
  std::vector<int64_t> sizes, strides;
  for (size_t d = 0; d < outShape.size(); ++d) {
    if (outShape[d] == 1)
      continue;
    if (!sizes.empty() && strides.back() == inStrides[d] * outShape[d]) {
      sizes.back() *= outShape[d];
      strides.back() = inStrides[d];
    } else {
      sizes.push_back(outShape[d]);
      strides.push_back(inStrides[d]);
    }
  }
  int64_t n = static_cast<int64_t>(sizes.size());
  if (n < 2 || strides[n - 1] == 1)
    return false;
  int64_t k = -1;
  for (int64_t d = 0; d < n - 1; ++d)
    if (strides[d] == 1)
      k = d;
  if (k < 0 || sizes[n - 1] < 8 || sizes[k] < 8)
    return false;
  std::vector<int64_t> outStrides = contiguousStrides(sizes);
  std::vector<int64_t> others;
  for (int64_t d = 0; d < n - 1; ++d)
    if (d != k)
      others.push_back(d);
  constexpr int64_t kTile = 32;
  dispatchAll(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *src = in.data<T>();
    T *dst = out.data<T>();
    int64_t rows = sizes[k], cols = sizes[n - 1];
    int64_t outRow = outStrides[k], inCol = strides[n - 1];
    std::vector<int64_t> index(others.size(), 0);
    int64_t batches = 1;
    for (int64_t d : others)
      batches *= sizes[d];
    for (int64_t b = 0; b < batches; ++b) {
      int64_t inBase = 0, outBase = 0;
      for (size_t o = 0; o < others.size(); ++o) {
        inBase += index[o] * strides[others[o]];
        outBase += index[o] * outStrides[others[o]];
      }
      for (int64_t i0 = 0; i0 < rows; i0 += kTile)
        for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
          int64_t i1 = std::min(rows, i0 + kTile),
                  j1 = std::min(cols, j0 + kTile);
          for (int64_t i = i0; i < i1; ++i) {
            T *o = dst + outBase + i * outRow;
            const T *x = src + inBase + i;
            for (int64_t j = j0; j < j1; ++j)
              o[j] = x[j * inCol];
          }
        }
      for (size_t o = others.size(); o-- > 0;) {
        if (++index[o] < sizes[others[o]])
          break;
        index[o] = 0;
      }
    }
  });
  return true;
}

} // namespace

Tensor reshape(const Tensor &x, const Shape &shape) {
  checkReshape(x, shape);
  return x.view(shape);
}

Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm) {
  StridedView v = transposeView(x, perm);
  Tensor out(v.shape, x.dtype());
  if (!out.numel() || !tiledTranspose(x, v.shape, v.strides, out))
    stridedCopy(x, 0, v.strides, out);
  return out;
}

Tensor broadcast_to(const Tensor &x, const Shape &shape) {
  checkBroadcastTo(x, shape);
  if (x.shape() == shape)
    return x;
  Tensor out(shape, x.dtype());
  stridedCopy(x, 0, broadcastStrides(x.shape(), shape), out);
  return out;
}

Tensor slice(const Tensor &x, const std::vector<int64_t> &starts,
             const std::vector<int64_t> &limits,
             const std::vector<int64_t> &steps) {
  StridedView v = sliceView(x, starts, limits, steps);
  Tensor out(v.shape, x.dtype());
  if (out.numel())
    stridedCopy(x, v.base, v.strides, out);
  return out;
}

std::vector<Tensor> split(const Tensor &x, int64_t axis,
                          const std::vector<int64_t> &sizes) {
  int64_t a = splitAxis(x, axis, sizes);
  AxisPieces p = axisPieces(x.shape(), a, sizes, dtypeSize(x.dtype()));
  const char *src = static_cast<const char *>(x.rawData());
  std::vector<Tensor> pieces;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Tensor piece(p.shapes[i], x.dtype());
    int64_t run = p.runs[i];
    char *dst = piece.numel() ? static_cast<char *>(piece.rawData()) : nullptr;
    for (int64_t o = 0; o < p.outer && run; ++o)
      std::memcpy(dst + o * run, src + o * p.pitch + p.offsets[i], run);
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

Tensor concat(const std::vector<Tensor> &inputs, int64_t axis) {
  auto [outShape, a] = concatShape(inputs, axis, "concat");
  const Tensor &first = inputs.front();
  Tensor out(outShape, first.dtype());
  if (!out.numel())
    return out;
  AxisPieces p = axisPieces(outShape, a, inputs, dtypeSize(first.dtype()));
  char *dst = static_cast<char *>(out.rawData());
  for (size_t i = 0; i < inputs.size(); ++i) {
    int64_t run = p.runs[i];
    if (!run)
      continue;
    const char *src = static_cast<const char *>(inputs[i].rawData());
    for (int64_t o = 0; o < p.outer; ++o)
      std::memcpy(dst + o * p.pitch + p.offsets[i], src + o * run, run);
  }
  return out;
}

Tensor gather(const Tensor &data, const Tensor &indices, int64_t axis) {
  const char *name = "gather";
  int64_t a;
  Tensor out(gatherShape(data, indices, axis, &a), data.dtype());
  AxisSplit s = splitAt(data.shape(), a);
  int64_t elt = dtypeSize(data.dtype());
  int64_t rowBytes = s.inner * elt;
  int64_t count = indices.numel();
  dispatchIndex(indices.dtype(), name, [&](auto tag) {
    using I = decltype(tag);
    const I *idx = indices.data<I>();
    for (int64_t i = 0; i < count; ++i)
      if (idx[i] < 0 || idx[i] >= s.size)
        fail(name, "index " + std::to_string(idx[i]) + " at position " +
                       std::to_string(i) + " is outside [0, " +
                       std::to_string(s.size) + ") of axis " +
                       std::to_string(a) + " of data " +
                       shapeToString(data.shape()));
    if (!out.numel())
      return;
    const char *src = static_cast<const char *>(data.rawData());
    char *dst = static_cast<char *>(out.rawData());
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < count; ++i)
        std::memcpy(dst + (o * count + i) * rowBytes,
                    src + (o * s.size + idx[i]) * rowBytes, rowBytes);
  });
  return out;
}

Tensor embedding_grad(const Tensor &grad, const Tensor &indices,
                      const Shape &tableShape) {
  const char *name = "embedding_grad";
  checkEmbeddingGrad(grad, indices, tableShape);
  Tensor out = zeros(tableShape, grad.dtype());
  int64_t rows = tableShape[0], cols = tableShape[1];
  dispatchFloat(grad.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T *g = grad.data<T>();
    T *table = out.data<T>();
    dispatchIndex(indices.dtype(), name, [&](auto itag) {
      using I = decltype(itag);
      const I *idx = indices.data<I>();
      for (int64_t i = 0, n = indices.numel(); i < n; ++i) {
        if (idx[i] < 0 || idx[i] >= rows)
          fail(name, "index " + std::to_string(idx[i]) + " at position " +
                         std::to_string(i) + " is outside [0, " +
                         std::to_string(rows) + ")");
        T *dst = table + idx[i] * cols;
        const T *src = g + i * cols;
        for (int64_t c = 0; c < cols; ++c)
          dst[c] += src[c];
      }
    });
  });
  return out;
}

} // namespace rt
} // namespace tessera
