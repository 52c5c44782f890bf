//===- tessera-opt.cpp - Tessera's optimizer driver -----------------------===//
//
// mlir-opt with Tessera's dialects and passes (and the upstream dialects the
// pipeline uses). Registration lives with each dialect; this file only
// gathers it.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Dist/Transforms/Passes.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"
#include "tessera/InitAll.h"
#include "tessera/Pipelines/TrainPipeline.h"
#include "tessera/Support/InputFile.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cstdlib>

// Test passes (test/lib): for lit tests, outside the product libraries.
namespace tessera::test {
void registerTestAnnotationPass();
} // namespace tessera::test

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
  tessera::tsr::registerTsrPasses();
  tessera::dist::registerDistPasses();
  tessera::registerTesseraConversionPasses();
  tessera::registerTrainPipeline();
  tessera::test::registerTestAnnotationPass();

  mlir::DialectRegistry registry;
  tessera::registerAllDialects(registry);
  // arith and tensor: for tests of inputs that use them (and are rejected).
  registry.insert<mlir::arith::ArithDialect, mlir::tensor::TensorDialect>();

  // MlirOptMain's own reading of the input, with two checks first: the
  // input must be a regular file (not /dev/zero, a FIFO, a directory) of
  // bounded size, and its brackets must not nest deeper than MLIR's
  // recursive parser can take (docs/fuzzing.md).
  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv, "Tessera optimizer driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFile, outputFile, registry));
  auto fail = [](const std::string &message) {
    llvm::errs() << "tessera-opt: error: " << message << "\n";
    return EXIT_FAILURE;
  };
  std::unique_ptr<llvm::MemoryBuffer> input;
  if (inputFile == "-") {
    std::string error;
    input = mlir::openInputFile(inputFile, &error);
    if (!input)
      return fail(error);
    if (std::string why = tessera::support::checkMlirDepth(input->getBuffer());
        !why.empty())
      return fail(inputFile + ": " + why);
  } else {
    std::string error;
    std::optional<std::string> text =
        tessera::support::readMlirFile(inputFile, error);
    if (!text)
      return fail(error);
    input = llvm::MemoryBuffer::getMemBufferCopy(*text, inputFile);
  }
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &error);
  if (!output)
    return fail(error);
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
