//===- PlanPolicies.cpp - dist-plan's built-in policies -------------------===//
//
// The built-in policies of dist-plan (dp, tp, pp, ZeRO-1), which the auto
// policy reuses: they write dist.split (op-trans), dist.batch and
// dist.stage (op-assign) on the ops of a training step. Plan.cpp is the
// pass: it reads the plan (options, a policy product or a plan file) and
// calls these; PlanFile.cpp reads plan files.
//
// Which dimension of which op to split comes from tracing a "logical
// dimension" through the annotations: from a seed (a value and one of its
// dimensions), each op that sees the dimension as the outermost factor of
// one of its operand or result dimensions gets that annotation name, and
// every other operand or result holding the same name carries it on. This
// is how the batch reaches every op of the forward and the backward, how
// attention heads flow from the reshape that creates them, and how the MLP
// hidden dimension reaches the up (and gate) and down projections around
// the activation.
//
//===----------------------------------------------------------------------===//

#include "PlanUtils.h"
#include "tessera/Dialect/Dist/IR/DistAttrs.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Tsr/Analysis/OpMetrics.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Interfaces/CostInterface.h"
#include "tessera/Interfaces/DimAnnotationInterface.h"
#include "tessera/Support/InputFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Regex.h"

#include <deque>
#include <limits>

using namespace mlir;
using namespace tessera;
using namespace tessera::dist;

namespace {

//===----------------------------------------------------------------------===//
// Logical dimensions
//===----------------------------------------------------------------------===//

/// The annotation name of dimension `dim` of one entry, if the dimension's
/// outermost factor is a named atom.
std::string outermostName(const annotation::TensorSpec &spec, int64_t dim) {
  if (dim < 0 || dim >= int64_t(spec.dims.size()))
    return "";
  const annotation::Atom &atom = spec.dims[dim].atoms.front();
  return atom.isBroadcast() ? "" : atom.name;
}

} // namespace

