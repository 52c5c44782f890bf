//===- TsrOps.cpp - tsr operations ----------------------------------------===//
//
// Result type inference (which also verifies shapes, with messages naming
// the offending dimensions), verifiers, cheap folders, and the annotations
// of ops whose dimensions move with an attribute.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Support/Broadcast.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

#include <cmath>

using namespace mlir;
using namespace tessera;
using namespace tessera::tsr;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {

/// "4x8xf32"-style text of a shape, for messages.
std::string shapeStr(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "rank-0";
  std::string s;
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? "x" : "") + std::to_string(d);
  return s;
}

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// numpy broadcasting of several shapes; fails with a message naming the
/// first dimension that disagrees.
LogicalResult broadcastShapes(std::optional<Location> loc,
                              ArrayRef<ArrayRef<int64_t>> shapes,
                              SmallVectorImpl<int64_t> &out) {
  size_t rank = 0;
  for (ArrayRef<int64_t> s : shapes)
    rank = std::max(rank, s.size());
  out.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    for (ArrayRef<int64_t> s : shapes) {
      if (i >= s.size())
        continue;
      int64_t d = s[s.size() - 1 - i];
      int64_t &o = out[rank - 1 - i];
      if (d == o || d == 1)
        continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (ArrayRef<int64_t> t : shapes)
        all += (all.empty() ? "" : " and ") + shapeStr(t);
      return emitOptionalError(loc, "shapes ", all,
                               " do not broadcast: dimension ", rank - 1 - i,
                               " (from the right: ", i, ") is ", o, " vs ", d);
    }
  }
  return success();
}

LogicalResult checkAxis(std::optional<Location> loc, int64_t axis, int64_t rank,
                        StringRef what = "axis") {
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, what, " ", axis, " is out of range for rank ",
                             rank, " (expected 0 <= ", what, " < ", rank, ")");
  return success();
}

/// Builds a concrete annotation from entries; used by buildAnnotation.
Result<annotation::Annotation>
makeAnnotation(const std::vector<std::string> &inputs,
               const std::vector<std::string> &outputs) {
  std::string text;
  for (const std::string &e : inputs)
    text += (text.empty() ? "" : ", ") + e;
  text += inputs.empty() ? "-> " : " -> ";
  for (size_t i = 0; i < outputs.size(); ++i)
    text += (i ? ", " : "") + outputs[i];
  return parseBuiltAnnotation(text);
}

/// Names d0..d{rank-1}, with `mark` appended at the listed positions.
std::vector<std::string> markedNames(size_t rank, ArrayRef<int64_t> marked,
                                     StringRef mark,
                                     const std::string &prefix = "d") {
  std::vector<std::string> names = dimNames(rank, prefix);
  for (int64_t m : marked)
    names[m] += mark.str();
  return names;
}

constexpr int64_t kMaxFoldElements = 1 << 16;

/// Folds a unary op on an f32 constant (splat, or dense up to a size that
/// keeps folding cheap).
Attribute foldUnaryF32(Attribute operand, Type resultType,
                       llvm::function_ref<float(float)> fn) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(operand);
  auto type = dyn_cast<RankedTensorType>(resultType);
  if (!dense || !type || !type.getElementType().isF32() ||
      !dense.getElementType().isF32())
    return {};
  if (dense.isSplat())
    return DenseElementsAttr::get(type, fn(dense.getSplatValue<float>()));
  if (dense.getNumElements() > kMaxFoldElements)
    return {};
  SmallVector<float> values;
  for (float v : dense.getValues<float>())
    values.push_back(fn(v));
  return DenseElementsAttr::get(type, ArrayRef<float>(values));
}

/// The value of a float splat constant.
std::optional<double> splatValue(Attribute attr) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat || !isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>().convertToDouble();
}

using support::broadcastIndex;

/// Folds a binary op: an identity (x op c == x, when the types agree), two
/// f32 splats, or two f32 constants broadcast to a result of at most
/// kMaxFoldElements elements.
OpFoldResult foldBinary(Operation *op, Attribute lhs, Attribute rhs,
                        std::optional<double> identity,
                        llvm::function_ref<float(float, float)> fn) {
  Value lhsValue = op->getOperand(0);
  Type resultType = op->getResult(0).getType();
  auto r = splatValue(rhs);
  if (identity && r && *r == *identity && lhsValue.getType() == resultType)
    return lhsValue;
  auto l = splatValue(lhs);
  auto type = cast<RankedTensorType>(resultType);
  if (!type.getElementType().isF32())
    return {};
  if (l && r)
    return DenseElementsAttr::get(type, fn(float(*l), float(*r)));
  auto ld = dyn_cast_or_null<DenseElementsAttr>(lhs);
  auto rd = dyn_cast_or_null<DenseElementsAttr>(rhs);
  if (!ld || !rd || !ld.getElementType().isF32() ||
      !rd.getElementType().isF32() || type.getNumElements() > kMaxFoldElements)
    return {};
  auto a = ld.getValues<float>(), b = rd.getValues<float>();
  ArrayRef<int64_t> shape = type.getShape();
  ArrayRef<int64_t> aShape = ld.getType().getShape();
  ArrayRef<int64_t> bShape = rd.getType().getShape();
  SmallVector<float> values;
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i)
    values.push_back(fn(a[broadcastIndex(i, shape, aShape)],
                        b[broadcastIndex(i, shape, bShape)]));
  return DenseElementsAttr::get(type, ArrayRef<float>(values));
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//
// The unary and binary ops' folders and the binary ops' type inference are
// generated from their records in TsrOps.td (scalarFn, identity), on the
// helpers above and below.
//===----------------------------------------------------------------------===//

