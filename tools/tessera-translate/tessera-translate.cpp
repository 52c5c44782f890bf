//===- tessera-translate.cpp - Tessera's translation driver ---------------===//
//
// mlir-translate with Tessera's translations: `--import-onnx` (ONNX model ->
// tsr) and `--mlir-to-cpp` (EmitC -> C++, for the emitted programs).
//
//===----------------------------------------------------------------------===//

#include "mlir/InitAllTranslations.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

#include "tessera/Target/ONNX/ImportONNX.h"

int main(int argc, char **argv) {
  tessera::onnx_import::registerImportONNXTranslation();
  mlir::registerToCppTranslation();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "Tessera translation driver"));
}
