// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.constant.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @constant
// ANNOT: tsr.constant: -> _0 _1 | sizes: _0=2 _1=2
// ANNOT: tsr.constant: -> () | sizes:
func.func @constant() -> (tensor<2x2xf32>, tensor<i64>) {
  // CHECK: tsr.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
  %0 = tsr.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  // CHECK: tsr.constant dense<-1> : tensor<i64>
  %1 = tsr.constant dense<-1> : tensor<i64>
  return %0, %1 : tensor<2x2xf32>, tensor<i64>
}

// -----

func.func @type_mismatch() -> tensor<2xf32> {
  // expected-error @+1 {{failed to verify that all of {value, result} have same type}}
  %0 = "tsr.constant"() {value = dense<1.0> : tensor<3xf32>} : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @not_elements() -> tensor<2xf32> {
  // expected-error @+1 {{attribute 'value' failed to satisfy constraint: constant vector/tensor attribute}}
  %0 = "tsr.constant"() {value = 1.0 : f32} : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