namespace {
LogicalResult checkSameElementType(std::optional<Location> loc, StringRef what,
                                   RankedTensorType lhs, RankedTensorType rhs) {
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, what, " have different element types ",
                             lhs.getElementType(), " and ",
                             rhs.getElementType());
  return success();
}

/// The result type of an elementwise op: `lhs` and `rhs` (called `what`) share
/// an element type, and the shapes of `extra`, `lhs` and `rhs` broadcast
/// together. The result has element type `resultElt`, or the operands' one.
LogicalResult inferBroadcast(std::optional<Location> loc, StringRef what,
                             Value lhsValue, Value rhsValue,
                             SmallVectorImpl<Type> &types, Type resultElt = {},
                             Value extra = {}) {
  auto lhs = tensorType(lhsValue);
  auto rhs = tensorType(rhsValue);
  if (failed(checkSameElementType(loc, what, lhs, rhs)))
    return failure();
  SmallVector<ArrayRef<int64_t>, 3> shapes;
  if (extra)
    shapes.push_back(tensorType(extra).getShape());
  shapes.append({lhs.getShape(), rhs.getShape()});
  SmallVector<int64_t> shape;
  if (failed(broadcastShapes(loc, shapes, shape)))
    return failure();
  types.push_back(RankedTensorType::get(
      shape, resultElt ? resultElt : lhs.getElementType()));
  return success();
}
} // namespace

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferBroadcast(loc, "operands", adaptor.getLhs(), adaptor.getRhs(),
                        types, IntegerType::get(ctx, 1));
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return inferBroadcast(loc, "lhs and rhs", adaptor.getLhs(), adaptor.getRhs(),
                        types, Type(), adaptor.getCondition());
}

LogicalResult CastOp::verify() {
  auto in = tensorType(getInput());
  auto out = tensorType(getResult());
  if (in.getShape() != out.getShape())
    return emitOpError("changes the shape from ")
           << shapeStr(in.getShape()) << " to " << shapeStr(out.getShape())
           << "; cast only converts the element type";
  return success();
}

namespace {
/// The elements of a constant, when it is small enough to fold.
std::optional<SmallVector<Attribute>> foldableElements(Attribute attr) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || dense.getNumElements() > kMaxFoldElements)
    return std::nullopt;
  auto values = dense.getValues<Attribute>();
  return SmallVector<Attribute>(values.begin(), values.end());
}

/// Shape of a constant operand (foldableElements succeeded on it).
ArrayRef<int64_t> constShape(Attribute attr) {
  return cast<DenseElementsAttr>(attr).getType().getShape();
}

/// One element converted as the runtimes' cast does: float to float rounds
/// to nearest even, float to integer toward zero (null where the value does
/// not fit: the runtimes' C++ conversion is undefined there), to i1 compares
/// with zero, i1 reads as 0/1, other integers sign-extend or truncate.
Attribute castElement(Attribute value, Type to) {
  auto toInt = dyn_cast<IntegerType>(to);
  if (auto f = dyn_cast<FloatAttr>(value)) {
    APFloat v = f.getValue();
    if (auto ft = dyn_cast<FloatType>(to)) {
      bool lost;
      v.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      return FloatAttr::get(to, v);
    }
    if (!toInt)
      return {};
    if (toInt.getWidth() == 1)
      return IntegerAttr::get(to, APInt(1, v.isZero() ? 0 : 1));
    APSInt r(toInt.getWidth(), /*isUnsigned=*/false);
    bool exact;
    if (v.convertToInteger(r, APFloat::rmTowardZero, &exact) &
        APFloat::opInvalidOp)
      return {};
    return IntegerAttr::get(to, r);
  }
  auto i = dyn_cast<IntegerAttr>(value);
  if (!i)
    return {};
  APInt v = i.getValue();
  bool isSigned = v.getBitWidth() != 1;
  if (auto ft = dyn_cast<FloatType>(to)) {
    APFloat r(ft.getFloatSemantics());
    r.convertFromAPInt(v, isSigned, APFloat::rmNearestTiesToEven);
    return FloatAttr::get(to, r);
  }
  if (!toInt)
    return {};
  if (toInt.getWidth() == 1)
    return IntegerAttr::get(to, APInt(1, v.isZero() ? 0 : 1));
  return IntegerAttr::get(to, isSigned ? v.sextOrTrunc(toInt.getWidth())
                                       : v.zextOrTrunc(toInt.getWidth()));
}

