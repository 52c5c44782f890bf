// RUN: tessera-opt %s -split-input-file -dist-share-rank-programs | FileCheck %s

// Four ranks on [dp = 2, tp = 2] whose functions differ only in the local
// slice offsets and the tensor-parallel group: one function remains, the
// first rank's, for all four; each op whose values differ lists every
// rank's value (row i for rank i of dist.ranks), the others keep theirs.
// CHECK-LABEL: module attributes {dist.mesh
// CHECK: func.func @s_rank0(%arg0: tensor<4x8xf32>) -> tensor<2x8xf32> attributes {dist.origin = @step, dist.ranks = array<i64: 0, 1, 2, 3>, tsr.train_step = "sgd"}
// CHECK-NEXT: tsr.slice %arg0 {dist.rank_values = {limits = [array<i64: 2, 8>, array<i64: 2, 8>, array<i64: 4, 8>, array<i64: 4, 8>], starts = [array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 2, 0>, array<i64: 2, 0>]}, limits = array<i64: 2, 8>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>}
// CHECK-NEXT: dist.all_reduce %{{.*}} {dist.rank_values = {ranks = [array<i64: 0, 1>, array<i64: 0, 1>, array<i64: 2, 3>, array<i64: 2, 3>]}, ranks = array<i64: 0, 1>}
// CHECK-NEXT: dist.all_reduce %{{.*}} {ranks = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT: return
// CHECK-NOT: func.func
module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 2]>} {
  func.func @s_rank0(%x: tensor<4x8xf32>) -> tensor<2x8xf32> attributes {dist.rank = 0 : i64, dist.origin = @step, tsr.train_step = "sgd"} {
    %0 = tsr.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 2, 8>, steps = array<i64: 1, 1>} : tensor<4x8xf32> to tensor<2x8xf32>
    %1 = dist.all_reduce %0 {ranks = array<i64: 0, 1>} : tensor<2x8xf32>
    %2 = dist.all_reduce %1 {ranks = array<i64: 0, 1, 2, 3>} : tensor<2x8xf32>
    return %2 : tensor<2x8xf32>
  }
  func.func @s_rank1(%x: tensor<4x8xf32>) -> tensor<2x8xf32> attributes {dist.rank = 1 : i64, dist.origin = @step, tsr.train_step = "sgd"} {
    %0 = tsr.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 2, 8>, steps = array<i64: 1, 1>} : tensor<4x8xf32> to tensor<2x8xf32>
    %1 = dist.all_reduce %0 {ranks = array<i64: 0, 1>} : tensor<2x8xf32>
    %2 = dist.all_reduce %1 {ranks = array<i64: 0, 1, 2, 3>} : tensor<2x8xf32>
    return %2 : tensor<2x8xf32>
  }
  func.func @s_rank2(%x: tensor<4x8xf32>) -> tensor<2x8xf32> attributes {dist.rank = 2 : i64, dist.origin = @step, tsr.train_step = "sgd"} {
    %0 = tsr.slice %x {starts = array<i64: 2, 0>, limits = array<i64: 4, 8>, steps = array<i64: 1, 1>} : tensor<4x8xf32> to tensor<2x8xf32>
    %1 = dist.all_reduce %0 {ranks = array<i64: 2, 3>} : tensor<2x8xf32>
    %2 = dist.all_reduce %1 {ranks = array<i64: 0, 1, 2, 3>} : tensor<2x8xf32>
    return %2 : tensor<2x8xf32>
  }
  func.func @s_rank3(%x: tensor<4x8xf32>) -> tensor<2x8xf32> attributes {dist.rank = 3 : i64, dist.origin = @step, tsr.train_step = "sgd"} {
    %0 = tsr.slice %x {starts = array<i64: 2, 0>, limits = array<i64: 4, 8>, steps = array<i64: 1, 1>} : tensor<4x8xf32> to tensor<2x8xf32>
    %1 = dist.all_reduce %0 {ranks = array<i64: 2, 3>} : tensor<2x8xf32>
    %2 = dist.all_reduce %1 {ranks = array<i64: 0, 1, 2, 3>} : tensor<2x8xf32>
    return %2 : tensor<2x8xf32>
  }
}

// -----

