//===- TsrGradients.cpp - gradient rules of tsr ops -----------------------===//
//
// GradientOpInterface for the differentiable tsr ops: each builds the
// vector-Jacobian product from tsr ops, using the backward ops (softmax_grad,
// layer_norm_grad, ...) where the forward ops would express it badly.
// Broadcasting ops reduce their gradients back to each operand's shape.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Interfaces/GradientInterface.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>

using namespace mlir;
using namespace tessera;
using namespace tessera::tsr;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A rank-0 constant of `like`'s element type; broadcasting does the rest.
Value scalar(OpBuilder &b, Location loc, Value like, double value) {
  Type element = typeOf(like).getElementType();
  auto type = RankedTensorType::get({}, element);
  auto attr =
      DenseElementsAttr::get(type, FloatAttr::get(element, value).getValue());
  return ConstantOp::create(b, loc, type, attr);
}

Value zerosLike(OpBuilder &b, Location loc, Type type) {
  auto t = cast<RankedTensorType>(type);
  auto attr = DenseElementsAttr::get(
      t, FloatAttr::get(t.getElementType(), 0.0).getValue());
  return ConstantOp::create(b, loc, t, attr);
}

/// Sums a broadcast gradient back to `target`'s shape: over leading
/// dimensions the target lacks and over dimensions where it has size 1.
Value sumToShape(OpBuilder &b, Location loc, Value grad, Type target) {
  auto g = typeOf(grad);
  auto t = cast<RankedTensorType>(target);
  if (g == t)
    return grad;
  int64_t offset = g.getRank() - t.getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < g.getRank(); ++i)
    if (i < offset || (t.getDimSize(i - offset) == 1 && g.getDimSize(i) != 1))
      axes.push_back(i);
  Value summed = grad;
  if (!axes.empty())
    summed = ReduceSumOp::create(b, loc, grad, axes, /*keepdims=*/true);
  if (typeOf(summed) != t)
    summed = ReshapeOp::create(b, loc, t, summed);
  return summed;
}

/// Swaps the last two dimensions.
Value transposeLast2(OpBuilder &b, Location loc, Value v) {
  int64_t rank = typeOf(v).getRank();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return TransposeOp::create(b, loc, v, perm);
}

/// Reshapes to a 2-D matrix keeping the last dimension.
Value flattenTo2D(OpBuilder &b, Location loc, Value v) {
  auto t = typeOf(v);
  int64_t last = t.getShape().back();
  auto type = RankedTensorType::get({t.getNumElements() / last, last},
                                    t.getElementType());
  return ReshapeOp::create(b, loc, type, v);
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult NegOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                   SmallVectorImpl<Value> &dxs) {
  dxs.push_back(NegOp::create(b, getLoc(), dys[0]));
  return success();
}

LogicalResult ExpOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                   SmallVectorImpl<Value> &dxs) {
  dxs.push_back(MulOp::create(b, getLoc(), dys[0], getResult()));
  return success();
}

LogicalResult LogOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                   SmallVectorImpl<Value> &dxs) {
  dxs.push_back(DivOp::create(b, getLoc(), dys[0], getInput()));
  return success();
}

LogicalResult SqrtOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value twiceY = MulOp::create(b, loc, getResult(), scalar(b, loc, dys[0], 2));
  dxs.push_back(DivOp::create(b, loc, dys[0], twiceY));
  return success();
}

LogicalResult RsqrtOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  // d/dx x^-1/2 = -1/2 x^-3/2 = -1/2 y^3.
  Location loc = getLoc();
  Value y = getResult();
  Value y3 = MulOp::create(b, loc, y, MulOp::create(b, loc, y, y));
  Value dy = MulOp::create(b, loc, dys[0], y3);
  dxs.push_back(MulOp::create(b, loc, dy, scalar(b, loc, dy, -0.5)));
  return success();
}

LogicalResult ErfOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                   SmallVectorImpl<Value> &dxs) {
  // d/dx erf(x) = 2/sqrt(pi) exp(-x^2).
  Location loc = getLoc();
  Value x = getInput();
  Value e =
      ExpOp::create(b, loc, NegOp::create(b, loc, MulOp::create(b, loc, x, x)));
  Value scaled =
      MulOp::create(b, loc, e, scalar(b, loc, x, 2.0 / std::sqrt(M_PI)));
  dxs.push_back(MulOp::create(b, loc, dys[0], scaled));
  return success();
}

