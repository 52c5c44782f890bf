// tsr-raise applies only the patterns of the dialects it is given (all
// registered ones by default): restricted to a dialect without
// RaisePatternInterface it changes nothing. The patterns themselves belong
// to the extensions and are tested there (dialects/llm/test/raise.mlir).
// RUN: tessera-opt %s -tsr-raise="dialects=tsr" | FileCheck %s

// CHECK: tsr.sigmoid
// CHECK: tsr.mul
// CHECK-NOT: llm.
func.func @silu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = tsr.sigmoid %x : tensor<4xf32>
  %y = tsr.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
