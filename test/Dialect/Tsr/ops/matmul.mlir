// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.matmul.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @matmul
// ANNOT: tsr.matmul: _0 _1 m k+, k+ n -> _0 _1 m n | sizes: _0=2 _1=3 m=4 k=8 n=6
// ANNOT-NEXT: split k=2 n=3 -> 6 pieces; operands: 2x3x4x4 4x2; results: 2x3x4x2(partial)
// ANNOT: tsr.matmul: _0 m k+, 1 k+ n -> _0 m n | sizes: _0=2 m=4 k=8 n=6
// ANNOT-NEXT: split _0=2 -> 2 pieces; operands: 1x4x8 1x8x6; results: 1x4x6
func.func @matmul(%a: tensor<2x3x4x8xf32>, %w: tensor<8x6xf32>, %b: tensor<2x4x8xf32>, %c: tensor<1x8x6xf32>) -> (tensor<2x3x4x6xf32>, tensor<2x4x6xf32>) {
  // CHECK: tsr.matmul %{{.*}}, %{{.*}} {tsr.test_split = {k = 2 : i64, n = 3 : i64}} : (tensor<2x3x4x8xf32>, tensor<8x6xf32>) -> tensor<2x3x4x6xf32>
  %0 = tsr.matmul %a, %w {tsr.test_split = {k = 2, n = 3}} : (tensor<2x3x4x8xf32>, tensor<8x6xf32>) -> tensor<2x3x4x6xf32>
  // CHECK: tsr.matmul %{{.*}}, %{{.*}} {tsr.test_split = {_0 = 2 : i64}} : (tensor<2x4x8xf32>, tensor<1x8x6xf32>) -> tensor<2x4x6xf32>
  %1 = tsr.matmul %b, %c {tsr.test_split = {_0 = 2}} : (tensor<2x4x8xf32>, tensor<1x8x6xf32>) -> tensor<2x4x6xf32>
  return %0, %1 : tensor<2x3x4x6xf32>, tensor<2x4x6xf32>
}

// -----

func.func @contracting(%a: tensor<4x8xf32>, %b: tensor<7x6xf32>) -> tensor<4x6xf32> {
  // expected-error @+2 {{contracting dimensions differ: lhs 4x8 has k = 8, rhs 7x6 has k = 7}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.matmul %a, %b : (tensor<4x8xf32>, tensor<7x6xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

func.func @rank_one(%a: tensor<8xf32>, %b: tensor<8x6xf32>) -> tensor<6xf32> {
  // expected-error @+2 {{operands must have rank >= 2, found 1 and 2}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.matmul %a, %b : (tensor<8xf32>, tensor<8x6xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x6xf32>) -> tensor<2x4x6xf32> {
  // expected-error @+2 {{shapes 2 and 3 do not broadcast}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x6xf32>) -> tensor<2x4x6xf32>
  return %0 : tensor<2x4x6xf32>
}

// -----

func.func @element_types(%a: tensor<4x8xf32>, %b: tensor<8x6xbf16>) -> tensor<4x6xf32> {
  // expected-error @+2 {{operands have different element types 'f32' and 'bf16'}}
// expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.matmul %a, %b : (tensor<4x8xf32>, tensor<8x6xbf16>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}
