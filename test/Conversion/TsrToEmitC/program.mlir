// A training step becomes a C++ step function plus the Program table that
// tells the runtime's driver each argument's and result's role.
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=sgd -inline -symbol-dce -canonicalize -convert-tsr-to-emitc=model-name=tiny.onnx | mlir-translate --mlir-to-cpp | FileCheck %s

// CHECK: void train_step_sgd(std::vector<tessera::rt::Tensor>& [[ARGS:v[0-9]+]], std::vector<tessera::rt::Tensor>& [[RES:v[0-9]+]])
// CHECK: tessera::rt::sgd_update(
// CHECK: [[RES]][0] = 
// CHECK: static const tessera::rt::Program kProgram = {
// CHECK-NEXT: "tiny.onnx",
// CHECK-NEXT: "init.safetensors",
// CHECK: {"sgd",
// CHECK-NEXT: {
// CHECK-NEXT: {tessera::rt::Role::Param, "w", tessera::rt::DType::f32, {8, 4}},
// CHECK-NEXT: {tessera::rt::Role::Input, "x", tessera::rt::DType::f32, {2, 8}},
// The labels index the loss's 4 classes: the driver checks them against it.
// CHECK-NEXT: {tessera::rt::Role::Input, "t", tessera::rt::DType::i64, {2}, /*bound=*/4},
// CHECK-NEXT: {tessera::rt::Role::Hyper, "lr", tessera::rt::DType::f32, {}},
// CHECK-NEXT: {tessera::rt::Role::Hyper, "weight_decay", tessera::rt::DType::f32, {}},
// clip_norm's default (tsr-optimizer's clip-norm) travels with it:
// CHECK-NEXT: {tessera::rt::Role::Hyper, "clip_norm", tessera::rt::DType::f32, {}, /*bound=*/0, /*defaultValue=*/0},
// CHECK-NEXT: {tessera::rt::Role::Step, "step", tessera::rt::DType::i64, {}},
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: {tessera::rt::Role::Loss, "loss", tessera::rt::DType::f32, {}},
// CHECK-NEXT: {tessera::rt::Role::GradNorm, "grad_norm", tessera::rt::DType::f32, {}},
// CHECK-NEXT: {tessera::rt::Role::Param, "w", tessera::rt::DType::f32, {8, 4}},
// CHECK-NEXT: },
// CHECK-NEXT: &train_step_sgd},
// CHECK-NEXT: },
// The model FLOPs of a step (tsr.flops_per_step, test/Dialect/Tsr/
// optimizer.mlir) and no device peak (convert-tsr-to-emitc's peak-flops).
// CHECK-NEXT: /*flopsPerStep=*/4.490000e+02, /*peakFlopsPerRank=*/0.000000e+00,
// CHECK-NEXT: /*gradient=*/{},
// CHECK-NEXT: /*ranks=*/{0}, /*worldSize=*/1,
// CHECK: int main(int argc, char **argv) {
// CHECK-NEXT: return tessera::rt::runMain(argc, argv, kProgram);

func.func private @model(%w: tensor<8x4xf32> {tsr.param = "w"}, %x: tensor<2x8xf32> {tsr.input = "x"},
                 %t: tensor<2xi64> {tsr.input = "t"}) -> (tensor<f32> {tsr.loss}) {
  %0 = tsr.matmul %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %1 = tsr.softmax_cross_entropy mean %0, %t : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}
