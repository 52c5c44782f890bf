// dist-partition, op-trans alone: an op split along an annotated dimension
// runs on its local piece on each rank (a local slice of a replicated
// input, the local shape, the rank's offset), and an op without dist.split
// is replicated.
// RUN: tessera-opt %s -dist-partition | FileCheck %s

// The rows of x split over dp: rank 0 takes rows [0, 2), rank 1 rows
// [2, 4); the exp after it is not split, so the rows are gathered first.
// CHECK-LABEL: func.func @train_step_s_rank0
// CHECK: %[[X0:.*]] = tsr.slice %{{.*}} {dist.rvd = "R(dp) -local_slice-> D0(dp)", limits = array<i64: 2, 8>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x8xf32> to tensor<2x8xf32>
// CHECK: %[[M0:.*]] = tsr.matmul %[[X0]], %{{.*}} : (tensor<2x8xf32>, tensor<8x6xf32>) -> tensor<2x6xf32>
// CHECK: dist.all_gather %[[M0]] {dim = 0 : i64, dist.rvd = "D0(dp) -all_gather-> R(dp)", ranks = array<i64: 0, 1>} : tensor<2x6xf32> -> tensor<4x6xf32>
// CHECK: tsr.exp %{{.*}} : tensor<4x6xf32>
// CHECK-LABEL: func.func @train_step_s_rank1
// CHECK: tsr.slice %{{.*}} {dist.rvd = "R(dp) -local_slice-> D0(dp)", limits = array<i64: 4, 8>, starts = array<i64: 2, 0>, steps = array<i64: 1, 1>} : tensor<4x8xf32> to tensor<2x8xf32>
// CHECK: tsr.matmul %{{.*}}, %{{.*}} : (tensor<2x8xf32>, tensor<8x6xf32>) -> tensor<2x6xf32>
module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 1, pp = 1]>} {
  func.func @train_step_s(%x: tensor<4x8xf32> {tsr.input = "x"}, %w: tensor<8x6xf32> {tsr.param = "w"})
      -> (tensor<f32> {tsr.loss}) attributes {tsr.train_step = "s"} {
    %0 = tsr.matmul %x, %w {dist.split = {m = "dp"}} : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
    %1 = tsr.exp %0 : tensor<4x6xf32>
    %2 = tsr.reduce_sum %1 {axes = array<i64: 0, 1>} : (tensor<4x6xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
