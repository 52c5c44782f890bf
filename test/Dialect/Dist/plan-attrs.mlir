// The plan attributes (dist.mesh, dist.split, dist.stage, dist.order_after,
// dist.rank, dist.rvd) round trip, and every error of their verifier.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s

// CHECK: module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 2, pp = 2]>}
module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 2, pp = 2]>} {
  // CHECK-LABEL: func.func @plan
  func.func @plan(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
    // CHECK: tsr.matmul
    // CHECK-SAME: dist.split = {b = "dp", n = "tp"}, dist.stage = 0 : i64
    %0 = tsr.matmul %x, %w {dist.split = {b = "dp", n = "tp"}, dist.stage = 0 : i64} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("mm0")
    // CHECK: tsr.relu
    // CHECK-SAME: dist.order_after = ["mm0"], dist.split = {}, dist.stage = 1 : i64
    %1 = tsr.relu %0 {dist.split = {}, dist.stage = 1 : i64, dist.order_after = ["mm0"]} : tensor<4x16xf32>
    return %1 : tensor<4x16xf32>
  }
  // CHECK-LABEL: func.func @rank7
  // CHECK-SAME: attributes {dist.rank = 7 : i64}
  func.func @rank7() attributes {dist.rank = 7 : i64} {
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 2, pp = 2]>} {
  func.func @unknown_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'dist.split' names mesh axis 'xx', but the mesh has dp, tp, pp}}
    %0 = tsr.relu %x {dist.split = {d0 = "xx"}} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 2]>} {
  func.func @axis_twice(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{'dist.split' splits both 'a' and 'b' along mesh axis 'tp'}}
    %0 = tsr.relu %x {dist.split = {a = "tp", b = "tp"}} : tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 2]>} {
  func.func @not_a_string(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'dist.split' maps dimension 'b' to 0 : i64, not to a mesh axis name string}}
    %0 = tsr.relu %x {dist.split = {b = 0}} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 2]>} {
  func.func @not_a_dictionary(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'dist.split' must be a dictionary from dimension names to mesh axis names, found "dp"}}
    %0 = tsr.relu %x {dist.split = "dp"} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

func.func @split_without_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.split' needs a 'dist.mesh' on the enclosing module}}
  %0 = tsr.relu %x {dist.split = {b = "dp"}} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 2, pp = 2]>} {
  func.func @stage_range(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'dist.stage' is 2, but mesh axis 'pp' has size 2}}
    %0 = tsr.relu %x {dist.stage = 2 : i64} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 2]>} {
  func.func @stage_without_pp(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'dist.stage' is 1, but the mesh has no 'pp' axis (only stage 0 exists)}}
    %0 = tsr.relu %x {dist.stage = 1 : i64} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

