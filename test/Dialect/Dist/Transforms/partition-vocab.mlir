// dist-partition: a split vocabulary (the rows of an embedding table, the
// classes of a cross-entropy) is computed piece by piece with plain ops and
// collectives over the axes that split it. tp = 2: rank 1 holds rows and
// classes 4..7.
// RUN: tessera-opt %s -dist-partition | FileCheck %s

// CHECK-LABEL: func.func @train_step_v_rank1
// The table's piece: indices in [4, 8) shifted to its rows (in f32), the
// others looked up at row 0 and zeroed; the lookups add up over tp.
// CHECK: %[[LO:.*]] = tsr.constant dense<4> : tensor<i64>
// CHECK: %[[GE:.*]] = tsr.compare ge, %arg1, %[[LO]]
// CHECK: %[[HI:.*]] = tsr.constant dense<8> : tensor<i64>
// CHECK: %[[LT:.*]] = tsr.compare lt, %arg1, %[[HI]]
// CHECK: %[[IN:.*]] = tsr.where %[[GE]], %[[LT]], %[[GE]]
// CHECK: %[[F:.*]] = tsr.cast %arg1 : tensor<6xi64> to tensor<6xf32>
// CHECK: %[[OFF:.*]] = tsr.constant dense<4.000000e+00> : tensor<f32>
// CHECK: %[[SH:.*]] = tsr.sub %[[F]], %[[OFF]]
// CHECK: %[[CL:.*]] = tsr.where %[[IN]], %[[SH]], %{{.*}}
// CHECK: %[[ROW:.*]] = tsr.cast %[[CL]] : tensor<6xf32> to tensor<6xi64>
// CHECK: %[[G:.*]] = tsr.gather %arg0[%[[ROW]]] : (tensor<4x4xf32>, tensor<6xi64>) -> tensor<6x4xf32>
// CHECK: %[[INC:.*]] = tsr.reshape %[[IN]] : tensor<6xi1> to tensor<6x1xi1>
// CHECK: %[[E:.*]] = tsr.where %[[INC]], %[[G]], %{{.*}}
// CHECK: dist.all_reduce %[[E]] {dist.rvd = "V(tp) -all_reduce-> R(tp)"
// The cross-entropy on classes 4..7: the row maximum and the sum of
// exponentials over both pieces; this piece's share is -x[label] (rank 0
// adds log(sum) + max); the shares are summed over tp.
// CHECK: %[[X:.*]] = tsr.slice %arg2 {dist.rvd = "R(tp) -local_slice-> D1(tp)", limits = array<i64: 6, 8>, starts = array<i64: 0, 4>
// CHECK: %[[MH:.*]] = tsr.reduce_max %[[X]] {axes = array<i64: 1>, keepdims = true}
// CHECK: %[[M:.*]] = dist.all_reduce %[[MH]] kind max {ranks = array<i64: 0, 1>} : tensor<6x1xf32>
// CHECK: %[[D:.*]] = tsr.sub %[[X]], %[[M]]
// CHECK: %[[EX:.*]] = tsr.exp %[[D]]
// CHECK: %[[SH2:.*]] = tsr.reduce_sum %[[EX]] {axes = array<i64: 1>, keepdims = true}
// CHECK: dist.all_reduce %[[SH2]] {ranks = array<i64: 0, 1>} : tensor<6x1xf32>
// CHECK: %[[IDS:.*]] = tsr.constant dense<{{\[\[}}4, 5, 6, 7]]> : tensor<1x4xi64>
// CHECK: %[[LAB:.*]] = tsr.reshape %arg3 : tensor<6xi64> to tensor<6x1xi64>
// CHECK: %[[HOT:.*]] = tsr.compare eq, %[[IDS]], %[[LAB]]
// CHECK: %[[IGN:.*]] = tsr.constant dense<-1> : tensor<i64>
// CHECK: %[[VALID:.*]] = tsr.compare ne, %[[LAB]], %[[IGN]]
// CHECK: %[[PICK:.*]] = tsr.where %[[HOT]], %[[X]], %{{.*}}
// CHECK: %[[PICKED:.*]] = tsr.reduce_sum %[[PICK]] {axes = array<i64: 1>, keepdims = true}
// CHECK: %[[NEG:.*]] = tsr.neg %[[PICKED]]
// CHECK: %[[SHARE:.*]] = tsr.where %[[VALID]], %[[NEG]], %{{.*}}
// CHECK: %[[SUM:.*]] = tsr.reduce_sum %[[SHARE]] {axes = array<i64: 0, 1>}
// CHECK: dist.all_reduce %[[SUM]] {dist.rvd = "V(tp) -all_reduce-> R(tp)"
// The gradient: (softmax - onehot) * dloss on the piece, zero for ignored
// labels.
// CHECK: dist.all_reduce %{{.*}} kind max
// CHECK: %[[S2:.*]] = dist.all_reduce %{{.*}} {ranks = array<i64: 0, 1>} : tensor<6x1xf32>
// CHECK: %[[P:.*]] = tsr.div %{{.*}}, %[[S2]]
// CHECK: %[[OH:.*]] = tsr.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<6x4xi1>, tensor<f32>, tensor<f32>) -> tensor<6x4xf32>
// CHECK: %[[DIFF:.*]] = tsr.sub %[[P]], %[[OH]]
// CHECK: %[[DX:.*]] = tsr.mul %[[DIFF]], %{{.*}}
// CHECK: tsr.where %{{.*}}, %[[DX]], %{{.*}} : (tensor<6x1xi1>, tensor<6x4xf32>, tensor<f32>) -> tensor<6x4xf32>
// The table's gradient into rows 4..7: the other indices' rows zeroed.
// CHECK: %[[GZ:.*]] = tsr.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<6x1xi1>, tensor<6x4xf32>, tensor<f32>) -> tensor<6x4xf32>
// CHECK: %[[DW:.*]] = tsr.embedding_grad %[[GZ]], %{{.*}} : (tensor<6x4xf32>, tensor<6xi64>) -> tensor<4x4xf32>
// CHECK: tsr.sgd_update %arg0, %[[DW]]
module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 2, pp = 1]>} {
  func.func @train_step_v(%w: tensor<8x4xf32> {tsr.param = "w"}, %i: tensor<6xi64> {tsr.input = "i"},
                          %x: tensor<6x8xf32> {tsr.input = "x"}, %t: tensor<6xi64> {tsr.input = "t"},
                          %lr: tensor<f32> {tsr.hyper = "lr"}, %wd: tensor<f32> {tsr.hyper = "weight_decay"})
      -> (tensor<f32> {tsr.loss}, tensor<8x4xf32> {tsr.param = "w"}) attributes {tsr.train_step = "sgd"} {
    %e = tsr.gather %w[%i] {dist.split = {d0 = "tp"}} : (tensor<8x4xf32>, tensor<6xi64>) -> tensor<6x4xf32>
    %s = tsr.reduce_sum %e {axes = array<i64: 0, 1>} : (tensor<6x4xf32>) -> tensor<f32>
    %ce = tsr.softmax_cross_entropy sum %x, %t {ignore_index = -1 : i64, dist.split = {c = "tp"}} : (tensor<6x8xf32>, tensor<6xi64>) -> tensor<f32>
    %loss = tsr.add %s, %ce : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %one = tsr.constant dense<1.0> : tensor<f32>
    %dx = tsr.softmax_cross_entropy_grad sum %x, %t, %one {ignore_index = -1 : i64, dist.split = {c = "tp"}} : (tensor<6x8xf32>, tensor<6xi64>, tensor<f32>) -> tensor<6x8xf32>
    %g = tsr.slice %dx {starts = array<i64: 0, 0>, limits = array<i64: 6, 4>, steps = array<i64: 1, 1>} : tensor<6x8xf32> to tensor<6x4xf32>
    %dw = tsr.embedding_grad %g, %i {dist.split = {v = "tp"}} : (tensor<6x4xf32>, tensor<6xi64>) -> tensor<8x4xf32>
    %nw = tsr.sgd_update %w, %dw lr %lr weight_decay %wd {tsr.update, dist.split = {_0 = "tp"}} : tensor<8x4xf32>
    return %loss, %nw : tensor<f32>, tensor<8x4xf32>
  }
}
