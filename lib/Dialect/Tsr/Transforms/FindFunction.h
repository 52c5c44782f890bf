//===- FindFunction.h - the function a tsr pass works on --------*- C++ -*-===//
//
// Private to the tsr passes: tsr-autodiff and tsr-optimizer both work on one
// function of the module, named by their func= option or else the only one
// that has the results they need.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_LIB_DIALECT_TSR_TRANSFORMS_FINDFUNCTION_H
#define TESSERA_LIB_DIALECT_TSR_TRANSFORMS_FINDFUNCTION_H

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace tessera {
namespace tsr {

/// The function named `name` when it is not empty, else the only one
/// `matches` accepts. Otherwise emits "<pass>: no function named '<name>'",
/// "<pass>: <several>" (on the second match) or "<pass>: <none>", and
/// returns null.
inline mlir::func::FuncOp
findFunction(mlir::ModuleOp module, llvm::StringRef pass, llvm::StringRef name,
             llvm::function_ref<bool(mlir::func::FuncOp)> matches,
             llvm::StringRef several, llvm::StringRef none) {
  if (!name.empty()) {
    auto f = module.lookupSymbol<mlir::func::FuncOp>(name);
    if (!f)
      module.emitError() << pass << ": no function named '" << name << "'";
    return f;
  }
  mlir::func::FuncOp found;
  for (auto f : module.getOps<mlir::func::FuncOp>()) {
    if (!matches(f))
      continue;
    if (found) {
      f.emitError() << pass << ": " << several;
      return {};
    }
    found = f;
  }
  if (!found)
    module.emitError() << pass << ": " << none;
  return found;
}

/// Index of `f`'s result marked tsr.loss, or -1.
inline int lossIndex(mlir::func::FuncOp f) {
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    if (f.getResultAttr(i, Tsr::LossAttrHelper::getNameStr()))
      return i;
  return -1;
}

} // namespace tsr
} // namespace tessera

#endif // TESSERA_LIB_DIALECT_TSR_TRANSFORMS_FINDFUNCTION_H
