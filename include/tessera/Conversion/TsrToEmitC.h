//===- TsrToEmitC.h - tsr ops to runtime calls ------------------*- C++ -*-===//

#ifndef TESSERA_CONVERSION_TSRTOEMITC_H
#define TESSERA_CONVERSION_TSRTOEMITC_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace tessera {
/// Attaches tsr's ConvertToEmitCPatternInterface: each op becomes the
/// runtime call of its record (Ops.h); tsr.constant is materialised by
/// convert-tsr-to-emitc itself.
void registerConvertTsrToEmitCInterface(mlir::DialectRegistry &registry);
} // namespace tessera

#endif // TESSERA_CONVERSION_TSRTOEMITC_H
