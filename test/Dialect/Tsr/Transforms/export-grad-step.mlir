// RUN: tessera-opt %s -split-input-file -tsr-export-grad-step -verify-diagnostics | FileCheck %s

// The gradient function (its second result carries tsr.grad) is copied as
// the public grad_step, marked tsr.grad_step; the original stays.
// CHECK-LABEL: func.func private @loss_grad
// CHECK-SAME: -> (tensor<f32> {tsr.loss}, tensor<4xf32> {tsr.grad = "w"})
// CHECK-NOT: tsr.grad_step
// CHECK: func.func @grad_step(%{{.*}}: tensor<4xf32> {tsr.param = "w"}) -> (tensor<f32> {tsr.loss}, tensor<4xf32> {tsr.grad = "w"}) attributes {tsr.grad_step}
// CHECK-NEXT: tsr.reduce_sum
func.func private @loss_grad(%w: tensor<4xf32> {tsr.param = "w"})
    -> (tensor<f32> {tsr.loss}, tensor<4xf32> {tsr.grad = "w"}) {
  %0 = tsr.reduce_sum %w {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %0, %w : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{tsr-export-grad-step: no gradient function (one whose second result carries tsr.grad; run tsr-autodiff first)}}
module {
  func.func @f(%w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    return %w, %w : tensor<4xf32>, tensor<4xf32>
  }
}

// -----

module {
  func.func @f(%w: tensor<4xf32> {tsr.param = "w"}) -> (tensor<f32> {tsr.loss}, tensor<4xf32> {tsr.grad = "w"}) {
    %0 = tsr.reduce_sum %w {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %0, %w : tensor<f32>, tensor<4xf32>
  }
  // expected-error @+1 {{tsr-export-grad-step: 'grad_step' already exists}}
  func.func @grad_step() {
    return
  }
}
