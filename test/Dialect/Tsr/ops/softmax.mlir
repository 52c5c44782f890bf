// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.softmax.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @softmax
// ANNOT: tsr.softmax: d0 d1 d2^ -> d0 d1 d2^ | sizes: d0=2 d1=4 d2=8
// ANNOT-NEXT: split d0=2 d1=4 -> 8 pieces; operands: 1x1x8; results: 1x1x8
// ANNOT: tsr.softmax: d0^ d1 -> d0^ d1 | sizes: d0=4 d1=8
func.func @softmax(%x: tensor<2x4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<2x4x8xf32>, tensor<4x8xf32>) {
  // CHECK: tsr.softmax %{{.*}} {axis = 2 : i64, tsr.test_split = {d0 = 2 : i64, d1 = 4 : i64}} : tensor<2x4x8xf32>
  %0 = tsr.softmax %x {axis = 2 : i64, tsr.test_split = {d0 = 2, d1 = 4}} : tensor<2x4x8xf32>
  // CHECK: tsr.softmax %{{.*}} {axis = 0 : i64} : tensor<4x8xf32>
  %1 = tsr.softmax %y {axis = 0 : i64} : tensor<4x8xf32>
  return %0, %1 : tensor<2x4x8xf32>, tensor<4x8xf32>
}

// -----

func.func @axis_out_of_range(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2 (expected 0 <= axis < 2)}}
  %0 = tsr.softmax %x {axis = 2 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @missing_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{requires attribute 'axis'}}
  %0 = tsr.softmax %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
