//===- AutoPlan.cpp - dist-plan plan=auto ---------------------------------===//
//
// Describes a training step as the layer graph the auto mesh search needs
// (tessera/Planner/AutoPlanSearch.h) and hands its answer, a plan shape (the
// mesh, the micro-batches and the first unit of each stage), to the built-in
// policies, which annotate it. The description follows what those policies
// will do to the step, using their own code (PlanUtils.h): the units are
// planPipeline's layer groups, an op runs once per micro-batch when the
// batch trace reaches it, and it is divided by tp when Megatron's trace
// does; a tp-split reduced dimension costs an all-reduce of the result, and
// a replicated op reading a tp-split value an all-gather.
//
//===----------------------------------------------------------------------===//

#include "PlanUtils.h"

#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Tsr/Analysis/OpMetrics.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Interfaces/CostInterface.h"
#include "tessera/Planner/AutoPlanSearch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace tessera;
using namespace tessera::dist;
using namespace tessera::dist::plan_detail;
namespace autoplan = tessera::planner::autoplan;

namespace {

/// The device spec's name for a float element type, or "".
std::string dtypeName(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return "";
  Type e = t.getElementType();
  if (e.isF32())
    return "fp32";
  if (e.isBF16())
    return "bf16";
  if (e.isF16())
    return "fp16";
  if (e.isF64())
    return "fp64";
  return "";
}

/// Three significant digits: the report spans KiB-sized test models and
/// 80 GiB devices.
std::string sig3(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

std::string gib(double bytes) { return sig3(bytes / double(1ull << 30)); }

std::string seconds(double s) {
  if (s < 1e-3)
    return llvm::formatv("{0:f1} us", s * 1e6).str();
  if (s < 1)
    return llvm::formatv("{0:f2} ms", s * 1e3).str();
  return llvm::formatv("{0:f3} s", s).str();
}

/// The step to model: the one with the most arguments (AdamW's, whose
/// optimizer state is the largest).
func::FuncOp pickStep(ModuleOp module) {
  func::FuncOp best;
  for (auto f : module.getOps<func::FuncOp>())
    if (hasAttr<Tsr::TrainStepAttrHelper>(f) &&
        (!best || f.getNumArguments() > best.getNumArguments()))
      best = f;
  return best;
}

} // namespace

namespace tessera::dist::plan_detail {

namespace {

/// The auto planner's model of the largest training step of `module`: the
/// problem, the step, its units and its batch. Errors are emitted on the
/// module, prefixed "dist-plan: plan '<policy>': ".
struct StepModel {
  autoplan::Problem problem;
  func::FuncOp step;
  Units units;
  int64_t batch = 0;
};

LogicalResult buildStepModel(ModuleOp module, const AutoPlanOptions &options,
                             StringRef policy, StepModel &model) {
  // Reported at the module's location only: the step is too large to
  // print with the diagnostic.
  auto fail = [&](const Twine &why) {
    return mlir::emitError(module.getLoc(), "dist-plan: plan '")
           << policy << "': " << why;
  };
  // Finite, and finite in bytes too (1e300 GiB is not).
  if (!(options.memoryGiB > 0) ||
      !std::isfinite(options.memoryGiB * double(1ull << 30)))
    return fail("memory-gib must be a finite number > 0, got " +
                sig3(options.memoryGiB));
  if (options.schedule != "1f1b" && options.schedule != "gpipe")
    return fail("plans for the 1f1b or gpipe schedule, not '" +
                options.schedule + "'");
  std::string specError = autoplan::checkDeviceSpec(options.deviceSpec);
  if (!specError.empty())
    return fail(specError);
  func::FuncOp f = pickStep(module);
  if (!f)
    return fail("no training step (a function with tsr.train_step; run "
                "tsr-optimizer first)");
  model.step = f;
  Block &body = f.getBody().front();
  auto all = [](Operation *) { return true; };

  autoplan::Problem &problem = model.problem;
  problem.devices = options.devices;
  problem.fixedMicroBatches =
      options.microBatches > 1 || options.microBatchesFixed
          ? options.microBatches
          : 0;
  problem.fixedDp = options.fixedDp;
  problem.fixedTp = options.fixedTp;
  problem.fixedPp = options.fixedPp;
  problem.constraints = options.constraints;
  problem.deviceSpec = options.deviceSpec;
  problem.memoryBytes = options.memoryGiB * double(1ull << 30);
  problem.schedule = options.schedule;
  problem.zero1 = options.zero1;
  problem.profileDatabase = options.profileDatabase;

  // The batch, as planStep traces it.
  SmallVector<std::pair<Value, int64_t>> batchSeeds;
  int64_t &batch = model.batch;
  for (BlockArgument arg : body.getArguments())
    if (f.getArgAttr(arg.getArgNumber(), Tsr::InputAttrHelper::getNameStr())) {
      batchSeeds.push_back({arg, 0});
      auto t = cast<RankedTensorType>(arg.getType());
      if (t.getRank() > 0)
        batch = std::gcd(batch, t.getDimSize(0));
    }
  if (batch < 1)
    return fail("the step has no batched data input");
  problem.batch = batch;
  LogicalDim batchFlow = traceDim(body, batchSeeds, 1, /*backward=*/false, all);

  // Megatron's splits, as planTensorParallel traces them.
  SmallVector<std::pair<Value, int64_t>> heads, hidden;
  tensorParallelSeeds(body, heads, hidden);
  llvm::DenseMap<Operation *, std::string> tpNames;
  llvm::DenseMap<Value, int64_t> tpValues; ///< value -> the dimension tp splits
  for (auto *seeds : {&heads, &hidden}) {
    if (seeds->empty())
      continue;
    LogicalDim flow = traceDim(body, *seeds, 1, /*backward=*/true, all);
    for (auto &[op, name] : flow.names)
      if (!isa<tsr::ConstantOp>(op))
        tpNames.try_emplace(op, name);
    for (auto &[v, d] : flow.carriers)
      tpValues.try_emplace(v, d);
  }
  // tp must divide the heads and the MLP's hidden dimension.
  int64_t tpLimit = 0;
  for (auto [v, d] : heads)
    tpLimit =
        std::gcd(tpLimit, cast<RankedTensorType>(v.getType()).getDimSize(d));
  for (auto [v, d] : hidden)
    tpLimit =
        std::gcd(tpLimit, cast<RankedTensorType>(v.getType()).getDimSize(d));
  for (int64_t t = 1; t <= std::max<int64_t>(tpLimit, 1); ++t)
    if (t == 1 || tpLimit % t == 0)
      problem.tpDegrees.push_back(t);

  // Units: forward ops by layer group; the backward with the forward op it
  // differentiates; the rest with their earliest operand's unit.
  model.units = groupUnits(body);
  const Units &units = model.units;
  size_t numUnits = units.names.size();
  llvm::DenseMap<Operation *, int> unitOf;
  llvm::DenseMap<Operation *, int64_t> forwardUnit; ///< for isRecomputed
  llvm::StringMap<int> unitOfName;
  for (auto [i, op] : llvm::enumerate(units.forward)) {
    unitOf[op] = int(units.unitOf[i]);
    forwardUnit[op] = units.unitOf[i];
    std::string n = tsr::opName(op);
    if (!n.empty() && !unitOfName.count(n))
      unitOfName[n] = int(units.unitOf[i]);
  }
  // Parameters and their state live with the first forward use.
  llvm::DenseMap<Value, int> unitOfValue;
  llvm::StringMap<int> paramUnit;
  for (BlockArgument arg : body.getArguments()) {
    auto name = getArgAttr<Tsr::ParamAttrHelper>(f, arg.getArgNumber());
    if (!name)
      continue;
    int u = 0;
    for (Operation *op : units.forward)
      if (llvm::is_contained(op->getOperands(), arg)) {
        u = unitOf[op];
        break;
      }
    paramUnit[name.getValue()] = u;
    unitOfValue[arg] = u;
  }
  problem.units.resize(numUnits);
  for (size_t u = 0; u < numUnits; ++u)
    problem.units[u].name = units.names[u];
  std::string mainDtype;
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    bool split = tpValues.contains(arg);
    double bytes = tessera::tensorBytes(arg.getType());
    if (auto name = getArgAttr<Tsr::ParamAttrHelper>(f, i)) {
      autoplan::Unit &unit = problem.units[paramUnit[name.getValue()]];
      (split ? unit.paramBytesSplit : unit.paramBytes) += bytes;
      if (mainDtype.empty())
        mainDtype = dtypeName(arg.getType());
    } else if (auto st = getArgAttr<Tsr::StateAttrHelper>(f, i)) {
      int u = paramUnit.lookup(st.getValue().split('/').second);
      autoplan::Unit &unit = problem.units[u];
      (split ? unit.stateBytesSplit : unit.stateBytes) += bytes;
      unitOfValue[arg] = u;
    }
  }
  problem.mainDtype = mainDtype.empty() ? "fp32" : mainDtype;

