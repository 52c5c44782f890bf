// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.gelu_grad.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @gelu_grad
// ANNOT: tsr.gelu_grad: _0, _0 -> _0 | sizes: _0=8
func.func @gelu_grad(%x: tensor<8xf32>, %dy: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: tsr.gelu_grad exact %{{.*}}, %{{.*}} : tensor<8xf32>
  %0 = tsr.gelu_grad exact %x, %dy : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @types(%x: tensor<8xf32>, %dy: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "tsr.gelu_grad"(%x, %dy) {approximate = 0 : i32} : (tensor<8xf32>, tensor<4xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
