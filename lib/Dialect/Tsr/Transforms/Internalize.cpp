//===- Internalize.cpp - only the entry points stay public ----------------===//

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace tessera::tsr {
#define GEN_PASS_DEF_TSRINTERNALIZE
#include "tessera/Dialect/Tsr/Transforms/Passes.h.inc"
} // namespace tessera::tsr

using namespace mlir;
using namespace tessera;

namespace {

struct TsrInternalizePass
    : public tsr::impl::TsrInternalizeBase<TsrInternalizePass> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<FunctionOpInterface>())
      if (!hasAttr<Tsr::TrainStepAttrHelper>(f) &&
          !hasAttr<Tsr::GradStepAttrHelper>(f))
        f.setPrivate();
  }
};

} // namespace
