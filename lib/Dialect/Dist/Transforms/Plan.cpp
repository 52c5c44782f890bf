//===- Plan.cpp - choose a parallel plan ----------------------------------===//
//
// The plan is written as attributes on the ops of each training step:
// dist.split (op-trans), dist.stage (op-assign), dist.order_after
// (op-order), and dist.batch (the annotation name that carries the batch,
// which the partitioner splits over dp and over the micro-batches).
//
// This file is the pass: it reads the plan (its options, a policy product
// such as dp2xtp2xpp2, `auto`, or a plan file through PlanFile.cpp), sets
// the module's dist.mesh and dist.pipeline, runs the built-in policies
// (PlanPolicies.cpp) and applies a plan file's trans, assign, recompute
// and order entries.
//
//===----------------------------------------------------------------------===//

#include "PlanUtils.h"
#include "tessera/Dialect/Dist/IR/DistAttrs.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Dist/Transforms/Passes.h"
#include "tessera/Dialect/Dist/Transforms/PlanFile.h"
#include "tessera/Dialect/Tsr/Analysis/OpMetrics.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Support/InputFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Regex.h"

#include <limits>

namespace tessera::dist {
#define GEN_PASS_DEF_DISTPLAN
#include "tessera/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace tessera::dist

using namespace mlir;
using namespace tessera;
using namespace tessera::dist;
using namespace tessera::dist::plan_detail;

namespace {

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct PlanSpec {
  /// The mesh and micro-batches; the stage starts only from the auto policy
  /// (otherwise planPipeline balances the units by FLOPs).
  planner::PlanShape shape;
  bool zero1 = false;
  /// ZeRO-2 (implies zero1).
  bool zero2 = false;
  /// ZeRO-3 (implies zero1); with zero3Params, of those parameters only
  /// (the auto policy's per-stage choice).
  bool zero3 = false;
  std::vector<std::string> zero3Params;
  /// From a plan file: entries applied after the policy.
  std::vector<PlanFile::Trans> trans;
  std::vector<PlanFile::Assign> assign;
  std::vector<PlanFile::Recompute> recompute;
  std::vector<PlanFile::Coshard> coshard;
  std::vector<std::pair<std::string, std::string>> order;
  std::vector<std::string> policies;
  /// The auto policy chose the mesh (plan=auto, or a plan file whose policy
  /// is auto): it reports its own prediction.
  bool searched = false;
};

struct DistPlanPass : public dist::impl::DistPlanBase<DistPlanPass> {
  using DistPlanBase::DistPlanBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    PlanSpec spec;
    if (failed(parsePlan(module, spec)))
      return signalPassFailure();
    MLIRContext *ctx = &getContext();
    auto mesh = MeshAttr::get(
        ctx, ArrayRef<StringRef>{"dp", "tp", "pp"},
        ArrayRef<int64_t>{spec.shape.dp, spec.shape.tp, spec.shape.pp});
    setAttr<Dist::MeshAttrHelper>(module, mesh);
    setAttr<Dist::PipelineAttrHelper>(
        module, PipelineAttr::get(ctx, spec.shape.microBatches));
    bool any = false;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (!hasAttr<Tsr::TrainStepAttrHelper>(f))
        continue;
      any = true;
      if (failed(planStep(f, spec)))
        return signalPassFailure();
    }
    if (!any) {
      module.emitError("dist-plan: no training step (a function with "
                       "tsr.train_step; run tsr-optimizer first)");
      return signalPassFailure();
    }
    if (predict && !spec.searched && failed(reportPrediction(module, spec)))
      signalPassFailure();
  }

  /// predict: the auto planner's model of the plan just written, in
  /// dist.plan_report (auto reports its own prediction).
  LogicalResult reportPrediction(ModuleOp module, const PlanSpec &spec) {
    SmallVector<std::string> lines;
    StringRef name = schedule;
    bool known = stagesPerDevice > 1
                     ? name == "interleaved" || name == "zb-v"
                     : name == "1f1b" || name == "gpipe" || name == "zb-h1";
    if (!known) {
      lines.push_back("no predicted step time: the planner's model knows "
                      "the 1f1b, gpipe and zb-h1 schedules with one stage "
                      "per device and interleaved and zb-v with virtual "
                      "stages, not " +
                      std::string(schedule) +
                      (stagesPerDevice > 1 ? " with virtual stages" : ""));
    } else {
      // Co-shard is modelled as it runs: on a copy of the module whose
      // marked ops are their pieces (dist-coshard's rewrite), so the replay
      // of the units sees each piece's recomputed values alone.
      bool pieces = false;
      module.walk([&](Operation *op) {
        pieces |= hasAttr<Dist::CoshardAttrHelper>(op);
      });
      OwningOpRef<ModuleOp> copy;
      if (pieces) {
        copy = module.clone();
        if (failed(runCoshard(*copy)))
          return failure();
      }
      if (failed(predictPlan(pieces ? *copy : module, autoOptions(spec), plan,
                             spec.shape, lines)))
        return failure();
    }
    func::FuncOp step;
    for (auto f : module.getOps<func::FuncOp>())
      if (hasAttr<Tsr::TrainStepAttrHelper>(f))
        step = f;
    SmallVector<Attribute> attrs;
    for (const std::string &line : lines)
      attrs.push_back(StringAttr::get(&getContext(), line));
    appendPlanReport(step, attrs);
    return success();
  }

