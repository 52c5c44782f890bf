//===- LlmOps.cpp - llm operations: shapes and gradients ------------------===//

#include "tessera/llm/IR/LlmOps.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

using namespace mlir;
using namespace tessera;
using namespace tessera::llm;

#define GET_OP_CLASSES
#include "tessera/llm/IR/LlmOps.cpp.inc"

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The input's shape with size 1 in the last dimension.
RankedTensorType rowStatType(RankedTensorType in) {
  SmallVector<int64_t> shape(in.getShape());
  shape.back() = 1;
  return RankedTensorType::get(shape, in.getElementType());
}

/// Checks an RMSNorm's input (rank >= 1) and weight (the input's last
/// dimension, same element type).
LogicalResult checkRowAndWeight(std::optional<Location> loc,
                                RankedTensorType in, RankedTensorType w) {
  if (in.getRank() < 1)
    return emitOptionalError(loc, "input must have rank >= 1");
  if (w.getElementType() != in.getElementType())
    return emitOptionalError(loc, "weight has element type ",
                             w.getElementType(), ", the input ",
                             in.getElementType());
  if (w.getRank() != 1 || w.getDimSize(0) != in.getShape().back())
    return emitOptionalError(loc, "weight must have shape [",
                             in.getShape().back(),
                             "] (the input's last dimension), got ", w);
  return success();
}

/// A rank-0 constant of `like`'s element type.
Value scalar(OpBuilder &b, Location loc, Value like, double value) {
  auto type = RankedTensorType::get({}, tensorType(like).getElementType());
  return tsr::ConstantOp::create(
      b, loc, type,
      DenseElementsAttr::get(type,
                             b.getFloatAttr(type.getElementType(), value)));
}

/// d/dx silu(x) = s (1 + x (1 - s)) with s = sigmoid(x), in tsr ops.
Value siluDerivative(OpBuilder &b, Location loc, Value x) {
  Value s = tsr::SigmoidOp::create(b, loc, x);
  Value one = scalar(b, loc, x, 1.0);
  Value oneMinusS = tsr::SubOp::create(b, loc, one, s);
  Value inner =
      tsr::AddOp::create(b, loc, one, tsr::MulOp::create(b, loc, x, oneMinusS));
  return tsr::MulOp::create(b, loc, s, inner);
}

} // namespace

//===----------------------------------------------------------------------===//
// rms_norm
//===----------------------------------------------------------------------===//

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto in = tensorType(adaptor.getInput());
  if (failed(checkRowAndWeight(loc, in, tensorType(adaptor.getWeight()))))
    return failure();
  types.push_back(in);
  types.push_back(rowStatType(in));
  return success();
}

LogicalResult RmsNormOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  if (dys[1])
    return emitOpError("cannot propagate gradients through its rstd result");
  auto grad = RmsNormGradOp::create(b, getLoc(), dys[0], getInput(),
                                    getWeight(), getRstd());
  dxs.push_back(grad.getInputGrad());
  dxs.push_back(grad.getWeightGrad());
  return success();
}

LogicalResult RmsNormGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  auto in = tensorType(adaptor.getInput());
  auto w = tensorType(adaptor.getWeight());
  if (failed(checkRowAndWeight(loc, in, w)))
    return failure();
  if (tensorType(adaptor.getGrad()) != in)
    return emitOptionalError(loc, "grad has type ", adaptor.getGrad().getType(),
                             ", the input ", in);
  if (tensorType(adaptor.getRstd()) != rowStatType(in))
    return emitOptionalError(loc, "rstd has type ", adaptor.getRstd().getType(),
                             ", expected ", rowStatType(in));
  types.push_back(in);
  types.push_back(w);
  return success();
}

//===----------------------------------------------------------------------===//
// silu and swiglu
//===----------------------------------------------------------------------===//

LogicalResult SiluOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  dxs.push_back(
      tsr::MulOp::create(b, loc, dys[0], siluDerivative(b, loc, getInput())));
  return success();
}

