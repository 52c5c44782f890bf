//===- ExtractRank.cpp - one rank's functions -----------------------------===//

#include "tessera/Dialect/Dist/IR/DistAttrs.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Dist/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"

namespace tessera::dist {
#define GEN_PASS_DEF_DISTEXTRACTRANK
#include "tessera/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace tessera::dist

using namespace mlir;
using namespace tessera;

namespace {

struct DistExtractRankPass
    : public dist::impl::DistExtractRankBase<DistExtractRankPass> {
  using DistExtractRankBase::DistExtractRankBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    dist::MeshAttr mesh = dist::requireMesh(module, "dist-extract-rank",
                                            "dist-plan and dist-partition");
    if (!mesh)
      return signalPassFailure();
    if (rank < 0 || rank >= mesh.numRanks()) {
      module.emitError("dist-extract-rank: rank ")
          << int64_t(rank) << " is not a rank of " << mesh << " (0.."
          << mesh.numRanks() - 1 << ")";
      return signalPassFailure();
    }
    // Erase first: a kept function takes the name of its step, which other
    // ranks' functions do not use, but the step itself may still exist.
    SmallVector<FunctionOpInterface> kept;
    for (auto f :
         llvm::make_early_inc_range(module.getOps<FunctionOpInterface>())) {
      SmallVector<int64_t> ranks = dist::ranksOf(f);
      if (llvm::is_contained(ranks, int64_t(rank)))
        kept.push_back(f);
      else if (!ranks.empty())
        f.erase();
    }
    if (kept.empty()) {
      module.emitError("dist-extract-rank: no function has dist.rank = ")
          << int64_t(rank) << " (run dist-partition first)";
      return signalPassFailure();
    }
    for (FunctionOpInterface f : kept) {
      auto origin = getAttr<Dist::OriginAttrHelper>(f);
      if (!origin)
        continue;
      if (Operation *clash = module.lookupSymbol(origin.getAttr())) {
        clash->emitError("dist-extract-rank: '")
            << origin.getValue() << "' exists beside its per-rank functions";
        return signalPassFailure();
      }
      SymbolTable::setSymbolName(f, origin.getAttr());
      removeAttr<Dist::OriginAttrHelper>(f);
    }
  }
};

} // namespace
