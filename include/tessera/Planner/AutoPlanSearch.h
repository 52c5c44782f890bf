//===- AutoPlanSearch.h - The auto mesh search ------------------*- C++ -*-===//
//
// The cost model and search behind `dist-plan plan=auto`, without MLIR
// types: the pass (lib/Dialect/Dist/Transforms/AutoPlan.cpp) describes the
// training step as a layer graph (units with their ops, parameters,
// optimizer state, activations and boundary bytes); the search tries every
// uniform mesh dp x tp x pp and micro-batch count the partitioner can run,
// cuts the units into stages (exactly, or with the Piper planner) and
// returns the fastest plan that fits. The cost, planner and schedule
// libraries report errors by throwing; every entry point here catches them
// and never throws, so passes built without exceptions can call it.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_PLANNER_AUTOPLANSEARCH_H
#define TESSERA_PLANNER_AUTOPLANSEARCH_H

#include "tessera/Planner/PlanShape.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::planner::autoplan {

/// One op of the step, measured at the full batch.
struct OpCost {
  int unit = 0;
  std::string dtype = "fp32"; ///< the device spec's peak_flops key
  double flops = 0;
  double batchBytes = 0;      ///< operand and result bytes that carry the batch
  double fixedBytes = 0;      ///< the rest (weights, optimizer state)
  bool perMicroBatch = false; ///< carries the batch: runs per micro-batch
  bool tpSplit = false;       ///< Megatron splits it over tp
  /// Bytes of its (full) result that tp leaves as partial sums, all-reduced
  /// over tp; bytes of tp-split operands a replicated op gathers.
  double allReduceBytes = 0;
  double allGatherBytes = 0;
  /// Counted in the model FLOPs (MFU): a forward or backward op, as the
  /// runtime's tsr.flops_per_step counts them (not the optimizer update).
  bool modelFlops = false;
  /// The runtime makes its result a view of its operand (a reshape): no
  /// time, not even the spec's op overhead.
  bool view = false;
  /// A backward op, and the lowest unit whose backward it leads to (through
  /// backward ops; INT_MAX: none but its own). For a stage whose first
  /// unit is a, the op is part of B when reach < a (a stage before waits
  /// for it), of W otherwise, as dist-schedule splits the blocks.
  bool backward = false;
  int reach = 2147483647;
  /// For the profile database: the op's name without its dialect
  /// ("matmul") and its operands at the full batch, each with the dimension
  /// the batch splits and the one tp splits (-1: none). A plan's local
  /// shapes divide the first by dp x micro-batches when the op runs per
  /// micro-batch and the second by tp when the op is tp-split.
  struct Operand {
    std::vector<int64_t> shape;
    int batchDim = -1, tpDim = -1;
  };
  std::string op;
  std::vector<Operand> operands;
  /// Communication an interlaced plan adds over the pp axis (`ppRanks`
  /// ranks) for its ops on every device: bytes of the full tensor (at the
  /// full batch when perMicroBatch) all-gathered or all-reduced, and sent
  /// to or received from one peer (`ppSendBytes`). Such an op is that
  /// communication only (`commOnly`: no compute, no op overhead).
  double ppAllGatherBytes = 0, ppAllReduceBytes = 0, ppSendBytes = 0;
  int64_t ppRanks = 1;
  bool commOnly = false;
};

