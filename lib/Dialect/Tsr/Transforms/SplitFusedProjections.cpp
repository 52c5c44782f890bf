//===- SplitFusedProjections.cpp - one projection per piece of a split
//-----===//
//
// A fused projection whose output is split along its features (GPT's
// c_attn: x @ W[C, 3C] + b, split into q, k and v) becomes one projection
// per piece, by a slice of the weight (and of the bias): x @ W[:, piece] +
// b[piece]. Each piece's features are then whole heads, which the tp
// policy's head trace reaches, so the fused QKV projection is split
// column-parallel like separate q, k, v projections (Megatron reorders the
// fused weight for the same reason). Every output element is the same dot
// product as before. Run before tsr-autodiff: the slices' gradients put the
// pieces' weight gradients back into the fused weight's.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace tessera::tsr {
#define GEN_PASS_DEF_TSRSPLITFUSEDPROJECTIONS
#include "tessera/Dialect/Tsr/Transforms/Passes.h.inc"
} // namespace tessera::tsr

using namespace mlir;
using namespace tessera;
using namespace tessera::tsr;

namespace {

/// The matmul by a matrix (rank-2 right operand) that `v` is, or null.
MatmulOp projection(Value v) {
  auto m = v.getDefiningOp<MatmulOp>();
  if (!m || !m->hasOneUse() ||
      cast<RankedTensorType>(m.getRhs().getType()).getRank() != 2)
    return nullptr;
  return m;
}

/// Rewrites `split` when it cuts the features of a projection (plus an
/// optional rank-1 bias); true if it did.
bool splitProjection(SplitOp split) {
  Value in = split.getInput();
  auto type = cast<RankedTensorType>(in.getType());
  if (split.getAxis() != type.getRank() - 1 || !in.hasOneUse())
    return false;
  MatmulOp m = projection(in);
  Value bias;
  Operation *add = nullptr;
  if (!m) {
    auto a = in.getDefiningOp<AddOp>();
    if (!a)
      return false;
    for (auto [mm, b] : {std::pair(a.getLhs(), a.getRhs()),
                         std::pair(a.getRhs(), a.getLhs())}) {
      auto bt = cast<RankedTensorType>(b.getType());
      if (MatmulOp p = projection(mm);
          p && bt.getRank() == 1 &&
          bt.getDimSize(0) == type.getShape().back()) {
        m = p;
        bias = b;
        break;
      }
    }
    if (!m)
      return false;
    add = a;
  }
  Value w = m.getRhs();
  int64_t k = cast<RankedTensorType>(w.getType()).getDimSize(0);
  OpBuilder b(split);
  int64_t offset = 0;
  SmallVector<Value> pieces;
  for (int64_t size : split.getSizes()) {
    // The new ops keep the projection's location (its ONNX node name, by
    // which pp finds layer groups) and the bias add's.
    b.setInsertionPoint(split);
    Value wi = SliceOp::create(b, m.getLoc(), w, ArrayRef<int64_t>{0, offset},
                               ArrayRef<int64_t>{k, offset + size},
                               ArrayRef<int64_t>{1, 1});
    Value y = MatmulOp::create(b, m.getLoc(), m.getLhs(), wi);
    if (bias) {
      Value bi = SliceOp::create(
          b, add->getLoc(), bias, ArrayRef<int64_t>{offset},
          ArrayRef<int64_t>{offset + size}, ArrayRef<int64_t>{1});
      y = AddOp::create(b, add->getLoc(), y, bi);
    }
    pieces.push_back(y);
    offset += size;
  }
  split.replaceAllUsesWith(pieces);
  split.erase();
  if (add)
    add->erase();
  m.erase();
  return true;
}

struct TsrSplitFusedProjectionsPass
    : public tessera::tsr::impl::TsrSplitFusedProjectionsBase<
          TsrSplitFusedProjectionsPass> {
  void runOnOperation() override {
    SmallVector<SplitOp> splits;
    getOperation()->walk([&](SplitOp s) { splits.push_back(s); });
    for (SplitOp s : splits)
      splitProjection(s);
  }
};

} // namespace
