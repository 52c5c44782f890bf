// tsr-raise applies only the patterns of the dialects it is given (all
// registered ones by default; dialects/llm/test/raise.mlir tests llm's):
// restricted to a dialect without RaisePatternInterface it changes nothing.
// RUN: tessera-opt %s -tsr-raise="dialects=tsr" | FileCheck %s --check-prefix=NONE
// RUN: tessera-opt %s -tsr-raise | FileCheck %s --check-prefix=ALL

// NONE: tsr.sigmoid
// NONE: tsr.mul
// ALL: llm.silu
// ALL-NOT: tsr.sigmoid
func.func @silu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = tsr.sigmoid %x : tensor<4xf32>
  %y = tsr.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