/// One layer group ("unit") of the step; bytes at the full batch.
struct Unit {
  std::string name;
  /// Parameters first used in the unit, and their optimizer state; the
  /// split part is divided by tp.
  double paramBytes = 0, paramBytesSplit = 0;
  double stateBytes = 0, stateBytesSplit = 0;
  /// Forward values the backward reads that carry the batch (kept per
  /// in-flight micro-batch), and those that do not (kept once); a kept value
  /// belongs to the unit whose backward reads it first.
  double actBytes = 0, actBytesSplit = 0;
  double actFixedBytes = 0, actFixedBytesSplit = 0;
  /// Forward values computed from parameters alone that the backward does
  /// not read (a weight's transpose). With micro-batches CSE leaves one copy
  /// for all of them, alive from the first micro-batch's forward to the
  /// last one's, so the search holds them for the step then.
  double sharedBytes = 0, sharedBytesSplit = 0;
  /// What a deferred W of the unit holds between its B and itself (zb-h1):
  /// the activations and output gradients whose last reader is a W op (one
  /// whose results lead to no backward op of an earlier unit: OpCost::reach),
  /// at the full batch.
  double weightBytes = 0, weightBytesSplit = 0;
  /// Recomputed values computed from parameters alone: dist-recompute
  /// copies them into the backward with one micro-batch, and with several
  /// leaves them (one copy serves every micro-batch), held for the step.
  double paramCopyBytes = 0, paramCopyBytesSplit = 0;
  /// The step's data inputs first read in the unit (the driver holds a
  /// replica's whole batch for the step).
  double inputBytes = 0;
  /// The largest parameter first used in the unit (the update's scratch).
  double largestParamBytes = 0;
  /// Of paramBytes and stateBytes, the parameters (whole) and their
  /// optimizer state that an interlaced plan splits over pp (a vocabulary
  /// split): evaluateInterlacedPlan keeps 1/pp of them on each device,
  /// their gradients stay pieces (not reduced over pp), and the results of
  /// the ops on every device are partial sums over pp (all-reduced where
  /// the pipeline reads them whole).
  double ppSplitParamBytes = 0, ppSplitStateBytes = 0;
  /// Parameters first used in the unit: the runtime reduces (and ZeRO-3
  /// gathers) each with a collective of its own, each paying the link's
  /// latency.
  int params = 0;
  /// The step's arguments first used in the unit (parameters, optimizer
  /// state, data inputs): the training driver hands each to the step and
  /// takes each result back, every step.
  int stepValues = 0;
  /// Under Problem::zero3: the unit's parameters stay whole over dp (their
  /// optimizer state stays sharded, as ZeRO-1's). The auto policy shards
  /// the parameters of only the stages that do not fit without; a plan's
  /// prediction reads which from the parameters' dist.zero3.
  bool paramsWhole = false;
  /// Bytes live while one of the unit's forward (backward) ops runs, beyond
  /// the parameters and state, the activations other units keep and the
  /// gradients of other units' parameters: one entry per op, from a replay
  /// of the step at the full batch (the unit's own kept activations and
  /// gradients included), split the way a plan scales them.
  struct Live {
    double batch = 0, batchSplit = 0; ///< divided by dp x micro-batches
    double fixed = 0, fixedSplit = 0; ///< not
    /// Of fixed (fixedSplit), the values of sharedBytes (sharedBytesSplit)
    /// alive at the op, which micro-batches hold for the step instead.
    double shared = 0, sharedSplit = 0;
    /// Of fixed (fixedSplit), the values of paramCopyBytes alive at the op,
    /// which micro-batches hold for the step instead.
    double paramCopy = 0, paramCopySplit = 0;
    /// Of the unit's sharedBytes (sharedBytesSplit), those whose last
    /// forward use is at or after the op: with micro-batches, what the last
    /// micro-batch's forward still holds of them there.
    double sharedAhead = 0, sharedAheadSplit = 0;
    /// The unit's own parameters the op reads: under ZeRO-3 their whole
    /// copies, gathered for the op, are alive beside the rest.
    double params = 0, paramsSplit = 0;
  };
  std::vector<Live> forwardLive, backwardLive;
};

struct Edge {
  int from = 0, to = 0;
  double bytes = 0; ///< at the full batch
};

/// A parameter that a later unit's forward reads too (a tied embedding and
/// head): a stage that holds a reader and not the owner receives it once a
/// step, keeps it through its micro-batches and sends the gradient's total
/// back at the end.
struct TiedParam {
  int owner = 0;            ///< the unit of its first forward use
  std::vector<int> readers; ///< later units whose forward reads it
  double bytes = 0;
  bool split = false; ///< divided by tp
};