LogicalResult SwigluOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  // y = silu(g) u: dg = dy u silu'(g), du = dy silu(g).
  Location loc = getLoc();
  Value dyU = tsr::MulOp::create(b, loc, dys[0], getUp());
  dxs.push_back(
      tsr::MulOp::create(b, loc, dyU, siluDerivative(b, loc, getGate())));
  dxs.push_back(
      tsr::MulOp::create(b, loc, dys[0], SiluOp::create(b, loc, getGate())));
  return success();
}

//===----------------------------------------------------------------------===//
// rope, rope_tables
//===----------------------------------------------------------------------===//

/// Checks a [t, d] table pair against `t` and `d` (d even) and `element`.
static LogicalResult checkTables(Operation *op, RankedTensorType cos,
                                 RankedTensorType sin, int64_t t, int64_t d,
                                 Type element) {
  if (d % 2)
    return op->emitOpError("the last dimension must be even, got ") << d;
  for (auto [name, table] : {std::pair{"cos", cos}, std::pair{"sin", sin}}) {
    if (table.getShape() != ArrayRef<int64_t>{t, d})
      return op->emitOpError() << name << " must have shape [" << t << ", " << d
                               << "], got " << table;
    if (table.getElementType() != element)
      return op->emitOpError()
             << name << " has element type " << table.getElementType()
             << ", expected " << element;
  }
  return success();
}

LogicalResult RopeOp::verify() {
  auto in = getInput().getType();
  if (in.getRank() < 2)
    return emitOpError("input must have rank >= 2 ([.., t, d]), got ") << in;
  return checkTables(*this, getCos().getType(), getSin().getType(),
                     in.getShape()[in.getRank() - 2], in.getShape().back(),
                     in.getElementType());
}

LogicalResult RopeOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  // Linear in x: the gradient is the transposed map.
  dxs.push_back(RopeOp::create(b, getLoc(), dys[0], getCos(), getSin(),
                               getInterleaved(), !getTranspose()));
  dxs.push_back(Value());
  dxs.push_back(Value());
  return success();
}

LogicalResult RopeTablesOp::verify() {
  auto cos = getCos().getType();
  if (cos.getRank() != 2)
    return emitOpError("tables must have rank 2 ([t, d]), got ") << cos;
  return checkTables(*this, cos, getSin().getType(), cos.getDimSize(0),
                     cos.getDimSize(1), cos.getElementType());
}

//===----------------------------------------------------------------------===//
// repeat_kv
//===----------------------------------------------------------------------===//