  /// The auto planner's inputs: the pass options and the plan's
  /// micro-batches and ZeRO-1.
  AutoPlanOptions autoOptions(const PlanSpec &spec) {
    AutoPlanOptions options;
    options.devices = devices;
    options.microBatches = spec.shape.microBatches;
    options.microBatchesFixed = fixMicroBatches;
    options.deviceSpec = deviceSpec;
    options.profileDatabase = profileDb;
    options.memoryGiB = memoryGiB;
    options.schedule = schedule;
    options.zero1 = spec.zero1;
    options.zero2 = spec.zero2;
    options.zero3 = spec.zero3;
    options.report = report;
    return options;
  }

  /// A built-in policy. `spec.shape.microBatches` and `spec.zero1` are already
  /// the effective values (options and plan file together); `options`: the
  /// auto policy's inputs when a plan file constrains them.
  LogicalResult parsePolicy(ModuleOp module, StringRef text, PlanSpec &spec,
                            const AutoPlanOptions *options = nullptr) {
    auto fail = [&](const Twine &why) {
      return module.emitError("dist-plan: plan '") << text << "': " << why;
    };
    if (text == "auto") {
      // The search cuts for the schedule's stages per device.
      bool virtualSchedule = schedule == "interleaved" || schedule == "zb-v";
      if (virtualSchedule &&
          (stagesPerDevice != 2 || (schedule == "zb-v") != bool(vShape)))
        return fail("schedule " + schedule +
                    " runs two virtual stages per device: plan with "
                    "stages-per-device=2" +
                    (schedule == "zb-v" ? " and vshape" : ""));
      if (!virtualSchedule && stagesPerDevice != 1)
        return fail("plans " + Twine(int64_t(stagesPerDevice)) +
                    " stages per device only for the interleaved or zb-v "
                    "schedule (give it with schedule=)");
      bool zero2 = false, zero3 = false;
      if (failed(planAuto(module, options ? *options : autoOptions(spec),
                          spec.shape, zero2, zero3, spec.zero3Params)))
        return failure();
      spec.zero2 = zero2;
      spec.zero3 = zero3;
      spec.zero1 = spec.zero1 || zero2 || zero3;
      spec.policies = {"dp", "tp", "pp"};
      spec.searched = true;
      return success();
    }
    if (text == "dp" || text == "tp" || text == "pp") {
      (text == "dp"   ? spec.shape.dp
       : text == "tp" ? spec.shape.tp
                      : spec.shape.pp) = devices;
      spec.policies.push_back(text.str());
      return success();
    }
    SmallVector<StringRef> parts;
    text.split(parts, 'x');
    for (StringRef part : parts) {
      int64_t n = 0;
      StringRef kind = part.take_front(2);
      if ((kind != "dp" && kind != "tp" && kind != "pp") ||
          part.drop_front(2).getAsInteger(10, n) || n < 1)
        return fail("expected dp, tp, pp or a product like dp2xtp2xpp2, "
                    "found '" +
                    part + "'" +
                    (text.contains('/') || text.contains('.')
                         ? " (a plan file's name ends in .json)"
                         : ""));
      int64_t &slot = kind == "dp"   ? spec.shape.dp
                      : kind == "tp" ? spec.shape.tp
                                     : spec.shape.pp;
      if (slot != 1)
        return fail("'" + kind + "' appears twice");
      slot = n;
      spec.policies.push_back(kind.str());
    }
    std::optional<int64_t> used =
        support::checkedMul(spec.shape.dp, spec.shape.tp);
    if (used)
      used = support::checkedMul(*used, spec.shape.pp);
    if (!used)
      return fail("the product of its sizes overflows a 64-bit integer");
    if (*used != devices)
      return fail("uses " + Twine(*used) + " devices, but --devices is " +
                  Twine(devices.getValue()));
    return success();
  }

