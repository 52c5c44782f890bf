// ZeRO-3: dist-plan marks each parameter whose update ZeRO-1 splits over dp
// (dist.zero3); dist-partition keeps it sharded like its update across
// steps (dist.shard, the update's local shape), all-gathers it before its
// forward use and again before its backward use (so that the whole copy
// does not live from the forward to the backward), updates the shard in
// place of the whole and returns the shard: no all-gather after the update.
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=adamw -inline -dist-plan="plan=dp devices=2 zero3=true" | FileCheck %s --check-prefix=PLAN
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=adamw -inline -dist-plan="plan=dp devices=2 zero3=true" -dist-partition | FileCheck %s
// With micro-batches each micro-batch gathers the weights for its own
// forward and backward, and makes the transposes it reads from its own
// copy: no whole weight lives from one micro-batch's use to the next's
// (FSDP's reshard after use).
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=adamw -inline -dist-plan="plan=dp devices=2 zero3=true micro-batches=2" -dist-partition | FileCheck %s --check-prefix=MB
// MB-LABEL: func.func @train_step_adamw_rank1
// MB-SAME: %[[W1:[a-z0-9]+]]: tensor<4x16xf32> {dist.shard
// MB-SAME: %[[W2:[a-z0-9]+]]: tensor<8x8xf32> {dist.shard
// MB: %[[F1:.*]] = dist.all_gather %[[W1]]
// MB-NEXT: tsr.matmul %{{.*}}, %[[F1]] : (tensor<1x8xf32>
// MB: %[[F2:.*]] = dist.all_gather %[[W2]]
// MB-NEXT: tsr.matmul %{{.*}}, %[[F2]] : (tensor<1x16xf32>
// MB: %[[B2:.*]] = dist.all_gather %[[W2]]
// MB-NEXT: tsr.transpose %[[B2]]
// MB: %[[G1:.*]] = dist.all_gather %[[W1]]
// MB-NEXT: tsr.matmul %{{.*}}, %[[G1]] : (tensor<1x8xf32>
// MB: %[[G2:.*]] = dist.all_gather %[[W2]]
// MB-NEXT: tsr.matmul %{{.*}}, %[[G2]] : (tensor<1x16xf32>
// MB: %[[C2:.*]] = dist.all_gather %[[W2]]
// MB-NEXT: tsr.transpose %[[C2]]
// MB-NOT: dist.all_gather
// MB: tsr.adamw_update
// With tensor parallelism a split weight is kept as its tp piece (Megatron)
// with or without ZeRO-3; ZeRO-3 adds the dp shard, on the first dimension
// tp leaves whole (dim 1 of the row-parallel fc2).
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=adamw -inline -dist-plan="plan=dp2xtp2 devices=4" -dist-partition | FileCheck %s --check-prefix=TP
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=adamw -inline -dist-plan="plan=dp2xtp2 devices=4 zero3=true" -dist-partition | FileCheck %s --check-prefix=TPZ3

// PLAN: func.func @train_step_adamw(%{{.*}}: tensor<8x16xf32> {dist.zero3, tsr.param = "fc1.weight"}, %{{.*}}: tensor<16x8xf32> {dist.zero3, tsr.param = "fc2.weight"}

// CHECK-LABEL: func.func @train_step_adamw_rank1
// CHECK-SAME: %[[W1:[a-z0-9]+]]: tensor<4x16xf32> {dist.shard = {{\[}}["dp"], []], tsr.param = "fc1.weight"}
// CHECK-SAME: %[[W2:[a-z0-9]+]]: tensor<8x8xf32> {dist.shard = {{\[}}["dp"], []], tsr.param = "fc2.weight"}
// The forward: each weight gathered before its use.
// CHECK: %[[G1:.*]] = dist.all_gather %[[W1]] {dim = 0 : i64, dist.rvd = "D0(dp) -all_gather-> R(dp)", ranks = array<i64: 0, 1>} : tensor<4x16xf32> -> tensor<8x16xf32>
// CHECK: tsr.matmul %{{.*}}, %[[G1]] :
// CHECK: %[[G2:.*]] = dist.all_gather %[[W2]] {{.*}} : tensor<8x8xf32> -> tensor<16x8xf32>
// CHECK: tsr.matmul %{{.*}}, %[[G2]] :
// The backward gathers fc2's weight again for the input gradient; fc1's
// input gradient is not needed (x is data).
// CHECK: %[[B2:.*]] = dist.all_gather %[[W2]] {{.*}} : tensor<8x8xf32> -> tensor<16x8xf32>
// CHECK: tsr.transpose %[[B2]]
// CHECK-NOT: dist.all_gather %[[W1]]
// The updates work on the shards, which are returned as they are.
// CHECK: %[[P1:[a-z_0-9]+]], %{{.*}}, %{{.*}} = tsr.adamw_update %[[W1]], {{.*}} : tensor<4x16xf32>
// CHECK: %[[P2:[a-z_0-9]+]], %{{.*}}, %{{.*}} = tsr.adamw_update %[[W2]], {{.*}} : tensor<8x8xf32>
// CHECK-NOT: dist.all_gather
// CHECK: return %{{.*}}, %{{.*}}, %[[P1]], %[[P2]], {{.*}} : tensor<f32>, tensor<f32>, tensor<4x16xf32>, tensor<8x8xf32>,

// TP-LABEL: func.func @train_step_adamw_rank0
// TP-SAME: tensor<8x8xf32> {dist.shard = {{\[}}[], ["tp"]], tsr.param = "fc1.weight"}
// TP-SAME: tensor<8x8xf32> {dist.shard = {{\[}}["tp"], []], tsr.param = "fc2.weight"}
// TPZ3-LABEL: func.func @train_step_adamw_rank0
// TPZ3-SAME: tensor<4x8xf32> {dist.shard = {{\[}}["dp"], ["tp"]], tsr.param = "fc1.weight"}
// TPZ3-SAME: tensor<8x4xf32> {dist.shard = {{\[}}["tp"], ["dp"]], tsr.param = "fc2.weight"}
func.func @model(%w1: tensor<8x16xf32> {tsr.param = "fc1.weight"}, %w2: tensor<16x8xf32> {tsr.param = "fc2.weight"},
                 %x: tensor<4x8xf32> {tsr.input = "x"}, %t: tensor<4xi64> {tsr.input = "t"}) -> (tensor<f32> {tsr.loss}) {
  %h = tsr.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("/fc1/MatMul")
  %g = tsr.relu %h : tensor<4x16xf32> loc("/relu")
  %y = tsr.matmul %g, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("/fc2/MatMul")
  %l = tsr.softmax_cross_entropy mean %y, %t : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32> loc("/loss")
  return %l : tensor<f32>
}
