//===- TsrDialect.cpp - the tsr dialect -----------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

using namespace mlir;
using namespace tessera::tsr;

#include "tessera/Dialect/Tsr/IR/TsrOpsDialect.cpp.inc"

void TsrDialect::initialize() {
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
