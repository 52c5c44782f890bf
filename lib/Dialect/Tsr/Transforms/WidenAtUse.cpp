//===- WidenAtUse.cpp - a widening cast's copy per user -------------------===//
//
// A widening cast (bf16 -> f32) is cheap to redo and its result is twice the
// size of its input: keeping the result alive until its last user (the
// backward, for a forward activation) would hold the f32 copy beside the
// bf16 value that tsr-mixed-precision stores. One copy per user, made right
// before it, lives across that user only.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace tessera::tsr {
#define GEN_PASS_DEF_TSRWIDENATUSE
#include "tessera/Dialect/Tsr/Transforms/Passes.h.inc"
} // namespace tessera::tsr

using namespace mlir;
using namespace tessera;
using namespace tessera::tsr;

namespace {

bool isWidening(CastOp cast) {
  auto from = dyn_cast<FloatType>(cast.getInput().getType().getElementType());
  auto to = dyn_cast<FloatType>(cast.getType().getElementType());
  return from && to && to.getWidth() > from.getWidth();
}

struct WidenAtUsePass : public tsr::impl::TsrWidenAtUseBase<WidenAtUsePass> {
  void runOnOperation() override {
    SmallVector<CastOp> casts;
    getOperation()->walk([&](CastOp cast) {
      if (isWidening(cast))
        casts.push_back(cast);
    });
    OpBuilder b(&getContext());
    for (CastOp cast : casts) {
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : cast->getUses())
        uses.push_back(&use);
      // Already one user, right after the cast: nothing to shorten.
      if (uses.size() == 1 && uses.front()->getOwner() == cast->getNextNode())
        continue;
      llvm::DenseMap<Operation *, Value> copies;
      for (OpOperand *use : uses) {
        Operation *user = use->getOwner();
        // A user in another block (a region) keeps the original.
        if (user->getBlock() != cast->getBlock())
          continue;
        Value &copy = copies[user];
        if (!copy) {
          b.setInsertionPoint(user);
          Operation *c = b.clone(*cast.getOperation());
          c->setLoc(user->getLoc());
          for (StringRef mark : {Tsr::BackwardAttrHelper::getNameStr(),
                                 Tsr::UpdateAttrHelper::getNameStr()}) {
            c->removeAttr(mark);
            if (Attribute a = user->getAttr(mark))
              c->setAttr(mark, a);
          }
          copy = c->getResult(0);
        }
        use->set(copy);
      }
      if (cast->use_empty())
        cast->erase();
    }
  }
};

} // namespace