// Shared with the auto policy (AutoPlan.cpp) through PlanUtils.h.
namespace tessera::dist::plan_detail {

int64_t dimOfName(const annotation::TensorSpec &spec, const std::string &name) {
  for (auto [i, dim] : llvm::enumerate(spec.dims))
    if (!dim.atoms.front().isBroadcast() && dim.atoms.front().name == name)
      return i;
  return -1;
}

/// Traces a logical dimension of size `factor`-divisible extent from the
/// seeds through the ops of `body`, both from operands to results and, if
/// `backward`, from results to operands. `accept` may veto an op.
LogicalDim traceDim(Block &body, ArrayRef<std::pair<Value, int64_t>> seeds,
                    int64_t factor, bool backward,
                    llvm::function_ref<bool(Operation *)> accept) {
  LogicalDim flow;
  std::deque<Value> work;
  auto mark = [&](Value v, int64_t dim) {
    if (flow.carriers.try_emplace(v, dim).second)
      work.push_back(v);
  };
  for (auto [v, d] : seeds)
    mark(v, d);
  llvm::DenseMap<Operation *, bool> visited;
  auto visit = [&](Operation *op) {
    if (!op || op->getBlock() != &body || visited.count(op) || !accept(op))
      return;
    auto iface = dyn_cast<DimAnnotationOpInterface>(op);
    if (!iface)
      return;
    auto bound = bindOpAnnotation(iface);
    if (!bound)
      return;
    // The names the carried dimension has in this op: they must agree.
    std::string name;
    bool conflict = false;
    auto consider = [&](Value v, const annotation::TensorSpec &spec) {
      auto it = flow.carriers.find(v);
      if (it == flow.carriers.end())
        return;
      std::string n = outermostName(spec, it->second);
      if (n.empty() || (!name.empty() && n != name))
        conflict = true;
      else
        name = n;
    };
    for (auto [v, spec] :
         llvm::zip(op->getOperands(), bound->annotation.inputs))
      consider(v, spec);
    if (backward)
      for (auto [v, spec] :
           llvm::zip(op->getResults(), bound->annotation.outputs))
        consider(v, spec);
    if (name.empty() || conflict || !bound->isSplittable(name) ||
        bound->sizes.at(name) % factor != 0)
      return;
    visited[op] = true;
    flow.names[op] = name;
    for (auto [v, spec] :
         llvm::zip(op->getResults(), bound->annotation.outputs)) {
      int64_t d = dimOfName(spec, name);
      if (d >= 0)
        mark(v, d);
    }
    if (backward)
      for (auto [v, spec] :
           llvm::zip(op->getOperands(), bound->annotation.inputs)) {
        int64_t d = dimOfName(spec, name);
        if (d >= 0)
          mark(v, d);
      }
  };
  while (!work.empty()) {
    Value v = work.front();
    work.pop_front();
    for (Operation *user : v.getUsers())
      visit(user);
    if (backward)
      visit(v.getDefiningOp());
  }
  return flow;
}

//===----------------------------------------------------------------------===//
// Costs and stages
//===----------------------------------------------------------------------===//

namespace {

/// The top-level module of an ONNX node name as PyTorch's exporter writes
/// it: "fc1" for "/fc1/Gemm" and "/fc1/act/Relu"; empty for a node of no
/// module ("/Relu", from a functional call in forward).
StringRef topModule(StringRef name) {
  if (!name.consume_front("/"))
    return {};
  auto [module, rest] = name.split('/');
  return rest.empty() ? StringRef() : module;
}

/// The units of a model without numbered layers: the runs of consecutive
/// ops of one top-level module (an op of no module joins the run before
/// it; ops before the first module join the first). A module whose ops
/// come back later forms a new run, named "<module>#<k>", so every unit
/// is contiguous in program order as the stages need.
void groupByModules(Units &units) {
  units.byModules = true;
  std::vector<int64_t> unitOf(units.forward.size(), -1);
  llvm::StringMap<int64_t> runs;
  std::string current;
  for (auto [i, op] : llvm::enumerate(units.forward)) {
    std::string name = tsr::opName(op);
    StringRef module = topModule(name);
    if (!module.empty() && module != current) {
      current = module.str();
      int64_t k = ++runs[current];
      units.names.push_back(k == 1 ? current
                                   : current + "#" + std::to_string(k));
    }
    unitOf[i] = int64_t(units.names.size()) - 1;
  }
  if (units.names.empty())
    units.names.push_back("(the whole model)");
  for (int64_t &u : unitOf)
    u = std::max<int64_t>(u, 0);
  units.unitOf = std::move(unitOf);
}

} // namespace

Units groupUnits(Block &body) {
  Units units;
  // Units: the forward ops grouped by layer ("h.3", "layers.3", ...); ops
  // before the first layer form the first unit, after the last the last.
  // A model without numbered layers is grouped by its modules.
  llvm::Regex layer("[/.]([A-Za-z_]+)\\.([0-9]+)[/.]");
  for (Operation &op : body)
    if (tsr::isForward(&op) && !isa<tsr::ConstantOp, func::ReturnOp>(op))
      units.forward.push_back(&op);
  std::vector<int64_t> unitOf(units.forward.size(), -1);
  llvm::StringMap<int64_t> layerUnit;
  std::vector<std::string> names{"(before the layers)"};
  // Ops computed from parameters alone (a weight's bf16 copy, hoisted to
  // the top by tsr-mixed-precision) belong to their layer but do not mark
  // where the layers start or end for the ops around them.
  llvm::DenseSet<Operation *> paramOnly;
  auto isParamOnly = [&](Operation *op) {
    return llvm::all_of(op->getOperands(), [&](Value v) {
      if (auto arg = dyn_cast<BlockArgument>(v))
        return arg.getOwner() == &body &&
               isa<func::FuncOp>(body.getParentOp()) &&
               getArgAttr<Tsr::ParamAttrHelper>(
                   cast<func::FuncOp>(body.getParentOp()),
                   arg.getArgNumber()) != nullptr;
      Operation *d = v.getDefiningOp();
      return d && (isa<tsr::ConstantOp>(d) || paramOnly.contains(d));
    });
  };
  int64_t lastLayerOp = -1, lastAny = -1;
  for (auto [i, op] : llvm::enumerate(units.forward)) {
    if (isParamOnly(op))
      paramOnly.insert(op);
    SmallVector<StringRef> m;
    std::string name = tsr::opName(op);
    if (layer.match(name, &m)) {
      std::string key = (m[1] + "." + m[2]).str();
      if (!layerUnit.count(key)) {
        layerUnit[key] = layerUnit.size() + 1;
        names.push_back(key);
      }
      unitOf[i] = layerUnit[key];
      lastAny = i;
      if (!paramOnly.contains(op))
        lastLayerOp = i;
    }
  }
  if (lastLayerOp < 0)
    lastLayerOp = lastAny;
  if (layerUnit.empty()) {
    groupByModules(units);
    return units;
  }
  names.push_back("(after the layers)");
  int64_t numUnits = layerUnit.size() + 2;
  int64_t current = 0;
  for (size_t i = 0; i < units.forward.size(); ++i) {
    bool marks = !paramOnly.contains(units.forward[i]);
    if (unitOf[i] >= 0 && marks)
      current = unitOf[i];
    else if (int64_t(i) > lastLayerOp && lastLayerOp >= 0)
      current = numUnits - 1;
    if (unitOf[i] < 0)
      unitOf[i] = current;
  }
  // Drop empty units (e.g. no ops after the last layer).
  std::vector<int64_t> compact(numUnits, -1);
  for (int64_t u : unitOf)
    compact[u] = 0;
  for (int64_t u = 0; u < numUnits; ++u)
    if (compact[u] == 0) {
      compact[u] = units.names.size();
      units.names.push_back(names[u]);
    }
  for (int64_t u : unitOf)
    units.unitOf.push_back(compact[u]);
  return units;
}

namespace {

/// A projection: a forward matmul by a matrix (a rank-2 right operand).
bool isProjection(Operation *op) {
  auto m = dyn_cast<tsr::MatmulOp>(op);
  return m && tsr::isForward(op) && m.getRhs().getType().getRank() == 2;
}

/// Whether `v` is computed from projections' results by elementwise ops
/// only: walking back through elementwise ops over the values of `v`'s
/// shape (operands of other shapes are broadcast: biases, scalars), every
/// path ends at a projection. This is the input of an MLP's down
/// projection -- activation(up(x)), or silu(gate(x)) * up(x) of a GLU --
/// and not that of an attention output (a reshape of heads) or of a head
/// after a normalisation (a reduction, or the residual stream back to the
/// embedding).
bool isProjectedActivation(Value v) {
  // Shapes, not types: a cast to another element type (bf16 storage,
  // tsr-mixed-precision) continues the path.
  ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
  SmallVector<Value> work{v};
  DenseSet<Value> seen;
  bool activation = false;
  while (!work.empty()) {
    Value cur = work.pop_back_val();
    if (!seen.insert(cur).second)
      continue;
    Operation *def = cur.getDefiningOp();
    if (!def || !tsr::isForward(def))
      return false;
    if (isProjection(def))
      continue;
    if (!isElementwise(def))
      return false;
    // An op whose annotation is all `*` but that has no operand of this
    // shape (a slice, a broadcast) does not continue the path.
    size_t before = work.size();
    for (Value operand : def->getOperands())
      if (auto t = dyn_cast<RankedTensorType>(operand.getType());
          t && t.getShape() == shape)
        work.push_back(operand);
    if (work.size() == before)
      return false;
    // Casts alone (bf16 storage) are no activation.
    activation |= !isa<tsr::CastOp>(def);
  }
  // A projection fed straight into another (no activation between) is
  // one linear map: nothing says which dimension is the hidden one.
  return activation;
}

} // namespace

void tensorParallelSeeds(Block &body,
                         SmallVectorImpl<std::pair<Value, int64_t>> &heads,
                         SmallVectorImpl<std::pair<Value, int64_t>> &hidden) {
  for (Operation &op : body) {
    if (!tsr::isForward(&op))
      continue;
    if (auto r = dyn_cast<tsr::ReshapeOp>(op)) {
      auto in = r.getInput().getType(), out = r.getType();
      if (out.getRank() == in.getRank() + 1 && out.getRank() >= 3 &&
          in.getShape().drop_back() == out.getShape().drop_back(2) &&
          out.getShape().back() * out.getShape()[out.getRank() - 2] ==
              in.getShape().back())
        heads.push_back({r.getResult(), out.getRank() - 2});
    }
    // The MLP's hidden dimension: the contracted dimension of a down
    // projection whose input is an activation of up projections (GELU,
    // ReLU, SiLU, GLU products -- any elementwise ops, in any dialect).
    if (isProjection(&op)) {
      Value in = cast<tsr::MatmulOp>(op).getLhs();
      if (isProjectedActivation(in))
        hidden.push_back(
            {in, cast<RankedTensorType>(in.getType()).getRank() - 1});
    }
  }
}

} // namespace tessera::dist::plan_detail

