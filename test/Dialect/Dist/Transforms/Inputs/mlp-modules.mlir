// An MLP step as PyTorch names it: modules fc1, fc2, head and functional
// relus (plan-pp-modules.mlir).
func.func @train_step_sgd(%w1: tensor<8x16xf32> {tsr.param = "fc1.weight"}, %w2: tensor<16x16xf32> {tsr.param = "fc2.weight"},
                          %w3: tensor<16x8xf32> {tsr.param = "head.weight"},
                          %x: tensor<4x8xf32> {tsr.input = "x"}, %t: tensor<4xi64> {tsr.input = "y"},
                          %lr: tensor<f32> {tsr.hyper = "lr"}, %wd: tensor<f32> {tsr.hyper = "weight_decay"},
                          %step: tensor<i64> {tsr.step})
    -> (tensor<f32> {tsr.loss}, tensor<8x16xf32> {tsr.param = "fc1.weight"}, tensor<16x16xf32> {tsr.param = "fc2.weight"}, tensor<16x8xf32> {tsr.param = "head.weight"})
    attributes {tsr.train_step = "sgd"} {
  %h1 = tsr.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("/fc1/MatMul")
  %a1 = tsr.relu %h1 : tensor<4x16xf32> loc("/Relu")
  %h2 = tsr.matmul %a1, %w2 : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32> loc("/fc2/MatMul")
  %a2 = tsr.relu %h2 : tensor<4x16xf32> loc("/Relu_1")
  %y = tsr.matmul %a2, %w3 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("/head/MatMul")
  %loss = tsr.softmax_cross_entropy sum %y, %t : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32> loc("/SoftmaxCrossEntropyLoss")
  %n1 = tsr.sgd_update %w1, %w1 lr %lr weight_decay %wd {tsr.update} : tensor<8x16xf32>
  %n2 = tsr.sgd_update %w2, %w2 lr %lr weight_decay %wd {tsr.update} : tensor<16x16xf32>
  %n3 = tsr.sgd_update %w3, %w3 lr %lr weight_decay %wd {tsr.update} : tensor<16x8xf32>
  return %loss, %n1, %n2, %n3 : tensor<f32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>
}
