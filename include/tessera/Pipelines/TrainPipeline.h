//===- TrainPipeline.h - forward graph to per-rank training steps -*- C++
//-*-===//
//
// The pass pipeline tessera-compile runs between the ONNX import and the
// emission of C++: autodiff, the optimizer steps, clean-up, and for a
// distributed run the plan, the pipeline schedule and the partition into
// per-rank functions. Registered as `tessera-train-pipeline`, so
//
//   tessera-opt OUT/model.mlir \
//     --tessera-train-pipeline="devices=8 plan=dp2xtp2xpp2 micro-batches=2
//     rank=5"
//
// prints exactly the IR tessera-compile emits rank 5's program from.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_PIPELINES_TRAINPIPELINE_H
#define TESSERA_PIPELINES_TRAINPIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace tessera {

struct TrainPipelineOptions
    : public mlir::PassPipelineOptions<TrainPipelineOptions> {
  Option<int64_t> devices{*this, "devices",
                          llvm::cl::desc("Number of devices (1 to 4096)"),
                          llvm::cl::init(1)};
  Option<int64_t> microBatches{
      *this, "micro-batches",
      llvm::cl::desc("Micro-batches per step (>= 1): pipeline micro-batches, "
                     "or gradient accumulation on one device"),
      llvm::cl::init(1)};
  Option<bool> fixMicroBatches{
      *this, "fix-micro-batches",
      llvm::cl::desc("micro-batches was given (even as 1): --plan auto keeps "
                     "it"),
      llvm::cl::init(false)};
  Option<std::string> plan{
      *this, "plan",
      llvm::cl::desc("dp, tp, pp, a product like dp2xtp2xpp2, auto, or a "
                     "plan file (.json); see docs/plans.md"),
      llvm::cl::init("dp")};
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("Pipeline schedule: 1f1b, gpipe, interleaved, zb-h1, "
                     "zb-h2, zb-v or search"),
      llvm::cl::init("1f1b")};
  Option<bool> requirePipeline{
      *this, "require-pipeline",
      llvm::cl::desc("The schedule was asked for: fail when the plan gives it "
                     "nothing to order (not with plan=auto)"),
      llvm::cl::init(false)};
  Option<bool> zero1{*this, "zero1",
                     llvm::cl::desc("Shard optimizer state over dp (ZeRO-1)"),
                     llvm::cl::init(false)};
  Option<bool> zero2{
      *this, "zero2",
      llvm::cl::desc("Shard reduced gradients and optimizer state over dp "
                     "(ZeRO-2)"),
      llvm::cl::init(false)};
  Option<bool> zero3{
      *this, "zero3",
      llvm::cl::desc("Shard parameters, gradients' updates and optimizer "
                     "state over dp (ZeRO-3 / FSDP)"),
      llvm::cl::init(false)};
  Option<std::string> reduceEarly{
      *this, "reduce-early",
      llvm::cl::desc("dist-partition's reduce-early: auto, always or never"),
      llvm::cl::init("auto")};
  Option<double> clipNorm{
      *this, "clip-norm",
      llvm::cl::desc("Clip gradients to this global norm (0: off)"),
      llvm::cl::init(0.0)};
  Option<std::string> deviceSpec{
      *this, "device-spec",
      llvm::cl::desc("For plan=auto: h100, a100, cpu or a spec file"),
      llvm::cl::init("cpu")};
  Option<std::string> profileDb{
      *this, "profile-db",
      llvm::cl::desc(
          "For plan=auto and predict: a profile database of measured op times "
          "(JSON, docs/planner.md)"),
      llvm::cl::init("")};
  Option<double> memoryGiB{
      *this, "memory-gib",
      llvm::cl::desc("For plan=auto: memory per device in GiB"),
      llvm::cl::init(16.0)};
  Option<bool> report{
      *this, "report",
      llvm::cl::desc("For plan=auto: print the chosen plan to stderr"),
      llvm::cl::init(false)};
  Option<bool> predict{
      *this, "predict",
      llvm::cl::desc("For a plan other than auto: the auto planner's "
                     "predicted step time of the plan on device-spec, in "
                     "dist.plan_report"),
      llvm::cl::init(false)};
  Option<bool> shareRanks{
      *this, "share-ranks",
      llvm::cl::desc("Ranks whose functions differ only in rank numbers "
                     "share one set (dist-share-rank-programs)"),
      llvm::cl::init(true)};
  Option<bool> raise{
      *this, "raise",
      llvm::cl::desc("Raise imported subgraphs into the ops of extension "
                     "dialects (tsr-raise) before autodiff"),
      llvm::cl::init(true)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("fp32, or bf16: bf16 weights, activations and "
                     "gradients between f32 computations, f32 master "
                     "weights, optimizer state and loss "
                     "(tsr-mixed-precision)"),
      llvm::cl::init("fp32")};
  Option<int64_t> rank{
      *this, "rank",
      llvm::cl::desc("Keep only this rank's functions, under their steps' "
                     "names (dist-extract-rank; -1: all ranks)"),
      llvm::cl::init(-1)};

  /// One device and one micro-batch need no plan, unless a plan file asks
  /// for one (recomputation or co-shard on one device).
  bool distributed() const {
    return devices > 1 || microBatches > 1 ||
           llvm::StringRef(plan).ends_with(".json");
  }
  bool autoPlan() const { return plan == "auto"; }
  /// A plan the auto search may choose: auto, or a plan file (whose policy
  /// may be auto; dist-plan checks the auto-only options once it has read
  /// the file).
  bool mayBeAuto() const {
    return autoPlan() || llvm::StringRef(plan).ends_with(".json");
  }
  /// Whether the auto search chooses the plan: auto, or a plan file whose
  /// policy is auto (a file that does not read counts: dist-plan reports
  /// it).
  bool searchesPlan() const;
  /// Whether the plan names tensor parallelism over several ranks: `tp`
  /// with devices > 1, a product with a tp factor above 1, or a plan file
  /// whose policy does, whose mesh has tp > 1 or whose trans entries split
  /// over tp (not plain auto, whose tp is decided later).
  bool namesTensorParallel() const;
};

/// The optimizers whose steps every program carries, in emission order.
inline constexpr const char *kTrainOptimizers[] = {"adamw", "sgd"};

/// Checks `options` (calling `error` with the reason) and adds the pipeline
/// to `pm`, which must be nested on builtin.module.
mlir::LogicalResult
buildTrainPipeline(mlir::OpPassManager &pm, const TrainPipelineOptions &options,
                   llvm::function_ref<void(const llvm::Twine &)> error);

/// Registers `tessera-train-pipeline` (for tessera-opt).
void registerTrainPipeline();

} // namespace tessera

#endif // TESSERA_PIPELINES_TRAINPIPELINE_H
