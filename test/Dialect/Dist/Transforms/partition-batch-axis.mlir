// dist-partition: the batch may be split over another axis than dp with one
// micro-batch (each tp rank computes its rows); with several micro-batches,
// which cut the batch inner to dp, it must be dp's.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -dist-partition | FileCheck %s

// CHECK-LABEL: func.func @train_step_b_rank1
// CHECK: %[[X:.*]] = tsr.slice %arg0 {dist.rvd = "R(tp) -local_slice-> D0(tp)", limits = array<i64: 4, 3>, starts = array<i64: 2, 0>
// CHECK: tsr.relu %[[X]] : tensor<2x3xf32>
module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 2, pp = 1]>} {
  func.func @train_step_b(%x: tensor<4x3xf32> {tsr.input = "x"}) -> (tensor<f32> {tsr.loss}) attributes {tsr.train_step = "b"} {
    %0 = tsr.relu %x {dist.batch = "_0", dist.split = {_0 = "tp"}} : tensor<4x3xf32>
    %1 = tsr.reduce_sum %0 {axes = array<i64: 0, 1>, dist.batch = "d0", dist.split = {d0 = "tp"}} : (tensor<4x3xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 2, pp = 1]>, dist.pipeline = #dist.pipeline<micro_batches = 2>} {
  func.func @train_step_m(%x: tensor<4x3xf32> {tsr.input = "x"}) -> (tensor<f32> {tsr.loss}) attributes {tsr.train_step = "m"} {
    // expected-error @+1 {{dist-partition: the batch dimension '_0' is split over 'tp', not dp}}
    %0 = tsr.relu %x {dist.batch = "_0", dist.split = {_0 = "tp"}} : tensor<4x3xf32>
    %1 = tsr.reduce_sum %0 {axes = array<i64: 0, 1>, dist.batch = "d0", dist.split = {d0 = "tp"}} : (tensor<4x3xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}
