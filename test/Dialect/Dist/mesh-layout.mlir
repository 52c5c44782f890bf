// Round trip (custom and generic form) of #dist.mesh and #dist.layout, and
// every error of their syntax and verifiers. (A layout's fit to a mesh and a
// shape is LayoutAttr::verify, tested in unittests/Dist.)
// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s

// CHECK: module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 2, pp = 2]>}
module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 2, pp = 2]>} {
  // CHECK-LABEL: func.func @layouts
  // CHECK-SAME: a = #dist.layout<[D0, V, R]>
  // CHECK-SAME: b = #dist.layout<[D1, D1, R]>
  // CHECK-SAME: c = #dist.layout<[R, R, D12]>
  // CHECK-SAME: single = #dist.mesh<[d = 1]>
  // CHECK-SAME: wide = #dist.mesh<[x_0 = 64, _y = 3]>
  func.func @layouts() attributes {
      a = #dist.layout<[D0, V, R]>, b = #dist.layout<[D1, D1, R]>,
      c = #dist.layout<[ R , R , D12 ]>,
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

// -----

// expected-error @+1 {{expected R, V or D<dim> (D0, D1, ...) in a layout}}
func.func private @f() attributes {l = #dist.layout<[R, S]>}

// -----

// expected-error @+1 {{expected R, V or D<dim> (D0, D1, ...) in a layout}}
func.func private @f() attributes {l = #dist.layout<[D]>}

// -----

// expected-error @+1 {{expected R, V or D<dim> (D0, D1, ...) in a layout}}
func.func private @f() attributes {l = #dist.layout<[Dx]>}

// -----

// expected-error @+1 {{expected ']' in a layout}}
func.func private @f() attributes {l = #dist.layout<[R V]>}
