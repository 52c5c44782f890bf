//===- TrainPipeline.cpp - forward graph to per-rank training steps -------===//

#include "tessera/Pipelines/TrainPipeline.h"

#include "tessera/Dialect/Dist/Transforms/Passes.h"
#include "tessera/Dialect/Dist/Transforms/PlanFile.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"
#include "tessera/Support/InputFile.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <cmath>

using namespace mlir;

namespace tessera {

/// Whether a built-in policy name splits over tp on `devices` devices.
static bool policyNamesTensorParallel(llvm::StringRef policy, int64_t devices) {
  if (policy == "tp")
    return devices > 1;
  llvm::SmallVector<llvm::StringRef> parts;
  policy.split(parts, 'x');
  for (llvm::StringRef part : parts) {
    int64_t n = 0;
    if (part.consume_front("tp") && !part.getAsInteger(10, n) && n > 1)
      return true;
  }
  return false;
}

bool TrainPipelineOptions::namesTensorParallel() const {
  if (!llvm::StringRef(plan).ends_with(".json"))
    return policyNamesTensorParallel(plan, devices);
  // A plan file names tp by its policy, its mesh, (a constrained auto
  // plan) a split over tp, or co-shard entries; one that does not read is
  // dist-plan's error.
  std::string error;
  std::optional<dist::PlanFile> file = dist::readPlanFile(plan, error);
  if (!file)
    return false;
  // Co-shard cuts ops along Megatron's dimensions, with tp or without.
  if (!file->coshard.empty())
    return true;
  if (file->policy && *file->policy != "auto")
    return policyNamesTensorParallel(*file->policy, devices);
  if (file->mesh && file->mesh->tp > 1)
    return true;
  for (const dist::PlanFile::Trans &t : file->trans)
    for (const auto &[dim, axis] : t.split)
      if (axis == "tp")
        return true;
  return false;
}

bool TrainPipelineOptions::searchesPlan() const {
  if (!llvm::StringRef(plan).ends_with(".json"))
    return autoPlan();
  std::string error;
  std::optional<dist::PlanFile> file = dist::readPlanFile(plan, error);
  return !file || (file->policy && *file->policy == "auto");
}

LogicalResult
buildTrainPipeline(OpPassManager &pm, const TrainPipelineOptions &o,
                   llvm::function_ref<void(const llvm::Twine &)> error) {
  if (o.devices < 1 || o.devices > support::kMaxDevices)
    return error("devices must be in [1, " + Twine(support::kMaxDevices) +
                 "], got " + Twine(int64_t(o.devices))),
           failure();
  if (o.microBatches < 1)
    return error("micro-batches must be >= 1, got " +
                 Twine(int64_t(o.microBatches))),
           failure();
  // The norm is computed in f32.
  if (!std::isfinite(static_cast<float>(o.clipNorm)) || o.clipNorm < 0)
    return error("clip-norm must be a finite number >= 0 (0: off)"), failure();
  // The auto-only options are errors with another plan, not ignored
  // (predict uses the device spec).
  if (!o.mayBeAuto()) {
    StringRef given =
        o.deviceSpec.hasValue() && !o.predict  ? o.deviceSpec.getArgStr()
        : o.profileDb.hasValue() && !o.predict ? o.profileDb.getArgStr()
        : o.memoryGiB.hasValue()               ? o.memoryGiB.getArgStr()
        : o.report.hasValue()                  ? o.report.getArgStr()
                                               : StringRef();
    if (!given.empty())
      return error(given + " applies only with plan=auto"), failure();
  }
  if (o.precision != "fp32" && o.precision != "bf16")
    return error("precision must be fp32 or bf16, got '" + o.precision + "'"),
           failure();
  if (o.rank >= 0 && !o.distributed())
    return error("rank applies only with devices > 1 or micro-batches > 1"),
           failure();

  // Extension ops for the subgraphs they replace, then the training steps.
  if (o.raise)
    pm.addPass(tsr::createTsrRaise());
  // Heads merged into the batch as a dimension of their own, and fused
  // projections (QKV) as one per piece, so that tp splits them.
  if (o.namesTensorParallel()) {
    pm.addPass(tsr::createTsrUnmergeDims());
    pm.addPass(tsr::createTsrSplitFusedProjections());
  }
  // bf16 storage as casts around the forward's f32 ops; the backward
  // follows from them.
  if (o.precision == "bf16")
    pm.addPass(tsr::createTsrMixedPrecision());
  pm.addPass(tsr::createTsrAutodiff());
  // Split means must divide by the global count (see tsr-decompose-means).
  if (o.distributed())
    pm.addPass(tsr::createTsrDecomposeMeans());
  for (const char *optimizer : kTrainOptimizers) {
    tsr::TsrOptimizerOptions opt;
    opt.optimizer = optimizer;
    opt.clipNorm = o.clipNorm;
    pm.addPass(tsr::createTsrOptimizer(opt));
  }
  // One device also exports its gradient function (--dump-grads).
  if (!o.distributed())
    pm.addPass(tsr::createTsrExportGradStep());
  // Only the steps remain public; the rest is inlined into them.
  pm.addPass(tsr::createTsrInternalize());
  pm.addPass(createInlinerPass());
  pm.addPass(createSymbolDCEPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // After the last CSE, which would merge the copies again.
  if (o.precision == "bf16")
    pm.addPass(tsr::createTsrWidenAtUse());
  if (!o.distributed())
    return success();

  // The parallel plan and the per-rank functions.
  dist::DistPlanOptions plan;
  plan.plan = o.plan;
  plan.devices = o.devices;
  plan.microBatches = o.microBatches;
  plan.fixMicroBatches = o.fixMicroBatches;
  plan.zero1 = o.zero1;
  plan.zero2 = o.zero2;
  plan.zero3 = o.zero3;
  // dist-plan rejects its auto-only options with any other plan, unless
  // it predicts that plan's step time with them.
  if (o.mayBeAuto()) {
    plan.deviceSpec = o.deviceSpec;
    plan.profileDb = o.profileDb;
    plan.memoryGiB = o.memoryGiB;
    plan.schedule = o.schedule;
    plan.report = o.report;
    plan.predict = o.predict && !o.autoPlan();
  } else if (o.predict) {
    plan.predict = true;
    plan.deviceSpec = o.deviceSpec;
    plan.profileDb = o.profileDb;
    plan.schedule = o.schedule;
  }
  // Interleaved 1F1B and ZB-V run two virtual stages per device.
  if (o.schedule == "interleaved" || o.schedule == "zb-v")
    plan.stagesPerDevice = 2;
  plan.vShape = o.schedule == "zb-v";
  pm.addPass(dist::createDistPlan(plan));
  // A plan's co-shard, before recomputation copies the pieces' forward.
  pm.addPass(dist::createDistCoshard());
  // A plan's activation recomputation, before the schedule weighs the
  // blocks' work.
  pm.addPass(dist::createDistRecompute());
  dist::DistScheduleOptions schedule;
  schedule.schedule = o.schedule;
  // The auto search weighs the schedule in its choice, so there it always
  // applies; a plan file that fixes the plan must have something for a
  // schedule given to order, as a built-in plan must.
  schedule.requirePipeline = o.requirePipeline && !o.searchesPlan();
  pm.addPass(dist::createDistSchedule(schedule));
  dist::DistPartitionOptions partition;
  partition.reduceEarly = o.reduceEarly;
  pm.addPass(dist::createDistPartition(partition));
  pm.addPass(createCanonicalizerPass());
  if (o.shareRanks)
    pm.addPass(dist::createDistShareRankPrograms());
  if (o.rank >= 0) {
    dist::DistExtractRankOptions extract;
    extract.rank = o.rank;
    pm.addPass(dist::createDistExtractRank(extract));
  }
  return success();
}

void registerTrainPipeline() {
  registerPassPipeline(
      "tessera-train-pipeline",
      "The training pipeline of tessera-compile: autodiff, the adamw and sgd "
      "steps, clean-up and, with devices > 1 or micro-batches > 1, plan, "
      "schedule, partition and sharing of equal rank programs (and with "
      "rank=R, that rank's functions)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        TrainPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        LogicalResult result = success();
        if (failed(buildTrainPipeline(pm, options, [&](const Twine &why) {
              result = errorHandler("tessera-train-pipeline: " + why);
            })))
          return failure();
        return result;
      },
      [](function_ref<void(const detail::PassOptions &)> handler) {
        handler(TrainPipelineOptions());
      });
}

} // namespace tessera
