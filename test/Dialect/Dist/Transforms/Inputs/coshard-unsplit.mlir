// A dist.coshard mark on an op that tp does not split.
module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 2, pp = 1]>} {
  func.func @train_step_sgd(%x: tensor<4x8xf32> {tsr.input = "x"}) -> tensor<4x8xf32>
      attributes {tsr.train_step = "sgd"} {
    %y = tsr.relu %x {dist.coshard = 2 : i64} : tensor<4x8xf32> loc("/l.0/relu")
    return %y : tensor<4x8xf32>
  }
}
