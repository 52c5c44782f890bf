//===- Passes.td - tsr passes -------------------------------*- tablegen -*-===//

#ifndef TESSERA_DIALECT_TSR_TRANSFORMS_PASSES_TD
#define TESSERA_DIALECT_TSR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrTestAnnotation : Pass<"tsr-test-annotation"> {
  let summary = "Print each op's dimension annotation and a requested split";
  let description = [{
    A test pass. For every op implementing DimAnnotationOpInterface it prints
    one line to stdout:

        <op name>: <annotation> | sizes: b=2 m=3 ...

    and, when the op carries `tsr.test_split = {name = factor, ...}`, a second
    line with the local shape of every operand and result under that split
    (several names at once) and which results hold partial sums. An
    annotation that does not fit the op, or an infeasible split, is an error
    at the op's location.
  }];
}

#endif // TESSERA_DIALECT_TSR_TRANSFORMS_PASSES_TD
