//===- TsrDialect.cpp - the tsr dialect -----------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/Transforms/InliningUtils.h"

using namespace mlir;
using namespace tessera::tsr;

#include "tessera/Dialect/Tsr/IR/TsrOpsDialect.cpp.inc"

namespace {
/// tsr ops are pure value computations: always legal to inline (the
/// training step inlines its calls of the gradient function).
struct TsrInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

bool tessera::tsr::hasBoundedElementCount(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return false;
  int64_t n = 1;
  for (int64_t d : t.getShape())
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxTensorElements)
      return false;
  return true;
}

void TsrDialect::initialize() {
  addInterfaces<TsrInlinerInterface>();
  addOperations<
#define GET_OP_LIST
#include "tessera/Dialect/Tsr/IR/TsrOps.cpp.inc"
      >();
}

Operation *TsrDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}
