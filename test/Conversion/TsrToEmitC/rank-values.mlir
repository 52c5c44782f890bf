// A function shared by several ranks (dist-share-rank-programs) takes each
// rank-dependent value from a table of one row per rank, indexed at run
// time; values equal on every rank stay literals, and the Program table
// lists the ranks that run the program.
// RUN: tessera-opt %s -convert-tsr-to-emitc=model-name=tiny.onnx | tessera-translate --mlir-to-cpp | FileCheck %s

// CHECK: void train_step_sgd(
// CHECK: static const std::vector<int64_t> [[STARTS:kRankValues[0-9]+]][] = {{[{][{]}}0, 0}, {2, 0{{[}][}]}};
// CHECK-NEXT: static const std::vector<int64_t> [[LIMITS:kRankValues[0-9]+]][] = {{[{][{]}}2, 8}, {4, 8{{[}][}]}};
// CHECK-NEXT: tessera::rt::slice({{.*}}, tessera::rt::rankValue([[STARTS]]), tessera::rt::rankValue([[LIMITS]]), std::vector<int64_t>{1, 1});
// CHECK: tessera::rt::all_reduce({{.*}}, std::vector<int64_t>{0, 2}, tessera::rt::ReduceKind::sum);
// CHECK: static const int64_t [[PEER:kRankValues[0-9]+]][] = {1, 3};
// CHECK-NEXT: tessera::rt::send({{.*}}, tessera::rt::rankValue([[PEER]]), 4);
// CHECK: /*ranks=*/{0, 2}, /*worldSize=*/4,
module attributes {dist.mesh = #dist.mesh<[dp = 2, pp = 2]>} {
  func.func @train_step_sgd(%w: tensor<4x8xf32> {tsr.param = "w"}) -> (tensor<4x8xf32> {tsr.param = "w"}) attributes {dist.ranks = array<i64: 0, 2>, tsr.train_step = "sgd"} {
    %0 = tsr.slice %w {dist.rank_values = {limits = [array<i64: 2, 8>, array<i64: 4, 8>], starts = [array<i64: 0, 0>, array<i64: 2, 0>]}, limits = array<i64: 2, 8>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x8xf32> to tensor<2x8xf32>
    %1 = dist.all_reduce %0 {ranks = array<i64: 0, 2>} : tensor<2x8xf32>
    dist.send %1 {dist.rank_values = {peer = [1, 3]}, peer = 1 : i64, tag = 4 : i64} : tensor<2x8xf32>
    return %w : tensor<4x8xf32>
  }
}