LogicalResult TanhOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value y = getResult();
  Value oneMinusY2 = SubOp::create(b, loc, scalar(b, loc, y, 1.0),
                                   MulOp::create(b, loc, y, y));
  dxs.push_back(MulOp::create(b, loc, dys[0], oneMinusY2));
  return success();
}

LogicalResult SigmoidOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  // d/dx sigmoid(x) = y (1 - y): finite for every x, where the derivative
  // of the composition 1 / (1 + exp(-x)) is inf / inf below x = -88.
  Location loc = getLoc();
  Value y = getResult();
  Value oneMinusY = SubOp::create(b, loc, scalar(b, loc, y, 1.0), y);
  dxs.push_back(
      MulOp::create(b, loc, dys[0], MulOp::create(b, loc, y, oneMinusY)));
  return success();
}

LogicalResult SinOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                   SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  dxs.push_back(
      MulOp::create(b, loc, dys[0], CosOp::create(b, loc, getInput())));
  return success();
}

LogicalResult CosOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                   SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value sin = SinOp::create(b, loc, getInput());
  dxs.push_back(MulOp::create(b, loc, dys[0], NegOp::create(b, loc, sin)));
  return success();
}

LogicalResult ReluOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value x = getInput();
  Value positive =
      CompareOp::create(b, loc, ComparePredicate::gt, x, scalar(b, loc, x, 0));
  dxs.push_back(
      WhereOp::create(b, loc, positive, dys[0], scalar(b, loc, x, 0)));
  return success();
}

LogicalResult GeluOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  dxs.push_back(
      GeluGradOp::create(b, getLoc(), getApproximate(), getInput(), dys[0]));
  return success();
}

LogicalResult AddOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                   SmallVectorImpl<Value> &dxs) {
  dxs.push_back(sumToShape(b, getLoc(), dys[0], getLhs().getType()));
  dxs.push_back(sumToShape(b, getLoc(), dys[0], getRhs().getType()));
  return success();
}

LogicalResult SubOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                   SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  dxs.push_back(sumToShape(b, loc, dys[0], getLhs().getType()));
  dxs.push_back(
      sumToShape(b, loc, NegOp::create(b, loc, dys[0]), getRhs().getType()));
  return success();
}

LogicalResult MulOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                   SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  dxs.push_back(sumToShape(b, loc, MulOp::create(b, loc, dys[0], getRhs()),
                           getLhs().getType()));
  dxs.push_back(sumToShape(b, loc, MulOp::create(b, loc, dys[0], getLhs()),
                           getRhs().getType()));
  return success();
}

LogicalResult DivOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                   SmallVectorImpl<Value> &dxs) {
  // d(a/b)/da = 1/b; d(a/b)/db = -a/b^2 = -y/b.
  Location loc = getLoc();
  Value da = DivOp::create(b, loc, dys[0], getRhs());
  dxs.push_back(sumToShape(b, loc, da, getLhs().getType()));
  Value db = NegOp::create(
      b, loc,
      DivOp::create(b, loc, MulOp::create(b, loc, dys[0], getResult()),
                    getRhs()));
  dxs.push_back(sumToShape(b, loc, db, getRhs().getType()));
  return success();
}

LogicalResult PowOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                   SmallVectorImpl<Value> &dxs) {
  // d(a^b)/da = b a^(b-1); d(a^b)/db = a^b log(a). Unused gradients (the
  // exponent is usually a constant) are removed by canonicalization.
  Location loc = getLoc();
  Value a = getLhs(), e = getRhs();
  Value aPow = PowOp::create(b, loc, a,
                             SubOp::create(b, loc, e, scalar(b, loc, e, 1.0)));
  Value da = MulOp::create(b, loc, dys[0], MulOp::create(b, loc, e, aPow));
  dxs.push_back(sumToShape(b, loc, da, a.getType()));
  Value db = MulOp::create(
      b, loc, dys[0],
      MulOp::create(b, loc, getResult(), LogOp::create(b, loc, a)));
  dxs.push_back(sumToShape(b, loc, db, e.getType()));
  return success();
}