/// `lhs <predicate> rhs` on two elements of the same type (floats compare
/// as IEEE does: every predicate but ne is false on NaN).
std::optional<bool> compareElements(ComparePredicate predicate, Attribute lhs,
                                    Attribute rhs) {
  int order; // -1, 0, 1; 2 for unordered
  if (auto a = dyn_cast<FloatAttr>(lhs)) {
    auto b = dyn_cast<FloatAttr>(rhs);
    if (!b)
      return std::nullopt;
    switch (a.getValue().compare(b.getValue())) {
    case APFloat::cmpLessThan:
      order = -1;
      break;
    case APFloat::cmpEqual:
      order = 0;
      break;
    case APFloat::cmpGreaterThan:
      order = 1;
      break;
    case APFloat::cmpUnordered:
      order = 2;
      break;
    }
  } else {
    auto x = dyn_cast<IntegerAttr>(lhs), y = dyn_cast<IntegerAttr>(rhs);
    if (!x || !y)
      return std::nullopt;
    order = x.getValue().slt(y.getValue())   ? -1
            : x.getValue().sgt(y.getValue()) ? 1
                                             : 0;
  }
  switch (predicate) {
  case ComparePredicate::eq:
    return order == 0;
  case ComparePredicate::ne:
    return order != 0;
  case ComparePredicate::lt:
    return order == -1;
  case ComparePredicate::le:
    return order == -1 || order == 0;
  case ComparePredicate::gt:
    return order == 1;
  case ComparePredicate::ge:
    return order == 1 || order == 0;
  }
  return std::nullopt;
}
} // namespace

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  auto values = foldableElements(adaptor.getInput());
  auto type = cast<RankedTensorType>(getType());
  // The importer folds before the module is verified: check what the
  // verifier would, rather than build a wrong constant.
  if (!values || static_cast<int64_t>(values->size()) != type.getNumElements())
    return {};
  for (Attribute &v : *values)
    if (!(v = castElement(v, type.getElementType())))
      return {};
  return DenseElementsAttr::get(type, *values);
}

OpFoldResult CompareOp::fold(FoldAdaptor adaptor) {
  auto lhs = foldableElements(adaptor.getLhs());
  auto rhs = foldableElements(adaptor.getRhs());
  auto type = cast<RankedTensorType>(getType());
  if (!lhs || !rhs || type.getNumElements() > kMaxFoldElements ||
      getLhs().getType().getElementType() !=
          getRhs().getType().getElementType())
    return {};
  ArrayRef<int64_t> shape = type.getShape();
  SmallVector<bool> out;
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    std::optional<bool> r = compareElements(
        getPredicate(),
        (*lhs)[broadcastIndex(i, shape, constShape(adaptor.getLhs()))],
        (*rhs)[broadcastIndex(i, shape, constShape(adaptor.getRhs()))]);
    if (!r)
      return {};
    out.push_back(*r);
  }
  return DenseElementsAttr::get(type, out);
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  auto cond = foldableElements(adaptor.getCondition());
  auto lhs = foldableElements(adaptor.getLhs());
  auto rhs = foldableElements(adaptor.getRhs());
  auto type = cast<RankedTensorType>(getType());
  if (!cond || !lhs || !rhs || type.getNumElements() > kMaxFoldElements ||
      getLhs().getType().getElementType() != type.getElementType() ||
      getRhs().getType().getElementType() != type.getElementType())
    return {};
  ArrayRef<int64_t> shape = type.getShape();
  SmallVector<Attribute> out;
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    bool c =
        cast<IntegerAttr>((*cond)[broadcastIndex(
                              i, shape, constShape(adaptor.getCondition()))])
            .getValue()
            .getBoolValue();
    out.push_back(
        c ? (*lhs)[broadcastIndex(i, shape, constShape(adaptor.getLhs()))]
          : (*rhs)[broadcastIndex(i, shape, constShape(adaptor.getRhs()))]);
  }
  return DenseElementsAttr::get(type, out);
}

