// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.pow.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @pow
// ANNOT: tsr.pow: _0 _1 _2, _1 _2 -> _0 _1 _2 | sizes: _0=2 _1=4 _2=8
// ANNOT-NEXT: split _1=2 -> 2 pieces; operands: 2x2x8 2x8; results: 2x2x8
// ANNOT: tsr.pow: _0 1, _1 -> _0 _1 | sizes: _0=4 _1=8
// ANNOT: tsr.pow: _0, () -> _0 | sizes: _0=8
func.func @pow(%a: tensor<2x4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<4x1xf32>, %d: tensor<8xf32>, %s: tensor<f32>) -> (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) {
  // CHECK: tsr.pow %{{.*}}, %{{.*}} {tsr.test_split = {_1 = 2 : i64}} : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %0 = tsr.pow %a, %b {tsr.test_split = {_1 = 2}} : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: tsr.pow %{{.*}}, %{{.*}} : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tsr.pow %c, %d : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: tsr.pow %{{.*}}, %{{.*}} : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %2 = tsr.pow %d, %s : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return %0, %1, %2 : tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<8xf32>
}

// -----

func.func @no_broadcast(%a: tensor<4x8xf32>, %b: tensor<5xf32>) -> tensor<4x8xf32> {
      // expected-error @+2 {{shapes 4x8 and 5 do not broadcast: dimension 1 (from the right: 0) is 8 vs 5}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.pow %a, %b : (tensor<4x8xf32>, tensor<5xf32>) -> tensor<4x8xf32>
      return %0 : tensor<4x8xf32>
    }

// -----

func.func @element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
      // expected-error @+2 {{operands have different element types 'f32' and 'f16'}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.pow %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    }

// -----

func.func @wrong_result(%a: tensor<4x8xf32>) -> tensor<4x9xf32> {
    // expected-error @+2 {{inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<4x9xf32>'}}
    // expected-error @+1 {{failed to infer returned types}}
%0 = tsr.pow %a, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x9xf32>
    return %0 : tensor<4x9xf32>
  }

// -----

func.func @int_operands(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values}}
  %0 = tsr.pow %a, %a : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}
