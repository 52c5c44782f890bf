// The importer's module attributes reach the Program table: tsr.inputs (the
// model's data inputs in graph order; a token file feeds the first two)
// and tsr.state_dict (what --save writes: "head" is tied to "w", "mask" is
// a buffer read back from the weights file).
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=sgd -inline -symbol-dce -canonicalize -convert-tsr-to-emitc=model-name=tiny.onnx | mlir-translate --mlir-to-cpp | FileCheck %s

// CHECK: /*ranks=*/{0}, /*worldSize=*/1,
// CHECK-NEXT: /*constants=*/"",
// CHECK-NEXT: /*inputs=*/{"x", "t"},
// CHECK-NEXT: /*stateDict=*/{
// CHECK-NEXT: {"w", "w"},
// CHECK-NEXT: {"mask", "mask"},
// CHECK-NEXT: {"head", "w"}},
// CHECK-NEXT: /*plan=*/"one device",
// CHECK-NEXT: };

module attributes {tsr.inputs = ["x", "t"], tsr.state_dict = [["w", "w"], ["mask", "mask"], ["head", "w"]]} {
  func.func private @model(%w: tensor<8x4xf32> {tsr.param = "w"}, %x: tensor<2x8xf32> {tsr.input = "x"},
                   %t: tensor<2xi64> {tsr.input = "t"}) -> (tensor<f32> {tsr.loss}) {
    %0 = tsr.matmul %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
    %1 = tsr.softmax_cross_entropy mean %0, %t : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}