Value CastOp::getViewSource() {
  return getInput().getType() == getType() ? getInput() : Value();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  double ratio = adaptor.getRatio().convertToDouble();
  if (!(ratio < 1.0))
    return emitOptionalError(loc, "ratio ", ratio,
                             " must be below 1 (it is the drop probability)");
  auto in = tensorType(adaptor.getInput());
  types.push_back(in);
  types.push_back(
      RankedTensorType::get(in.getShape(), IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult DropoutOp::verify() {
  std::optional<ArrayRef<int64_t>> offsets = getOffsets(),
                                   global = getGlobalShape();
  if (offsets.has_value() != global.has_value())
    return emitOpError("needs both 'offsets' and 'global_shape', or neither");
  if (!offsets)
    return success();
  ArrayRef<int64_t> local = getInput().getType().getShape();
  if (offsets->size() != local.size() || global->size() != local.size())
    return emitOpError("'offsets' and 'global_shape' need one entry per "
                       "dimension of the input (")
           << local.size() << "), got " << offsets->size() << " and "
           << global->size();
  for (size_t d = 0; d < local.size(); ++d)
    if ((*offsets)[d] < 0 || (*offsets)[d] + local[d] > (*global)[d])
      return emitOpError("the piece of dimension ")
             << d << " (offset " << (*offsets)[d] << ", size " << local[d]
             << ") is not inside the whole tensor's " << (*global)[d];
  return success();
}

ArrayRef<StringRef> DropoutOp::getRankVariantAttrNames() {
  static constexpr StringRef kNames[] = {"offsets"};
  return kNames;
}

//===----------------------------------------------------------------------===//
// Contractions and normalisations
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto lhs = tensorType(adaptor.getLhs());
  auto rhs = tensorType(adaptor.getRhs());
  if (failed(checkSameElementType(loc, "operands", lhs, rhs)))
    return failure();
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(loc, "operands must have rank >= 2, found ",
                             lhs.getRank(), " and ", rhs.getRank());
  ArrayRef<int64_t> a = lhs.getShape(), b = rhs.getShape();
  int64_t k1 = a.back(), k2 = b[b.size() - 2];
  if (k1 != k2)
    return emitOptionalError(loc, "contracting dimensions differ: lhs ",
                             shapeStr(a), " has k = ", k1, ", rhs ",
                             shapeStr(b), " has k = ", k2);
  SmallVector<int64_t> batch;
  if (failed(broadcastShapes(loc, {a.drop_back(2), b.drop_back(2)}, batch)))
    return failure();
  batch.push_back(a[a.size() - 2]);
  batch.push_back(b.back());
  types.push_back(RankedTensorType::get(batch, lhs.getElementType()));
  return success();
}

namespace {
/// Annotation "d0 .. dA^ .. -> same" for ops normalising along one axis.
Result<annotation::Annotation> axisAnnotation(int64_t rank, int64_t axis,
                                              unsigned numInputs) {
  std::string entry = joinEntry(markedNames(rank, {axis}, "^"));
  return makeAnnotation(std::vector<std::string>(numInputs, entry), {entry});
}
} // namespace

namespace {
/// Shape of layer_norm's mean/rstd: leading dims, then 1s.
SmallVector<int64_t> statsShape(ArrayRef<int64_t> shape, int64_t axis) {
  SmallVector<int64_t> s(shape.begin(), shape.begin() + axis);
  s.append(shape.size() - axis, 1);
  return s;
}

LogicalResult checkNormalizedShape(std::optional<Location> loc,
                                   RankedTensorType input, int64_t axis,
                                   Type other, StringRef what) {
  auto t = cast<RankedTensorType>(other);
  ArrayRef<int64_t> expected = input.getShape().drop_front(axis);
  if (t.getShape() != expected)
    return emitOptionalError(loc, what, " has shape ", shapeStr(t.getShape()),
                             " but the normalised shape is ",
                             shapeStr(expected));
  if (t.getElementType() != input.getElementType())
    return emitOptionalError(loc, what, " has element type ",
                             t.getElementType(), ", the input ",
                             input.getElementType());
  return success();
}

/// Annotation entries for layer_norm: leading names a*, normalised n*^.
std::pair<std::string, std::string> layerNormEntries(int64_t rank, int64_t axis,
                                                     StringRef leadingMark) {
  std::vector<std::string> full, stats;
  for (int64_t i = 0; i < axis; ++i) {
    full.push_back("a" + std::to_string(i) + leadingMark.str());
    stats.push_back(full.back());
  }
  for (int64_t i = axis; i < rank; ++i) {
    full.push_back("n" + std::to_string(i) + "^");
    stats.push_back("1");
  }
  return {joinEntry(full), joinEntry(stats)};
}

std::string normalizedEntry(int64_t rank, int64_t axis) {
  std::vector<std::string> norm;
  for (int64_t i = axis; i < rank; ++i)
    norm.push_back("n" + std::to_string(i) + "^");
  return joinEntry(norm);
}
} // namespace

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto in = tensorType(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, in.getRank())))
    return failure();
  if (failed(checkNormalizedShape(loc, in, axis, adaptor.getWeight().getType(),
                                  "weight")))
    return failure();
  if (adaptor.getBias() &&
      failed(checkNormalizedShape(loc, in, axis, adaptor.getBias().getType(),
                                  "bias")))
    return failure();
  auto stats = RankedTensorType::get(statsShape(in.getShape(), axis),
                                     in.getElementType());
  types.append({in, stats, stats});
  return success();
}

