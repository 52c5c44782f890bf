// Infeasible splits are errors at the op's location; several names split at
// once combine their local shapes.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s

// CHECK: tsr.matmul: _0 m k+, k+ n -> _0 m n | sizes: _0=4 m=6 k=8 n=10
// CHECK-NEXT: split _0=2 k=4 n=5 -> 40 pieces; operands: 2x6x2 2x2; results: 2x6x2(partial)
func.func @three_names(%a: tensor<4x6x8xf32>, %b: tensor<8x10xf32>) -> tensor<4x6x10xf32> {
  %0 = tsr.matmul %a, %b {tsr.test_split = {_0 = 2, k = 4, n = 5}} : (tensor<4x6x8xf32>, tensor<8x10xf32>) -> tensor<4x6x10xf32>
  return %0 : tensor<4x6x10xf32>
}

// -----

func.func @not_dividing(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) -> tensor<4x6xf32> {
  // expected-error @+1 {{infeasible split: dimension 'k' of size 8 cannot be split into 3 pieces}}
  %0 = tsr.matmul %a, %b {tsr.test_split = {k = 3}} : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

func.func @unknown_name(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) -> tensor<4x6xf32> {
  // expected-error @+1 {{infeasible split: unknown dimension 'b' (the op has m, k, n)}}
  %0 = tsr.matmul %a, %b {tsr.test_split = {b = 2}} : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

func.func @softmax_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{infeasible split: dimension 'd1' is marked '^' and cannot be split}}
  %0 = tsr.softmax %x {axis = 1 : i64, tsr.test_split = {d1 = 2}} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @layer_norm_normalised(%x: tensor<2x8xf32>, %w: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{infeasible split: dimension 'n1' is marked '^' and cannot be split}}
  %0:3 = tsr.layer_norm %x, %w {axis = 1 : i64, epsilon = 1.0e-5 : f64, tsr.test_split = {n1 = 2}} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %0#0 : tensor<2x8xf32>
}

// -----

func.func @reduce_max_axis(%x: tensor<2x4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{infeasible split: dimension 'd1' is marked '^' and cannot be split}}
  %0 = tsr.reduce_max %x {axes = array<i64: 1>, tsr.test_split = {d1 = 2}} : (tensor<2x4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reshape_inner(%x: tensor<2x8x12xf32>) -> tensor<2x8x3x4xf32> {
  // expected-error @+1 {{infeasible split: dimension 'r2_1' is not the first of its group (r2_0 ...) and cannot be split}}
  %0 = tsr.reshape %x {tsr.test_split = {r2_1 = 2}} : tensor<2x8x12xf32> to tensor<2x8x3x4xf32>
  return %0 : tensor<2x8x3x4xf32>
}

// -----

// The gathered dimension is frozen on an axis other than 0 (on axis 0 a
// table's rows may be split: a vocabulary-parallel embedding).
func.func @gather_columns(%t: tensor<10x8xf32>, %i: tensor<2xi64>) -> tensor<10x2xf32> {
  // expected-error @+1 {{infeasible split: dimension 'd1' is marked '^' and cannot be split}}
  %0 = tsr.gather %t[%i] {axis = 1 : i64, tsr.test_split = {d1 = 2}} : (tensor<10x8xf32>, tensor<2xi64>) -> tensor<10x2xf32>
  return %0 : tensor<10x2xf32>
}

// -----

func.func @bad_request(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{tsr.test_split entry 'x' must be an integer}}
  %0 = tsr.exp %x {tsr.test_split = {x = "two"}} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