LogicalResult WhereOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  if (!isa<FloatType>(typeOf(getResult()).getElementType()))
    return emitOpError("has no gradient for non-float values");
  Value zero = scalar(b, loc, dys[0], 0);
  dxs.push_back(Value()); // condition
  dxs.push_back(
      sumToShape(b, loc, WhereOp::create(b, loc, getCondition(), dys[0], zero),
                 getLhs().getType()));
  dxs.push_back(
      sumToShape(b, loc, WhereOp::create(b, loc, getCondition(), zero, dys[0]),
                 getRhs().getType()));
  return success();
}

LogicalResult CastOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  Type in = getInput().getType();
  if (!isa<FloatType>(typeOf(getInput()).getElementType())) {
    dxs.push_back(Value()); // integer inputs are not differentiable
    return success();
  }
  dxs.push_back(CastOp::create(b, getLoc(), in, dys[0]));
  return success();
}

LogicalResult DropoutOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  if (dys.size() > 1 && dys[1])
    return emitOpError("cannot propagate a gradient through its mask");
  Location loc = getLoc();
  double keep = 1.0 - getRatio().convertToDouble();
  Value kept =
      WhereOp::create(b, loc, getMask(), dys[0], scalar(b, loc, dys[0], 0));
  dxs.push_back(MulOp::create(b, loc, kept, scalar(b, loc, kept, 1.0 / keep)));
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions and normalisations
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value a = getLhs(), w = getRhs(), dy = dys[0];
  // dA = dY B^T, reduced over batch dimensions A broadcast.
  Value da = MatmulOp::create(b, loc, dy, transposeLast2(b, loc, w));
  dxs.push_back(sumToShape(b, loc, da, a.getType()));
  // dB = A^T dY. For the common x[..., k] @ W[k, n] fold the batch into one
  // GEMM instead of a batched product followed by a reduction.
  if (typeOf(w).getRank() == 2 && typeOf(a).getRank() > 2) {
    Value a2 = flattenTo2D(b, loc, a), dy2 = flattenTo2D(b, loc, dy);
    dxs.push_back(MatmulOp::create(b, loc, transposeLast2(b, loc, a2), dy2));
    return success();
  }
  Value db = MatmulOp::create(b, loc, transposeLast2(b, loc, a), dy);
  dxs.push_back(sumToShape(b, loc, db, w.getType()));
  return success();
}

LogicalResult SoftmaxOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  dxs.push_back(
      SoftmaxGradOp::create(b, getLoc(), getResult(), dys[0], getAxis()));
  return success();
}

LogicalResult LogSoftmaxOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  dxs.push_back(
      LogSoftmaxGradOp::create(b, getLoc(), getResult(), dys[0], getAxis()));
  return success();
}

LogicalResult LayerNormOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                         SmallVectorImpl<Value> &dxs) {
  if (dys[1] || dys[2])
    return emitOpError("cannot propagate gradients through its mean or rstd "
                       "results");
  auto grad =
      LayerNormGradOp::create(b, getLoc(), dys[0], getInput(), getWeight(),
                              getMean(), getRstd(), getAxis());
  dxs.push_back(grad.getInputGrad());
  dxs.push_back(grad.getWeightGrad());
  if (getBias())
    dxs.push_back(grad.getBiasGrad());
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace {
/// The reduced gradient with the reduced dimensions restored as size 1, then
/// broadcast to the input's shape.
template <typename Op> Value spreadOverInput(OpBuilder &b, Op op, Value dy) {
  Location loc = op.getLoc();
  auto in = typeOf(op.getInput());
  SmallVector<int64_t> kept(in.getShape());
  for (int64_t a : op.getAxes())
    kept[a] = 1;
  auto keptType = RankedTensorType::get(kept, in.getElementType());
  Value v = dy;
  if (typeOf(v) != keptType)
    v = ReshapeOp::create(b, loc, keptType, v);
  return BroadcastToOp::create(b, loc, in, v);
}
} // namespace

LogicalResult ReduceSumOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                         SmallVectorImpl<Value> &dxs) {
  dxs.push_back(spreadOverInput(b, *this, dys[0]));
  return success();
}

LogicalResult ReduceMeanOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  int64_t count = 1;
  for (int64_t a : getAxes())
    count *= getInput().getType().getDimSize(a);
  Value spread = spreadOverInput(b, *this, dys[0]);
  dxs.push_back(MulOp::create(b, getLoc(), spread,
                              scalar(b, getLoc(), spread, 1.0 / count)));
  return success();
}

