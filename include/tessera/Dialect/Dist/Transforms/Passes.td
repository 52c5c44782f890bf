//===- Passes.td - dist passes ------------------------------*- tablegen -*-===//

#ifndef TESSERA_DIALECT_DIST_TRANSFORMS_PASSES_TD
#define TESSERA_DIALECT_DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistPlan : Pass<"dist-plan", "::mlir::ModuleOp"> {
  let summary = "Choose a parallel plan: op-trans, op-assign, op-order";
  let description = [{
    Annotates the training steps (functions with `tsr.train_step`) with a plan and the module
    with its mesh `dist.mesh = #dist.mesh<[dp = a, tp = b, pp = c]>` and
    `dist.pipeline = #dist.pipeline<micro_batches = m>`.

    - op-trans: `dist.split = {<annotation name> = "<axis>"}` on each op
      that is split, and `dist.batch = "<name>"` on each op carrying the
      batch (split over `dp` and over the micro-batches);
    - op-assign: `dist.stage = s` on each op when the mesh has `pp > 1`;
    - op-order: `dist.order_after = [...]` from a plan file (checked
      against the data dependencies for cycles; dist-partition emits each
      op after the ops it names).
    - activation recomputation: `dist.recompute` on the forward ops a plan
      file's `recompute` entries select (dist-recompute applies it).

    Built-in policies, by `plan`: `dp` (the batch, traced from the data
    inputs through every op by its annotation), `tp` (Megatron-style:
    attention split by heads, from the reshapes that split the hidden
    dimension into heads; the MLP column- then row-parallel, from the
    nonlinearity back to its producing matmul and forward to the matmul
    that reduces it), `pp` (stages by layer groups `<name>.<i>` in the op
    names, or in a model without them by runs of one top-level module,
    balanced by FLOPs, reported in the module's `dist.plan_report`; the backward follows the forward, parameters
    and their updates live with their first use; with `stages-per-device`
    v > 1 there are p*v virtual stages, listed by device in the module's
    `dist.pipeline`'s `stage_devices`) and any product
    (`dp2xtp2xpp2`); `auto` (the mesh, micro-batches and stage boundaries
    chosen from a cost model of the step on `device-spec` under
    `memory-gib` per device, with the measured op times of `profile-db`
    where it has them: every uniform dp x tp x pp mesh is tried, the
    planner library cuts the layer groups into stages, and the fastest plan
    that fits wins; the built-in dp, tp and pp policies then annotate it,
    with the planner's stages; `report` prints the plan and its predicted
    memory, step time and bubble to stderr; `device-spec`, `profile-db`,
    `memory-gib`, `schedule` and `report` are for auto only, and another
    plan rejects a value other than their default); or a JSON plan file (docs/plans.md),
    read strictly: an unknown key, a value of the wrong
    type or out of range, or a file that is not a regular file is an error
    naming the file and the key path. A plan file's entries select
    forward ops by op name, parameter name, layer group and kind, and the
    split follows into the views, backward ops and optimizer updates that
    serve the selected ops (an assigned op's backward ops go to its
    stage). With `zero1` the
    optimizer updates are split over `dp` (ZeRO-1); with `zero2` also the
    gradients they read, reduce-scattered into shards rather than
    all-reduced whole, with the global norm summed from the shards
    (ZeRO-2); with `zero3` also the parameters they update, which stay
    sharded between uses (ZeRO-3). An infeasible plan is an
    error naming the op and the plan entry.
  }];
  let options = [
    Option<"plan", "plan", "std::string", /*default=*/"\"dp\"",
           "dp, tp, pp, a product like dp2xtp2xpp2, auto, or a plan file "
           "(.json)">,
    Option<"devices", "devices", "int64_t", /*default=*/"1",
           "Number of devices (1 to 4096)">,
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"1",
           "Micro-batches per step (pipelines and gradient accumulation; "
           ">= 1, dp x micro-batches within int64; a plan file's "
           "micro_batches must agree unless this is 1)">,
    Option<"fixMicroBatches", "fix-micro-batches", "bool",
           /*default=*/"false",
           "micro-batches was given, even as 1: auto keeps it and a plan "
           "file's micro_batches must agree (without it, 1 is the default "
           "that auto and a plan file may change)">,
    Option<"zero1", "zero1", "bool", /*default=*/"false",
           "Shard optimizer updates and state over dp (ZeRO-1; the plan "
           "must have dp > 1, auto excepted; a plan file's \"zero1\": "
           "false contradicts it)">,
    Option<"zero2", "zero2", "bool", /*default=*/"false",
           "ZeRO-1, and gradients reduce-scattered into dp shards where "
           "their updates are split (ZeRO-2; dp > 1, auto excepted; a plan "
           "file's \"zero2\": false contradicts it)">,
    Option<"zero3", "zero3", "bool", /*default=*/"false",
           "ZeRO-1, and parameters kept sharded over dp like their updates, "
           "all-gathered before each micro-batch's forward and backward "
           "uses (ZeRO-3 / FSDP; dp > 1, auto excepted, which may shard "
           "the parameters of some stages only; a plan file's \"zero3\": "
           "false contradicts it)">,
    Option<"stagesPerDevice", "stages-per-device", "int64_t",
           /*default=*/"1",
           "Virtual pipeline stages per device (>= 1; 2 for interleaved and "
           "ZB-V)">,
    Option<"vShape", "vshape", "bool", /*default=*/"false",
           "Place virtual stages in a V (ZB-V; needs stages-per-device=2): "
           "stage s and 2p-1-s share a device; otherwise round-robin "
           "(interleaved)">,
    Option<"deviceSpec", "device-spec", "std::string", /*default=*/"\"cpu\"",
           "For auto: the device spec, h100, a100, cpu, a bundled name "
           "(h100-sxm, a100-sxm) or a JSON file (docs/planner.md)">,
    Option<"profileDb", "profile-db", "std::string", /*default=*/"\"\"",
           "For auto: a profile database (JSON, docs/planner.md) whose "
           "measured op times replace the roofline estimates of the ops "
           "they match (name, dtype and per-device operand shapes)">,
    Option<"memoryGiB", "memory-gib", "double", /*default=*/"16",
           "For auto: memory per device in GiB (a finite number > 0)">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "For auto: the pipeline schedule the plan will run (1f1b, zb-h1 or "
           "gpipe); it decides the activations a stage holds">,
    Option<"report", "report", "bool", /*default=*/"false",
           "For auto: print the chosen plan and its predictions to stderr">,
    Option<"predict", "predict", "bool", /*default=*/"false",
           "For a plan other than auto: add the auto planner's predicted "
           "step time of the plan written (on device-spec, with "
           "profile-db, memory-gib and schedule as for auto) to the "
           "module's dist.plan_report">,
  ];
  let dependentDialects = ["::tessera::dist::DistDialect"];
}

