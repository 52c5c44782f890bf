// dist-plan writes op-trans (dist.split, dist.batch), op-assign (dist.stage)
// and the mesh.
// RUN: tessera-opt %S/Inputs/step.mlir -dist-plan="plan=dp devices=2" | FileCheck %s --check-prefix=DP
// RUN: tessera-opt %S/Inputs/step.mlir -dist-plan="plan=tp devices=2" | FileCheck %s --check-prefix=TP
// RUN: tessera-opt %S/Inputs/step.mlir -dist-plan="plan=pp devices=2 micro-batches=2" -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s --check-prefix=PP
// RUN: tessera-opt %S/Inputs/step.mlir -dist-plan="plan=dp devices=2 zero1=true" | FileCheck %s --check-prefix=ZERO

// The batch reaches every op of the forward and the backward; weight
// gradients split it in their contraction (k).
// DP: module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 1, pp = 1]>, dist.pipeline = #dist.pipeline<micro_batches = 1>}
// DP: tsr.matmul %{{.*}}, %{{.*}} {dist.batch = "m", dist.split = {m = "dp"}}
// DP: tsr.relu %{{.*}} {dist.batch = "_0", dist.split = {_0 = "dp"}}
// DP: tsr.softmax_cross_entropy sum %{{.*}}, %{{.*}} {dist.batch = "n", dist.split = {n = "dp"}}
// DP: tsr.matmul %{{.*}}, %{{.*}} {dist.batch = "k", dist.split = {k = "dp"}, tsr.backward = "/l.1/proj/MatMul"}
// DP: tsr.sgd_update %arg0, %{{.*}} lr %{{.*}} weight_decay %{{.*}} {tsr.update}

// Megatron-style MLP: the first matmul column-parallel (n), the nonlinearity
// split, the second row-parallel (k); the backward follows.
// TP: tsr.matmul %{{.*}}, %{{.*}} {dist.batch = "m", dist.split = {n = "tp"}}
// TP: tsr.relu %{{.*}} {dist.batch = "_0", dist.split = {_1 = "tp"}}
// TP: tsr.matmul %{{.*}}, %{{.*}} {dist.batch = "m", dist.split = {k = "tp"}}

// Stages by layer groups (l.0, l.1); the backward with its forward.
// PP: dist.pipeline = #dist.pipeline<micro_batches = 2>
// PP: tsr.matmul {{.*}}dist.stage = 0 : i64{{.*}} loc("/l.0/fc/MatMul")
// PP: tsr.matmul {{.*}}dist.stage = 1 : i64{{.*}} loc("/l.1/proj/MatMul")
// The weight gradient of the second matmul goes with it to stage 1.
// PP: tsr.matmul %{{.*}}, %{{.*}} {dist.batch = "k", dist.stage = 1 : i64, tsr.backward = "/l.1/proj/MatMul"} : (tensor<16x4xf32>
// PP: tsr.matmul %{{.*}}, %{{.*}} {dist.batch = "k", dist.stage = 0 : i64, tsr.backward = "/l.0/fc/MatMul"} : (tensor<8x4xf32>

// ZeRO-1: the updates split their parameter's first dimension over dp.
// ZERO: tsr.sgd_update %arg0, %{{.*}} lr %{{.*}} weight_decay %{{.*}} {dist.split = {_0 = "dp"}, tsr.update}