namespace {

/// Splits `costs` (one per unit, in order) into `parts` contiguous groups
/// minimising the largest group: returns the first unit of each group.
std::vector<size_t> balance(const std::vector<double> &costs, int64_t parts) {
  size_t n = costs.size();
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + costs[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][i]: the first i units in k groups; cut[k][i]: start of group k.
  std::vector<std::vector<double>> best(parts + 1,
                                        std::vector<double>(n + 1, inf));
  std::vector<std::vector<size_t>> cut(parts + 1, std::vector<size_t>(n + 1));
  best[0][0] = 0;
  for (int64_t k = 1; k <= parts; ++k)
    for (size_t i = k; i <= n; ++i)
      for (size_t j = k - 1; j < i; ++j) {
        double v = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (v < best[k][i]) {
          best[k][i] = v;
          cut[k][i] = j;
        }
      }
  std::vector<size_t> starts(parts);
  size_t i = n;
  for (int64_t k = parts; k >= 1; --k) {
    starts[k - 1] = cut[k][i];
    i = cut[k][i];
  }
  return starts;
}

} // namespace

//===----------------------------------------------------------------------===//
// The policies
//===----------------------------------------------------------------------===//

namespace tessera::dist::plan_detail {

/// Adds `name -> axis` to the op's dist.split.
void addSplit(Operation *op, StringRef name, StringRef axis) {
  MLIRContext *ctx = op->getContext();
  NamedAttrList entries;
  if (auto old = getAttr<Dist::SplitAttrHelper>(op))
    entries.append(old.getValue());
  for (auto &e : entries)
    if (cast<StringAttr>(e.getValue()).getValue() == axis)
      return; // one split per axis per op: the first wins
  entries.set(name, StringAttr::get(ctx, axis));
  setAttr<Dist::SplitAttrHelper>(op, entries.getDictionary(ctx));
}

std::optional<std::string> splitOver(Operation *op, StringRef axis) {
  if (auto split = getAttr<Dist::SplitAttrHelper>(op))
    for (NamedAttribute e : split)
      if (auto a = dyn_cast<StringAttr>(e.getValue());
          a && a.getValue() == axis)
        return e.getName().str();
  return std::nullopt;
}

LogicalResult planBatch(func::FuncOp f, const planner::PlanShape &shape) {
  Block &body = f.getBody().front();
  MLIRContext *ctx = f.getContext();
  auto all = [](Operation *) { return true; };

  // The batch: from every data input's first dimension.
  SmallVector<std::pair<Value, int64_t>> batchSeeds;
  for (BlockArgument arg : body.getArguments())
    if (f.getArgAttr(arg.getArgNumber(), Tsr::InputAttrHelper::getNameStr()))
      batchSeeds.push_back({arg, 0});
  // dp x micro-batches divides the batch; formed with an overflow check
  // because both come from the user (a product that wraps to 0 would
  // divide by zero below).
  std::optional<int64_t> factor =
      support::checkedMul(shape.dp, shape.microBatches);
  if (!factor)
    return f.emitError("dist-plan: dp (")
           << shape.dp << ") x micro-batches (" << shape.microBatches
           << ") overflows a 64-bit integer";
  int64_t batchFactor = *factor;
  for (auto [arg, d] : batchSeeds) {
    int64_t b = cast<RankedTensorType>(arg.getType()).getDimSize(0);
    if (b % batchFactor != 0)
      return f.emitError("dist-plan: the batch (")
             << b << ") of input "
             << f.getArgAttr(cast<BlockArgument>(arg).getArgNumber(),
                             Tsr::InputAttrHelper::getNameStr())
             << " is not divisible by dp (" << shape.dp << ") x micro-batches ("
             << shape.microBatches << ")";
  }
  LogicalDim batch = traceDim(body, batchSeeds, batchFactor,
                              /*backward=*/false, all);
  for (auto &[op, name] : batch.names) {
    setAttr<Dist::BatchAttrHelper>(op, StringAttr::get(ctx, name));
    if (shape.dp > 1)
      addSplit(op, name, "dp");
  }
  return success();
}

namespace {

/// The weight a forward projection multiplies by: the parameter its right
/// operand comes from through transposes, casts and reshapes, or "".
std::string projectionWeight(tsr::MatmulOp m) {
  Value v = m.getRhs();
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<tsr::TransposeOp, tsr::CastOp, tsr::ReshapeOp, tsr::SliceOp>(def))
      return "";
    v = def->getOperand(0);
  }
  auto arg = cast<BlockArgument>(v);
  auto f = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (auto name = f.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), Tsr::ParamAttrHelper::getNameStr()))
    return name.str();
  return "";
}

