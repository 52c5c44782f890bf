// A model without numbered layers ("h.3", "layers.3") is cut into pipeline
// stages by its modules: the runs of consecutive ops of one top-level
// module ("/fc1/Gemm" -> fc1), an op of no module ("/Relu", a functional
// call) joining the run before it. Stages balance the runs' forward FLOPs;
// dist.plan_report says how (tessera-compile prints it with the plan).
// RUN: tessera-opt %S/Inputs/mlp-modules.mlir -dist-plan="plan=pp devices=2" -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s
// RUN: tessera-opt %S/Inputs/mlp-modules.mlir -dist-plan="plan=pp devices=3" -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s --check-prefix=PP3

// fc1: 2*4*8*16 = 1024 FLOPs (+ relu 64); fc2: 2*4*16*16 = 2048 (+ relu
// 64); head: 2*4*16*8 = 1024 (+ the loss). Of the two cuts, fc1 | fc2, head
// (1088 | 3136 + loss) has the smaller largest stage than fc1, fc2 | head
// (3200 | 1024 + loss).
// CHECK: module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 1, pp = 2]>
// CHECK-SAME: dist.plan_report = ["pp cuts 3 module runs into 2 stages", "  stage 0: fc1 (26% of the forward FLOPs)", "  stage 1: fc2 .. head (74% of the forward FLOPs)"]
// CHECK: tsr.matmul {{.*}}dist.stage = 0 : i64{{.*}} loc("/fc1/MatMul")
// CHECK: tsr.relu {{.*}}dist.stage = 0 : i64{{.*}} loc("/Relu")
// CHECK: tsr.matmul {{.*}}dist.stage = 1 : i64{{.*}} loc("/fc2/MatMul")
// CHECK: tsr.relu {{.*}}dist.stage = 1 : i64{{.*}} loc("/Relu_1")
// CHECK: tsr.matmul {{.*}}dist.stage = 1 : i64{{.*}} loc("/head/MatMul")
// CHECK: tsr.softmax_cross_entropy {{.*}}dist.stage = 1 : i64{{.*}} loc("/SoftmaxCrossEntropyLoss")

// PP3: dist.plan_report = ["pp cuts 3 module runs into 3 stages", "  stage 0: fc1 ({{[0-9]+}}% of the forward FLOPs)", "  stage 1: fc2 ({{[0-9]+}}% of the forward FLOPs)", "  stage 2: head ({{[0-9]+}}% of the forward FLOPs)"]
// PP3: tsr.matmul {{.*}}dist.stage = 0 : i64{{.*}} loc("/fc1/MatMul")
// PP3: tsr.matmul {{.*}}dist.stage = 1 : i64{{.*}} loc("/fc2/MatMul")
// PP3: tsr.matmul {{.*}}dist.stage = 2 : i64{{.*}} loc("/head/MatMul")