  LogicalResult parsePlan(ModuleOp module, PlanSpec &spec) {
    spec.shape.microBatches = microBatches;
    spec.zero1 = zero1 || zero2 || zero3;
    spec.zero2 = zero2;
    spec.zero3 = zero3;
    if (devices < 1 || devices > support::kMaxDevices)
      return module.emitError("dist-plan: devices must be in [1, ")
             << support::kMaxDevices << "], got " << int64_t(devices);
    if (microBatches < 1)
      return module.emitError("dist-plan: micro-batches must be >= 1, got ")
             << int64_t(microBatches);
    if (stagesPerDevice < 1)
      return module.emitError("dist-plan: stages-per-device must be >= 1, got ")
             << int64_t(stagesPerDevice);
    if (vShape && stagesPerDevice != 2)
      return module.emitError("dist-plan: vshape places two virtual stages "
                              "per device, but stages-per-device is ")
             << int64_t(stagesPerDevice);
    if (!StringRef(plan).ends_with(".json")) {
      if (failed(checkAutoOnlyOptions(module, plan == "auto")))
        return failure();
      return parsePolicyAndCheck(module, plan, spec);
    }

    // A plan file (docs/plans.md): read and checked by PlanFile.cpp.
    std::string error;
    std::optional<PlanFile> file = readPlanFile(plan, error);
    if (!file)
      return module.emitError("dist-plan: ") << error;
    bool autoFile = file->policy && *file->policy == "auto";
    if (failed(checkAutoOnlyOptions(module, autoFile)))
      return failure();
    auto fail = [&](const Twine &why) {
      return module.emitError("dist-plan: ") << plan << ": " << why;
    };
    // The file and the options may both give micro-batches and ZeRO-1; a
    // disagreement is an error rather than one silently winning.
    if (file->microBatches) {
      if ((microBatches != 1 || fixMicroBatches) &&
          microBatches != *file->microBatches)
        return fail("micro_batches is " + Twine(*file->microBatches) +
                    ", but --micro-batches is " +
                    Twine(microBatches.getValue()));
      spec.shape.microBatches = *file->microBatches;
    }
    if (file->zero3) {
      if (zero3 && !*file->zero3)
        return fail("zero3 is false, but --zero3 is given");
      spec.zero3 = *file->zero3;
    }
    if (file->zero2) {
      if (zero2 && !*file->zero2)
        return fail("zero2 is false, but --zero2 is given");
      spec.zero2 = *file->zero2;
    }
    if (file->zero1) {
      if (zero1 && !*file->zero1)
        return fail("zero1 is false, but --zero1 is given");
      if ((spec.zero2 || spec.zero3) && !*file->zero1)
        return fail(Twine("zero1 is false, but ") +
                    (spec.zero3 ? "zero3" : "zero2") +
                    " shards the optimizer state too (ZeRO-" +
                    (spec.zero3 ? "3" : "2") + " includes ZeRO-1)");
      spec.zero1 = *file->zero1;
    }
    spec.zero1 = spec.zero1 || spec.zero2 || spec.zero3;
    if (autoFile) {
      // A constrained auto plan: the search keeps the mesh axes and the
      // micro-batches the file gives, and chooses the rest.
      AutoPlanOptions options = autoOptions(spec);
      options.microBatchesFixed =
          fixMicroBatches || file->microBatches.has_value();
      // Each axis the file's mesh gives (0: not given) is kept.
      planner::PlanShape kept =
          file->mesh ? *file->mesh : planner::PlanShape{0, 0, 0};
      options.fixedDp = kept.dp;
      options.fixedTp = kept.tp;
      options.fixedPp = kept.pp;
      std::string given;
      for (auto [name, size] : {std::pair<const char *, int64_t>{"dp", kept.dp},
                                {"tp", kept.tp},
                                {"pp", kept.pp}})
        if (size)
          given += std::string(given.empty() ? "" : ", ") + "mesh." + name +
                   " = " + std::to_string(size);
      if (file->microBatches)
        given += std::string(given.empty() ? "" : ", ") +
                 "micro_batches = " + std::to_string(*file->microBatches);
      options.constraints = given;
      options.assign = file->assign;
      options.trans = file->trans;
      // Axes that cannot share the devices are a conflict between the
      // entries themselves, before any search.
      int64_t fixed = std::max<int64_t>(options.fixedDp, 1) *
                      std::max<int64_t>(options.fixedTp, 1) *
                      std::max<int64_t>(options.fixedPp, 1);
      bool all = options.fixedDp && options.fixedTp && options.fixedPp;
      if (devices % fixed != 0 || (all && fixed != devices))
        return fail("the constraints " + given + " use " + Twine(fixed) +
                    " devices, which " + (all ? "is not" : "does not divide") +
                    " --devices " + Twine(devices.getValue()));
      if (spec.zero1 && options.fixedDp == 1)
        return fail(
            spec.zero3   ? "the constraints zero3 = true and mesh.dp = 1 "
                           "conflict (ZeRO-3 shards the parameters over dp)"
            : spec.zero2 ? "the constraints zero2 = true and mesh.dp = 1 "
                           "conflict (ZeRO-2 shards the gradients over dp)"
                         : "the constraints zero1 = true and mesh.dp = 1 "
                           "conflict (ZeRO-1 shards the optimizer over dp)");
      if (failed(parsePolicy(module, "auto", spec, &options)))
        return failure();
    } else if (file->policy) {
      if (failed(parsePolicyAndCheck(module, *file->policy, spec)))
        return failure();
    } else {
      spec.shape.dp = file->mesh->dp;
      spec.shape.tp = file->mesh->tp;
      spec.shape.pp = file->mesh->pp;
      // The reader checked that the product fits in 64 bits.
      int64_t used = spec.shape.dp * spec.shape.tp * spec.shape.pp;
      if (used != devices)
        return fail("the mesh has " + Twine(used) +
                    " devices, but --devices is " + Twine(devices.getValue()));
      if (failed(checkZero1(module, spec)))
        return failure();
    }
    spec.trans = file->trans;
    spec.assign = file->assign;
    spec.recompute = file->recompute;
    spec.coshard = file->coshard;
    spec.order = file->order;
    return success();
  }

