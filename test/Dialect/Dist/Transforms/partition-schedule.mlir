// Each rank's ops follow the schedule's block order: on the last stage 1F1B
// runs micro-batch 0's backward before micro-batch 1's forward, GPipe both
// forwards first.
// RUN: tessera-opt %S/Inputs/step.mlir -dist-plan="plan=pp devices=2 micro-batches=2" -dist-schedule=schedule=1f1b -dist-partition | FileCheck %s --check-prefix=ONEF
// RUN: tessera-opt %S/Inputs/step.mlir -dist-plan="plan=pp devices=2 micro-batches=2" -dist-schedule=schedule=gpipe -dist-partition | FileCheck %s --check-prefix=GPIPE

// ONEF-LABEL: func.func @train_step_sgd_rank1
// ONEF: dist.recv {peer = 0 : i64
// ONEF: tsr.matmul {{.*}} -> tensor<2x8xf32>
// ONEF: tsr.softmax_cross_entropy_grad
// ONEF: dist.send
// ONEF: dist.recv {peer = 0 : i64
// ONEF: tsr.matmul {{.*}} -> tensor<2x8xf32>
// ONEF: tsr.softmax_cross_entropy_grad
// Gradient accumulation over the micro-batches, then the update.
// ONEF: tsr.add
// ONEF: tsr.sgd_update

// GPIPE-LABEL: func.func @train_step_sgd_rank1
// GPIPE: dist.recv
// GPIPE: tsr.softmax_cross_entropy sum
// GPIPE: dist.recv
// GPIPE: tsr.softmax_cross_entropy sum
// GPIPE: tsr.softmax_cross_entropy_grad
// GPIPE: tsr.softmax_cross_entropy_grad
