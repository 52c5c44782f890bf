// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.split.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @split
// ANNOT: tsr.split: d0 d1 s^ -> d0 d1 p0^, d0 d1 p1^, d0 d1 p2^ | sizes: d0=2 d1=4 s=12 p0=4 p1=4 p2=4
// ANNOT-NEXT: split d1=2 -> 2 pieces; operands: 2x2x12; results: 2x2x4 2x2x4 2x2x4
func.func @split(%x: tensor<2x4x12xf32>) -> tensor<2x4x4xf32> {
  // CHECK: tsr.split %{{.*}} {axis = 2 : i64, sizes = array<i64: 4, 4, 4>, tsr.test_split = {d1 = 2 : i64}} : tensor<2x4x12xf32> -> tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>
  %0:3 = tsr.split %x {axis = 2 : i64, sizes = array<i64: 4, 4, 4>, tsr.test_split = {d1 = 2}} : tensor<2x4x12xf32> -> tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>
  return %0#1 : tensor<2x4x4xf32>
}

// -----

func.func @sizes_sum(%x: tensor<12xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{split sizes add up to 10 but dimension 0 has size 12}}
// expected-error @+1 {{failed to infer returned types}}
  %0:2 = tsr.split %x {axis = 0 : i64, sizes = array<i64: 4, 6>} : tensor<12xf32> -> tensor<4xf32>, tensor<6xf32>
  return %0#0 : tensor<4xf32>
}

// -----

func.func @zero_size(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{split size 0 must be >= 1}}
// expected-error @+1 {{failed to infer returned types}}
  %0:2 = tsr.split %x {axis = 0 : i64, sizes = array<i64: 4, 0>} : tensor<4xf32> -> tensor<4xf32>, tensor<0xf32>
  return %0#0 : tensor<4xf32>
}

// -----

func.func @result_count(%x: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{inferred type(s) 'tensor<2xf32>', 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.split %x {axis = 0 : i64, sizes = array<i64: 2, 2>} : tensor<4xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
