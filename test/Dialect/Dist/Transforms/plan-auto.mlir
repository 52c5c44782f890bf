// dist-plan plan=auto: the mesh, micro-batches and stages chosen by the cost
// model (lib/Planner/AutoPlanSearch.cpp) on the tiny GPT (2 layers, 2 heads,
// width 32, batch 4), then annotated by the built-in dp, tp and pp policies.
// The memory limits are in GiB: the AdamW step of the tiny GPT holds about
// 0.7 MiB per replica, so they are tiny too.
// RUN: tessera-translate --import-onnx %tessera_src/examples/gpt/tiny/model.onnx --mlir-print-debuginfo | tessera-opt -tsr-autodiff -tsr-decompose-means -tsr-optimizer=optimizer=adamw -inline -symbol-dce -canonicalize -cse -mlir-print-debuginfo -o %t.mlir

// Plenty of memory. The bundled cpu spec puts one rank on each node, 50 us
// apart, and the runtime reduces each of the 28 gradients with a collective
// of its own: data parallelism pays that latency 28 times a step, more than
// a pipeline's sends. Four stages with two micro-batches are the fastest;
// dp = 4 is not even among the runners-up.
// RUN: tessera-opt %t.mlir -dist-plan="plan=auto devices=4 device-spec=cpu memory-gib=1 report=true" 2>%t.ample.err | FileCheck %s --check-prefix=AMPLE
// RUN: FileCheck %s --check-prefix=AMPLEREPORT < %t.ample.err
// AMPLE: module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 1, pp = 4]>, dist.pipeline = #dist.pipeline<micro_batches = 2>
// AMPLE-LABEL: func.func @train_step_adamw
// AMPLE: tsr.matmul {{.*}}dist.stage = 1 : i64
// AMPLEREPORT: dist-plan: auto plan for train_step_adamw on 4 x cpu (1 GiB each): mesh [dp = 1, tp = 1, pp = 4], 2 micro-batch(es) of 2, schedule 1f1b
// AMPLEREPORT-NEXT: stage 0: units (before the layers) (1 of 4), 0.000105 GiB per device (2 micro-batch(es) in flight), {{.*}} per micro-batch
// AMPLEREPORT-NEXT: stage 1: units h.0 (1 of 4)
// AMPLEREPORT-NEXT: stage 2: units h.1 (1 of 4)
// AMPLEREPORT-NEXT: stage 3: units (after the layers) (1 of 4)
// AMPLEREPORT-NEXT: predicted step {{[0-9.]+}} {{u|m}}s, bubble 58.2%, MFU {{[0-9.]+}}% (2.58e+07 model FLOPs per step)
// AMPLEREPORT-NOT: also fits: [dp = 4
// AMPLEREPORT: also fits: [dp = 2, tp = 1, pp = 2]
// AMPLEREPORT-NOT: also fits: [dp = 4
// AMPLEREPORT: planner: 11 candidate(s), {{[0-9]+}} fit, {{[0-9]+}} planner run(s), {{[0-9.]+}} s CPU

// Zero bubble (ZB-H1): the report splits each stage's micro-batch into F, B
// (what the stage before waits for) and W (the weight gradients it may run
// later), beside the sends between stages. The first stage's backward is
// all W, since no stage before it waits; the later stages' input gradients
// are B (h.0's split pinned: the bundled cpu spec's roofline times, which
// depend on no measurement).
// RUN: tessera-opt %t.mlir -dist-plan="plan=auto devices=4 device-spec=cpu memory-gib=1 schedule=zb-h1 report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ZB
// ZB: mesh [dp = 1, tp = 1, pp = 4], {{[0-9]+}} micro-batch(es) of {{[0-9]+}}, schedule zb-h1
// ZB-NEXT: stage 0: {{.*}} per micro-batch (F {{[0-9.]+ [um]s}}, B 0.0 us, W {{(0\.[1-9]|[1-9][0-9]*\.[0-9]) us|[0-9.]+ ms}}, sends {{[0-9.]+ [um]s}})
// ZB-NEXT: stage 1: {{.*}} per micro-batch (F 21.0 us, B 30.9 us, W 7.4 us, sends 126.2 us)

