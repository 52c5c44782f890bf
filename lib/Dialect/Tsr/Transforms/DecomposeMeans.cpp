//===- DecomposeMeans.cpp - means as sums over a count --------------------===//
//
// Partitioning splits reduced dimensions into partial sums; a mean computed
// locally would divide by the LOCAL count. Making the division explicit
// (sum / count, the count itself a sum) lets every split stay a sum, and
// the partitioner combines the partial sums and counts before dividing.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace tessera::tsr {
#define GEN_PASS_DEF_TSRDECOMPOSEMEANS
#include "tessera/Dialect/Tsr/Transforms/Passes.h.inc"
} // namespace tessera::tsr

using namespace mlir;
using namespace tessera;
using namespace tessera::tsr;

namespace {

/// Copies the phase marks of `from` onto every op created since `mark`.
void copyMarks(Operation *from, Block *block, Block::iterator begin,
               Block::iterator end) {
  for (auto it = begin; it != end; ++it)
    for (StringRef attr : {Tsr::BackwardAttrHelper::getNameStr(),
                           Tsr::UpdateAttrHelper::getNameStr()})
      if (from->hasAttr(attr))
        it->setAttr(attr, from->getAttr(attr));
}

/// The number of labels that count (label != ignore_index), as a rank-0
/// tensor of `element` type.
Value countLabels(OpBuilder &b, Location loc, Value labels, int64_t ignore,
                  Type element) {
  auto lt = cast<RankedTensorType>(labels.getType());
  auto scalarType = RankedTensorType::get({}, lt.getElementType());
  Value ignoreValue = ConstantOp::create(
      b, loc, scalarType,
      DenseElementsAttr::get(scalarType,
                             IntegerAttr::get(lt.getElementType(), ignore)));
  Value counted =
      CompareOp::create(b, loc, ComparePredicate::ne, labels, ignoreValue);
  Value asFloat = CastOp::create(
      b, loc, RankedTensorType::get(lt.getShape(), element), counted);
  return ReduceSumOp::create(b, loc, asFloat, ArrayRef<int64_t>{0},
                             /*keepdims=*/false);
}

struct DecomposeMeansPass
    : public tsr::impl::TsrDecomposeMeansBase<DecomposeMeansPass> {
  void runOnOperation() override {
    SmallVector<Operation *> targets;
    getOperation()->walk([&](Operation *op) {
      if (auto ce = dyn_cast<SoftmaxCrossEntropyOp>(op)) {
        if (ce.getReduction() == LossReduction::mean)
          targets.push_back(op);
      } else if (auto g = dyn_cast<SoftmaxCrossEntropyGradOp>(op)) {
        if (g.getReduction() == LossReduction::mean)
          targets.push_back(op);
      } else if (isa<ReduceMeanOp>(op)) {
        targets.push_back(op);
      }
    });
    for (Operation *op : targets) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      Block *block = op->getBlock();
      Block::iterator begin = Block::iterator(op);
      bool first = begin == block->begin();
      Block::iterator before = first ? block->end() : std::prev(begin);
      Value replacement;
      if (auto ce = dyn_cast<SoftmaxCrossEntropyOp>(op)) {
        Type e = ce.getType().getElementType();
        Value sum = SoftmaxCrossEntropyOp::create(
            b, loc, ce.getLogits(), ce.getLabels(), ce.getIgnoreIndex(),
            LossReduction::sum);
        Value count =
            countLabels(b, loc, ce.getLabels(), ce.getIgnoreIndex(), e);
        replacement = DivOp::create(b, loc, sum, count);
      } else if (auto g = dyn_cast<SoftmaxCrossEntropyGradOp>(op)) {
        Type e = g.getType().getElementType();
        Value count = countLabels(b, loc, g.getLabels(), g.getIgnoreIndex(), e);
        Value scaled = DivOp::create(b, loc, g.getGrad(), count);
        replacement = SoftmaxCrossEntropyGradOp::create(
            b, loc, g.getLogits(), g.getLabels(), scaled, g.getIgnoreIndex(),
            LossReduction::sum);
      } else {
        auto mean = cast<ReduceMeanOp>(op);
        int64_t n = 1;
        for (int64_t a : mean.getAxes())
          n *= mean.getInput().getType().getDimSize(a);
        Value sum = ReduceSumOp::create(b, loc, mean.getInput(), mean.getAxes(),
                                        mean.getKeepdims());
        Type e = mean.getType().getElementType();
        auto st = RankedTensorType::get({}, e);
        Value inv = ConstantOp::create(
            b, loc, st,
            DenseElementsAttr::get(st, FloatAttr::get(e, 1.0 / n).getValue()));
        replacement = MulOp::create(b, loc, sum, inv);
      }
      copyMarks(op, block, first ? block->begin() : std::next(before),
                Block::iterator(op));
      op->getResult(0).replaceAllUsesWith(replacement);
      op->erase();
    }
  }
};

} // namespace
