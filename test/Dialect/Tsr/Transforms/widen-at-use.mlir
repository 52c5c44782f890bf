// RUN: tessera-opt %s -split-input-file -tsr-widen-at-use -mlir-print-debuginfo | FileCheck %s

// A widening cast used by a forward op and by a backward op far later gets
// one copy right before each user, with the user's location and phase mark;
// the f32 copy then lives across one op, not from the forward to the
// backward. The narrowing cast and a widening cast used once, right after
// it, are left alone.
// CHECK-LABEL: func.func @saved
// CHECK: %[[N:.*]] = tsr.cast %arg0 : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT: %[[W1:.*]] = tsr.cast %[[N]] : tensor<4x8xbf16> to tensor<4x8xf32> loc(#[[FWD:.*]])
// CHECK-NEXT: %[[Y:.*]] = tsr.exp %[[W1]] : tensor<4x8xf32> loc(#[[FWD]])
// CHECK-NEXT: %[[YN:.*]] = tsr.cast %[[Y]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT: %[[YW:.*]] = tsr.cast %[[YN]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-NEXT: %[[Z:.*]] = tsr.neg %[[YW]]
// CHECK-NEXT: %[[W2:.*]] = tsr.cast %[[N]] {tsr.backward = "e"} : tensor<4x8xbf16> to tensor<4x8xf32> loc(#[[BWD:.*]])
// CHECK-NEXT: %[[G:.*]] = tsr.mul %[[Z]], %[[W2]] {tsr.backward = "e"} : {{.*}} loc(#[[BWD]])
// CHECK-NEXT: return %[[G]]
// CHECK-DAG: #[[FWD]] = loc("e")
// CHECK-DAG: #[[BWD]] = loc("e_grad")
func.func @saved(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %n = tsr.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  %w = tsr.cast %n : tensor<4x8xbf16> to tensor<4x8xf32>
  %y = tsr.exp %w : tensor<4x8xf32> loc("e")
  %yn = tsr.cast %y : tensor<4x8xf32> to tensor<4x8xbf16>
  %yw = tsr.cast %yn : tensor<4x8xbf16> to tensor<4x8xf32>
  %z = tsr.neg %yw : tensor<4x8xf32>
  %g = tsr.mul %z, %w {tsr.backward = "e"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("e_grad")
  return %g : tensor<4x8xf32>
}

// -----

// A user that reads the cast twice gets one copy; a narrowing cast (f32 to
// bf16) and an integer cast are not widening.
// CHECK-LABEL: func.func @twice
// CHECK: %[[N:.*]] = tsr.cast %arg0 : tensor<4xf32> to tensor<4xbf16>
// CHECK-NEXT: %[[I:.*]] = tsr.cast %arg1 : tensor<4xi64> to tensor<4xf32>
// CHECK-NEXT: tsr.exp %[[I]]
// CHECK-NEXT: %[[W:.*]] = tsr.cast %[[N]] : tensor<4xbf16> to tensor<4xf32>
// CHECK-NEXT: tsr.mul %[[W]], %[[W]]
// CHECK-NOT: tsr.cast
func.func @twice(%x: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xf32>) {
  %n = tsr.cast %x : tensor<4xf32> to tensor<4xbf16>
  %w = tsr.cast %n : tensor<4xbf16> to tensor<4xf32>
  %f = tsr.cast %i : tensor<4xi64> to tensor<4xf32>
  %e = tsr.exp %f : tensor<4xf32>
  %m = tsr.mul %w, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %e, %m : tensor<4xf32>, tensor<4xf32>
}
