// RUN: tessera-opt %s -split-input-file -dist-extract-rank=rank=1 -verify-diagnostics | FileCheck %s

// Rank 1's functions stay, under the names of the steps they came from
// (dist.origin); the other ranks' functions go; functions without a rank
// (private helpers) stay.
// CHECK-LABEL: module attributes {dist.mesh
// CHECK-NOT: @s_rank
// CHECK: func.func @train_step_sgd() attributes {dist.rank = 1 : i64, tsr.train_step = "sgd"}
// CHECK: func.func @train_step_adamw() attributes {dist.rank = 1 : i64, tsr.train_step = "adamw"}
// CHECK: func.func private @helper
// CHECK-NOT: func.func
module attributes {dist.mesh = #dist.mesh<[dp = 2]>} {
  func.func @s_rank0() attributes {dist.rank = 0 : i64, dist.origin = @train_step_sgd, tsr.train_step = "sgd"} {
    return
  }
  func.func @s_rank1() attributes {dist.rank = 1 : i64, dist.origin = @train_step_sgd, tsr.train_step = "sgd"} {
    return
  }
  func.func @a_rank0() attributes {dist.rank = 0 : i64, dist.origin = @train_step_adamw, tsr.train_step = "adamw"} {
    return
  }
  func.func @a_rank1() attributes {dist.rank = 1 : i64, dist.origin = @train_step_adamw, tsr.train_step = "adamw"} {
    return
  }
  func.func private @helper() {
    return
  }
}

// -----

// expected-error @+1 {{dist-extract-rank: rank 1 is not a rank of #dist.mesh<[dp = 1]> (0..0)}}
module attributes {dist.mesh = #dist.mesh<[dp = 1]>} {
}

// -----

// expected-error @+1 {{dist-extract-rank: the module has no dist.mesh (run dist-plan and dist-partition first)}}
module {
}

// -----

// expected-error @+1 {{dist-extract-rank: no function has dist.rank = 1 (run dist-partition first)}}
module attributes {dist.mesh = #dist.mesh<[dp = 2]>} {
  func.func @train_step_sgd() {
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<[dp = 2]>} {
  // expected-error @+1 {{dist-extract-rank: 'train_step_sgd' exists beside its per-rank functions}}
  func.func @train_step_sgd() {
    return
  }
  func.func @s_rank1() attributes {dist.rank = 1 : i64, dist.origin = @train_step_sgd} {
    return
  }
}
