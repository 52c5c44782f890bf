//===- Training.cpp - ONNX import rules: training ops (dropout, losses)
//-----===//
//
// One function per op family; registerImportRules below maps ONNX op
// types to them (ImportRules.h says what a rule may use).
//
//===----------------------------------------------------------------------===//

#include "tessera/Target/ONNX/ImportRules.h"

#include <cmath>

namespace tessera::onnx_import {
namespace {

LogicalResult importDropout(ImportContext &cx) {
  FailureOr<Value> x = cx.input(0);
  if (failed(x))
    return failure();
  double ratio = 0.5;
  bool training = false;
  if (cx.opset >= 12) {
    if (failed(cx.checkAttributes({"seed"})))
      return failure();
    if (cx.hasInput(1)) {
      FailureOr<const Tensor *> r = cx.requireConst(1, "ratio");
      if (failed(r))
        return failure();
      ratio = (*r)->getDouble(0);
    }
    if (cx.hasInput(2)) {
      FailureOr<const Tensor *> t = cx.requireConst(2, "training_mode");
      if (failed(t))
        return failure();
      training = (*t)->getInt(0) != 0;
    }
  } else {
    // Before opset 12 Dropout has no training flag; its tests and runtimes
    // treat it as inference-mode identity.
    if (failed(cx.checkAttributes({"ratio", "is_test"})))
      return failure();
  }
  auto xt = cx.typeOf(*x);
  if (!training || ratio == 0.0) {
    if (failed(cx.setOutput(0, *x)))
      return failure();
    if (!cx.hasOutput(1))
      return success();
    Tensor mask =
        Tensor::zeros(DType::Bool, std::vector<int64_t>(xt.getShape().begin(),
                                                        xt.getShape().end()));
    for (int64_t i = 0, e = mask.numElements(); i < e; ++i)
      mask.setInt(i, 1);
    return cx.setOutput(1, cx.materialize(mask, cx.node->outputs[1]));
  }
  if (failed(cx.requireFloat(*x, "the input")))
    return failure();
  // Without a seed ONNX generates one; a distinct seed per node keeps two
  // dropouts of the same shape from drawing the same mask.
  int64_t seed = cx.attrInt("seed", static_cast<int64_t>(cx.nodeIndex) + 1);
  auto op = cx.createInferred<tsr::DropoutOp>(
      2, *x, cx.b.getF64FloatAttr(ratio), cx.b.getI64IntegerAttr(seed),
      /*offsets=*/nullptr, /*global_shape=*/nullptr);
  if (failed(op))
    return failure();
  if (failed(cx.setOutput(0, op->getOutput())) ||
      failed(cx.setOutput(1, op->getMask())))
    return failure();
  return success();
}

LogicalResult importSoftmaxCrossEntropy(ImportContext &cx) {
  if (failed(cx.checkAttributes({"ignore_index", "reduction"})))
    return failure();
  if (cx.hasInput(2))
    return cx.err() << "class weights (input '" << cx.node->inputs[2]
                    << "') are not supported";
  std::string red = cx.attrString("reduction", "mean");
  tsr::LossReduction reduction;
  if (red == "mean")
    reduction = tsr::LossReduction::mean;
  else if (red == "sum")
    reduction = tsr::LossReduction::sum;
  else if (red == "none")
    reduction = tsr::LossReduction::none;
  else
    return cx.err() << "unsupported value '" << red
                    << "' of attribute 'reduction'";
  FailureOr<Value> scores = cx.input(0), labels = cx.input(1);
  if (failed(scores) || failed(labels) ||
      failed(cx.requireFloat(*scores, "the scores")))
    return failure();
  auto st = cx.typeOf(*scores);
  int64_t rank = st.getRank();
  if (rank < 2)
    return cx.err() << "scores must be N x C or N x C x D1 x ...";
  // tsr's loss is N x C; for N x C x D1.. move C last and flatten: the mean
  // over the non-ignored samples is the same.
  Value logits = *scores, lab = *labels;
  SmallVector<int64_t> lossShape(st.getShape().take_front(1));
  if (rank > 2) {
    SmallVector<int64_t> perm = {0};
    for (int64_t d = 2; d < rank; ++d)
      perm.push_back(d);
    perm.push_back(1);
    FailureOr<Value> t = cx.transpose(logits, perm);
    if (failed(t))
      return failure();
    int64_t c = st.getDimSize(1);
    int64_t rows = st.getNumElements() / c;
    FailureOr<Value> flat = cx.reshapeTo(*t, {rows, c});
    FailureOr<Value> flatLabels = cx.reshapeTo(lab, {rows});
    if (failed(flat) || failed(flatLabels))
      return failure();
    logits = *flat;
    lab = *flatLabels;
    lossShape.append(st.getShape().begin() + 2, st.getShape().end());
  }
  int64_t ignore = cx.attrInt("ignore_index", -100);
  if (!cx.node->getAttribute("ignore_index")) {
    // ONNX then ignores nothing; valid labels lie in [0, C), so a
    // negative ignore_index never matches.
    ignore = -100;
  }
  auto op = cx.createInferred<tsr::SoftmaxCrossEntropyOp>(
      1, logits, lab, cx.b.getI64IntegerAttr(ignore),
      tsr::LossReductionAttr::get(cx.ctx, reduction));
  if (failed(op))
    return failure();
  Value loss = op->getResult();
  if (reduction == tsr::LossReduction::none && rank > 2) {
    FailureOr<Value> r = cx.reshapeTo(loss, lossShape);
    if (failed(r))
      return failure();
    loss = *r;
  }
  if (failed(cx.setOutput(0, loss)))
    return failure();
  if (cx.hasOutput(1)) {
    // log_prob: log_softmax over the class dimension.
    auto lp = cx.createTyped<tsr::LogSoftmaxOp>(st, *scores,
                                                cx.b.getI64IntegerAttr(1));
    if (failed(lp))
      return failure();
    return cx.setOutput(1, lp->getResult());
  }
  return success();
}

} // namespace

void registerTrainingImportRules(ImportRuleRegistry &r) {
  r.add("Dropout", importDropout);
  r.add("SoftmaxCrossEntropyLoss", importSoftmaxCrossEntropy);
}

} // namespace tessera::onnx_import
