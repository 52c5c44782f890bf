//===- StaticMemory.cpp - offsets of a step's storages in one arena -------===//
//
// Writes dist::planStaticMemory's plan (lib/Dialect/Dist/Analysis) into the
// IR for convert-tsr-to-emitc: `dist.arena` slots on each op that has any,
// `dist.arena_bytes` on each function.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Dist/Analysis/MemoryPrediction.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Dist/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace tessera::dist {
#define GEN_PASS_DEF_DISTSTATICMEMORY
#include "tessera/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace tessera::dist

using namespace mlir;
using namespace tessera;

namespace {

struct DistStaticMemoryPass
    : public dist::impl::DistStaticMemoryBase<DistStaticMemoryPass> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      if (f.isExternal())
        continue;
      dist::StaticMemoryPlan plan = dist::planStaticMemory(f);
      Builder b(f.getContext());
      setAttr<Dist::ArenaBytesAttrHelper>(f,
                                          b.getI64IntegerAttr(plan.arenaBytes));
      for (Operation &op : f.getBody().front()) {
        auto it = plan.slots.find(&op);
        if (it == plan.slots.end())
          continue;
        // Sorted by offset, so that the IR and the emitted code read in a
        // fixed order.
        SmallVector<dist::ArenaSlot, 2> slots = it->second;
        llvm::sort(slots,
                   [](const dist::ArenaSlot &a, const dist::ArenaSlot &b) {
                     return a.offset < b.offset;
                   });
        SmallVector<int64_t> flat;
        for (const dist::ArenaSlot &s : slots)
          flat.append({s.offset, s.bytes});
        setAttr<Dist::ArenaAttrHelper>(&op, b.getDenseI64ArrayAttr(flat));
      }
    }
  }
};

} // namespace