LogicalResult ReduceMaxOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                         SmallVectorImpl<Value> &dxs) {
  // The gradient goes to every element equal to the maximum.
  Location loc = getLoc();
  Value maxSpread = spreadOverInput(b, *this, getResult());
  Value isMax =
      CompareOp::create(b, loc, ComparePredicate::eq, getInput(), maxSpread);
  Value dySpread = spreadOverInput(b, *this, dys[0]);
  dxs.push_back(
      WhereOp::create(b, loc, isMax, dySpread, scalar(b, loc, dySpread, 0)));
  return success();
}

//===----------------------------------------------------------------------===//
// Shapes and data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  dxs.push_back(ReshapeOp::create(b, getLoc(), getInput().getType(), dys[0]));
  return success();
}

LogicalResult TransposeOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                         SmallVectorImpl<Value> &dxs) {
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  dxs.push_back(TransposeOp::create(b, getLoc(), dys[0], inverse));
  return success();
}

LogicalResult BroadcastToOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                           SmallVectorImpl<Value> &dxs) {
  dxs.push_back(sumToShape(b, getLoc(), dys[0], getInput().getType()));
  return success();
}

LogicalResult SliceOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  // Pad the gradient back with zeros, one dimension at a time.
  Location loc = getLoc();
  auto in = getInput().getType();
  Value g = dys[0];
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t start = getStarts()[d], limit = getLimits()[d];
    if (start == 0 && limit == in.getDimSize(d) && getSteps()[d] == 1)
      continue;
    if (getSteps()[d] != 1)
      return emitOpError("has no gradient for step ")
             << getSteps()[d] << " in dimension " << d;
    SmallVector<Value> pieces;
    auto gt = typeOf(g);
    auto zeros = [&](int64_t size) {
      SmallVector<int64_t> shape(gt.getShape());
      shape[d] = size;
      return zerosLike(b, loc,
                       RankedTensorType::get(shape, gt.getElementType()));
    };
    if (start > 0)
      pieces.push_back(zeros(start));
    pieces.push_back(g);
    if (limit < in.getDimSize(d))
      pieces.push_back(zeros(in.getDimSize(d) - limit));
    g = ConcatOp::create(b, loc, pieces, d);
  }
  dxs.push_back(g);
  return success();
}

LogicalResult SplitOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  SmallVector<Value> pieces;
  for (auto [dy, result] : llvm::zip(dys, getResults()))
    pieces.push_back(dy ? dy : zerosLike(b, getLoc(), result.getType()));
  dxs.push_back(ConcatOp::create(b, getLoc(), pieces, getAxis()));
  return success();
}

LogicalResult ConcatOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  SmallVector<int64_t> sizes;
  for (Value in : getInputs())
    sizes.push_back(typeOf(in).getDimSize(getAxis()));
  if (sizes.size() == 1) {
    dxs.push_back(dys[0]);
    return success();
  }
  auto split = SplitOp::create(b, getLoc(), dys[0], getAxis(), sizes);
  for (Value piece : split.getResults())
    dxs.push_back(piece);
  return success();
}

LogicalResult GatherOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  if (getAxis() != 0)
    return emitOpError("has a gradient only for axis 0 (found axis ")
           << getAxis() << ")";
  // data V x d1..dk: treat it as a V x D table, D = d1*..*dk.
  Location loc = getLoc();
  auto data = getData().getType();
  int64_t rows = data.getDimSize(0);
  int64_t width = data.getNumElements() / std::max<int64_t>(rows, 1);
  auto indices = getIndices().getType();
  SmallVector<int64_t> gradShape(indices.getShape());
  gradShape.push_back(width);
  Value dy = dys[0];
  auto gradType = RankedTensorType::get(gradShape, data.getElementType());
  if (typeOf(dy) != gradType)
    dy = ReshapeOp::create(b, loc, gradType, dy);
  auto tableType = RankedTensorType::get({rows, width}, data.getElementType());
  Value table = EmbeddingGradOp::create(b, loc, tableType, dy, getIndices());
  if (tableType != data)
    table = ReshapeOp::create(b, loc, data, table);
  dxs.push_back(table);
  dxs.push_back(Value()); // indices
  return success();
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

LogicalResult
SoftmaxCrossEntropyOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  dxs.push_back(SoftmaxCrossEntropyGradOp::create(
      b, getLoc(), getLogits(), getLabels(), dys[0], getIgnoreIndex(),
      getReduction()));
  dxs.push_back(Value()); // labels
  return success();
}
