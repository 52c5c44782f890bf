// tsr-unmerge-dims carries nn.MultiheadAttention's heads (merged into the
// batch: [T, B, H*D] -> [T, B*H, D]) through llm.attention, an op of
// another dialect defined per index of its shared leading dimensions (its
// annotation is `*` then two dimensions in every operand and result), so
// that tp can split the heads of the raised attention. The results are the
// same bits (tessera-interp on both). The lse result is unused and carries
// the dimension too.
// RUN: tessera-opt %s -tsr-unmerge-dims | FileCheck %s
// RUN: tessera-opt %s -tsr-unmerge-dims -o %t.mlir
// RUN: %python -c "import sys; sys.path.insert(0, '%tessera_src/examples/gpt'); import numpy as np; from safetensors_io import save_file; r = np.random.default_rng(0); save_file({'q': r.standard_normal((5, 2, 6), np.float32), 'k': r.standard_normal((5, 2, 6), np.float32), 'v': r.standard_normal((5, 2, 6), np.float32)}, '%t.in.safetensors')"
// RUN: tessera-interp %s --func attention --inputs %t.in.safetensors --outputs %t.before.safetensors > /dev/null
// RUN: tessera-interp %t.mlir --func attention --inputs %t.in.safetensors --outputs %t.after.safetensors > /dev/null
// RUN: cmp %t.before.safetensors %t.after.safetensors

// CHECK-LABEL: func.func @attention
// CHECK: %[[Y:.*]], %{{.*}} = llm.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 5.000000e-01 : f64} : (tensor<2x2x5x3xf32>, tensor<2x2x5x3xf32>, tensor<2x2x5x3xf32>) -> (tensor<2x2x5x3xf32>, tensor<2x2x5x1xf32>)
// CHECK: %[[T:.*]] = tsr.transpose %[[Y]] {perm = array<i64: 2, 0, 1, 3>} : tensor<2x2x5x3xf32> to tensor<5x2x2x3xf32>
// CHECK: tsr.reshape %[[T]] : tensor<5x2x2x3xf32> to tensor<10x6xf32>
// CHECK-NOT: tensor<4x5x3xf32>
func.func @attention(%q: tensor<5x2x6xf32> {tsr.input = "q"}, %k: tensor<5x2x6xf32> {tsr.input = "k"},
                     %v: tensor<5x2x6xf32> {tsr.input = "v"}) -> tensor<10x6xf32> {
  %q1 = tsr.reshape %q : tensor<5x2x6xf32> to tensor<5x4x3xf32>
  %q2 = tsr.transpose %q1 {perm = array<i64: 1, 0, 2>} : tensor<5x4x3xf32> to tensor<4x5x3xf32>
  %k1 = tsr.reshape %k : tensor<5x2x6xf32> to tensor<5x4x3xf32>
  %k2 = tsr.transpose %k1 {perm = array<i64: 1, 0, 2>} : tensor<5x4x3xf32> to tensor<4x5x3xf32>
  %v1 = tsr.reshape %v : tensor<5x2x6xf32> to tensor<5x4x3xf32>
  %v2 = tsr.transpose %v1 {perm = array<i64: 1, 0, 2>} : tensor<5x4x3xf32> to tensor<4x5x3xf32>
  %y, %lse = llm.attention %q2, %k2, %v2 {scale = 0.5 : f64, causal = true} : (tensor<4x5x3xf32>, tensor<4x5x3xf32>, tensor<4x5x3xf32>) -> (tensor<4x5x3xf32>, tensor<4x5x1xf32>)
  %y1 = tsr.transpose %y {perm = array<i64: 1, 0, 2>} : tensor<4x5x3xf32> to tensor<5x4x3xf32>
  %y2 = tsr.reshape %y1 : tensor<5x4x3xf32> to tensor<10x6xf32>
  return %y2 : tensor<10x6xf32>
}