Result<annotation::Annotation> LayerNormOp::buildAnnotation() {
  int64_t rank = getInput().getType().getRank();
  auto [full, stats] = layerNormEntries(rank, getAxis(), "");
  std::string norm = normalizedEntry(rank, getAxis());
  std::vector<std::string> inputs = {full, norm};
  if (getBias())
    inputs.push_back(norm);
  return makeAnnotation(inputs, {full, stats, stats});
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace {
LogicalResult checkAxes(std::optional<Location> loc, ArrayRef<int64_t> axes,
                        int64_t rank) {
  if (axes.empty())
    return emitOptionalError(loc, "axes must not be empty");
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t a : axes) {
    if (failed(checkAxis(loc, a, rank, "reduction axis")))
      return failure();
    if (!seen.insert(a).second)
      return emitOptionalError(loc, "reduction axis ", a, " appears twice");
  }
  return success();
}

template <typename Adaptor>
LogicalResult inferReduce(std::optional<Location> loc, Adaptor adaptor,
                          SmallVectorImpl<Type> &types) {
  auto in = tensorType(adaptor.getInput());
  ArrayRef<int64_t> axes = adaptor.getAxes();
  if (failed(checkAxes(loc, axes, in.getRank())))
    return failure();
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(in.getShape())) {
    bool reduced = llvm::is_contained(axes, int64_t(i));
    if (!reduced)
      shape.push_back(d);
    else if (adaptor.getKeepdims())
      shape.push_back(1);
  }
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

template <typename Op>
Result<annotation::Annotation> reduceAnnotation(Op op, StringRef mark) {
  int64_t rank = op.getInput().getType().getRank();
  std::vector<std::string> in, out;
  for (int64_t i = 0; i < rank; ++i) {
    std::string name = "d" + std::to_string(i);
    if (llvm::is_contained(op.getAxes(), i)) {
      in.push_back(name + mark.str());
      if (op.getKeepdims())
        out.push_back("1");
    } else {
      in.push_back(name);
      out.push_back(name);
    }
  }
  return makeAnnotation({joinEntry(in)}, {joinEntry(out)});
}
} // namespace

#define TSR_REDUCE_OP(OP, MARK)                                                \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> l, \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    return inferReduce(l, adaptor, types);                                     \
  }                                                                            \
  Result<annotation::Annotation> OP::buildAnnotation() {                       \
    return reduceAnnotation(*this, MARK);                                      \
  }

TSR_REDUCE_OP(ReduceSumOp, "+")
TSR_REDUCE_OP(ReduceMeanOp, "+")
TSR_REDUCE_OP(ReduceMaxOp, "^")
#undef TSR_REDUCE_OP

//===----------------------------------------------------------------------===//
// Shapes and data movement
//===----------------------------------------------------------------------===//

Value ReshapeOp::getViewSource() { return getInput(); }

Value BroadcastToOp::getViewSource() {
  return getInput().getType() == getType() ? getInput() : Value();
}

