// With constants-file, a non-splat constant of more than
// outline-constants-above elements is read from that file by key (equal
// values, equal keys), the Program table names the file, and smaller
// constants and splats stay in the source. Without it every constant is a
// literal, and the table has no file.
// RUN: tessera-opt %s -convert-tsr-to-emitc="constants-file=../constants.safetensors outline-constants-above=3" | mlir-translate --mlir-to-cpp | FileCheck %s
// RUN: tessera-opt %s -convert-tsr-to-emitc | mlir-translate --mlir-to-cpp | FileCheck %s --check-prefix=INLINE
// RUN: not tessera-opt %s -convert-tsr-to-emitc="constants-file=c.safetensors outline-constants-above=-1" 2>&1 | FileCheck %s --check-prefix=NEG

// CHECK-LABEL: void train_step_x(
// CHECK: [[A:v[0-9]+]] = tessera::rt::constant("const.[[KEY:[0-9a-f]+]]");
// CHECK: [[B:v[0-9]+]] = tessera::rt::constant("const.[[KEY]]");
// CHECK: [[C:v[0-9]+]] = tessera::rt::constant("const.{{[0-9a-f]+}}");
// CHECK-NOT: constant("const.[[KEY]]")
// CHECK: tessera::rt::fromValues(tessera::rt::Shape{3}, tessera::rt::DType::f32, std::vector<double>{1, 2, 3})
// CHECK: tessera::rt::full(tessera::rt::Shape{8}, tessera::rt::DType::f32, 2)
// CHECK: /*ranks=*/{0}, /*worldSize=*/1,
// CHECK-NEXT: /*constants=*/"../constants.safetensors",

// INLINE: tessera::rt::fromValues(tessera::rt::Shape{2, 2}, tessera::rt::DType::i1, std::vector<double>{1, 0, 1, 1})
// INLINE-NOT: tessera::rt::constant(
// INLINE: /*ranks=*/{0}, /*worldSize=*/1,
// INLINE-NEXT: /*constants=*/"",
// INLINE-NEXT: /*inputs=*/{},
// INLINE-NEXT: /*stateDict=*/{},
// INLINE-NEXT: /*plan=*/"one device",
// INLINE-NEXT: };

// NEG: convert-tsr-to-emitc: outline-constants-above must be >= 0, got -1
func.func @train_step_x(%x: tensor<2x2xf32> {tsr.input = "x"}) -> (tensor<f32> {tsr.loss}) attributes {tsr.train_step = "x"} {
  %m = tsr.constant dense<[[true, false], [true, true]]> : tensor<2x2xi1>
  %n = tsr.constant dense<[[true, false], [true, true]]> : tensor<2x2xi1>
  %t = tsr.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %s = tsr.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %p = tsr.constant dense<2.0> : tensor<8xf32>
  %0 = tsr.reduce_sum %x {axes = array<i64: 0, 1>} : (tensor<2x2xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
