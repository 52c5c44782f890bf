// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.softmax_grad.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @softmax_grad
// ANNOT: tsr.softmax_grad: d0 d1^, d0 d1^ -> d0 d1^ | sizes: d0=4 d1=8
// ANNOT-NEXT: split d0=2 -> 2 pieces; operands: 2x8 2x8; results: 2x8
func.func @softmax_grad(%y: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: tsr.softmax_grad %{{.*}}, %{{.*}} {axis = 1 : i64, tsr.test_split = {d0 = 2 : i64}} : tensor<4x8xf32>
  %0 = tsr.softmax_grad %y, %dy {axis = 1 : i64, tsr.test_split = {d0 = 2}} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @axis(%y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{axis -1 is out of range for rank 2 (expected 0 <= axis < 2)}}
  %0 = tsr.softmax_grad %y, %y {axis = -1 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @types(%y: tensor<4x8xf32>, %dy: tensor<4x8xf16>) -> tensor<4x8xf32> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "tsr.softmax_grad"(%y, %dy) {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf16>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
