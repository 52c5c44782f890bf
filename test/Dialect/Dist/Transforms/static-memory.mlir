// dist-static-memory: every storage made and freed within a step gets an
// offset in one arena; storages whose lifetimes meet never share bytes.
// RUN: tessera-opt %s -dist-static-memory -split-input-file | FileCheck %s

// A chain: each value dies at its consumer, so b and c meet, a and c do
// not. Largest first, then by first moment: a at 0, b beside it at 1024,
// c back at 0. The returned d stays with the pool (no slot).
// CHECK-LABEL: func.func @chain
// CHECK-SAME: dist.arena_bytes = 2048
// CHECK: tsr.relu %{{.*}} {dist.arena = array<i64: 0, 1024>}
// CHECK: tsr.relu %{{.*}} {dist.arena = array<i64: 1024, 1024>}
// CHECK: tsr.relu %{{.*}} {dist.arena = array<i64: 0, 1024>}
// CHECK: %[[D:.*]] = tsr.relu
// CHECK-NOT: dist.arena
// CHECK: return %[[D]]
func.func @chain(%x: tensor<256xf32>) -> tensor<256xf32> {
  %a = tsr.relu %x : tensor<256xf32>
  %b = tsr.relu %a : tensor<256xf32>
  %c = tsr.relu %b : tensor<256xf32>
  %d = tsr.relu %c : tensor<256xf32>
  return %d : tensor<256xf32>
}

// -----

// a lives until the last add and meets b and c: three slots. c lives on
// through its views (the reshapes share its slot and get none). b is dead
// by the time e is made, so e (100 bytes, a 256-byte slot: the arena's
// alignment) takes b's place. A constant gets none (the runtime may cache
// it for the whole run).
// CHECK-LABEL: func.func @long_lived
// CHECK-SAME: dist.arena_bytes = 3072
// CHECK: tsr.relu %{{.*}} {dist.arena = array<i64: 0, 1024>}
// CHECK: tsr.relu %{{.*}} {dist.arena = array<i64: 1024, 1024>}
// CHECK: tsr.relu %{{.*}} {dist.arena = array<i64: 2048, 1024>}
// CHECK: tsr.reshape
// CHECK-NOT: dist.arena
// CHECK-SAME: to tensor<16x16xf32>
// CHECK: tsr.constant
// CHECK-NOT: dist.arena
// CHECK-SAME: tensor<25xf32>
// CHECK: tsr.relu %{{.*}} {dist.arena = array<i64: 1024, 100>}
func.func @long_lived(%x: tensor<256xf32>, %s: tensor<25xf32>) -> (tensor<256xf32>, tensor<25xf32>) {
  %a = tsr.relu %x : tensor<256xf32>
  %b = tsr.relu %a : tensor<256xf32>
  %c = tsr.relu %b : tensor<256xf32>
  %v = tsr.reshape %c : tensor<256xf32> to tensor<16x16xf32>
  %w = tsr.reshape %v : tensor<16x16xf32> to tensor<256xf32>
  %k = tsr.constant dense<2.0> : tensor<25xf32>
  %e = tsr.relu %s : tensor<25xf32>
  %f = tsr.add %e, %k : (tensor<25xf32>, tensor<25xf32>) -> tensor<25xf32>
  %d = tsr.add %a, %w : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  return %d, %f : tensor<256xf32>, tensor<25xf32>
}

// -----

// layer_norm's mean and rstd have the same size, so the runtime cannot
// tell which one takes which slot: both get the longer lifetime (rstd's,
// read by the second relu), and neither lies where the other might.
// CHECK-LABEL: func.func @same_size_results
// CHECK-SAME: dist.arena_bytes = 1024
// CHECK: tsr.layer_norm {{.*}} {axis = 1 : i64, dist.arena = array<i64: 0, 32, 256, 8, 512, 8>
// CHECK-NEXT: tsr.relu %mean {dist.arena = array<i64: 768, 8>}
func.func @same_size_results(%x: tensor<2x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>) {
  %y:3 = tsr.layer_norm %x, %w, %b {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %m = tsr.relu %y#1 : tensor<2x1xf32>
  %r1 = tsr.relu %y#0 : tensor<2x4xf32>
  %r2 = tsr.add %m, %y#2 : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  return %r1, %r2 : tensor<2x4xf32>, tensor<2x1xf32>
}

// -----

// An op that returns one result and keeps another of the same size within
// the step: the kept one cannot have a slot either (the runtime could give
// the slot to the returned one), so it goes to the pool.
// CHECK-LABEL: func.func @returned_beside
// CHECK: tsr.split
// CHECK-NOT: dist.arena
// CHECK-SAME: -> tensor<128xf32>, tensor<128xf32>
// CHECK-NEXT: tsr.add {{.*}} {dist.arena = array<i64: 0, 512>}
func.func @returned_beside(%x: tensor<256xf32>) -> tensor<128xf32> {
  %p:2 = tsr.split %x {axis = 0 : i64, sizes = array<i64: 128, 128>} : tensor<256xf32> -> tensor<128xf32>, tensor<128xf32>
  %r = tsr.add %p#0, %p#1 : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  return %p#0 : tensor<128xf32>
}
