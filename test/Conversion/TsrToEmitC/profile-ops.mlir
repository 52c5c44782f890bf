// profile-ops: a `tessera::rt::opMark(id)` before each op of the step (after
// its comment, before its placement), and the Program table's opKeys: each
// id's op name without its dialect, the element type the cost model prices
// it in (its first float result's, else a float operand's, else the first
// parameter's) and its operand shapes, as the auto planner's profile
// database keys ops (AutoPlan's OpCost).
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=sgd -inline -symbol-dce -canonicalize -convert-tsr-to-emitc=profile-ops=true | mlir-translate --mlir-to-cpp | FileCheck %s
// Without the option, no marks and no keys.
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=sgd -inline -symbol-dce -canonicalize -convert-tsr-to-emitc | mlir-translate --mlir-to-cpp | FileCheck %s --check-prefix=OFF

// CHECK: void train_step_sgd(
// CHECK: // {{.*}}tsr.matmul
// CHECK-NEXT: tessera::rt::opMark(3);
// CHECK-NEXT: tessera::rt::Tensor {{v[0-9]+}} = tessera::rt::matmul(
// CHECK: // {{.*}}tsr.softmax_cross_entropy
// CHECK-NEXT: tessera::rt::opMark(4);
// CHECK: // {{.*}}tsr.sgd_update
// CHECK-NEXT: tessera::rt::opMark({{[0-9]+}});
// CHECK: static const tessera::rt::Program kProgram = {
// Entry i is id i: the step's three constants (0-2) are ops too.
// CHECK: /*opKeys=*/{
// CHECK-NEXT: {"constant", "fp32", {}},
// CHECK-NEXT: {"constant", "fp32", {}},
// CHECK-NEXT: {"constant", "fp32", {}},
// CHECK-NEXT: {"matmul", "fp32", {{[{][{]}}2, 8}, {8, 4{{[}][}]}}},
// The cross-entropy's labels are integers: its float operand names the type.
// CHECK-NEXT: {"softmax_cross_entropy", "fp32", {{[{][{]}}2, 4}, {2{{[}][}]}}},
// CHECK: {"sgd_update", "fp32", {{[{][{]}}8, 4}, {8, 4}, {}, {}{{[}][}]}}},
// CHECK: int main(

// OFF-NOT: opMark
// OFF-NOT: opKeys

func.func private @model(%w: tensor<8x4xf32> {tsr.param = "w"}, %x: tensor<2x8xf32> {tsr.input = "x"},
                 %t: tensor<2xi64> {tsr.input = "t"}) -> (tensor<f32> {tsr.loss}) {
  %0 = tsr.matmul %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %1 = tsr.softmax_cross_entropy mean %0, %t : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}
