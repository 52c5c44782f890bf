// dist-partition reduces gradients early when asked (or, with auto, when
// that lowers the predicted peak): a complete gradient that the update
// wants as a dp shard (ZeRO-2) is reduce-scattered right after the op that
// makes it. `never` keeps each reduction right before its first use. A
// weight gradient's micro-batch pieces are summed as they come either way.
// RUN: tessera-opt %S/Inputs/step.mlir -dist-plan="plan=dp devices=2 zero2=true" -dist-schedule -dist-partition=reduce-early=always | FileCheck %s --check-prefix=ZERO2
// RUN: tessera-opt %S/Inputs/step.mlir -dist-plan="plan=dp devices=2 zero2=true" -dist-schedule -dist-partition=reduce-early=never | FileCheck %s --check-prefix=LATE
// RUN: tessera-opt %S/Inputs/step.mlir -dist-plan="plan=dp devices=2 micro-batches=2" -dist-schedule -dist-partition=reduce-early=always | FileCheck %s --check-prefix=TOTAL
// RUN: tessera-opt %S/Inputs/step.mlir -dist-plan="plan=dp devices=2 micro-batches=2" -dist-schedule -dist-partition=reduce-early=never | FileCheck %s --check-prefix=TOTAL
// RUN: not tessera-opt %S/Inputs/step.mlir -dist-plan="plan=dp devices=2" -dist-partition=reduce-early=soon 2>&1 | FileCheck %s --check-prefix=BAD

// w2's gradient is reduce-scattered before the backward goes on to w1; the
// backward reads w2 whole (ZeRO-2 splits the gradient, not the weight).
// ZERO2-LABEL: func.func @train_step_sgd_rank0
// ZERO2: %[[DW2:.*]] = tsr.matmul {{.*}} -> tensor<16x8xf32>
// ZERO2-NEXT: %[[RS2:.*]] = dist.reduce_scatter %[[DW2]] {dim = 0 : i64, dist.rvd = "V(dp) -reduce_scatter-> D0(dp)", ranks = array<i64: 0, 1>} : tensor<16x8xf32> -> tensor<8x8xf32>
// ZERO2-NEXT: tsr.transpose %{{.*}} : tensor<16x8xf32> to tensor<8x16xf32>
// ZERO2: %[[DW1:.*]] = tsr.matmul {{.*}} -> tensor<8x16xf32>
// ZERO2-NEXT: %[[RS1:.*]] = dist.reduce_scatter %[[DW1]] {{.*}} : tensor<8x16xf32> -> tensor<4x16xf32>
// ZERO2: tsr.sgd_update %{{.*}}, %[[RS1]]
// ZERO2: tsr.sgd_update %{{.*}}, %[[RS2]]

// LATE-LABEL: func.func @train_step_sgd_rank0
// LATE: %[[DW2:.*]] = tsr.matmul {{.*}} -> tensor<16x8xf32>
// LATE-NOT: dist.reduce_scatter
// LATE: %[[DW1:.*]] = tsr.matmul {{.*}} -> tensor<8x16xf32>
// LATE: dist.reduce_scatter %[[DW1]]
// LATE: tsr.sgd_update
// LATE: dist.reduce_scatter %[[DW2]]
// LATE: tsr.sgd_update

// Micro-batch 1's gradient of w2 is added to micro-batch 0's as soon as it
// is made, before the backward goes on to w1 (one piece alive, not one per
// micro-batch), with or without early reduction.
// TOTAL-LABEL: func.func @train_step_sgd_rank0
// TOTAL: %[[A:.*]] = tsr.matmul {{.*}} -> tensor<16x8xf32>
// TOTAL: %[[B:.*]] = tsr.matmul {{.*}} -> tensor<16x8xf32>
// TOTAL-NEXT: %[[S:.*]] = tsr.add %[[A]], %[[B]] : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
// TOTAL-NEXT: tsr.matmul {{.*}} -> tensor<1x16xf32>
// TOTAL: tsr.sgd_update
// TOTAL: %[[R:.*]] = dist.all_reduce %[[S]]
// TOTAL-NEXT: tsr.sgd_update %{{.*}}, %[[R]]

// BAD: error: dist-partition: reduce-early must be auto, always or never, got 'soon'
