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
