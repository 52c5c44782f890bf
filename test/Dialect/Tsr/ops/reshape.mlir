// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.reshape.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @reshape
// ANNOT: tsr.reshape: r0 r1 (r2_0 r2_1) -> r0 r1 r2_0 r2_1 | sizes: r0=2 r1=8 r2_0=3 r2_1=4
// ANNOT-NEXT: split r2_0=3 -> 3 pieces; operands: 2x8x4; results: 2x8x1x4
// ANNOT: tsr.reshape: r0 (r1_0 r1_1) 1 -> r0 r1_0 r1_1 | sizes: r0=2 r1_0=8 r1_1=12
// ANNOT: tsr.reshape: r0_i0^ r0_i1^ -> r0_o0^ r0_o1^ | sizes: r0_i0=6 r0_i1=4 r0_o0=4 r0_o1=6
func.func @reshape(%x: tensor<2x8x12xf32>, %y: tensor<2x96x1xf32>, %z: tensor<6x4xi64>) -> (tensor<2x8x3x4xf32>, tensor<2x8x12xf32>, tensor<4x6xi64>) {
  // CHECK: tsr.reshape %{{.*}} {tsr.test_split = {r2_0 = 3 : i64}} : tensor<2x8x12xf32> to tensor<2x8x3x4xf32>
  %0 = tsr.reshape %x {tsr.test_split = {r2_0 = 3}} : tensor<2x8x12xf32> to tensor<2x8x3x4xf32>
  // CHECK: tsr.reshape %{{.*}} : tensor<2x96x1xf32> to tensor<2x8x12xf32>
  %1 = tsr.reshape %y : tensor<2x96x1xf32> to tensor<2x8x12xf32>
  // CHECK: tsr.reshape %{{.*}} : tensor<6x4xi64> to tensor<4x6xi64>
  %2 = tsr.reshape %z : tensor<6x4xi64> to tensor<4x6xi64>
  return %0, %1, %2 : tensor<2x8x3x4xf32>, tensor<2x8x12xf32>, tensor<4x6xi64>
}

// -----

func.func @element_count(%x: tensor<2x8xf32>) -> tensor<15xf32> {
  // expected-error @+1 {{'tsr.reshape' op cannot reshape 2x8 (16 elements) to 15 (15 elements)}}
  %0 = tsr.reshape %x : tensor<2x8xf32> to tensor<15xf32>
  return %0 : tensor<15xf32>
}

// -----

func.func @element_type(%x: tensor<2x8xf32>) -> tensor<16xf16> {
  // expected-error @+1 {{'tsr.reshape' op changes the element type from 'f32' to 'f16'}}
  %0 = tsr.reshape %x : tensor<2x8xf32> to tensor<16xf16>
  return %0 : tensor<16xf16>
}
