// tsr-autodiff: the gradient function's signature, accumulation of a tied
// parameter's gradients, broadcast reduction, zero gradients, recomputation
// and errors. Numbers are checked by the end-to-end tests against PyTorch.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-autodiff | FileCheck %s

// CHECK-LABEL: func.func @tied_grad
// CHECK-SAME: -> (tensor<f32> {tsr.loss}, tensor<4x8xf32> {tsr.grad = "w"}, tensor<8xf32> {tsr.grad = "b"}, tensor<3xf32> {tsr.grad = "unused"})
// CHECK: %[[ONE:.*]] = tsr.constant {tsr.backward} dense<1.000000e+00> : tensor<f32>
// The bias broadcast over rows: its gradient is summed over them.
// CHECK: tsr.reduce_sum %{{.*}} {axes = array<i64: 0>, keepdims = true, tsr.backward} : (tensor<4x8xf32>) -> tensor<1x8xf32>
// CHECK: tsr.reshape %{{.*}} {tsr.backward} : tensor<1x8xf32> to tensor<8xf32>
// w is used twice: its two contributions are added.
// CHECK: %[[W:.*]] = tsr.add %{{.*}}, %{{.*}} {tsr.backward} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[Z:.*]] = tsr.constant {tsr.backward} dense<0.000000e+00> : tensor<3xf32>
// CHECK: return %{{.*}}, %[[W]], %{{.*}}, %[[Z]]
func.func @tied(%w: tensor<4x8xf32> {tsr.param = "w"}, %b: tensor<8xf32> {tsr.param = "b"},
                %u: tensor<3xf32> {tsr.param = "unused"}, %x: tensor<4x8xf32> {tsr.input = "x"})
    -> (tensor<f32> {tsr.loss}, tensor<4x8xf32> {tsr.output = "y"}) {
  %0 = tsr.mul %w, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = tsr.add %0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = tsr.mul %1, %w : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = tsr.reduce_sum %2 {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  return %3, %2 : tensor<f32>, tensor<4x8xf32>
}

// -----

// Ops off the path from a parameter to the loss need no rule (the labels'
// cast here), ops on it do.
func.func @no_rule(%p: tensor<4x8xf32> {tsr.param = "p"}, %dy: tensor<4x8xf32> {tsr.input = "dy"}) -> (tensor<f32> {tsr.loss}) {
  // expected-error @+1 {{tsr-autodiff: 'tsr.softmax_grad' has no gradient rule (it lies between a parameter and the loss)}}
  %0 = tsr.softmax_grad %p, %dy {axis = 1 : i64} : tensor<4x8xf32>
  %1 = tsr.reduce_sum %0 {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// expected-error @+1 {{tsr-autodiff: no function has a result marked tsr.loss}}
module {
  func.func @no_loss(%p: tensor<4xf32> {tsr.param = "p"}) -> tensor<4xf32> {
    return %p : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{the loss must be a rank-0 float tensor, found 'tensor<4xf32>'}}
func.func @vector_loss(%p: tensor<4xf32> {tsr.param = "p"}) -> (tensor<4xf32> {tsr.loss}) {
  return %p : tensor<4xf32>
}

// -----

module {
  func.func @first(%p: tensor<4xf32> {tsr.param = "p"}) -> (tensor<f32> {tsr.loss}) {
    %0 = tsr.reduce_sum %p {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
  // expected-error @+1 {{tsr-autodiff: several functions have a tsr.loss result; choose one with func=<name>}}
  func.func @second(%p: tensor<4xf32> {tsr.param = "p"}) -> (tensor<f32> {tsr.loss}) {
    %0 = tsr.reduce_sum %p {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// Gradients of a bf16 value (tsr-mixed-precision's storage) used twice are
// summed in f32 and rounded once: the runtime's arithmetic is f32 and f64.
// The cast's own gradient is the opposite cast, so the parameter's is f32.
// CHECK-LABEL: func.func @bf16_sum_grad
// CHECK: %[[A:.*]] = tsr.cast %{{.*}} {tsr.backward} : tensor<4xbf16> to tensor<4xf32>
// CHECK-NEXT: %[[B:.*]] = tsr.cast %{{.*}} {tsr.backward} : tensor<4xbf16> to tensor<4xf32>
// CHECK-NEXT: %[[S:.*]] = tsr.add %[[A]], %[[B]] {tsr.backward}
// CHECK-NEXT: %[[N:.*]] = tsr.cast %[[S]] {tsr.backward} : tensor<4xf32> to tensor<4xbf16>
// CHECK-NEXT: %[[G:.*]] = tsr.cast %[[N]] {tsr.backward} : tensor<4xbf16> to tensor<4xf32>
// CHECK: return %{{.*}}, %[[G]] : tensor<f32>, tensor<4xf32>
func.func @bf16_sum(%p: tensor<4xf32> {tsr.param = "p"}) -> (tensor<f32> {tsr.loss}) {
  %b = tsr.cast %p : tensor<4xf32> to tensor<4xbf16>
  %t1 = tsr.reshape %b : tensor<4xbf16> to tensor<2x2xbf16>
  %t2 = tsr.reshape %b : tensor<4xbf16> to tensor<1x4xbf16>
  %w1 = tsr.cast %t1 : tensor<2x2xbf16> to tensor<2x2xf32>
  %w2 = tsr.cast %t2 : tensor<1x4xbf16> to tensor<1x4xf32>
  %s1 = tsr.reduce_sum %w1 {axes = array<i64: 0, 1>} : (tensor<2x2xf32>) -> tensor<f32>
  %s2 = tsr.reduce_sum %w2 {axes = array<i64: 0, 1>} : (tensor<1x4xf32>) -> tensor<f32>
  %l = tsr.add %s1, %s2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}
