//===- OpMetrics.cpp - what planning passes read off a tsr op -------------===//

#include "tessera/Dialect/Tsr/Analysis/OpMetrics.h"

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"

using namespace mlir;

namespace tessera::tsr {

bool isForward(Operation *op) {
  return !hasAttr<Tsr::BackwardAttrHelper>(op) &&
         !hasAttr<Tsr::UpdateAttrHelper>(op);
}

std::string opName(Operation *op) {
  Location loc = op->getLoc();
  while (auto c = dyn_cast<CallSiteLoc>(loc))
    loc = c.getCallee();
  if (auto n = dyn_cast<NameLoc>(loc))
    return n.getName().str();
  if (auto f = dyn_cast<FusedLoc>(loc))
    for (Location l : f.getLocations())
      if (auto n = dyn_cast<NameLoc>(l))
        return n.getName().str();
  return "";
}

std::string opNameOrKind(Operation *op) {
  std::string name = opName(op);
  return name.empty() ? op->getName().getStringRef().str() : name;
}

} // namespace tessera::tsr
