// Round trip (custom and generic form), the op's dimension annotation, and
// every verifier error of tsr.embedding_grad.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -tsr-test-annotation -o /dev/null | FileCheck %s --check-prefix=ANNOT

// CHECK-LABEL: func.func @embedding_grad
// ANNOT: tsr.embedding_grad: _0+ _1+ c, _0+ _1+ -> v c | sizes: _0=2 _1=4 c=8 v=10
// ANNOT-NEXT: split _0=2 c=2 -> 4 pieces; operands: 1x4x4 1x4; results: 10x4(partial)
func.func @embedding_grad(%dy: tensor<2x4x8xf32>, %i: tensor<2x4xi64>) -> tensor<10x8xf32> {
  // CHECK: tsr.embedding_grad %{{.*}}, %{{.*}} {tsr.test_split = {_0 = 2 : i64, c = 2 : i64}} : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<10x8xf32>
  %0 = tsr.embedding_grad %dy, %i {tsr.test_split = {_0 = 2, c = 2}} : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<10x8xf32>
  return %0 : tensor<10x8xf32>
}

// -----

func.func @shapes(%dy: tensor<2x4x8xf32>, %i: tensor<2x3xi64>) -> tensor<10x8xf32> {
  // expected-error @+1 {{'tsr.embedding_grad' op grad has shape 2x4x8 but indices 2x3 and a table of width 8 need 2x3x8}}
  %0 = tsr.embedding_grad %dy, %i : (tensor<2x4x8xf32>, tensor<2x3xi64>) -> tensor<10x8xf32>
  return %0 : tensor<10x8xf32>
}

// -----

func.func @table_rank(%dy: tensor<4x8xf32>, %i: tensor<4xi64>) -> tensor<10x8x1xf32> {
  // expected-error @+1 {{'tsr.embedding_grad' op result must be a V x C table, found 10x8x1}}
  %0 = tsr.embedding_grad %dy, %i : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<10x8x1xf32>
  return %0 : tensor<10x8x1xf32>
}

// -----

func.func @table_type(%dy: tensor<4x8xf32>, %i: tensor<4xi64>) -> tensor<10x8xf16> {
  // expected-error @+1 {{'tsr.embedding_grad' op result element type 'f16' differs from the grad's 'f32'}}
  %0 = tsr.embedding_grad %dy, %i : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<10x8xf16>
  return %0 : tensor<10x8xf16>
}
