//===- Constants.cpp - ONNX import rules: constants and identity
//------------===//
//
// One function per op family; registerImportRules below maps ONNX op
// types to them (ImportRules.h says what a rule may use).
//
//===----------------------------------------------------------------------===//

#include "tessera/Target/ONNX/ImportRules.h"

#include <cmath>

namespace tessera::onnx_import {
namespace {

LogicalResult importConstant(ImportContext &cx) {
  if (cx.node->attributes.size() != 1)
    return cx.err() << "expects exactly one value attribute";
  const Attribute &a = cx.node->attributes[0];
  Tensor t;
  if (a.name == "value") {
    t = a.t;
  } else if (a.name == "value_float") {
    t = Tensor::zeros(DType::Float, {});
    t.setDouble(0, a.f);
  } else if (a.name == "value_int") {
    t = Tensor::zeros(DType::Int64, {});
    t.setInt(0, a.i);
  } else if (a.name == "value_floats") {
    t = Tensor::zeros(DType::Float, {static_cast<int64_t>(a.floats.size())});
    for (size_t i = 0; i < a.floats.size(); ++i)
      t.setDouble(static_cast<int64_t>(i), a.floats[i]);
  } else if (a.name == "value_ints") {
    t = Tensor::fromInts(a.ints);
  } else {
    return cx.err() << "unsupported attribute '" << a.name << "'";
  }
  if (t.dtype == DType::String)
    return cx.err() << "string constants are not supported";
  return cx.setConstOutput(0, std::move(t));
}

LogicalResult importConstantOfShape(ImportContext &cx) {
  if (failed(cx.checkAttributes({"value"})))
    return failure();
  FailureOr<std::vector<int64_t>> shape = cx.constInts(0, "shape");
  if (failed(shape))
    return failure();
  // Reached when the folder declined a large result: a splat costs nothing.
  const Attribute *a = cx.node->getAttribute("value");
  Tensor one = Tensor::zeros(DType::Float, {1});
  if (a)
    one = a->t;
  if (one.numElements() != 1)
    return cx.err() << "attribute 'value' must hold one element";
  Type elem = cx.elementType(one.dtype);
  if (!elem)
    return cx.err() << "unsupported element type " << dtypeName(one.dtype)
                    << " (attribute 'value')";
  for (int64_t d : *shape)
    if (d < 0)
      return cx.err() << "negative dimension in shape " << shapeString(*shape);
  auto type = cx.tensorOf(*shape, elem);
  DenseElementsAttr attr;
  if (one.dtype == DType::Bool)
    attr = DenseElementsAttr::get(type, one.getInt(0) != 0);
  else
    attr = DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(one.data.data(), one.data.size()));
  auto op =
      tsr::ConstantOp::create(cx.b, cx.loc, type, cast<ElementsAttr>(attr));
  return cx.setOutput(0, op.getResult());
}

LogicalResult importIdentity(ImportContext &cx) {
  if (failed(cx.checkAttributes({})))
    return failure();
  if (!cx.hasInput(0))
    return cx.err() << "input 0 is missing";
  auto it = cx.model.valueTypes.find(cx.node->inputs[0]);
  if (it != cx.model.valueTypes.end() && !it->second.isTensor)
    return cx.err() << "only tensor values are supported";
  return cx.setOutput(0, cx.input(0));
}

} // namespace

void registerConstantImportRules(ImportRuleRegistry &r) {
  r.add("Constant", importConstant);
  r.add("ConstantOfShape", importConstantOfShape);
  r.add("Identity", importIdentity);
}

} // namespace tessera::onnx_import
