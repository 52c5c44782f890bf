// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.reduce_max.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @reduce_max
// ANNOT: tsr.reduce_max: d0 d1^ -> d0 | sizes: d0=2 d1=4
func.func @reduce_max(%x: tensor<2x4xf32>) -> tensor<2xf32> {
  // CHECK: tsr.reduce_max %{{.*}} {axes = array<i64: 1>} : (tensor<2x4xf32>) -> tensor<2xf32>
  %0 = tsr.reduce_max %x {axes = array<i64: 1>} : (tensor<2x4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @wrong_result(%x: tensor<2x4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tsr.reduce_max %x {axes = array<i64: 1>} : (tensor<2x4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
