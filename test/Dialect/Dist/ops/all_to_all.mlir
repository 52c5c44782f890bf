// Round trip (custom and generic form) and every verifier error of
// dist.all_to_all.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @all_to_all
func.func @all_to_all(%x: tensor<4x4xf32>, %y: tensor<2x4x6xf16>) -> (tensor<2x8xf32>, tensor<2x12x2xf16>) {
  // CHECK: dist.all_to_all %{{.*}} {concat_dim = 1 : i64, ranks = array<i64: 0, 1>, split_dim = 0 : i64} : tensor<4x4xf32> -> tensor<2x8xf32>
  %0 = dist.all_to_all %x {ranks = array<i64: 0, 1>, split_dim = 0 : i64, concat_dim = 1 : i64} : tensor<4x4xf32> -> tensor<2x8xf32>
  // CHECK: dist.all_to_all %{{.*}} {concat_dim = 1 : i64, dist.rvd = "D1(tp) -> D2(tp)", ranks = array<i64: 4, 5, 6>, split_dim = 2 : i64} : tensor<2x4x6xf16> -> tensor<2x12x2xf16>
  %1 = dist.all_to_all %y {ranks = array<i64: 4, 5, 6>, split_dim = 2 : i64, concat_dim = 1 : i64, dist.rvd = "D1(tp) -> D2(tp)"} : tensor<2x4x6xf16> -> tensor<2x12x2xf16>
  return %0, %1 : tensor<2x8xf32>, tensor<2x12x2xf16>
}

// -----

func.func @same_dims(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'dist.all_to_all' op split_dim and concat_dim are both 1; an all_to_all moves a split between two dimensions}}
  %0 = dist.all_to_all %x {ranks = array<i64: 0, 1>, split_dim = 1 : i64, concat_dim = 1 : i64} : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @split_range(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{split_dim 2 is out of range for rank 2 (expected 0 <= split_dim < 2)}}
  %0 = dist.all_to_all %x {ranks = array<i64: 0, 1>, split_dim = 2 : i64, concat_dim = 1 : i64} : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @concat_range(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{concat_dim -1 is out of range for rank 2 (expected 0 <= concat_dim < 2)}}
  %0 = dist.all_to_all %x {ranks = array<i64: 0, 1>, split_dim = 0 : i64, concat_dim = -1 : i64} : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @indivisible(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{all_to_all over 3 ranks needs split dimension 0 (size 4) divisible by 3}}
  %0 = dist.all_to_all %x {ranks = array<i64: 0, 1, 2>, split_dim = 0 : i64, concat_dim = 1 : i64} : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @wrong_result(%x: tensor<4x4xf32>) -> tensor<8x2xf32> {
  // expected-error @+1 {{all_to_all over 2 ranks of 'tensor<4x4xf32>' splitting 0 and concatenating along 1 gives 'tensor<2x8xf32>', not 'tensor<8x2xf32>'}}
  %0 = dist.all_to_all %x {ranks = array<i64: 0, 1>, split_dim = 0 : i64, concat_dim = 1 : i64} : tensor<4x4xf32> -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

// -----

func.func @element_type(%x: tensor<4x4xf32>) -> tensor<2x8xi32> {
  // expected-error @+1 {{result element type 'i32' differs from the input's 'f32'}}
  %0 = dist.all_to_all %x {ranks = array<i64: 0, 1>, split_dim = 0 : i64, concat_dim = 1 : i64} : tensor<4x4xf32> -> tensor<2x8xi32>
  return %0 : tensor<2x8xi32>
}

// -----

func.func @unsorted_ranks(%x: tensor<4x4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{ranks must be sorted and unique, found [1, 0]}}
  %0 = dist.all_to_all %x {ranks = array<i64: 1, 0>, split_dim = 0 : i64, concat_dim = 1 : i64} : tensor<4x4xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