// Pipeline stages: a send and its receive are different ops, so the two
// stages stay apart; the two data-parallel ranks of each stage share, with
// their own peers and tags.
// CHECK-LABEL: module attributes {dist.mesh
// CHECK: func.func @p_rank0(%arg0: tensor<4xf32>) attributes {dist.origin = @step, dist.ranks = array<i64: 0, 2>, tsr.train_step = "sgd"}
// CHECK-NEXT: dist.send %arg0 {dist.rank_values = {peer = [1, 3], tag = [0, 1]}, peer = 1 : i64, tag = 0 : i64}
// CHECK: func.func @p_rank1() -> tensor<4xf32> attributes {dist.origin = @step, dist.ranks = array<i64: 1, 3>, tsr.train_step = "sgd"}
// CHECK-NEXT: dist.recv {dist.rank_values = {peer = [0, 2], tag = [0, 1]}, peer = 0 : i64, tag = 0 : i64}
// CHECK-NOT: func.func
module attributes {dist.mesh = #dist.mesh<[dp = 2, pp = 2]>} {
  func.func @p_rank0(%x: tensor<4xf32>) attributes {dist.rank = 0 : i64, dist.origin = @step, tsr.train_step = "sgd"} {
    dist.send %x {peer = 1 : i64, tag = 0 : i64} : tensor<4xf32>
    return
  }
  func.func @p_rank1() -> tensor<4xf32> attributes {dist.rank = 1 : i64, dist.origin = @step, tsr.train_step = "sgd"} {
    %0 = dist.recv {peer = 0 : i64, tag = 0 : i64} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func @p_rank2(%x: tensor<4xf32>) attributes {dist.rank = 2 : i64, dist.origin = @step, tsr.train_step = "sgd"} {
    dist.send %x {peer = 3 : i64, tag = 1 : i64} : tensor<4xf32>
    return
  }
  func.func @p_rank3() -> tensor<4xf32> attributes {dist.rank = 3 : i64, dist.origin = @step, tsr.train_step = "sgd"} {
    %0 = dist.recv {peer = 2 : i64, tag = 1 : i64} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// What is not rank-variant must be equal: an extra op (rank 1's zeroing
// of a partial value), another attribute (rank 2's dist.rvd) or another
// operand order (rank 3) keeps a rank to itself, with its dist.rank.
// CHECK-LABEL: module attributes {dist.mesh
// CHECK: func.func @u_rank0({{.*}}) -> tensor<4xf32> attributes {dist.origin = @step, dist.rank = 0 : i64, tsr.train_step = "sgd"}
// CHECK: func.func @u_rank1({{.*}}) -> tensor<4xf32> attributes {dist.origin = @step, dist.rank = 1 : i64, tsr.train_step = "sgd"}
// CHECK: func.func @u_rank2({{.*}}) -> tensor<4xf32> attributes {dist.origin = @step, dist.rank = 2 : i64, tsr.train_step = "sgd"}
// CHECK: func.func @u_rank3({{.*}}) -> tensor<4xf32> attributes {dist.origin = @step, dist.rank = 3 : i64, tsr.train_step = "sgd"}
// CHECK-NOT: dist.ranks
module attributes {dist.mesh = #dist.mesh<[dp = 4]>} {
  func.func @u_rank0(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> attributes {dist.rank = 0 : i64, dist.origin = @step, tsr.train_step = "sgd"} {
    %0 = tsr.sub %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = tsr.slice %0 {starts = array<i64: 0>, limits = array<i64: 4>, steps = array<i64: 1>} : tensor<4xf32> to tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func @u_rank1(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> attributes {dist.rank = 1 : i64, dist.origin = @step, tsr.train_step = "sgd"} {
    %0 = tsr.sub %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = tsr.slice %0 {starts = array<i64: 0>, limits = array<i64: 4>, steps = array<i64: 1>} : tensor<4xf32> to tensor<4xf32>
    %2 = tsr.sub %1, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %2 : tensor<4xf32>
  }
  func.func @u_rank2(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> attributes {dist.rank = 2 : i64, dist.origin = @step, tsr.train_step = "sgd"} {
    %0 = tsr.sub %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = tsr.slice %0 {dist.rvd = "R(dp) -local_slice-> D0(dp)", starts = array<i64: 0>, limits = array<i64: 4>, steps = array<i64: 1>} : tensor<4xf32> to tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func @u_rank3(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> attributes {dist.rank = 3 : i64, dist.origin = @step, tsr.train_step = "sgd"} {
    %0 = tsr.sub %y, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = tsr.slice %0 {starts = array<i64: 0>, limits = array<i64: 4>, steps = array<i64: 1>} : tensor<4xf32> to tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}