  /// device-spec, profile-db, memory-gib and schedule feed only the auto
  /// policy (and predict); with another plan a value would be silently
  /// ignored. Only a value other than the default can be told apart: a pass
  /// built from an options struct (tessera-compile) has every option set.
  LogicalResult checkAutoOnlyOptions(ModuleOp module, bool isAuto) {
    if (isAuto)
      return success();
    // predict models the plan as auto would, with the same inputs; report
    // only prints the search's choice (ignored elsewhere: it says nothing
    // about the plan).
    if (predict)
      return success();
    DistPlanOptions defaults;
    StringRef given = deviceSpec != defaults.deviceSpec ? "device-spec"
                      : profileDb != defaults.profileDb ? "profile-db"
                      : memoryGiB != defaults.memoryGiB ? "memory-gib"
                      : schedule != defaults.schedule   ? "schedule"
                                                        : "";
    if (given.empty())
      return success();
    return module.emitError("dist-plan: ")
           << given << " applies only to plan=auto (plan is '" << plan << "')";
  }

  LogicalResult parsePolicyAndCheck(ModuleOp module, StringRef text,
                                    PlanSpec &spec) {
    if (failed(parsePolicy(module, text, spec)))
      return failure();
    // The auto policy weighs ZeRO-1 in its memory model and may still
    // choose dp = 1; every other plan fixes dp itself.
    if (text == "auto")
      return success();
    return checkZero1(module, spec);
  }

  LogicalResult checkZero1(ModuleOp module, const PlanSpec &spec) {
    if (spec.zero1 && spec.shape.dp == 1)
      return module.emitError("dist-plan: ")
             << (spec.zero3   ? "zero3 shards the parameters and optimizer"
                 : spec.zero2 ? "zero2 shards the gradients and optimizer"
                              : "zero1 shards the optimizer")
             << " over dp, but the plan has dp = 1";
    return success();
  }

  LogicalResult planStep(func::FuncOp f, const PlanSpec &spec) {
    if (failed(planBatch(f, spec.shape)))
      return failure();
    // Megatron-style tensor parallelism comes with the tp policy; a plan
    // file that gives a mesh splits over tp only where its entries say.
    if (spec.shape.tp > 1 && llvm::is_contained(spec.policies, "tp") &&
        failed(planTensorParallel(f, spec.shape.tp)))
      return failure();
    // The savers compose: ZeRO-2's split updates are ZeRO-1's, which ZeRO-3
    // finds split already.
    if (spec.zero2 && spec.shape.dp > 1)
      planZero2(f, spec.shape.dp);
    if (spec.zero3 && spec.shape.dp > 1)
      planZero3(f, spec.shape.dp, spec.zero3Params);
    else if (spec.zero1 && spec.shape.dp > 1)
      planZero1(f, spec.shape.dp);
    if (failed(applyPlanFile(f, spec)) || failed(applyRecompute(f, spec)) ||
        failed(applyCoshard(f, spec)))
      return failure();
    if (spec.shape.pp > 1 &&
        failed(planPipeline(f, spec.shape, stagesPerDevice, vShape)))
      return failure();
    return applyOrder(f, spec);
  }

