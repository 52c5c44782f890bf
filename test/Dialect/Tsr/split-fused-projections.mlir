// RUN: tessera-opt %s -tsr-split-fused-projections | FileCheck %s

// GPT's fused QKV projection with a bias, split into q, k, v: one
// projection per piece, by slices of the weight and of the bias.
// CHECK-LABEL: func.func @qkv
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[W:.*]]: tensor<8x24xf32>, %[[B:.*]]: tensor<24xf32>)
// CHECK-NOT: tsr.split
// CHECK: %[[W0:.*]] = tsr.slice %[[W]] {limits = array<i64: 8, 8>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>}
// CHECK: %[[M0:.*]] = tsr.matmul %[[X]], %[[W0]] : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[B0:.*]] = tsr.slice %[[B]] {limits = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>}
// CHECK: %[[Q:.*]] = tsr.add %[[M0]], %[[B0]]
// CHECK: tsr.slice %[[W]] {limits = array<i64: 8, 16>, starts = array<i64: 0, 8>
// CHECK: tsr.slice %[[W]] {limits = array<i64: 8, 24>, starts = array<i64: 0, 16>
// CHECK: return %[[Q]],
func.func @qkv(%x: tensor<2x4x8xf32>, %w: tensor<8x24xf32>, %b: tensor<24xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %m = tsr.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
  %y = tsr.add %m, %b : (tensor<2x4x24xf32>, tensor<24xf32>) -> tensor<2x4x24xf32>
  %q, %k, %v = tsr.split %y {axis = 2 : i64, sizes = array<i64: 8, 8, 8>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
  return %q, %k, %v : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// Without a bias, and unequal pieces.
// CHECK-LABEL: func.func @nobias
// CHECK-NOT: tsr.split
// CHECK: tsr.matmul {{.*}} -> tensor<3x4xf32>
// CHECK: tsr.matmul {{.*}} -> tensor<3x2xf32>
func.func @nobias(%x: tensor<3x5xf32>, %w: tensor<5x6xf32>) -> (tensor<3x4xf32>, tensor<3x2xf32>) {
  %m = tsr.matmul %x, %w : (tensor<3x5xf32>, tensor<5x6xf32>) -> tensor<3x6xf32>
  %a, %c = tsr.split %m {axis = 1 : i64, sizes = array<i64: 4, 2>} : tensor<3x6xf32> -> tensor<3x4xf32>, tensor<3x2xf32>
  return %a, %c : tensor<3x4xf32>, tensor<3x2xf32>
}

// Left alone: a split along another axis, and a projection whose output
// is also used whole.
// CHECK-LABEL: func.func @kept
// CHECK: tsr.split {{.*}}axis = 0
// CHECK: tsr.split {{.*}}axis = 1
func.func @kept(%x: tensor<4x5xf32>, %w: tensor<5x6xf32>) -> (tensor<2x6xf32>, tensor<2x6xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x6xf32>) {
  %m = tsr.matmul %x, %w : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %a, %b = tsr.split %m {axis = 0 : i64, sizes = array<i64: 2, 2>} : tensor<4x6xf32> -> tensor<2x6xf32>, tensor<2x6xf32>
  %n = tsr.matmul %x, %w : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %c, %d = tsr.split %n {axis = 1 : i64, sizes = array<i64: 3, 3>} : tensor<4x6xf32> -> tensor<4x3xf32>, tensor<4x3xf32>
  return %a, %b, %c, %d, %n : tensor<2x6xf32>, tensor<2x6xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x6xf32>
}
