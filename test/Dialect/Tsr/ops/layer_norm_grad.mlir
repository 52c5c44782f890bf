// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.layer_norm_grad.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @layer_norm_grad
// ANNOT: tsr.layer_norm_grad: a0+ a1+ n2^, a0+ a1+ n2^, n2^, a0+ a1+ 1, a0+ a1+ 1 -> a0 a1 n2^, n2^, n2^ | sizes: a0=2 a1=4 n2=8
// ANNOT-NEXT: split a0=2 -> 2 pieces; operands: 1x4x8 1x4x8 8 1x4x1 1x4x1; results: 1x4x8 8(partial) 8(partial)
func.func @layer_norm_grad(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %m: tensor<2x4x1xf32>, %r: tensor<2x4x1xf32>) -> tensor<8xf32> {
  // CHECK: tsr.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64, tsr.test_split = {a0 = 2 : i64}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %0:3 = tsr.layer_norm_grad %dy, %x, %w, %m, %r {axis = 2 : i64, tsr.test_split = {a0 = 2}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %0#1 : tensor<8xf32>
}

// -----

func.func @stats(%dy: tensor<2x8xf32>, %w: tensor<8xf32>, %m: tensor<2xf32>) -> tensor<8xf32> {
  // expected-error @+2 {{mean and rstd must have type 'tensor<2x1xf32>' (as layer_norm produces them)}}
// expected-error @+1 {{failed to infer returned types}}
  %0:3 = tsr.layer_norm_grad %dy, %dy, %w, %m, %m {axis = 1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %0#1 : tensor<8xf32>
}

// -----

func.func @grad_type(%dy: tensor<2x4xf32>, %x: tensor<2x8xf32>, %w: tensor<8xf32>, %m: tensor<2x1xf32>) -> tensor<8xf32> {
  // expected-error @+2 {{grad has type 'tensor<2x4xf32>' but the input has type 'tensor<2x8xf32>'}}
// expected-error @+1 {{failed to infer returned types}}
  %0:3 = tsr.layer_norm_grad %dy, %x, %w, %m, %m {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<2x1xf32>, tensor<2x1xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %0#1 : tensor<8xf32>
}

// -----

func.func @weight(%dy: tensor<2x8xf32>, %w: tensor<4xf32>, %m: tensor<2x1xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{weight has shape 4 but the normalised shape is 8}}
// expected-error @+1 {{failed to infer returned types}}
  %0:3 = tsr.layer_norm_grad %dy, %dy, %w, %m, %m {axis = 1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<4xf32>, tensor<2x1xf32>, tensor<2x1xf32>) -> (tensor<2x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return %0#1 : tensor<4xf32>
}
