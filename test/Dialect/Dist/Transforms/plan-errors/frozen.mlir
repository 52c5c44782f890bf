// A plan file may not split a dimension the annotation marks '^' (frozen):
// the error names the op (its location is the ONNX node name) and the entry.
// RUN: tessera-opt %s -dist-plan="plan=%S/../Inputs/frozen.json devices=2" -verify-diagnostics

// expected-error @unknown {{dist-plan: plan entry trans[0] cannot split '/probs' (d0 d1^ -> d0 d1^): dimension 'd1' is marked '^' and cannot be split}}
func.func @train_step_sgd(%w1: tensor<8x16xf32> {tsr.param = "w1"}, %w2: tensor<16x8xf32> {tsr.param = "w2"},
                          %x: tensor<4x8xf32> {tsr.input = "x"}, %t: tensor<4xi64> {tsr.input = "t"},
                          %lr: tensor<f32> {tsr.hyper = "lr"}, %wd: tensor<f32> {tsr.hyper = "weight_decay"},
                          %step: tensor<i64> {tsr.step})
    -> (tensor<f32> {tsr.loss}, tensor<8x16xf32> {tsr.param = "w1"}, tensor<16x8xf32> {tsr.param = "w2"})
    attributes {tsr.train_step = "sgd"} {
  %h = tsr.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("/l.0/fc/MatMul")
  %g = tsr.relu %h : tensor<4x16xf32> loc("/l.0/relu")
  %y = tsr.matmul %g, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("/l.1/proj/MatMul")
  %probs = tsr.softmax %y {axis = 1 : i64} : tensor<4x8xf32> loc("/probs")
  %loss = tsr.softmax_cross_entropy sum %y, %t : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32> loc("/loss")
  %one = tsr.constant {tsr.backward} dense<1.0> : tensor<f32>
  %dy = tsr.softmax_cross_entropy_grad sum %y, %t, %one {tsr.backward = "/loss"} : (tensor<4x8xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x8xf32>
  %gt = tsr.transpose %g {perm = array<i64: 1, 0>, tsr.backward = "/l.1/proj/MatMul"} : tensor<4x16xf32> to tensor<16x4xf32>
  %dw2 = tsr.matmul %gt, %dy {tsr.backward = "/l.1/proj/MatMul"} : (tensor<16x4xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
  %w2t = tsr.transpose %w2 {perm = array<i64: 1, 0>, tsr.backward = "/l.1/proj/MatMul"} : tensor<16x8xf32> to tensor<8x16xf32>
  %dg = tsr.matmul %dy, %w2t {tsr.backward = "/l.1/proj/MatMul"} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %zero = tsr.constant {tsr.backward} dense<0.0> : tensor<f32>
  %pos = tsr.compare gt, %h, %zero {tsr.backward = "/l.0/relu"} : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xi1>
  %dh = tsr.where %pos, %dg, %zero {tsr.backward = "/l.0/relu"} : (tensor<4x16xi1>, tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %xt = tsr.transpose %x {perm = array<i64: 1, 0>, tsr.backward = "/l.0/fc/MatMul"} : tensor<4x8xf32> to tensor<8x4xf32>
  %dw1 = tsr.matmul %xt, %dh {tsr.backward = "/l.0/fc/MatMul"} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %n1 = tsr.sgd_update %w1, %dw1 lr %lr weight_decay %wd {tsr.update} : tensor<8x16xf32>
  %n2 = tsr.sgd_update %w2, %dw2 lr %lr weight_decay %wd {tsr.update} : tensor<16x8xf32>
  return %loss, %n1, %n2 : tensor<f32>, tensor<8x16xf32>, tensor<16x8xf32>
}
