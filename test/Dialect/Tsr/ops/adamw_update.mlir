// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.adamw_update.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @adamw_update
// ANNOT: tsr.adamw_update: _0, _0, _0, _0, (), (), (), (), (), () -> _0, _0, _0 | sizes: _0=8
// ANNOT-NEXT: split _0=4 -> 4 pieces; operands: 2 2 2 2 () () () () () (); results: 2 2 2
func.func @adamw_update(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>, %b1: tensor<f32>, %b2: tensor<f32>, %eps: tensor<f32>, %wd: tensor<f32>) -> tensor<8xf32> {
  // CHECK: tsr.adamw_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} step %{{.*}} lr %{{.*}} betas(%{{.*}}, %{{.*}}) eps %{{.*}} weight_decay %{{.*}} {tsr.test_split = {_0 = 4 : i64}} : tensor<8xf32>
  %0:3 = tsr.adamw_update %p, %g, %m, %v step %t lr %lr betas(%b1, %b2) eps %eps weight_decay %wd {tsr.test_split = {_0 = 4}} : tensor<8xf32>
  return %0#0 : tensor<8xf32>
}

// -----

func.func @moment_type(%p: tensor<8xf32>, %m: tensor<4xf32>, %t: tensor<i64>, %s: tensor<f32>) -> tensor<8xf32> {
  // expected-error @+1 {{failed to verify that all of {param, grad, m, v, new_param, new_m, new_v} have same type}}
  %0:3 = "tsr.adamw_update"(%p, %p, %m, %p, %t, %s, %s, %s, %s, %s) : (tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<i64>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %0#0 : tensor<8xf32>
}

// -----

func.func @step_type(%p: tensor<8xf32>, %t: tensor<f32>, %s: tensor<f32>) -> tensor<8xf32> {
  // expected-error @+1 {{operand #4 must be 0D tensor of 64-bit signless integer values}}
  %0:3 = "tsr.adamw_update"(%p, %p, %p, %p, %t, %s, %s, %s, %s, %s) : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %0#0 : tensor<8xf32>
}