  LogicalResult applyPlanFile(func::FuncOp f, const PlanSpec &spec) {
    // The plan-file reader checked the patterns and the axes.
    if (spec.trans.empty() && spec.assign.empty())
      return success();
    Block &body = f.getBody().front();
    SelectionContext cx = selectionContext(f);
    // The assign entry that put each op on every device.
    llvm::DenseMap<Operation *, int64_t> everyEntry;
    // Stages first: a split over pp is for ops on every device.
    // Both factors are >= 1; an overflowing product admits every stage.
    int64_t numStages = support::checkedMul(spec.shape.pp, stagesPerDevice)
                            .value_or(std::numeric_limits<int64_t>::max());
    for (const auto &a : spec.assign) {
      SmallVector<Operation *> ops = selectOps(f, a.select, cx);
      if (ops.empty())
        return matchesNothing(f, "assign", a.index, a.select);
      if (a.stage >= numStages)
        return ops.front()->emitError("dist-plan: plan entry assign[")
               << a.index << "] puts '" << tsr::opNameOrKind(ops.front())
               << "' on stage " << a.stage << ", but the mesh has " << numStages
               << " stage(s)";
      for (Operation *op : ops) {
        op->setAttr(
            Dist::StageAttrHelper::getNameStr(),
            IntegerAttr::get(IntegerType::get(&getContext(), 64), a.stage));
        if (a.stage == DistDialect::kEveryStage)
          everyEntry[op] = a.index;
      }
    }
    for (const auto &t : spec.trans) {
      SmallVector<Operation *> ops = selectOps(f, t.select, cx);
      if (ops.empty())
        return matchesNothing(f, "trans", t.index, t.select);
      // A split names annotation dimensions, which belong to one op kind.
      std::map<std::string, int> kinds;
      for (Operation *op : ops)
        ++kinds[op->getName().getStringRef().str()];
      if (kinds.size() > 1) {
        std::string list;
        for (auto &[kind, n] : kinds)
          list += (list.empty() ? "" : ", ") + kind + " x" + std::to_string(n);
        return ops.front()->emitError("dist-plan: plan entry trans[")
               << t.index << "] (" << t.select.str() << ") matches ops of "
               << kinds.size() << " kinds (" << list
               << "), but its split names the dimensions of one kind's "
                  "annotation: add \"kind\" to choose one";
      }
      llvm::StringSet<> forwardNames;
      for (Operation *op : ops) {
        std::string name = tsr::opNameOrKind(op);
        auto stage = getAttr<Dist::StageAttrHelper>(op);
        if (llvm::any_of(t.split, [](auto &e) { return e.second == "pp"; }) &&
            !t.select.backward &&
            (!stage || stage.getInt() != DistDialect::kEveryStage))
          return op->emitError("dist-plan: plan entry trans[")
                 << t.index << "] splits '" << name
                 << "' over pp, but it does not run on every device: pp "
                    "splits only the ops an assign entry puts on every "
                    "device (\"stage\": \"all\")";
        auto iface = dyn_cast<DimAnnotationOpInterface>(op);
        if (!iface)
          return op->emitError("dist-plan: plan entry trans[")
                 << t.index << "] matches '" << name
                 << "', which has no dimension annotation";
        auto bound = bindOpAnnotation(iface);
        if (!bound)
          return op->emitError("dist-plan: ") << bound.message();
        std::map<std::string, int64_t> factors;
        for (auto &[dim, axis] : t.split)
          factors[dim] = axisSize(spec.shape, axis);
        auto split = annotation::split(*bound, factors);
        if (!split)
          return op->emitError("dist-plan: plan entry trans[")
                 << t.index << "] cannot split '" << name << "' ("
                 << bound->annotation.str() << "): " << split.message();
        // One dimension per mesh axis per op: a split the policy (the
        // batch over dp, Megatron over tp) or an earlier entry already made
        // along another dimension would otherwise win silently.
        if (auto old = getAttr<Dist::SplitAttrHelper>(op))
          for (auto &[dim, axis] : t.split)
            for (NamedAttribute e : old) {
              if (cast<StringAttr>(e.getValue()).getValue() != axis ||
                  e.getName().getValue() == dim)
                continue;
              auto batch = getAttr<Dist::BatchAttrHelper>(op);
              bool isBatch =
                  batch && batch.getValue() == e.getName().getValue();
              return op->emitError("dist-plan: plan entry trans[")
                     << t.index << "] splits '" << dim << "' of '" << name
                     << "' over " << axis << ", but " << axis
                     << " already splits its dimension '"
                     << e.getName().getValue() << "'"
                     << (isBatch ? " (the batch)" : "")
                     << " there: an op is split along one dimension per "
                        "mesh axis";
            }
        for (auto &[dim, axis] : t.split)
          addSplit(op, dim, axis);
        if (!t.select.backward)
          forwardNames.insert(tsr::opName(op));
      }
      if (t.propagate)
        propagateSplit(body, ops, t.split, spec.shape);
      else if (!forwardNames.empty())
        followIntoBackward(body, ops, t.split, spec.shape, forwardNames, cx);
    }
    return checkEveryDeviceBatch(f, spec, everyEntry);
  }

