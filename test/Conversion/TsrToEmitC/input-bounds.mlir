// Integer inputs get the bound of the values the ops that index with them
// accept (ValueSpec::bound), through ops that only move values; the
// smallest bound wins, and an input nothing indexes with gets none.
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=sgd -inline -symbol-dce -canonicalize -convert-tsr-to-emitc=model-name=m.onnx | mlir-translate --mlir-to-cpp | FileCheck %s

// CHECK: {"sgd",
// CHECK-NEXT: {
// CHECK-NEXT: {tessera::rt::Role::Param, "table", tessera::rt::DType::f32, {10, 3}},
// CHECK-NEXT: {tessera::rt::Role::Input, "idx", tessera::rt::DType::i64, {2, 2}, /*bound=*/10},
// CHECK-NEXT: {tessera::rt::Role::Input, "targets", tessera::rt::DType::i64, {4}, /*bound=*/3},
// CHECK-NEXT: {tessera::rt::Role::Input, "unused", tessera::rt::DType::i64, {4}},

func.func private @model(%table: tensor<10x3xf32> {tsr.param = "table"},
                         %idx: tensor<2x2xi64> {tsr.input = "idx"},
                         %targets: tensor<4xi64> {tsr.input = "targets"},
                         %unused: tensor<4xi64> {tsr.input = "unused"})
    -> (tensor<f32> {tsr.loss}) {
  %flat = tsr.reshape %idx : tensor<2x2xi64> to tensor<4xi64>
  %rows = tsr.gather %table[%flat] : (tensor<10x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
  %loss = tsr.softmax_cross_entropy mean %rows, %targets : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