LogicalResult ReshapeOp::verify() {
  auto in = tensorType(getInput());
  auto out = tensorType(getResult());
  if (in.getElementType() != out.getElementType())
    return emitOpError("changes the element type from ")
           << in.getElementType() << " to " << out.getElementType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("cannot reshape ")
           << shapeStr(in.getShape()) << " (" << in.getNumElements()
           << " elements) to " << shapeStr(out.getShape()) << " ("
           << out.getNumElements() << " elements)";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

Result<annotation::Annotation> ReshapeOp::buildAnnotation() {
  // Match runs of input and output dimensions (ignoring size-1 ones) whose
  // products agree. A run of one input dim against several output dims makes
  // the input dim a group of the output names (and vice versa); runs with
  // several dims on both sides have no clean correspondence and are '^'.
  ArrayRef<int64_t> in = getInput().getType().getShape();
  ArrayRef<int64_t> out = getType().getShape();
  std::vector<std::string> inEntry(in.size(), "1"), outEntry(out.size(), "1");
  SmallVector<size_t> inIdx, outIdx;
  for (auto [i, d] : llvm::enumerate(in))
    if (d != 1)
      inIdx.push_back(i);
  for (auto [i, d] : llvm::enumerate(out))
    if (d != 1)
      outIdx.push_back(i);
  size_t i = 0, j = 0, run = 0;
  while (i < inIdx.size() && j < outIdx.size()) {
    size_t i0 = i, j0 = j;
    int64_t pi = in[inIdx[i++]], po = out[outIdx[j++]];
    while (pi != po) {
      if (pi < po)
        pi *= in[inIdx[i++]];
      else
        po *= out[outIdx[j++]];
    }
    std::string tag = "r" + std::to_string(run++);
    size_t ni = i - i0, no = j - j0;
    if (ni == 1 && no == 1) {
      inEntry[inIdx[i0]] = outEntry[outIdx[j0]] = tag;
    } else if (ni == 1) {
      std::string group = "(";
      for (size_t k = 0; k < no; ++k) {
        std::string name = tag + "_" + std::to_string(k);
        outEntry[outIdx[j0 + k]] = name;
        group += (k ? " " : "") + name;
      }
      inEntry[inIdx[i0]] = group + ")";
    } else if (no == 1) {
      std::string group = "(";
      for (size_t k = 0; k < ni; ++k) {
        std::string name = tag + "_" + std::to_string(k);
        inEntry[inIdx[i0 + k]] = name;
        group += (k ? " " : "") + name;
      }
      outEntry[outIdx[j0]] = group + ")";
    } else {
      for (size_t k = 0; k < ni; ++k)
        inEntry[inIdx[i0 + k]] = tag + "_i" + std::to_string(k) + "^";
      for (size_t k = 0; k < no; ++k)
        outEntry[outIdx[j0 + k]] = tag + "_o" + std::to_string(k) + "^";
    }
  }
  return makeAnnotation({joinEntry(inEntry)}, {joinEntry(outEntry)});
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto in = tensorType(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (int64_t(perm.size()) != in.getRank())
    return emitOptionalError(loc, "perm has ", perm.size(),
                             " entries but the input has rank ", in.getRank());
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (failed(checkAxis(loc, p, in.getRank(), "perm entry")))
      return failure();
    if (seen[p])
      return emitOptionalError(loc, "perm is not a permutation: ", p,
                               " appears twice");
    seen[p] = true;
    shape.push_back(in.getDimSize(p));
  }
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  // Result dimension i is input dimension perm[i]; through a transpose
  // whose input is itself a transpose, it is that one's input dimension
  // inner[perm[i]]. When that is i everywhere (the backward's transpose of
  // a weight the forward transposed), the pair is the inner input, and
  // the program neither copies the weight back nor holds the copy (with
  // micro-batches CSE would keep one such copy per weight for the whole
  // backward).
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> through(perm.begin(), perm.end());
  Value source = getInput();
  if (auto inner = source.getDefiningOp<TransposeOp>()) {
    for (int64_t &p : through)
      p = inner.getPerm()[p];
    source = inner.getInput();
  }
  for (auto [i, p] : llvm::enumerate(through))
    if (int64_t(i) != p)
      return {};
  return source;
}

Result<annotation::Annotation> TransposeOp::buildAnnotation() {
  std::vector<std::string> in = dimNames(getPerm().size()), out;
  for (int64_t p : getPerm())
    out.push_back(in[p]);
  return makeAnnotation({joinEntry(in)}, {joinEntry(out)});
}

LogicalResult BroadcastToOp::verify() {
  auto in = tensorType(getInput());
  auto out = tensorType(getResult());
  if (in.getElementType() != out.getElementType())
    return emitOpError("changes the element type from ")
           << in.getElementType() << " to " << out.getElementType();
  if (in.getRank() > out.getRank())
    return emitOpError("cannot broadcast rank ")
           << in.getRank() << " to the lower rank " << out.getRank();
  int64_t offset = out.getRank() - in.getRank();
  for (int64_t i = 0; i < in.getRank(); ++i) {
    int64_t d = in.getDimSize(i), o = out.getDimSize(offset + i);
    if (d != o && d != 1)
      return emitOpError("cannot broadcast ")
             << shapeStr(in.getShape()) << " to " << shapeStr(out.getShape())
             << ": input dimension " << i << " is " << d << ", not 1 or " << o;
  }
  return success();
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto splat = dyn_cast_or_null<SplatElementsAttr>(adaptor.getInput()))
    return splat.resizeSplat(getType());
  return {};
}

Result<annotation::Annotation> BroadcastToOp::buildAnnotation() {
  ArrayRef<int64_t> in = getInput().getType().getShape();
  ArrayRef<int64_t> out = getType().getShape();
  std::vector<std::string> outNames = dimNames(out.size()), inNames;
  size_t offset = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    inNames.push_back(
        in[i] == 1 && out[offset + i] != 1 ? "1" : outNames[offset + i]);
  return makeAnnotation({joinEntry(inNames)}, {joinEntry(outNames)});
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto in = tensorType(adaptor.getInput());
  ArrayRef<int64_t> starts = adaptor.getStarts(), limits = adaptor.getLimits(),
                    steps = adaptor.getSteps();
  int64_t rank = in.getRank();
  if (int64_t(starts.size()) != rank || int64_t(limits.size()) != rank ||
      int64_t(steps.size()) != rank)
    return emitOptionalError(loc, "starts, limits and steps need ", rank,
                             " entries each (the input rank), found ",
                             starts.size(), ", ", limits.size(), " and ",
                             steps.size());
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t size = in.getDimSize(i);
    if (steps[i] < 1)
      return emitOptionalError(loc, "step ", steps[i], " of dimension ", i,
                               " must be >= 1");
    if (starts[i] < 0 || starts[i] > limits[i] || limits[i] > size)
      return emitOptionalError(loc, "dimension ", i, " of size ", size,
                               " cannot be sliced from ", starts[i], " to ",
                               limits[i],
                               " (need 0 <= start <= limit <= ", size, ")");
    shape.push_back((limits[i] - starts[i] + steps[i] - 1) / steps[i]);
  }
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

namespace {
bool isWholeDim(SliceOp op, int64_t i) {
  return op.getStarts()[i] == 0 && op.getSteps()[i] == 1 &&
         op.getLimits()[i] == op.getInput().getType().getDimSize(i);
}
} // namespace