  for (Operation &op : body) {
    if (isa<func::ReturnOp, tsr::ConstantOp>(op))
      continue;
    int u = -1;
    if (auto it = unitOf.find(&op); it != unitOf.end())
      u = it->second;
    else if (auto of = dyn_cast_or_null<StringAttr>(
                 getAttr<Tsr::BackwardAttrHelper>(&op));
             of && unitOfName.count(of.getValue()))
      u = unitOfName.lookup(of.getValue());
    else
      for (Value v : op.getOperands())
        if (auto it = unitOfValue.find(v); it != unitOfValue.end())
          u = u < 0 ? it->second : std::min(u, it->second);
    if (u < 0)
      u = 0;
    for (Value r : op.getResults())
      unitOfValue[r] = u;

    autoplan::OpCost c;
    c.unit = u;
    c.flops = tessera::flopsOf(&op);
    c.isMatmul = isa<tsr::MatmulOp>(op);
    c.perMicroBatch = batchFlow.names.count(&op);
    auto tpIt = tpNames.find(&op);
    c.tpSplit = tpIt != tpNames.end();
    std::string dtype;
    auto account = [&](Value v) {
      double b = tessera::tensorBytes(v.getType());
      (batchFlow.carriers.count(v) ? c.batchBytes : c.fixedBytes) += b;
      if (dtype.empty())
        dtype = dtypeName(v.getType());
    };
    for (Value v : op.getResults())
      account(v);
    for (Value v : op.getOperands())
      account(v);
    c.dtype = dtype.empty() ? problem.mainDtype : dtype;
    c.op = op.getName().stripDialect().str();
    for (Value v : op.getOperands()) {
      autoplan::OpCost::Operand &o = c.operands.emplace_back();
      if (auto t = dyn_cast<RankedTensorType>(v.getType()))
        o.shape.assign(t.getShape().begin(), t.getShape().end());
      if (auto it = batchFlow.carriers.find(v); it != batchFlow.carriers.end())
        o.batchDim = int(it->second);
      if (auto it = tpValues.find(v); it != tpValues.end())
        o.tpDim = int(it->second);
    }
    if (c.tpSplit) {
      // Split along a dimension no result has: partial sums, all-reduced.
      auto iface = dyn_cast<DimAnnotationOpInterface>(&op);
      if (iface)
        if (auto bound = bindOpAnnotation(iface)) {
          bool reduced = true;
          for (const annotation::TensorSpec &spec : bound->annotation.outputs)
            for (const auto &dim : spec.dims)
              for (const auto &atom : dim.atoms)
                if (atom.name == tpIt->second)
                  reduced = false;
          if (reduced)
            for (Value r : op.getResults())
              c.allReduceBytes += tessera::tensorBytes(r.getType());
        }
    } else {
      for (Value v : op.getOperands())
        if (tpValues.contains(v))
          c.allGatherBytes += tessera::tensorBytes(v.getType());
    }
    problem.ops.push_back(c);

    if (!tsr::isForward(&op))
      continue;
    // An op that dist-recompute copies into the backward runs twice.
    if (llvm::any_of(op.getResults(), [&](Value r) {
          return isRecomputed(r, forwardUnit) &&
                 llvm::any_of(r.getUsers(), [](Operation *user) {
                   return !tsr::isForward(user);
                 });
        }))
      problem.ops.push_back(c);
    // Forward values the backward reads stay alive per micro-batch (unless
    // it recomputes them; the copies of recomputed ops read the values
    // they depend on); values read by a later unit's forward cross the
    // stage boundary there.
    for (Value r : op.getResults()) {
      if (!batchFlow.carriers.count(r))
        continue;
      double b = tessera::tensorBytes(r.getType());
      bool kept = false;
      bool recomputed = isRecomputed(r, forwardUnit);
      llvm::SmallDenseSet<int> readers;
      for (Operation *user : r.getUsers()) {
        bool forward = tsr::isForward(user);
        if (!recomputed &&
            (!forward || hasAttr<Dist::RecomputeAttrHelper>(user)))
          kept = true;
        if (auto it = unitOf.find(user);
            forward && it != unitOf.end() && it->second > u)
          readers.insert(it->second);
      }
      if (kept)
        (tpValues.contains(r) ? problem.units[u].actBytesSplit
                              : problem.units[u].actBytes) += b;
      for (int v : readers)
        problem.edges.push_back({u, v, b});
    }
  }

