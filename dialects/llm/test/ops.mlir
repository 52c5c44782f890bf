// Round trip of every llm op (and its generic form).
// RUN: tessera-opt %s | tessera-opt | FileCheck %s
// RUN: tessera-opt %s -mlir-print-op-generic | tessera-opt | FileCheck %s

// CHECK-LABEL: func.func @ops
func.func @ops(%x: tensor<2x3x8xf32>, %w: tensor<8xf32>, %g: tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>) {
  // CHECK: %{{.*}}, %[[R:[a-z_0-9]+]] = llm.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.9999999999999995E-7 : f64} : (tensor<2x3x8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x1xf32>)
  %n:2 = llm.rms_norm %x, %w {epsilon = 1.0e-6 : f64} : (tensor<2x3x8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x1xf32>)
  // CHECK: llm.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}}, %[[R]] : (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x1xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>)
  %d:2 = llm.rms_norm_grad %g, %x, %w, %n#1 : (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x1xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>)
  // CHECK: llm.silu %{{.*}} : tensor<2x3x8xf32>
  %s = llm.silu %x : tensor<2x3x8xf32>
  // CHECK: llm.swiglu %{{.*}}, %{{.*}} : tensor<2x3x8xf32>
  %u = llm.swiglu %x, %g : tensor<2x3x8xf32>
  return %n#0, %d#1, %s, %u : tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>
}

// CHECK-LABEL: func.func @rotary
func.func @rotary(%q: tensor<2x4x3x8xf32>, %k: tensor<2x2x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) {
  // CHECK: %[[C:[a-z_0-9]+]], %[[S:[a-z_0-9]+]] = llm.rope_tables {interleaved = true, theta = 1.000000e+04 : f64} : tensor<3x8xf32>
  %c, %s = llm.rope_tables {theta = 10000.0 : f64, interleaved = true} : tensor<3x8xf32>
  // CHECK: llm.rope %{{.*}}, %[[C]], %[[S]] {interleaved = true, transpose = true} : tensor<2x4x3x8xf32>, tensor<3x8xf32>
  %r = llm.rope %q, %c, %s {interleaved = true, transpose = true} : tensor<2x4x3x8xf32>, tensor<3x8xf32>
  // CHECK: llm.repeat_kv %{{.*}} {repeats = 2 : i64} : tensor<2x2x3x8xf32> to tensor<2x4x3x8xf32>
  %kk = llm.repeat_kv %k {repeats = 2 : i64} : tensor<2x2x3x8xf32> to tensor<2x4x3x8xf32>
  return %r, %kk : tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x5x8xf32>, %v: tensor<2x4x5x6xf32>, %g: tensor<2x4x3x6xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x6xf32>) {
  // CHECK: %[[Y:[a-z_0-9]+]], %[[L:[a-z_0-9]+]] = llm.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x6xf32>) -> (tensor<2x4x3x6xf32>, tensor<2x4x3x1xf32>)
  %y, %l = llm.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x6xf32>) -> (tensor<2x4x3x6xf32>, tensor<2x4x3x1xf32>)
  // CHECK: llm.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[Y]], %[[L]] {scale = 2.500000e-01 : f64} : (tensor<2x4x3x6xf32>, tensor<2x4x3x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x6xf32>, tensor<2x4x3x6xf32>, tensor<2x4x3x1xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x6xf32>)
  %dq, %dk, %dv = llm.attention_grad %g, %q, %k, %v, %y, %l {scale = 0.25 : f64} : (tensor<2x4x3x6xf32>, tensor<2x4x3x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x6xf32>, tensor<2x4x3x6xf32>, tensor<2x4x3x1xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x6xf32>)
  // CHECK: llm.attention %{{.*}} {causal = true, scale = 1.000000e+00 : f64}
  %c, %cl = llm.attention %q, %q, %q {scale = 1.0 : f64, causal = true} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x4x3x1xf32>)
  return %c, %dk, %dv : tensor<2x4x3x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x6xf32>
}