struct Problem {
  std::vector<Unit> units;
  std::vector<OpCost> ops;
  std::vector<Edge> edges;
  std::vector<TiedParam> tied;
  int64_t batch = 1;
  std::vector<int64_t> tpDegrees; ///< allowed tp degrees (divide the heads)
  int64_t devices = 1;
  int64_t fixedMicroBatches = 0; ///< 0: chosen
  /// Mesh axis sizes the plan must have (a constrained plan file); 0: chosen.
  int64_t fixedDp = 0, fixedTp = 0, fixedPp = 0;
  /// A constrained plan file's assign entries: the pipeline stage each unit
  /// must be cut into, -1 where the search chooses (empty: every unit
  /// free). pp is then larger than every stage given.
  std::vector<int64_t> unitStages;
  /// A constrained plan file's assign entries with "stage": "all": the
  /// units whose ops run on every device (an interlaced pipeline), each
  /// flag per unit (empty: none). The search then plans pipelines only
  /// (pp >= 2, one stage per device) of the other units, each stage also
  /// doing 1/pp of those units' work (evaluateInterlacedPlan); the stages
  /// of its Result name the other units.
  std::vector<bool> everyDevice;
  /// A constrained plan file's trans entries over dp: the dp degrees they
  /// allow (empty: any). Those over tp narrow tpDegrees instead.
  std::vector<int64_t> dpDegrees;
  /// tpDegrees (and dpDegrees) were narrowed by trans entries: errors say so.
  bool transConstrained = false;
  /// The constraints in words ("mesh.pp = 2, micro_batches = 4"), named by
  /// the error when no plan satisfies them.
  std::string constraints;
  std::string deviceSpec = "cpu";
  double memoryBytes = 0;
  /// 1f1b, gpipe or zb-h1 (zero bubble, 1F1B's memory: each stage's
  /// backward split into B, what an earlier stage waits for, and W, the
  /// weight gradients it may run later; OpCost::reach decides which).
  std::string schedule = "1f1b";
  bool zero1 = false;
  /// ZeRO-2 where dp > 1: each gradient reduce-scattered into dp shards
  /// once complete (implies zero1): held whole only while a step's
  /// micro-batches add into it.
  bool zero2 = false;
  /// ZeRO-3 where dp > 1: parameters sharded over dp like the optimizer
  /// state (implies zero1), each gathered whole while its op runs.
  bool zero3 = false;
  std::string mainDtype = "fp32";
  /// The model FLOPs of a step for the reported MFU: tsr-optimizer's
  /// tsr.flops_per_step, the count the runtime's MFU uses; 0 (a module
  /// without it) sums the ops' modelFlops.
  double modelFlopsPerStep = 0;
  /// A profile database file (docs/planner.md), "" for none: a measured
  /// time for an op's name, dtype and local operand shapes replaces its
  /// roofline estimate (collectives are still added).
  std::string profileDatabase;
  /// Cut the units into stages exactly (a dynamic program on the step time)
  /// where that is cheap, else with the planner library (Piper's objective,
  /// the slowest stage, which can miss the best step time: within 10.9 % on
  /// the unit test's random instances). false: always the planner.
  bool exactCuts = true;
};

struct StagePrediction {
  size_t firstUnit = 0, lastUnit = 0;
  int inFlight = 1;
  double memoryBytes = 0;
  double microSeconds = 0; ///< forward + backward of one micro-batch
  double stepSeconds = 0;  ///< once per step: updates, dp gradient sync
  /// The parts of the two that are the stage's own ops (the rest is
  /// communication): what ranks sharing compute slots slow down.
  double microCompute = 0, stepCompute = 0;
  /// Of microSeconds, the forward ops' time, the W block's (the weight
  /// gradients no earlier stage waits for; the rest of the backward is B)
  /// and the sends and receives between stages (with the start of the F
  /// and B blocks after their receives, DeviceSpec::blockStart).
  double microForward = 0, microWeight = 0, microSends = 0;
};

/// A feasible plan the search scored, by the closed-form step time it ranks
/// candidates by.
struct Candidate {
  PlanShape shape;
  double stepSeconds = 0;
};

struct Result {
  std::string error; ///< non-empty: no plan
  /// With an error because nothing fits: the least per-device memory any
  /// plan needs (bytes); 0 otherwise.
  double leastBytes = 0;
  std::string specName;
  /// The chosen plan; its stageStarts are those of `stages` (one per stage,
  /// {0} when pp = 1).
  PlanShape shape;
  std::vector<StagePrediction> stages;
  double stepSeconds = 0;
  double bubble = 0; ///< idle fraction of the schedule (schedule library)
  /// Of stepSeconds, the wait for compute slots when more ranks compute at
  /// once than a node has (DeviceSpec::computeSlots): 0 without sharing.
  double sharedComputeSeconds = 0;
  /// Of stepSeconds, the driver's time per step outside the step function
  /// (the profile database's "driver" entry, with the step report's gather
  /// when several ranks run): 0 without that entry.
  double driverSeconds = 0;
  double modelFlops = 0;
  double mfu = 0;
  double cpuSeconds = 0;
  size_t candidates = 0, feasible = 0, plannerCalls = 0;
  /// Ops of the step whose time under the chosen plan came from the profile
  /// database, of the ops priced (views and communication aside; an op on
  /// every device of an interlaced plan once per stage).
  size_t profiledOps = 0, pricedOps = 0;
  std::vector<Candidate> runnersUp; ///< the next best feasible plans
};

/// Never throws; errors come back in Result::error.
Result searchAutoPlan(const Problem &problem) noexcept;

/// The search's cost and memory model applied to one plan. (Not Piper's
/// planner::PlanEvaluation: that one scores per-sample time of stages with
/// their own degrees; this one the step time of a uniform mesh.)
struct StepEvaluation {
  std::string error; ///< non-empty: the shape is malformed
  bool fits = false; ///< every stage fits in Problem::memoryBytes
  std::vector<StagePrediction> stages;
  /// The step time searchAutoPlan reports for this plan (the schedule
  /// library's fill and drain when pp > 1), and the closed form
  /// (m + pp - 1) * slowest micro + slowest step it ranks candidates by.
  double stepSeconds = 0, closedFormSeconds = 0;
  double bubble = 0;
  double sharedComputeSeconds = 0; ///< as in Result
  double driverSeconds = 0;        ///< as in Result
  size_t profiledOps = 0, pricedOps = 0; ///< as in Result
};

