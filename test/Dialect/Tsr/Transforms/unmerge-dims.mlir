// tsr-unmerge-dims: nn.MultiheadAttention's heads, merged into the batch
// ([T, B, H*D] -> [T, B*H, D]), get a dimension of their own ([T, B, H, D])
// that the attention ops carry (transposes, batched matmuls, a broadcast
// mask, softmax) until the final reshape merges it away. The results are
// the same bits (tessera-interp on both).
// RUN: tessera-opt %s -tsr-unmerge-dims | FileCheck %s
// RUN: tessera-opt %s -tsr-unmerge-dims -o %t.mlir
// RUN: %python -c "import sys; sys.path.insert(0, '%tessera_src/examples/gpt'); import numpy as np; from safetensors_io import save_file; r = np.random.default_rng(0); save_file({'q': r.standard_normal((5, 2, 6), np.float32), 'k': r.standard_normal((5, 2, 6), np.float32), 'v': r.standard_normal((5, 2, 6), np.float32), 'mask': r.standard_normal((1, 5, 5), np.float32)}, '%t.in.safetensors')"
// RUN: tessera-interp %s --func attention --inputs %t.in.safetensors --outputs %t.before.safetensors > /dev/null
// RUN: tessera-interp %t.mlir --func attention --inputs %t.in.safetensors --outputs %t.after.safetensors > /dev/null
// RUN: cmp %t.before.safetensors %t.after.safetensors

// CHECK-LABEL: func.func @attention
// CHECK: %[[Q:.*]] = tsr.reshape %{{.*}} : tensor<5x2x6xf32> to tensor<5x2x2x3xf32>
// CHECK: %[[QT:.*]] = tsr.transpose %[[Q]] {perm = array<i64: 1, 2, 0, 3>} : tensor<5x2x2x3xf32> to tensor<2x2x5x3xf32>
// CHECK: %[[QS:.*]] = tsr.div %[[QT]], %{{.*}} : (tensor<2x2x5x3xf32>, tensor<f32>) -> tensor<2x2x5x3xf32>
// CHECK: %[[K:.*]] = tsr.reshape %{{.*}} : tensor<5x2x6xf32> to tensor<5x2x2x3xf32>
// CHECK: %[[KT:.*]] = tsr.transpose %[[K]] {perm = array<i64: 1, 2, 3, 0>} : tensor<5x2x2x3xf32> to tensor<2x2x3x5xf32>
// CHECK: %[[S:.*]] = tsr.matmul %[[QS]], %[[KT]] : (tensor<2x2x5x3xf32>, tensor<2x2x3x5xf32>) -> tensor<2x2x5x5xf32>
// CHECK: %[[M:.*]] = tsr.reshape %{{.*}} : tensor<1x5x5xf32> to tensor<1x1x5x5xf32>
// CHECK: %[[A:.*]] = tsr.add %[[S]], %[[M]] : (tensor<2x2x5x5xf32>, tensor<1x1x5x5xf32>) -> tensor<2x2x5x5xf32>
// CHECK: %[[P:.*]] = tsr.softmax %[[A]] {axis = 3 : i64} : tensor<2x2x5x5xf32>
// CHECK: %[[V:.*]] = tsr.reshape %{{.*}} : tensor<5x2x6xf32> to tensor<5x2x2x3xf32>
// CHECK: %[[VT:.*]] = tsr.transpose %[[V]] {perm = array<i64: 1, 2, 0, 3>}
// CHECK: %[[O:.*]] = tsr.matmul %[[P]], %[[VT]] : (tensor<2x2x5x5xf32>, tensor<2x2x5x3xf32>) -> tensor<2x2x5x3xf32>
// CHECK: %[[OT:.*]] = tsr.transpose %[[O]] {perm = array<i64: 2, 0, 1, 3>} : tensor<2x2x5x3xf32> to tensor<5x2x2x3xf32>
// CHECK: %[[Y:.*]] = tsr.reshape %[[OT]] : tensor<5x2x2x3xf32> to tensor<10x6xf32>
// A softmax over the merged dimension keeps the merged shape.
// CHECK: %[[B:.*]] = tsr.reshape %[[P]] : tensor<2x2x5x5xf32> to tensor<4x5x5xf32>
// CHECK: tsr.softmax %[[B]] {axis = 0 : i64} : tensor<4x5x5xf32>
// CHECK-NOT: tensor<5x4x3xf32>
func.func @attention(%q: tensor<5x2x6xf32> {tsr.input = "q"}, %k: tensor<5x2x6xf32> {tsr.input = "k"},
                     %v: tensor<5x2x6xf32> {tsr.input = "v"}, %mask: tensor<1x5x5xf32> {tsr.input = "mask"})
    -> (tensor<10x6xf32>, tensor<4x5x5xf32>) {
  %q1 = tsr.reshape %q : tensor<5x2x6xf32> to tensor<5x4x3xf32>
  %q2 = tsr.transpose %q1 {perm = array<i64: 1, 0, 2>} : tensor<5x4x3xf32> to tensor<4x5x3xf32>
  %c = tsr.constant dense<1.5> : tensor<f32>
  %q3 = tsr.div %q2, %c : (tensor<4x5x3xf32>, tensor<f32>) -> tensor<4x5x3xf32>
  %k1 = tsr.reshape %k : tensor<5x2x6xf32> to tensor<5x4x3xf32>
  %k2 = tsr.transpose %k1 {perm = array<i64: 1, 2, 0>} : tensor<5x4x3xf32> to tensor<4x3x5xf32>
  %s = tsr.matmul %q3, %k2 : (tensor<4x5x3xf32>, tensor<4x3x5xf32>) -> tensor<4x5x5xf32>
  %a = tsr.add %s, %mask : (tensor<4x5x5xf32>, tensor<1x5x5xf32>) -> tensor<4x5x5xf32>
  %p = tsr.softmax %a {axis = 2 : i64} : tensor<4x5x5xf32>
  %v1 = tsr.reshape %v : tensor<5x2x6xf32> to tensor<5x4x3xf32>
  %v2 = tsr.transpose %v1 {perm = array<i64: 1, 0, 2>} : tensor<5x4x3xf32> to tensor<4x5x3xf32>
  %o = tsr.matmul %p, %v2 : (tensor<4x5x5xf32>, tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
  %o1 = tsr.transpose %o {perm = array<i64: 1, 0, 2>} : tensor<4x5x3xf32> to tensor<5x4x3xf32>
  %y = tsr.reshape %o1 : tensor<5x4x3xf32> to tensor<10x6xf32>
  %z = tsr.softmax %p {axis = 0 : i64} : tensor<4x5x5xf32>
  return %y, %z : tensor<10x6xf32>, tensor<4x5x5xf32>
}

// A reshape that merges nothing across dimensions is left alone (GPT's
// heads: [B, T, H*D] -> [B, T, H, D]).
// CHECK-LABEL: func.func @gpt_heads
// CHECK: tsr.reshape %{{.*}} : tensor<2x5x6xf32> to tensor<2x5x2x3xf32>
// CHECK-NEXT: return
func.func @gpt_heads(%x: tensor<2x5x6xf32>) -> tensor<2x5x2x3xf32> {
  %r = tsr.reshape %x : tensor<2x5x6xf32> to tensor<2x5x2x3xf32>
  return %r : tensor<2x5x2x3xf32>
}