  return success();
}

} // namespace

namespace {
/// Marks (or unmarks) every forward op of every training step of `module`
/// dist.recompute, except those before and after the numbered layers (the
/// embedding and the head, whose results the backward reads right away).
/// Returns whether any op was marked.
bool markRecomputeAll(ModuleOp module, bool mark) {
  bool any = false;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (!hasAttr<Tsr::TrainStepAttrHelper>(f))
      continue;
    Units units = groupUnits(f.getBody().front());
    for (auto [i, op] : llvm::enumerate(units.forward)) {
      if (!mark) {
        removeAttr<Dist::RecomputeAttrHelper>(op);
        continue;
      }
      if (StringRef(units.names[units.unitOf[i]]).starts_with("("))
        continue;
      setAttr<Dist::RecomputeAttrHelper>(op, UnitAttr::get(f.getContext()));
      any = true;
    }
  }
  return any;
}
} // namespace

LogicalResult planAuto(ModuleOp module, const AutoPlanOptions &options,
                       planner::PlanShape &shape) {
  auto fail = [&](const Twine &why) {
    return mlir::emitError(module.getLoc(), "dist-plan: plan 'auto': ") << why;
  };
  StepModel model;
  if (failed(buildStepModel(module, options, "auto", model)))
    return failure();
  autoplan::Result result = autoplan::searchAutoPlan(model.problem);
  // No plan fits in memory: recompute every layer group's activations
  // (dist-recompute) and search again; the marks stay only if a plan then
  // fits.
  bool recomputed = false;
  if (!result.error.empty() && result.candidates > 0 && result.feasible == 0 &&
      markRecomputeAll(module, true)) {
    StepModel again;
    if (failed(buildStepModel(module, options, "auto", again)))
      return failure();
    autoplan::Result second = autoplan::searchAutoPlan(again.problem);
    if (second.error.empty()) {
      model = std::move(again);
      result = std::move(second);
      recomputed = true;
    } else {
      markRecomputeAll(module, false);
      size_t at = second.error.find("at least ");
      size_t end = at == std::string::npos ? at : second.error.find(" GiB", at);
      if (end != std::string::npos)
        result.error += ", and " + second.error.substr(at, end + 4 - at) +
                        " when every layer group's activations are recomputed";
    }
  }
  if (!result.error.empty())
    return fail(result.error);
  shape = result.shape;
  const autoplan::Problem &problem = model.problem;
  const Units &units = model.units;
  size_t numUnits = units.names.size();
  func::FuncOp f = model.step;
  int64_t batch = model.batch;

  if (options.report) {
    llvm::raw_ostream &os = llvm::errs();
    os << llvm::formatv("dist-plan: auto plan for {0} on {1} x {2} ({3} GiB "
                        "each): mesh [dp = {4}, tp = {5}, pp = {6}], {7} "
                        "micro-batch(es) of {8}, schedule {9}\n",
                        f.getSymName(), options.devices, result.specName,
                        sig3(options.memoryGiB), shape.dp, shape.tp, shape.pp,
                        shape.microBatches,
                        batch / (shape.dp * shape.microBatches),
                        options.schedule);
    for (auto [i, s] : llvm::enumerate(result.stages)) {
      std::string names = units.names[s.firstUnit];
      if (s.lastUnit > s.firstUnit)
        names += " .. " + units.names[s.lastUnit];
      os << llvm::formatv("  stage {0}: units {1} ({2} of {3}), {4} GiB per "
                          "device ({5} micro-batch(es) in flight), {6} per "
                          "micro-batch\n",
                          i, names, s.lastUnit - s.firstUnit + 1, numUnits,
                          gib(s.memoryBytes), s.inFlight,
                          seconds(s.microSeconds));
    }
    os << llvm::formatv("  predicted step {0}, bubble {1:f1}%, MFU {2:f1}% "
                        "({3} model FLOPs per step)\n",
                        seconds(result.stepSeconds), result.bubble * 100,
                        result.mfu * 100, sig3(result.modelFlops));
    if (recomputed)
      os << "  recompute: every layer group (no plan fits in memory "
            "without)\n";
    for (const autoplan::Candidate &c : result.runnersUp)
      os << llvm::formatv("  also fits: [dp = {0}, tp = {1}, pp = {2}], {3} "
                          "micro-batch(es): {4}\n",
                          c.shape.dp, c.shape.tp, c.shape.pp,
                          c.shape.microBatches, seconds(c.stepSeconds));
    if (!options.profileDatabase.empty())
      os << llvm::formatv("  profile database: {0} of {1} op(s) timed by "
                          "measurement\n",
                          result.profiledOps, problem.ops.size());
    os << llvm::formatv("  planner: {0} candidate(s), {1} fit, {2} planner "
                        "run(s), {3:f3} s CPU\n",
                        result.candidates, result.feasible, result.plannerCalls,
                        result.cpuSeconds);
  }
  return success();
}