/// Evaluates one fully specified plan: `shape.stageStarts` must hold the
/// first unit of each of the pp stages, ascending from 0. Does not check
/// that the mesh is one the search would try. Never throws.
StepEvaluation evaluatePlan(const Problem &problem,
                            const PlanShape &shape) noexcept;

/// Evaluates a plan with several virtual stages per device (interleaved
/// 1F1B, ZB-V): `shape.pp` is the number of virtual stages and
/// `shape.stageStarts` their first units; `stageDevices` gives each virtual
/// stage's device (0 .. devices - 1). The blocks run in the order the
/// schedule library gives `problem.schedule` (as dist-schedule takes it),
/// replayed with each virtual stage's own times (a device's blocks one
/// after another), plus each device's once-per-step work, and each
/// device's memory is
/// replayed along the order (its virtual stages' kept activations per
/// micro-batch in flight, their gradients once one backward ran, the sends
/// so far, the deferred W's). stages[i].memoryBytes is the peak of virtual
/// stage i's device.
StepEvaluation
evaluateVirtualPlan(const Problem &problem, const PlanShape &shape,
                    const std::vector<int64_t> &stageDevices) noexcept;

/// Evaluates an interlaced pipeline: the units `everyDevice` marks run on
/// every device (dist.stage = -1: the embedding and the head), each
/// micro-batch's piece split further over pp, and the others are cut into
/// the pp stages `shape.stageStarts` gives (their first units, ascending;
/// none on every device). Each stage also does 1/pp of every micro-batch's
/// work of those units and holds their parameters, optimizer state and
/// gradients whole, and 1/pp of their kept activations per micro-batch in
/// flight (their peak beside its own), and the communication over pp that
/// dist-partition adds: per micro-batch, what the pipeline reads from those
/// units all-gathered over pp (all-reduced, a partial sum, when some of
/// their parameters are split over pp: Unit::ppSplitParamBytes) and its
/// gradient sent from the reading stage to every other device; what they read
/// from the pipeline sent to every device and its gradient all-gathered
/// (all-reduced); once a step their weight gradients all-reduced over pp,
/// but the pieces of a split (each device holds 1/pp of those). With
/// `stageDevices` (virtual stages, as evaluateVirtualPlan takes them) each
/// virtual stage does 1/shape.pp of that work and the first stage of each
/// device holds the parameters.
StepEvaluation
evaluateInterlacedPlan(const Problem &problem, const PlanShape &shape,
                       const std::vector<bool> &everyDevice,
                       const std::vector<int64_t> &stageDevices = {}) noexcept;

/// A plan whose stages each take their own variant of the step (a memory
/// saver on some stages only: recomputation, ZeRO-3).
struct MixedPlan {
  std::string error; ///< non-empty: no cut fits in any mix
  PlanShape shape;
  /// The variant each unit takes (the one of its stage).
  std::vector<int> unitVariant;
  /// The variants' units and ops mixed by unitVariant.
  Problem problem;
  StepEvaluation evaluation;
};

/// For `shape`'s mesh and micro-batches (pp >= 1 contiguous stages; not
/// virtual ones: an interleaved or zb-v schedule is an error), the fastest
/// plan that fits in which each stage takes one
/// of `variants`: the same step, unit for unit, with different units and
/// ops (e.g. as is and with its activations recomputed). Each cut of the
/// units into shape.pp stages that the variants' unitStages pins allow
/// (every cut when there are at most 2000, else shape's own) takes for
/// each stage the fastest variant in which the stage fits (a stage's
/// memory depends on its own units only, and a slower stage never shortens
/// the step), and the fastest mix that fits is kept. Never throws.
MixedPlan searchMixedStages(const std::vector<Problem> &variants,
                            const PlanShape &shape) noexcept;

/// Resolves "h100" / "a100" / "cpu" / a bundled name / a file; "" when it
/// loads, else the error.
std::string checkDeviceSpec(const std::string &nameOrPath) noexcept;

/// The peak FLOP/s of the spec (resolved as checkDeviceSpec does) for
/// `dtype` ("fp32", "tf32", ...); nullopt with `error` set when the spec
/// does not load or lacks the type. Never throws.
std::optional<double> devicePeakFlops(const std::string &nameOrPath,
                                      const std::string &dtype,
                                      std::string &error) noexcept;

} // namespace tessera::planner::autoplan

#endif // TESSERA_PLANNER_AUTOPLANSEARCH_H
