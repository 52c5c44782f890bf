//===- InitAll.cpp - every dialect and interface of Tessera ---------------===//

#include "tessera/InitAll.h"
#include "tessera/Conversion/DistToEmitC.h"
#include "tessera/Conversion/TsrToEmitC.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/llm/Registration.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"

void tessera::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<tsr::TsrDialect, dist::DistDialect, mlir::func::FuncDialect,
                  mlir::emitc::EmitCDialect>();
  mlir::func::registerInlinerExtension(registry);
  registerConvertTsrToEmitCInterface(registry);
  registerConvertDistToEmitCInterface(registry);
  // Extension dialects (dialects/).
  llm::registerLlmDialect(registry);
}
