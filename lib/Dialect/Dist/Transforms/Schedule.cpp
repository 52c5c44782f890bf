//===- Schedule.cpp - order the pipeline's micro-batch blocks -------------===//
//
// The blocks of a planned step are its (virtual) stages' forward (F),
// backward for the inputs (B) and, for the zero-bubble schedules, backward
// for the weights (W) on each micro-batch. B of a stage is what the
// previous stage waits for: the backward ops that lead to a value sent to
// an earlier stage; the rest of the stage's backward (weight gradients) is
// W and may run later. The order comes from the schedule library, with
// spans from the blocks' FLOPs.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Dist/IR/DistAttrs.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Dist/Transforms/Passes.h"
#include "tessera/Dialect/Tsr/Analysis/OpMetrics.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Interfaces/CostInterface.h"
#include "tessera/Schedule/PipelineOrder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"

#include <cmath>
#include <limits>

namespace tessera::dist {
#define GEN_PASS_DEF_DISTSCHEDULE
#include "tessera/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace tessera::dist

using namespace mlir;
using namespace tessera;
using namespace tessera::dist;

namespace {

int64_t stageOf(Operation *op) {
  auto s = getAttr<Dist::StageAttrHelper>(op);
  return s ? s.getInt() : 0;
}

struct DistSchedulePass
    : public dist::impl::DistScheduleBase<DistSchedulePass> {
  using DistScheduleBase::DistScheduleBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    MeshAttr mesh = requireMesh(module, "dist-schedule");
    if (!mesh)
      return signalPassFailure();
    int64_t pp = 1;
    if (auto axis = mesh.axisIndex("pp"))
      pp = mesh.getSizes()[*axis];
    PipelineAttr pipeline = getEnclosingPipeline(module);
    if (!pipeline)
      pipeline = PipelineAttr::get(ctx, 1);
    int64_t micro = pipeline.getMicroBatches();
    // The schedule library counts micro-batches in int.
    if (micro > std::numeric_limits<int>::max()) {
      module.emitError("dist-schedule: the pipeline's micro_batches must be "
                       "in [1, ")
          << std::numeric_limits<int>::max() << "], got " << micro;
      return signalPassFailure();
    }
    // A schedule the user chose must have something to order.
    bool interleaving = schedule == "interleaved" || schedule == "zb-v";
    if (requirePipeline && pp == 1 && (micro == 1 || interleaving)) {
      if (micro == 1)
        module.emitError("dist-schedule: schedule ")
            << schedule
            << " orders micro-batches through pipeline stages, but the plan "
               "has one stage and one micro-batch";
      else
        module.emitError("dist-schedule: schedule ")
            << schedule
            << " interleaves virtual pipeline stages, but the plan has one "
               "stage (pp = 1)";
      return signalPassFailure();
    }
    // The search explains an infeasible limit by probing limit + 1, so the
    // limit stays well inside int64_t (as tessera-schedule's --memory).
    constexpr int64_t maxLimit = int64_t(1) << 62;
    if (memoryLimit < 0 || memoryLimit > maxLimit) {
      module.emitError("dist-schedule: memory-limit must be in [0, ")
          << maxLimit << "] (0: 2 x stages), got " << int64_t(memoryLimit);
      return signalPassFailure();
    }
    int64_t stages = pipeline.numStages(pp);
    bool vShape = stages == 2 * pp && pp > 1 && pipeline.deviceOf(pp) == pp - 1;
    bool zeroBubble = StringRef(schedule).starts_with("zb");
    bool splitW = zeroBubble || schedule == "search";

    // F, B and W FLOPs per stage (over every training step), and the W
    // marks.
    std::vector<double> f(stages, 0), bw(stages, 0), w(stages, 0);
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (!hasAttr<Tsr::TrainStepAttrHelper>(fn))
        continue;
      Block &body = fn.getBody().front();
      // B: backward ops that lead to a value consumed on an earlier stage.
      llvm::DenseSet<Operation *> inB;
      SmallVector<Operation *> work;
      for (Operation &op : body) {
        if (!hasAttr<Tsr::BackwardAttrHelper>(&op))
          continue;
        for (Value r : op.getResults())
          for (Operation *user : r.getUsers())
            if (hasAttr<Dist::StageAttrHelper>(user) &&
                stageOf(user) < stageOf(&op))
              work.push_back(&op);
      }
      while (!work.empty()) {
        Operation *op = work.pop_back_val();
        if (!inB.insert(op).second)
          continue;
        for (Value v : op->getOperands())
          if (Operation *d = v.getDefiningOp())
            if (hasAttr<Tsr::BackwardAttrHelper>(d) &&
                stageOf(d) == stageOf(op))
              work.push_back(d);
      }
      for (Operation &op : body) {
        if (isa<func::ReturnOp>(op))
          continue;
        int64_t s = stageOf(&op);
        if (s >= stages)
          continue;
        removeAttr<Dist::WeightGradAttrHelper>(&op);
        // An op on every device (interlaced) does a share of its work in
        // each stage's span; it runs where its inputs are ready and is
        // never a W block's.
        bool every = s == DistDialect::kEveryStage;
        auto add = [&](std::vector<double> &spans) {
          double x = tessera::flopsOf(&op);
          if (!every)
            spans[s] += x;
          else
            for (double &y : spans)
              y += x / double(spans.size());
        };
        if (!hasAttr<Tsr::BackwardAttrHelper>(&op)) {
          if (!hasAttr<Tsr::UpdateAttrHelper>(&op))
            add(f);
        } else if (splitW && !every && !inB.contains(&op)) {
          op.setAttr(Dist::WeightGradAttrHelper::getNameStr(),
                     UnitAttr::get(ctx));
          add(w);
        } else {
          add(bw);
        }
      }
    }
    // Integer spans relative to the smallest forward block.
    double unit = std::numeric_limits<double>::infinity();
    for (double x : f)
      if (x > 0)
        unit = std::min(unit, x);
    if (!std::isfinite(unit))
      unit = 1;
    auto span = [&](double x) {
      return std::max<int64_t>(1, std::min<int64_t>(8, std::llround(x / unit)));
    };
    double fMax = *std::max_element(f.begin(), f.end());
    double bMax = *std::max_element(bw.begin(), bw.end());
    double wMax = *std::max_element(w.begin(), w.end());
    schedule::PipelineSpec spec;
    spec.stages = pp;
    spec.chunks = stages / pp;
    spec.vShape = vShape;
    spec.forwardSpan = span(fMax);
    spec.backwardSpan = span(bMax);
    spec.weightSpan = splitW ? span(wMax) : 0;
    if (auto method = schedule::parseBuiltinMethod(schedule)) {
      schedule::PipelineSpec wanted = schedule::normalizeSpec(*method, spec);
      if (wanted.chunks != spec.chunks || wanted.vShape != spec.vShape) {
        module.emitError("dist-schedule: ")
            << schedule << " needs " << wanted.chunks
            << " virtual stage(s) per device"
            << (wanted.vShape ? " placed in a V" : "") << ", but the plan has "
            << spec.chunks << " (plan with dist-plan's stages-per-device"
            << (wanted.vShape ? " and vshape" : "") << ")";
        return signalPassFailure();
      }
    }
    std::optional<int64_t> limit;
    if (schedule == "search")
      limit = memoryLimit > 0 ? int64_t(memoryLimit) : 2 * stages;
    schedule::PipelineOrder order =
        schedule::pipelineOrder(schedule, spec, static_cast<int>(micro), limit);
    if (!order.error.empty()) {
      module.emitError("dist-schedule: ") << schedule << ": " << order.error;
      return signalPassFailure();
    }
    SmallVector<Attribute> blocks;
    for (const schedule::OrderedBlock &b : order.blocks)
      blocks.push_back(DenseI64ArrayAttr::get(
          ctx, {b.stage, int64_t(b.kind), int64_t(b.micro)}));
    setAttr<Dist::PipelineAttrHelper>(
        module, pipeline.withOrder(StringAttr::get(ctx, schedule),
                                   ArrayAttr::get(ctx, blocks)));
  }
};

} // namespace
