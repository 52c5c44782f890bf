//===- Elementwise.cpp - ONNX import rules: elementwise ops
//-----------------===//
//
// One function per op family; registerImportRules below maps ONNX op
// types to them (ImportRules.h says what a rule may use).
//
//===----------------------------------------------------------------------===//

#include "tessera/Target/ONNX/ImportRules.h"

#include <cmath>

namespace tessera::onnx_import {
namespace {

template <typename OpTy> LogicalResult importUnary(ImportContext &cx) {
  FailureOr<Value> x = cx.floatFirstInput({});
  if (failed(x))
    return failure();
  auto op = cx.createTyped<OpTy>(x->getType(), *x);
  if (failed(op))
    return failure();
  return cx.setOutput(0, op->getResult());
}

LogicalResult importGelu(ImportContext &cx) {
  if (failed(cx.checkAttributes({"approximate"})))
    return failure();
  std::string approx = cx.attrString("approximate", "none");
  tsr::GeluApproximation mode;
  if (approx == "none")
    mode = tsr::GeluApproximation::exact;
  else if (approx == "tanh")
    mode = tsr::GeluApproximation::tanh;
  else
    return cx.err() << "unsupported value '" << approx
                    << "' of attribute 'approximate'";
  FailureOr<Value> x = cx.floatInput(0);
  if (failed(x))
    return failure();
  auto op = cx.createTyped<tsr::GeluOp>(x->getType(), mode, *x);
  if (failed(op))
    return failure();
  return cx.setOutput(0, op->getResult());
}

LogicalResult importReciprocal(ImportContext &cx) {
  FailureOr<Value> x = cx.floatFirstInput({});
  if (failed(x))
    return failure();
  // tsr has no reciprocal op: 1 / x.
  FailureOr<Value> one = cx.scalarConstant(1.0, cx.typeOf(*x).getElementType());
  return cx.setOutput(0, cx.binary<tsr::DivOp>(*one, *x));
}

template <typename OpTy> LogicalResult importArith(ImportContext &cx) {
  if (failed(cx.checkAttributes({})))
    return failure();
  FailureOr<Value> lhs = cx.input(0), rhs = cx.input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  if (!isa<FloatType>(cx.typeOf(*lhs).getElementType()))
    return cx.err() << "arithmetic on " << cx.typeOf(*lhs).getElementType()
                    << " values computed at run time is not supported (tsr "
                       "arithmetic is floating-point; integer shape arithmetic "
                       "must be computable at import time)";
  // Pow's exponent may have another type (Pow(float, int64) is valid ONNX).
  Value r = *rhs;
  if (cx.typeOf(r).getElementType() != cx.typeOf(*lhs).getElementType()) {
    FailureOr<Value> c = cx.castTo(r, cx.typeOf(*lhs).getElementType());
    if (failed(c))
      return failure();
    r = *c;
  }
  return cx.setOutput(0, cx.binary<OpTy>(*lhs, r));
}

LogicalResult importCompare(ImportContext &cx, tsr::ComparePredicate pred) {
  if (failed(cx.checkAttributes({})))
    return failure();
  FailureOr<Value> lhs = cx.input(0), rhs = cx.input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  Value l = *lhs, r = *rhs;
  // tsr.compare takes numbers; booleans compare as i32 0/1.
  if (cx.typeOf(l).getElementType().isInteger(1)) {
    FailureOr<Value> lc = cx.castTo(l, cx.b.getI32Type());
    if (failed(lc))
      return failure();
    l = *lc;
  }
  if (cx.typeOf(r).getElementType().isInteger(1)) {
    FailureOr<Value> rc = cx.castTo(r, cx.b.getI32Type());
    if (failed(rc))
      return failure();
    r = *rc;
  }
  return cx.setOutput(0, cx.compare(pred, l, r));
}

LogicalResult importWhere(ImportContext &cx) {
  if (failed(cx.checkAttributes({})))
    return failure();
  FailureOr<Value> c = cx.input(0), x = cx.input(1), y = cx.input(2);
  if (failed(c) || failed(x) || failed(y))
    return failure();
  return cx.setOutput(0, cx.select(*c, *x, *y));
}

/// Trilu: the lower (upper = 0) or upper triangle of the last two
/// dimensions from diagonal k on, zeros elsewhere. A constant input (torch's
/// tril(ones(T, T)) causal mask) is evaluated here; a run-time one becomes
/// where(mask, x, 0) with the mask a constant.
LogicalResult importTrilu(ImportContext &cx) {
  if (failed(cx.checkAttributes({"upper"})))
    return failure();
  bool upper = cx.attrInt("upper", 1) != 0;
  int64_t k = 0;
  if (cx.hasInput(1)) {
    FailureOr<std::vector<int64_t>> ks = cx.constInts(1, "k");
    if (failed(ks))
      return failure();
    if (ks->size() != 1)
      return cx.err() << "input 'k' must hold one integer, found "
                      << ks->size();
    k = (*ks)[0];
  }
  auto keep = [&](int64_t i, int64_t j) {
    return upper ? j - i >= k : j - i <= k;
  };
  std::vector<int64_t> shape;
  if (const Tensor *t = cx.constInput(0))
    shape = t->shape;
  else if (FailureOr<Value> x = cx.input(0); succeeded(x))
    shape.assign(cx.typeOf(*x).getShape().begin(),
                 cx.typeOf(*x).getShape().end());
  else
    return failure();
  int64_t rank = static_cast<int64_t>(shape.size());
  if (rank < 2)
    return cx.err() << "the input must have rank 2 or more, found rank "
                    << rank;
  int64_t rows = shape[rank - 2], cols = shape[rank - 1];
  if (const Tensor *t = cx.constInput(0)) {
    Tensor r = *t;
    size_t es = dtypeSize(r.dtype);
    int64_t n = r.numElements();
    for (int64_t e = 0; e < n; ++e) {
      int64_t i = (e / cols) % rows, j = e % cols;
      if (!keep(i, j))
        std::fill_n(r.data.begin() + e * es, es, 0);
    }
    return cx.setConstOutput(0, std::move(r));
  }
  FailureOr<Value> x = cx.input(0);
  if (failed(x))
    return failure();
  if (failed(cx.checkNotEmpty(shape, cx.node->outputs[0])))
    return failure();
  SmallVector<bool> bits;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      bits.push_back(keep(i, j));
  auto maskType = cx.tensorOf({rows, cols}, cx.b.getI1Type());
  Value mask = tsr::ConstantOp::create(
      cx.b, cx.loc, maskType,
      cast<ElementsAttr>(DenseElementsAttr::get(maskType, bits)));
  FailureOr<Value> zero =
      cx.scalarConstant(0.0, cx.typeOf(*x).getElementType());
  if (failed(zero))
    return failure();
  return cx.setOutput(0, cx.select(mask, *x, *zero));
}

LogicalResult importCast(ImportContext &cx) {
  if (failed(cx.checkAttributes({"to"})))
    return failure();
  DType to = static_cast<DType>(cx.attrInt("to", 0));
  Type elem = cx.elementType(to);
  if (!elem)
    return cx.err() << "unsupported element type " << dtypeName(to)
                    << " (attribute 'to')";
  FailureOr<Value> x = cx.input(0);
  if (failed(x))
    return failure();
  return cx.setOutput(0, cx.castTo(*x, elem));
}

} // namespace

void registerElementwiseImportRules(ImportRuleRegistry &r) {
  r.add("Add", importArith<tsr::AddOp>);
  r.add("Sub", importArith<tsr::SubOp>);
  r.add("Mul", importArith<tsr::MulOp>);
  r.add("Div", importArith<tsr::DivOp>);
  r.add("Pow", importArith<tsr::PowOp>);
  r.add("Sqrt", importUnary<tsr::SqrtOp>);
  r.add("Erf", importUnary<tsr::ErfOp>);
  r.add("Tanh", importUnary<tsr::TanhOp>);
  r.add("Relu", importUnary<tsr::ReluOp>);
  r.add("Neg", importUnary<tsr::NegOp>);
  r.add("Exp", importUnary<tsr::ExpOp>);
  r.add("Log", importUnary<tsr::LogOp>);
  r.add("Sigmoid", importUnary<tsr::SigmoidOp>);
  r.add("Sin", importUnary<tsr::SinOp>);
  r.add("Cos", importUnary<tsr::CosOp>);
  r.add("Reciprocal", importReciprocal);
  r.add("Gelu", importGelu);
  using P = tsr::ComparePredicate;
  for (auto [name, pred] :
       {std::pair{"Equal", P::eq}, std::pair{"Less", P::lt},
        std::pair{"LessOrEqual", P::le}, std::pair{"Greater", P::gt},
        std::pair{"GreaterOrEqual", P::ge}})
    r.add(name,
          [pred = pred](ImportContext &cx) { return importCompare(cx, pred); });
  r.add("Where", importWhere);
  r.add("Cast", importCast);
  r.add("Trilu", importTrilu, 14);
}

} // namespace tessera::onnx_import
