// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.transpose.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @transpose
// ANNOT: tsr.transpose: d0 d1 d2 d3 -> d0 d2 d1 d3 | sizes: d0=2 d1=8 d2=3 d3=4
// ANNOT-NEXT: split d2=3 -> 3 pieces; operands: 2x8x1x4; results: 2x1x8x4
func.func @transpose(%x: tensor<2x8x3x4xf32>) -> tensor<2x3x8x4xf32> {
  // CHECK: tsr.transpose %{{.*}} {perm = array<i64: 0, 2, 1, 3>, tsr.test_split = {d2 = 3 : i64}} : tensor<2x8x3x4xf32> to tensor<2x3x8x4xf32>
  %0 = tsr.transpose %x {perm = array<i64: 0, 2, 1, 3>, tsr.test_split = {d2 = 3}} : tensor<2x8x3x4xf32> to tensor<2x3x8x4xf32>
  return %0 : tensor<2x3x8x4xf32>
}

// -----

func.func @not_permutation(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+2 {{perm is not a permutation: 0 appears twice}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.transpose %x {perm = array<i64: 0, 0>} : tensor<2x3xf32> to tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @perm_length(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{perm has 3 entries but the input has rank 2}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x3xf32> to tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @perm_range(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{perm entry 2 is out of range for rank 2}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.transpose %x {perm = array<i64: 2, 0>} : tensor<2x3xf32> to tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
