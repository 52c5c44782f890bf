// A bad op in an .mlir file is a located diagnostic and exit 1, never a crash.
// RUN: not tessera-opt %s 2>&1 | FileCheck %s
// CHECK: bad-input.mlir:[[@LINE+3]]:8: error: custom op 'tsr.nope' is unknown
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tsr.exp %x : tensor<4xf32>
  %1 = tsr.nope %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
