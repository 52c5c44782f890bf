// Folders of tsr ops: identities and cheap constant folding.
// RUN: tessera-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>
// CHECK-NOT: tsr.add
// CHECK-NOT: tsr.mul
// CHECK-NOT: tsr.div
// CHECK-NOT: tsr.pow
// CHECK-NOT: tsr.sub
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
func.func @identities(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = tsr.constant dense<0.0> : tensor<f32>
  %one = tsr.constant dense<1.0> : tensor<8xf32>
  %0 = tsr.add %zero, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = tsr.mul %x, %one : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = tsr.div %x, %one : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = tsr.pow %x, %one : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %4 = tsr.sub %x, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %0, %1, %2, %3, %4 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A broadcasting identity must not fold: the result is larger than x.
// CHECK-LABEL: func.func @broadcast_is_not_identity
// CHECK: tsr.add
func.func @broadcast_is_not_identity(%x: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = tsr.constant dense<0.0> : tensor<4x8xf32>
  %0 = tsr.add %x, %zero : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @constants
// CHECK-DAG: %[[A:.*]] = tsr.constant dense<5.000000e+00> : tensor<2xf32>
// CHECK-DAG: %[[B:.*]] = tsr.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[C:.*]] = tsr.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00]]> : tensor<1x2xf32>
// CHECK: return %[[A]], %[[B]], %[[C]]
func.func @constants() -> (tensor<2xf32>, tensor<2xf32>, tensor<1x2xf32>) {
  %a = tsr.constant dense<2.0> : tensor<2xf32>
  %b = tsr.constant dense<3.0> : tensor<2xf32>
  %s = tsr.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %sq = tsr.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %r = tsr.sqrt %sq : tensor<2xf32>
  %n = tsr.neg %sq : tensor<2xf32>
  %nn = tsr.neg %n : tensor<2xf32>
  %rs = tsr.reshape %nn : tensor<2xf32> to tensor<1x2xf32>
  return %s, %r, %rs : tensor<2xf32>, tensor<2xf32>, tensor<1x2xf32>
}

// -----

// CHECK-LABEL: func.func @shape_ops
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>
// CHECK: %[[R:.*]] = tsr.reshape %[[X]] : tensor<2x3xf32> to tensor<6xf32>
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[R]], %[[X]]
func.func @shape_ops(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<6xf32>, tensor<2x3xf32>) {
  %0 = tsr.transpose %x {perm = array<i64: 0, 1>} : tensor<2x3xf32> to tensor<2x3xf32>
  %1 = tsr.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 2, 3>, steps = array<i64: 1, 1>} : tensor<2x3xf32> to tensor<2x3xf32>
  %2 = tsr.concat %x {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = tsr.cast %x : tensor<2x3xf32> to tensor<2x3xf32>
  %a = tsr.reshape %x : tensor<2x3xf32> to tensor<3x2xf32>
  %4 = tsr.reshape %a : tensor<3x2xf32> to tensor<6xf32>
  %5 = tsr.broadcast_to %x : tensor<2x3xf32> to tensor<2x3xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<6xf32>, tensor<2x3xf32>
}

// -----

// A transpose of a transpose folds to the inner input where the two
// permutations compose to the identity (the backward's transpose of a
// weight the forward transposed), and not otherwise.
// CHECK-LABEL: func.func @transpose_pairs
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>
// CHECK: %[[T:.*]] = tsr.transpose %[[X]] {perm = array<i64: 1, 2, 0>}
// CHECK: %[[U:.*]] = tsr.transpose %[[T]] {perm = array<i64: 1, 2, 0>}
// CHECK: return %[[X]], %[[U]]
func.func @transpose_pairs(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x2x3xf32>) {
  %t = tsr.transpose %x {perm = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> to tensor<3x4x2xf32>
  %back = tsr.transpose %t {perm = array<i64: 2, 0, 1>} : tensor<3x4x2xf32> to tensor<2x3x4xf32>
  %again = tsr.transpose %t {perm = array<i64: 1, 2, 0>} : tensor<3x4x2xf32> to tensor<4x2x3xf32>
  return %back, %again : tensor<2x3x4xf32>, tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @splat_broadcast
// CHECK: tsr.constant dense<7.000000e+00> : tensor<4x8xf32>
// CHECK-NOT: tsr.broadcast_to
func.func @splat_broadcast() -> tensor<4x8xf32> {
  %c = tsr.constant dense<7.0> : tensor<8xf32>
  %0 = tsr.broadcast_to %c : tensor<8xf32> to tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @relu_idempotent
// CHECK-COUNT-1: tsr.relu
// CHECK-NOT: tsr.relu
func.func @relu_idempotent(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tsr.relu %x : tensor<4xf32>
  %1 = tsr.relu %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Dense (non-splat) constants fold with numpy broadcasting.
// CHECK-LABEL: func.func @dense_binary_broadcast
// CHECK-NEXT: %[[C:.*]] = tsr.constant dense<{{\[}}[9.000000e+00, 8.000000e+00, 7.000000e+00], [1.900000e+01, 1.800000e+01, 1.700000e+01]]> : tensor<2x3xf32>
// CHECK-NEXT: return %[[C]]
func.func @dense_binary_broadcast() -> tensor<2x3xf32> {
  %a = tsr.constant dense<[[10.0], [20.0]]> : tensor<2x1xf32>
  %b = tsr.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %0 = tsr.sub %a, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// compare and where on constants; NaN is unordered (only ne holds).
// CHECK-LABEL: func.func @compare_where
// CHECK-DAG: tsr.constant dense<[true, false, false]> : tensor<3xi1>
// CHECK-DAG: tsr.constant dense<[false, false, true]> : tensor<3xi1>
// CHECK-DAG: tsr.constant dense<{{\[}}[1.000000e+00, 0.000000e+00, 0.000000e+00], [1.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<2x3xf32>
// CHECK-NOT: tsr.compare
// CHECK-NOT: tsr.where
func.func @compare_where() -> (tensor<3xi1>, tensor<3xi1>, tensor<2x3xf32>) {
  %a = tsr.constant dense<[1.0, 2.0, 0x7FC00000]> : tensor<3xf32>
  %b = tsr.constant dense<2.0> : tensor<f32>
  %lt = tsr.compare lt, %a, %b : (tensor<3xf32>, tensor<f32>) -> tensor<3xi1>
  %ne = tsr.compare ne, %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  %one = tsr.constant dense<1.0> : tensor<f32>
  %zero = tsr.constant dense<[[0.0], [0.0]]> : tensor<2x1xf32>
  %w = tsr.where %lt, %one, %zero : (tensor<3xi1>, tensor<f32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  return %lt, %ne, %w : tensor<3xi1>, tensor<3xi1>, tensor<2x3xf32>
}

// -----

// cast: float to integer rounds toward zero, to i1 compares with zero, i1
// reads as 0/1; a value out of the target's range is left to the runtime.
// CHECK-LABEL: func.func @casts
// CHECK-DAG: tsr.constant dense<[-1, 2, 0]> : tensor<3xi64>
// CHECK-DAG: tsr.constant dense<[false, true, true]> : tensor<3xi1>
// CHECK-DAG: tsr.constant dense<[0.000000e+00, 1.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[BIG:.*]] = tsr.constant dense<3.000000e+10> : tensor<f32>
// CHECK: tsr.cast %[[BIG]] : tensor<f32> to tensor<i32>
// CHECK-NOT: tsr.cast
func.func @casts() -> (tensor<3xi64>, tensor<3xi1>, tensor<2xf32>, tensor<i32>) {
  %f = tsr.constant dense<[-1.5, 2.7, 0.0]> : tensor<3xf32>
  %g = tsr.constant dense<[0.0, -0.5, 4.0]> : tensor<3xf32>
  %m = tsr.constant dense<[false, true]> : tensor<2xi1>
  %big = tsr.constant dense<3.0e10> : tensor<f32>
  %0 = tsr.cast %f : tensor<3xf32> to tensor<3xi64>
  %1 = tsr.cast %g : tensor<3xf32> to tensor<3xi1>
  %2 = tsr.cast %m : tensor<2xi1> to tensor<2xf32>
  %3 = tsr.cast %big : tensor<f32> to tensor<i32>
  return %0, %1, %2, %3 : tensor<3xi64>, tensor<3xi1>, tensor<2xf32>, tensor<i32>
}

// -----

// concat of constants: each row takes one run from every input in turn.
// CHECK-LABEL: func.func @concat_constants
// CHECK-NEXT: %[[C:.*]] = tsr.constant dense<{{\[}}[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
// CHECK-NEXT: return %[[C]]
func.func @concat_constants() -> tensor<2x3xi64> {
  %a = tsr.constant dense<[[1], [4]]> : tensor<2x1xi64>
  %b = tsr.constant dense<[[2, 3], [5, 6]]> : tensor<2x2xi64>
  %0 = tsr.concat %a, %b {axis = 1 : i64} : (tensor<2x1xi64>, tensor<2x2xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}
