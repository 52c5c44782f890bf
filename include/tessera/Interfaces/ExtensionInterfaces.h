//===- ExtensionInterfaces.h - dialects' pipeline hooks ---------*- C++ -*-===//
//
// Dialect interfaces through which an extension dialect (dialects/) plugs
// into the parts of the pipeline that are not one op's job:
//
// - RaisePatternInterface: rewrite patterns that raise imported core
//   subgraphs into the dialect's ops (run by the tsr-raise pass, before
//   autodiff);
// - RuntimeLibraryInterface: the headers and libraries that a program
//   calling the dialect's kernels is built with (read by lib/Package when
//   it writes the program's CMakeLists.txt).
//
// Both are found on the dialects of the context, as MLIR's
// ConvertToEmitCPatternInterface is: a dialect that registers them needs no
// line in the core.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_INTERFACES_EXTENSIONINTERFACES_H
#define TESSERA_INTERFACES_EXTENSIONINTERFACES_H

#include "mlir/IR/DialectInterface.h"
#include "mlir/Support/LLVM.h"
#include "mlir/Support/TypeID.h"

#include <string>
#include <vector>

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace tessera {

/// Patterns that raise core (tsr) subgraphs to a dialect's ops.
class RaisePatternInterface
    : public mlir::DialectInterface::Base<RaisePatternInterface> {
public:
  RaisePatternInterface(mlir::Dialect *dialect) : Base(dialect) {}

  virtual void
  populateRaisePatterns(mlir::RewritePatternSet &patterns) const = 0;
};

/// How a program that calls a dialect's kernels is built.
struct RuntimeLibrary {
  std::vector<std::string> includeDirs; ///< the kernels' headers
  std::vector<std::string> libraries;   ///< linked before the core runtime
  /// Kernels compiled with the program (--target cuda, whose kernels are
  /// compiled for the chosen architecture): a CMake source directory that
  /// defines `target`, added to the program's build after the core's
  /// runtime targets exist (so it may link TesseraRuntimeCuda), and the
  /// library target the program links.
  struct Source {
    std::string dir, target;
  };
  std::vector<Source> sources;
};

class RuntimeLibraryInterface
    : public mlir::DialectInterface::Base<RuntimeLibraryInterface> {
public:
  RuntimeLibraryInterface(mlir::Dialect *dialect) : Base(dialect) {}

  /// The library for `target` ("cpu", "cuda"); failure with `why` set when
  /// the dialect has no kernels for it.
  virtual mlir::LogicalResult getRuntimeLibrary(llvm::StringRef target,
                                                RuntimeLibrary &library,
                                                std::string &why) const = 0;
};

} // namespace tessera

MLIR_DECLARE_EXPLICIT_TYPE_ID(tessera::RaisePatternInterface)
MLIR_DECLARE_EXPLICIT_TYPE_ID(tessera::RuntimeLibraryInterface)

#endif // TESSERA_INTERFACES_EXTENSIONINTERFACES_H
