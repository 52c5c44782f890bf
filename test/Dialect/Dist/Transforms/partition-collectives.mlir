// dist-partition derives each collective from the producer's and the
// consumer's layouts (the RVD search): one function per rank, local shapes.
// RUN: tessera-opt %s -split-input-file -dist-partition | FileCheck %s

// A matmul split along its contraction leaves partial sums (V); the
// consumer wants them whole: all_reduce over the split axis.
// CHECK-LABEL: func.func @train_step_x_rank0
// CHECK-SAME: %{{.*}}: tensor<4x8xf32> {tsr.input = "x"}, %{{.*}}: tensor<8x6xf32> {tsr.param = "w"}
// CHECK: %[[XS:.*]] = tsr.slice %{{.*}} {dist.rvd = "R(tp) -local_slice-> D1(tp)", limits = array<i64: 4, 4>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x8xf32> to tensor<4x4xf32>
// CHECK: %[[WS:.*]] = tsr.slice %{{.*}} {dist.rvd = "R(tp) -local_slice-> D0(tp)", limits = array<i64: 4, 6>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<8x6xf32> to tensor<4x6xf32>
// CHECK: %[[P:.*]] = tsr.matmul %[[XS]], %[[WS]] : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
// CHECK: dist.all_reduce %[[P]] {dist.rvd = "V(tp) -all_reduce-> R(tp)", ranks = array<i64: 0, 1>} : tensor<4x6xf32>
// CHECK-LABEL: func.func @train_step_x_rank1
// CHECK: tsr.slice %{{.*}} {dist.rvd = "R(tp) -local_slice-> D1(tp)", limits = array<i64: 4, 8>, starts = array<i64: 0, 4>, steps = array<i64: 1, 1>}
module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 2, pp = 1]>} {
  func.func @train_step_x(%x: tensor<4x8xf32> {tsr.input = "x"}, %w: tensor<8x6xf32> {tsr.param = "w"})
      -> (tensor<f32> {tsr.loss}) attributes {tsr.train_step = "x"} {
    %0 = tsr.matmul %x, %w {dist.split = {k = "tp"}} : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
    %1 = tsr.reduce_sum %0 {axes = array<i64: 0, 1>} : (tensor<4x6xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// Partial sums wanted split (ZeRO-style): reduce_scatter. A split value
// wanted whole: all_gather.
// CHECK-LABEL: func.func @train_step_y_rank0
// CHECK: %[[V:.*]] = tsr.matmul
// CHECK: %[[RS:.*]] = dist.reduce_scatter %[[V]] {dim = 0 : i64, dist.rvd = "V(dp) -reduce_scatter-> D0(dp)", ranks = array<i64: 0, 1>} : tensor<8x6xf32> -> tensor<4x6xf32>
// CHECK: %[[E:.*]] = tsr.exp %[[RS]] : tensor<4x6xf32>
// CHECK: dist.all_gather %[[E]] {dim = 0 : i64, dist.rvd = "D0(dp) -all_gather-> R(dp)", ranks = array<i64: 0, 1>} : tensor<4x6xf32> -> tensor<8x6xf32>
module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 1, pp = 1]>} {
  func.func @train_step_y(%x: tensor<4x8xf32> {tsr.input = "x"}, %w: tensor<4x6xf32> {tsr.param = "w"})
      -> (tensor<f32> {tsr.loss}) attributes {tsr.train_step = "y"} {
    %t = tsr.transpose %x {perm = array<i64: 1, 0>} : tensor<4x8xf32> to tensor<8x4xf32>
    %0 = tsr.matmul %t, %w {dist.split = {k = "dp"}} : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
    %1 = tsr.exp %0 {dist.split = {_0 = "dp"}} : tensor<8x6xf32>
    %2 = tsr.reduce_max %1 {axes = array<i64: 0, 1>} : (tensor<8x6xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// Rows split, wanted as columns split: all_to_all.
// CHECK-LABEL: func.func @train_step_z_rank0
// CHECK: %[[R:.*]] = tsr.exp %{{.*}} : tensor<2x8xf32>
// CHECK: dist.all_to_all %[[R]] {concat_dim = 0 : i64, dist.rvd = "D0(dp) -all_to_all-> D1(dp)", ranks = array<i64: 0, 1>, split_dim = 1 : i64} : tensor<2x8xf32> -> tensor<4x4xf32>
module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 1, pp = 1]>} {
  func.func @train_step_z(%x: tensor<4x8xf32> {tsr.input = "x"}) -> (tensor<f32> {tsr.loss}) attributes {tsr.train_step = "z"} {
    %0 = tsr.exp %x {dist.split = {_0 = "dp"}} : tensor<4x8xf32>
    %1 = tsr.neg %0 {dist.split = {_1 = "dp"}} : tensor<4x8xf32>
    %2 = tsr.reduce_sum %1 {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