  /// On every device, pp splits each micro-batch's piece of the batch
  /// further (dist-partition), unless pp splits another dimension of the
  /// op (a vocabulary split): the batch must then be a multiple of dp x
  /// micro-batches x pp. Said here, naming the assign entry, rather than
  /// by dist-partition at the first op it cannot cut.
  LogicalResult
  checkEveryDeviceBatch(func::FuncOp f, const PlanSpec &spec,
                        const llvm::DenseMap<Operation *, int64_t> &every) {
    if (spec.shape.pp < 2 || every.empty())
      return success();
    std::optional<int64_t> pieces =
        support::checkedMul(spec.shape.dp, spec.shape.microBatches);
    if (pieces)
      pieces = support::checkedMul(*pieces, spec.shape.pp);
    for (BlockArgument arg : f.getArguments()) {
      if (!f.getArgAttr(arg.getArgNumber(), Tsr::InputAttrHelper::getNameStr()))
        continue;
      int64_t batch = cast<RankedTensorType>(arg.getType()).getDimSize(0);
      if (pieces && batch % *pieces == 0)
        continue;
      for (Operation &op : f.getBody().front()) {
        auto it = every.find(&op);
        if (it == every.end() || !hasAttr<Dist::BatchAttrHelper>(&op) ||
            splitOver(&op, "pp"))
          continue;
        return op.emitError("dist-plan: plan entry assign[")
               << it->second << "] runs '" << tsr::opNameOrKind(&op)
               << "' on every device, where pp splits each micro-batch's "
                  "piece of the batch too: the batch ("
               << batch << ") is not divisible by dp (" << spec.shape.dp
               << ") x micro-batches (" << spec.shape.microBatches << ") x pp ("
               << spec.shape.pp << ")";
      }
      break;
    }
    return success();
  }

  /// The recompute entries: their forward ops are marked dist.recompute
  /// (dist-recompute copies them into the backward).
  LogicalResult applyRecompute(func::FuncOp f, const PlanSpec &spec) {
    if (spec.recompute.empty())
      return success();
    SelectionContext cx = selectionContext(f);
    for (const auto &r : spec.recompute) {
      SmallVector<Operation *> ops = selectOps(f, r.select, cx);
      if (ops.empty())
        return matchesNothing(f, "recompute", r.index, r.select);
      for (Operation *op : ops)
        setAttr<Dist::RecomputeAttrHelper>(op, UnitAttr::get(&getContext()));
    }
    return success();
  }

  /// Why op `op`, split over tp along its dimension `name`, cannot run that
  /// piece in parts that are computed alone: the ops of a vocabulary split
  /// (dist-partition's emitVocabPiece), whose piece of the classes or the
  /// table needs its offset in the whole and, for the cross-entropy's
  /// gradient, the other pieces' sums (a part computed alone would
  /// normalize over its own classes: a silently wrong gradient). nullopt
  /// for any other op.
  static std::optional<std::string>
  vocabularyPiece(Operation *op, const annotation::BoundAnnotation &bound,
                  StringRef name) {
    auto named = [&](const std::vector<annotation::TensorSpec> &specs, size_t t,
                     size_t d) {
      return t < specs.size() && d < specs[t].dims.size() &&
             llvm::any_of(
                 specs[t].dims[d].atoms,
                 [&](const annotation::Atom &a) { return a.name == name; });
    };
    const annotation::Annotation &a = bound.annotation;
    if (isa<tsr::SoftmaxCrossEntropyOp, tsr::SoftmaxCrossEntropyGradOp>(op) &&
        named(a.inputs, 0, 1))
      return std::string("a cross-entropy over a piece of the classes "
                         "needs the other pieces' sums");
    if (isa<tsr::EmbeddingGradOp>(op) && named(a.outputs, 0, 0))
      return std::string("an embedding gradient into a piece of the table "
                         "needs the piece's offset");
    if (auto g = dyn_cast<tsr::GatherOp>(op);
        g && g.getAxis() == 0 && named(a.inputs, 0, 0))
      return std::string("a lookup in a piece of the table needs the "
                         "piece's offset");
    return std::nullopt;
  }

