//===- Checks.cpp - operand checks and shape rules of both backends -------===//

#include "Checks.h"

#include <algorithm>

namespace tessera {
namespace rt {
namespace detail {

void fail(const char *op, const std::string &message) {
  throw Error(std::string(op) + ": " + message);
}

void requireDefined(const Tensor &t, const char *op, const char *what) {
  if (!t.defined())
    fail(op, std::string(what) + " is an undefined (or released) tensor");
}

void requireFloat(const Tensor &t, const char *op, const char *what) {
  requireDefined(t, op, what);
  if (!isFloat(t.dtype()))
    fail(op, std::string(what) + " must be f32 or f64, got " +
                 dtypeName(t.dtype()));
}

void requireSameDType(const Tensor &a, const Tensor &b, const char *op) {
  if (a.dtype() != b.dtype())
    fail(op, std::string("operands have different dtypes ") +
                 dtypeName(a.dtype()) + " and " + dtypeName(b.dtype()));
}

void requireSameShape(const Tensor &a, const Tensor &b, const char *op) {
  if (a.shape() != b.shape())
    fail(op, "operands have different shapes " + shapeToString(a.shape()) +
                 " and " + shapeToString(b.shape()));
}

int64_t normalizeAxis(int64_t axis, int64_t rank, const char *op) {
  if (axis < -rank || axis >= rank)
    fail(op, "axis " + std::to_string(axis) + " out of range for rank " +
                 std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

double scalarArg(const Tensor &t, const char *op, const char *what) {
  requireDefined(t, op, what);
  if (t.numel() != 1)
    fail(op, std::string(what) + " must have one element, got shape " +
                 shapeToString(t.shape()));
  return item(t);
}

std::vector<int64_t> contiguousStrides(const Shape &shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::vector<int64_t> broadcastStrides(const Shape &in, const Shape &out) {
  std::vector<int64_t> own = contiguousStrides(in);
  std::vector<int64_t> strides(out.size(), 0);
  size_t shift = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    strides[shift + i] = in[i] == 1 ? 0 : own[i];
  return strides;
}

Shape broadcastShapesFor(const Shape &a, const Shape &b, const char *op) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Aligned to the right: dimension i of the result.
    int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (da != db && da != 1 && db != 1)
      fail(op, "shapes " + shapeToString(a) + " and " + shapeToString(b) +
                   " do not broadcast: dimension " + std::to_string(i) +
                   " of the result is " + std::to_string(da) + " vs " +
                   std::to_string(db));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

AxisSplit splitAt(const Shape &shape, int64_t axis) {
  AxisSplit s;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < axis)
      s.outer *= shape[i];
    else if (i == axis)
      s.size = shape[i];
    else
      s.inner *= shape[i];
  }
  return s;
}

std::pair<int64_t, int64_t> layerNormShape(const Tensor &x,
                                           const Tensor &weight, int64_t axis,
                                           const char *name,
                                           int64_t *normAxis) {
  int64_t a = normalizeAxis(axis, x.rank(), name);
  *normAxis = a;
  Shape normalised(x.shape().begin() + a, x.shape().end());
  if (weight.shape() != normalised)
    fail(name, "weight of shape " + shapeToString(weight.shape()) +
                   " does not match the normalised dims " +
                   shapeToString(normalised) + " of " +
                   shapeToString(x.shape()));
  int64_t rows = 1;
  for (int64_t d = 0; d < a; ++d)
    rows *= x.shape()[d];
  return {rows, shapeNumel(normalised)};
}

int64_t concatShape(const std::vector<Tensor> &inputs, int64_t axis,
                    const char *name, Shape &outShape) {
  if (inputs.empty())
    fail(name, "needs at least one input");
  for (const Tensor &t : inputs)
    requireDefined(t, name, "input");
  const Tensor &first = inputs.front();
  int64_t a = normalizeAxis(axis, first.rank(), name);
  outShape = first.shape();
  outShape[a] = 0;
  for (const Tensor &t : inputs) {
    requireSameDType(first, t, name);
    bool ok = t.rank() == first.rank();
    for (int64_t d = 0; ok && d < t.rank(); ++d)
      ok = d == a || t.shape()[d] == first.shape()[d];
    if (!ok)
      fail(name, "shapes " + shapeToString(first.shape()) + " and " +
                     shapeToString(t.shape()) +
                     " differ outside the concatenation axis " +
                     std::to_string(a));
    outShape[a] += t.shape()[a];
  }
  return a;
}

} // namespace detail
} // namespace rt
} // namespace tessera
