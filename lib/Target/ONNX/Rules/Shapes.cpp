//===- Shapes.cpp - ONNX import rules: shapes and data movement
//-------------===//
//
// One function per op family; registerImportRules below maps ONNX op
// types to them (ImportRules.h says what a rule may use).
//
//===----------------------------------------------------------------------===//

#include "tessera/Target/ONNX/ConstantFolder.h"
#include "tessera/Target/ONNX/ImportRules.h"

#include <cmath>

namespace tessera::onnx_import {
namespace {

LogicalResult importReshape(ImportContext &cx) {
  if (failed(cx.checkAttributes({"allowzero"})))
    return failure();
  FailureOr<Value> x = cx.input(0);
  FailureOr<std::vector<int64_t>> target = cx.constInts(1, "shape");
  if (failed(x) || failed(target))
    return failure();
  std::vector<int64_t> in(cx.typeOf(*x).getShape().begin(),
                          cx.typeOf(*x).getShape().end()),
      out;
  std::string error;
  if (!reshapeShape(in, *target, cx.attrInt("allowzero", 0) != 0, out, error))
    return cx.err() << error;
  return cx.setOutput(0, cx.reshapeTo(*x, out));
}

LogicalResult importFlatten(ImportContext &cx) {
  FailureOr<Value> x = cx.firstInput({"axis"});
  if (failed(x))
    return failure();
  auto shape = cx.typeOf(*x).getShape();
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = cx.attrInt("axis", 1);
  if (axis < -rank || axis > rank)
    return cx.err() << "axis " << axis << " is out of range for rank " << rank;
  if (axis < 0)
    axis += rank;
  return cx.setOutput(0, cx.reshapeTo(*x, {product(shape.take_front(axis)),
                                           product(shape.drop_front(axis))}));
}

LogicalResult importUnsqueezeSqueeze(ImportContext &cx, bool unsqueeze) {
  FailureOr<Value> x = cx.firstInput({"axes"});
  if (failed(x))
    return failure();
  bool given;
  FailureOr<std::vector<int64_t>> axes = cx.axesOperand(given);
  if (failed(axes))
    return failure();
  std::vector<int64_t> in(cx.typeOf(*x).getShape().begin(),
                          cx.typeOf(*x).getShape().end()),
      out;
  std::string error;
  bool ok = unsqueeze ? unsqueezeShape(in, *axes, out, error)
                      : squeezeShape(in, *axes, given, out, error);
  if (!ok)
    return cx.err() << error;
  return cx.setOutput(0, cx.reshapeTo(*x, out));
}

LogicalResult importTranspose(ImportContext &cx) {
  FailureOr<Value> x = cx.firstInput({"perm"});
  if (failed(x))
    return failure();
  int64_t rank = cx.typeOf(*x).getRank();
  SmallVector<int64_t> perm;
  if (auto p = cx.attrInts("perm"))
    perm.assign(p->begin(), p->end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  for (int64_t &p : perm) {
    FailureOr<int64_t> n = cx.normalizeAxis(p, rank, "perm entry");
    if (failed(n))
      return failure();
    p = *n;
  }
  return cx.setOutput(0, cx.transpose(*x, perm));
}

LogicalResult importSplit(ImportContext &cx) {
  FailureOr<Value> x = cx.firstInput({"axis", "split", "num_outputs"});
  if (failed(x))
    return failure();
  auto shape = cx.typeOf(*x).getShape();
  FailureOr<int64_t> axis =
      cx.normalizeAxis(cx.attrInt("axis", 0), shape.size());
  if (failed(axis))
    return failure();
  int64_t dim = shape[*axis];
  int64_t n = static_cast<int64_t>(cx.node->outputs.size());
  if (n == 0)
    return cx.err() << "has no outputs";
  std::vector<int64_t> sizes;
  FailureOr<std::optional<std::vector<int64_t>>> split =
      cx.intsFromInputOrAttr(1, "split");
  if (failed(split))
    return failure();
  if (*split) {
    sizes = **split;
  } else {
    // Equal parts; opset 18's num_outputs lets the last part be smaller.
    int64_t parts = cx.attrInt("num_outputs", n);
    if (parts <= 0)
      return cx.err() << "unsupported value " << parts
                      << " of attribute 'num_outputs'";
    int64_t chunk = (dim + parts - 1) / parts;
    if (!cx.node->getAttribute("num_outputs") && dim % parts)
      return cx.err() << "cannot split dimension " << dim << " into " << parts
                      << " equal parts";
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::min(chunk, dim - i * chunk));
  }
  if (static_cast<int64_t>(sizes.size()) != n)
    return cx.err() << sizes.size() << " split sizes for " << n << " outputs";
  for (int64_t s : sizes)
    if (s <= 0)
      return cx.err() << "split sizes " << shapeString(sizes)
                      << " contain an empty piece; empty tensors are not "
                         "supported";
  auto op = cx.createInferred<tsr::SplitOp>(n, *x, static_cast<uint64_t>(*axis),
                                            ArrayRef<int64_t>(sizes));
  if (failed(op))
    return failure();
  for (int64_t i = 0; i < n; ++i)
    if (failed(cx.setOutput(i, op->getResult(i))))
      return failure();
  return success();
}

LogicalResult importSlice(ImportContext &cx) {
  FailureOr<Value> x = cx.input(0);
  if (failed(x))
    return failure();
  std::vector<int64_t> starts, ends, axes, steps;
  if (cx.opset >= 10) {
    if (failed(cx.checkAttributes({})))
      return failure();
    FailureOr<std::vector<int64_t>> s = cx.constInts(1, "starts"),
                                    e = cx.constInts(2, "ends");
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (cx.hasInput(3)) {
      FailureOr<std::vector<int64_t>> a = cx.constInts(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (cx.hasInput(4)) {
      FailureOr<std::vector<int64_t>> st = cx.constInts(4, "steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  } else {
    if (failed(cx.checkAttributes({"starts", "ends", "axes"})))
      return failure();
    starts = cx.attrInts("starts").value_or(std::vector<int64_t>());
    ends = cx.attrInts("ends").value_or(std::vector<int64_t>());
    axes = cx.attrInts("axes").value_or(std::vector<int64_t>());
  }
  for (int64_t s : steps)
    if (s < 0)
      return cx.err() << "negative steps are not supported (input 'steps' is "
                      << shapeString(steps) << ")";
  std::vector<int64_t> shape(cx.typeOf(*x).getShape().begin(),
                             cx.typeOf(*x).getShape().end()),
      first, step, count;
  std::string error;
  if (!sliceBounds(shape, starts, ends, axes, steps, first, step, count, error))
    return cx.err() << error;
  SmallVector<int64_t> limits;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (count[d] == 0)
      return cx.err() << "the slice of dimension " << d
                      << " is empty; empty tensors are not supported";
    limits.push_back(first[d] + (count[d] - 1) * step[d] + 1);
  }
  if (ArrayRef<int64_t>(count) == cx.typeOf(*x).getShape())
    return cx.setOutput(0, *x);
  auto op = cx.createInferred<tsr::SliceOp>(1, *x, ArrayRef<int64_t>(first),
                                            ArrayRef<int64_t>(limits),
                                            ArrayRef<int64_t>(step));
  if (failed(op))
    return failure();
  return cx.setOutput(0, op->getResult());
}

LogicalResult importConcat(ImportContext &cx) {
  if (failed(cx.checkAttributes({"axis"})))
    return failure();
  SmallVector<Value> ins;
  for (size_t i = 0; i < cx.node->inputs.size(); ++i) {
    FailureOr<Value> v = cx.input(i);
    if (failed(v))
      return failure();
    ins.push_back(*v);
  }
  if (ins.empty())
    return cx.err() << "needs at least one input";
  FailureOr<int64_t> axis =
      cx.normalizeAxis(cx.attrInt("axis", 0), cx.typeOf(ins[0]).getRank());
  if (failed(axis))
    return failure();
  if (ins.size() == 1)
    return cx.setOutput(0, ins[0]);
  return cx.setOutput(0, cx.concat(ins, *axis));
}

LogicalResult importExpand(ImportContext &cx) {
  if (failed(cx.checkAttributes({})))
    return failure();
  FailureOr<Value> x = cx.input(0);
  FailureOr<std::vector<int64_t>> shape = cx.constInts(1, "shape");
  if (failed(x) || failed(shape))
    return failure();
  std::vector<int64_t> in(cx.typeOf(*x).getShape().begin(),
                          cx.typeOf(*x).getShape().end()),
      out;
  if (!broadcastShapes(in, *shape, out))
    return cx.err() << "cannot expand " << shapeString(in) << " to "
                    << shapeString(*shape);
  if (out == in)
    return cx.setOutput(0, *x);
  auto op = cx.createTyped<tsr::BroadcastToOp>(
      cx.tensorOf(out, cx.typeOf(*x).getElementType()), *x);
  if (failed(op))
    return failure();
  return cx.setOutput(0, op->getResult());
}

LogicalResult importGather(ImportContext &cx) {
  FailureOr<Value> data = cx.firstInput({"axis"});
  if (failed(data))
    return failure();
  auto dt = cx.typeOf(*data);
  FailureOr<int64_t> axis =
      cx.normalizeAxis(cx.attrInt("axis", 0), dt.getRank());
  if (failed(axis))
    return failure();
  Value indices;
  if (const Tensor *idx = cx.constInput(1)) {
    // tsr.gather wants indices in [0, size); ONNX also counts from the end.
    int64_t dim = dt.getDimSize(*axis);
    Tensor norm = Tensor::zeros(DType::Int64, idx->shape);
    for (int64_t i = 0, e = idx->numElements(); i < e; ++i) {
      int64_t j = idx->getInt(i);
      if (j < -dim || j >= dim)
        return cx.err() << "index " << j << " is out of range for size " << dim;
      norm.setInt(i, j < 0 ? j + dim : j);
    }
    FailureOr<Value> v = cx.materialize(norm, cx.node->inputs[1]);
    if (failed(v))
      return failure();
    indices = *v;
  } else {
    FailureOr<Value> v = cx.input(1);
    if (failed(v))
      return failure();
    indices = *v;
  }
  auto op = cx.createInferred<tsr::GatherOp>(1, *data, indices,
                                             static_cast<uint64_t>(*axis));
  if (failed(op))
    return failure();
  return cx.setOutput(0, op->getResult());
}

} // namespace

void registerShapeImportRules(ImportRuleRegistry &r) {
  r.add("Reshape", importReshape);
  r.add("Flatten", importFlatten);
  r.add("Unsqueeze",
        [](ImportContext &cx) { return importUnsqueezeSqueeze(cx, true); });
  r.add("Squeeze",
        [](ImportContext &cx) { return importUnsqueezeSqueeze(cx, false); });
  r.add("Transpose", importTranspose);
  r.add("Split", importSplit);
  r.add("Slice", importSlice);
  r.add("Concat", importConcat);
  r.add("Expand", importExpand);
  r.add("Gather", importGather);
}

} // namespace tessera::onnx_import
