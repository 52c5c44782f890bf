//===- DistToEmitC.cpp - dist ops to runtime calls ------------------------===//
//
// The dist dialect's lowering to EmitC: its ops describe their communicator
// calls (RuntimeCallOpInterface, in DistOps.td), so the dialect only adds
// the common runtime-call pattern for its namespace.
//
//===----------------------------------------------------------------------===//

#include "tessera/Conversion/DistToEmitC.h"
#include "tessera/Conversion/RuntimeCallToEmitC.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"

#include "mlir/Conversion/ConvertToEmitC/ToEmitCInterface.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;

namespace tessera {
namespace {

struct DistToEmitCInterface : public ConvertToEmitCPatternInterface {
  using ConvertToEmitCPatternInterface::ConvertToEmitCPatternInterface;
  void populateConvertToEmitCConversionPatterns(
      ConversionTarget &target, TypeConverter &typeConverter,
      RewritePatternSet &patterns) const final {
    populateRuntimeCallToEmitCPatterns(
        target, typeConverter, patterns,
        dist::DistDialect::getDialectNamespace());
  }
};

} // namespace

void registerConvertDistToEmitCInterface(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *, dist::DistDialect *dialect) {
    dialect->addInterfaces<DistToEmitCInterface>();
  });
}

} // namespace tessera
