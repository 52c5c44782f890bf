//===- Registration.cpp - the llm dialect and what it plugs in ------------===//

#include "tessera/llm/Registration.h"
#include "tessera/Conversion/RuntimeCallToEmitC.h"
#include "tessera/Interfaces/ExtensionInterfaces.h"
#include "tessera/Support/InstallLayout.h"
#include "tessera/llm/IR/LlmDialect.h"
#include "tessera/llm/Raise.h"

#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace tessera;

namespace {

/// Imported subgraphs -> llm ops (tsr-raise).
struct LlmRaise : public RaisePatternInterface {
  using RaisePatternInterface::RaisePatternInterface;
  void populateRaisePatterns(RewritePatternSet &patterns) const final {
    llm::populateLlmRaisePatterns(patterns);
  }
};

/// The kernels the emitted programs link. CPU: the library built beside the
/// compiler (paths set by dialects/llm/CMakeLists.txt) or installed with
/// it. CUDA: the sources of TesseraLlmRuntimeCuda, which the program's
/// build compiles for its architecture, as it does the core's.
struct LlmRuntimeLibrary : public RuntimeLibraryInterface {
  using RuntimeLibraryInterface::RuntimeLibraryInterface;
  LogicalResult getRuntimeLibrary(StringRef target, RuntimeLibrary &library,
                                  std::string &why) const final {
    // Beside an installed tool, else in the build tree.
    if (target == "cuda") {
      library.sources.push_back(
          {support::installedOr("share/tessera/llm/runtime/cuda",
                                TESSERA_LLM_CUDA_SOURCE_DIR),
           "TesseraLlmRuntimeCuda"});
      return success();
    }
    if (target != "cpu") {
      why = "the llm extension has kernels for cpu and cuda only";
      return failure();
    }
    library.includeDirs.push_back(
        support::installedOr("include", TESSERA_LLM_RUNTIME_INCLUDE_DIR));
    library.libraries.push_back(support::installedOr(
        "lib/libTesseraLlmRuntime.a", TESSERA_LLM_RUNTIME_LIBRARY));
    return success();
  }
};

} // namespace

void tessera::llm::registerLlmDialect(DialectRegistry &registry) {
  registry.insert<LlmDialect>();
  // One extension for all three interfaces: the registry keeps one
  // extension per type, and extensions made from function pointers of the
  // same dialect share theirs. Every llm op describes its call (LlmOps.td),
  // so the common runtime-call pattern lowers them all.
  registry.addExtension(+[](MLIRContext *, LlmDialect *dialect) {
    dialect->addInterfaces<RuntimeCallToEmitCInterface<LlmDialect>, LlmRaise,
                           LlmRuntimeLibrary>();
  });
}
