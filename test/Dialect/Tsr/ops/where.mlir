// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.where.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @where
// ANNOT: tsr.where: _0 _1, _0 _1, () -> _0 _1 | sizes: _0=4 _1=8
// ANNOT-NEXT: split _0=4 -> 4 pieces; operands: 1x8 1x8 (); results: 1x8
func.func @where(%m: tensor<4x8xi1>, %a: tensor<4x8xf32>, %s: tensor<f32>) -> tensor<4x8xf32> {
  // CHECK: tsr.where %{{.*}}, %{{.*}}, %{{.*}} {tsr.test_split = {_0 = 4 : i64}} : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %0 = tsr.where %m, %a, %s {tsr.test_split = {_0 = 4}} : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @element_types(%m: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+2 {{lhs and rhs have different element types 'f32' and 'i64'}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.where %m, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @no_broadcast(%m: tensor<5xi1>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{shapes 5 and 4 and 4 do not broadcast}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.where %m, %a, %a : (tensor<5xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @condition_type(%m: tensor<4xf32>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = tsr.where %m, %a, %a : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
