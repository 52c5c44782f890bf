// Round trip (custom and generic form) and every verifier error of
// dist.all_gather.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @all_gather
func.func @all_gather(%x: tensor<4x4xf32>, %b: tensor<2x3xbf16>) -> (tensor<4x8xf32>, tensor<8x3xbf16>) {
  // CHECK: dist.all_gather %{{.*}} {dim = 1 : i64, ranks = array<i64: 0, 1>} : tensor<4x4xf32> -> tensor<4x8xf32>
  %0 = dist.all_gather %x {ranks = array<i64: 0, 1>, dim = 1 : i64} : tensor<4x4xf32> -> tensor<4x8xf32>
  // CHECK: dist.all_gather %{{.*}} {dim = 0 : i64, dist.rvd = "D0(dp) -> R(dp)", ranks = array<i64: 1, 3, 5, 7>} : tensor<2x3xbf16> -> tensor<8x3xbf16>
  %1 = dist.all_gather %b {ranks = array<i64: 1, 3, 5, 7>, dim = 0 : i64, dist.rvd = "D0(dp) -> R(dp)"} : tensor<2x3xbf16> -> tensor<8x3xbf16>
  return %0, %1 : tensor<4x8xf32>, tensor<8x3xbf16>
}

// -----

func.func @wrong_result(%x: tensor<4x4xf32>) -> tensor<4x6xf32> {
  // expected-error @+1 {{'dist.all_gather' op all_gather over 2 ranks of 'tensor<4x4xf32>' along 1 gives 'tensor<4x8xf32>', not 'tensor<4x6xf32>'}}
  %0 = dist.all_gather %x {ranks = array<i64: 0, 1>, dim = 1 : i64} : tensor<4x4xf32> -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

func.func @wrong_rank(%x: tensor<4x4xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{all_gather over 2 ranks of 'tensor<4x4xf32>' along 0 gives 'tensor<8x4xf32>', not 'tensor<32xf32>'}}
  %0 = dist.all_gather %x {ranks = array<i64: 0, 1>, dim = 0 : i64} : tensor<4x4xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

func.func @element_type(%x: tensor<4x4xf32>) -> tensor<4x8xf16> {
  // expected-error @+1 {{result element type 'f16' differs from the input's 'f32'}}
  %0 = dist.all_gather %x {ranks = array<i64: 0, 1>, dim = 1 : i64} : tensor<4x4xf32> -> tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

// -----

func.func @dim_range(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{dim 2 is out of range for rank 2 (expected 0 <= dim < 2)}}
  %0 = dist.all_gather %x {ranks = array<i64: 0, 1>, dim = 2 : i64} : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @negative_dim(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{dim -1 is out of range for rank 2 (expected 0 <= dim < 2)}}
  %0 = dist.all_gather %x {ranks = array<i64: 0, 1>, dim = -1 : i64} : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @unsorted_ranks(%x: tensor<4x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{ranks must be sorted and unique, found [1, 0]}}
  %0 = dist.all_gather %x {ranks = array<i64: 1, 0>, dim = 1 : i64} : tensor<4x4xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @missing_dim(%x: tensor<4x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{requires attribute 'dim'}}
  %0 = dist.all_gather %x {ranks = array<i64: 0, 1>} : tensor<4x4xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
