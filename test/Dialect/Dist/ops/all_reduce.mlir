// Round trip (custom and generic form) and every verifier error of
// dist.all_reduce, with the group checks every collective shares.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @all_reduce
func.func @all_reduce(%x: tensor<4x8xf32>, %i: tensor<3xi64>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<3xi64>) {
  // CHECK: dist.all_reduce %{{.*}} {ranks = array<i64: 0, 1>} : tensor<4x8xf32>
  %0 = dist.all_reduce %x {ranks = array<i64: 0, 1>} : tensor<4x8xf32>
  // CHECK: dist.all_reduce %{{.*}} kind max {dist.rvd = "V(tp) -> R(tp)", ranks = array<i64: 0, 2, 5>} : tensor<4x8xf32>
  %1 = dist.all_reduce %0 kind max {ranks = array<i64: 0, 2, 5>, dist.rvd = "V(tp) -> R(tp)"} : tensor<4x8xf32>
  // The default kind is not printed.
  // CHECK: dist.all_reduce %{{.*}} {ranks = array<i64: 3>} : tensor<3xi64>
  %2 = dist.all_reduce %i kind sum {ranks = array<i64: 3>} : tensor<3xi64>
  // CHECK: dist.all_reduce %{{.*}} kind min
  %3 = dist.all_reduce %i kind min {ranks = array<i64: 3>} : tensor<3xi64>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<3xi64>
}

// -----

// In a per-rank function the group holds the function's rank.
// CHECK: module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 2]>}
module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 2]>} {
  // CHECK-LABEL: func.func @rank1
  // CHECK-SAME: attributes {dist.rank = 1 : i64}
  func.func @rank1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.rank = 1 : i64} {
    // CHECK: dist.all_reduce %{{.*}} {ranks = array<i64: 1, 3>} : tensor<4xf32>
    %0 = dist.all_reduce %x {ranks = array<i64: 1, 3>} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

func.func @empty_ranks(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.all_reduce' op ranks must not be empty}}
  %0 = dist.all_reduce %x {ranks = array<i64>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @negative_rank(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ranks must be non-negative, found [-1, 0]}}
  %0 = dist.all_reduce %x {ranks = array<i64: -1, 0>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @negative_rank_last(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ranks must be non-negative, found [0, -1]}}
  %0 = dist.all_reduce %x {ranks = array<i64: 0, -1>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @unsorted_ranks(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ranks must be sorted and unique, found [1, 0]}}
  %0 = dist.all_reduce %x {ranks = array<i64: 1, 0>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @repeated_rank(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ranks must be sorted and unique, found [0, 2, 2]}}
  %0 = dist.all_reduce %x {ranks = array<i64: 0, 2, 2>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 2]>} {
  func.func @outside_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{rank 4 is outside the mesh of 4 ranks}}
    %0 = dist.all_reduce %x {ranks = array<i64: 0, 4>} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

func.func @not_a_member(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.rank = 2 : i64} {
  // expected-error @+1 {{runs on rank 2 (the function's dist.rank), which is not in ranks [0, 1]}}
  %0 = dist.all_reduce %x {ranks = array<i64: 0, 1>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @result_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{failed to verify that all of {input, result} have same type}}
  %0 = "dist.all_reduce"(%x) <{ranks = array<i64: 0, 1>}> : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @dynamic_shape(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of}}
  %0 = dist.all_reduce %x {ranks = array<i64: 0, 1>} : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @element_type(%x: tensor<4xi8>) -> tensor<4xi8> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of}}
  %0 = dist.all_reduce %x {ranks = array<i64: 0, 1>} : tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

func.func @bad_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [sum, max, min]}}
  %0 = dist.all_reduce %x kind prod {ranks = array<i64: 0, 1>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @missing_ranks(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{requires attribute 'ranks'}}
  %0 = dist.all_reduce %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
