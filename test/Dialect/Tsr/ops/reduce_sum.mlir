// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.reduce_sum.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @reduce_sum
// ANNOT: tsr.reduce_sum: d0+ d1 d2+ -> d1 | sizes: d0=2 d1=4 d2=8
// ANNOT-NEXT: split d2=4 -> 4 pieces; operands: 2x4x2; results: 4(partial)
// ANNOT: tsr.reduce_sum: d0 d1 d2+ -> d0 d1 1 | sizes: d0=2 d1=4 d2=8
func.func @reduce_sum(%x: tensor<2x4x8xf32>) -> (tensor<4xf32>, tensor<2x4x1xf32>) {
  // CHECK: tsr.reduce_sum %{{.*}} {axes = array<i64: 0, 2>, tsr.test_split = {d2 = 4 : i64}} : (tensor<2x4x8xf32>) -> tensor<4xf32>
  %0 = tsr.reduce_sum %x {axes = array<i64: 0, 2>, tsr.test_split = {d2 = 4}} : (tensor<2x4x8xf32>) -> tensor<4xf32>
  // CHECK: tsr.reduce_sum %{{.*}} {axes = array<i64: 2>, keepdims = true} : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
  %1 = tsr.reduce_sum %x {axes = array<i64: 2>, keepdims = true} : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
  return %0, %1 : tensor<4xf32>, tensor<2x4x1xf32>
}

// -----

func.func @empty_axes(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
      // expected-error @+2 {{axes must not be empty}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.reduce_sum %x {axes = array<i64>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
      return %0 : tensor<2x4xf32>
    }

// -----

func.func @repeated_axis(%x: tensor<2x4xf32>) -> tensor<2xf32> {
      // expected-error @+2 {{reduction axis 1 appears twice}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.reduce_sum %x {axes = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    }

// -----

func.func @axis_range(%x: tensor<2x4xf32>) -> tensor<2xf32> {
      // expected-error @+2 {{reduction axis 2 is out of range for rank 2 (expected 0 <= reduction axis < 2)}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.reduce_sum %x {axes = array<i64: 2>} : (tensor<2x4xf32>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    }
