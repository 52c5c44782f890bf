//===- Interpreter.h - run tsr functions on the CPU runtime -----*- C++ -*-===//
//
// A reference executor: runs a tsr function op by op on the CPU runtime's
// kernels, without emitting C++. Tests use it to check imported ONNX nodes
// against their expected outputs and gradients against finite differences
// (in f64); tessera-interp exposes it on safetensors files.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_EXEC_INTERPRETER_H
#define TESSERA_EXEC_INTERPRETER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "tessera/runtime/Runtime.h"

#include <string>
#include <vector>

namespace tessera {
namespace exec {

/// Runs `f` on `args` (one tensor per argument, of the argument's dtype and
/// shape). Returns false with a message naming the op on any error: an op
/// the interpreter does not know, a mismatching argument, or a runtime
/// error (e.g. an index out of range).
bool interpret(mlir::func::FuncOp f, const std::vector<rt::Tensor> &args,
               std::vector<rt::Tensor> &results, std::string &error);

/// The runtime dtype of an MLIR element type; false if it has none.
bool toRuntimeDType(mlir::Type elementType, rt::DType &dtype);

} // namespace exec
} // namespace tessera

#endif // TESSERA_EXEC_INTERPRETER_H
