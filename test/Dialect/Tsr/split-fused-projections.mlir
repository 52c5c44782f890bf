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

// nn.MultiheadAttention's in_proj: the projection plus bias cut by three
// slices of its features; each slice becomes its own projection.
// CHECK-LABEL: func.func @in_proj
// CHECK-SAME: (%[[X:.*]]: tensor<6x2x8xf32>, %[[W:.*]]: tensor<8x24xf32>, %[[B:.*]]: tensor<24xf32>)
// CHECK-NOT: tsr.slice %{{.*}} : tensor<6x2x24xf32>
// CHECK: %[[W0:.*]] = tsr.slice %[[W]] {limits = array<i64: 8, 8>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>}
// CHECK: %[[M0:.*]] = tsr.matmul %[[X]], %[[W0]] : (tensor<6x2x8xf32>, tensor<8x8xf32>) -> tensor<6x2x8xf32>
// CHECK: %[[B0:.*]] = tsr.slice %[[B]] {limits = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>}
// CHECK: %[[Q:.*]] = tsr.add %[[M0]], %[[B0]]
// CHECK: %[[W1:.*]] = tsr.slice %[[W]] {limits = array<i64: 8, 16>, starts = array<i64: 0, 8>
// CHECK: %[[M1:.*]] = tsr.matmul %[[X]], %[[W1]]
// CHECK: %[[K:.*]] = tsr.add %[[M1]],
// CHECK: tsr.slice %[[W]] {limits = array<i64: 8, 24>, starts = array<i64: 0, 16>
// CHECK: %[[V:.*]] = tsr.add
// CHECK: return %[[Q]], %[[K]], %[[V]]
func.func @in_proj(%x: tensor<6x2x8xf32>, %w: tensor<8x24xf32>, %b: tensor<24xf32>) -> (tensor<6x2x8xf32>, tensor<6x2x8xf32>, tensor<6x2x8xf32>) {
  %m = tsr.matmul %x, %w : (tensor<6x2x8xf32>, tensor<8x24xf32>) -> tensor<6x2x24xf32>
  %y = tsr.add %b, %m : (tensor<24xf32>, tensor<6x2x24xf32>) -> tensor<6x2x24xf32>
  %q = tsr.slice %y {limits = array<i64: 6, 2, 8>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<6x2x24xf32> to tensor<6x2x8xf32>
  %k = tsr.slice %y {limits = array<i64: 6, 2, 16>, starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<6x2x24xf32> to tensor<6x2x8xf32>
  %v = tsr.slice %y {limits = array<i64: 6, 2, 24>, starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : tensor<6x2x24xf32> to tensor<6x2x8xf32>
  return %q, %k, %v : tensor<6x2x8xf32>, tensor<6x2x8xf32>, tensor<6x2x8xf32>
}

// Left alone: a slice of another dimension too, a strided slice, and a
// projection whose output is also used whole.
// CHECK-LABEL: func.func @slices_kept
// CHECK-COUNT-3: tsr.matmul
// CHECK-NOT: tsr.matmul
func.func @slices_kept(%x: tensor<4x5xf32>, %w: tensor<5x6xf32>) -> (tensor<2x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x6xf32>) {
  %m = tsr.matmul %x, %w : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %a = tsr.slice %m {limits = array<i64: 2, 3>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x6xf32> to tensor<2x3xf32>
  %n = tsr.matmul %x, %w : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %b = tsr.slice %n {limits = array<i64: 4, 6>, starts = array<i64: 0, 0>, steps = array<i64: 1, 2>} : tensor<4x6xf32> to tensor<4x3xf32>
  %o = tsr.matmul %x, %w : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %c = tsr.slice %o {limits = array<i64: 4, 3>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x6xf32> to tensor<4x3xf32>
  return %a, %b, %c, %o : tensor<2x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x6xf32>
}
