//===- RuntimeCallInterface.td - the runtime call of an op -*- tablegen -*-===//
//
// Which runtime function computes an op, and with which arguments: the one
// description that both the emitted C++ (lib/Conversion) and the
// interpreter (lib/Exec) follow.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_INTERFACES_RUNTIMECALLINTERFACE_TD
#define TESSERA_INTERFACES_RUNTIMECALLINTERFACE_TD

include "mlir/IR/OpBase.td"

def RuntimeCallOpInterface : OpInterface<"RuntimeCallOpInterface"> {
  let cppNamespace = "::tessera";
  let description = [{
    The runtime function that computes the op and how its arguments come
    from the op: operands, attributes, result shapes and element types
    (tessera/Interfaces/RuntimeCallInterface.h). The callee is a function
    of namespace `tessera::rt` (runtime/include/tessera/runtime/Ops.h for
    the core ops; an extension's own header, named by the call, for its
    ops). Emission to EmitC writes the call; the interpreter looks the
    callee up among the kernels registered with it and makes the same call.
    An op whose description has no callee (`tsr.constant`) is materialised
    by the program frame instead.

    Ops derived from `Tessera_Op` (TesseraOpBase.td) state their call with
    two record fields: `rtCallee` (default: the mnemonic) and `rtArgs`, a
    chain of RuntimeCall builder calls (default: every operand, in order).
  }];

  let methods = [
    InterfaceMethod<
      /*desc=*/"The call that computes this op.",
      /*retTy=*/"::tessera::RuntimeCall",
      /*methodName=*/"getRuntimeCall">,
  ];
}

#endif // TESSERA_INTERFACES_RUNTIMECALLINTERFACE_TD
