// RUN: tessera-opt %s -split-input-file -tsr-decompose-means | FileCheck %s

// Every mean becomes a sum over an explicit count, so that a split of the
// reduced dimension leaves partial sums (which the partitioner adds up)
// rather than local means. The new ops keep the replaced op's phase marks.

// Cross-entropy: the sum over the labels that count (label != ignore_index).
// CHECK-LABEL: func.func @ce
// CHECK: %[[SUM:.*]] = tsr.softmax_cross_entropy sum %arg0, %arg1 {ignore_index = -1 : i64, tsr.backward}
// CHECK: %[[IGN:.*]] = tsr.constant {tsr.backward} dense<-1> : tensor<i64>
// CHECK: %[[NE:.*]] = tsr.compare ne, %arg1, %[[IGN]] {tsr.backward}
// CHECK: %[[F:.*]] = tsr.cast %[[NE]] {tsr.backward} : tensor<8xi1> to tensor<8xf32>
// CHECK: %[[COUNT:.*]] = tsr.reduce_sum %[[F]] {axes = array<i64: 0>, tsr.backward}
// CHECK: %[[MEAN:.*]] = tsr.div %[[SUM]], %[[COUNT]] {tsr.backward}
// CHECK: return %[[MEAN]]
// CHECK-NOT: mean
func.func @ce(%l: tensor<8x5xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %0 = tsr.softmax_cross_entropy mean %l, %t {ignore_index = -1 : i64, tsr.backward} : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Its gradient: the incoming gradient divided by the same count, then the
// sum reduction's gradient.
// CHECK-LABEL: func.func @ce_grad
// CHECK: %[[C:.*]] = tsr.reduce_sum %{{.*}} {axes = array<i64: 0>, tsr.update}
// CHECK: %[[G:.*]] = tsr.div %arg2, %[[C]] {tsr.update}
// CHECK: tsr.softmax_cross_entropy_grad sum %arg0, %arg1, %[[G]] {ignore_index = 0 : i64, tsr.update}
func.func @ce_grad(%l: tensor<8x5xf32>, %t: tensor<8xi64>, %g: tensor<f32>) -> tensor<8x5xf32> {
  %0 = tsr.softmax_cross_entropy_grad mean %l, %t, %g {ignore_index = 0 : i64, tsr.update} : (tensor<8x5xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x5xf32>
  return %0 : tensor<8x5xf32>
}

// -----

// reduce_mean: a sum times 1/n, n the product of the reduced sizes (here
// 2 * 8), keepdims kept. A mean over a dimension no plan splits is
// rewritten too (the pass does not look at plans).
// CHECK-LABEL: func.func @mean
// CHECK: %[[S:.*]] = tsr.reduce_sum %arg0 {axes = array<i64: 0, 2>, keepdims = true}
// CHECK: %[[INV:.*]] = tsr.constant dense<6.250000e-02> : tensor<f32>
// CHECK: tsr.mul %[[S]], %[[INV]]
func.func @mean(%x: tensor<2x4x8xf32>) -> tensor<1x4x1xf32> {
  %0 = tsr.reduce_mean %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x4x8xf32>) -> tensor<1x4x1xf32>
  return %0 : tensor<1x4x1xf32>
}
