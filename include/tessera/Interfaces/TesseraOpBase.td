//===- TesseraOpBase.td - one record per operator ----------*- tablegen -*-===//
//
// The base class of every compute op, in the core (tsr) and in extension
// dialects (dialects/): the op's record carries everything that the passes,
// the emitted program and the interpreter know about it.
//
//   annotation   the dimension annotation (DimAnnotationOpInterface), given
//                as the class argument `annotationText`;
//   rtCallee     the runtime function that computes it (default: the
//                mnemonic) and
//   rtArgs       its arguments, a chain of RuntimeCall builder calls
//                (RuntimeCallInterface.h; default: every operand);
//   rtHeader     the header that declares the callee, for an extension's
//                kernels (default: none, the core runtime's Runtime.h);
//   flops/bytes  its cost from shapes (CostOpInterface; defaults:
//                one operation per result element, every operand and
//                result moved once).
//
// Gradients stay C++ (GradientOpInterface), listed with
// DeclareOpInterfaceMethods<GradientOpInterface> among the traits.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_INTERFACES_TESSERAOPBASE_TD
#define TESSERA_INTERFACES_TESSERAOPBASE_TD

include "mlir/IR/OpBase.td"
include "tessera/Interfaces/CostInterface.td"
include "tessera/Interfaces/DimAnnotationInterface.td"
include "tessera/Interfaces/RuntimeCallInterface.td"

// `annotationText` is the op's dimension annotation template. Ops whose
// annotation depends on attributes also list "buildAnnotation" in
// `annotationOverrides` and implement it in C++.
class Tessera_Op<Dialect dialect, string mnemonic, string annotationText,
                 list<Trait> traits = [], list<string> annotationOverrides = []>
    : Op<dialect, mnemonic,
         !listconcat(traits, [DeclareOpInterfaceMethods<DimAnnotationOpInterface,
                                                        annotationOverrides>,
                              DeclareOpInterfaceMethods<RuntimeCallOpInterface>,
                              DeclareOpInterfaceMethods<CostOpInterface>])> {
  string annotation = annotationText;
  // Op-specific prose, after the annotation line in the docs.
  string opDescription = "";
  // The runtime call; an empty rtCallee: no call (the frame materialises
  // the op, as tsr.constant).
  string rtCallee = mnemonic;
  code rtArgs = [{.operands()}];
  string rtHeader = "";
  // The cost: C++ expressions in the op's class.
  code flops = [{::tessera::elementwiseFlops(getOperation())}];
  code bytes = [{::tessera::operandAndResultBytes(getOperation())}];
  // More C++ definitions for the op's class, for op classes that define
  // methods once for all their ops ($cppClass is the op's class).
  code extraDefinitions = "";

  let description = "**Annotation**: `" # annotationText # "`" #
      !if(!empty(annotationOverrides), "", " *(adapted to attributes)*") #
      !if(!empty(rtCallee), "",
          "\n\n**Runtime call**: `tessera::rt::" # rtCallee # "`, arguments `" #
          rtArgs # "`") #
      "\n\n" # opDescription;
  // DeclareOpInterfaceMethods declares these; their bodies come from the
  // fields above.
  let extraClassDefinition = [{
    ::llvm::StringRef $cppClass::getAnnotationTemplate() { return "}] #
      annotationText # [{"; }
    ::tessera::RuntimeCall $cppClass::getRuntimeCall() {
      return ::tessera::RuntimeCall(getOperation(), "}] # rtCallee # [{")}] #
      !if(!empty(rtCallee), "", rtArgs) #
      !if(!empty(rtHeader), "", ".header(\"" # rtHeader # "\")") # [{;
    }
    double $cppClass::getFlops() { return }] # flops # [{; }
    double $cppClass::getBytesMoved() { return }] # bytes # [{; }
  }] # extraDefinitions;
}

#endif // TESSERA_INTERFACES_TESSERAOPBASE_TD
