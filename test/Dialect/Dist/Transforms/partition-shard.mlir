// dist-partition marks each optimizer-state argument that is a piece of the
// whole with the mesh axes splitting each of its dimensions (dist.shard),
// the same on every rank: ZeRO-1 splits the AdamW moments' dim 0 over dp,
// tensor parallelism fc1's columns over tp; fc2 is row-parallel (tp splits
// its dim 0), so ZeRO-1 splits its tp piece's dim 1 over dp and each rank
// holds a quarter. Whole values get no mark.
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=adamw -inline -dist-plan="plan=dp2xtp2 devices=4 zero1=true" -dist-partition | FileCheck %s
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=adamw -inline -dist-plan="plan=dp devices=2" -dist-partition | FileCheck %s --check-prefix=WHOLE
// Without -inline the step calls the gradient function: an error, not a
// crash.
// RUN: not tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=adamw -dist-plan="plan=dp devices=2" -dist-partition 2>&1 | FileCheck %s --check-prefix=CALL
// CALL: error: dist-partition: cannot partition 'func.call', which is not a tsr or dist op (inline the step's calls first: -inline)

// CHECK-LABEL: func.func @train_step_adamw_rank0
// CHECK-SAME: %{{.*}}: tensor<4x8xf32> {dist.shard = {{\[}}["dp"], ["tp"]], tsr.state = "adamw.m/fc1.weight"}
// CHECK-SAME: %{{.*}}: tensor<4x8xf32> {dist.shard = {{\[}}["dp"], ["tp"]], tsr.state = "adamw.v/fc1.weight"}
// CHECK-SAME: %{{.*}}: tensor<8x4xf32> {dist.shard = {{\[}}["tp"], ["dp"]], tsr.state = "adamw.m/fc2.weight"}
// CHECK-LABEL: func.func @train_step_adamw_rank3
// CHECK-SAME: %{{.*}}: tensor<4x8xf32> {dist.shard = {{\[}}["dp"], ["tp"]], tsr.state = "adamw.m/fc1.weight"}

// WHOLE-LABEL: func.func @train_step_adamw_rank0
// WHOLE-NOT: dist.shard
// WHOLE-SAME: {tsr.state = "adamw.m/fc1.weight"}
func.func @model(%w1: tensor<8x16xf32> {tsr.param = "fc1.weight"}, %w2: tensor<16x8xf32> {tsr.param = "fc2.weight"},
                 %x: tensor<4x8xf32> {tsr.input = "x"}, %t: tensor<4xi64> {tsr.input = "t"}) -> (tensor<f32> {tsr.loss}) {
  %h = tsr.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("/fc1/MatMul")
  %g = tsr.relu %h : tensor<4x16xf32> loc("/relu")
  %y = tsr.matmul %g, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("/fc2/MatMul")
  %l = tsr.softmax_cross_entropy mean %y, %t : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32> loc("/loss")
  return %l : tensor<f32>
}
