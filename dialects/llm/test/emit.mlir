// llm ops lower through the dialect's own ConvertToEmitCPatternInterface
// to the calls their records name, with the extension's header included.
// RUN: tessera-opt %s -convert-tsr-to-emitc | mlir-translate --mlir-to-cpp | FileCheck %s

// CHECK: #include "tessera/runtime/Runtime.h"
// CHECK-NEXT: #include "tessera/llm/Runtime.h"
// CHECK: // norm: llm.rms_norm
// CHECK-NEXT: std::tuple<tessera::rt::Tensor, tessera::rt::Tensor> [[T:v[0-9]+]] = tessera::rt::llm::rms_norm({{v[0-9]+}}, {{v[0-9]+}}, 9.99999999{{[0-9]*}}e-07);
// CHECK: tessera::rt::Tensor [[Y:v[0-9]+]] = std::get<0>([[T]]);
// CHECK: // mlp: llm.swiglu
// CHECK-NEXT: tessera::rt::Tensor {{v[0-9]+}} = tessera::rt::llm::swiglu([[Y]], {{v[0-9]+}});
// CHECK: tessera::rt::llm::silu(
func.func @block(%x: tensor<2x8xf32>, %w: tensor<8xf32>, %u: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %n:2 = llm.rms_norm %x, %w {epsilon = 1.0e-6 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>) loc("norm")
  %s = llm.swiglu %n#0, %u : tensor<2x8xf32> loc("mlp")
  %t = llm.silu %s : tensor<2x8xf32>
  return %t : tensor<2x8xf32>
}

// RoPE: the tables' call returns both (a tuple), rope passes its two flags,
// repeat_kv its repeat count.
// CHECK-LABEL: void attention(
// CHECK: std::tuple<tessera::rt::Tensor, tessera::rt::Tensor> [[TB:v[0-9]+]] = tessera::rt::llm::rope_tables(1.0{{0*}}e+04, false, tessera::rt::Shape{3, 8}, tessera::rt::DType::f32);
// CHECK: tessera::rt::Tensor [[COS:v[0-9]+]] = std::get<0>([[TB]]);
// CHECK: tessera::rt::Tensor [[SIN:v[0-9]+]] = std::get<1>([[TB]]);
// CHECK: // rope: llm.rope
// CHECK-NEXT: tessera::rt::Tensor [[R:v[0-9]+]] = tessera::rt::llm::rope({{v[0-9]+}}, [[COS]], [[SIN]], true, false);
// CHECK: tessera::rt::Tensor {{v[0-9]+}} = tessera::rt::llm::repeat_kv([[R]], 2);
func.func @attention(%k: tensor<2x2x3x8xf32>) -> tensor<2x4x3x8xf32> {
  %c, %s = llm.rope_tables {theta = 10000.0 : f64, interleaved = false} : tensor<3x8xf32>
  %r = llm.rope %k, %c, %s {interleaved = true, transpose = false} : tensor<2x2x3x8xf32>, tensor<3x8xf32> loc("rope")
  %y = llm.repeat_kv %r {repeats = 2 : i64} : tensor<2x2x3x8xf32> to tensor<2x4x3x8xf32>
  return %y : tensor<2x4x3x8xf32>
}


// Attention: both results of one call, the scale and the causal flag.
// CHECK-LABEL: void fused(
// CHECK: std::tuple<tessera::rt::Tensor, tessera::rt::Tensor> [[A:v[0-9]+]] = tessera::rt::llm::attention({{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, 2.5{{0*}}e-01, true);
// CHECK: std::tuple<tessera::rt::Tensor, tessera::rt::Tensor, tessera::rt::Tensor> {{v[0-9]+}} = tessera::rt::llm::attention_grad({{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, 2.5{{0*}}e-01, true);
func.func @fused(%q: tensor<2x3x8xf32>, %g: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %y, %l = llm.attention %q, %q, %q {scale = 0.25 : f64, causal = true} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x1xf32>)
  %dq, %dk, %dv = llm.attention_grad %g, %q, %q, %q, %y, %l {scale = 0.25 : f64, causal = true} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>)
  return %dq : tensor<2x3x8xf32>
}
