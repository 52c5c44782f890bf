// tp on the core's Llama MLP input (test/Dialect/Dist/Transforms/
// plan-tp-glu.mlir) after tsr-raise: the MLP is now w2(llm.swiglu(w1 x,
// w3 x)), and tp finds it the same way (llm.swiglu's annotation is
// elementwise), with no line of the core naming the llm ops.
// RUN: tessera-opt %tessera_src/test/Dialect/Dist/Transforms/plan-tp-glu.mlir --tessera-train-pipeline="devices=1" \
// RUN:   | tessera-opt -dist-plan="plan=tp devices=2" | FileCheck %s

// CHECK-LABEL: func.func @train_step_adamw
// CHECK: tsr.matmul {{.*}}dist.split = {n = "tp"}
// CHECK: tsr.matmul {{.*}}dist.split = {n = "tp"}
// CHECK: llm.swiglu {{.*}}dist.split = {_2 = "tp"}
// CHECK: tsr.matmul {{.*}}dist.split = {k = "tp"}
// CHECK: tsr.matmul %{{.*}}, %{{.*}} {dist.batch = "_0"} :
