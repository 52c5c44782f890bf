// op-order: dist-partition emits an op after every op its dist.order_after
// names (by NameLoc name), even where program order has it first; an
// unknown name is an error.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -dist-partition | FileCheck %s

// Program order: relu, then exp. Without an order the emitted order is the
// same.
// CHECK-LABEL: func.func @train_step_plain_rank0
// CHECK: tsr.relu
// CHECK: tsr.exp
module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 1, pp = 1]>} {
  func.func @train_step_plain(%x: tensor<4xf32> {tsr.input = "x"}) -> (tensor<f32> {tsr.loss}) attributes {tsr.train_step = "x"} {
    %0 = tsr.relu %x : tensor<4xf32> loc("first")
    %1 = tsr.exp %x : tensor<4xf32> loc("second")
    %2 = tsr.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %3 = tsr.reduce_sum %2 {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %3 : tensor<f32>
  }
}

// -----

// The relu must follow the exp: the exp is emitted first.
// CHECK-LABEL: func.func @train_step_ordered_rank0
// CHECK: tsr.exp
// CHECK: tsr.relu
// CHECK: tsr.add
module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 1, pp = 1]>} {
  func.func @train_step_ordered(%x: tensor<4xf32> {tsr.input = "x"}) -> (tensor<f32> {tsr.loss}) attributes {tsr.train_step = "x"} {
    %0 = tsr.relu %x {dist.order_after = ["second"]} : tensor<4xf32> loc("first")
    %1 = tsr.exp %x : tensor<4xf32> loc("second")
    %2 = tsr.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %3 = tsr.reduce_sum %2 {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %3 : tensor<f32>
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 1, pp = 1]>} {
  func.func @train_step_unknown(%x: tensor<4xf32> {tsr.input = "x"}) -> (tensor<f32> {tsr.loss}) attributes {tsr.train_step = "x"} {
    // expected-error @+1 {{dist-partition: dist.order_after names 'nowhere', which is no op of the step}}
    %0 = tsr.relu %x {dist.order_after = ["nowhere"]} : tensor<4xf32>
    %1 = tsr.reduce_sum %0 {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}
