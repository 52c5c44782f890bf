// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.gather.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @gather
// ANNOT: tsr.gather: d0+ d1, i0 i1 -> i0 i1 d1 | sizes: d0=10 d1=8 i0=2 i1=3
// ANNOT-NEXT: split d1=4 i0=2 -> 8 pieces; operands: 10x2 1x3; results: 1x3x2
// ANNOT: tsr.gather: d0 d1^, i0 -> d0 i0 | sizes: d0=10 d1=8 i0=4
// ANNOT: tsr.gather: d0+ d1, i0 -> i0 d1 | sizes: d0=10 d1=8 i0=4
// ANNOT-NEXT: split d0=2 -> 2 pieces; operands: 5x8 4; results: 4x8(partial)
func.func @gather(%t: tensor<10x8xf32>, %i: tensor<2x3xi64>, %j: tensor<4xi32>) -> (tensor<2x3x8xf32>, tensor<10x4xf32>) {
  // CHECK: tsr.gather %{{.*}}[%{{.*}}] {tsr.test_split = {d1 = 4 : i64, i0 = 2 : i64}} : (tensor<10x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
  %0 = tsr.gather %t[%i] {tsr.test_split = {i0 = 2, d1 = 4}} : (tensor<10x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
  // CHECK: tsr.gather %{{.*}}[%{{.*}}] {axis = 1 : i64} : (tensor<10x8xf32>, tensor<4xi32>) -> tensor<10x4xf32>
  %1 = tsr.gather %t[%j] {axis = 1 : i64} : (tensor<10x8xf32>, tensor<4xi32>) -> tensor<10x4xf32>
  // A piece of the table's rows: the lookups add up over the pieces.
  %2 = tsr.gather %t[%j] {tsr.test_split = {d0 = 2}} : (tensor<10x8xf32>, tensor<4xi32>) -> tensor<4x8xf32>
  return %0, %1 : tensor<2x3x8xf32>, tensor<10x4xf32>
}

// -----

func.func @axis(%t: tensor<10x8xf32>, %i: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.gather %t[%i] {axis = 2 : i64} : (tensor<10x8xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @float_indices(%t: tensor<10x8xf32>, %i: tensor<2xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = tsr.gather %t[%i] : (tensor<10x8xf32>, tensor<2xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
