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

using namespace mlir;

void tessera::registerConvertDistToEmitCInterface(DialectRegistry &registry) {
  registerRuntimeCallToEmitCInterface<dist::DistDialect>(registry);
}
