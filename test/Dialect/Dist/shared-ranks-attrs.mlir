// dist.ranks and dist.rank_values (dist-share-rank-programs' output) round
// trip, a shared function's ops are verified as its first rank's, and
// every error of their verifier.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @shared
// CHECK-SAME: dist.ranks = array<i64: 1, 3>
// CHECK: dist.send %{{.*}} {dist.rank_values = {peer = [0, 2]}, peer = 0 : i64, tag = 0 : i64}
module attributes {dist.mesh = #dist.mesh<[dp = 2, pp = 2]>} {
  func.func @shared(%x: tensor<4xf32>) attributes {dist.ranks = array<i64: 1, 3>} {
    dist.send %x {dist.rank_values = {peer = [0, 2]}, peer = 0 : i64, tag = 0 : i64} : tensor<4xf32>
    return
  }
}

// -----

// The op's own attributes are the first rank's: rank 1 cannot send to 1.
func.func @own_is_first(%x: tensor<4xf32>) attributes {dist.ranks = array<i64: 1, 2>} {
  // expected-error @+1 {{'dist.send' op peer 1 is the rank running this op (the function's dist.rank)}}
  dist.send %x {peer = 1 : i64, tag = 0 : i64} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'dist.ranks' must list at least two ranks, found array<i64: 1>}}
func.func private @one() attributes {dist.ranks = array<i64: 1>}

// -----

// expected-error @+1 {{'dist.ranks' must be non-negative, sorted and unique, found array<i64: 2, 1>}}
func.func private @unsorted() attributes {dist.ranks = array<i64: 2, 1>}

// -----

// expected-error @+1 {{'dist.ranks' and 'dist.rank' exclude each other}}
func.func private @both() attributes {dist.rank = 0 : i64, dist.ranks = array<i64: 0, 1>}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 2]>} {
  // expected-error @+1 {{'dist.ranks' holds 2, but the mesh has 2 ranks}}
  func.func private @outside() attributes {dist.ranks = array<i64: 0, 2>}
}

// -----

func.func @on_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.ranks' belongs on a function, not on 'tsr.relu'}}
  %0 = tsr.relu %x {dist.ranks = array<i64: 0, 1>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @values_without_ranks(%x: tensor<4xf32>) attributes {dist.rank = 0 : i64} {
  // expected-error @+1 {{'dist.rank_values' needs an enclosing function with 'dist.ranks'}}
  dist.send %x {dist.rank_values = {peer = [1, 2]}, peer = 1 : i64, tag = 0 : i64} : tensor<4xf32>
  return
}

// -----

func.func @not_variant(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.ranks = array<i64: 0, 1>} {
  // expected-error @+1 {{'dist.rank_values' names 'axis', which is not a rank-variant attribute of 'tsr.softmax'}}
  %0 = tsr.softmax %x {axis = 0 : i64, dist.rank_values = {axis = [0, 0]}} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @row_count(%x: tensor<4xf32>) attributes {dist.ranks = array<i64: 0, 2, 3>} {
  // expected-error @+1 {{'dist.rank_values' must hold 3 values of 'peer' (one per rank of dist.ranks), found [1, 0]}}
  dist.send %x {dist.rank_values = {peer = [1, 0]}, peer = 1 : i64, tag = 0 : i64} : tensor<4xf32>
  return
}

// -----

func.func @first_row(%x: tensor<4xf32>) attributes {dist.ranks = array<i64: 0, 2>} {
  // expected-error @+1 {{the first of the 'dist.rank_values' of 'peer' must be the op's own 1 : i64, found 3 : i64}}
  dist.send %x {dist.rank_values = {peer = [3, 1]}, peer = 1 : i64, tag = 0 : i64} : tensor<4xf32>
  return
}

// -----

func.func @row_kind(%x: tensor<4xf32>) attributes {dist.ranks = array<i64: 0, 2>} {
  // expected-error @+1 {{'dist.rank_values' of 'peer' must be values of the kind of 1 : i64, found array<i64: 3>}}
  dist.send %x {dist.rank_values = {peer = [1, array<i64: 3>]}, peer = 1 : i64, tag = 0 : i64} : tensor<4xf32>
  return
}