/// The tp part of dist.plan_report: for each forward projection by a weight,
/// whether the tp policy split it column-parallel (its output features: the
/// dimension the seed reached is not contracted) or row-parallel (the
/// contracted one), and which seed reached it; the others stay whole, with why.
void reportTensorParallel(
    func::FuncOp f,
    const llvm::DenseMap<Operation *, std::pair<std::string, const char *>>
        &why) {
  llvm::StringMap<SmallVector<std::string>> groups;
  SmallVector<std::string> order, whole;
  size_t projections = 0;
  for (Operation &op : f.getBody().front()) {
    if (!isProjection(&op))
      continue;
    std::string weight = projectionWeight(cast<tsr::MatmulOp>(op));
    if (weight.empty())
      continue;
    ++projections;
    auto it = why.find(&op);
    if (it == why.end()) {
      whole.push_back(weight);
      continue;
    }
    // The matmul's annotation is "* m k+, * k+ n -> * m n": the seed
    // reached either its output features or the contracted dimension.
    auto iface = cast<DimAnnotationOpInterface>(op);
    bool row = false;
    if (auto bound = bindOpAnnotation(iface))
      row = dimOfName(bound->annotation.outputs.front(), it->second.first) < 0;
    std::string key = std::string(row ? "row" : "column") + "-parallel by " +
                      it->second.second;
    if (!groups.count(key))
      order.push_back(key);
    groups[key].push_back(weight);
  }
  // A weight used by several projections (a fused QKV projection cut into
  // its pieces) is listed once, with their number.
  auto listed = [](ArrayRef<std::string> names) {
    SmallVector<std::string> out;
    for (size_t i = 0; i < names.size();) {
      size_t j = i;
      while (j < names.size() && names[j] == names[i])
        ++j;
      out.push_back(names[i] + (j - i > 1
                                    ? " (" + std::to_string(j - i) + " pieces)"
                                    : std::string()));
      i = j;
    }
    return llvm::join(out, ", ");
  };
  if (!projections)
    return;
  SmallVector<Attribute> lines;
  MLIRContext *ctx = f.getContext();
  size_t split = projections - whole.size();
  lines.push_back(StringAttr::get(
      ctx, llvm::formatv("tp splits {0} of {1} weight projections", split,
                         projections)
               .str()));
  for (const std::string &key : order)
    lines.push_back(
        StringAttr::get(ctx, "  " + key + ": " + listed(groups[key])));
  if (!whole.empty())
    lines.push_back(StringAttr::get(
        ctx, "  kept whole (neither a head reshape nor an MLP activation "
             "reaches them): " +
                 listed(whole)));
  appendPlanReport(f, lines);
}

} // namespace