func.func @negative_stage(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.stage' must be >= 0, or -1 for every device, found -2}}
  %0 = tsr.relu %x {dist.stage = -2 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @stage_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.stage' must be an i64, found 1 : i32}}
  %0 = tsr.relu %x {dist.stage = 1 : i32} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @order_not_array(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.order_after' must be an array of op names, found "mm0"}}
  %0 = tsr.relu %x {dist.order_after = "mm0"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @order_entry(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.order_after' entry 1 must be a non-empty op name string, found 3 : i64}}
  %0 = tsr.relu %x {dist.order_after = ["mm0", 3]} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @order_empty_name(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.order_after' entry 0 must be a non-empty op name string, found ""}}
  %0 = tsr.relu %x {dist.order_after = [""]} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'dist.mesh' must be a #dist.mesh, found "dp"}}
module attributes {dist.mesh = "dp"} {}

// -----

// expected-error @+1 {{'dist.mesh' belongs on a builtin.module, not on 'func.func'}}
func.func private @mesh_on_func() attributes {dist.mesh = #dist.mesh<[dp = 2]>}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 4]>} {
  // expected-error @+1 {{'dist.rank' is 8, but the mesh has 8 ranks}}
  func.func private @rank_range() attributes {dist.rank = 8 : i64}
}

// -----

// expected-error @+1 {{'dist.rank' must be non-negative, found -1}}
func.func private @negative_rank() attributes {dist.rank = -1 : i64}

// -----

func.func @rank_on_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.rank' belongs on a function, not on 'tsr.relu'}}
  %0 = tsr.relu %x {dist.rank = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @rvd_not_string(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.rvd' must be a string, found 1 : i64}}
  %0 = dist.all_reduce %x {ranks = array<i64: 0, 1>, dist.rvd = 1} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @unknown(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown attribute 'dist.splt': dist defines dist.mesh, dist.split, dist.stage, dist.order_after, dist.recompute, dist.coshard, dist.rank, dist.rvd, dist.batch, dist.pipeline, dist.weight_grad, dist.origin, dist.ranks, dist.rank_values, dist.zero3, dist.shard, dist.arena, dist.arena_bytes and dist.plan_report}}
  %0 = tsr.relu %x {dist.splt = {b = "dp"}} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{#dist.pipeline: micro_batches must be >= 1, got 0}}
module attributes {dist.mesh = #dist.mesh<[dp = 2]>, dist.pipeline = #dist.pipeline<micro_batches = 0>} {
}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 2]>} {
  // expected-error @+1 {{'dist.pipeline' belongs on a builtin.module, not on 'func.func'}}
  func.func @f() attributes {dist.pipeline = #dist.pipeline<micro_batches = 2>} {
    return
  }
}

// -----

// expected-error @+1 {{'dist.pipeline' must be a #dist.pipeline, found 2 : i64}}
module attributes {dist.pipeline = 2 : i64} {
}

// -----

// expected-error @+1 {{#dist.pipeline: schedule and order come together (dist-schedule sets both)}}
module attributes {dist.pipeline = #dist.pipeline<micro_batches = 2, schedule = "1f1b">} {
}

// -----

// expected-error @+1 {{#dist.pipeline: order entry 1 array<i64: 0, 0, 2> needs stage >= 0, kind 0 (forward), 1 (backward) or 2 (weight gradient), and micro-batch in [0, 2)}}
module attributes {dist.pipeline = #dist.pipeline<micro_batches = 2, schedule = "gpipe", order = [array<i64: 0, 0, 0>, array<i64: 0, 0, 2>]>} {
}

// -----

// expected-error @+1 {{#dist.pipeline: order entry 0 must be an array<i64: stage, kind, micro-batch>, found array<i64: 0, 0>}}
module attributes {dist.pipeline = #dist.pipeline<micro_batches = 2, schedule = "gpipe", order = [array<i64: 0, 0>]>} {
}

// -----

// expected-error @+1 {{#dist.pipeline: stage 1 has device -1 (must be >= 0)}}
module attributes {dist.pipeline = #dist.pipeline<micro_batches = 1, stage_devices = [0, -1]>} {
}

// -----

// expected-error @+1 {{'dist.pipeline' places stage 2 on device 2, but mesh axis 'pp' has size 2}}
module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 1, pp = 2]>, dist.pipeline = #dist.pipeline<micro_batches = 1, stage_devices = [0, 1, 2, 0]>} {
}

// -----

// expected-error @+1 {{'dist.pipeline' order entry 0 array<i64: 2, 0, 0> names a stage beyond the 2 of the plan}}
module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 1, pp = 2]>, dist.pipeline = #dist.pipeline<micro_batches = 1, schedule = "gpipe", order = [array<i64: 2, 0, 0>]>} {
}

// -----

// With virtual stages, dist.stage counts the pipeline's stages, not pp.
// CHECK-LABEL: func.func @virtual
module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 1, pp = 2]>, dist.pipeline = #dist.pipeline<micro_batches = 1, stage_devices = [0, 1, 1, 0]>} {
  func.func @virtual(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = tsr.relu %x {dist.stage = 3 : i64} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = 1, pp = 2]>, dist.pipeline = #dist.pipeline<micro_batches = 1, stage_devices = [0, 1, 1, 0]>} {
  func.func @virtual(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'dist.stage' is 4, but the pipeline has 4 (virtual) stages}}
    %0 = tsr.relu %x {dist.stage = 4 : i64} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 2]>} {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'dist.batch' must be a string (the annotation name of the op's batch dimension), found 3 : i64}}
    %0 = tsr.relu %x {dist.batch = 3 : i64} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 2]>} {
  // expected-error @+1 {{'dist.batch' belongs on an op in a function body, not on 'func.func'}}
  func.func @f() attributes {dist.batch = "b"} {
    return
  }
}

// -----

// Function arguments and results are checked too.
// expected-error @+1 {{'dist.stage' belongs on an op in a function body, not on argument 0 of 'func.func'}}
func.func @arg(%x: tensor<4xf32> {dist.stage = 0 : i64}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{unknown attribute 'dist.home': dist defines}}
func.func @result(%x: tensor<4xf32>) -> (tensor<4xf32> {dist.home = 1 : i64}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'dist.origin' must be a symbol reference, found "train_step"}}
func.func @origin() attributes {dist.origin = "train_step"} {
  return
}

// -----

// A place is checked before the value.
// expected-error @+1 {{'dist.weight_grad' belongs on an op in a function body, not on 'builtin.module'}}
module attributes {dist.weight_grad = true} {
}

// -----

func.func @wg(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.weight_grad' must be a unit attribute, found true}}
  %0 = tsr.relu %x {dist.weight_grad = true} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// dist.recompute (set by dist-plan from a plan file's recompute entries).
func.func @rc(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.recompute' must be a unit attribute, found "h.0"}}
  %0 = tsr.relu %x {dist.recompute = "h.0"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'dist.recompute' belongs on an op in a function body, not on argument 0 of 'func.func'}}
func.func @rc_arg(%x: tensor<4xf32> {dist.recompute}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// dist.coshard (set by dist-plan from a plan file's coshard entries).
func.func @cs(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.coshard' must be an i64 >= 2, found "2"}}
  %0 = tsr.relu %x {dist.coshard = "2"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
