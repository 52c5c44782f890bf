// Round trip (custom and generic form) and every verifier error of
// dist.broadcast.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @broadcast
func.func @broadcast(%x: tensor<4x8xf32>, %i: tensor<2xi1>) -> (tensor<4x8xf32>, tensor<2xi1>) {
  // CHECK: dist.broadcast %{{.*}} {ranks = array<i64: 0, 1>, root = 0 : i64} : tensor<4x8xf32>
  %0 = dist.broadcast %x {ranks = array<i64: 0, 1>, root = 0 : i64} : tensor<4x8xf32>
  // CHECK: dist.broadcast %{{.*}} {ranks = array<i64: 2, 3, 6>, root = 6 : i64} : tensor<2xi1>
  %1 = dist.broadcast %i {ranks = array<i64: 2, 3, 6>, root = 6 : i64} : tensor<2xi1>
  return %0, %1 : tensor<4x8xf32>, tensor<2xi1>
}

// -----

func.func @root_not_in_group(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.broadcast' op root 5 is not in ranks [0, 1]}}
  %0 = dist.broadcast %x {ranks = array<i64: 0, 1>, root = 5 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @result_type(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{failed to verify that all of {input, result} have same type}}
  %0 = "dist.broadcast"(%x) <{ranks = array<i64: 0, 1>, root = 0 : i64}> : (tensor<4xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @unsorted_ranks(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ranks must be sorted and unique, found [1, 0]}}
  %0 = dist.broadcast %x {ranks = array<i64: 1, 0>, root = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @missing_root(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{requires attribute 'root'}}
  %0 = dist.broadcast %x {ranks = array<i64: 0, 1>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