LogicalResult planTensorParallel(func::FuncOp f, int64_t tp) {
  Block &body = f.getBody().front();
  // Heads: reshapes [..., C] -> [..., H, D] of the forward; the MLP
  // hidden dimension from its nonlinearity.
  SmallVector<std::pair<Value, int64_t>> heads, hidden;
  tensorParallelSeeds(body, heads, hidden);
  // With grouped-query attention the key/value projections have fewer
  // heads than the queries; tp splits both.
  int64_t most = 0;
  for (auto [v, d] : heads)
    most = std::max(most, cast<RankedTensorType>(v.getType()).getDimSize(d));
  for (auto [v, d] : heads) {
    int64_t h = cast<RankedTensorType>(v.getType()).getDimSize(d);
    if (h % tp == 0)
      continue;
    auto diag = v.getDefiningOp()->emitError("dist-plan: tp=")
                << tp << " does not divide the " << h;
    if (h < most)
      diag << " key/value heads (grouped-query attention: " << most
           << " query heads; tp splits both)";
    else
      diag << " attention heads";
    return diag;
  }
  auto all = [](Operation *) { return true; };
  // Which seed split each op, for the report: the first to reach it wins,
  // as in addSplit.
  llvm::DenseMap<Operation *, std::pair<std::string, const char *>> why;
  for (auto *seeds : {&heads, &hidden}) {
    if (seeds->empty())
      continue;
    LogicalDim flow = traceDim(body, *seeds, tp, /*backward=*/true, all);
    for (auto &[op, name] : flow.names)
      if (!isa<tsr::ConstantOp>(op)) {
        addSplit(op, name, "tp");
        why.try_emplace(op, name,
                        seeds == &heads
                            ? "heads (a reshape [..., H*D] -> [..., H, D])"
                            : "MLP hidden units (an activation between "
                              "projections)");
      }
  }
  reportTensorParallel(f, why);
  return success();
}

/// Appends `lines` to the module's dist.plan_report, once: every training
/// step of the module is planned alike, and the first reports for all.
void appendPlanReport(func::FuncOp f, ArrayRef<Attribute> lines) {
  auto module = f->getParentOfType<ModuleOp>();
  SmallVector<Attribute> all;
  if (ArrayAttr old = getAttr<Dist::PlanReportAttrHelper>(module)) {
    if (!lines.empty() && llvm::is_contained(old.getValue(), lines.front()))
      return;
    llvm::append_range(all, old.getValue());
  }
  llvm::append_range(all, lines);
  setAttr<Dist::PlanReportAttrHelper>(module,
                                      ArrayAttr::get(f.getContext(), all));
}

namespace {
/// The pp part of dist.plan_report: each stage's units (first .. last) and
/// its share of the forward FLOPs, from the stages the forward ops got (a
/// plan file's assign included).
void reportPipeline(func::FuncOp f, const Units &units, ArrayRef<double> flops,
                    int64_t numStages) {
  std::vector<int64_t> first(numStages, -1), last(numStages, -1);
  std::vector<double> stageFlops(numStages, 0);
  // The units some of whose ops run on every device (interlaced).
  std::vector<int64_t> everywhere;
  double everyFlops = 0;
  for (auto [i, op] : llvm::enumerate(units.forward)) {
    int64_t s = getAttr<Dist::StageAttrHelper>(op).getInt();
    int64_t u = units.unitOf[i];
    if (s == DistDialect::kEveryStage) {
      if (!llvm::is_contained(everywhere, u))
        everywhere.push_back(u);
      everyFlops += tessera::flopsOf(op);
      continue;
    }
    if (s < 0 || s >= numStages)
      continue;
    if (first[s] < 0)
      first[s] = u;
    last[s] = u;
    stageFlops[s] += tessera::flopsOf(op);
  }
  double total = 0;
  for (double x : flops)
    total += x;
  MLIRContext *ctx = f.getContext();
  SmallVector<Attribute> lines;
  lines.push_back(StringAttr::get(
      ctx,
      llvm::formatv("pp cuts {0} {1} into {2} stages", units.names.size(),
                    units.byModules ? "module runs" : "layer groups", numStages)
          .str()));
  for (int64_t s = 0; s < numStages; ++s) {
    if (first[s] < 0)
      continue;
    std::string span = units.names[first[s]];
    if (last[s] != first[s])
      span += " .. " + units.names[last[s]];
    lines.push_back(StringAttr::get(
        ctx,
        llvm::formatv("  stage {0}: {1} ({2:F0}% of the forward FLOPs)", s,
                      span, total > 0 ? 100.0 * stageFlops[s] / total : 0.0)
            .str()));
  }
  if (!everywhere.empty()) {
    llvm::sort(everywhere);
    std::string names;
    for (int64_t u : everywhere)
      names += (names.empty() ? "" : ", ") + units.names[u];
    lines.push_back(StringAttr::get(
        ctx, llvm::formatv("  every device: {0} ({1:F0}% of the forward "
                           "FLOPs, the batch split over dp and pp)",
                           names, total > 0 ? 100.0 * everyFlops / total : 0.0)
                 .str()));
  }
  appendPlanReport(f, lines);
}
} // namespace

