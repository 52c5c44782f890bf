//===- ActOps.td - the act example extension ---------------*- tablegen -*-===//
//
// One op record per operator (Tessera_Op, tessera/Interfaces/
// TesseraOpBase.td): annotation, runtime call and cost here, the gradient in
// lib/Act.cpp, the kernel in runtime/.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_ACTOPS_TD
#define ACT_ACTOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "tessera/Interfaces/GradientInterface.td"
include "tessera/Interfaces/TesseraOpBase.td"

def Act_Dialect : Dialect {
  let name = "act";
  let cppNamespace = "::act";
  let summary = "An extension of Tessera built out of tree: activations";
}

def Act_Relu2Op : Tessera_Op<Act_Dialect, "relu2", "* -> *",
    [DeclareOpInterfaceMethods<GradientOpInterface>, Pure,
     SameOperandsAndResultType]> {
  let summary = "relu(x)^2, the squared ReLU (Primer)";
  let arguments = (ins StaticShapeTensorOf<[F32, F64]>:$input);
  let results = (outs StaticShapeTensorOf<[F32, F64]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  // tessera::rt::act::relu2, declared in runtime/include/act/Runtime.h.
  let rtCallee = "act::relu2";
  let rtHeader = "act/Runtime.h";
  // max and multiply.
  let flops = [{2.0 * double(getType().getNumElements())}];
}

#endif // ACT_ACTOPS_TD
