// Round trip (custom and generic form) and every verifier error of
// dist.reduce_scatter.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @reduce_scatter
func.func @reduce_scatter(%x: tensor<4x8xf32>) -> (tensor<4x4xf32>, tensor<1x8xf32>) {
  // CHECK: dist.reduce_scatter %{{.*}} {dim = 1 : i64, ranks = array<i64: 0, 1>} : tensor<4x8xf32> -> tensor<4x4xf32>
  %0 = dist.reduce_scatter %x {ranks = array<i64: 0, 1>, dim = 1 : i64} : tensor<4x8xf32> -> tensor<4x4xf32>
  // CHECK: dist.reduce_scatter %{{.*}} kind max {dim = 0 : i64, dist.rvd = "V(dp) -> D0(dp)", ranks = array<i64: 0, 2, 4, 6>} : tensor<4x8xf32> -> tensor<1x8xf32>
  %1 = dist.reduce_scatter %x kind max {ranks = array<i64: 0, 2, 4, 6>, dim = 0 : i64, dist.rvd = "V(dp) -> D0(dp)"} : tensor<4x8xf32> -> tensor<1x8xf32>
  return %0, %1 : tensor<4x4xf32>, tensor<1x8xf32>
}

// -----

func.func @indivisible(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dist.reduce_scatter' op reduce_scatter over 3 ranks needs dimension 1 (size 8) divisible by 3}}
  %0 = dist.reduce_scatter %x {ranks = array<i64: 0, 1, 2>, dim = 1 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @wrong_result(%x: tensor<4x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{reduce_scatter over 2 ranks of 'tensor<4x8xf32>' along 1 gives 'tensor<4x4xf32>', not 'tensor<2x8xf32>'}}
  %0 = dist.reduce_scatter %x {ranks = array<i64: 0, 1>, dim = 1 : i64} : tensor<4x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @element_type(%x: tensor<4x8xf32>) -> tensor<4x4xf64> {
  // expected-error @+1 {{result element type 'f64' differs from the input's 'f32'}}
  %0 = dist.reduce_scatter %x {ranks = array<i64: 0, 1>, dim = 1 : i64} : tensor<4x8xf32> -> tensor<4x4xf64>
  return %0 : tensor<4x4xf64>
}

// -----

func.func @dim_range(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{dim 5 is out of range for rank 2 (expected 0 <= dim < 2)}}
  %0 = dist.reduce_scatter %x {ranks = array<i64: 0, 1>, dim = 5 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @unsorted_ranks(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{ranks must be sorted and unique, found [1, 0]}}
  %0 = dist.reduce_scatter %x {ranks = array<i64: 1, 0>, dim = 1 : i64} : tensor<4x8xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
