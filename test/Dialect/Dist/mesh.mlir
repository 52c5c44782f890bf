// Round trip (custom and generic form) of #dist.mesh, and every error of its
// syntax and verifier.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s

// CHECK: module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 2, pp = 2]>}
module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 2, pp = 2]>} {
  // CHECK-LABEL: func.func @meshes
  // CHECK-SAME: single = #dist.mesh<[d = 1]>
  // CHECK-SAME: wide = #dist.mesh<[x_0 = 64, _y = 3]>
  func.func @meshes() attributes {
      single = #dist.mesh<[d = 1]>, wide = #dist.mesh<[x_0 = 64, _y = 3]>} {
    return
  }
}

// -----

// expected-error @+1 {{mesh axis 'tp' appears twice}}
module attributes {dist.mesh = #dist.mesh<[tp = 2, dp = 2, tp = 4]>} {}

// -----

// expected-error @+1 {{mesh axis 'dp' has size 0}}
module attributes {dist.mesh = #dist.mesh<[dp = 0, tp = 2]>} {}

// -----

// expected-error @+1 {{mesh axis 'tp' has size -2}}
module attributes {dist.mesh = #dist.mesh<[dp = 1, tp = -2]>} {}

// -----

// expected-error @+1 {{mesh needs at least one axis (one device is [d = 1])}}
module attributes {dist.mesh = #dist.mesh<[]>} {}

// -----

// expected-error @+1 {{mesh has more than 2147483647 ranks}}
module attributes {dist.mesh = #dist.mesh<[a = 65536, b = 65536]>} {}

// -----

// expected-error @+1 {{expected '='}}
module attributes {dist.mesh = #dist.mesh<[dp 2]>} {}

// -----

// expected-error @+1 {{expected integer value}}
module attributes {dist.mesh = #dist.mesh<[dp = x]>} {}

// -----

// expected-error @+1 {{expected '[' in a mesh}}
module attributes {dist.mesh = #dist.mesh<dp = 2>} {}
