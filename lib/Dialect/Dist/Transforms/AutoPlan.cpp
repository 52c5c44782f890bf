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

#include "tessera/Dialect/Dist/IR/DistAttrs.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Tsr/Analysis/OpMetrics.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Interfaces/CostInterface.h"
#include "tessera/Planner/AutoPlanSearch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>
#include <map>
#include <numeric>

using namespace mlir;
using namespace tessera;
using namespace tessera::dist;
using namespace tessera::dist::plan_detail;
namespace autoplan = tessera::planner::autoplan;

namespace {

/// A storage of the replay: a tensor and its views.
struct Storage {
  autoplan::Unit::Live bytes; ///< its size, in the class a plan scales it by
  enum Kind { Transient, Kept, Gradient } kind = Transient;
  int unit = 0; ///< Kept: whose backward reads it first; Gradient: whose
                ///< backward makes it
  bool forward = false, recomputed = false, pinned = false;
  /// Computed from parameters and constants alone (autoplan::Unit::
  /// sharedBytes when the backward does not read it and an op of each
  /// micro-batch does: one that only other such values read dies in the
  /// first micro-batch's forward).
  bool paramOnly = false, readPerMicroBatch = false;
  /// Read by a forward op dist-recompute copies into the backward.
  bool readByRecomputed = false;
  /// Made by a W op (OpCost::reach: its results lead to no backward op of
  /// an earlier unit); read by one (its unit in lastW), which, deferred,
  /// is its last reader.
  bool byW = false;
  int lastW = -1;
  int lastUse = -1, lastForwardUse = -1, firstBackwardUse = -1;
};

void addLive(autoplan::Unit::Live &to, const autoplan::Unit::Live &b,
             double sign) {
  to.batch += sign * b.batch;
  to.batchSplit += sign * b.batchSplit;
  to.fixed += sign * b.fixed;
  to.fixedSplit += sign * b.fixedSplit;
}

/// Fills each unit's kept activations and live profile (autoplan::Unit) by
/// replaying the step in program order at the full batch the way
/// dist::predictPeakBytes replays a rank's program (views share storage, a
/// tensor dies after its last use, the step's results stay); the arguments
/// are left out (the search counts parameters, state and inputs itself). A
/// value dist-recompute will copy dies after its last forward use and lives
/// again from its first backward use (where the copy is placed).
void replayUnits(Block &body, const llvm::DenseMap<Operation *, int> &opUnit,
                 const llvm::DenseMap<Operation *, int> &reach,
                 const LogicalDim &batchFlow,
                 const llvm::DenseMap<Value, int64_t> &tpValues,
                 const llvm::DenseMap<Operation *, int64_t> &forwardUnit,
                 const llvm::StringMap<int> &paramUnit,
                 autoplan::Problem &problem) {
  std::vector<Storage> storages;
  llvm::DenseMap<Value, int> storageOf;
  // Recomputed storages whose forward op reads each recomputed storage:
  // dist-recompute copies a value where its own copy or a dependent's copy
  // is first needed (the dependent's copy is computed from it).
  std::vector<SmallVector<int, 2>> dependents;
  /// For a forward storage that is not recomputed, the recomputed storages
  /// it is computed from.
  std::vector<SmallVector<int, 2>> sources;
  std::vector<Operation *> order;
  for (Operation &op : body)
    order.push_back(&op);
  // The forward ops dist-recompute copies into the backward: those with a
  // recomputed result that a backward op or another copy reads.
  llvm::DenseSet<Operation *> copiedOps;
  for (Operation *op : llvm::reverse(order)) {
    if (!tsr::isForward(op) || !hasAttr<Dist::RecomputeAttrHelper>(op))
      continue;
    if (llvm::any_of(op->getResults(), [&](Value r) {
          return isRecomputed(r, forwardUnit) &&
                 llvm::any_of(r.getUsers(), [&](Operation *user) {
                   return !tsr::isForward(user) || copiedOps.contains(user);
                 });
        }))
      copiedOps.insert(op);
  }
  // Values the batch does not reach: the step's other arguments, constants
  // and what the forward computes from them alone.
  llvm::DenseSet<Value> paramOnly;
  auto step = cast<func::FuncOp>(body.getParentOp());
  for (BlockArgument arg : body.getArguments())
    if (!batchFlow.carriers.count(arg) &&
        !step.getArgAttr(arg.getArgNumber(),
                         Tsr::InputAttrHelper::getNameStr()))
      paramOnly.insert(arg);
  for (auto [i, op] : llvm::enumerate(order)) {
    bool forward = tsr::isForward(op);
    bool update = hasAttr<Tsr::UpdateAttrHelper>(op);
    // A W op of a stage that starts at its unit (zb-h1): OpCost::reach.
    auto reached = reach.find(op);
    bool isW = reached != reach.end() && reached->second >= opUnit.lookup(op);
    bool fromParams = forward && llvm::all_of(op->getOperands(), [&](Value v) {
                        return paramOnly.contains(v);
                      });
    if (fromParams)
      for (Value r : op->getResults())
        if (!batchFlow.carriers.count(r))
          paramOnly.insert(r);
    for (Value v : op->getOperands()) {
      auto it = storageOf.find(v);
      if (it == storageOf.end())
        continue;
      Storage &s = storages[it->second];
      s.lastUse = int(i);
      s.readPerMicroBatch |= !fromParams;
      s.readByRecomputed |= copiedOps.contains(op);
      // A W op deferred past the backward reads its operands last, even
      // those a later backward op also reads (a residual's gradient).
      if (isW)
        s.lastW = opUnit.lookup(op);
      if (isa<func::ReturnOp>(op))
        s.pinned = true;
      else if (forward)
        s.lastForwardUse = int(i);
      else if (s.forward && !s.recomputed && s.kind == Storage::Transient) {
        s.kind = Storage::Kept;
        s.unit = opUnit.lookup(op);
      } else if (update && !s.forward)
        s.kind = Storage::Gradient;
      if (!forward && s.firstBackwardUse < 0)
        s.firstBackwardUse = int(i);
    }
    for (Value r : op->getResults()) {
      if (auto view = dyn_cast<ViewLikeOpInterface>(op))
        if (auto it = storageOf.find(view.getViewSource());
            it != storageOf.end()) {
          storageOf[r] = it->second;
          continue;
        }
      Storage s;
      double b = tessera::tensorBytes(r.getType());
      bool batch = batchFlow.carriers.count(r), split = tpValues.contains(r);
      (batch ? (split ? s.bytes.batchSplit : s.bytes.batch)
             : (split ? s.bytes.fixedSplit : s.bytes.fixed)) = b;
      s.forward = forward;
      s.paramOnly = forward && paramOnly.contains(r);
      s.byW = isW;
      s.unit = opUnit.lookup(op);
      s.recomputed = forward && isRecomputed(r, forwardUnit) &&
                     llvm::any_of(r.getUsers(), [](Operation *user) {
                       return !tsr::isForward(user);
                     });
      storageOf[r] = int(storages.size());
      storages.push_back(s);
      dependents.emplace_back();
      sources.emplace_back();
    }
    if (forward) {
      // The recomputed storages this op's results are computed from,
      // through values that are not recomputed themselves (a matmul whose
      // output only the next forward op reads): the copy of a result needs
      // theirs.
      SmallVector<int, 4> from;
      for (Value v : op->getOperands())
        if (auto in = storageOf.find(v); in != storageOf.end())
          for (int k : storages[in->second].recomputed
                           ? ArrayRef<int>(in->second)
                           : ArrayRef<int>(sources[in->second]))
            if (!llvm::is_contained(from, k))
              from.push_back(k);
      for (Value r : op->getResults()) {
        int k = storageOf.lookup(r);
        // Within one layer group: dist-recompute copies a group's forward
        // from what it keeps of the groups before.
        auto sameUnit = [&](int in) {
          return storages[in].unit == storages[k].unit;
        };
        if (storages[k].recomputed) {
          for (int in : from)
            if (in != k && sameUnit(in) &&
                !llvm::is_contained(dependents[in], k))
              dependents[in].push_back(k);
        } else if (sources[k].empty()) {
          for (int in : from)
            if (sameUnit(in))
              sources[k].push_back(in);
        }
      }
    }
  }
  // When each recomputed storage's copy is made (its first backward use or
  // the earliest copy of a dependent), and until when a dependent's copy
  // may still read it. Dependents come later in program order.
  for (int k = int(storages.size()) - 1; k >= 0; --k) {
    Storage &s = storages[k];
    if (!s.recomputed)
      continue;
    for (int d : dependents[k]) {
      const Storage &dep = storages[d];
      if (dep.firstBackwardUse < 0)
        continue;
      if (s.firstBackwardUse < 0 || dep.firstBackwardUse < s.firstBackwardUse)
        s.firstBackwardUse = dep.firstBackwardUse;
      s.lastUse = std::max(s.lastUse, dep.firstBackwardUse);
    }
  }
  // Kept activations per unit.
  for (const Storage &s : storages)
    if (s.kind == Storage::Kept) {
      autoplan::Unit &unit = problem.units[s.unit];
      unit.actBytes += s.bytes.batch;
      unit.actBytesSplit += s.bytes.batchSplit;
      unit.actFixedBytes += s.bytes.fixed;
      unit.actFixedBytesSplit += s.bytes.fixedSplit;
    }
  // What a deferred W holds: the batch-carrying values its ops read last
  // that are not its own intermediates.
  for (const Storage &s : storages)
    if (s.lastW >= 0 && !s.byW && !s.pinned) {
      autoplan::Unit &unit = problem.units[s.lastW];
      unit.weightBytes += s.bytes.batch;
      unit.weightBytesSplit += s.bytes.batchSplit;
    }
  // Values computed from parameters alone that a recomputed op reads (or
  // recomputed themselves): with micro-batches dist-recompute leaves them,
  // so the backward's copies read them (autoplan::Unit::paramCopyBytes).
  auto isParamCopy = [](const Storage &s) {
    return s.paramOnly && !s.pinned &&
           (s.recomputed ||
            (s.readByRecomputed && s.kind == Storage::Transient));
  };
  auto isShared = [&](const Storage &s) {
    return s.paramOnly && s.readPerMicroBatch && s.kind == Storage::Transient &&
           !s.recomputed && !s.pinned && !isParamCopy(s);
  };
  for (const Storage &s : storages) {
    autoplan::Unit &unit = problem.units[s.unit];
    if (isShared(s)) {
      unit.sharedBytes += s.bytes.fixed;
      unit.sharedBytesSplit += s.bytes.fixedSplit;
    } else if (isParamCopy(s)) {
      unit.paramCopyBytes += s.bytes.fixed;
      unit.paramCopyBytesSplit += s.bytes.fixedSplit;
    }
  }
  // The replay: what is transient, and per unit its kept activations and
  // gradients alive.
  size_t n = problem.units.size();
  autoplan::Unit::Live transient, heldOnce, shared, paramCopies;
  std::vector<autoplan::Unit::Live> owned(n);
  auto bucket = [&](const Storage &s) -> autoplan::Unit::Live & {
    if (s.kind == Storage::Transient || s.recomputed)
      return transient;
    // Kept without the batch: in actFixedBytes, which the search counts
    // for the whole step.
    if (s.kind == Storage::Kept && s.bytes.batch == 0 &&
        s.bytes.batchSplit == 0)
      return heldOnce;
    return owned[s.unit];
  };
  std::vector<SmallVector<int>> revive(order.size()), dies(order.size());
  for (auto [k, s] : llvm::enumerate(storages)) {
    if (s.pinned)
      continue;
    if (s.recomputed && s.firstBackwardUse >= 0) {
      if (s.lastForwardUse >= 0)
        dies[s.lastForwardUse].push_back(int(k));
      revive[s.firstBackwardUse].push_back(int(k));
    }
    if (s.lastUse >= 0)
      dies[s.lastUse].push_back(int(k));
  }
  // ZeRO-3's gathered copies: dist-partition gathers a parameter for each
  // phase (the forward, the backward) of each micro-batch, and the copy
  // lives from the phase's first use to its last; here over the ops of
  // the parameter's own unit (a later unit's reader, the tied head, is
  // the search's business: received or on the same stage).
  // A recomputed op's copy reads the backward's gather, from the start of
  // its unit's backward (where dist-recompute places the copies).
  std::vector<int> backwardStart(problem.units.size(), -1);
  for (auto [i, op] : llvm::enumerate(order))
    if (!tsr::isForward(op) && !hasAttr<Tsr::UpdateAttrHelper>(op) &&
        opUnit.count(op) && backwardStart[opUnit.lookup(op)] < 0)
      backwardStart[opUnit.lookup(op)] = int(i);
  std::vector<std::pair<double, double>> gatheredAt(order.size(), {0, 0});
  for (BlockArgument arg : body.getArguments()) {
    auto name = getArgAttr<Tsr::ParamAttrHelper>(step, arg.getArgNumber());
    if (!name)
      continue;
    int own = paramUnit.lookup(name.getValue());
    int first[2] = {-1, -1}, last[2] = {-1, -1};
    for (auto [i, op] : llvm::enumerate(order)) {
      if (hasAttr<Tsr::UpdateAttrHelper>(op) || !opUnit.count(op) ||
          opUnit.lookup(op) != own ||
          !llvm::is_contained(op->getOperands(), arg))
        continue;
      int phase = tsr::isForward(op) ? 0 : 1;
      if (first[phase] < 0)
        first[phase] = int(i);
      last[phase] = int(i);
      if (phase == 0 && hasAttr<Dist::RecomputeAttrHelper>(op) &&
          backwardStart[own] >= 0) {
        first[1] = first[1] < 0 ? backwardStart[own]
                                : std::min(first[1], backwardStart[own]);
        last[1] = std::max(last[1], backwardStart[own]);
      }
    }
    double bytes = double(tessera::tensorBytes(arg.getType()));
    for (int phase : {0, 1})
      for (int i = first[phase]; i >= 0 && i <= last[phase]; ++i)
        (tpValues.contains(arg) ? gatheredAt[i].second : gatheredAt[i].first) +=
            bytes;
  }
  // Per unit, its shared values' last forward uses (Live::sharedAhead).
  std::vector<SmallVector<int>> sharedOf(n);
  for (auto [k, st] : llvm::enumerate(storages))
    if (isShared(st))
      sharedOf[st.unit].push_back(int(k));
  std::vector<bool> born(storages.size(), false);
  for (auto [i, op] : llvm::enumerate(order)) {
    for (Value r : op->getResults()) {
      int k = storageOf.lookup(r);
      if (born[k])
        continue;
      born[k] = true;
      addLive(bucket(storages[k]), storages[k].bytes, 1);
      if (isShared(storages[k]))
        addLive(shared, storages[k].bytes, 1);
      if (isParamCopy(storages[k]))
        addLive(paramCopies, storages[k].bytes, 1);
      // Never used, or a recomputed value no forward op reads: dies now.
      if (!storages[k].pinned &&
          (storages[k].lastUse < 0 ||
           (storages[k].recomputed && storages[k].lastForwardUse < 0)))
        dies[i].push_back(k);
    }
    for (int k : revive[i]) {
      addLive(bucket(storages[k]), storages[k].bytes, 1);
      if (isParamCopy(storages[k]))
        addLive(paramCopies, storages[k].bytes, 1);
    }
    if (!hasAttr<Tsr::UpdateAttrHelper>(op) &&
        !isa<func::ReturnOp, tsr::ConstantOp>(op)) {
      int u = opUnit.lookup(op);
      autoplan::Unit::Live point = transient;
      addLive(point, owned[u], 1);
      point.shared = shared.fixed;
      point.sharedSplit = shared.fixedSplit;
      point.paramCopy = paramCopies.fixed;
      point.paramCopySplit = paramCopies.fixedSplit;
      point.params = gatheredAt[i].first;
      point.paramsSplit = gatheredAt[i].second;
      for (int k : sharedOf[u])
        if (storages[k].lastForwardUse >= int(i)) {
          point.sharedAhead += storages[k].bytes.fixed;
          point.sharedAheadSplit += storages[k].bytes.fixedSplit;
        }
      (tsr::isForward(op) ? problem.units[u].forwardLive
                          : problem.units[u].backwardLive)
          .push_back(point);
    }
    for (int k : dies[i]) {
      addLive(bucket(storages[k]), storages[k].bytes, -1);
      if (isShared(storages[k]))
        addLive(shared, storages[k].bytes, -1);
      if (isParamCopy(storages[k]))
        addLive(paramCopies, storages[k].bytes, -1);
    }
  }
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

/// What of a predicted step is not the ranks' own work: " (X of it waiting
/// for shared compute slots; Y of it the driver's ...)", each part when
/// there is some, else "".
std::string stepNote(double shared, double driver) {
  std::string parts;
  if (shared > 0)
    parts = seconds(shared) + " of it waiting for shared compute slots";
  if (driver > 0)
    parts += (parts.empty() ? "" : "; ") + seconds(driver) +
             " of it the driver's, outside the step function";
  return parts.empty() ? "" : " (" + parts + ")";
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
  /// Each parameter's unit: that of its first forward use.
  llvm::StringMap<int> paramUnit;
};

/// A mesh axis size that a trans entry's split over it allows: at least 2
/// (the entry asks for the split) and dividing each dimension it splits.
std::string splitLimits(const PlanFile::Trans &t,
                        const SmallVector<Operation *> &ops, StringRef axis,
                        int64_t devices, std::vector<int64_t> &allowed) {
  for (int64_t size = 2; size <= devices; ++size) {
    if (devices % size != 0)
      continue;
    bool ok = true;
    for (Operation *op : ops) {
      auto iface = dyn_cast<DimAnnotationOpInterface>(op);
      if (!iface)
        return "matches '" + tsr::opNameOrKind(op) +
               "', which has no dimension annotation";
      auto bound = bindOpAnnotation(iface);
      if (!bound)
        return bound.message();
      std::map<std::string, int64_t> factors;
      for (auto &[dim, ax] : t.split)
        if (ax == axis)
          factors[dim] = size;
      ok = ok && bool(annotation::split(*bound, factors));
    }
    if (ok)
      allowed.push_back(size);
  }
  return "";
}

/// The parameters `names` (and their optimizer state) split over pp by a
/// vocabulary split of an interlaced plan: evaluateInterlacedPlan keeps
/// 1/pp of them on each device (Unit::ppSplitParamBytes). One that tp
/// splits too is cut to 1/pp here, for `pp` stages (the interlaced model
/// does not tell its gradients apart; pp 0, the search's, which tries
/// several: left whole).
void markPpSplit(StepModel &model, const llvm::StringSet<> &names, int64_t pp) {
  Block &body = model.step.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto param = getArgAttr<Tsr::ParamAttrHelper>(model.step, i);
    auto state = getArgAttr<Tsr::StateAttrHelper>(model.step, i);
    StringRef name = param   ? param.getValue()
                     : state ? state.getValue().split('/').second
                             : StringRef();
    if (name.empty() || !names.contains(name))
      continue;
    autoplan::Unit &unit = model.problem.units[model.paramUnit.lookup(name)];
    double bytes = double(tessera::tensorBytes(arg.getType()));
    double &whole = param ? unit.paramBytes : unit.stateBytes;
    if (whole >= bytes)
      (param ? unit.ppSplitParamBytes : unit.ppSplitStateBytes) += bytes;
    else if (pp > 0)
      (param ? unit.paramBytesSplit : unit.stateBytesSplit) -=
          bytes * (1.0 - 1.0 / double(pp));
  }
}

/// A constrained plan file's assign and trans entries as constraints on the
/// search (docs/plans.md, "policy": "auto"): each layer group whose forward
/// ops entries put on one stage is pinned there, and each axis a trans
/// entry splits over gets the sizes (>= 2) that divide what it splits.
/// Entries that no cut can satisfy are errors naming them. Whole layer
/// groups an assign entry puts on every device make the search plan
/// interlaced pipelines, and a trans entry over pp beside it splits the
/// parameters it names over pp (markPpSplit).
LogicalResult applyConstraints(StepModel &model, const AutoPlanOptions &options,
                               StringRef policy) {
  if (options.assign.empty() && options.trans.empty())
    return success();
  func::FuncOp f = model.step;
  autoplan::Problem &problem = model.problem;
  const Units &units = model.units;
  auto fail = [&](const Twine &why) {
    return mlir::emitError(f.getLoc(), "dist-plan: plan '")
           << policy << "': " << why;
  };
  llvm::DenseMap<Operation *, size_t> unitOf;
  for (auto [i, op] : llvm::enumerate(units.forward))
    unitOf[op] = size_t(units.unitOf[i]);
  SelectionContext cx = selectionContext(f);
  std::string words = problem.constraints;
  auto say = [&](const std::string &w) {
    words += (words.empty() ? "" : ", ") + w;
  };

  // Pins: per unit, the stages (and the entries) its forward ops go to.
  size_t n = units.names.size();
  std::vector<std::map<int64_t, size_t>> stagesOf(n);
  // Ops on every device (an interlaced pipeline): whole layer groups, which
  // the search leaves out of its stages.
  std::vector<size_t> opsOfUnit(n, 0);
  for (int64_t u : units.unitOf)
    ++opsOfUnit[size_t(u)];
  std::optional<size_t> everyEntry;
  for (const PlanFile::Assign &a : options.assign) {
    if (a.select.backward || a.stage != DistDialect::kEveryStage)
      continue;
    SmallVector<Operation *> ops = selectOps(f, a.select, cx);
    if (ops.empty())
      return matchesNothing(f, "assign", a.index, a.select);
    std::vector<size_t> selected(n, 0);
    for (Operation *op : ops)
      if (auto it = unitOf.find(op); it != unitOf.end())
        ++selected[it->second];
    problem.everyDevice.resize(n, false);
    for (size_t u = 0; u < n; ++u) {
      if (selected[u] == 0)
        continue;
      if (selected[u] != opsOfUnit[u])
        return fail("the constraint assign[" + Twine(a.index) + "] puts " +
                    Twine(selected[u]) + " of the " + Twine(opsOfUnit[u]) +
                    " forward ops of " + units.names[u] +
                    " on every device: the auto search places whole layer "
                    "groups there (select the group)");
      problem.everyDevice[u] = true;
    }
    everyEntry = a.index;
    say("assign[" + std::to_string(a.index) + "] (every device)");
  }
  for (const PlanFile::Assign &a : options.assign) {
    if (a.select.backward || a.stage == DistDialect::kEveryStage)
      continue; // backward ops only: the forward stays where the cut puts it
    SmallVector<Operation *> ops = selectOps(f, a.select, cx);
    if (ops.empty())
      return matchesNothing(f, "assign", a.index, a.select);
    if (everyEntry)
      return fail("the constraints assign[" + Twine(*everyEntry) +
                  "] (every device) and assign[" + Twine(a.index) +
                  "] (stage " + Twine(a.stage) +
                  ") conflict: the auto search cuts an interlaced "
                  "pipeline's stages itself");
    if (options.fixedPp && a.stage >= options.fixedPp)
      return fail("the constraints assign[" + Twine(a.index) + "] (stage " +
                  Twine(a.stage) + ") and mesh.pp = " + Twine(options.fixedPp) +
                  " conflict: stages are numbered from 0");
    for (Operation *op : ops)
      if (auto it = unitOf.find(op); it != unitOf.end())
        stagesOf[it->second].try_emplace(a.stage, a.index);
    say("assign[" + std::to_string(a.index) + "] (stage " +
        std::to_string(a.stage) + ")");
  }
  // A group split over several stages by its entries is placed op by op;
  // the search pins only groups that go to one stage.
  problem.unitStages.assign(n, -1);
  int64_t prevStage = -1, prevUnit = -1;
  size_t prevEntry = 0;
  for (size_t u = 0; u < n; ++u) {
    if (stagesOf[u].size() != 1)
      continue;
    auto [stage, entry] = *stagesOf[u].begin();
    problem.unitStages[u] = stage;
    if (prevUnit >= 0 && stage < prevStage)
      return fail("the constraints assign[" + Twine(prevEntry) + "] (" +
                  units.names[prevUnit] + " on stage " + Twine(prevStage) +
                  ") and assign[" + Twine(entry) + "] (" + units.names[u] +
                  " on stage " + Twine(stage) +
                  ") conflict: the search cuts the layer groups into stages "
                  "in order, and " +
                  units.names[u] + " comes after " + units.names[prevUnit]);
    if (int64_t(u) - prevUnit < stage - prevStage)
      return fail("the constraint assign[" + Twine(entry) + "] (" +
                  units.names[u] + " on stage " + Twine(stage) + ") leaves " +
                  Twine(stage - prevStage - 1) + " stage(s) " +
                  (prevUnit < 0 ? Twine("before it")
                                : "between it and assign[" + Twine(prevEntry) +
                                      "] (" + units.names[prevUnit] +
                                      " on stage " + Twine(prevStage) + ")") +
                  " with " + Twine(int64_t(u) - prevUnit - 1) +
                  " layer group(s) to share: every stage needs one");
    prevStage = stage;
    prevUnit = int64_t(u);
    prevEntry = entry;
  }

  // Splits: the axis sizes each trans entry allows.
  bool dpNarrowed = false;
  for (const PlanFile::Trans &t : options.trans) {
    SmallVector<Operation *> ops = selectOps(f, t.select, cx);
    if (ops.empty())
      return matchesNothing(f, "trans", t.index, t.select);
    if (llvm::any_of(t.split, [](auto &e) { return e.second == "pp"; })) {
      // A vocabulary split of the ops on every device: the parameters the
      // entry names are split over pp (the entry itself is applied to the
      // chosen plan, as any).
      if (problem.everyDevice.empty())
        return fail("the constraint trans[" + Twine(t.index) +
                    "] splits over pp, which only ops on every device (an "
                    "interlaced pipeline: an assign entry with \"stage\": "
                    "\"all\") take");
      if (!t.select.params)
        return fail("the constraint trans[" + Twine(t.index) +
                    "] splits over pp: the auto search needs the parameters "
                    "it splits named (\"params\")");
      llvm::Regex re("^(" + *t.select.params + ")$");
      llvm::StringSet<> names;
      for (const auto &[name, u] : model.paramUnit) {
        if (!re.match(name))
          continue;
        if (!problem.everyDevice[size_t(u)])
          return fail("the constraint trans[" + Twine(t.index) + "] splits " +
                      name + " over pp, but its layer group " +
                      units.names[size_t(u)] + " is not on every device");
        names.insert(name);
      }
      markPpSplit(model, names, 0);
      say("trans[" + std::to_string(t.index) + "] (splits over pp)");
      continue;
    }
    for (StringRef axis : {"dp", "tp"}) {
      if (llvm::none_of(t.split, [&](auto &e) { return e.second == axis; }))
        continue;
      std::vector<int64_t> allowed;
      std::string error = splitLimits(t, ops, axis, options.devices, allowed);
      if (!error.empty())
        return fail("plan entry trans[" + Twine(t.index) + "] " + error);
      // tp: the attention heads' divisors so far; dp: any size until the
      // first entry over dp.
      std::vector<int64_t> &degrees =
          axis == "tp" ? problem.tpDegrees : problem.dpDegrees;
      if (axis == "dp" && !dpNarrowed)
        degrees = allowed;
      else
        llvm::erase_if(degrees, [&](int64_t d) {
          return !llvm::is_contained(allowed, d);
        });
      dpNarrowed = dpNarrowed || axis == "dp";
      problem.transConstrained = true;
      if (degrees.empty() && !allowed.empty()) {
        std::string sizes;
        for (int64_t d : allowed)
          sizes += (sizes.empty() ? "" : ", ") + std::to_string(d);
        return fail("the constraint trans[" + Twine(t.index) + "] allows " +
                    axis + " = " + sizes + ", but " +
                    (axis == "tp" ? "the attention heads and the trans "
                                    "entries before it allow none of them"
                                  : "the trans entries before it allow "
                                    "none of them"));
      }
      int64_t fixed = axis == "tp" ? options.fixedTp : options.fixedDp;
      if (fixed && !llvm::is_contained(allowed, fixed))
        return fail("the constraints trans[" + Twine(t.index) +
                    "] (splits over " + axis + ") and mesh." + axis + " = " +
                    Twine(fixed) + " conflict: the split needs " + axis +
                    " >= 2 dividing the dimensions it splits");
      if (allowed.empty())
        return fail("the constraint trans[" + Twine(t.index) +
                    "] splits over " + axis + ", but no " + axis +
                    " >= 2 that divides --devices " + Twine(options.devices) +
                    " divides the dimensions it splits");
      say("trans[" + std::to_string(t.index) + "] (over " + axis.str() + ")");
    }
  }
  problem.constraints = words;
  return success();
}

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
  // Two virtual stages per device: a fixed plan's prediction, and the
  // auto search, which cuts the layer groups into 2 x pp stages for time.
  bool virtualStages =
      options.schedule == "interleaved" || options.schedule == "zb-v";
  if (virtualStages && policy == "auto" && !options.assign.empty())
    return fail("the constraints' assign entries pin stages, which the "
                "search does not take with two virtual stages per device "
                "(schedule " +
                options.schedule + ")");
  if (options.schedule != "1f1b" && options.schedule != "gpipe" &&
      options.schedule != "zb-h1" && !virtualStages)
    return fail("plans for the 1f1b, gpipe, zb-h1, interleaved or zb-v "
                "schedule, not '" +
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
  problem.zero1 = options.zero1 || options.zero2 || options.zero3;
  problem.zero2 = options.zero2;
  problem.zero3 = options.zero3;
  problem.profileDatabase = options.profileDatabase;
  // One count of model FLOPs for the planner's MFU and the runtime's: the
  // forward and backward as tsr-optimizer counted them (the ops summed here
  // come after canonicalization and CSE, 0.6 % fewer on the tiny GPT).
  if (FloatAttr flops =
          getAttr<Tsr::FlopsPerStepAttrHelper>(f->getParentOfType<ModuleOp>()))
    problem.modelFlopsPerStep = flops.getValueAsDouble();

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
  // A plan's own splits over tp where the trace does not reach (the pieces
  // dist-coshard made of Megatron's ops, when a plan is predicted as it
  // runs).
  for (Operation &op : body) {
    if (tpNames.count(&op) || isa<tsr::ConstantOp>(op))
      continue;
    DictionaryAttr split = getAttr<Dist::SplitAttrHelper>(&op);
    auto iface = dyn_cast<DimAnnotationOpInterface>(&op);
    if (!split || !iface)
      continue;
    for (NamedAttribute e : split) {
      if (cast<StringAttr>(e.getValue()).getValue() != "tp")
        continue;
      auto bound = bindOpAnnotation(iface);
      if (!bound)
        break;
      tpNames[&op] = e.getName().str();
      for (auto [r, spec] :
           llvm::zip(op.getResults(), bound->annotation.outputs))
        if (int64_t d = dimOfName(spec, e.getName().str()); d >= 0)
          tpValues.try_emplace(r, d);
      // Its operands split along it too (a parameter its update splits).
      for (auto [v, spec] :
           llvm::zip(op.getOperands(), bound->annotation.inputs))
        if (int64_t d = dimOfName(spec, e.getName().str()); d >= 0)
          tpValues.try_emplace(v, d);
    }
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
  llvm::StringMap<int> &paramUnit = model.paramUnit;
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
    autoplan::TiedParam tied;
    tied.owner = u;
    for (Operation *op : units.forward)
      if (int r = unitOf[op]; r > u &&
                              llvm::is_contained(op->getOperands(), arg) &&
                              !llvm::is_contained(tied.readers, r))
        tied.readers.push_back(r);
    if (!tied.readers.empty()) {
      tied.bytes = tessera::tensorBytes(arg.getType());
      tied.split = tpValues.contains(arg);
      problem.tied.push_back(std::move(tied));
    }
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
      ++unit.params;
      ++unit.stepValues;
      if (mainDtype.empty())
        mainDtype = tessera::costDtypeName(arg.getType());
    } else if (auto st = getArgAttr<Tsr::StateAttrHelper>(f, i)) {
      int u = paramUnit.lookup(st.getValue().split('/').second);
      autoplan::Unit &unit = problem.units[u];
      (split ? unit.stateBytesSplit : unit.stateBytes) += bytes;
      ++unit.stepValues;
      unitOfValue[arg] = u;
    }
  }
  problem.mainDtype = mainDtype.empty() ? "fp32" : mainDtype;
  // A written plan whose ZeRO-3 shards some parameters only (the auto
  // policy's per-stage choice): the units of the others keep them whole.
  if (options.zero3) {
    std::vector<char> sharded(numUnits, 0);
    bool any = false;
    for (BlockArgument arg : body.getArguments())
      if (auto name = getArgAttr<Tsr::ParamAttrHelper>(f, arg.getArgNumber());
          name && getArgAttr<Dist::Zero3AttrHelper>(f, arg.getArgNumber())) {
        sharded[paramUnit[name.getValue()]] = 1;
        any = true;
      }
    for (size_t u = 0; any && u < numUnits; ++u)
      problem.units[u].paramsWhole = problem.units[u].params > 0 && !sharded[u];
  }
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (auto name = getArgAttr<Tsr::ParamAttrHelper>(f, i)) {
      double &largest =
          problem.units[paramUnit[name.getValue()]].largestParamBytes;
      largest = std::max(largest, double(tessera::tensorBytes(arg.getType())));
    } else if (f.getArgAttr(i, Tsr::InputAttrHelper::getNameStr())) {
      // With the unit of its first reader (planPipeline gives the input to
      // the stages that read it).
      for (Operation *op : units.forward)
        if (llvm::is_contained(op->getOperands(), arg)) {
          problem.units[unitOf[op]].inputBytes +=
              tessera::tensorBytes(arg.getType());
          ++problem.units[unitOf[op]].stepValues;
          break;
        }
    }
  }
  llvm::DenseMap<Operation *, int> opUnit;
  SmallVector<Operation *> opOf; ///< the op of each entry of problem.ops

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
    else {
      // As planPipeline places them: an update op with its largest operand
      // (the parameter), others with their earliest operand.
      bool update = hasAttr<Tsr::UpdateAttrHelper>(&op);
      int64_t largest = -1;
      for (Value v : op.getOperands())
        if (auto it = unitOfValue.find(v); it != unitOfValue.end()) {
          int64_t bytes = update ? tessera::tensorBytes(v.getType()) : 0;
          if (u < 0 || bytes > largest ||
              (bytes == largest && it->second < u)) {
            u = it->second;
            largest = bytes;
          }
        }
    }
    if (u < 0)
      u = 0;
    for (Value r : op.getResults())
      unitOfValue[r] = u;
    opUnit[&op] = u;

    autoplan::OpCost c;
    c.unit = u;
    c.flops = tessera::flopsOf(&op);
    // Model FLOPs as tsr-optimizer counts them for the runtime's MFU: every
    // forward and backward op, not the update.
    c.modelFlops = !hasAttr<Tsr::UpdateAttrHelper>(&op);
    // The runtimes return a reshape's result as a view of its operand.
    c.view = isa<tsr::ReshapeOp>(op);
    c.backward = hasAttr<Tsr::BackwardAttrHelper>(&op);
    c.perMicroBatch = batchFlow.names.count(&op);
    auto tpIt = tpNames.find(&op);
    c.tpSplit = tpIt != tpNames.end();
    auto account = [&](Value v) {
      double b = tessera::tensorBytes(v.getType());
      (batchFlow.carriers.count(v) ? c.batchBytes : c.fixedBytes) += b;
    };
    for (Value v : op.getResults())
      account(v);
    for (Value v : op.getOperands())
      account(v);
    // As the profile database keys it (convert-tsr-to-emitc's op profile).
    c.dtype = tessera::costDtypeOf(&op, problem.mainDtype);
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
    opOf.push_back(&op);

    if (!tsr::isForward(&op))
      continue;
    // An op that dist-recompute copies into the backward runs twice.
    if (llvm::any_of(op.getResults(), [&](Value r) {
          return isRecomputed(r, forwardUnit) &&
                 llvm::any_of(r.getUsers(), [](Operation *user) {
                   return !tsr::isForward(user);
                 });
        })) {
      problem.ops.push_back(c);
      opOf.push_back(&op);
    }
    // Values read by a later unit's forward cross the stage boundary there.
    for (Value r : op.getResults()) {
      if (!batchFlow.carriers.count(r))
        continue;
      double b = tessera::tensorBytes(r.getType());
      llvm::SmallDenseSet<int> readers;
      for (Operation *user : r.getUsers())
        if (auto it = unitOf.find(user);
            tsr::isForward(user) && it != unitOf.end() && it->second > u)
          readers.insert(it->second);
      for (int v : readers)
        problem.edges.push_back({u, v, b});
    }
  }
  // zb-h1's B and W: the lowest unit each backward op leads to through
  // backward ops (consumers come later in program order).
  llvm::DenseMap<Operation *, int> reach;
  for (Operation &op : llvm::reverse(body)) {
    if (!hasAttr<Tsr::BackwardAttrHelper>(&op))
      continue;
    int r = std::numeric_limits<int>::max();
    for (Value v : op.getResults())
      for (Operation *user : v.getUsers())
        if (hasAttr<Tsr::BackwardAttrHelper>(user))
          if (auto it = opUnit.find(user); it != opUnit.end())
            r = std::min({r, it->second, reach.lookup(user)});
    reach[&op] = r;
  }
  assert(opOf.size() == problem.ops.size() && "one op per cost entry");
  for (auto [c, op] : llvm::zip_equal(problem.ops, opOf))
    if (auto it = reach.find(op); it != reach.end())
      c.reach = it->second;
  replayUnits(body, opUnit, reach, batchFlow, tpValues, forwardUnit,
              model.paramUnit, problem);
  return applyConstraints(model, options, policy);
}

} // namespace

