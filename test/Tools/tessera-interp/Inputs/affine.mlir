func.func @forward(%w: tensor<3x2xf32> {tsr.param = "w"}, %x: tensor<4x3xf32> {tsr.input = "x"},
                   %t: tensor<4xi64> {tsr.input = "t"})
    -> (tensor<4x2xf32> {tsr.output = "y"}, tensor<f32> {tsr.loss}) {
  %y = tsr.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %l = tsr.softmax_cross_entropy mean %y, %t : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<f32>
  return %y, %l : tensor<4x2xf32>, tensor<f32>
}
