// RUN: tessera-opt %s -split-input-file -tsr-mixed-precision -verify-diagnostics | FileCheck %s

// bf16 storage, f32 compute. The f32 parameter is cast to bf16 once; moves
// (transpose, reshape) work on bf16; the matmul reads f32 views (one per
// value) and its result is rounded to bf16; layer_norm's statistics (fewer
// elements than its result) and the loss (rank 0) stay f32; constants stay
// f32; a value built from constants alone stays f32; the returned logits
// are cast back to the function's f32 result type.
// CHECK-LABEL: func.func @mlp
// CHECK-DAG: %[[W:.*]] = tsr.cast %arg0 : tensor<8x4xf32> to tensor<8x4xbf16>
// CHECK-DAG: %[[X:.*]] = tsr.cast %arg2 : tensor<2x4xf32> to tensor<2x4xbf16>
// CHECK: %[[WT:.*]] = tsr.transpose %[[W]] {{.*}} : tensor<8x4xbf16> to tensor<4x8xbf16>
// CHECK: %[[XW:.*]] = tsr.cast %[[X]] : tensor<2x4xbf16> to tensor<2x4xf32>
// CHECK: %[[WW:.*]] = tsr.cast %[[WT]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK: %[[MM:.*]] = tsr.matmul %[[XW]], %[[WW]]
// CHECK: %[[H:.*]] = tsr.cast %[[MM]] : tensor<2x8xf32> to tensor<2x8xbf16>
// CHECK: %[[HW:.*]] = tsr.cast %[[H]] : tensor<2x8xbf16> to tensor<2x8xf32>
// CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[RSTD:.*]] = tsr.layer_norm %[[HW]], %{{.*}}, %{{.*}} {{.*}} -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
// CHECK: %[[YN:.*]] = tsr.cast %[[Y]] : tensor<2x8xf32> to tensor<2x8xbf16>
// CHECK: %[[YW:.*]] = tsr.cast %[[YN]] : tensor<2x8xbf16> to tensor<2x8xf32>
// CHECK: %[[S:.*]] = tsr.mul %[[YW]], %[[SC:.*]] :
// CHECK: %[[SN:.*]] = tsr.cast %[[S]] : tensor<2x8xf32> to tensor<2x8xbf16>
// CHECK: %[[SW:.*]] = tsr.cast %[[SN]] : tensor<2x8xbf16> to tensor<2x8xf32>
// CHECK: %[[L:.*]] = tsr.softmax_cross_entropy mean %[[SW]], %arg3 {{.*}} -> tensor<f32>
// CHECK-NOT: tsr.cast %[[L]]
// CHECK: return %[[SW]], %[[L]], %[[MEAN]] : tensor<2x8xf32>, tensor<f32>, tensor<2x1xf32>
func.func @mlp(%w: tensor<8x4xf32> {tsr.param = "w"}, %g: tensor<8xf32> {tsr.param = "g"},
               %x: tensor<2x4xf32> {tsr.input = "x"}, %t: tensor<2xi64> {tsr.input = "t"})
    -> (tensor<2x8xf32>, tensor<f32> {tsr.loss}, tensor<2x1xf32>) {
  %wt = tsr.transpose %w {perm = array<i64: 1, 0>} : tensor<8x4xf32> to tensor<4x8xf32>
  %h = tsr.matmul %x, %wt : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %y, %mean, %rstd = tsr.layer_norm %h, %g, %g {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %c = tsr.constant dense<2.0> : tensor<2x8xf32>
  %e = tsr.exp %c : tensor<2x8xf32>
  %s = tsr.mul %y, %e : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %loss = tsr.softmax_cross_entropy mean %s, %t {ignore_index = -1 : i64} : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<f32>
  return %s, %loss, %mean : tensor<2x8xf32>, tensor<f32>, tensor<2x1xf32>
}

// -----

// A move with an f32 operand that is not stored as bf16 (a constant) is a
// computation like any other: f32 in, its result rounded.
// CHECK-LABEL: func.func @concat_const
// CHECK: %[[P:.*]] = tsr.cast %arg0 : tensor<2x3xf32> to tensor<2x3xbf16>
// CHECK: %[[PW:.*]] = tsr.cast %[[P]] : tensor<2x3xbf16> to tensor<2x3xf32>
// CHECK: %[[C:.*]] = tsr.concat %[[PW]], %{{.*}} {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK: tsr.cast %[[C]] : tensor<4x3xf32> to tensor<4x3xbf16>
func.func @concat_const(%p: tensor<2x3xf32> {tsr.param = "p"}) -> (tensor<f32> {tsr.loss}) {
  %c = tsr.constant dense<1.0> : tensor<2x3xf32>
  %cat = tsr.concat %p, %c {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %s = tsr.reduce_sum %cat {axes = array<i64: 0, 1>} : (tensor<4x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A model that already holds bf16 values has its own precision.
func.func @bf16_model(%p: tensor<4xf32> {tsr.param = "p"}) -> (tensor<f32> {tsr.loss}) {
  // expected-error @+1 {{tsr-mixed-precision: the model already computes in bf16; train it with --precision fp32}}
  %b = tsr.cast %p : tensor<4xf32> to tensor<4xbf16>
  %w = tsr.cast %b : tensor<4xbf16> to tensor<4xf32>
  %s = tsr.reduce_sum %w {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// expected-error @+1 {{tsr-mixed-precision: no function has a result marked tsr.loss}}
module {
  func.func @f(%p: tensor<4xf32>) -> tensor<4xf32> {
    return %p : tensor<4xf32>
  }
}
