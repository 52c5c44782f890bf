//===- TsrDialect.cpp - the tsr dialect -----------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/Transforms/InliningUtils.h"

using namespace mlir;
using namespace tessera;
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

LogicalResult TsrDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  if (!verifyDiscardableAttr({op, std::nullopt}, attr, kDiscardableAttrs,
                             getDialectNamespace()))
    return failure();
  if (attr.getName().getValue() == BackwardAttrHelper::getNameStr() &&
      !isa<UnitAttr, StringAttr>(attr.getValue()))
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' must be a unit attribute or a string, found "
                           << attr.getValue();
  return success();
}

LogicalResult TsrDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                   unsigned arg,
                                                   NamedAttribute attr) {
  return verifyDiscardableValueAttr(op, false, arg, attr, kDiscardableAttrs,
                                    getDialectNamespace());
}

LogicalResult TsrDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                      unsigned res,
                                                      NamedAttribute attr) {
  return verifyDiscardableValueAttr(op, true, res, attr, kDiscardableAttrs,
                                    getDialectNamespace());
}
