// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.cast.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @cast
// ANNOT: tsr.cast: _0 _1 -> _0 _1 | sizes: _0=2 _1=3
func.func @cast(%i: tensor<2x3xi64>, %f: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xbf16>) {
  // CHECK: tsr.cast %{{.*}} : tensor<2x3xi64> to tensor<2x3xf32>
  %0 = tsr.cast %i : tensor<2x3xi64> to tensor<2x3xf32>
  // CHECK: tsr.cast %{{.*}} : tensor<2x3xf32> to tensor<2x3xbf16>
  %1 = tsr.cast %f : tensor<2x3xf32> to tensor<2x3xbf16>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xbf16>
}

// -----

func.func @shape_change(%f: tensor<2x3xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'tsr.cast' op changes the shape from 2x3 to 6; cast only converts the element type}}
  %0 = tsr.cast %f : tensor<2x3xf32> to tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @unsupported_element(%f: tensor<2xui8>) -> tensor<2xf32> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float or 32-bit signless integer or 64-bit signless integer or 1-bit signless integer values}}
  %0 = tsr.cast %f : tensor<2xui8> to tensor<2xf32>
  return %0 : tensor<2xf32>
}
