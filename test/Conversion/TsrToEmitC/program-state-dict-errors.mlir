// tsr.state_dict entries that are not [name, initializer] string pairs
// (the importer writes only pairs; a hand-written module may not).
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=sgd -inline -symbol-dce -canonicalize -convert-tsr-to-emitc -verify-diagnostics

// expected-error @+1 {{convert-tsr-to-emitc: tsr.state_dict entries must be [name, initializer] string pairs}}
module attributes {tsr.state_dict = [["w"]]} {
  func.func private @model(%w: tensor<8x4xf32> {tsr.param = "w"}, %x: tensor<2x8xf32> {tsr.input = "x"},
                   %t: tensor<2xi64> {tsr.input = "t"}) -> (tensor<f32> {tsr.loss}) {
    %0 = tsr.matmul %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
    %1 = tsr.softmax_cross_entropy mean %0, %t : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}
