// dist-schedule orders the blocks (stage, kind, micro-batch) of a planned
// step and marks the weight-gradient (W) part of each stage's backward for
// the zero-bubble schedules.
// RUN: tessera-opt %S/Inputs/step.mlir -dist-plan="plan=pp devices=2 micro-batches=2" -dist-schedule=schedule=1f1b | FileCheck %s --check-prefix=ONEF
// RUN: tessera-opt %S/Inputs/step.mlir -dist-plan="plan=pp devices=2 micro-batches=2" -dist-schedule=schedule=gpipe | FileCheck %s --check-prefix=GPIPE
// RUN: tessera-opt %S/Inputs/step.mlir -dist-plan="plan=pp devices=2 micro-batches=2" -dist-schedule=schedule=zb-h1 | FileCheck %s --check-prefix=ZB
// RUN: not tessera-opt %S/Inputs/step.mlir -dist-plan="plan=pp devices=2 micro-batches=2" -dist-schedule=schedule=zb-v 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not tessera-opt %S/Inputs/step.mlir -dist-plan="plan=pp devices=2 micro-batches=2" -dist-schedule=schedule=fastest 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: tessera-opt %S/Inputs/step.mlir -dist-plan="plan=pp devices=2 micro-batches=4" -dist-schedule=schedule=search | FileCheck %s --check-prefix=SEARCH
// A negative limit silently meant the default; a micro-batch count beyond
// int was truncated.
// RUN: not tessera-opt %S/Inputs/step.mlir -dist-plan="plan=pp devices=2 micro-batches=2" -dist-schedule="schedule=search memory-limit=-1" 2>&1 | FileCheck %s --check-prefix=NEGLIMIT
// NEGLIMIT: error: dist-schedule: memory-limit must be in [0, 4611686018427387904] (0: 2 x stages), got -1
// RUN: not tessera-opt %S/Inputs/step.mlir -dist-plan="plan=pp devices=2 micro-batches=2" -dist-schedule="schedule=search memory-limit=9223372036854775807" 2>&1 | FileCheck %s --check-prefix=HUGELIMIT
// HUGELIMIT: error: dist-schedule: memory-limit must be in [0, 4611686018427387904] (0: 2 x stages), got 9223372036854775807
// RUN: echo 'module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 1, pp = 2]>, dist.pipeline = #dist.pipeline<micro_batches = 4294967297>} {}' | not tessera-opt -dist-schedule 2>&1 | FileCheck %s --check-prefix=MICRO
// MICRO: error: dist-schedule: the pipeline's micro_batches must be in [1, 2147483647], got 4294967297

// 1F1B on 2 stages, 2 micro-batches: F0(0) F0(1) F1(0) B1(0) B0(0) F1(1) ... (stage 1
// alternates forward and backward).
// ONEF: dist.pipeline = #dist.pipeline<micro_batches = 2, schedule = "1f1b", order = [array<i64: 0, 0, 0>, array<i64: 0, 0, 1>, array<i64: 1, 0, 0>, array<i64: 1, 1, 0>, array<i64: 0, 1, 0>, array<i64: 1, 0, 1>, array<i64: 1, 1, 1>, array<i64: 0, 1, 1>]>
// GPipe: every forward before any backward of the same stage.
// GPIPE: dist.pipeline = #dist.pipeline<micro_batches = 2, schedule = "gpipe", order = [array<i64: 0, 0, 0>, array<i64: 0, 0, 1>, array<i64: 1, 0, 0>, array<i64: 1, 0, 1>, array<i64: 1, 1, 0>, array<i64: 0, 1, 0>, array<i64: 1, 1, 1>, array<i64: 0, 1, 1>]>
// ZB-H1 splits B (what stage 0 waits for) from W (weight gradients): the
// second matmul's weight gradient is W, the input gradient B.
// ZB: dist.pipeline = #dist.pipeline<micro_batches = 2, schedule = "zb-h1"
// ZB-SAME: array<i64: 1, 2, 0>
// ZB: tsr.matmul %{{.*}}, %{{.*}} {dist.batch = "k", dist.stage = 1 : i64, dist.weight_grad, tsr.backward = "/l.1/proj/MatMul"} : (tensor<16x4xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
// ZB: tsr.matmul %{{.*}}, %{{.*}} {dist.batch = "m", dist.stage = 1 : i64, tsr.backward = "/l.1/proj/MatMul"} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
// BAD: error: dist-schedule: zb-v needs 2 virtual stage(s) per device placed in a V, but the plan has 1 (plan with dist-plan's stages-per-device and vshape)
// UNKNOWN: error: dist-schedule: fastest: unknown schedule 'fastest' (gpipe, 1f1b, interleaved, zb-h1, zb-h2, zb-v, search)
// The search's order holds every block of the 4 micro-batches (2 stages x
// F, B, W x 4 = 24).
// SEARCH: dist.pipeline = #dist.pipeline<micro_batches = 4, schedule = "search", order = [array<i64: 0, 0, 0>
// SEARCH-COUNT-23: array<i64: {{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}>
