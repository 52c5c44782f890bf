//===- ImportONNX.h - ONNX model -> tsr -------------------------*- C++ -*-===//
//
// Imports an ONNX model (as torch exports it) into one `func.func @forward`
// of tsr ops: initializers become `tsr.param` arguments (file order), the
// other graph inputs `tsr.input` arguments, graph outputs `tsr.output`
// results with the loss marked `tsr.loss`. Integer shape subgraphs are
// evaluated at import time.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_TARGET_ONNX_IMPORTONNX_H
#define TESSERA_TARGET_ONNX_IMPORTONNX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <functional>
#include <string>

namespace tessera::onnx_import {

struct ImportOptions {
  /// Graph output to mark `tsr.loss`; empty: the only rank-0 float output.
  std::string lossOutput;
  /// Accept a model without a loss output (node tests, inference graphs).
  bool allowNoLoss = false;
  /// If set, write every initializer to this safetensors file.
  std::string weightsOut;
  /// Run onnx::checker and strict shape inference. Off only for models of
  /// opsets newer than the installed ONNX library (--onnx-no-check).
  bool check = true;
  /// Which float initializers are trained (tsr.param) and which are
  /// constants (buffers: masks, tables). The model's metadata entry
  /// "tessera.parameters" (a JSON list of the parameters' names, which the
  /// exporters in examples/ write) decides; without it, an initializer that
  /// is only compared or used as a Where condition (a mask) is a constant
  /// and every other one is trained. `freeze` (initializers kept constant)
  /// and `train` (initializers trained) override, each a regular expression
  /// matched against whole names (docs/architecture.md,
  /// "Parameters and constants").
  std::string freeze, train;
  /// Receives one line saying what was decided and why, when some float
  /// initializer is a constant or the model has no parameter list;
  /// `allTrained`: every float initializer is trained.
  std::function<void(const std::string &line, bool allTrained)> report;
};

/// Imports the ONNX model held in `bytes`. `path` names the file in
/// locations and diagnostics and locates external data. Diagnostics go to
/// the context's handlers as "<path>: node '<name>' (op <type>): ..."
/// errors; returns null on any error.
mlir::OwningOpRef<mlir::ModuleOp> importONNX(llvm::StringRef bytes,
                                             llvm::StringRef path,
                                             mlir::MLIRContext *context,
                                             const ImportOptions &options);

/// Registers `--import-onnx` with mlir-translate's registry, with the
/// options --loss-output, --allow-no-loss, --weights-out, --freeze and
/// --train.
void registerImportONNXTranslation();

} // namespace tessera::onnx_import

#endif // TESSERA_TARGET_ONNX_IMPORTONNX_H