LogicalResult predictPlan(ModuleOp module, const AutoPlanOptions &options,
                          StringRef policy, const planner::PlanShape &planned,
                          SmallVectorImpl<std::string> &lines) {
  StepModel model;
  if (failed(buildStepModel(module, options, policy, model)))
    return failure();
  // The stages as the pp policy cut them: the first unit of each stage.
  planner::PlanShape shape = planned;
  shape.stageStarts.assign(shape.pp, 0);
  std::vector<bool> seen(shape.pp, false);
  for (auto [i, op] : llvm::enumerate(model.units.forward)) {
    IntegerAttr stage = getAttr<Dist::StageAttrHelper>(op);
    int64_t s = stage ? stage.getInt() : 0;
    if (s < 0 || s >= shape.pp || seen[s])
      continue;
    seen[s] = true;
    shape.stageStarts[s] = size_t(model.units.unitOf[i]);
  }
  autoplan::StepEvaluation eval = autoplan::evaluatePlan(model.problem, shape);
  if (!eval.error.empty()) {
    lines.push_back("no predicted step time: " + eval.error);
    return success();
  }
  lines.push_back(llvm::formatv("predicted step {0}, bubble {1:f1}% ({2}, "
                                "the auto planner's model; {3} in {4} GiB "
                                "per device)",
                                seconds(eval.stepSeconds), eval.bubble * 100,
                                options.deviceSpec,
                                eval.fits ? "fits" : "does not fit",
                                sig3(options.memoryGiB))
                      .str());
  return success();
}

} // namespace tessera::dist::plan_detail
