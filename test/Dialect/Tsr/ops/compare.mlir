// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.compare.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @compare
// ANNOT: tsr.compare: _0 _1, _1 -> _0 _1 | sizes: _0=4 _1=8
// ANNOT: tsr.compare: _0 _1, _0 _1 -> _0 _1 | sizes: _0=2 _1=3
func.func @compare(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %i: tensor<2x3xi64>) -> (tensor<4x8xi1>, tensor<2x3xi1>) {
  // CHECK: tsr.compare lt, %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %0 = tsr.compare lt, %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // CHECK: tsr.compare eq, %{{.*}}, %{{.*}} : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi1>
  %1 = tsr.compare eq, %i, %i : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi1>
  return %0, %1 : tensor<4x8xi1>, tensor<2x3xi1>
}

// -----

func.func @element_types(%a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xi1> {
  // expected-error @+2 {{operands have different element types 'f32' and 'i64'}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.compare ge, %a, %b : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @no_broadcast(%a: tensor<4xf32>, %b: tensor<3xf32>) -> tensor<4xi1> {
  // expected-error @+2 {{shapes 4 and 3 do not broadcast}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.compare ne, %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @bad_predicate(%a: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{custom op 'tsr.compare' expected string or keyword containing one of the following enum values for attribute 'predicate' [eq, ne, lt, le, gt, ge]}}
  %0 = tsr.compare almost, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}
