// RUN: tessera-opt %s -split-input-file -dist-share-rank-programs -verify-diagnostics

// A module whose ranks already share functions is not shared again.
module attributes {dist.mesh = #dist.mesh<[dp = 2]>} {
  // expected-error @+1 {{dist-share-rank-programs: the ranks already share programs (dist.ranks)}}
  func.func @s_rank0() attributes {dist.ranks = array<i64: 0, 1>, dist.origin = @step} {
    return
  }
}
