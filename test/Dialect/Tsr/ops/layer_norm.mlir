// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.layer_norm.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @layer_norm
// ANNOT: tsr.layer_norm: a0 a1 n2^, n2^, n2^ -> a0 a1 n2^, a0 a1 1, a0 a1 1 | sizes: a0=2 a1=4 n2=8
// ANNOT-NEXT: split a1=2 -> 2 pieces; operands: 2x2x8 8 8; results: 2x2x8 2x2x1 2x2x1
// ANNOT: tsr.layer_norm: a0 n1^ n2^, n1^ n2^ -> a0 n1^ n2^, a0 1 1, a0 1 1 | sizes: a0=2 n1=4 n2=8
func.func @layer_norm(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>, %w2: tensor<4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x1x1xf32>) {
  // CHECK: tsr.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64, epsilon = 1.000000e-05 : f64, tsr.test_split = {a1 = 2 : i64}} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  %0:3 = tsr.layer_norm %x, %w, %b {axis = 2 : i64, epsilon = 1.0e-5 : f64, tsr.test_split = {a1 = 2}} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  // CHECK: tsr.layer_norm %{{.*}}, %{{.*}} {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  %1:3 = tsr.layer_norm %x, %w2 {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  return %0#0, %1#1 : tensor<2x4x8xf32>, tensor<2x1x1xf32>
}

// -----

func.func @weight_shape(%x: tensor<2x4x8xf32>, %w: tensor<4xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+2 {{weight has shape 4 but the normalised shape is 8}}
// expected-error @+1 {{failed to infer returned types}}
  %0:3 = tsr.layer_norm %x, %w {axis = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<4xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  return %0#0 : tensor<2x4x8xf32>
}

// -----

func.func @bias_type(%x: tensor<2x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf16>) -> tensor<2x8xf32> {
  // expected-error @+2 {{bias has element type 'f16', the input 'f32'}}
// expected-error @+1 {{failed to infer returned types}}
  %0:3 = tsr.layer_norm %x, %w, %b {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf16>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %0#0 : tensor<2x8xf32>
}

// -----

func.func @axis(%x: tensor<2x8xf32>, %w: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
// expected-error @+1 {{failed to infer returned types}}
  %0:3 = tsr.layer_norm %x, %w {axis = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %0#0 : tensor<2x8xf32>
}

// -----

func.func @epsilon(%x: tensor<2x8xf32>, %w: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{attribute 'epsilon' failed to satisfy constraint: 64-bit float attribute whose value is finite and non-negative}}
  %0:3 = tsr.layer_norm %x, %w {axis = 1 : i64, epsilon = -1.0 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %0#0 : tensor<2x8xf32>
}

// -----

// NaN (hex form) is not negative, but as an epsilon it makes every output NaN.
func.func @epsilon_nan(%x: tensor<2x8xf32>, %w: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{attribute 'epsilon' failed to satisfy constraint: 64-bit float attribute whose value is finite and non-negative}}
  %0:3 = tsr.layer_norm %x, %w {axis = 1 : i64, epsilon = 0x7FF8000000000000 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %0#0 : tensor<2x8xf32>
}

// -----

// Infinity makes every output zero.
func.func @epsilon_inf(%x: tensor<2x8xf32>, %w: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{attribute 'epsilon' failed to satisfy constraint: 64-bit float attribute whose value is finite and non-negative}}
  %0:3 = tsr.layer_norm %x, %w {axis = 1 : i64, epsilon = 0x7FF0000000000000 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %0#0 : tensor<2x8xf32>
}
