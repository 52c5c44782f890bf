// dist-partition: a value that crosses pipeline stages goes by dist.send on
// the producer's rank and dist.recv on the consumer's, with matching tags.
// RUN: tessera-opt %s -dist-partition | FileCheck %s

// Across pipeline stages: a send on the producer's rank, a receive on the
// consumer's; the loss reaches every rank.
// CHECK-LABEL: func.func @train_step_p_rank0
// CHECK: %[[A:.*]] = tsr.exp
// CHECK: dist.send %[[A]] {peer = 1 : i64, tag = [[T:[0-9]+]] : i64} : tensor<4xf32>
// CHECK: %[[L:.*]] = dist.recv {peer = 1 : i64, tag = {{[0-9]+}} : i64} : tensor<f32>
// CHECK: return %[[L]]
// CHECK-LABEL: func.func @train_step_p_rank1
// CHECK: %[[B:.*]] = dist.recv {peer = 0 : i64, tag = [[T]] : i64} : tensor<4xf32>
// CHECK: tsr.neg %[[B]]
module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 1, pp = 2]>} {
  func.func @train_step_p(%x: tensor<4xf32> {tsr.input = "x"}) -> (tensor<f32> {tsr.loss}) attributes {tsr.train_step = "p"} {
    %0 = tsr.exp %x {dist.stage = 0 : i64} : tensor<4xf32>
    %1 = tsr.neg %0 {dist.stage = 1 : i64} : tensor<4xf32>
    %2 = tsr.reduce_sum %1 {axes = array<i64: 0>, dist.stage = 1 : i64} : (tensor<4xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
