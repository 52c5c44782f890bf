// dist.shard (dist-partition's mark on a piece of optimizer state: the mesh
// axes that split each dimension) round trips, and every error of its
// verifier.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @piece
// CHECK-SAME: {dist.shard = {{\[}}["dp"], ["tp"]], tsr.state = "adamw.m/w"}
// CHECK-SAME: {dist.shard = {{\[}}["dp", "tp"], []], tsr.state = "adamw.v/w"}
func.func @piece(%m: tensor<4x8xf32> {tsr.state = "adamw.m/w", dist.shard = [["dp"], ["tp"]]},
                 %v: tensor<2x16xf32> {tsr.state = "adamw.v/w", dist.shard = [["dp", "tp"], []]}) {
  return
}

// -----

// expected-error @+1 {{'dist.shard' of argument 0 must hold one array of axis names per dimension, found "dp"}}
func.func @not_lists(%m: tensor<4x8xf32> {dist.shard = ["dp", []]}) {
  return
}

// -----

// expected-error @+1 {{'dist.shard' of argument 0 must hold one array of axis names per dimension, found [1]}}
func.func @not_names(%m: tensor<4x8xf32> {dist.shard = [[1], []]}) {
  return
}

// -----

// expected-error @+1 {{'dist.shard' of argument 0 has 1 entries for a tensor of rank 2}}
func.func @too_few(%m: tensor<4x8xf32> {dist.shard = [["dp"]]}) {
  return
}

// -----

// expected-error @+1 {{'dist.shard' must be}}
func.func @not_array(%m: tensor<4x8xf32> {dist.shard = 1 : i64}) {
  return
}