LogicalResult RepeatKvOp::verify() {
  auto in = getInput().getType(), out = getType();
  if (in.getRank() < 3)
    return emitOpError("input must have rank >= 3 ([.., h, t, d]), got ") << in;
  if (out.getElementType() != in.getElementType())
    return emitOpError("result element type ")
           << out.getElementType() << " differs from the input's "
           << in.getElementType();
  SmallVector<int64_t> expected(in.getShape());
  expected[in.getRank() - 3] *= getRepeats();
  if (out.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result must have shape [")
           << llvm::make_range(expected.begin(), expected.end())
           << "] (heads x " << getRepeats() << "), got " << out;
  return success();
}

LogicalResult RepeatKvOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  // [.., h * r, t, d] -> [.., h, r, t, d], summed over r.
  Location loc = getLoc();
  auto in = getInput().getType();
  int64_t heads = in.getRank() - 3;
  SmallVector<int64_t> grouped(in.getShape());
  grouped.insert(grouped.begin() + heads + 1, getRepeats());
  Value g = tsr::ReshapeOp::create(
      b, loc, RankedTensorType::get(grouped, in.getElementType()), dys[0]);
  dxs.push_back(tsr::ReduceSumOp::create(b, loc, g,
                                         ArrayRef<int64_t>{heads + 1},
                                         /*keepdims=*/false));
  return success();
}

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

namespace {

/// Checks q [.., t, d], k [.., s, d], v [.., s, e] (the same leading
/// dimensions and element type; t = s when causal) and returns the
/// result's type [.., t, e].
FailureOr<RankedTensorType> checkAttention(std::optional<Location> loc,
                                           RankedTensorType q,
                                           RankedTensorType k,
                                           RankedTensorType v, bool causal) {
  if (q.getRank() < 2)
    return emitOptionalError(loc,
                             "query must have rank >= 2 ([.., t, d]), got ", q);
  for (auto [name, t] : {std::pair{"key", k}, std::pair{"value", v}}) {
    if (t.getElementType() != q.getElementType())
      return emitOptionalError(loc, name, " has element type ",
                               t.getElementType(), ", the query ",
                               q.getElementType());
    if (t.getRank() != q.getRank() ||
        t.getShape().drop_back(2) != q.getShape().drop_back(2))
      return emitOptionalError(loc, name, " ", t,
                               " must have the query's leading dimensions (", q,
                               ")");
  }
  int64_t r = q.getRank();
  if (k.getDimSize(r - 1) != q.getDimSize(r - 1))
    return emitOptionalError(loc, "key ", k,
                             " must have the query's last dimension (", q, ")");
  if (v.getDimSize(r - 2) != k.getDimSize(r - 2))
    return emitOptionalError(loc, "value ", v, " must have one row per key (",
                             k, ")");
  if (causal && k.getDimSize(r - 2) != q.getDimSize(r - 2))
    return emitOptionalError(
        loc, "a causal attention needs as many keys as queries, got ",
        k.getDimSize(r - 2), " keys and ", q.getDimSize(r - 2), " queries");
  SmallVector<int64_t> shape(q.getShape());
  shape.back() = v.getShape().back();
  return RankedTensorType::get(shape, q.getElementType());
}

} // namespace

double tessera::llm::attentionFlops(RankedTensorType query,
                                    RankedTensorType key,
                                    RankedTensorType value, bool causal,
                                    double factor) {
  int64_t r = query.getRank();
  if (r < 2)
    return 0;
  double t = query.getDimSize(r - 2), d = query.getDimSize(r - 1);
  double s = key.getDimSize(r - 2), e = value.getDimSize(r - 1);
  double lead = t * d > 0 ? double(query.getNumElements()) / (t * d) : 0.0;
  double pairs = causal ? t * (t + 1) / 2 : t * s;
  return factor * lead * pairs * (2 * d + 2 * e + 4);
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto q = tensorType(adaptor.getQuery());
  FailureOr<RankedTensorType> y =
      checkAttention(loc, q, tensorType(adaptor.getKey()),
                     tensorType(adaptor.getValue()), adaptor.getCausal());
  if (failed(y))
    return failure();
  types.push_back(*y);
  types.push_back(rowStatType(q));
  return success();
}

LogicalResult AttentionOp::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                         SmallVectorImpl<Value> &dxs) {
  if (dys[1])
    return emitOpError("cannot propagate gradients through its lse result");
  auto grad = AttentionGradOp::create(b, getLoc(), dys[0], getQuery(), getKey(),
                                      getValue(), getResult(), getLse(),
                                      getScale(), getCausal());
  dxs.push_back(grad.getQueryGrad());
  dxs.push_back(grad.getKeyGrad());
  dxs.push_back(grad.getValueGrad());
  return success();
}

LogicalResult AttentionGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto q = tensorType(adaptor.getQuery());
  auto k = tensorType(adaptor.getKey());
  auto v = tensorType(adaptor.getValue());
  FailureOr<RankedTensorType> y =
      checkAttention(loc, q, k, v, adaptor.getCausal());
  if (failed(y))
    return failure();
  for (auto [name, value] : {std::pair{"grad", adaptor.getGrad()},
                             std::pair{"result", adaptor.getResult()}})
    if (tensorType(value) != *y)
      return emitOptionalError(loc, name, " has type ", value.getType(),
                               ", expected ", *y);
  if (tensorType(adaptor.getLse()) != rowStatType(q))
    return emitOptionalError(loc, "lse has type ", adaptor.getLse().getType(),
                             ", expected ", rowStatType(q));
  types.push_back(q);
  types.push_back(k);
  types.push_back(v);
  return success();
}
