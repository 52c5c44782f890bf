// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.concat.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @concat
// ANNOT: tsr.concat: d0 p0^, d0 p1^ -> d0 s^ | sizes: d0=4 p0=8 p1=2 s=10
// ANNOT-NEXT: split d0=4 -> 4 pieces; operands: 1x8 1x2; results: 1x10
func.func @concat(%a: tensor<4x8xf32>, %b: tensor<4x2xf32>) -> tensor<4x10xf32> {
  // CHECK: tsr.concat %{{.*}}, %{{.*}} {axis = 1 : i64, tsr.test_split = {d0 = 4 : i64}} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x10xf32>
  %0 = tsr.concat %a, %b {axis = 1 : i64, tsr.test_split = {d0 = 4}} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

func.func @mismatch(%a: tensor<4x8xf32>, %b: tensor<3x2xf32>) -> tensor<4x10xf32> {
  // expected-error @+2 {{input 1 has shape 3x2, input 0 has 4x8: they differ in dimension 0 which is not the axis 1}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.concat %a, %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<3x2xf32>) -> tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

func.func @element_type(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<8xf32> {
  // expected-error @+2 {{input 1 has element type 'f16', input 0 has 'f32'}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.concat %a, %b {axis = 0 : i64} : (tensor<4xf32>, tensor<4xf16>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @rank(%a: tensor<4xf32>, %b: tensor<4x1xf32>) -> tensor<8xf32> {
  // expected-error @+2 {{input 1 has rank 2, input 0 has rank 1}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.concat %a, %b {axis = 0 : i64} : (tensor<4xf32>, tensor<4x1xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @no_inputs() -> tensor<8xf32> {
  // expected-error @+2 {{needs at least one input}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.concat {axis = 0 : i64} : () -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
