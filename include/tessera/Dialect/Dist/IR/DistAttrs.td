//===- DistAttrs.td - dist attributes -----------------------*- tablegen -*-===//
//
// The device mesh, and how a step's micro-batches flow through the pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_DIST_IR_DISTATTRS_TD
#define TESSERA_DIALECT_DIST_IR_DISTATTRS_TD

include "tessera/Dialect/Dist/IR/DistDialect.td"
include "mlir/IR/AttrTypeBase.td"

class Dist_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Dist_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Dist_MeshAttr : Dist_Attr<"Mesh", "mesh"> {
  let summary = "a mesh of ranks with ordered, named axes";
  let description = [{
    `#dist.mesh<[dp = 2, tp = 2, pp = 2]>` is 8 ranks on three axes. Axis
    names are unique identifiers and sizes are at least 1. Ranks are
    numbered row-major, the LAST axis fastest: on this mesh rank 5 has
    coordinates (dp 1, tp 0, pp 1), and ranks 4 and 5 differ only in `pp`.

    The sub-group of a rank along some axes is the set of ranks that share
    its coordinates on every other axis: above, the `tp` group of rank 5 is
    `[5, 7]`, its `dp` and `tp` group is `[1, 3, 5, 7]`.
  }];
  let parameters = (ins
    ArrayRefParameter<"::mlir::StringAttr", "axis names">:$names,
    ArrayRefParameter<"int64_t", "axis sizes">:$sizes);
  let builders = [
    AttrBuilder<(ins "::llvm::ArrayRef<::llvm::StringRef>":$names,
                     "::llvm::ArrayRef<int64_t>":$sizes), [{
      ::llvm::SmallVector<::mlir::StringAttr> attrs;
      for (::llvm::StringRef name : names)
        attrs.push_back(::mlir::StringAttr::get($_ctxt, name));
      return $_get($_ctxt, attrs, sizes);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    unsigned getNumAxes() const { return getSizes().size(); }
    /// The mesh as the plain C++ ::tessera::layout::Mesh, the one
    /// implementation of the rank arithmetic below.
    ::tessera::layout::Mesh getMesh() const;
    /// The number of ranks: the product of the axis sizes.
    int64_t numRanks() const;
    /// The position of the axis called `name`, if there is one.
    std::optional<unsigned> axisIndex(::llvm::StringRef name) const;
    /// The coordinates of `rank`, one per axis (0 <= rank < numRanks()).
    ::llvm::SmallVector<int64_t> coords(int64_t rank) const;
    /// The rank at `coords` (one in-range coordinate per axis).
    int64_t rank(::llvm::ArrayRef<int64_t> coords) const;
    /// The ranks that share `rank`'s coordinates on every axis not in
    /// `axes`, sorted; `rank` is one of them. Every name in `axes` must be
    /// an axis of the mesh.
    ::llvm::SmallVector<int64_t>
    groupOf(int64_t rank, ::llvm::ArrayRef<::llvm::StringRef> axes) const;
    /// "dp, tp, pp": the axis names, for messages.
    std::string axisList() const;
  }];
}

def Dist_PipelineAttr : Dist_Attr<"Pipeline", "pipeline"> {
  let summary = "how a training step runs its micro-batches through the "
                "pipeline stages";
  let description = [{
    One attribute, `dist.pipeline` on the module, carries what the planning
    passes decide about micro-batches, in the order they decide it:

    - `micro_batches` (dist-plan): how many micro-batches a step runs
      (>= 1);
    - `stage_devices` (dist-plan, only with several virtual stages per
      device): the `pp` coordinate of each stage, e.g. `array<i64: 0, 1, 1,
      0>` for two devices in a V; absent, stage s runs on device s;
    - `schedule` and `order` (dist-schedule): the schedule's name and the
      order of the pipeline blocks it chose, one `array<i64: stage, kind,
      micro-batch>` per block, kind 0 forward, 1 backward, 2 weight
      gradient. dist-partition emits the blocks in this order.

    ```mlir
    dist.pipeline = #dist.pipeline<micro_batches = 2, schedule = "1f1b",
        order = [array<i64: 0, 0, 0>, array<i64: 1, 0, 0>, ...]>
    ```
  }];
  let parameters = (ins
    "int64_t":$micro_batches,
    OptionalParameter<"::mlir::DenseI64ArrayAttr",
                      "the pp coordinate of each stage">:$stage_devices,
    OptionalParameter<"::mlir::StringAttr", "the schedule's name">:$schedule,
    OptionalParameter<"::mlir::ArrayAttr",
                      "[stage, kind, micro-batch] blocks">:$order);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "int64_t":$microBatches), [{
      return $_get($_ctxt, microBatches, nullptr, nullptr, nullptr);
    }]>
  ];
  let extraClassDeclaration = [{
    /// The number of pipeline stages on a mesh whose `pp` axis has size
    /// `pp`: one per device, or the length of stage_devices.
    int64_t numStages(int64_t pp) const;
    /// The `pp` coordinate of the device that runs `stage`.
    int64_t deviceOf(int64_t stage) const;
    /// This pipeline with the schedule's name and block order set.
    PipelineAttr withOrder(::mlir::StringAttr schedule,
                           ::mlir::ArrayAttr order) const;
  }];
}

#endif // TESSERA_DIALECT_DIST_IR_DISTATTRS_TD