// Less memory than a whole replica: the layers go to two pipeline stages
// (the exact cut: embedding and h.0, then h.1 and the head), each op's
// backward with it, and tp = 2 within each: its all-reduces per layer cost
// less than dp's per-parameter gradient all-reduces (dp = 2 x pp = 2 is the
// runner-up). One micro-batch is faster on this spec than two, whose fixed
// costs per micro-batch dominate.
// RUN: tessera-opt %t.mlir -dist-plan="plan=auto devices=4 memory-gib=0.00055 report=true" -mlir-print-debuginfo -mlir-print-local-scope 2>%t.pp.err | FileCheck %s --check-prefix=PP
// RUN: FileCheck %s --check-prefix=PPREPORT < %t.pp.err
// PP: module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 2, pp = 2]>, dist.pipeline = #dist.pipeline<micro_batches = 1>
// PP-LABEL: func.func @train_step_adamw
// PP: tsr.matmul {{.*}}dist.stage = 0 : i64{{.*}}"/h.0/mlp/c_proj/MatMul"
// PP: tsr.matmul {{.*}}dist.stage = 1 : i64{{.*}}"/h.1/attn/c_attn/MatMul"
// PP: tsr.matmul {{.*}}dist.stage = 1 : i64{{.*}}"/MatMul"
// PP: tsr.matmul {{.*}}dist.stage = 1 : i64, tsr.backward = "/h.1/mlp/c_proj/MatMul"
// PP: tsr.matmul {{.*}}dist.stage = 0 : i64, tsr.backward = "/h.0/mlp/c_proj/MatMul"
// PPREPORT: mesh [dp = 1, tp = 2, pp = 2], 1 micro-batch(es) of 4, schedule 1f1b
// PPREPORT-NEXT: stage 0: units (before the layers) .. h.0 (2 of 4), 0.000465 GiB per device (1 micro-batch(es) in flight)
// PPREPORT-NEXT: stage 1: units h.1 .. (after the layers) (2 of 4), 0.000446 GiB per device (1 micro-batch(es) in flight)
// PPREPORT-NEXT: predicted step {{.*}}, bubble 50.0%
// PPREPORT-NEXT: also fits: [dp = 2, tp = 1, pp = 2], 1 micro-batch(es)

// Less again: tensor parallelism splits the heads and the MLP as well.
// RUN: tessera-opt %t.mlir -dist-plan="plan=auto devices=4 memory-gib=0.0004 report=true" 2>%t.tp.err | FileCheck %s --check-prefix=TP
// RUN: FileCheck %s --check-prefix=TPREPORT < %t.tp.err
// TP: module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 2, pp = 2]>, dist.pipeline = #dist.pipeline<micro_batches = 4>
// TP-LABEL: func.func @train_step_adamw
// TP: tsr.matmul {{.*}}dist.split = {_1 = "tp"}, dist.stage = 0 : i64
// TP: tsr.matmul {{.*}}dist.split = {n = "tp"}, dist.stage = 0 : i64
// TP: tsr.matmul {{.*}}dist.split = {k = "tp"}, dist.stage = 0 : i64
// TPREPORT: mesh [dp = 1, tp = 2, pp = 2], 4 micro-batch(es) of 1
// TPREPORT: stage 0: {{.*}}, 0.000361 GiB per device (2 micro-batch(es) in flight)
// TPREPORT: predicted step {{.*}}, bubble 20.1%

// The micro-batch count can be fixed; the rest is still chosen.
// RUN: tessera-opt %t.mlir -dist-plan="plan=auto devices=4 memory-gib=0.00055 micro-batches=4" | FileCheck %s --check-prefix=FIXED
// FIXED: dist.mesh = #dist.mesh<[dp = 1, tp = 2, pp = 2]>, dist.pipeline = #dist.pipeline<micro_batches = 4>
// Fixed at 1 (fix-micro-batches: tessera-compile's --micro-batches 1 given;
// without it 1 is the default and the search chooses, 2 under AMPLE).
// RUN: tessera-opt %t.mlir -dist-plan="plan=auto devices=4 device-spec=cpu memory-gib=1 micro-batches=1 fix-micro-batches report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FIXEDONE
// FIXEDONE: dist-plan: auto plan for train_step_adamw on 4 x cpu (1 GiB each): mesh [dp = {{[0-9]}}, tp = {{[0-9]}}, pp = {{[0-9]}}], 1 micro-batch(es) of

// GPipe holds every micro-batch's activations on every stage.
// RUN: tessera-opt %t.mlir -dist-plan="plan=auto devices=4 memory-gib=0.00055 schedule=gpipe report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPIPE
// GPIPE: schedule gpipe
// GPIPE: stage 1: {{.*}} ({{[0-9]+}} micro-batch(es) in flight)

