// A piece of optimizer state (dist.shard) becomes a ValueSpec with the
// whole's shape and each rank's offset, from the module's mesh; a shard
// without a mesh, or naming an axis the mesh lacks, is an error.
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=adamw -inline -symbol-dce -canonicalize | sed -e 's|^module attributes {|module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 2]>, |' -e 's|{tsr.state = "adamw.m/w"}|{dist.shard = [["tp"], ["dp"]], tsr.state = "adamw.m/w"}|' > %t.mlir
// RUN: tessera-opt %t.mlir -convert-tsr-to-emitc | mlir-translate --mlir-to-cpp | FileCheck %s
// CHECK: {tessera::rt::Role::State, "adamw.m/w", tessera::rt::DType::f32, {8, 4}, /*bound=*/0, /*defaultValue=*/0, /*global=*/{16, 8}, /*offsets=*/{{[{]}}{0, 0}}},
// CHECK: {tessera::rt::Role::State, "adamw.v/w", tessera::rt::DType::f32, {8, 4}},
// RUN: sed -e 's|"tp"|"pp"|' %t.mlir | not tessera-opt -convert-tsr-to-emitc 2>&1 | FileCheck %s --check-prefix=AXIS
// AXIS: error: convert-tsr-to-emitc: dist.shard of argument 1 names 'pp', which is not an axis of the mesh
// RUN: sed -e 's|dist.mesh = #dist.mesh<\[dp = 2, tp = 2\]>, ||' %t.mlir | not tessera-opt -convert-tsr-to-emitc 2>&1 | FileCheck %s --check-prefix=MESH
// MESH: error: convert-tsr-to-emitc: argument 1 has dist.shard but the module has no dist.mesh

func.func private @model(%w: tensor<8x4xf32> {tsr.param = "w"}, %x: tensor<2x8xf32> {tsr.input = "x"},
                 %t: tensor<2xi64> {tsr.input = "t"}) -> (tensor<f32> {tsr.loss}) {
  %0 = tsr.matmul %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %1 = tsr.softmax_cross_entropy mean %0, %t : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}
