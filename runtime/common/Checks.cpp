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

namespace {
/// A float operand (`what`) and its gradient: one dtype, one shape.
void requireGradOf(const Tensor &x, const char *what, const Tensor &grad,
                   const char *op) {
  requireFloat(x, op, what);
  requireFloat(grad, op, "grad");
  requireSameDType(x, grad, op);
  requireSameShape(x, grad, op);
}
} // namespace

int64_t normalizeAxis(int64_t axis, int64_t rank, const char *op) {
  if (axis < -rank || axis >= rank)
    fail(op, "axis " + std::to_string(axis) + " out of range for rank " +
                 std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

void requireScalar(const Tensor &t, const char *op, const char *what) {
  requireDefined(t, op, what);
  if (t.numel() != 1)
    fail(op, std::string(what) + " must have one element, got shape " +
                 shapeToString(t.shape()));
}

double scalarArg(const Tensor &t, const char *op, const char *what) {
  requireScalar(t, op, what);
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

ConcatShape concatShape(const std::vector<Tensor> &inputs, int64_t axis,
                        const char *name) {
  if (inputs.empty())
    fail(name, "needs at least one input");
  for (const Tensor &t : inputs)
    requireDefined(t, name, "input");
  const Tensor &first = inputs.front();
  int64_t a = normalizeAxis(axis, first.rank(), name);
  Shape outShape = first.shape();
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
  return {outShape, a};
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

Shape binaryFloatShape(const Tensor &a, const Tensor &b, const char *name) {
  requireFloat(a, name, "lhs");
  requireFloat(b, name, "rhs");
  requireSameDType(a, b, name);
  return broadcastShapesFor(a.shape(), b.shape(), name);
}

Shape compareShape(const Tensor &a, const Tensor &b) {
  const char *name = "compare";
  requireDefined(a, name, "lhs");
  requireDefined(b, name, "rhs");
  requireSameDType(a, b, name);
  if (a.dtype() == DType::i1)
    fail(name, "operands must be f32, f64, i32 or i64, got i1");
  return broadcastShapesFor(a.shape(), b.shape(), name);
}

Shape whereShape(const Tensor &condition, const Tensor &a, const Tensor &b) {
  const char *name = "where";
  requireDefined(condition, name, "condition");
  requireDefined(a, name, "lhs");
  requireDefined(b, name, "rhs");
  if (condition.dtype() != DType::i1)
    fail(name, std::string("condition must be i1, got ") +
                   dtypeName(condition.dtype()));
  requireSameDType(a, b, name);
  return broadcastShapesFor(
      condition.shape(), broadcastShapesFor(a.shape(), b.shape(), name), name);
}

void checkGeluGrad(const Tensor &x, const Tensor &grad) {
  requireGradOf(x, "input", grad, "gelu_grad");
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

void checkReshape(const Tensor &x, const Shape &shape) {
  requireDefined(x, "reshape", "input");
  if (shapeNumel(shape) != x.numel())
    fail("reshape", "cannot reshape " + shapeToString(x.shape()) + " (" +
                        std::to_string(x.numel()) + " elements) to " +
                        shapeToString(shape));
}

StridedView transposeView(const Tensor &x, const std::vector<int64_t> &perm) {
  const char *name = "transpose";
  requireDefined(x, name, "input");
  if (static_cast<int64_t>(perm.size()) != x.rank())
    fail(name, "perm has " + std::to_string(perm.size()) +
                   " entries for rank " + std::to_string(x.rank()));
  std::vector<bool> seen(x.rank(), false);
  std::vector<int64_t> inStrides = contiguousStrides(x.shape());
  StridedView v;
  v.shape.resize(x.rank());
  v.strides.resize(x.rank());
  for (int64_t i = 0; i < x.rank(); ++i) {
    int64_t p = perm[i];
    if (p < 0 || p >= x.rank() || seen[p])
      fail(name,
           "perm is not a permutation of 0.." + std::to_string(x.rank() - 1));
    seen[p] = true;
    v.shape[i] = x.shape()[p];
    v.strides[i] = inStrides[p];
  }
  return v;
}

StridedView sliceView(const Tensor &x, const std::vector<int64_t> &starts,
                      const std::vector<int64_t> &limits,
                      const std::vector<int64_t> &steps) {
  const char *name = "slice";
  requireDefined(x, name, "input");
  size_t rank = x.shape().size();
  if (starts.size() != rank || limits.size() != rank || steps.size() != rank)
    fail(name, "starts, limits and steps need " + std::to_string(rank) +
                   " entries each");
  std::vector<int64_t> inStrides = contiguousStrides(x.shape());
  StridedView v;
  v.shape.resize(rank);
  v.strides.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (steps[i] < 1 || starts[i] < 0 || starts[i] > limits[i] ||
        limits[i] > x.shape()[i])
      fail(name, "dimension " + std::to_string(i) + " of size " +
                     std::to_string(x.shape()[i]) + ": bad start " +
                     std::to_string(starts[i]) + ", limit " +
                     std::to_string(limits[i]) + ", step " +
                     std::to_string(steps[i]));
    v.shape[i] = (limits[i] - starts[i] + steps[i] - 1) / steps[i];
    v.strides[i] = inStrides[i] * steps[i];
    v.base += starts[i] * inStrides[i];
  }
  return v;
}

void checkBroadcastTo(const Tensor &x, const Shape &shape) {
  const char *name = "broadcast_to";
  requireDefined(x, name, "input");
  if (x.rank() > static_cast<int64_t>(shape.size()) ||
      broadcastShapesFor(x.shape(), shape, name) != shape)
    fail(name, "cannot broadcast " + shapeToString(x.shape()) + " to " +
                   shapeToString(shape));
}

int64_t splitAxis(const Tensor &x, int64_t axis,
                  const std::vector<int64_t> &sizes) {
  const char *name = "split";
  requireDefined(x, name, "input");
  int64_t a = normalizeAxis(axis, x.rank(), name);
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      fail(name, "negative size " + std::to_string(s));
    total += s;
  }
  if (total != x.shape()[a])
    fail(name, "sizes add up to " + std::to_string(total) + ", dimension " +
                   std::to_string(a) + " of " + shapeToString(x.shape()) +
                   " is " + std::to_string(x.shape()[a]));
  return a;
}

AxisPieces axisPieces(const Shape &whole, int64_t axis,
                      const std::vector<int64_t> &sizes, int64_t elemSize) {
  AxisSplit s = splitAt(whole, axis);
  AxisPieces p;
  p.outer = s.outer;
  p.pitch = s.size * s.inner * elemSize;
  int64_t start = 0;
  for (int64_t size : sizes) {
    p.offsets.push_back(start * s.inner * elemSize);
    p.runs.push_back(size * s.inner * elemSize);
    Shape shape = whole;
    shape[axis] = size;
    p.shapes.push_back(std::move(shape));
    start += size;
  }
  return p;
}

AxisPieces axisPieces(const Shape &whole, int64_t axis,
                      const std::vector<Tensor> &inputs, int64_t elemSize) {
  std::vector<int64_t> sizes;
  for (const Tensor &t : inputs)
    sizes.push_back(t.shape()[axis]);
  return axisPieces(whole, axis, sizes, elemSize);
}

Shape gatherShape(const Tensor &data, const Tensor &indices, int64_t axis,
                  int64_t *normAxis) {
  const char *name = "gather";
  requireDefined(data, name, "data");
  requireDefined(indices, name, "indices");
  int64_t a = normalizeAxis(axis, data.rank(), name);
  *normAxis = a;
  Shape outShape(data.shape().begin(), data.shape().begin() + a);
  outShape.insert(outShape.end(), indices.shape().begin(),
                  indices.shape().end());
  outShape.insert(outShape.end(), data.shape().begin() + a + 1,
                  data.shape().end());
  return outShape;
}

void checkEmbeddingGrad(const Tensor &grad, const Tensor &indices,
                        const Shape &tableShape) {
  const char *name = "embedding_grad";
  requireFloat(grad, name, "grad");
  requireDefined(indices, name, "indices");
  if (tableShape.size() != 2)
    fail(name, "table shape must be V x C, got " + shapeToString(tableShape));
  Shape expected = indices.shape();
  expected.push_back(tableShape[1]);
  if (grad.shape() != expected)
    fail(name, "grad of shape " + shapeToString(grad.shape()) +
                   " does not match indices " + shapeToString(indices.shape()) +
                   " and table " + shapeToString(tableShape) + " (expected " +
                   shapeToString(expected) + ")");
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

MatmulShape matmulShape(const Tensor &a, const Tensor &b) {
  const char *name = "matmul";
  requireFloat(a, name, "lhs");
  requireFloat(b, name, "rhs");
  requireSameDType(a, b, name);
  if (a.rank() < 2 || b.rank() < 2)
    fail(name, "operands must have rank >= 2, got " + shapeToString(a.shape()) +
                   " and " + shapeToString(b.shape()));
  MatmulShape s;
  s.m = a.dim(-2);
  s.k = a.dim(-1);
  s.n = b.dim(-1);
  if (b.dim(-2) != s.k)
    fail(name, "contracting dimensions differ: " + shapeToString(a.shape()) +
                   " times " + shapeToString(b.shape()));
  s.aBatch.assign(a.shape().begin(), a.shape().end() - 2);
  s.bBatch.assign(b.shape().begin(), b.shape().end() - 2);
  s.batch = broadcastShapesFor(s.aBatch, s.bBatch, name);
  s.outShape = s.batch;
  s.outShape.push_back(s.m);
  s.outShape.push_back(s.n);
  return s;
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

int64_t softmaxAxis(const Tensor &x, int64_t axis, const char *name) {
  requireFloat(x, name, "input");
  return normalizeAxis(axis, x.rank(), name);
}

int64_t softmaxGradAxis(const Tensor &output, const Tensor &grad, int64_t axis,
                        const char *name) {
  requireGradOf(output, "output", grad, name);
  return normalizeAxis(axis, output.rank(), name);
}

namespace {
/// The weight has the shape of x's dims from `axis` on.
LayerNormShape checkLayerNormWeight(const Tensor &x, const Tensor &weight,
                                    int64_t axis, const char *name) {
  LayerNormShape s;
  int64_t a = normalizeAxis(axis, x.rank(), name);
  s.axis = a;
  Shape normalised(x.shape().begin() + a, x.shape().end());
  if (weight.shape() != normalised)
    fail(name, "weight of shape " + shapeToString(weight.shape()) +
                   " does not match the normalised dims " +
                   shapeToString(normalised) + " of " +
                   shapeToString(x.shape()));
  s.rows = 1;
  for (int64_t d = 0; d < a; ++d)
    s.rows *= x.shape()[d];
  s.d = shapeNumel(normalised);
  s.statShape.assign(x.shape().begin(), x.shape().begin() + a);
  s.statShape.resize(x.rank(), 1);
  return s;
}

} // namespace

LayerNormShape layerNormOperands(const Tensor &x, const Tensor &weight,
                                 const Tensor &bias, int64_t axis) {
  const char *name = "layer_norm";
  requireFloat(x, name, "input");
  requireFloat(weight, name, "weight");
  requireSameDType(x, weight, name);
  LayerNormShape s = checkLayerNormWeight(x, weight, axis, name);
  if (bias.defined()) {
    requireSameDType(x, bias, name);
    if (bias.shape() != weight.shape())
      fail(name, "bias of shape " + shapeToString(bias.shape()) +
                     " differs from weight " + shapeToString(weight.shape()));
  }
  return s;
}

LayerNormShape layerNormGradOperands(const Tensor &grad, const Tensor &x,
                                     const Tensor &weight, const Tensor &mean,
                                     const Tensor &rstd, int64_t axis) {
  const char *name = "layer_norm_grad";
  requireFloat(grad, name, "grad");
  requireFloat(x, name, "input");
  requireFloat(weight, name, "weight");
  requireFloat(mean, name, "mean");
  requireFloat(rstd, name, "rstd");
  for (const Tensor *t : {&x, &weight, &mean, &rstd})
    requireSameDType(grad, *t, name);
  requireSameShape(grad, x, name);
  LayerNormShape s = checkLayerNormWeight(x, weight, axis, name);
  if (mean.numel() != s.rows || rstd.numel() != s.rows)
    fail(name, "mean and rstd need " + std::to_string(s.rows) +
                   " elements (the leading dims of " +
                   shapeToString(x.shape()) + "), got " +
                   shapeToString(mean.shape()) + " and " +
                   shapeToString(rstd.shape()));
  return s;
}

void checkCrossEntropyOperands(const Tensor &logits, const Tensor &labels,
                               const char *name) {
  requireFloat(logits, name, "logits");
  requireDefined(labels, name, "labels");
  if (logits.rank() != 2 || labels.rank() != 1 ||
      labels.dim(0) != logits.dim(0))
    fail(name, "expected logits N x C and labels N, got " +
                   shapeToString(logits.shape()) + " and " +
                   shapeToString(labels.shape()));
}

void checkCrossEntropyGrad(const Tensor &logits, const Tensor &labels,
                           const Tensor &grad, Reduction reduction) {
  const char *name = "softmax_cross_entropy_grad";
  checkCrossEntropyOperands(logits, labels, name);
  requireFloat(grad, name, "grad");
  int64_t n = logits.dim(0);
  if (reduction == Reduction::none) {
    if (grad.shape() != Shape{n})
      fail(name, "grad must have shape " + std::to_string(n) +
                     " for reduction none, got " + shapeToString(grad.shape()));
  } else if (grad.numel() != 1) {
    fail(name, "grad must be rank-0 for reduction mean/sum, got " +
                   shapeToString(grad.shape()));
  }
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

ReducePlan planReduce(const Tensor &x, const std::vector<int64_t> &axes,
                      bool keepdims, const char *name) {
  requireFloat(x, name, "input");
  if (axes.empty())
    fail(name, "axes must not be empty");
  ReducePlan plan;
  plan.reduced.assign(x.rank(), false);
  for (int64_t axis : axes) {
    int64_t a = normalizeAxis(axis, x.rank(), name);
    if (plan.reduced[a])
      fail(name, "axis " + std::to_string(axis) + " is repeated");
    plan.reduced[a] = true;
  }
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (plan.reduced[d]) {
      plan.count *= x.shape()[d];
      plan.keptShape.push_back(1);
      if (keepdims)
        plan.resultShape.push_back(1);
    } else {
      plan.keptShape.push_back(x.shape()[d]);
      plan.resultShape.push_back(x.shape()[d]);
    }
  }
  return plan;
}

void checkMaxOverElements(const Tensor &x, const ReducePlan &plan,
                          const char *name) {
  if (plan.count == 0)
    fail(name,
         "maximum over an empty axis of shape " + shapeToString(x.shape()));
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

void checkSgdOperands(const Tensor &param, const Tensor &grad) {
  requireGradOf(param, "param", grad, "sgd_update");
}

void checkAdamwOperands(const Tensor &param, const Tensor &grad,
                        const Tensor &m, const Tensor &v) {
  const char *name = "adamw_update";
  requireFloat(param, name, "param");
  requireFloat(grad, name, "grad");
  requireFloat(m, name, "m");
  requireFloat(v, name, "v");
  for (const Tensor *t : {&grad, &m, &v}) {
    requireSameDType(param, *t, name);
    requireSameShape(param, *t, name);
  }
}

} // namespace detail
} // namespace rt
} // namespace tessera
