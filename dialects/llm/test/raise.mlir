// tsr-raise with the llm extension's patterns (lib/Raise.cpp) on the
// subgraphs the ONNX importer makes of PyTorch code, and on near misses
// that must stay as they are.
// RUN: tessera-opt %s -tsr-raise -split-input-file | FileCheck %s

// F.silu and the SwiGLU product: x * sigmoid(x) -> silu, silu(g) * u ->
// swiglu; the sigmoid is gone.
// CHECK-LABEL: func.func @swiglu
// CHECK-NEXT: %[[Y:.*]] = llm.swiglu %arg0, %arg1 : tensor<2x4xf32>
// CHECK-NEXT: return %[[Y]]
func.func @swiglu(%g: tensor<2x4xf32>, %u: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %s = tsr.sigmoid %g : tensor<2x4xf32>
  %silu = tsr.mul %s, %g : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = tsr.mul %silu, %u : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// x * sigmoid(y) with y != x is a gate, not a SiLU.
// CHECK-LABEL: func.func @not_silu
// CHECK: tsr.sigmoid
// CHECK-NOT: llm.
func.func @not_silu(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %s = tsr.sigmoid %y : tensor<4xf32>
  %r = tsr.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// RMSNorm as torch.onnx.export writes torch.rsqrt(x.pow(2).mean(-1,
// keepdim=True) + eps) (a division of 1 by a square root).
// CHECK-LABEL: func.func @rms_norm
// CHECK: %[[N:.*]], %{{.*}} = llm.rms_norm %arg0, %arg1 {epsilon = 9.9999997473787516E-6 : f64}
// CHECK-NEXT: return %[[N]]
func.func @rms_norm(%x: tensor<2x3x8xf32>, %w: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %two = tsr.constant dense<2.0> : tensor<f32>
  %sq = tsr.pow %x, %two : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<2x3x8xf32>
  %m = tsr.reduce_mean %sq {axes = array<i64: 2>, keepdims = true} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
  %eps = tsr.constant dense<1.0e-5> : tensor<f32>
  %a = tsr.add %m, %eps : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
  %sqrt = tsr.sqrt %a : tensor<2x3x1xf32>
  %one = tsr.constant dense<1.0> : tensor<f32>
  %r = tsr.div %one, %sqrt : (tensor<f32>, tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %n = tsr.mul %x, %r : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %y = tsr.mul %w, %n : (tensor<8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}

// -----

// The same with rsqrt and x*x; a mean over another axis is not RMSNorm.
// CHECK-LABEL: func.func @rms_norm_rsqrt
// CHECK: llm.rms_norm %arg0, %arg1 {epsilon = 5.000000e-01 : f64}
// CHECK-LABEL: func.func @mean_over_rows
// CHECK-NOT: llm.rms_norm
func.func @rms_norm_rsqrt(%x: tensor<3x4xf64>, %w: tensor<4xf64>) -> tensor<3x4xf64> {
  %sq = tsr.mul %x, %x : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>
  %m = tsr.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : (tensor<3x4xf64>) -> tensor<3x1xf64>
  %eps = tsr.constant dense<0.5> : tensor<f64>
  %a = tsr.add %eps, %m : (tensor<f64>, tensor<3x1xf64>) -> tensor<3x1xf64>
  %r = tsr.rsqrt %a : tensor<3x1xf64>
  %n = tsr.mul %r, %x : (tensor<3x1xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>
  %y = tsr.mul %n, %w : (tensor<3x4xf64>, tensor<4xf64>) -> tensor<3x4xf64>
  return %y : tensor<3x4xf64>
}
func.func @mean_over_rows(%x: tensor<4x4xf64>, %w: tensor<4xf64>) -> tensor<4x4xf64> {
  %sq = tsr.mul %x, %x : (tensor<4x4xf64>, tensor<4x4xf64>) -> tensor<4x4xf64>
  %m = tsr.reduce_mean %sq {axes = array<i64: 0>, keepdims = true} : (tensor<4x4xf64>) -> tensor<1x4xf64>
  %eps = tsr.constant dense<0.5> : tensor<f64>
  %a = tsr.add %eps, %m : (tensor<f64>, tensor<1x4xf64>) -> tensor<1x4xf64>
  %r = tsr.rsqrt %a : tensor<1x4xf64>
  %n = tsr.mul %r, %x : (tensor<1x4xf64>, tensor<4x4xf64>) -> tensor<4x4xf64>
  %y = tsr.mul %n, %w : (tensor<4x4xf64>, tensor<4xf64>) -> tensor<4x4xf64>
  return %y : tensor<4x4xf64>
}

// -----

// rotate_half RoPE: q * cos + cat(-q[.., 2:], q[.., :2]) * sin with [t, d]
// tables, and with [1, t, d] tables (reshaped to [t, d]).
// CHECK-LABEL: func.func @rope
// CHECK: %[[Y:.*]] = llm.rope %arg0, %arg1, %arg2 : tensor<2x3x4xf32>, tensor<3x4xf32>
// CHECK-NEXT: return %[[Y]]
func.func @rope(%q: tensor<2x3x4xf32>, %cos: tensor<3x4xf32>, %sin: tensor<3x4xf32>) -> tensor<2x3x4xf32> {
  %a = tsr.mul %q, %cos : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %lo = tsr.slice %q {limits = array<i64: 2, 3, 2>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x3x4xf32> to tensor<2x3x2xf32>
  %hi = tsr.slice %q {limits = array<i64: 2, 3, 4>, starts = array<i64: 0, 0, 2>, steps = array<i64: 1, 1, 1>} : tensor<2x3x4xf32> to tensor<2x3x2xf32>
  %n = tsr.neg %hi : tensor<2x3x2xf32>
  %rot = tsr.concat %n, %lo {axis = 2 : i64} : (tensor<2x3x2xf32>, tensor<2x3x2xf32>) -> tensor<2x3x4xf32>
  %b = tsr.mul %rot, %sin : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %y = tsr.add %a, %b : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}
// CHECK-LABEL: func.func @rope_leading_ones
// CHECK-DAG: %[[C:.*]] = tsr.reshape %arg1 : tensor<1x3x4xf32> to tensor<3x4xf32>
// CHECK-DAG: %[[S:.*]] = tsr.reshape %arg2 : tensor<1x3x4xf32> to tensor<3x4xf32>
// CHECK: llm.rope %arg0, %[[C]], %[[S]]
func.func @rope_leading_ones(%q: tensor<2x3x4xf32>, %cos: tensor<1x3x4xf32>, %sin: tensor<1x3x4xf32>) -> tensor<2x3x4xf32> {
  %a = tsr.mul %cos, %q : (tensor<1x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %lo = tsr.slice %q {limits = array<i64: 2, 3, 2>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x3x4xf32> to tensor<2x3x2xf32>
  %hi = tsr.slice %q {limits = array<i64: 2, 3, 4>, starts = array<i64: 0, 0, 2>, steps = array<i64: 1, 1, 1>} : tensor<2x3x4xf32> to tensor<2x3x2xf32>
  %n = tsr.neg %hi : tensor<2x3x2xf32>
  %rot = tsr.concat %n, %lo {axis = 2 : i64} : (tensor<2x3x2xf32>, tensor<2x3x2xf32>) -> tensor<2x3x4xf32>
  %b = tsr.mul %sin, %rot : (tensor<1x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %y = tsr.add %b, %a : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

// The halves swapped the wrong way round (cat(x1, -x2)) is not rotate_half.
// CHECK-LABEL: func.func @not_rope
// CHECK-NOT: llm.rope
func.func @not_rope(%q: tensor<3x4xf32>, %cos: tensor<3x4xf32>, %sin: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %a = tsr.mul %q, %cos : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %lo = tsr.slice %q {limits = array<i64: 3, 2>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<3x4xf32> to tensor<3x2xf32>
  %hi = tsr.slice %q {limits = array<i64: 3, 4>, starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : tensor<3x4xf32> to tensor<3x2xf32>
  %n = tsr.neg %hi : tensor<3x2xf32>
  %rot = tsr.concat %lo, %n {axis = 1 : i64} : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %b = tsr.mul %rot, %sin : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %y = tsr.add %a, %b : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

// repeat_kv: x[:, :, None].expand(b, h, n, t, d).reshape(b, h * n, t, d).
// CHECK-LABEL: func.func @repeat_kv
// CHECK-NEXT: %[[Y:.*]] = llm.repeat_kv %arg0 {repeats = 3 : i64} : tensor<2x2x5x4xf32> to tensor<2x6x5x4xf32>
// CHECK-NEXT: return %[[Y]]
func.func @repeat_kv(%k: tensor<2x2x5x4xf32>) -> tensor<2x6x5x4xf32> {
  %a = tsr.reshape %k : tensor<2x2x5x4xf32> to tensor<2x2x1x5x4xf32>
  %b = tsr.broadcast_to %a : tensor<2x2x1x5x4xf32> to tensor<2x2x3x5x4xf32>
  %c = tsr.reshape %b : tensor<2x2x3x5x4xf32> to tensor<2x6x5x4xf32>
  return %c : tensor<2x6x5x4xf32>
}

// -----

// nanoGPT's attention as exported: k^T by one transpose of the heads'
// split ([b, t, h, d] -> [b, h, d, t]), a constant factor, masked_fill of
// the causal buffer (true above the diagonal) with -inf, softmax, @ v.
// The transpose that made k^T becomes k's ([b, h, t, d]).
// CHECK-LABEL: func.func @gpt_attention
// CHECK: %[[K:.*]] = tsr.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x3x2x4xf32> to tensor<1x2x3x4xf32>
// CHECK-NEXT: %[[Y:.*]], %{{.*}} = llm.attention %arg0, %[[K]], %arg2 {causal = true, scale = 5.000000e-01 : f64}
// CHECK-NEXT: return %[[Y]]
func.func @gpt_attention(%q: tensor<1x2x3x4xf32>, %kr: tensor<1x3x2x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %mask = tsr.constant dense<[[false, true, true], [false, false, true], [false, false, false]]> : tensor<3x3xi1>
  %ninf = tsr.constant dense<0xFF800000> : tensor<f32>
  %c = tsr.constant dense<0.5> : tensor<f32>
  %kt = tsr.transpose %kr {perm = array<i64: 0, 2, 3, 1>} : tensor<1x3x2x4xf32> to tensor<1x2x4x3xf32>
  %s = tsr.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %x = tsr.mul %s, %c : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %m = tsr.where %mask, %ninf, %x : (tensor<3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = tsr.softmax %m {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %y = tsr.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}

// -----

// The Llama's: k.transpose(2, 3) (k itself), a division by sqrt(d), an
// additive triu(-inf, diagonal=1) mask.
// CHECK-LABEL: func.func @llama_attention
// CHECK-NEXT: %[[Y:.*]], %{{.*}} = llm.attention %arg0, %arg1, %arg2 {causal = true, scale = 5.000000e-01 : f64}
// CHECK-NEXT: return %[[Y]]
func.func @llama_attention(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %mask = tsr.constant dense<[[0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
  %c = tsr.constant dense<2.0> : tensor<f32>
  %kt = tsr.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x3x4xf32> to tensor<1x2x4x3xf32>
  %s = tsr.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %x = tsr.div %s, %c : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %m = tsr.add %x, %mask : (tensor<1x2x3x3xf32>, tensor<3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = tsr.softmax %m {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %y = tsr.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}

// -----

// where(tril, s, -inf) with a [1, 1, t, t] mask, Hugging Face's
// finfo(float32).min as the additive mask's minus infinity, and no mask
// (an encoder's full attention: not causal, no scale). k^T that is not a
// transpose gets one.
// CHECK-LABEL: func.func @other_masks
// CHECK: llm.attention %arg0, %arg1, %arg2 {causal = true, scale = 1.000000e+00 : f64}
// CHECK: llm.attention %arg0, %arg1, %arg2 {causal = true, scale = 2.500000e-01 : f64}
// CHECK: %[[K:.*]] = tsr.transpose %arg3 {perm = array<i64: 0, 1, 3, 2>}
// CHECK-NEXT: llm.attention %arg0, %[[K]], %arg2 {scale = 1.000000e+00 : f64}
// CHECK-NOT: tsr.softmax
func.func @other_masks(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %kt2: tensor<1x2x4x3xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) {
  %tril = tsr.constant dense<[[[[true, false, false], [true, true, false], [true, true, true]]]]> : tensor<1x1x3x3xi1>
  %ninf = tsr.constant dense<0xFF800000> : tensor<f32>
  %kt = tsr.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x3x4xf32> to tensor<1x2x4x3xf32>
  %s = tsr.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %m = tsr.where %tril, %s, %ninf : (tensor<1x1x3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %p = tsr.softmax %m {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %y = tsr.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>

  %fmin = tsr.constant dense<[[0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
  %c = tsr.constant dense<0.25> : tensor<f32>
  %s2 = tsr.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %x2 = tsr.mul %c, %s2 : (tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %m2 = tsr.add %fmin, %x2 : (tensor<3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p2 = tsr.softmax %m2 {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %y2 = tsr.matmul %p2, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>

  %s3 = tsr.matmul %q, %kt2 : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %p3 = tsr.softmax %s3 {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %y3 = tsr.matmul %p3, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %y, %y2, %y3 : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
}

// -----

// Near misses stay as they are: a mask that also hides the diagonal, an
// additive -1e9 (not minus infinity: the scores still count), a mask that
// is an argument, softmax over another axis, probabilities used twice
// (returned as attention weights).
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: llm.attention
func.func @not_attention(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>, %am: tensor<3x3xi1>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x3xf32>) {
  %ninf = tsr.constant dense<0xFF800000> : tensor<f32>
  %s = tsr.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %diag = tsr.constant dense<[[true, true, true], [false, true, true], [false, false, true]]> : tensor<3x3xi1>
  %m1 = tsr.where %diag, %ninf, %s : (tensor<3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p1 = tsr.softmax %m1 {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %y1 = tsr.matmul %p1, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %big = tsr.constant dense<[[0.0, -1.0e9, -1.0e9], [0.0, 0.0, -1.0e9], [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
  %m2 = tsr.add %s, %big : (tensor<1x2x3x3xf32>, tensor<3x3xf32>) -> tensor<1x2x3x3xf32>
  %p2 = tsr.softmax %m2 {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %y2 = tsr.matmul %p2, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %m3 = tsr.where %am, %ninf, %s : (tensor<3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p3 = tsr.softmax %m3 {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %y3 = tsr.matmul %p3, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %p4 = tsr.softmax %s {axis = 2 : i64} : tensor<1x2x3x3xf32>
  %y4 = tsr.matmul %p4, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %p5 = tsr.softmax %s {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %y5 = tsr.matmul %p5, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %y1, %y2, %y3, %y4, %y5, %p5 : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x3xf32>
}

// -----

// A triu mask with fewer queries than keys is not a causal op's (t = s):
// the last query would see keys past the diagonal.
// CHECK-LABEL: func.func @not_square
// CHECK-NOT: llm.attention
func.func @not_square(%q: tensor<2x4xf32>, %kt: tensor<4x3xf32>, %v: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %mask = tsr.constant dense<[[false, true, true], [false, false, true]]> : tensor<2x3xi1>
  %ninf = tsr.constant dense<0xFF800000> : tensor<f32>
  %s = tsr.matmul %q, %kt : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %m = tsr.where %mask, %ninf, %s : (tensor<2x3xi1>, tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %p = tsr.softmax %m {axis = 1 : i64} : tensor<2x3xf32>
  %y = tsr.matmul %p, %v : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