// Errors: too little memory names what the step needs; impossible meshes,
// unknown specs and bad limits are named.
// Below the least memory without recomputation (0.000361 GiB; 0.000327
// with ZeRO-3), auto recomputes the layer groups (the embedding and the
// head excepted) and searches again, then keeps the activations of every
// stage that fits without (here the second: one micro-batch in flight),
// searching the cut again for that, and says what it saved against
// recomputing every stage; below the least with it, the error names both.
// RUN: tessera-opt %t.mlir -dist-plan="plan=auto devices=4 memory-gib=0.00033 report=true" 2>&1 | FileCheck %s --check-prefix=RECOMPUTE
// RECOMPUTE: mesh [dp = 1, tp = 2, pp = 2], 4 micro-batch(es)
// RECOMPUTE: recompute: the layer groups of stage(s) 0 (no plan fits in memory without; the other stages fit)
// RECOMPUTE: savers per stage: predicted {{[0-9.]+ [mu]s}} against {{[0-9.]+ [mu]s}} with them on every stage (mesh [dp = 1, tp = 2, pp = 2], 4 micro-batch(es), stages from unit(s) 0, 2)
// RECOMPUTE-NOT: dist.recompute{{.*}}dist.stage = 1
// RECOMPUTE: tsr.matmul {{.*}}dist.recompute{{.*}}dist.stage = 0
// RECOMPUTE-NOT: dist.recompute{{.*}}dist.stage = 1
// RECOMPUTE-NOT: tsr.backward{{.*}}dist.recompute
// Below the least with either saver alone (0.000306 GiB recomputing,
// 0.000327 with ZeRO-3), both: dp2 x tp2 with 2 micro-batches, the
// parameters sharded (dist.zero3; gathered for each micro-batch's use, so
// a weight's transpose is made per micro-batch too) and every layer group
// recomputed.
// RUN: tessera-opt %t.mlir -dist-plan="plan=auto devices=4 memory-gib=0.0003 report=true" 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: mesh [dp = 2, tp = 2, pp = 1], 2 micro-batch(es)
// BOTH: recompute: every layer group (no plan fits in memory without)
// BOTH: zero3: parameters sharded over dp (no plan fits in memory without)
// BOTH: func.func @train_step_adamw({{.*}}dist.zero3, tsr.param
// BOTH: tsr.matmul {{.*}}dist.recompute
// ZeRO-3 per stage: constrained to dp2 x pp2, neither the plain plan
// (0.00044 GiB) nor ZeRO-2 (0.000379) fits in 0.00036 GiB; ZeRO-3
// (0.000344) does,
// and the second stage (one micro-batch in flight) fits with its
// parameters whole, so only the first stage's are sharded (and gathered).
// RUN: echo '{"policy": "auto", "mesh": {"dp": 2, "pp": 2}}' > %t.dp2pp2.json
// RUN: tessera-opt %t.mlir -dist-plan="plan=%t.dp2pp2.json devices=4 memory-gib=0.00036 report=true" 2>&1 | FileCheck %s --check-prefix=Z3STAGE
// Z3STAGE: mesh [dp = 2, tp = 1, pp = 2]
// Z3STAGE: stage 0: units (before the layers) .. h.0 (2 of 4)
// Z3STAGE: zero3: the parameters of stage(s) 0 sharded over dp (no plan fits in memory without; the other stages fit with theirs whole)
// Z3STAGE: func.func @train_step_adamw({{.*}}{dist.zero3, tsr.param = "transformer.h.0.mlp.c_proj.bias"}, %arg14: tensor<32xf32> {tsr.param = "transformer.h.1.ln_1.weight"}
// Z3STAGE-NOT: dist.zero3, tsr.param = "transformer.h.1
// Z3STAGE-NOT: dist.zero3, tsr.param = "transformer.ln_f
// Below ZeRO-3's least, recomputing stage 0 as well (0.000335 GiB).
// RUN: tessera-opt %t.mlir -dist-plan="plan=%t.dp2pp2.json devices=4 memory-gib=0.00034 report=true" 2>&1 | FileCheck %s --check-prefix=Z3RC
// Z3RC: recompute: the layer groups of stage(s) 0 (no plan fits in memory without; the other stages fit)
// Z3RC-NEXT: zero3: the parameters of stage(s) 0 sharded over dp
// RUN: not tessera-opt %t.mlir -dist-plan="plan=auto devices=4 memory-gib=0.0001" 2>&1 | FileCheck %s --check-prefix=MEMORY
// MEMORY: error: dist-plan: plan 'auto': no plan fits in 0.0001 GiB per device: the step needs at least 0.000361 GiB per device on 4 device(s), and at least 0.000361 GiB with ZeRO-2, at least 0.000327 GiB with ZeRO-3, at least 0.000306 GiB when every layer group's activations are recomputed, at least 0.000298 GiB with ZeRO-3 and recomputation
// MEMORY-NOT: see current operation
// RUN: not tessera-opt %t.mlir -dist-plan="plan=auto devices=64" 2>&1 | FileCheck %s --check-prefix=MESH
// MESH: error: dist-plan: plan 'auto': no mesh of 64 device(s) fits the model: dp x tp x pp = 64 with dp dividing the batch (4), tp one of 1, 2 (dividing the attention heads and the MLP's hidden units), pp at most the 4 layer group(s){{$}}
// With micro-batches given, dp x micro-batches must divide the batch; with
// two virtual stages per device, the 4 layer groups allow pp2 at most.
// RUN: not tessera-opt %t.mlir -dist-plan="plan=auto devices=64 micro-batches=3" 2>&1 | FileCheck %s --check-prefix=MESHMB
// MESHMB: error: dist-plan: plan 'auto': no mesh of 64 device(s) fits the model: dp x tp x pp = 64 with dp x the micro-batches (3) dividing the batch (4),
// RUN: not tessera-opt %t.mlir -dist-plan="plan=auto devices=3 schedule=interleaved stages-per-device=2" 2>&1 | FileCheck %s --check-prefix=MESHV
// MESHV: error: dist-plan: plan 'auto': no mesh of 3 device(s) fits the model: {{.*}}, pp at most the 4 layer group(s), and --schedule interleaved runs two virtual stages per device: pp >= 2 with 2 x pp at most the layer groups
// Meshes that the schedule refuses: the schedule library says why.
// RUN: not tessera-opt %t.mlir -dist-plan="plan=auto devices=2 schedule=interleaved stages-per-device=2 micro-batches=1 fix-micro-batches" 2>&1 | FileCheck %s --check-prefix=MESHSCHED
// MESHSCHED: error: dist-plan: plan 'auto': no plan of 2 device(s) runs its schedule: interleaved 1F1B needs the number of micro-batches to be a multiple of the stages (2)
// RUN: not tessera-opt %t.mlir -dist-plan="plan=auto devices=4 device-spec=tpu9" 2>&1 | FileCheck %s --check-prefix=SPEC
// SPEC: error: dist-plan: plan 'auto': unknown device spec 'tpu9' (not a bundled spec: h100-sxm, a100-sxm, cpu; not an existing file)
// RUN: not tessera-opt %t.mlir -dist-plan="plan=auto devices=4 memory-gib=0" 2>&1 | FileCheck %s --check-prefix=NONPOS
// NONPOS: error: dist-plan: plan 'auto': memory-gib must be a finite number > 0, got 0
// RUN: not tessera-opt %t.mlir -dist-plan="plan=auto devices=4 memory-gib=-2" 2>&1 | FileCheck %s --check-prefix=NEG
// NEG: error: dist-plan: plan 'auto': memory-gib must be a finite number > 0, got -2
// RUN: not tessera-opt %t.mlir -dist-plan="plan=auto devices=4 schedule=zb-h2" 2>&1 | FileCheck %s --check-prefix=SCHED
// SCHED: error: dist-plan: plan 'auto': plans for the 1f1b, gpipe, zb-h1, interleaved or zb-v schedule, not 'zb-h2'
// RUN: not tessera-opt %t.mlir -dist-plan="plan=auto devices=4 schedule=zb-v" 2>&1 | FileCheck %s --check-prefix=ZBV
// ZBV: error: dist-plan: plan 'auto': schedule zb-v runs two virtual stages per device: plan with stages-per-device=2 and vshape
// RUN: not tessera-opt %t.mlir -dist-plan="plan=auto devices=4 stages-per-device=2" 2>&1 | FileCheck %s --check-prefix=VIRTUAL
// VIRTUAL: error: dist-plan: plan 'auto': plans 2 stages per device only for the interleaved or zb-v schedule (give it with schedule=)
// With it, the search cuts the 4 layer groups into two virtual stages per
// device of pp2, placed round robin (interleaved) or in a V (zb-v).
// RUN: tessera-opt %t.mlir -dist-plan="plan=auto devices=2 schedule=interleaved stages-per-device=2" | FileCheck %s --check-prefix=INTERLEAVED
// INTERLEAVED: dist.mesh = #dist.mesh<[dp = 1, tp = 1, pp = 2]>, dist.pipeline = #dist.pipeline<micro_batches = {{[0-9]+}}, stage_devices = [0, 1, 0, 1]>
// RUN: tessera-opt %t.mlir -dist-plan="plan=auto devices=2 schedule=zb-v stages-per-device=2 vshape" | FileCheck %s --check-prefix=ZBVPLAN
// ZBVPLAN: dist.pipeline = #dist.pipeline<micro_batches = {{[0-9]+}}, stage_devices = [0, 1, 1, 0]>

