// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.sgd_update.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @sgd_update
// ANNOT: tsr.sgd_update: _0 _1, _0 _1, (), () -> _0 _1 | sizes: _0=4 _1=8
// ANNOT-NEXT: split _0=2 -> 2 pieces; operands: 2x8 2x8 () (); results: 2x8
func.func @sgd_update(%p: tensor<4x8xf32>, %g: tensor<4x8xf32>, %lr: tensor<f32>, %wd: tensor<f32>) -> tensor<4x8xf32> {
  // CHECK: tsr.sgd_update %{{.*}}, %{{.*}} lr %{{.*}} weight_decay %{{.*}} {tsr.test_split = {_0 = 2 : i64}} : tensor<4x8xf32>
  %0 = tsr.sgd_update %p, %g lr %lr weight_decay %wd {tsr.test_split = {_0 = 2}} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @grad_type(%p: tensor<4xf32>, %g: tensor<8xf32>, %lr: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{failed to verify that all of {param, grad, result} have same type}}
  %0 = "tsr.sgd_update"(%p, %g, %lr, %lr) : (tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @lr_rank(%p: tensor<4xf32>, %lr: tensor<1xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand #2 must be 0D tensor of 32-bit float values}}
  %0 = "tsr.sgd_update"(%p, %p, %lr, %lr) : (tensor<4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
