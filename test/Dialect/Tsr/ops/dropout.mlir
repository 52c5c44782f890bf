// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.dropout.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @dropout
// ANNOT: tsr.dropout: _0 _1 -> _0 _1, _0 _1 | sizes: _0=4 _1=8
func.func @dropout(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>, tensor<4x8xf32>) {
  // CHECK: tsr.dropout %{{.*}} ratio 1.000000e-01 : tensor<4x8xf32>
  %0:2 = tsr.dropout %x ratio 0.1 : tensor<4x8xf32>
  // CHECK: tsr.dropout %{{.*}} ratio 0.000000e+00 seed 7 : tensor<4x8xf32>
  %1:2 = tsr.dropout %x ratio 0.0 seed 7 : tensor<4x8xf32>
  return %0#0, %0#1, %1#0 : tensor<4x8xf32>, tensor<4x8xi1>, tensor<4x8xf32>
}

// -----

func.func @ratio_one(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ratio 1.000000e+00 must be below 1 (it is the drop probability)}}
  %0:2 = tsr.dropout %x ratio 1.0 : tensor<4xf32>
  return %0#0 : tensor<4xf32>
}

// -----

func.func @negative_ratio(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'ratio' failed to satisfy constraint: 64-bit float attribute whose value is non-negative}}
  %0:2 = "tsr.dropout"(%x) <{ratio = -0.5 : f64}> : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return %0#0 : tensor<4xf32>
}