void planZero1(func::FuncOp f, int64_t dp) {
  // The first dimension that dp divides and no other axis splits already
  // (where tp splits a weight's dimension 0, ZeRO shards its tp piece along
  // dimension 1, keeping both savings).
  for (Operation &op : f.getBody().front())
    if (isa<tsr::SgdUpdateOp, tsr::AdamwUpdateOp>(op)) {
      auto t = cast<RankedTensorType>(op.getOperand(0).getType());
      DictionaryAttr split = getAttr<Dist::SplitAttrHelper>(&op);
      for (int64_t d = 0; d < t.getRank(); ++d) {
        std::string name = "_" + std::to_string(d);
        if (t.getDimSize(d) % dp != 0 || (split && split.get(name)))
          continue;
        addSplit(&op, name, "dp");
        break;
      }
    }
}

void planZero2(func::FuncOp f, int64_t dp) {
  planZero1(f, dp);
  // Each split update's gradient, dimension 0, traced back to where it is
  // still a partial sum over dp (the weight-gradient contractions over the
  // batch: dist.batch) and forward into the other readers of the reduced
  // gradient (the global norm's squares and sums, the clipping scale): the
  // ops between get the update's dp split, so the RVD search turns the
  // partial sums into shards by reduce-scatter, and no rank holds a whole
  // reduced gradient.
  Block &body = f.getBody().front();
  SmallVector<std::pair<Value, int64_t>> seeds;
  for (Operation &op : body) {
    Value grad = TypeSwitch<Operation *, Value>(&op)
                     .Case<tsr::SgdUpdateOp, tsr::AdamwUpdateOp>(
                         [](auto u) { return u.getGrad(); })
                     .Default([](Operation *) { return Value(); });
    if (!grad)
      continue;
    // The dimension ZeRO-1 split over dp ("_d").
    DictionaryAttr split = getAttr<Dist::SplitAttrHelper>(&op);
    for (NamedAttribute a :
         split ? split.getValue() : ArrayRef<NamedAttribute>()) {
      auto axis = dyn_cast<StringAttr>(a.getValue());
      int64_t d = 0;
      if (axis && axis.getValue() == "dp" &&
          a.getName().strref().starts_with("_") &&
          !a.getName().strref().drop_front().getAsInteger(10, d))
        seeds.push_back({grad, d});
    }
  }
  // Not through the updates themselves (ZeRO-1 split them already): from
  // an update's gradient the trace would go on to its parameter and from
  // there into the backward's reads of the weight, which need it whole.
  auto gradientTail = [](Operation *op) {
    return !hasAttr<Dist::BatchAttrHelper>(op) &&
           !isa<tsr::SgdUpdateOp, tsr::AdamwUpdateOp>(op) &&
           (hasAttr<Tsr::BackwardAttrHelper>(op) ||
            hasAttr<Tsr::UpdateAttrHelper>(op));
  };
  LogicalDim rows = traceDim(body, seeds, dp, /*backward=*/true, gradientTail);
  for (auto &[op, name] : rows.names)
    addSplit(op, name, "dp");
}

void planZero3(func::FuncOp f, int64_t dp, ArrayRef<std::string> only) {
  planZero1(f, dp);
  for (Operation &op : f.getBody().front()) {
    if (!isa<tsr::SgdUpdateOp, tsr::AdamwUpdateOp>(op))
      continue;
    DictionaryAttr split = getAttr<Dist::SplitAttrHelper>(&op);
    if (!split || llvm::none_of(split, [](NamedAttribute a) {
          auto axis = dyn_cast<StringAttr>(a.getValue());
          return axis && axis.getValue() == "dp";
        }))
      continue;
    auto arg = dyn_cast<BlockArgument>(op.getOperand(0));
    if (!arg || arg.getOwner() != &f.getBody().front())
      continue;
    auto name = getArgAttr<Tsr::ParamAttrHelper>(f, arg.getArgNumber());
    if (name && (only.empty() || llvm::is_contained(only, name.getValue())))
      setArgAttr<Dist::Zero3AttrHelper>(f, arg.getArgNumber(),
                                        UnitAttr::get(f.getContext()));
  }
}

