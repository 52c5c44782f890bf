//===- DistToEmitC.h - dist ops to runtime calls ----------------*- C++ -*-===//

#ifndef TESSERA_CONVERSION_DISTTOEMITC_H
#define TESSERA_CONVERSION_DISTTOEMITC_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace tessera {
/// Attaches dist's ConvertToEmitCPatternInterface: each collective, send
/// and recv becomes its call of the runtime's communicator API (Comm.h).
void registerConvertDistToEmitCInterface(mlir::DialectRegistry &registry);
} // namespace tessera

#endif // TESSERA_CONVERSION_DISTTOEMITC_H
