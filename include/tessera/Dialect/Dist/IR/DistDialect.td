//===- DistDialect.td - the dist dialect --------------------*- tablegen -*-===//

#ifndef TESSERA_DIALECT_DIST_IR_DISTDIALECT_TD
#define TESSERA_DIALECT_DIST_IR_DISTDIALECT_TD

include "mlir/IR/OpBase.td"
include "tessera/Dialect/Common/DiscardableAttrs.td"

// Every dist.* discardable attribute, in the order the verifier lists them.
defvar Dist_DiscardableAttrs = [
  TesseraDiscardableAttr<"mesh", "::mlir::Attribute", "Module", "a #dist.mesh",
    "the `#dist.mesh` the plan runs on">,
  TesseraDiscardableAttr<"split", "::mlir::DictionaryAttr", "Op",
    "a dictionary from dimension names to mesh axis names",
    "op-trans: a dictionary from an annotation dimension name to the mesh "
    "axis it is split along, e.g. `{b = \"dp\", n = \"tp\"}`; each axis at most "
    "once; absent: the op is replicated">,
  TesseraDiscardableAttr<"stage", "::mlir::IntegerAttr", "Op", "an i64",
    "op-assign: the pipeline stage (>= 0), i.e. the slice of the mesh at "
    "that index of axis `pp`; below the size of `pp` (or the number of "
    "stages of `dist.pipeline`). -1: every device (an interlaced pipeline: "
    "the op runs on all ranks, its batch split over `pp` as well as `dp`)">,
  TesseraDiscardableAttr<"order_after", "::mlir::ArrayAttr", "Op",
    "an array of op names",
    "op-order: the names (the `NameLoc` names) of ops that must run before "
    "this one">,
  TesseraDiscardableAttr<"recompute", "::mlir::UnitAttr", "Op",
    "a unit attribute",
    "a forward op whose results the backward recomputes instead of keeping "
    "them from the forward (activation recomputation; set by dist-plan from "
    "a plan file's `recompute` entries, applied and removed by "
    "dist-recompute)">,
  TesseraDiscardableAttr<"coshard", "::mlir::IntegerAttr", "Op",
    "an i64 >= 2",
    "co-shard: the op's tp piece runs in this many pieces along the "
    "dimension tp splits, one after another (set by dist-plan from a plan "
    "file's `coshard` entries, applied and removed by dist-coshard)">,
  TesseraDiscardableAttr<"rank", "::mlir::IntegerAttr", "Func", "an i64",
    "marks a per-rank function: the rank (>= 0, below the mesh's rank "
    "count) that runs it">,
  TesseraDiscardableAttr<"rvd", "::mlir::StringAttr", "Op", "a string",
    "on a `dist` op or the `tsr.slice` of a local slice: the layout "
    "transition it implements, e.g. `\"V(tp) -> R(tp)\"` (for readers and "
    "tests; not interpreted)">,
  TesseraDiscardableAttr<"batch", "::mlir::StringAttr", "Op",
    "a string (the annotation name of the op's batch dimension)",
    "the dimension of the op that micro-batches split (set by dist-plan)">,
  TesseraDiscardableAttr<"pipeline", "::mlir::Attribute", "Module",
    "a #dist.pipeline", "the micro-batches, the device of each (virtual) "
    "stage and the block order of the pipeline (set by dist-plan and "
    "dist-schedule, read by dist-partition)">,
  TesseraDiscardableAttr<"weight_grad", "::mlir::UnitAttr", "Op",
    "a unit attribute", "a backward op that computes a weight gradient, "
    "which zero-bubble schedules may run later (set by dist-schedule)">,
  TesseraDiscardableAttr<"origin", "::mlir::FlatSymbolRefAttr", "Func",
    "a symbol reference",
    "on a per-rank function: the function it was partitioned from; "
    "dist-extract-rank gives it that name back">,
  TesseraDiscardableAttr<"ranks", "::mlir::DenseI64ArrayAttr", "Func",
    "an array of i64 (sorted, unique, at least two)",
    "in place of `dist.rank`: the ranks that run this function, whose "
    "programs differ only in rank-variant attributes (set by "
    "dist-share-rank-programs); its ops' own attributes are the first "
    "rank's">,
  TesseraDiscardableAttr<"rank_values", "::mlir::DictionaryAttr", "Op",
    "a dictionary from attribute names to arrays (one value per rank)",
    "on an op of a `dist.ranks` function: for each rank-variant attribute "
    "(RankVariantOpInterface) whose value differs between those ranks, the "
    "value of each rank in the order of `dist.ranks`; the first is the op's "
    "own">,
  TesseraDiscardableAttr<"zero3", "::mlir::UnitAttr", "Arg",
    "a unit attribute",
    "on a parameter argument of the training step: the parameter is kept "
    "sharded over `dp` across steps, in the layout of its optimizer update "
    "(ZeRO-3 / FSDP); dist-partition all-gathers it before its forward uses "
    "and again before its backward uses, and the whole copy dies after each "
    "phase's last use (set by dist-plan with `zero3`)">,
  TesseraDiscardableAttr<"shard", "::mlir::ArrayAttr", "Arg",
    "an array, one per dimension, of arrays of mesh axis names",
    "on a per-rank function's parameter or optimizer-state argument that is "
    "a piece of the whole (ZeRO-1 state, ZeRO-3, tensor parallelism): for "
    "each dimension, the mesh "
    "axes that split it, in mesh order (e.g. `[[\"dp\"], [\"tp\"]]`); a "
    "rank's piece starts at its coordinates' offset, so checkpoints record "
    "where each piece lies in the whole (set by dist-partition)">,
  TesseraDiscardableAttr<"arena", "::mlir::DenseI64ArrayAttr", "Op",
    "an array of i64: (offset, bytes) pairs",
    "the slots of the step's static memory plan where the runtime places "
    "this op's allocations (its results that die within the step, a "
    "collective's scratch buffers): each allocation of exactly `bytes` "
    "takes the first free slot of that size (set by dist-static-memory)">,
  TesseraDiscardableAttr<"arena_bytes", "::mlir::IntegerAttr", "Func",
    "an i64 (>= 0)",
    "the size of the arena that the function's `dist.arena` slots lie in; "
    "the emitted step allocates it once (rt::StaticMemory) (set by "
    "dist-static-memory)">,
  TesseraDiscardableAttr<"plan_report", "::mlir::ArrayAttr", "Module",
    "an array of strings",
    "what the built-in policies decided: the weights tp split and those it "
    "kept whole, with the reason; the layer groups or module runs of each "
    "pp stage (set by dist-plan; tessera-compile prints it with the plan)">
];

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

    **Layouts.** How a tensor is held over the mesh is nnScaler's RVD, one
    entry per mesh axis: `R` replicated, `V` partial values (the sum over
    the axis is the tensor), `D<k>` dimension k split. Layouts live in the
    partitioner (lib/Layout), which also has a temporal micro-batch axis; a
    collective records the transition it implements in `dist.rvd`.

    **Plans.** The three plan primitives are discardable attributes on `tsr`
    ops: op-trans `dist.split`, op-assign `dist.stage` and op-order
    `dist.order_after` (the partitioner checks them against each op's
    dimension annotation); the passes record the rest of the plan in the
    attributes of the table at the end of this page. The dialect verifies
    every one's place and form, and rejects any other `dist.*` name, so that
    a typo in a plan is a diagnostic rather than a silently ignored hint.

    **Communication.** The ops are in per-rank form: each runs on one rank,
    on that rank's local tensors, and names its group explicitly as a sorted
    list of ranks that includes the executing rank. Every rank of the group
    must execute the matching op, in the same order relative to the group's
    other communication, so communication ops have side effects on a
    communication resource: they are never erased, merged or reordered with
    each other.

    **Discardable attributes.**
  }] # DiscardableAttrDocTable<"dist", Dist_DiscardableAttrs>.value;
  let discardableAttrs = DiscardableAttrDag<Dist_DiscardableAttrs>.value;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The name of the pipeline axis that dist.stage indexes.
    static ::llvm::StringRef getPipelineAxisName() { return "pp"; }
    /// The dist.stage of an op that runs on every device (every stage's
    /// ranks), its batch split over pp as well as dp.
    static constexpr int64_t kEveryStage = -1;

  private:
    void registerAttributes();

  public:
  }] # DiscardableAttrTable<"dist", Dist_DiscardableAttrs>.value;
}

#endif // TESSERA_DIALECT_DIST_IR_DISTDIALECT_TD