  /// The coshard entries: the selected forward ops that tp splits, and the
  /// backward ops that differentiate them and tp splits, are marked
  /// dist.coshard (dist-coshard runs them in pieces).
  LogicalResult applyCoshard(func::FuncOp f, const PlanSpec &spec) {
    if (spec.coshard.empty())
      return success();
    SelectionContext cx = selectionContext(f);
    // Without tp, the pieces are those of the whole op along the dimension
    // tp would split (Megatron's, as the tp policy traces it): the marked
    // ops get that split over tp, an axis of size 1 (nothing is
    // communicated for it), and each rank runs its whole op in parts.
    llvm::DenseMap<Operation *, std::string> megatron;
    if (spec.shape.tp < 2) {
      Block &body = f.getBody().front();
      SmallVector<std::pair<Value, int64_t>> heads, hidden;
      tensorParallelSeeds(body, heads, hidden);
      for (auto *seeds : {&heads, &hidden})
        if (!seeds->empty())
          for (auto &[op, name] :
               traceDim(body, *seeds, 1, /*backward=*/true,
                        [](Operation *) { return true; })
                   .names)
            if (!isa<tsr::ConstantOp>(op))
              megatron.try_emplace(op, name);
    }
    auto tpName = [&](Operation *op) -> std::optional<std::string> {
      if (std::optional<std::string> name = splitOver(op, "tp"))
        return name;
      if (auto it = megatron.find(op); it != megatron.end())
        return it->second;
      return std::nullopt;
    };
    for (const auto &c : spec.coshard) {
      SmallVector<Operation *> ops = selectOps(f, c.select, cx);
      if (ops.empty())
        return matchesNothing(f, "coshard", c.index, c.select);
      llvm::StringSet<> names;
      SmallVector<Operation *> marked;
      for (Operation *op : ops)
        if (tpName(op)) {
          marked.push_back(op);
          names.insert(tsr::opName(op));
        }
      if (marked.empty())
        return ops.front()->emitError("dist-plan: plan entry coshard[")
               << c.index << "] (" << c.select.str() << ") selects no op that "
               << (spec.shape.tp < 2
                       ? "tp would split (by attention heads or MLP hidden "
                         "units): co-shard runs such an op in parts"
                       : "tp splits: co-shard runs a tp piece in parts");
      for (Operation &op : f.getBody().front())
        if (!tsr::isForward(&op) && names.contains(forwardNameOf(&op)) &&
            tpName(&op))
          marked.push_back(&op);
      // An op whose dimension does not split into tp x pieces whole parts
      // (with grouped-query attention, the key/value heads: 2 of them
      // against 4 query heads in 4 pieces) runs its whole tp piece, as without
      // co-shard: the marked ops around it read and join its result as
      // they do an unmarked op's (dist-coshard), so the step is the same.
      // Only an entry none of whose forward ops can run in pieces is an
      // error.
      struct Whole {
        Operation *op;
        std::string annotation, why;
      };
      SmallVector<Whole> whole;
      bool anyForward = false;
      for (Operation *op : marked) {
        // Every piece of every rank's tp piece has whole units of the
        // dimension: tp x pieces divides it.
        auto bound = bindOpAnnotation(cast<DimAnnotationOpInterface>(op));
        if (!bound)
          return op->emitError("dist-plan: ") << bound.message();
        std::string name = *tpName(op);
        if (std::optional<std::string> why =
                vocabularyPiece(op, *bound, name)) {
          whole.push_back({op, bound->annotation.str(), *why});
          continue;
        }
        auto split =
            annotation::split(*bound, {{name, spec.shape.tp * c.pieces}});
        if (!split) {
          whole.push_back(
              {op, bound->annotation.str(), std::string(split.message())});
          continue;
        }
        anyForward |= tsr::isForward(op);
        if (auto old = getAttr<Dist::CoshardAttrHelper>(op);
            old && old.getInt() != c.pieces)
          return op->emitError("dist-plan: plan entry coshard[")
                 << c.index << "] runs '" << tsr::opNameOrKind(op) << "' in "
                 << c.pieces << " pieces, but an earlier entry runs it in "
                 << old.getInt();
        op->setAttr(
            Dist::CoshardAttrHelper::getNameStr(),
            IntegerAttr::get(IntegerType::get(&getContext(), 64), c.pieces));
        if (spec.shape.tp < 2)
          addSplit(op, name, "tp");
      }
      if (!anyForward) {
        // Nothing to run in pieces: the first op that cannot be.
        const Whole &w = whole.front();
        return w.op->emitError("dist-plan: plan entry coshard[")
               << c.index << "] cannot run '" << tsr::opNameOrKind(w.op)
               << "' (" << w.annotation << ") in " << c.pieces
               << " pieces of each of its " << spec.shape.tp
               << " tp pieces: " << w.why;
      }
      if (!whole.empty()) {
        // Said under the plan line: which ops keep their whole tp piece.
        size_t forward = llvm::count_if(
            whole, [](const Whole &w) { return tsr::isForward(w.op); });
        const Whole &w = whole.front();
        appendPlanReport(
            f, {StringAttr::get(
                   &getContext(),
                   llvm::formatv("coshard[{0}]: {1} forward and {2} backward "
                                 "op(s) run their whole {3}, the first "
                                 "'{4}' ({5}): {6}",
                                 c.index, forward, whole.size() - forward,
                                 spec.shape.tp > 1 ? "tp piece" : "op",
                                 tsr::opNameOrKind(w.op), w.annotation, w.why)
                       .str())});
      }
    }
    return success();
  }

  /// A trans entry with `propagate`: each split dimension traced from the
  /// values the selected ops split along it through every op whose
  /// annotation carries it, in both directions (the tp policy's traces do
  /// the same from Megatron's seeds), so the ops between a column-parallel
  /// and a row-parallel projection (an activation, the heads' reshapes and
  /// attention) and the backward and updates of all of them are split too.
  /// The trace stops where an annotation reduces the dimension or forbids
  /// its split; an op that the axis already splits along another dimension
  /// keeps that split (the partitioner converts layouts where they meet).
  static void propagateSplit(Block &body, ArrayRef<Operation *> ops,
                             const std::map<std::string, std::string> &split,
                             const planner::PlanShape &shape) {
    traceSplits(body, ops, split, shape, [](Operation *) { return true; });
  }

