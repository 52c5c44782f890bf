// Round trip (custom and generic form) and every verifier error of
// dist.send.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @send
func.func @send(%x: tensor<4x8xf32>) {
  // CHECK: dist.send %{{.*}} {peer = 3 : i64, tag = 7 : i64} : tensor<4x8xf32>
  dist.send %x {peer = 3 : i64, tag = 7 : i64} : tensor<4x8xf32>
  // CHECK: dist.send %{{.*}} {dist.rvd = "R(pp) -> R(pp)", peer = 0 : i64, tag = 0 : i64} : tensor<4x8xf32>
  dist.send %x {peer = 0 : i64, tag = 0 : i64, dist.rvd = "R(pp) -> R(pp)"} : tensor<4x8xf32>
  return
}

// -----

func.func @negative_peer(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dist.send' op peer must be non-negative, found -1}}
  dist.send %x {peer = -1 : i64, tag = 0 : i64} : tensor<4xf32>
  return
}

// -----

func.func @negative_tag(%x: tensor<4xf32>) {
  // expected-error @+1 {{tag must be non-negative, found -2}}
  dist.send %x {peer = 1 : i64, tag = -2 : i64} : tensor<4xf32>
  return
}

// -----

func.func @self(%x: tensor<4xf32>) attributes {dist.rank = 1 : i64} {
  // expected-error @+1 {{peer 1 is the rank running this op (the function's dist.rank)}}
  dist.send %x {peer = 1 : i64, tag = 0 : i64} : tensor<4xf32>
  return
}

// -----

module attributes {dist.mesh = #dist.mesh<[pp = 2]>} {
  func.func @outside_mesh(%x: tensor<4xf32>) {
    // expected-error @+1 {{peer 2 is outside the mesh of 2 ranks}}
    dist.send %x {peer = 2 : i64, tag = 0 : i64} : tensor<4xf32>
    return
  }
}

// -----

func.func @missing_tag(%x: tensor<4xf32>) {
  // expected-error @+1 {{requires attribute 'tag'}}
  dist.send %x {peer = 1 : i64} : tensor<4xf32>
  return
}
