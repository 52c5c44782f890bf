//===- TsrDialect.td - the tsr dialect ----------------------*- tablegen -*-===//

#ifndef TESSERA_DIALECT_TSR_IR_TSRDIALECT_TD
#define TESSERA_DIALECT_TSR_IR_TSRDIALECT_TD

include "mlir/IR/OpBase.td"

def Tsr_Dialect : Dialect {
  let name = "tsr";
  let cppNamespace = "::tessera::tsr";
  let summary = "Tessera's single-device training graph on builtin tensors";
  let description = [{
    `tsr` holds one device's training step: the forward graph as imported
    from ONNX, the loss, the backward ops autodiff adds and the optimizer
    update. Values are builtin statically shaped tensors of f32, bf16 or f16
    (activations, parameters), i32 or i64 (token ids) and i1 (masks).

    Every op implements `DimAnnotationOpInterface` with an nnScaler-style
    dimension annotation, shown as **Annotation** in each op's description:
    a name per dimension, `+` for a reduced dimension (splitting it leaves
    partial sums), `^` for a dimension that must never be split, `(a b)` for
    a grouped dimension, `1` for a broadcast dimension, `*` for any number
    of shared leading dimensions (numpy-aligned) and `()` for a rank-0
    tensor. Annotations marked *(adapted to attributes)* move their named
    dimensions to the positions given by the op's attributes.

    Parameters, data inputs and the loss are function arguments and results
    carrying attributes, so autodiff and the optimizer are passes.
  }];
  let useDefaultAttributePrinterParser = 0;
  let hasConstantMaterializer = 1;
}

#endif // TESSERA_DIALECT_TSR_IR_TSRDIALECT_TD