/// A local slice's offsets depend on the rank's coordinate.
ArrayRef<StringRef> SliceOp::getRankVariantAttrNames() {
  static constexpr StringRef kNames[] = {"starts", "limits"};
  return kNames;
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  for (int64_t i = 0, e = getType().getRank(); i < e; ++i)
    if (!isWholeDim(*this, i))
      return {};
  return getInput();
}

Result<annotation::Annotation> SliceOp::buildAnnotation() {
  int64_t rank = getType().getRank();
  std::vector<std::string> in, out;
  for (int64_t i = 0; i < rank; ++i) {
    std::string name = "d" + std::to_string(i);
    if (isWholeDim(*this, i)) {
      in.push_back(name);
      out.push_back(name);
    } else {
      in.push_back(name + "^");
      out.push_back("s" + std::to_string(i) + "^");
    }
  }
  return makeAnnotation({joinEntry(in)}, {joinEntry(out)});
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto in = tensorType(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, in.getRank())))
    return failure();
  ArrayRef<int64_t> sizes = adaptor.getSizes();
  if (sizes.empty())
    return emitOptionalError(loc, "sizes must not be empty");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 1)
      return emitOptionalError(loc, "split size ", s, " must be >= 1");
    total += s;
  }
  if (total != in.getDimSize(axis))
    return emitOptionalError(loc, "split sizes add up to ", total,
                             " but dimension ", axis, " has size ",
                             in.getDimSize(axis));
  for (int64_t s : sizes) {
    SmallVector<int64_t> shape(in.getShape());
    shape[axis] = s;
    types.push_back(RankedTensorType::get(shape, in.getElementType()));
  }
  return success();
}

namespace {
/// Entries for split/concat: the axis gets its own name per piece.
std::string axisPieceEntry(int64_t rank, int64_t axis,
                           const std::string &name) {
  std::vector<std::string> names = dimNames(rank);
  names[axis] = name + "^";
  return joinEntry(names);
}
} // namespace

Result<annotation::Annotation> SplitOp::buildAnnotation() {
  int64_t rank = getInput().getType().getRank();
  std::vector<std::string> outs;
  for (size_t i = 0; i < getResults().size(); ++i)
    outs.push_back(axisPieceEntry(rank, getAxis(), "p" + std::to_string(i)));
  return makeAnnotation({axisPieceEntry(rank, getAxis(), "s")}, outs);
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "needs at least one input");
  auto first = tensorType(inputs.front());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, first.getRank())))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (auto [i, v] : llvm::enumerate(inputs)) {
    auto t = tensorType(v);
    if (t.getElementType() != first.getElementType())
      return emitOptionalError(loc, "input ", i, " has element type ",
                               t.getElementType(), ", input 0 has ",
                               first.getElementType());
    if (t.getRank() != first.getRank())
      return emitOptionalError(loc, "input ", i, " has rank ", t.getRank(),
                               ", input 0 has rank ", first.getRank());
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != axis && t.getDimSize(d) != first.getDimSize(d))
        return emitOptionalError(
            loc, "input ", i, " has shape ", shapeStr(t.getShape()),
            ", input 0 has ", shapeStr(first.getShape()),
            ": they differ in dimension ", d, " which is not the axis ", axis);
    shape[axis] += t.getDimSize(axis);
  }
  types.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  // Constant inputs: each outer index takes one run from every input in turn.
  auto type = cast<RankedTensorType>(getType());
  if (type.getNumElements() > kMaxFoldElements)
    return {};
  SmallVector<SmallVector<Attribute>> inputs;
  int64_t total = 0;
  for (auto [a, v] : llvm::zip(adaptor.getInputs(), getInputs())) {
    auto values = foldableElements(a);
    if (!values || cast<RankedTensorType>(v.getType()).getElementType() !=
                       type.getElementType())
      return {};
    total += static_cast<int64_t>(values->size());
    inputs.push_back(std::move(*values));
  }
  if (total != type.getNumElements())
    return {};
  int64_t axis = getAxis();
  int64_t outer = 1;
  for (int64_t d : type.getShape().take_front(axis))
    outer *= d;
  SmallVector<Attribute> out;
  for (int64_t o = 0; o < outer; ++o)
    for (const SmallVector<Attribute> &in : inputs) {
      int64_t run = static_cast<int64_t>(in.size()) / outer;
      out.append(in.begin() + o * run, in.begin() + (o + 1) * run);
    }
  return DenseElementsAttr::get(type, out);
}

Result<annotation::Annotation> ConcatOp::buildAnnotation() {
  int64_t rank = getType().getRank();
  std::vector<std::string> ins;
  for (size_t i = 0; i < getInputs().size(); ++i)
    ins.push_back(axisPieceEntry(rank, getAxis(), "p" + std::to_string(i)));
  return makeAnnotation(ins, {axisPieceEntry(rank, getAxis(), "s")});
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto data = tensorType(adaptor.getData());
  auto indices = tensorType(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, data.getRank())))
    return failure();
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  types.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

