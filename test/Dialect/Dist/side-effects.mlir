// Communication is never erased, merged or reordered with other
// communication: every rank of a group must take part, in the same order.
// RUN: tessera-opt %s -canonicalize -cse | FileCheck %s

// CHECK-LABEL: func.func @kept
func.func @kept(%x: tensor<4xf32>) attributes {dist.rank = 0 : i64} {
  // An unused result: the peers still wait for this rank.
  // CHECK: dist.all_reduce
  %0 = dist.all_reduce %x {ranks = array<i64: 0, 1>} : tensor<4xf32>
  // Two identical collectives are two rounds of communication.
  // CHECK-NEXT: dist.all_gather
  // CHECK-NEXT: dist.all_gather
  %1 = dist.all_gather %x {ranks = array<i64: 0, 1>, dim = 0 : i64} : tensor<4xf32> -> tensor<8xf32>
  %2 = dist.all_gather %x {ranks = array<i64: 0, 1>, dim = 0 : i64} : tensor<4xf32> -> tensor<8xf32>
  // CHECK-NEXT: dist.recv
  // CHECK-NEXT: dist.send
  %3 = dist.recv {peer = 1 : i64, tag = 0 : i64} : tensor<4xf32>
  dist.send %x {peer = 1 : i64, tag = 0 : i64} : tensor<4xf32>
  return
}
