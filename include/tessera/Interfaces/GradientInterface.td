//===- GradientInterface.td - vector-Jacobian products ------*- tablegen -*-===//
//
// How an op contributes to reverse-mode autodiff (tsr-autodiff). Extension
// dialects implement it for their ops in the same way as the core ops.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_INTERFACES_GRADIENTINTERFACE_TD
#define TESSERA_INTERFACES_GRADIENTINTERFACE_TD

include "mlir/IR/OpBase.td"

def GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::tessera";
  let description = [{
    The vector-Jacobian product of an op: given the gradients of its results
    (a null Value where no gradient flows, meaning zero), build the ops that
    compute the gradients of its operands at the builder's insertion point.
    `operandGrads` has one entry per operand; leave it null for operands
    that are not differentiable (indices, labels, masks). A result gradient
    the op cannot propagate (for example one flowing into layer_norm's mean)
    is an error emitted on the op.
  }];

  let methods = [
    InterfaceMethod<
      /*desc=*/"Builds the gradients of the operands from those of the results.",
      /*retTy=*/"::llvm::LogicalResult",
      /*methodName=*/"buildGradient",
      /*args=*/(ins "::mlir::OpBuilder &":$builder,
                    "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
                    "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // TESSERA_INTERFACES_GRADIENTINTERFACE_TD
