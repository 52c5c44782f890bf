//===- Activations.cpp - import rules of piecewise activations ------------===//
//
// LeakyRelu, Softplus, Abs, Clip, Min, Max and Tile, written with tsr ops
// that have gradients (compare, where, exp, log, concat), so that they train
// on every backend and plan without kernels of their own:
//
//   LeakyRelu(x)  = where(x > 0, x, alpha x)       gradient 1 or alpha, as
//   torch Abs(x)        = where(x < 0, -x, x) Softplus(x)   = relu(x) + log(1 +
//   exp(-|x|))   (no overflow for large |x|) Clip(x, a, b) = min(max(x, a), b)
//   by two wheres  gradient 1 on [a, b] Max(x, y)     = where(x >= y, x, y);
//   Min with <=; more inputs fold left Tile(x, r)    = r_d copies concatenated
//   along each dimension d
//
// On ties Max and Min pass the whole gradient to the first input (torch
// splits it in two); ties of floats that carry gradients are rare.
//
//===----------------------------------------------------------------------===//

#include "tessera/Target/ONNX/ImportRules.h"

#include <utility>

namespace tessera::onnx_import {
namespace {

/// |x| = where(x < 0, -x, x).
FailureOr<Value> absOf(ImportContext &cx, Value x) {
  FailureOr<Value> zero = cx.scalarConstant(0.0, cx.typeOf(x).getElementType());
  if (failed(zero))
    return failure();
  FailureOr<Value> neg = cx.compare(tsr::ComparePredicate::lt, x, *zero);
  FailureOr<Value> minus = cx.unary<tsr::NegOp>(x);
  if (failed(neg) || failed(minus))
    return failure();
  return cx.select(*neg, *minus, x);
}

LogicalResult importLeakyRelu(ImportContext &cx) {
  FailureOr<Value> x = cx.floatFirstInput({"alpha"});
  if (failed(x))
    return failure();
  Type elem = cx.typeOf(*x).getElementType();
  FailureOr<Value> zero = cx.scalarConstant(0.0, elem),
                   alpha = cx.scalarConstant(cx.attrFloat("alpha", 0.01), elem);
  if (failed(zero) || failed(alpha))
    return failure();
  FailureOr<Value> pos = cx.compare(tsr::ComparePredicate::gt, *x, *zero);
  FailureOr<Value> scaled = cx.binary<tsr::MulOp>(*x, *alpha);
  if (failed(pos) || failed(scaled))
    return failure();
  return cx.setOutput(0, cx.select(*pos, *x, *scaled));
}

LogicalResult importAbs(ImportContext &cx) {
  FailureOr<Value> x = cx.floatFirstInput({});
  if (failed(x))
    return failure();
  return cx.setOutput(0, absOf(cx, *x));
}

LogicalResult importSoftplus(ImportContext &cx) {
  FailureOr<Value> x = cx.floatFirstInput({});
  if (failed(x))
    return failure();
  Type elem = cx.typeOf(*x).getElementType();
  FailureOr<Value> a = absOf(cx, *x);
  if (failed(a))
    return failure();
  FailureOr<Value> na = cx.unary<tsr::NegOp>(*a);
  if (failed(na))
    return failure();
  FailureOr<Value> e = cx.unary<tsr::ExpOp>(*na);
  FailureOr<Value> one = cx.scalarConstant(1.0, elem);
  if (failed(e) || failed(one))
    return failure();
  FailureOr<Value> onePlus = cx.binary<tsr::AddOp>(*e, *one);
  if (failed(onePlus))
    return failure();
  FailureOr<Value> l = cx.unary<tsr::LogOp>(*onePlus);
  FailureOr<Value> r = cx.unary<tsr::ReluOp>(*x);
  if (failed(l) || failed(r))
    return failure();
  return cx.setOutput(0, cx.binary<tsr::AddOp>(*r, *l));
}

LogicalResult importClip(ImportContext &cx) {
  FailureOr<Value> x = cx.floatInput(0);
  if (failed(x))
    return failure();
  Type elem = cx.typeOf(*x).getElementType();
  // Opset 11 moved min and max from attributes to (optional) inputs.
  auto bound = [&](size_t input, const char *attr) -> FailureOr<Value> {
    if (cx.opset < 11) {
      if (!cx.node->getAttribute(attr))
        return Value();
      return cx.scalarConstant(cx.attrFloat(attr, 0), elem);
    }
    if (!cx.hasInput(input))
      return Value();
    FailureOr<Value> v = cx.input(input);
    if (failed(v))
      return failure();
    if (cx.typeOf(*v).getRank() != 0)
      return cx.err() << "min and max must be scalars";
    return cx.castTo(*v, elem);
  };
  if (failed(cx.opset < 11 ? cx.checkAttributes({"min", "max"})
                           : cx.checkAttributes({})))
    return failure();
  FailureOr<Value> lo = bound(1, "min"), hi = bound(2, "max");
  if (failed(lo) || failed(hi))
    return failure();
  // min(max(x, lo), hi): with lo > hi every value becomes hi, as ONNX says.
  Value y = *x;
  for (auto [bound, outside] : {std::pair(*lo, tsr::ComparePredicate::lt),
                                std::pair(*hi, tsr::ComparePredicate::gt)}) {
    if (!bound)
      continue;
    FailureOr<Value> out = cx.compare(outside, y, bound);
    if (failed(out))
      return failure();
    FailureOr<Value> r = cx.select(*out, bound, y);
    if (failed(r))
      return failure();
    y = *r;
  }
  return cx.setOutput(0, y);
}

LogicalResult importMinMax(ImportContext &cx, bool max) {
  if (failed(cx.checkAttributes({})))
    return failure();
  if (cx.node->inputs.empty())
    return cx.err() << "needs at least one input";
  FailureOr<Value> acc = cx.input(0);
  if (failed(acc))
    return failure();
  for (size_t i = 1; i < cx.node->inputs.size(); ++i) {
    FailureOr<Value> v = cx.input(i);
    if (failed(v))
      return failure();
    FailureOr<Value> keep = cx.compare(
        max ? tsr::ComparePredicate::ge : tsr::ComparePredicate::le, *acc, *v);
    if (failed(keep))
      return failure();
    acc = cx.select(*keep, *acc, *v);
    if (failed(acc))
      return failure();
  }
  return cx.setOutput(0, *acc);
}

LogicalResult importTile(ImportContext &cx) {
  if (failed(cx.checkAttributes({})))
    return failure();
  FailureOr<Value> x = cx.input(0);
  FailureOr<std::vector<int64_t>> repeats = cx.constInts(1, "repeats");
  if (failed(x) || failed(repeats))
    return failure();
  int64_t rank = cx.typeOf(*x).getRank();
  if (static_cast<int64_t>(repeats->size()) != rank)
    return cx.err() << "repeats has " << repeats->size()
                    << " values for an input of rank " << rank;
  Value y = *x;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t r = (*repeats)[d];
    if (r < 1)
      return cx.err() << "repeats must be >= 1 (empty results are not "
                         "supported), got "
                      << r;
    if (r == 1)
      continue;
    SmallVector<Value> copies(r, y);
    FailureOr<Value> cat = cx.concat(copies, d);
    if (failed(cat))
      return failure();
    y = *cat;
  }
  return cx.setOutput(0, y);
}

} // namespace

void registerActivationImportRules(ImportRuleRegistry &r) {
  r.add("LeakyRelu", importLeakyRelu);
  r.add("Abs", importAbs);
  r.add("Softplus", importSoftplus);
  r.add("Clip", importClip);
  r.add("Max", [](ImportContext &cx) { return importMinMax(cx, true); });
  r.add("Min", [](ImportContext &cx) { return importMinMax(cx, false); });
  r.add("Tile", importTile);
}

} // namespace tessera::onnx_import
