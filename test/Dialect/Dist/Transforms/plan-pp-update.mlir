// pp places each parameter's update on the parameter's stage: the clipping
// factor of the global gradient norm (a scalar computed on stage 0 from
// every stage's squared norms) travels to the parameters, not each
// parameter, its gradient and its optimizer state to stage 0 and back.
// (Before, the update ops took the lowest stage among their operands, which
// the scalar made 0: every step sent stage 1's parameters and AdamW state
// to rank 0 and back.)
// RUN: tessera-translate --import-onnx %tessera_src/examples/gpt/tiny/model.onnx --mlir-print-debuginfo | tessera-opt -tsr-autodiff -tsr-decompose-means -tsr-optimizer=optimizer=adamw -inline -symbol-dce -canonicalize -cse -dist-plan="plan=pp devices=2" | FileCheck %s
// CHECK-LABEL: func.func @train_step_adamw
// CHECK-SAME: %arg0: tensor<84x32xf32> {tsr.param = "transformer.wte.weight"}
// CHECK-SAME: %arg14: tensor<32xf32> {tsr.param = "transformer.h.1.ln_1.weight"}
// The clipped gradient of a stage-1 parameter is scaled on stage 1:
// CHECK: tsr.mul %{{.*}}, %[[SCALE:[0-9]+]] {dist.stage = 1 : i64, tsr.update}
// CHECK: tsr.adamw_update %arg0, {{.*}} {dist.stage = 0 : i64, tsr.update}
// CHECK: tsr.adamw_update %arg13, {{.*}} {dist.stage = 0 : i64, tsr.update}
// CHECK: tsr.adamw_update %arg14, {{.*}} {dist.stage = 1 : i64, tsr.update}
// CHECK-NOT: dist.stage = 0
// CHECK: return
