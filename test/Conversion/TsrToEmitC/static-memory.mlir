// With a static memory plan (dist-static-memory's attributes), the step
// makes one rt::StaticMemory of the arena's size after taking its
// arguments, and places each op's allocations at its slots: an op without
// slots right after one with slots clears them (the returned add), and
// further ops without slots say nothing.
// RUN: tessera-opt %s -convert-tsr-to-emitc | mlir-translate --mlir-to-cpp | FileCheck %s

// CHECK: [[ARGS:v[0-9]+]].clear();
// CHECK-NEXT: // The static memory plan: {{.*}}
// CHECK-NEXT: tessera::rt::StaticMemory memory(3072);
// CHECK: tsr.relu
// CHECK-NEXT: memory.place({{[{][{]}}0, 1024}});
// CHECK-NEXT: tessera::rt::Tensor [[A:v[0-9]+]] = tessera::rt::relu(
// CHECK: tsr.layer_norm
// CHECK-NEXT: memory.place({{[{][{]}}1024, 1024}, {2048, 16}, {2304, 16}});
// CHECK-NEXT: = tessera::rt::layer_norm(
// CHECK: tsr.add
// CHECK-NEXT: memory.place({});
// CHECK-NEXT: tessera::rt::add(
// CHECK: tsr.relu
// CHECK-NEXT: tessera::rt::Tensor {{v[0-9]+}} = tessera::rt::relu(
func.func @step(%x: tensor<4x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) attributes {dist.arena_bytes = 3072 : i64} {
  %a = tsr.relu %x {dist.arena = array<i64: 0, 1024>} : tensor<4x64xf32>
  %y:3 = tsr.layer_norm %a, %w, %b {axis = 1 : i64, epsilon = 1.0e-5 : f64, dist.arena = array<i64: 1024, 1024, 2048, 16, 2304, 16>} : (tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<4x64xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  %s = tsr.add %y#0, %a : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  %r = tsr.relu %s : tensor<4x64xf32>
  return %s, %r : tensor<4x64xf32>, tensor<4x64xf32>
}
