// dist-partition marks each piece of a split dropout with where it lies in
// the single-device tensor (offsets of global_shape), so that ranks and
// micro-batches draw the single-device mask between them
// (runtime/common/Dropout.h). The batch of 8 under dp2 with 2 micro-batches:
// dp picks the half, the micro-batch the quarter inside it (rank 1's
// micro-batch 1 starts at row 6); tp splits the hidden dimension after the
// column-parallel fc1. A dropout that stays whole gets no mark.
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=sgd -inline -dist-plan="plan=dp2xtp2 devices=4 micro-batches=2" -dist-partition | FileCheck %s
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=sgd -inline -dist-plan="plan=dp devices=1" -dist-partition | FileCheck %s --check-prefix=WHOLE

// CHECK-LABEL: func.func @train_step_sgd_rank0
// CHECK: tsr.dropout %{{.*}} ratio 2.500000e-01 seed 3 piece [0, 0] of [8, 16] : tensor<2x8xf32>
// CHECK: tsr.dropout %{{.*}} ratio 2.500000e-01 seed 3 piece [2, 0] of [8, 16] : tensor<2x8xf32>
// CHECK-LABEL: func.func @train_step_sgd_rank1
// CHECK: tsr.dropout %{{.*}} piece [0, 8] of [8, 16] : tensor<2x8xf32>
// CHECK: tsr.dropout %{{.*}} piece [2, 8] of [8, 16] : tensor<2x8xf32>
// CHECK-LABEL: func.func @train_step_sgd_rank3
// CHECK: tsr.dropout %{{.*}} piece [4, 8] of [8, 16] : tensor<2x8xf32>
// CHECK: tsr.dropout %{{.*}} piece [6, 8] of [8, 16] : tensor<2x8xf32>

// WHOLE-LABEL: func.func @train_step_sgd_rank0
// WHOLE: tsr.dropout %{{.*}} ratio 2.500000e-01 seed 3 : tensor<8x16xf32>
func.func @model(%w1: tensor<8x16xf32> {tsr.param = "fc1.weight"}, %w2: tensor<16x8xf32> {tsr.param = "fc2.weight"},
                 %x: tensor<8x8xf32> {tsr.input = "x"}, %t: tensor<8xi64> {tsr.input = "t"}) -> (tensor<f32> {tsr.loss}) {
  %h = tsr.matmul %x, %w1 : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32> loc("/fc1/MatMul")
  %g = tsr.relu %h : tensor<8x16xf32> loc("/relu")
  %d:2 = tsr.dropout %g ratio 0.25 seed 3 : tensor<8x16xf32> loc("/drop/Dropout")
  %y = tsr.matmul %d#0, %w2 : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32> loc("/fc2/MatMul")
  %l = tsr.softmax_cross_entropy mean %y, %t : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32> loc("/loss")
  return %l : tensor<f32>
}