  /// Each split dimension traced from the values `ops` split along it
  /// through the ops `accept` admits (and every op they reach), each of
  /// which is split along the dimension the traced one becomes there.
  static void traceSplits(Block &body, ArrayRef<Operation *> ops,
                          const std::map<std::string, std::string> &split,
                          const planner::PlanShape &shape,
                          llvm::function_ref<bool(Operation *)> accept) {
    for (auto &[dim, axis] : split) {
      SmallVector<std::pair<Value, int64_t>> seeds;
      for (Operation *op : ops) {
        auto bound = bindOpAnnotation(cast<DimAnnotationOpInterface>(op));
        if (!bound)
          continue;
        for (auto [v, spec] :
             llvm::zip(op->getOperands(), bound->annotation.inputs))
          if (int64_t d = dimOfName(spec, dim); d >= 0)
            seeds.push_back({v, d});
        for (auto [v, spec] :
             llvm::zip(op->getResults(), bound->annotation.outputs))
          if (int64_t d = dimOfName(spec, dim); d >= 0)
            seeds.push_back({v, d});
      }
      int64_t factor = axisSize(shape, axis);
      LogicalDim flow =
          traceDim(body, seeds, factor, /*backward=*/true, accept);
      for (auto &[op, name] : flow.names)
        if (!isa<tsr::ConstantOp>(op))
          addSplit(op, name, axis);
    }
  }

  /// A trans entry's split carried from the forward ops it selected to the
  /// ops that only serve them: the views by which they read a parameter
  /// (a weight's transpose), the backward ops that differentiate them, and
  /// the optimizer ops of those parameters. Each split dimension is traced
  /// from the values the forward ops split along it through those ops
  /// only, taking each op's name for it there (the weight's transpose, the
  /// matmul by it, the weight gradient's matmul through the update that
  /// pairs it with the weight). Ops the trace does not reach stay
  /// replicated; the partitioner converts layouts wherever they meet.
  static void
  followIntoBackward(Block &body, ArrayRef<Operation *> ops,
                     const std::map<std::string, std::string> &split,
                     const planner::PlanShape &shape,
                     const llvm::StringSet<> &forwardNames,
                     const SelectionContext &cx) {
    llvm::DenseSet<Operation *> views;
    for (Operation *op : ops)
      for (Value v : op->getOperands()) {
        SmallVector<Operation *> chain;
        if (cx.paramName.count(sourceThroughViews(v, &chain)))
          views.insert(chain.begin(), chain.end());
      }
    auto accept = [&](Operation *op) {
      if (isa<tsr::ConstantOp>(op))
        return false;
      if (views.contains(op) || hasAttr<Tsr::UpdateAttrHelper>(op))
        return true;
      StringRef of = forwardNameOf(op);
      return !of.empty() && forwardNames.contains(of);
    };
    traceSplits(body, ops, split, shape, accept);
  }

  LogicalResult applyOrder(func::FuncOp f, const PlanSpec &spec) {
    if (spec.order.empty())
      return success();
    Block &body = f.getBody().front();
    llvm::StringMap<Operation *> byName;
    for (Operation &op : body) {
      std::string n = tsr::opName(&op);
      if (!n.empty() && !byName.count(n))
        byName[n] = &op;
    }
    // Each order entry [a, b]: a before b; check for cycles with the data
    // dependencies too (an order against the data flow is infeasible).
    llvm::DenseMap<Operation *, SmallVector<Operation *>> after;
    for (auto [i, pair] : llvm::enumerate(spec.order)) {
      Operation *a = byName.lookup(pair.first), *b = byName.lookup(pair.second);
      if (!a || !b)
        return f.emitError("dist-plan: plan entry order[")
               << i << "] names an unknown op '"
               << (!a ? pair.first : pair.second) << "'";
      after[a].push_back(b);
      SmallVector<Attribute> names;
      if (auto old = getAttr<Dist::OrderAfterAttrHelper>(b))
        names.append(old.begin(), old.end());
      names.push_back(StringAttr::get(&getContext(), pair.first));
      setAttr<Dist::OrderAfterAttrHelper>(b,
                                          ArrayAttr::get(&getContext(), names));
    }
    // Cycle check over data edges plus order edges.
    llvm::DenseMap<Operation *, int> state;
    std::function<bool(Operation *)> dfs = [&](Operation *op) {
      state[op] = 1;
      SmallVector<Operation *> next(after.lookup(op));
      for (Value r : op->getResults())
        for (Operation *u : r.getUsers())
          next.push_back(u);
      for (Operation *n : next) {
        if (state.lookup(n) == 1)
          return true;
        if (state.lookup(n) == 0 && dfs(n))
          return true;
      }
      state[op] = 2;
      return false;
    };
    for (auto &[op, targets] : after)
      if (state.lookup(op) == 0 && dfs(op))
        return f.emitError("dist-plan: the plan's order entries form a "
                           "cycle (with the data dependencies) through '")
               << tsr::opName(op) << "'";
    return success();
  }
};

} // namespace
