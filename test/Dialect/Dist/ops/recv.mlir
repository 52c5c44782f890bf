// Round trip (custom and generic form) and every verifier error of
// dist.recv.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @recv
func.func @recv() -> (tensor<4x8xf32>, tensor<2xi64>) {
  // CHECK: dist.recv {peer = 0 : i64, tag = 7 : i64} : tensor<4x8xf32>
  %0 = dist.recv {peer = 0 : i64, tag = 7 : i64} : tensor<4x8xf32>
  // CHECK: dist.recv {dist.rvd = "R(pp) -> R(pp)", peer = 5 : i64, tag = 1 : i64} : tensor<2xi64>
  %1 = dist.recv {peer = 5 : i64, tag = 1 : i64, dist.rvd = "R(pp) -> R(pp)"} : tensor<2xi64>
  return %0, %1 : tensor<4x8xf32>, tensor<2xi64>
}

// -----

func.func @negative_peer() -> tensor<4xf32> {
  // expected-error @+1 {{'dist.recv' op peer must be non-negative, found -3}}
  %0 = dist.recv {peer = -3 : i64, tag = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @negative_tag() -> tensor<4xf32> {
  // expected-error @+1 {{tag must be non-negative, found -1}}
  %0 = dist.recv {peer = 0 : i64, tag = -1 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @self() -> tensor<4xf32> attributes {dist.rank = 0 : i64} {
  // expected-error @+1 {{peer 0 is the rank running this op (the function's dist.rank)}}
  %0 = dist.recv {peer = 0 : i64, tag = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

module attributes {dist.mesh = #dist.mesh<[pp = 4]>} {
  func.func @outside_mesh() -> tensor<4xf32> {
    // expected-error @+1 {{peer 4 is outside the mesh of 4 ranks}}
    %0 = dist.recv {peer = 4 : i64, tag = 0 : i64} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

func.func @dynamic_shape() -> tensor<?xf32> {
  // expected-error @+1 {{result #0 must be statically shaped tensor of}}
  %0 = dist.recv {peer = 0 : i64, tag = 0 : i64} : tensor<?xf32>
  return %0 : tensor<?xf32>
}
