//===- RuntimeCallToEmitC.h - ops to runtime calls in EmitC -----*- C++ -*-===//
//
// The emission of any op that implements RuntimeCallOpInterface: one
// `emitc.call_opaque` of `tessera::rt::<callee>` with the arguments its
// RuntimeCall describes. A dialect lowers its ops by adding this pattern
// from its ConvertToEmitCPatternInterface (TsrToEmitC, DistToEmitC, the
// extensions under dialects/); convert-tsr-to-emitc collects the patterns
// of every dialect in the module.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_CONVERSION_RUNTIMECALLTOEMITC_H
#define TESSERA_CONVERSION_RUNTIMECALLTOEMITC_H

#include "tessera/Interfaces/RuntimeCallInterface.h"

#include "mlir/Conversion/ConvertToEmitC/ToEmitCInterface.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/DialectConversion.h"

#include <string>

namespace tessera {

/// The C++ type of a runtime tensor in emitted code.
constexpr const char *kRuntimeTensorType = "tessera::rt::Tensor";

/// Ranked tensors become `emitc.opaque<"tessera::rt::Tensor">`.
class RuntimeTypeConverter : public mlir::TypeConverter {
public:
  explicit RuntimeTypeConverter(mlir::MLIRContext *ctx);
};

/// "1, 2, 3": integers as a C++ initializer list's contents.
std::string joinInts(llvm::ArrayRef<int64_t> values);

/// The runtime's name of an element type ("f32", "i64", ...), or "" where
/// the runtime has no such tensors.
std::string runtimeDTypeName(mlir::Type elementType);

/// `tessera::rt::Shape{...}` of a ranked tensor type, as an emitc.opaque
/// argument.
mlir::Attribute shapeLiteral(mlir::MLIRContext *ctx, mlir::Type tensorType);
/// `tessera::rt::DType::<name>` of a ranked tensor type (one that
/// verifyEmittable accepted).
mlir::Attribute dtypeLiteral(mlir::MLIRContext *ctx, mlir::Type tensorType);

/// The lvalue `vector[index]` of a std::vector<Tensor> (the step's args and
/// results, a list-returning call's result).
mlir::Value tensorSlot(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value vector, int64_t index);

/// Checks that `call` can be emitted: every tensor type it names (shape and
/// dtype arguments, the op's operands and results) has a runtime dtype.
/// Reports "convert-tsr-to-emitc: the CPU runtime has no ..." on the op.
mlir::LogicalResult verifyEmittable(const RuntimeCall &call);

/// Adds the pattern that lowers the ops of `dialectNamespace` implementing
/// RuntimeCallOpInterface (those with a callee), and marks that dialect
/// illegal in `target`.
void populateRuntimeCallToEmitCPatterns(mlir::ConversionTarget &target,
                                        mlir::TypeConverter &typeConverter,
                                        mlir::RewritePatternSet &patterns,
                                        llvm::StringRef dialectNamespace);

/// A rank-variant argument's value as emitted: `own` (the op's value), or
/// in a function shared by several ranks whose values differ
/// (dist.rank_values), a table of one value per rank declared before the
/// op and indexed at run time by the running rank.
mlir::Attribute rankVariantValue(mlir::OpBuilder &b, mlir::Operation *op,
                                 llvm::StringRef name, mlir::Attribute own);

/// The ConvertToEmitCPatternInterface of a dialect whose ops all describe
/// their calls (RuntimeCallOpInterface): the common pattern lowers them.
template <typename DialectT>
struct RuntimeCallToEmitCInterface
    : public mlir::ConvertToEmitCPatternInterface {
  using mlir::ConvertToEmitCPatternInterface::ConvertToEmitCPatternInterface;
  void populateConvertToEmitCConversionPatterns(
      mlir::ConversionTarget &target, mlir::TypeConverter &typeConverter,
      mlir::RewritePatternSet &patterns) const final {
    populateRuntimeCallToEmitCPatterns(target, typeConverter, patterns,
                                       DialectT::getDialectNamespace());
  }
};

/// Attaches RuntimeCallToEmitCInterface to `DialectT` when it is loaded.
template <typename DialectT>
void registerRuntimeCallToEmitCInterface(mlir::DialectRegistry &registry) {
  registry.addExtension(+[](mlir::MLIRContext *, DialectT *dialect) {
    dialect->template addInterfaces<RuntimeCallToEmitCInterface<DialectT>>();
  });
}

} // namespace tessera

#endif // TESSERA_CONVERSION_RUNTIMECALLTOEMITC_H
