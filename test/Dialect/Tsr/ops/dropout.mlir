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
  // A piece of a larger tensor (what dist-partition marks).
  // CHECK: tsr.dropout %{{.*}} ratio 5.000000e-01 seed 7 piece [4, 0] of [8, 8] : tensor<4x8xf32>
  %2:2 = tsr.dropout %x ratio 0.5 seed 7 piece [4, 0] of [8, 8] : tensor<4x8xf32>
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

// -----

func.func @offsets_alone(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tsr.dropout' op needs both 'offsets' and 'global_shape', or neither}}
  %0:2 = "tsr.dropout"(%x) <{ratio = 0.5 : f64, offsets = array<i64: 0>}> : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return %0#0 : tensor<4xf32>
}

// -----

func.func @piece_rank(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'tsr.dropout' op 'offsets' and 'global_shape' need one entry per dimension of the input (2), got 1 and 2}}
  %0:2 = tsr.dropout %x ratio 0.5 piece [0] of [8, 2] : tensor<4x2xf32>
  return %0#0 : tensor<4x2xf32>
}

// -----

func.func @piece_outside(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'tsr.dropout' op the piece of dimension 0 (offset 6, size 4) is not inside the whole tensor's 8}}
  %0:2 = tsr.dropout %x ratio 0.5 piece [6, 0] of [8, 2] : tensor<4x2xf32>
  return %0#0 : tensor<4x2xf32>
}
