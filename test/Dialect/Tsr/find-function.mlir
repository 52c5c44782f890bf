// The function tsr-autodiff and tsr-optimizer work on: func=<name> picks it
// (a missing name is an error); otherwise it must be the only candidate.
// RUN: tessera-opt %s -tsr-autodiff=func=second | FileCheck %s --check-prefix=NAMED
// RUN: not tessera-opt %s -tsr-autodiff=func=third 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: tessera-opt %s -tsr-autodiff=func=first -tsr-autodiff=func=second -tsr-optimizer=func=second_grad 2>&1 | FileCheck %s --check-prefix=OPTNAMED
// RUN: not tessera-opt %s -tsr-autodiff=func=first -tsr-autodiff=func=second -tsr-optimizer 2>&1 | FileCheck %s --check-prefix=OPTSEVERAL
// RUN: not tessera-opt %s -tsr-autodiff=func=first -tsr-optimizer=func=nope 2>&1 | FileCheck %s --check-prefix=OPTMISSING

// NAMED-NOT: func.func @first_grad
// NAMED: func.func @second_grad
// MISSING: error: tsr-autodiff: no function named 'third'
// OPTNAMED: func.func @train_step
// OPTSEVERAL: error: tsr-optimizer: several gradient functions; choose one with func=<name>
// OPTMISSING: error: tsr-optimizer: no function named 'nope'

func.func @first(%p: tensor<4xf32> {tsr.param = "p"}) -> (tensor<f32> {tsr.loss}) {
  %0 = tsr.reduce_sum %p {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @second(%p: tensor<4xf32> {tsr.param = "p"}) -> (tensor<f32> {tsr.loss}) {
  %0 = tsr.mul %p, %p : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = tsr.reduce_sum %0 {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}
