// predict=true: a plan other than auto gets the auto planner's predicted
// step time and memory per device (per stage) in dist.plan_report
// (tessera-compile prints it under the plan line), from the same model of the
// step auto searches with: the plan auto chooses, written by hand, is
// predicted the same step time and memory.
// RUN: tessera-translate --import-onnx %tessera_src/examples/gpt/tiny/model.onnx --mlir-print-debuginfo | tessera-opt -tsr-autodiff -tsr-decompose-means -tsr-optimizer=optimizer=adamw -inline -symbol-dce -canonicalize -cse -mlir-print-debuginfo -o %t.mlir
// RUN: tessera-opt %t.mlir -dist-plan="plan=auto devices=4 memory-gib=0.00055 report=true" -o /dev/null 2> %t.both
// RUN: tessera-opt %t.mlir -dist-plan="plan=tp2xpp2 devices=4 memory-gib=0.00055 predict=true" >> %t.both
// RUN: FileCheck %s < %t.both
// CHECK: mesh [dp = 1, tp = 2, pp = 2], 1 micro-batch(es)
// CHECK: stage 0: {{.*}}, [[M0:[0-9.]+]] GiB per device
// CHECK: stage 1: {{.*}}, [[M1:[0-9.]+]] GiB per device
// CHECK: predicted step [[T:[0-9.]+ [um]?s]], bubble 50.0%
// CHECK: dist.plan_report = ["tp splits {{.*}}", "pp cuts 4 layer groups into 2 stages", "  stage 0: (before the layers) .. h.0 ({{[0-9]+}}% of the forward FLOPs)", "  stage 1: h.1 .. (after the layers) ({{[0-9]+}}% of the forward FLOPs)", "predicted step [[T]], bubble 50.0%, memory [[M0]], [[M1]] GiB per device by stage (cpu, the auto planner's model; fits in 0.00055 GiB per device)"]
//
// Another device spec, and a plan that does not fit the memory given.
// RUN: tessera-opt %t.mlir -dist-plan="plan=dp devices=4 device-spec=h100 memory-gib=0.0001 predict=true" | FileCheck %s --check-prefix=H100
// H100: dist.plan_report = ["predicted step {{[0-9.]+ [um]?s}}, bubble 0.0%, memory {{[0-9.]+}} GiB per device (h100, the auto planner's model; does not fit in 0.0001 GiB per device)"]
//
// Schedules the model does not know get a line that says so.
// RUN: tessera-opt %t.mlir -dist-plan="plan=pp devices=2 micro-batches=2 stages-per-device=2 schedule=1f1b predict=true" | FileCheck %s --check-prefix=VIRTUAL
// VIRTUAL: "no predicted step time: the planner's model knows the 1f1b, gpipe and zb-h1 schedules with one stage per device and interleaved and zb-v with virtual stages, not 1f1b with virtual stages"
//
// Virtual stages (interleaved, ZB-V) are predicted by device: the blocks
// in the schedule library's order, each device's memory replayed along it
// (bench/plans/memory.py holds it to the program's replay).
// RUN: tessera-opt %t.mlir -dist-plan="plan=pp devices=2 micro-batches=4 stages-per-device=2 schedule=interleaved predict=true" | FileCheck %s --check-prefix=INTERLEAVED
// INTERLEAVED: "predicted step {{[0-9.]+ [um]?s}}, bubble {{[0-9.]+}}%, memory {{[0-9.e-]+}}, {{[0-9.e-]+}} GiB by device (cpu, the auto planner's model; fits in
// RUN: tessera-opt %t.mlir -dist-plan="plan=pp devices=2 micro-batches=4 stages-per-device=2 vshape=true schedule=zb-v predict=true" | FileCheck %s --check-prefix=ZBV
// ZBV: "predicted step {{[0-9.]+ [um]?s}}, bubble {{[0-9.]+}}%, memory {{[0-9.e-]+}}, {{[0-9.e-]+}} GiB by device (cpu, the auto planner's model; fits in
//
// Zero bubble (ZB-H1) is predicted from each stage's B and W (the weight
// gradients no earlier stage waits for): with 4 micro-batches on 2 stages
// its fill and drain are shorter than 1F1B's, at 1F1B's memory. Both are
// the schedule replayed with each stage's own times: 1F1B's bubble is
// above the 20 % of equal stages, since the two stages differ.
// RUN: tessera-opt %t.mlir -dist-plan="plan=pp devices=2 micro-batches=4 schedule=1f1b predict=true" | FileCheck %s --check-prefix=ONEFONEB
// ONEFONEB: "predicted step {{[0-9.]+ [um]?s}}, bubble 20.3%, memory
// RUN: tessera-opt %t.mlir -dist-plan="plan=pp devices=2 micro-batches=4 schedule=zb-h1 predict=true" | FileCheck %s --check-prefix=ZBH1
// ZBH1: "predicted step {{[0-9.]+ [um]?s}}, bubble {{([0-9]|1[0-9])\.[0-9]}}%, memory
//
// A device spec that does not load is an error.
// RUN: not tessera-opt %t.mlir -dist-plan="plan=dp devices=2 device-spec=tpu9 predict=true" 2>&1 | FileCheck %s --check-prefix=SPEC
// SPEC: error: dist-plan: plan 'dp': unknown device spec 'tpu9'
