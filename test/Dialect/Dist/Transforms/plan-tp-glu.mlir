// tp finds an MLP's hidden dimension from its structure, not from a list of
// activation ops: the input of a down projection that is an elementwise
// function of up projections. Here a Llama MLP, w2(silu(w1 x) * w3(x)), as
// the ONNX importer gives it for F.silu (x * sigmoid(x)): both the gate (w1)
// and the up (w3) projection are column-parallel, the down projection (w2)
// row-parallel, and the backward follows. The head after the normalisation
// is not an MLP (its input comes from a reduction and the residual stream)
// and stays whole. dialects/llm/test/plan-tp.mlir shows the same with the
// raised llm.swiglu.
// RUN: tessera-opt %s --tessera-train-pipeline="devices=1 raise=false" -mlir-print-debuginfo \
// RUN:   | tessera-opt -dist-plan="plan=tp devices=2" -mlir-print-debuginfo -mlir-print-local-scope \
// RUN:   | FileCheck %s

// CHECK-LABEL: func.func @train_step_adamw
// CHECK: tsr.matmul {{.*}}dist.split = {n = "tp"}{{.*}}"/ffn/w1/MatMul"
// CHECK: tsr.matmul {{.*}}dist.split = {n = "tp"}{{.*}}"/ffn/w3/MatMul"
// CHECK: tsr.sigmoid {{.*}}dist.split = {_2 = "tp"}
// CHECK: tsr.matmul {{.*}}dist.split = {k = "tp"}{{.*}}"/ffn/w2/MatMul"
// CHECK: tsr.matmul {{.*}}{dist.batch = "_0"} : {{.*}}"/head/MatMul"
// The weight gradients: w2's split in its rows, w3's and w1's in columns.
// CHECK: tsr.matmul {{.*}}dist.split = {m = "tp"}, tsr.backward = "/ffn/w2/MatMul"
// CHECK: tsr.matmul {{.*}}dist.split = {n = "tp"}, tsr.backward = "/ffn/w3/MatMul"
// CHECK: tsr.matmul {{.*}}dist.split = {n = "tp"}, tsr.backward = "/ffn/w1/MatMul"
module {
  func.func @forward(%w1: tensor<8x16xf32> {tsr.param = "w1"}, %w3: tensor<8x16xf32> {tsr.param = "w3"},
                     %w2: tensor<16x8xf32> {tsr.param = "w2"}, %wh: tensor<8x6xf32> {tsr.param = "head"},
                     %x: tensor<2x4x8xf32> {tsr.input = "x"}, %t: tensor<2x4xi64> {tsr.input = "t"})
      -> (tensor<f32> {tsr.loss, tsr.output = "loss"}) {
    %gate = tsr.matmul %x, %w1 : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32> loc("/ffn/w1/MatMul")
    %up = tsr.matmul %x, %w3 : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32> loc("/ffn/w3/MatMul")
    %s = tsr.sigmoid %gate : tensor<2x4x16xf32> loc("/ffn/Sigmoid")
    %silu = tsr.mul %gate, %s : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32> loc("/ffn/Mul")
    %p = tsr.mul %silu, %up : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32> loc("/ffn/Mul_1")
    %down = tsr.matmul %p, %w2 : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32> loc("/ffn/w2/MatMul")
    %h = tsr.add %x, %down : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/Add")
    %two = tsr.constant dense<2.0> : tensor<f32> loc("/norm/Constant")
    %sq = tsr.pow %h, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32> loc("/norm/Pow")
    %ms = tsr.reduce_mean %sq {axes = array<i64: 2>, keepdims = true} : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32> loc("/norm/ReduceMean")
    %r = tsr.rsqrt %ms : tensor<2x4x1xf32> loc("/norm/Rsqrt")
    %n = tsr.mul %h, %r : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32> loc("/norm/Mul")
    %logits = tsr.matmul %n, %wh : (tensor<2x4x8xf32>, tensor<8x6xf32>) -> tensor<2x4x6xf32> loc("/head/MatMul")
    %flat = tsr.reshape %logits : tensor<2x4x6xf32> to tensor<8x6xf32> loc("/Reshape")
    %tf = tsr.reshape %t : tensor<2x4xi64> to tensor<8xi64> loc("/Reshape_1")
    %loss = tsr.softmax_cross_entropy mean %flat, %tf : (tensor<8x6xf32>, tensor<8xi64>) -> tensor<f32> loc("/loss")
    return %loss : tensor<f32>
  }
}
