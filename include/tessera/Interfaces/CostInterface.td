//===- CostInterface.td - what an op costs, from its shapes -*- tablegen -*-===//
//
// The work and the memory traffic of one op, read by the planner's
// compute-time models (dist-plan, dist-schedule, --plan auto).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_INTERFACES_COSTINTERFACE_TD
#define TESSERA_INTERFACES_COSTINTERFACE_TD

include "mlir/IR/OpBase.td"

def CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::tessera";
  let description = [{
    Floating-point operations and bytes moved by one execution of the op,
    computed from its static shapes. The defaults
    (tessera/Interfaces/CostInterface.h) suit elementwise and data-movement
    ops: one operation per result element, and every operand and result
    read or written once. Ops derived from `Tessera_Op` override them with
    the record fields `flops` and `bytes` (C++ expressions in the op's
    class).
  }];

  let methods = [
    InterfaceMethod<
      /*desc=*/"Floating-point operations of one execution.",
      /*retTy=*/"double",
      /*methodName=*/"getFlops">,
    InterfaceMethod<
      /*desc=*/"Bytes read and written by one execution.",
      /*retTy=*/"double",
      /*methodName=*/"getBytesMoved">,
  ];
}

#endif // TESSERA_INTERFACES_COSTINTERFACE_TD
