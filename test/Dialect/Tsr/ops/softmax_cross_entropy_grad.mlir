// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.softmax_cross_entropy_grad.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @softmax_cross_entropy_grad
// ANNOT: tsr.softmax_cross_entropy_grad: n c, n, () -> n c | sizes: n=8 c=5
// ANNOT-NEXT: split n=2 -> 2 pieces; operands: 4x5 4 (); results: 4x5
// ANNOT: tsr.softmax_cross_entropy_grad: n c, n, n -> n c | sizes: n=8 c=5
func.func @softmax_cross_entropy_grad(%l: tensor<8x5xf32>, %t: tensor<8xi64>, %g: tensor<f32>, %gn: tensor<8xf32>) -> (tensor<8x5xf32>, tensor<8x5xf32>) {
  // CHECK: tsr.softmax_cross_entropy_grad mean %{{.*}}, %{{.*}}, %{{.*}} {tsr.test_split = {n = 2 : i64}} : (tensor<8x5xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x5xf32>
  %0 = tsr.softmax_cross_entropy_grad mean %l, %t, %g {tsr.test_split = {n = 2}} : (tensor<8x5xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x5xf32>
  // CHECK: tsr.softmax_cross_entropy_grad none %{{.*}}, %{{.*}}, %{{.*}} {ignore_index = -1 : i64} : (tensor<8x5xf32>, tensor<8xi64>, tensor<8xf32>) -> tensor<8x5xf32>
  %1 = tsr.softmax_cross_entropy_grad none %l, %t, %gn {ignore_index = -1 : i64} : (tensor<8x5xf32>, tensor<8xi64>, tensor<8xf32>) -> tensor<8x5xf32>
  return %0, %1 : tensor<8x5xf32>, tensor<8x5xf32>
}

// -----

func.func @grad_type(%l: tensor<8x5xf32>, %t: tensor<8xi64>, %g: tensor<8xf32>) -> tensor<8x5xf32> {
  // expected-error @+2 {{grad must have the loss type 'tensor<f32>', found 'tensor<8xf32>'}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.softmax_cross_entropy_grad mean %l, %t, %g : (tensor<8x5xf32>, tensor<8xi64>, tensor<8xf32>) -> tensor<8x5xf32>
  return %0 : tensor<8x5xf32>
}

// -----

func.func @labels(%l: tensor<8x5xf32>, %t: tensor<8x1xi64>, %g: tensor<f32>) -> tensor<8x5xf32> {
  // expected-error @+2 {{labels must have shape 8 (N), found 8x1}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.softmax_cross_entropy_grad mean %l, %t, %g : (tensor<8x5xf32>, tensor<8x1xi64>, tensor<f32>) -> tensor<8x5xf32>
  return %0 : tensor<8x5xf32>
}
