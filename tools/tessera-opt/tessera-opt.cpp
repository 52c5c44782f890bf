//===- tessera-opt.cpp - Tessera's optimizer driver -----------------------===//
//
// mlir-opt with Tessera's dialects and passes (and the upstream dialects the
// pipeline uses). Registration lives with each dialect; this file only
// gathers it.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Dist/Transforms/Passes.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
  tessera::tsr::registerTsrPasses();
  tessera::dist::registerDistPasses();
  tessera::registerTesseraConversionPasses();

  mlir::DialectRegistry registry;
  registry.insert<tessera::tsr::TsrDialect, tessera::dist::DistDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::tensor::TensorDialect, mlir::emitc::EmitCDialect>();
  mlir::func::registerInlinerExtension(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Tessera optimizer driver\n", registry));
}
