// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.gelu.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @gelu
// ANNOT: tsr.gelu: _0 _1 -> _0 _1 | sizes: _0=4 _1=8
// ANNOT: tsr.gelu: _0 _1 -> _0 _1 | sizes: _0=4 _1=8
func.func @gelu(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: tsr.gelu exact %{{.*}} : tensor<4x8xf32>
  %0 = tsr.gelu exact %x : tensor<4x8xf32>
  // CHECK: tsr.gelu tanh %{{.*}} : tensor<4x8xf32>
  %1 = tsr.gelu tanh %x : tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

func.func @bad_approximation(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{custom op 'tsr.gelu' expected string or keyword containing one of the following enum values for attribute 'approximate' [exact, tanh]}}
  %0 = tsr.gelu sigmoid %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @int_operand(%x: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values}}
  %0 = tsr.gelu exact %x : tensor<4xi64>
  return %0 : tensor<4xi64>
}