LogicalResult planPipeline(func::FuncOp f, const planner::PlanShape &shape,
                           int64_t stagesPerDevice, bool vShape) {
  Block &body = f.getBody().front();
  MLIRContext *ctx = f.getContext();
  auto i64 = IntegerType::get(ctx, 64);
  Units units = groupUnits(body);
  SmallVector<Operation *> &forward = units.forward;
  std::vector<double> used(units.names.size(), 0);
  for (auto [i, op] : llvm::enumerate(forward))
    used[units.unitOf[i]] += tessera::flopsOf(op);
  // Both factors are >= 1; an overflowing product is as infeasible as
  // any count above the number of layer groups.
  int64_t numStages = support::checkedMul(shape.pp, stagesPerDevice)
                          .value_or(std::numeric_limits<int64_t>::max());
  if (int64_t(used.size()) < numStages)
    return f.emitError("dist-plan: pp=")
           << shape.pp
           << (stagesPerDevice > 1
                   ? " with " + std::to_string(stagesPerDevice) +
                         " stages per device"
                   : std::string())
           << " needs at least " << numStages
           << " layer groups, but the model has "
           << (units.byModules
                   ? "no numbered layers and " + std::to_string(used.size()) +
                         " module runs (" + llvm::join(units.names, ", ") + ")"
                   : std::to_string(used.size()) + " (embedding, layers, head)")
           << ": a stage would have no work";
  std::vector<size_t> starts = shape.stageStarts;
  if (starts.empty()) {
    // The cut balances the units that have ops left for the stages: those
    // a plan file put on every device (an interlaced pipeline's embedding
    // and head) take no stage's time.
    std::vector<size_t> staged;
    std::vector<double> cost;
    std::vector<bool> hasStaged(used.size(), false);
    std::vector<double> stagedFlops(used.size(), 0);
    for (auto [i, op] : llvm::enumerate(forward)) {
      auto s = getAttr<Dist::StageAttrHelper>(op);
      if (s && s.getInt() == DistDialect::kEveryStage)
        continue;
      hasStaged[units.unitOf[i]] = true;
      stagedFlops[units.unitOf[i]] += tessera::flopsOf(op);
    }
    for (size_t u = 0; u < used.size(); ++u)
      if (hasStaged[u]) {
        staged.push_back(u);
        cost.push_back(stagedFlops[u]);
      }
    if (int64_t(staged.size()) < numStages)
      return f.emitError("dist-plan: pp=")
             << shape.pp << " needs at least " << numStages
             << " layer groups with ops on the stages, but " << staged.size()
             << " have any (the others run on every device): a stage would "
                "have no work";
    starts = balance(cost, numStages);
    for (size_t &start : starts)
      start = staged[start];
    // A unit before the first staged one belongs to stage 0.
    starts[0] = 0;
  }
  if (int64_t(starts.size()) != numStages)
    return f.emitError("dist-plan: internal error: ")
           << starts.size() << " stage boundaries for " << numStages
           << " stages";
  auto stageOfUnit = [&](int64_t c) {
    int64_t s = 0;
    for (int64_t k = 0; k < numStages; ++k)
      if (c >= int64_t(starts[k]))
        s = k;
    return s;
  };
  if (stagesPerDevice > 1) {
    SmallVector<int64_t> devices;
    for (int64_t s = 0; s < numStages; ++s)
      devices.push_back(vShape ? (s < shape.pp ? s : 2 * shape.pp - 1 - s)
                               : s % shape.pp);
    auto module = f->getParentOfType<ModuleOp>();
    PipelineAttr pipeline = getEnclosingPipeline(module);
    setAttr<Dist::PipelineAttrHelper>(
        module, PipelineAttr::get(ctx, pipeline.getMicroBatches(),
                                  DenseI64ArrayAttr::get(ctx, devices), nullptr,
                                  nullptr));
  }
  // Forward ops: by unit, unless a plan file assigned them. An op without
  // the batch that only ops on every device read (a parameter's view or
  // widened copy that no entry named) runs there too.
  llvm::DenseMap<Value, int64_t> stageOf;
  llvm::DenseSet<Operation *> byUnit;
  for (auto [i, op] : llvm::enumerate(forward))
    if (!hasAttr<Dist::StageAttrHelper>(op)) {
      byUnit.insert(op);
      setAttr<Dist::StageAttrHelper>(
          op, IntegerAttr::get(i64, stageOfUnit(units.unitOf[i])));
    }
  for (Operation *op : llvm::reverse(forward)) {
    auto readers = llvm::make_filter_range(op->getUsers(), [](Operation *u) {
      return tsr::isForward(u) && !isa<func::ReturnOp>(u);
    });
    if (byUnit.contains(op) && !hasAttr<Dist::BatchAttrHelper>(op) &&
        !readers.empty() && llvm::all_of(readers, [](Operation *u) {
          auto s = getAttr<Dist::StageAttrHelper>(u);
          return s && s.getInt() == DistDialect::kEveryStage;
        }))
      setAttr<Dist::StageAttrHelper>(
          op, IntegerAttr::get(i64, DistDialect::kEveryStage));
  }
  for (Operation *op : forward)
    for (Value r : op->getResults())
      stageOf[r] = getAttr<Dist::StageAttrHelper>(op).getInt();
  reportPipeline(f, units, used, numStages);
  // Parameters live with their first forward use.
  llvm::StringMap<int64_t> paramStage;
  for (BlockArgument arg : body.getArguments()) {
    auto name = getArgAttr<Tsr::ParamAttrHelper>(f, arg.getArgNumber());
    if (!name)
      continue;
    int64_t s = 0; // an unused parameter: stage 0
    for (Operation *op : forward)
      if (llvm::is_contained(op->getOperands(), arg)) {
        s = getAttr<Dist::StageAttrHelper>(op).getInt();
        break;
      }
    paramStage[name.getValue()] = s;
    stageOf[arg] = s;
  }
  for (BlockArgument arg : body.getArguments())
    if (auto st = getArgAttr<Tsr::StateAttrHelper>(f, arg.getArgNumber())) {
      StringRef param = st.getValue().split('/').second;
      stageOf[arg] = paramStage.lookup(param);
    }
  // Backward ops: with the forward op they differentiate (tsr.backward
  // names it). Update ops: with their largest operand (the parameter, its
  // gradient and state), lowest stage on ties, so that a scalar all stages
  // read (the clipping factor of the global gradient norm) travels to the
  // parameters rather than every parameter and its state to the scalar.
  // Others (unnamed backward ops): with the lowest stage among their
  // operands (gradients flow towards stage 0; an accumulation happens where
  // the forward value lives; every device, -1, counts as the lowest).
  llvm::StringMap<int64_t> stageOfName;
  for (Operation *op : forward) {
    std::string n = tsr::opName(op);
    if (!n.empty() && !stageOfName.count(n))
      stageOfName[n] = getAttr<Dist::StageAttrHelper>(op).getInt();
  }
  SmallVector<Operation *> unresolved;
  for (Operation &op : body) {
    if (tsr::isForward(&op) || isa<func::ReturnOp, tsr::ConstantOp>(op))
      continue;
    if (auto of = dyn_cast_or_null<StringAttr>(
            getAttr<Tsr::BackwardAttrHelper>(&op))) {
      auto it = stageOfName.find(of.getValue());
      if (it != stageOfName.end()) {
        if (!hasAttr<Dist::StageAttrHelper>(&op))
          op.setAttr(Dist::StageAttrHelper::getNameStr(),
                     IntegerAttr::get(i64, it->second));
        for (Value r : op.getResults())
          stageOf[r] = getAttr<Dist::StageAttrHelper>(&op).getInt();
        continue;
      }
    }
    std::optional<int64_t> s;
    bool update = hasAttr<Tsr::UpdateAttrHelper>(&op);
    int64_t largest = -1;
    for (Value v : op.getOperands()) {
      auto it = stageOf.find(v);
      if (it == stageOf.end())
        continue;
      int64_t bytes = update ? tessera::tensorBytes(v.getType()) : 0;
      if (!s || bytes > largest || (bytes == largest && it->second < *s)) {
        s = it->second;
        largest = bytes;
      }
    }
    if (!s && !hasAttr<Dist::StageAttrHelper>(&op)) {
      unresolved.push_back(&op); // only data inputs: placed by its users
      continue;
    }
    if (!hasAttr<Dist::StageAttrHelper>(&op))
      op.setAttr(Dist::StageAttrHelper::getNameStr(),
                 IntegerAttr::get(i64, *s));
    for (Value r : op.getResults())
      stageOf[r] = getAttr<Dist::StageAttrHelper>(&op).getInt();
  }
  // Ops reading only data inputs (e.g. a transposed input in the weight
  // gradient): with their earliest-stage user.
  for (Operation *op : llvm::reverse(unresolved)) {
    std::optional<int64_t> s;
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers())
        if (auto us = getAttr<Dist::StageAttrHelper>(user))
          s = s ? std::min(*s, us.getInt()) : us.getInt();
    setAttr<Dist::StageAttrHelper>(op, IntegerAttr::get(i64, s.value_or(0)));
  }
  // Every stage must have work.
  std::vector<bool> busy(numStages, false);
  for (Operation &op : body)
    if (auto s = getAttr<Dist::StageAttrHelper>(&op))
      if (s.getInt() >= 0 && s.getInt() < numStages)
        busy[s.getInt()] = true;
  for (int64_t s = 0; s < numStages; ++s)
    if (!busy[s])
      return f.emitError("dist-plan: stage ") << s << " has no work";
  return success();
}

} // namespace tessera::dist::plan_detail
