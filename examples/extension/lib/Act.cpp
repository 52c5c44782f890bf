//===- Act.cpp - the act dialect: ops, gradient, raising, plugin ----------===//
//
// Everything an extension plugs into Tessera, in one file:
//   - the dialect and its ops (ActOps.td);
//   - the gradient of act.relu2 (GradientOpInterface), in tsr ops;
//   - a raising pattern: the imported `relu(x) * relu(x)` (what
//     torch.onnx.export writes for `torch.relu(x).square()`) becomes
//     act.relu2 (RaisePatternInterface, applied by tsr-raise);
//   - the lowering to EmitC (the core's runtime-call pattern reads each op's
//     record) and the kernels' library (RuntimeLibraryInterface);
//   - MLIR's dialect plugin entry point, which --load-dialect-plugin calls.
//
//===----------------------------------------------------------------------===//

#include "act/ActOps.h"

#include "tessera/Conversion/RuntimeCallToEmitC.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Interfaces/ExtensionInterfaces.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/Config/llvm-config.h"

using namespace mlir;

#include "act/ActDialect.cpp.inc"

#define GET_OP_CLASSES
#include "act/ActOps.cpp.inc"

namespace {
// The training pipeline inlines the forward function into the step.
struct ActInliner : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void act::ActDialect::initialize() {
  addInterfaces<ActInliner>();
  addOperations<
#define GET_OP_LIST
#include "act/ActOps.cpp.inc"
      >();
}

// d/dx relu(x)^2 = 2 relu(x): dx = dy * (relu(x) + relu(x)).
LogicalResult act::Relu2Op::buildGradient(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value relu = tessera::tsr::ReluOp::create(b, loc, getInput());
  Value twice = tessera::tsr::AddOp::create(b, loc, relu, relu);
  dxs.push_back(tessera::tsr::MulOp::create(b, loc, dys[0], twice));
  return success();
}

namespace {
/// mul(r, r) with r = relu(x), of one type -> act.relu2(x).
struct RaiseRelu2 : public OpRewritePattern<tessera::tsr::MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tessera::tsr::MulOp op,
                                PatternRewriter &rewriter) const final {
    auto relu = op.getLhs().getDefiningOp<tessera::tsr::ReluOp>();
    if (!relu || op.getRhs() != op.getLhs() || op.getType() != relu.getType())
      return failure();
    rewriter.replaceOpWithNewOp<act::Relu2Op>(op, relu.getInput());
    return success();
  }
};

struct ActRaise : public tessera::RaisePatternInterface {
  using RaisePatternInterface::RaisePatternInterface;
  void populateRaisePatterns(RewritePatternSet &patterns) const final {
    patterns.add<RaiseRelu2>(patterns.getContext());
  }
};

/// The CPU kernel library built beside the plugin (CMakeLists.txt).
struct ActRuntimeLibrary : public tessera::RuntimeLibraryInterface {
  using RuntimeLibraryInterface::RuntimeLibraryInterface;
  LogicalResult getRuntimeLibrary(StringRef target,
                                  tessera::RuntimeLibrary &library,
                                  std::string &why) const final {
    if (target != "cpu") {
      why = "the act extension has a CPU kernel only";
      return failure();
    }
    library.includeDirs.push_back(ACT_RUNTIME_INCLUDE_DIR);
    library.libraries.push_back(ACT_RUNTIME_LIBRARY);
    return success();
  }
};
} // namespace

static void registerActDialect(DialectRegistry *registry) {
  registry->insert<act::ActDialect>();
  registry->addExtension(+[](MLIRContext *, act::ActDialect *dialect) {
    dialect
        ->addInterfaces<tessera::RuntimeCallToEmitCInterface<act::ActDialect>,
                        ActRaise, ActRuntimeLibrary>();
  });
}

/// What `--load-dialect-plugin` looks up.
extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Act", LLVM_VERSION_STRING,
          registerActDialect};
}