Result<annotation::Annotation> GatherOp::buildAnnotation() {
  int64_t rank = getData().getType().getRank();
  int64_t axis = getAxis();
  std::vector<std::string> data = dimNames(rank);
  std::vector<std::string> idx =
      dimNames(getIndices().getType().getRank(), "i");
  std::vector<std::string> out(data.begin(), data.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  // Rows of an embedding table may be split (dist-partition makes the
  // piece: the rows in its range, zeros elsewhere, summed over the pieces).
  data[axis] += axis == 0 ? "+" : "^";
  return makeAnnotation({joinEntry(data), joinEntry(idx)}, {joinEntry(out)});
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

namespace {
LogicalResult checkLogitsLabels(std::optional<Location> loc,
                                RankedTensorType logits,
                                RankedTensorType labels) {
  if (logits.getRank() != 2)
    return emitOptionalError(loc, "logits must be N x C (rank 2), found ",
                             shapeStr(logits.getShape()));
  if (labels.getRank() != 1 || labels.getDimSize(0) != logits.getDimSize(0))
    return emitOptionalError(loc, "labels must have shape ",
                             logits.getDimSize(0), " (N), found ",
                             shapeStr(labels.getShape()));
  return success();
}

RankedTensorType lossType(RankedTensorType logits, LossReduction reduction) {
  if (reduction == LossReduction::none)
    return RankedTensorType::get({logits.getDimSize(0)},
                                 logits.getElementType());
  return RankedTensorType::get({}, logits.getElementType());
}
} // namespace

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto logits = tensorType(adaptor.getLogits());
  if (failed(checkLogitsLabels(loc, logits, tensorType(adaptor.getLabels()))))
    return failure();
  types.push_back(lossType(logits, adaptor.getReduction()));
  return success();
}

Result<annotation::Annotation> SoftmaxCrossEntropyOp::buildAnnotation() {
  if (getReduction() == LossReduction::none)
    return makeAnnotation({"n c+", "n"}, {"n"});
  return makeAnnotation({"n+ c+", "n+"}, {"()"});
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

LogicalResult LayerNormGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto in = tensorType(adaptor.getInput());
  auto grad = tensorType(adaptor.getGrad());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, in.getRank())))
    return failure();
  if (grad != in)
    return emitOptionalError(loc, "grad has type ", grad,
                             " but the input has type ", in);
  if (failed(checkNormalizedShape(loc, in, axis, adaptor.getWeight().getType(),
                                  "weight")))
    return failure();
  auto stats = RankedTensorType::get(statsShape(in.getShape(), axis),
                                     in.getElementType());
  if (adaptor.getMean().getType() != stats ||
      adaptor.getRstd().getType() != stats)
    return emitOptionalError(loc, "mean and rstd must have type ", stats,
                             " (as layer_norm produces them)");
  Type weight = adaptor.getWeight().getType();
  types.append({in, weight, weight});
  return success();
}

Result<annotation::Annotation> LayerNormGradOp::buildAnnotation() {
  int64_t rank = getInput().getType().getRank();
  auto [fullReduced, statsReduced] = layerNormEntries(rank, getAxis(), "+");
  auto [full, stats] = layerNormEntries(rank, getAxis(), "");
  std::string norm = normalizedEntry(rank, getAxis());
  return makeAnnotation(
      {fullReduced, fullReduced, norm, statsReduced, statsReduced},
      {full, norm, norm});
}

LogicalResult SoftmaxCrossEntropyGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto logits = tensorType(adaptor.getLogits());
  if (failed(checkLogitsLabels(loc, logits, tensorType(adaptor.getLabels()))))
    return failure();
  auto expected = lossType(logits, adaptor.getReduction());
  if (adaptor.getGrad().getType() != expected)
    return emitOptionalError(loc, "grad must have the loss type ", expected,
                             ", found ", adaptor.getGrad().getType());
  types.push_back(logits);
  return success();
}

Result<annotation::Annotation> SoftmaxCrossEntropyGradOp::buildAnnotation() {
  if (getReduction() == LossReduction::none)
    return makeAnnotation({"n c", "n", "n"}, {"n c"});
  return makeAnnotation({"n c", "n", "()"}, {"n c"});
}

LogicalResult EmbeddingGradOp::verify() {
  auto grad = tensorType(getGrad());
  auto indices = tensorType(getIndices());
  auto table = tensorType(getResult());
  if (table.getRank() != 2)
    return emitOpError("result must be a V x C table, found ")
           << shapeStr(table.getShape());
  if (table.getElementType() != grad.getElementType())
    return emitOpError("result element type ")
           << table.getElementType() << " differs from the grad's "
           << grad.getElementType();
  SmallVector<int64_t> expected(indices.getShape());
  expected.push_back(table.getDimSize(1));
  if (grad.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("grad has shape ")
           << shapeStr(grad.getShape()) << " but indices "
           << shapeStr(indices.getShape()) << " and a table of width "
           << table.getDimSize(1) << " need " << shapeStr(expected);
  return success();
}

//===----------------------------------------------------------------------===//
// TableGen'd definitions
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrEnums.cpp.inc"

#define GET_OP_CLASSES
#include "tessera/Dialect/Tsr/IR/TsrOps.cpp.inc"
