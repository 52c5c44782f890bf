// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.broadcast_to.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @broadcast_to
// ANNOT: tsr.broadcast_to: d2 -> d0 d1 d2 | sizes: d2=8 d0=2 d1=4
// ANNOT: tsr.broadcast_to: d0 1 -> d0 d1 | sizes: d0=4 d1=8
func.func @broadcast_to(%x: tensor<8xf32>, %y: tensor<4x1xi1>) -> (tensor<2x4x8xf32>, tensor<4x8xi1>) {
  // CHECK: tsr.broadcast_to %{{.*}} : tensor<8xf32> to tensor<2x4x8xf32>
  %0 = tsr.broadcast_to %x : tensor<8xf32> to tensor<2x4x8xf32>
  // CHECK: tsr.broadcast_to %{{.*}} : tensor<4x1xi1> to tensor<4x8xi1>
  %1 = tsr.broadcast_to %y : tensor<4x1xi1> to tensor<4x8xi1>
  return %0, %1 : tensor<2x4x8xf32>, tensor<4x8xi1>
}

// -----

func.func @incompatible(%x: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'tsr.broadcast_to' op cannot broadcast 3 to 2x4: input dimension 0 is 3, not 1 or 4}}
  %0 = tsr.broadcast_to %x : tensor<3xf32> to tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @lower_rank(%x: tensor<2x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tsr.broadcast_to' op cannot broadcast rank 2 to the lower rank 1}}
  %0 = tsr.broadcast_to %x : tensor<2x4xf32> to tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @element_type(%x: tensor<4xf32>) -> tensor<2x4xf16> {
  // expected-error @+1 {{'tsr.broadcast_to' op changes the element type from 'f32' to 'f16'}}
  %0 = tsr.broadcast_to %x : tensor<4xf32> to tensor<2x4xf16>
  return %0 : tensor<2x4xf16>
}
