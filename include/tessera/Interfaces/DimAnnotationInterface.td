//===- DimAnnotationInterface.td - dimension annotations ----*- tablegen -*-===//
//
// The op interface through which every Tessera operator (core `tsr` ops and
// the ops of extension dialects under dialects/) describes how it may be
// partitioned: one nnScaler-style annotation string per op.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_INTERFACES_DIMANNOTATIONINTERFACE_TD
#define TESSERA_INTERFACES_DIMANNOTATIONINTERFACE_TD

include "mlir/IR/OpBase.td"

def DimAnnotationOpInterface : OpInterface<"DimAnnotationOpInterface"> {
  let cppNamespace = "::tessera";
  let description = [{
    An operator's dimension annotation names every dimension of its operands
    and results, e.g. `"* m k+, * k+ n -> * m n"` for a batched matmul: `+`
    marks a reduced dimension (splitting it leaves partial sums), `^` a
    dimension that must never be split, `(a b)` a grouped dimension, `1` a
    broadcast dimension and `*` any number of shared leading dimensions.
    The annotation is the single source of truth for how the op may be
    split (op-trans) and which communication a split implies.

    Each op declares its annotation template in its TableGen record (the
    static `getAnnotationTemplate`). `buildAnnotation` gives the annotation
    of one op instance: by default the template with `*` and `...` expanded
    for the operand and result shapes; ops whose dimensions move with an
    attribute (an axis, a permutation, a reshape) build it from the
    attribute instead. Free functions in DimAnnotationInterface.h bind it to
    shapes and compute local shapes for a split of one or several names.
  }];

  let methods = [
    StaticInterfaceMethod<
      /*desc=*/"The annotation template written in the op's TableGen record.",
      /*retTy=*/"::llvm::StringRef",
      /*methodName=*/"getAnnotationTemplate">,
    InterfaceMethod<
      /*desc=*/[{
        The concrete annotation of this op (no `*` or `...`), or an error
        message. The default expands the template for the operand and
        result shapes.
      }],
      /*retTy=*/"::tessera::Result<::tessera::annotation::Annotation>",
      /*methodName=*/"buildAnnotation",
      /*args=*/(ins),
      /*methodBody=*/[{}],
      /*defaultImplementation=*/[{
        return ::tessera::instantiateAnnotationTemplate(
            $_op.getOperation(), ConcreteOp::getAnnotationTemplate());
      }]>,
  ];
}

#endif // TESSERA_INTERFACES_DIMANNOTATIONINTERFACE_TD
