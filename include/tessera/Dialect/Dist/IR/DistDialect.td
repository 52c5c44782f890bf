//===- DistDialect.td - the dist dialect --------------------*- tablegen -*-===//

#ifndef TESSERA_DIALECT_DIST_IR_DISTDIALECT_TD
#define TESSERA_DIALECT_DIST_IR_DISTDIALECT_TD

include "mlir/IR/OpBase.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::tessera::dist";
  let summary = "Tessera's parallel program: device mesh, layouts, plans and "
                "communication";
  let description = [{
    `dist` describes how a `tsr` training step runs on many devices.

    **Devices.** A `#dist.mesh` numbers N ranks over named axes (for example
    `[dp = 2, tp = 2, pp = 2]`), row-major with the last axis fastest. A
    sub-group along some axes is the set of ranks that agree on every other
    axis: on that mesh, the `tp` group of rank 5 is `[5, 7]`.

    **Layouts.** A `#dist.layout` says, for each mesh axis, how a tensor is
    held across that axis, nnScaler's RVD: `R` replicated, `V` partial
    values (the sum over the axis is the tensor), `D<k>` dimension k split.

    **Plans.** The three plan primitives are discardable attributes on `tsr`
    ops and on the module; the dialect verifies their form, the partitioner
    checks them against each op's dimension annotation:

    | attribute | on | meaning |
    |---|---|---|
    | `dist.mesh` | `builtin.module` | the `#dist.mesh` the plan runs on |
    | `dist.split` | a `tsr` op | op-trans: a dictionary from an annotation dimension name to the mesh axis it is split along, e.g. `{b = "dp", n = "tp"}`; each axis at most once; absent: the op is replicated |
    | `dist.stage` | a `tsr` op | op-assign: the pipeline stage (i64 >= 0), i.e. the slice of the mesh at that index of axis `pp`; below the size of `pp` |
    | `dist.order_after` | a `tsr` op | op-order: an array of the names (the `NameLoc` names) of ops that must run before this one |
    | `dist.rank` | `func.func` | marks a per-rank function: the rank (i64 >= 0, below the mesh's rank count) that runs it |
    | `dist.rvd` | a `dist` op | the layout transition the op implements, e.g. `"V(tp) -> R(tp)"` (for readers and tests; not interpreted) |

    Other `dist.*` discardable attribute names are rejected, so that a typo
    in a plan is a diagnostic rather than a silently ignored hint.

    **Communication.** The ops are in per-rank form: each runs on one rank,
    on that rank's local tensors, and names its group explicitly as a sorted
    list of ranks that includes the executing rank. Every rank of the group
    must execute the matching op, in the same order relative to the group's
    other communication, so communication ops have side effects on a
    communication resource: they are never erased, merged or reordered with
    each other.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Names of the discardable plan attributes (see the dialect docs).
    static ::llvm::StringRef getMeshAttrName() { return "dist.mesh"; }
    static ::llvm::StringRef getSplitAttrName() { return "dist.split"; }
    static ::llvm::StringRef getStageAttrName() { return "dist.stage"; }
    static ::llvm::StringRef getOrderAfterAttrName() {
      return "dist.order_after";
    }
    static ::llvm::StringRef getRankAttrName() { return "dist.rank"; }
    static ::llvm::StringRef getRvdAttrName() { return "dist.rvd"; }
    /// The name of the pipeline axis that dist.stage indexes.
    static ::llvm::StringRef getPipelineAxisName() { return "pp"; }

  private:
    void registerAttributes();

  public:
  }];
}

#endif // TESSERA_DIALECT_DIST_IR_DISTDIALECT_TD