namespace {
/// Marks (or unmarks) every forward op of every training step of `module`
/// dist.recompute, except those before and after the numbered layers (the
/// embedding and the head, whose results the backward reads right away),
/// and with `only`, except those of other layer groups. Returns whether any
/// op was marked.
bool markRecomputeAll(ModuleOp module, bool mark,
                      const llvm::DenseSet<int64_t> *only = nullptr) {
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
      if (StringRef(units.names[units.unitOf[i]]).starts_with("(") ||
          (only && !only->contains(units.unitOf[i])))
        continue;
      setAttr<Dist::RecomputeAttrHelper>(op, UnitAttr::get(f.getContext()));
      any = true;
    }
  }
  return any;
}
} // namespace

LogicalResult planAuto(ModuleOp module, const AutoPlanOptions &options,
                       planner::PlanShape &shape, bool &zero2, bool &zero3,
                       std::vector<std::string> &zero3Params) {
  auto fail = [&](const Twine &why) {
    return mlir::emitError(module.getLoc(), "dist-plan: plan 'auto': ") << why;
  };
  StepModel model;
  if (failed(buildStepModel(module, options, "auto", model)))
    return failure();
  autoplan::Result result = autoplan::searchAutoPlan(model.problem);
  zero2 = options.zero2;
  zero3 = options.zero3;
  // No plan fits in memory: the memory savers as plan choices. ZeRO-2
  // (optimizer state and gradients sharded over dp), ZeRO-3 (parameters
  // too) and recomputing every layer group's activations (dist-recompute)
  // are each tried alone, the faster plan that fits wins; if none fits
  // alone, ZeRO-3 and recomputation together. Recompute marks stay only if
  // the chosen plan recomputes.
  bool recomputed = false, recomputeSome = false;
  llvm::DenseSet<int64_t> recomputedUnits; ///< with recomputeSome
  // A saver kept on some stages only: the chosen plan's new figures.
  auto adopt = [](autoplan::Result &r, const autoplan::StepEvaluation &e) {
    r.mfu *= r.stepSeconds / e.stepSeconds;
    r.stepSeconds = e.stepSeconds;
    r.bubble = e.bubble;
    r.sharedComputeSeconds = e.sharedComputeSeconds;
    r.driverSeconds = e.driverSeconds;
    r.stages = e.stages;
  };
  zero3Params.clear();
  std::vector<size_t> zero3Stages; ///< with zero3Params: the stages sharded
  /// The plan with the saver(s) on every stage, when a mix replaced it.
  std::optional<autoplan::Result> everySaver;
  if (!result.error.empty() && result.candidates > 0 && result.feasible == 0) {
    struct Saver {
      bool zero2, zero3, recompute;
      const char *what;
      StepModel model;
      autoplan::Result result;
    };
    SmallVector<Saver, 4> savers;
    bool sharding = !options.zero3 && options.devices > 1;
    if (sharding && !options.zero2)
      savers.push_back({true, false, false, "with ZeRO-2", {}, {}});
    if (sharding)
      savers.push_back({false, true, false, "with ZeRO-3", {}, {}});
    savers.push_back({options.zero2,
                      options.zero3,
                      true,
                      "when every layer group's activations are recomputed",
                      {},
                      {}});
    if (sharding)
      savers.push_back(
          {false, true, true, "with ZeRO-3 and recomputation", {}, {}});
    auto tryOne = [&](Saver &saver) -> LogicalResult {
      if (saver.recompute && !markRecomputeAll(module, true))
        return success(); // nothing to recompute: leave it unfitted
      AutoPlanOptions o = options;
      o.zero2 = saver.zero2;
      o.zero3 = saver.zero3;
      if (failed(buildStepModel(module, o, "auto", saver.model)))
        return failure();
      saver.result = autoplan::searchAutoPlan(saver.model.problem);
      if (saver.recompute)
        markRecomputeAll(module, false);
      return success();
    };
    Saver *best = nullptr;
    std::string minima;
    for (Saver &saver : savers) {
      // Both together only when none alone fits.
      if (saver.zero3 && saver.recompute && saver.zero3 != options.zero3 &&
          best)
        break;
      if (failed(tryOne(saver)))
        return failure();
      if (saver.result.error.empty()) {
        if (!best || saver.result.stepSeconds < best->result.stepSeconds)
          best = &saver;
      } else if (saver.result.leastBytes > 0) {
        minima += ", " + std::string(minima.empty() ? "and " : "") +
                  "at least " + gib(saver.result.leastBytes) + " GiB " +
                  saver.what;
      }
    }
    bool mixZero3 = best && best->zero3 && !options.zero3;
    if (best && (best->recompute || mixZero3)) {
      // Per stage: each stage takes the fastest variant of the step in
      // which it fits (as is, parameters whole under ZeRO-3 with their
      // optimizer state sharded as ZeRO-1's, activations kept rather than
      // recomputed), over every cut of the units into its stages
      // (autoplan::searchMixedStages), on the mesh the saver chose and
      // its runners-up (ZeRO-3 only where dp > 1): a stage that fits
      // without a saver keeps its speed, and the cut and mesh may move
      // for it.
      struct Variant {
        bool recompute, sharded;
      };
      std::vector<Variant> kinds;
      std::vector<autoplan::Problem> variants;
      for (bool rc : {false, true}) {
        if (rc && !best->recompute)
          continue;
        autoplan::Problem problem;
        if (rc || !best->recompute) {
          problem = best->model.problem;
        } else {
          AutoPlanOptions o = options;
          o.zero2 = best->zero2;
          o.zero3 = best->zero3;
          StepModel plain;
          if (failed(buildStepModel(module, o, "auto", plain)))
            return failure();
          problem = std::move(plain.problem);
        }
        if (mixZero3) {
          autoplan::Problem whole = problem;
          for (autoplan::Unit &u : whole.units)
            u.paramsWhole = true;
          kinds.push_back({rc, false});
          variants.push_back(std::move(whole));
        }
        kinds.push_back({rc, best->zero3});
        variants.push_back(std::move(problem));
      }
      std::vector<planner::PlanShape> meshes = {best->result.shape};
      for (const autoplan::Candidate &c : best->result.runnersUp)
        meshes.push_back(c.shape);
      autoplan::MixedPlan mixed;
      mixed.error = "no mesh";
      for (const planner::PlanShape &mesh : meshes) {
        if (mixZero3 && mesh.dp == 1)
          continue;
        autoplan::MixedPlan one = autoplan::searchMixedStages(variants, mesh);
        if (one.error.empty() &&
            (!mixed.error.empty() ||
             one.evaluation.stepSeconds < mixed.evaluation.stepSeconds))
          mixed = std::move(one);
      }
      llvm::DenseSet<int64_t> rcUnits;
      bool allRc = true, anySharded = false, allSharded = true;
      if (mixed.error.empty())
        for (auto [u, v] : llvm::enumerate(mixed.unitVariant)) {
          const Variant &k = kinds[size_t(v)];
          if (k.recompute)
            rcUnits.insert(int64_t(u));
          allRc = allRc && k.recompute;
          anySharded |= k.sharded;
          allSharded = allSharded && k.sharded;
        }
      // Kept when it is no slower and still takes the savers chosen (each
      // on one stage at least).
      if (mixed.error.empty() && mixed.evaluation.fits &&
          mixed.evaluation.stepSeconds <= best->result.stepSeconds &&
          (!best->recompute || !rcUnits.empty()) && (!mixZero3 || anySharded)) {
        everySaver = best->result;
        adopt(best->result, mixed.evaluation);
        best->result.shape = mixed.shape;
        best->model.problem = std::move(mixed.problem);
        if (best->recompute && !allRc) {
          recomputedUnits = std::move(rcUnits);
          recomputeSome = true;
        }
        if (mixZero3 && !allSharded) {
          for (auto [i, st] : llvm::enumerate(best->result.stages))
            for (size_t u = st.firstUnit; u <= st.lastUnit; ++u)
              if (!best->model.problem.units[u].paramsWhole) {
                zero3Stages.push_back(i);
                break;
              }
          for (const auto &[name, u] : best->model.paramUnit)
            if (!best->model.problem.units[u].paramsWhole)
              zero3Params.push_back(name.str());
          llvm::sort(zero3Params);
        }
      }
    }
    if (best) {
      if (best->recompute)
        markRecomputeAll(module, true,
                         recomputeSome ? &recomputedUnits : nullptr);
      model = std::move(best->model);
      result = std::move(best->result);
      recomputed = best->recompute;
      // (With dp = 1 ZeRO-3 changes nothing; such a plan cannot be the one
      // that made the difference, but the flag says what the plan does.)
      zero3 = best->zero3 && result.shape.dp > 1;
      zero2 = best->zero2 && result.shape.dp > 1;
    } else {
      result.error += minima;
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
      // Zero bubble: the micro-batch's F, B (what the stage before waits
      // for), W (weight gradients, deferred) and the stages' sends.
      std::string parts;
      if (options.schedule == "zb-h1")
        parts = " (F " + seconds(s.microForward) + ", B " +
                seconds(std::max(0.0, s.microSeconds - s.microForward -
                                          s.microWeight - s.microSends)) +
                ", W " + seconds(s.microWeight) + ", sends " +
                seconds(s.microSends) + ")";
      os << llvm::formatv("  stage {0}: units {1} ({2} of {3}), {4} GiB per "
                          "device ({5} micro-batch(es) in flight), {6} per "
                          "micro-batch{7}\n",
                          i, names, s.lastUnit - s.firstUnit + 1, numUnits,
                          gib(s.memoryBytes), s.inFlight,
                          seconds(s.microSeconds), parts);
    }
    // An interlaced pipeline (a constraint's assign entry with "stage":
    // "all"): the stages above fold in their share of these.
    std::string everywhere;
    for (size_t u = 0; u < problem.everyDevice.size(); ++u)
      if (problem.everyDevice[u])
        everywhere += (everywhere.empty() ? "" : ", ") + units.names[u];
    if (!everywhere.empty())
      os << "  every device: " << everywhere
         << " (each stage does 1/pp of each micro-batch's work, with the "
            "communication over pp)\n";
    os << llvm::formatv(
        "  predicted step {0}{1}, bubble {2:f1}%, MFU "
        "{3:f1}% ({4} model FLOPs per step)\n",
        seconds(result.stepSeconds),
        stepNote(result.sharedComputeSeconds, result.driverSeconds),
        result.bubble * 100, result.mfu * 100, sig3(result.modelFlops));
    if (recomputed && !recomputeSome)
      os << "  recompute: every layer group (no plan fits in memory "
            "without)\n";
    if (recomputeSome) {
      // The stages whose layer groups are recomputed.
      std::string which;
      for (auto [i, st] : llvm::enumerate(result.stages))
        if (recomputedUnits.contains(int64_t(st.firstUnit)))
          which += (which.empty() ? "" : ", ") + std::to_string(i);
      os << "  recompute: the layer groups of stage(s) " << which
         << " (no plan fits in memory without; the other stages fit)\n";
    }
    if (zero3 && !options.zero3 && zero3Stages.empty())
      os << "  zero3: parameters sharded over dp (no plan fits in memory "
            "without)\n";
    if (zero3 && !zero3Stages.empty()) {
      std::string which;
      for (size_t i : zero3Stages)
        which += (which.empty() ? "" : ", ") + std::to_string(i);
      os << "  zero3: the parameters of stage(s) " << which
         << " sharded over dp (no plan fits in memory without; the other "
            "stages fit with theirs whole)\n";
    }
    if (zero2 && !options.zero2)
      os << "  zero2: optimizer state and gradients sharded over dp (no "
            "plan fits in memory without)\n";
    if (everySaver) {
      // What keeping the savers to the stages that need them saved, and
      // where the plan moved for it.
      const planner::PlanShape &e = everySaver->shape;
      std::string starts;
      for (size_t u : e.stageStarts)
        starts += (starts.empty() ? "" : ", ") + std::to_string(u);
      os << llvm::formatv("  savers per stage: predicted {0} against {1} "
                          "with them on every stage (mesh [dp = {2}, tp = "
                          "{3}, pp = {4}], {5} micro-batch(es), stages from "
                          "unit(s) {6})\n",
                          seconds(result.stepSeconds),
                          seconds(everySaver->stepSeconds), e.dp, e.tp, e.pp,
                          e.microBatches, starts);
    }
    for (const autoplan::Candidate &c : result.runnersUp)
      os << llvm::formatv("  also fits: [dp = {0}, tp = {1}, pp = {2}], {3} "
                          "micro-batch(es): {4}\n",
                          c.shape.dp, c.shape.tp, c.shape.pp,
                          c.shape.microBatches, seconds(c.stepSeconds));
    // Views (reshapes) take no time and are never looked up.
    if (!options.profileDatabase.empty())
      os << llvm::formatv(
          "  profile database: {0} of {1} op(s) timed by measurement\n",
          result.profiledOps, result.pricedOps);
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
  // The stages as the pp policy cut them: the first unit of each stage
  // (each virtual stage, with several per device).
  planner::PlanShape shape = planned;
  std::vector<int64_t> stageDevices;
  if (dist::PipelineAttr pipeline = dist::getEnclosingPipeline(module);
      pipeline && pipeline.getStageDevices()) {
    shape.pp = pipeline.numStages(planned.pp);
    for (int64_t s = 0; s < shape.pp; ++s)
      stageDevices.push_back(pipeline.deviceOf(s));
  }
  shape.stageStarts.assign(shape.pp, 0);
  std::vector<bool> seen(shape.pp, false);
  // An interlaced pipeline: the units whose ops run on every device.
  std::vector<bool> everyDevice(model.units.names.size(), false);
  bool interlaced = false;
  for (auto [i, op] : llvm::enumerate(model.units.forward)) {
    IntegerAttr stage = getAttr<Dist::StageAttrHelper>(op);
    int64_t s = stage ? stage.getInt() : 0;
    if (s == DistDialect::kEveryStage) {
      everyDevice[model.units.unitOf[i]] = true;
      interlaced = true;
      continue;
    }
    if (s < 0 || s >= shape.pp || seen[s])
      continue;
    seen[s] = true;
    shape.stageStarts[s] = size_t(model.units.unitOf[i]);
  }
  // A vocabulary split over pp (a trans entry over pp on the ops on every
  // device): each device holds 1/pp of those parameters and their state.
  if (interlaced && shape.pp > 1) {
    Block &body = model.step.getBody().front();
    llvm::StringSet<> byPp;
    for (Operation &op : body) {
      if (!isa<tsr::SgdUpdateOp, tsr::AdamwUpdateOp>(op))
        continue;
      auto arg = dyn_cast<BlockArgument>(op.getOperand(0));
      if (!arg || !splitOver(&op, "pp"))
        continue;
      if (auto name =
              getArgAttr<Tsr::ParamAttrHelper>(model.step, arg.getArgNumber()))
        byPp.insert(name.getValue());
    }
    markPpSplit(model, byPp, shape.pp);
  }
  autoplan::StepEvaluation eval =
      interlaced ? autoplan::evaluateInterlacedPlan(model.problem, shape,
                                                    everyDevice, stageDevices)
      : stageDevices.empty()
          ? autoplan::evaluatePlan(model.problem, shape)
          : autoplan::evaluateVirtualPlan(model.problem, shape, stageDevices);
  if (!eval.error.empty()) {
    lines.push_back("no predicted step time: " + eval.error);
    return success();
  }
  // Per stage; with virtual stages, per device (each device's peak holds
  // all of its stages).
  std::string memory;
  if (stageDevices.empty()) {
    for (const autoplan::StagePrediction &s : eval.stages)
      memory += (memory.empty() ? "" : ", ") + gib(s.memoryBytes);
  } else {
    for (int64_t dev = 0; dev < planned.pp; ++dev)
      for (auto [s, d] : llvm::enumerate(stageDevices))
        if (d == dev) {
          memory +=
              (memory.empty() ? "" : ", ") + gib(eval.stages[s].memoryBytes);
          break;
        }
  }
  lines.push_back(
      llvm::formatv("predicted step {0}{7}, bubble {1:f1}%, memory "
                    "{2} GiB{3} ({4}, the auto "
                    "planner's model{8}; {5} in {6} GiB per device)",
                    seconds(eval.stepSeconds), eval.bubble * 100, memory,
                    !stageDevices.empty()    ? " by device"
                    : eval.stages.size() > 1 ? " per device by stage"
                                             : " per device",
                    options.deviceSpec, eval.fits ? "fits" : "does not fit",
                    sig3(options.memoryGiB),
                    stepNote(eval.sharedComputeSeconds, eval.driverSeconds),
                    interlaced ? " with the ops on every device in each "
                                 "stage, 1/pp of each micro-batch"
                               : "")
          .str());
  if (!options.profileDatabase.empty())
    lines.push_back(
        llvm::formatv("profile database: {0} of {1} op(s) timed by measurement",
                      eval.profiledOps, eval.pricedOps)
            .str());
  return success();
}

} // namespace tessera::dist::plan_detail
