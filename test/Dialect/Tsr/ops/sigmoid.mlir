// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.sigmoid.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @sigmoid
// ANNOT: tsr.sigmoid: _0 _1 -> _0 _1 | sizes: _0=4 _1=8
// ANNOT-NEXT: split _0=2 _1=4 -> 8 pieces; operands: 2x2; results: 2x2
// ANNOT: tsr.sigmoid: _0 -> _0 | sizes: _0=3
func.func @sigmoid(%x: tensor<4x8xf32>, %y: tensor<3xbf16>) -> (tensor<4x8xf32>, tensor<3xbf16>) {
  // CHECK: tsr.sigmoid %{{.*}} {tsr.test_split = {_0 = 2 : i64, _1 = 4 : i64}} : tensor<4x8xf32>
  %0 = tsr.sigmoid %x {tsr.test_split = {_0 = 2, _1 = 4}} : tensor<4x8xf32>
  // CHECK: tsr.sigmoid %{{.*}} : tensor<3xbf16>
  %1 = tsr.sigmoid %y : tensor<3xbf16>
  return %0, %1 : tensor<4x8xf32>, tensor<3xbf16>
}

// -----

func.func @int_operand(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values of at most 2^48 elements, but got 'tensor<4xi32>'}}
  %0 = tsr.sigmoid %x : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor}}
  %0 = tsr.sigmoid %x : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @type_change(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "tsr.sigmoid"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}
