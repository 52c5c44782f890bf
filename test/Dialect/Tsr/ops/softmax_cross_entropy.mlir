// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.softmax_cross_entropy.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @softmax_cross_entropy
// ANNOT: tsr.softmax_cross_entropy: n+ c+, n+ -> () | sizes: n=8 c=5
// ANNOT-NEXT: split n=4 -> 4 pieces; operands: 2x5 2; results: ()(partial)
// ANNOT: tsr.softmax_cross_entropy: n+ c+, n+ -> () | sizes: n=8 c=5
// ANNOT: tsr.softmax_cross_entropy: n c+, n -> n | sizes: n=8 c=5
func.func @softmax_cross_entropy(%l: tensor<8x5xf32>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<f32>, tensor<8xf32>) {
  // CHECK: tsr.softmax_cross_entropy mean %{{.*}}, %{{.*}} {tsr.test_split = {n = 4 : i64}} : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32>
  %0 = tsr.softmax_cross_entropy mean %l, %t {tsr.test_split = {n = 4}} : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32>
  // CHECK: tsr.softmax_cross_entropy sum %{{.*}}, %{{.*}} {ignore_index = -1 : i64} : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32>
  %1 = tsr.softmax_cross_entropy sum %l, %t {ignore_index = -1 : i64} : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32>
  // CHECK: tsr.softmax_cross_entropy none %{{.*}}, %{{.*}} : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<8xf32>
  %2 = tsr.softmax_cross_entropy none %l, %t : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<8xf32>
  return %0, %1, %2 : tensor<f32>, tensor<f32>, tensor<8xf32>
}

// -----

func.func @logits_rank(%l: tensor<2x4x5xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  // expected-error @+2 {{logits must be N x C (rank 2), found 2x4x5}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.softmax_cross_entropy mean %l, %t : (tensor<2x4x5xf32>, tensor<8xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @labels(%l: tensor<8x5xf32>, %t: tensor<7xi64>) -> tensor<f32> {
  // expected-error @+2 {{labels must have shape 8 (N), found 7}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.softmax_cross_entropy mean %l, %t : (tensor<8x5xf32>, tensor<7xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @none_is_per_sample(%l: tensor<8x5xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  // expected-error @+2 {{inferred type(s) 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.softmax_cross_entropy none %l, %t : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}