// A profile database: a measured time replaces the roofline estimate of the
// ops it matches by name, dtype and operand shapes on one device. The file
// times the layers' c_attn matmul on a micro-batch of 1 ([1, 32, 32] x
// [32, 96]) at 0.5 s. On one device with 4 micro-batches both layers' match:
// 1 s per micro-batch instead of microseconds.
// RUN: tessera-opt %t.mlir -dist-plan="plan=auto devices=1 micro-batches=4 report=true profile-db=%S/Inputs/profile-cpu.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROFILED
// PROFILED: mesh [dp = 1, tp = 1, pp = 1], 4 micro-batch(es) of 1
// PROFILED-NEXT: stage 0: {{.*}}, 1.000 s per micro-batch
// PROFILED-NEXT: predicted step 4.000 s
// PROFILED-NEXT: profile database: 2 of 331 op(s) timed by measurement
// On 4 devices with ample memory the plan avoids micro-batches of 1: pp = 4
// with 4 micro-batches, whose layers the file times, is last of the
// runners-up at seconds a step; the choice (AMPLE above) has micro-batches
// of 2, whose ops the file does not time.
// RUN: tessera-opt %t.mlir -dist-plan="plan=auto devices=4 device-spec=cpu memory-gib=1 report=true profile-db=%S/Inputs/profile-cpu.json" 2>%t.profile.err | FileCheck %s --check-prefix=PROFILEDP
// RUN: FileCheck %s --check-prefix=PROFILEDPREPORT < %t.profile.err
// PROFILEDP: module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 1, pp = 4]>, dist.pipeline = #dist.pipeline<micro_batches = 2>
// PROFILEDPREPORT: mesh [dp = 1, tp = 1, pp = 4], 2 micro-batch(es) of 2
// PROFILEDPREPORT: also fits: [dp = 1, tp = 1, pp = 4], 4 micro-batch(es): {{[0-9.]+}} s
// PROFILEDPREPORT: profile database: 0 of 331 op(s) timed by measurement
// tessera-compile passes --profile-db through the training pipeline.
// RUN: tessera-compile %tessera_src/examples/gpt/tiny/model.onnx -o %t.compile --no-build --devices 4 --plan auto --memory-gib 1 --profile-db %S/Inputs/profile-cpu.json 2>&1 | FileCheck %s --check-prefix=PROFILECOMPILE
// PROFILECOMPILE: mesh [dp = 1, tp = 1, pp = 4], 2 micro-batch(es) of 2
// (tessera-compile raises the attention into llm.attention: fewer ops than
// the imported module above; reshapes, views that take no time, are not
// counted.)
// PROFILECOMPILE: profile database: 0 of 303 op(s) timed by measurement
// A database measured on another device, or one that does not load, is an
// error.
// RUN: not tessera-opt %t.mlir -dist-plan="plan=auto devices=4 device-spec=h100 profile-db=%S/Inputs/profile-cpu.json" 2>&1 | FileCheck %s --check-prefix=PROFILEDEV
// PROFILEDEV: error: dist-plan: plan 'auto': {{.*}}profile-cpu.json: measured on 'cpu', but the device spec is 'h100-sxm'
// RUN: not tessera-opt %t.mlir -dist-plan="plan=auto devices=4 profile-db=%S/Inputs/missing.json" 2>&1 | FileCheck %s --check-prefix=PROFILEMISSING
// PROFILEMISSING: error: dist-plan: plan 'auto': cannot read profile database '{{.*}}missing.json'

// The bundled H100 spec by its short name, on the hand-written MLP step
// (no heads: the MLP's hidden dimension alone bounds tp; at this size every
// mesh costs the same few microseconds of latency).
// RUN: tessera-opt %S/Inputs/step.mlir -dist-plan="plan=auto devices=2 device-spec=h100 memory-gib=80 report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=H100
// H100: dist-plan: auto plan for train_step_sgd on 2 x h100-sxm (80 GiB each): mesh [dp = {{[12]}}, tp = {{[12]}}, pp = {{[12]}}]