def DistCoshard : Pass<"dist-coshard", "::mlir::ModuleOp"> {
  let summary = "Run co-sharded ops in pieces of their tp piece, one after "
                "another (nnScaler's co-shard)";
  let description = [{
    Applies the co-shard that dist-plan marked with `dist.coshard = P` (a
    plan file's `coshard` entries, docs/plans.md): each marked op, split
    over `tp` along some dimension, becomes P copies that each compute one
    P-th of every rank's tp piece along that dimension, so each rank runs
    its piece in P parts one after another. Consecutive marked ops form a
    run whose copies are emitted piece by piece (all of piece 0, then all
    of piece 1, ...), and a marked op that reads a marked op's result in
    the same dimension reads the matching piece, in this run or a later
    one: the backward of piece j reads piece j's forward values. A value
    from outside enters as its pieces (a reshape that splits the dimension
    into [tp, P, rest], a slice of one index of P, a reshape back: the
    piece lies inside every rank's tp piece, so the partitioner slices
    locally), and a result read outside the marked ops leaves as the
    concatenation of its pieces (the reverse). A marked op with a result
    that does not carry the dimension (a projection that sums over it) is
    not co-sharded: it reads its operands whole. The copies keep the
    original's name, plan (`dist.split`, `dist.stage`, `dist.recompute`)
    and phase; the batch plan of the new ops is traced as dist-plan traces
    it. With activation recomputation (dist-recompute, run after this
    pass) each piece's forward is recomputed right before its backward, so
    only one piece's recomputed values are alive at a time: the memory
    saving of co-shard. Results are those of the plan without co-shard up
    to the order of float32 sums where a piece boundary splits a reduction
    (none, for heads or MLP hidden units: every sum stays within a piece).
    The module's `dist.plan_report` says how many ops run in how many
    pieces. Without tp (a mesh whose tp is 1), dist-plan marks the
    dimension tp would split as a split over `tp`: the pieces are those of
    each rank's whole op (tp = 1 in the above), and once they are made no
    split over `tp` stays. dist-plan also applies this rewrite to a copy of
    the module to predict the plan on its pieces.
  }];
  let dependentDialects = ["::tessera::dist::DistDialect"];
}

def DistRecompute : Pass<"dist-recompute", "::mlir::ModuleOp"> {
  let summary = "Recompute marked forward ops in the backward (activation "
                "recomputation)";
  let description = [{
    Applies the activation recomputation that dist-plan marked with
    `dist.recompute` on forward ops of the training steps (a plan file's
    `recompute` entries, docs/plans.md). Every backward or update use of a
    marked op's result is redirected to a copy of the op placed right
    before the first such use, computed from copies of the marked ops it
    depends on in the same layer group, so the forward result dies after
    its last forward use instead of living until the backward. A result
    that a forward op of another layer group reads is the group's
    checkpoint: it is kept, not recomputed (each group is recomputed from
    its inputs, never from an earlier group's recomputation). With
    micro-batches (`dist.pipeline`), a value computed from parameters and
    constants alone (a weight's transpose) is not copied: one copy of it
    already serves every micro-batch. Copies keep
    the original's plan (`dist.split`, `dist.batch`, `dist.stage`) and are
    marked `tsr.backward` with the original's name, so the schedule and the
    partitioner run them in the backward block of their stage and
    micro-batch; the results are bit for bit the same. The module's
    `dist.plan_report` says how many ops of which groups are recomputed.
    Without marks the pass changes nothing.
  }];
  let dependentDialects = ["::tessera::dist::DistDialect"];
}

def DistSchedule : Pass<"dist-schedule", "::mlir::ModuleOp"> {
  let summary = "Order the pipeline's micro-batch blocks";
  let description = [{
    Chooses the order in which the blocks of the planned step run: for each
    (virtual) stage and micro-batch, its forward (F), its backward for the
    inputs (B) and, for the zero-bubble schedules, its backward for the
    weights (W: the backward ops of a stage that do not lead to the gradient
    it sends to the previous stage, marked `dist.weight_grad`). The order
    comes from the schedule library (include/tessera/Schedule): a built-in
    schedule (`gpipe`, `1f1b`, `interleaved`, `zb-h1`, `zb-h2`, `zb-v`) or
    the periodic search (`search`, under `memory-limit` micro-batches of
    activations per device), with block spans from each block's FLOPs.
    It is stored with the schedule's name in the module's `dist.pipeline`
    (`schedule`, and `order`: `[stage, kind, micro-batch]` blocks, kind 0 =
    F, 1 = B, 2 = W) and `dist-partition` emits the op instances in that
    order.
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "gpipe, 1f1b, interleaved, zb-h1, zb-h2, zb-v or search">,
    Option<"memoryLimit", "memory-limit", "int64_t", /*default=*/"0",
           "For search: in-flight micro-batches per device (0..2^62; 0: 2 x "
           "stages)">,
    Option<"requirePipeline", "require-pipeline", "bool", /*default=*/"false",
           "Fail when the plan gives the schedule nothing to order (one "
           "stage and one micro-batch), or when an interleaving schedule "
           "meets a plan without a pp axis (for a schedule the user asked "
           "for)">,
  ];
  let dependentDialects = ["::tessera::dist::DistDialect"];
}

def DistPartition : Pass<"dist-partition", "::mlir::ModuleOp"> {
  let summary = "One function per rank with local shapes and communication";
  let description = [{
    Splits every planned training step (`tsr.train_step`) into per-rank
    functions `<step>_rank<r>` marked `dist.rank = r`, `dist.origin =
    @<step>` and the step's `tsr.train_step`: each op instance
    works on its local shapes (from its annotation and `dist.split`), and
    wherever a consumer needs a layout other than its producer's, the
    cheapest sequence of collectives found by the RVD search
    (lib/Layout) is inserted as dist ops carrying the chosen path in
    `dist.rvd`; values that cross pipeline stages go by dist.send /
    dist.recv. Micro-batches are a temporal axis: ops carrying the batch
    run once per micro-batch, partial values over it are summed locally
    (gradient accumulation), and the per-rank order of all op instances
    follows one global order: the blocks of `dist.pipeline`'s `order`
    (dist-schedule), or without one a built-in `gpipe` or `1f1b` from the
    schedule library; that one order keeps every rank's sends and receives
    matched. Within it an op comes after its producers and after the ops
    its `dist.order_after` names (op-order; an unknown name is an error).

    At the step boundary parameters are replicated within their stage's
    ranks, optimizer state stays in the layout its update wants (sharded
    under ZeRO-1 or tensor parallelism), data inputs arrive whole on every
    rank that needs them, and the loss is returned on every rank.

    A backward value whose micro-batch pieces are partial sums is kept as
    a running total (one piece alive at a time, the same additions in the
    same order). A widening cast of a value the batch does not reach (a
    bf16 weight's f32 copy) and a transpose or reshape of one, read only
    by each micro-batch's ops, is made again before each micro-batch's
    use rather than once for all, so that the wide copy lives across one
    micro-batch only. Gradients can also be reduced early: a complete backward
    value that a later consumer needs smaller (ZeRO-2's reduce-scatter of
    a weight gradient into its dp shard) is converted right after its
    producer, so the whole value dies there. That frees
    memory but moves the reductions and their scratch buffers into the
    backward, where activations are alive: with `reduce-early=auto` both
    orders are made and the one with the lower predicted peak
    (dist::predictPeakBytes, the largest over the ranks) is kept;
    `always` and `never` force one. The float operations are the same in
    both orders.
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "Without dist-schedule's order: gpipe or 1f1b">,
    Option<"reduceEarly", "reduce-early", "std::string",
           /*default=*/"\"auto\"",
           "Gradients reduced as soon as they are complete: always, never, "
           "or auto (the order with the lower predicted peak)">,
  ];
  let dependentDialects = ["::tessera::dist::DistDialect",
                           "::tessera::tsr::TsrDialect",
                           "::mlir::func::FuncDialect"];
}

def DistExtractRank : Pass<"dist-extract-rank", "::mlir::ModuleOp"> {
  let summary = "Keep only one rank's functions, under their step's name";
  let description = [{
    After dist-partition a module holds every rank's functions. This pass
    keeps those of `rank` (`dist.rank`, or the functions shared by the ranks
    of its class, `dist.ranks`, which stay shared), erases the others and gives each
    kept function back the name of the step it came from (`dist.origin`),
    so that each rank's program calls its steps by the same names. The
    result is what one rank's program is emitted from.
  }];
  let options = [
    Option<"rank", "rank", "int64_t", /*default=*/"0",
           "The rank to keep (below the mesh's rank count)">,
  ];
}

def DistShareRankPrograms : Pass<"dist-share-rank-programs", "::mlir::ModuleOp"> {
  let summary = "One program for the ranks whose programs differ only in rank numbers";
  let description = [{
    After dist-partition every rank has its own functions (`dist.rank`).
    Many ranks run the same ops on the same local shapes and differ only in
    the rank-dependent attributes that RankVariantOpInterface names: the
    offsets of a local slice, the group of a collective, the peer and tag of
    a send. This pass groups such ranks into classes and keeps one set of
    functions per class, so each class is compiled once: the first rank's
    functions stay, marked `dist.ranks` (the class) instead of `dist.rank`,
    and each op whose rank-variant values differ within the class records
    every rank's value in `dist.rank_values`; the other ranks' functions are
    erased. Ranks are in one class only when their functions are equal op
    by op (names, operands, types and every other attribute), so sharing
    never changes what a rank computes. A rank alone in its class is left
    as it is.
  }];
}

def DistStaticMemory : Pass<"dist-static-memory", "::mlir::ModuleOp"> {
  let summary = "Give every storage made within a step an offset in one arena";
  let description = [{
    The static memory plan of each function (issue 16, item 4). It replays
    the step in program order with the runtime's lifetimes (those of
    dist::predictPeakBytes, behind OUT/memory.json): views share their
    source's storage, a storage dies after its last use, a sent one at the
    step's end. Every storage that an op makes and that dies within the
    step (activations, gradients, received and communicated values, a
    collective's scratch buffers) gets an offset in one arena, such that
    two storages whose lifetimes meet never share a byte: largest first,
    each at the lowest free offset, aligned to 256 bytes. Arguments,
    results (parameters, optimizer state, the loss) and constants stay with
    the runtime's caching allocator.

    Each op gets its slots as `dist.arena` (offset, bytes pairs) and the
    function its arena's size as `dist.arena_bytes`; convert-tsr-to-emitc
    turns them into one `rt::StaticMemory` per step, which allocates the
    arena once, and a `place` before each op. The runtime checks each
    placement against the storages still live in the arena and falls back
    to the caching allocator (counting a conflict) rather than overlap
    them, so a plan can cost memory but never change a result.
  }];
}

#endif // TESSERA_DIALECT_DIST_TRANSFORMS_PASSES_TD
