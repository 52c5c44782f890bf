// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.slice.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @slice
// ANNOT: tsr.slice: d0 d1^ d2^ -> d0 s1^ s2^ | sizes: d0=2 d1=4 d2=8 s1=3 s2=4
// ANNOT-NEXT: split d0=2 -> 2 pieces; operands: 1x4x8; results: 1x3x4
func.func @slice(%x: tensor<2x4x8xf32>) -> tensor<2x3x4xf32> {
  // CHECK: tsr.slice %{{.*}} {limits = array<i64: 2, 4, 8>, starts = array<i64: 0, 1, 0>, steps = array<i64: 1, 1, 2>, tsr.test_split = {d0 = 2 : i64}} : tensor<2x4x8xf32> to tensor<2x3x4xf32>
  %0 = tsr.slice %x {starts = array<i64: 0, 1, 0>, limits = array<i64: 2, 4, 8>, steps = array<i64: 1, 1, 2>, tsr.test_split = {d0 = 2}} : tensor<2x4x8xf32> to tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

func.func @out_of_bounds(%x: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{dimension 0 of size 4 cannot be sliced from 2 to 5 (need 0 <= start <= limit <= 4)}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.slice %x {starts = array<i64: 2>, limits = array<i64: 5>, steps = array<i64: 1>} : tensor<4xf32> to tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{step 0 of dimension 0 must be >= 1}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.slice %x {starts = array<i64: 0>, limits = array<i64: 4>, steps = array<i64: 0>} : tensor<4xf32> to tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @lengths(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+2 {{starts, limits and steps need 2 entries each (the input rank), found 1, 2 and 2}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.slice %x {starts = array<i64: 0>, limits = array<i64: 4, 2>, steps = array<i64: 1, 1>} : tensor<4x2xf32> to tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
