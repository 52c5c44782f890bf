// A pre-LN transformer MLP block with its loss, written by hand in tsr:
// x -> layer_norm -> fc (column) -> gelu -> proj (row) -> residual -> head
// -> cross-entropy. scripts/demo.sh prints its annotations and what
// Megatron-style tensor parallelism (splitting the hidden dimension by 2)
// does to each op's local shapes.
func.func @mlp_block(%x: tensor<4x16x32xf32> {tsr.input = "x"},
                     %targets: tensor<64xi64> {tsr.input = "targets"},
                     %ln_w: tensor<32xf32> {tsr.param = "ln.weight"},
                     %ln_b: tensor<32xf32> {tsr.param = "ln.bias"},
                     %fc_w: tensor<32x128xf32> {tsr.param = "fc.weight"},
                     %proj_w: tensor<128x32xf32> {tsr.param = "proj.weight"},
                     %head_w: tensor<32x50xf32> {tsr.param = "head.weight"})
    -> (tensor<f32> {tsr.loss}) {
  %ln:3 = tsr.layer_norm %x, %ln_w, %ln_b {axis = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<4x16x32xf32>, tensor<4x16x1xf32>, tensor<4x16x1xf32>)
  // Column parallel: split the hidden dimension n of fc.
  %h = tsr.matmul %ln#0, %fc_w {tsr.test_split = {n = 2}} : (tensor<4x16x32xf32>, tensor<32x128xf32>) -> tensor<4x16x128xf32>
  %g = tsr.gelu exact %h {tsr.test_split = {_2 = 2}} : tensor<4x16x128xf32>
  // Row parallel: split the contraction k of proj; its result is partial.
  %p = tsr.matmul %g, %proj_w {tsr.test_split = {k = 2}} : (tensor<4x16x128xf32>, tensor<128x32xf32>) -> tensor<4x16x32xf32>
  %r = tsr.add %x, %p : (tensor<4x16x32xf32>, tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
  %logits = tsr.matmul %r, %head_w : (tensor<4x16x32xf32>, tensor<32x50xf32>) -> tensor<4x16x50xf32>
  %flat = tsr.reshape %logits : tensor<4x16x50xf32> to tensor<64x50xf32>
  // Data parallel on the loss: splitting the samples leaves partial sums.
  %loss = tsr.softmax_cross_entropy mean %flat, %targets {tsr.test_split = {n = 2}} : (tensor<64x50xf32>, tensor<64xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
