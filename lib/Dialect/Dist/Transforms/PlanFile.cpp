//===- PlanFile.cpp - Reading dist-plan's JSON plan files -----------------===//
//
// Built with exceptions (see CMakeLists.txt): the strict JSON reader throws
// tessera::Exception, and readPlanFile catches everything before returning to
// the pass.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Dist/Transforms/PlanFile.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"

#include "tessera/Support/StrictJson.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Regex.h"

#include <limits>

using namespace tessera;
using namespace tessera::dist;
using support::JsonObject;
using support::JsonValue;

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

/// A selector pattern: a non-empty, valid regular expression.
std::string readPattern(const JsonValue &v, const char *over) {
  std::string what = std::string("a regular expression over ") + over;
  std::string pattern = v.getString(what.c_str());
  if (pattern.empty())
    v.fail("expected " + what + ", got \"\"");
  std::string why;
  if (!llvm::Regex(pattern).isValid(why))
    v.fail("invalid regular expression '" + pattern + "': " + why);
  return pattern;
}

/// The selector keys of a trans or assign entry `o`.
PlanFile::Selector readSelector(const JsonObject &o) {
  PlanFile::Selector s;
  if (auto ops = o.find("ops"))
    s.ops = readPattern(*ops, "op names");
  if (auto params = o.find("params"))
    s.params = readPattern(*params, "parameter names");
  if (auto group = o.find("group"))
    s.group = readPattern(*group, "layer-group names");
  if (auto kind = o.find("kind")) {
    s.kind = kind->getString("an op kind (e.g. \"tsr.matmul\")");
    if (s.kind->find('.') == std::string::npos)
      kind->fail("expected an op kind with its dialect (e.g. \"tsr.matmul\"), "
                 "got \"" +
                 *s.kind + "\"");
  }
  if (auto phase = o.find("phase")) {
    std::string p = phase->getString("\"forward\" or \"backward\"");
    if (p != "forward" && p != "backward")
      phase->fail("expected \"forward\" or \"backward\", got \"" + p + "\"");
    s.backward = p == "backward";
  }
  if (!s.ops && !s.params && !s.group)
    o.fail("needs at least one selector: 'ops' (op names), 'params' "
           "(parameter names) or 'group' (layer groups)");
  return s;
}

std::string readOpName(const JsonValue &v) {
  std::string name = v.getString("an op name");
  if (name.empty())
    v.fail("expected an op name, got \"\"");
  return name;
}

/// The mesh; an axis the file does not give is `absent` (1 for a mesh, 0,
/// free, for the constraints of an auto plan).
planner::PlanShape readMesh(const JsonValue &v, int64_t absent) {
  JsonObject m = v.getObject({"dp", "tp", "pp"}, "mesh axis sizes");
  planner::PlanShape mesh;
  mesh.dp = mesh.tp = mesh.pp = absent;
  for (auto [axis, slot] : {std::pair<const char *, int64_t *>{"dp", &mesh.dp},
                            {"tp", &mesh.tp},
                            {"pp", &mesh.pp}})
    if (auto size = m.find(axis))
      *slot = size->getInt(1, kInt64Max, "an axis size");
  std::optional<int64_t> product = support::checkedMul(
      std::max<int64_t>(mesh.dp, 1), std::max<int64_t>(mesh.tp, 1));
  if (product)
    product = support::checkedMul(*product, std::max<int64_t>(mesh.pp, 1));
  if (!product)
    m.fail("the number of devices dp x tp x pp = " + std::to_string(mesh.dp) +
           " x " + std::to_string(mesh.tp) + " x " + std::to_string(mesh.pp) +
           " overflows a 64-bit integer");
  return mesh;
}

PlanFile::Trans readTrans(const JsonValue &v, size_t index) {
  JsonObject o = v.getObject(
      {"ops", "params", "group", "kind", "phase", "split", "propagate"},
      "a trans entry");
  PlanFile::Trans t{readSelector(o), {}, index};
  if (auto propagate = o.find("propagate"))
    t.propagate = propagate->getBool("whether the split follows the data flow");
  JsonObject split =
      o.get("split").getMap("a map from annotation dimension to mesh axis");
  if (split.empty())
    split.fail("expected at least one {\"<dimension>\": \"dp\" | \"tp\"} "
               "pair, got an empty object");
  std::map<std::string, std::string> dimOfAxis;
  for (const auto &[dim, value] : split.entries()) {
    std::string axis = value.getString("a mesh axis name");
    if (axis != "dp" && axis != "tp" && axis != "pp")
      value.fail("'" + axis +
                 "' is not a split axis (use dp, tp, or pp for ops on "
                 "every device)");
    // The partitioner splits an op at most once per axis; a second
    // dimension over the same axis would be dropped.
    auto [it, inserted] = dimOfAxis.emplace(axis, dim);
    if (!inserted)
      value.fail("axis '" + axis + "' already splits dimension '" + it->second +
                 "' of this entry (one dimension per axis)");
    t.split[dim] = axis;
  }
  return t;
}

PlanFile::Assign readAssign(const JsonValue &v, size_t index) {
  JsonObject o = v.getObject(
      {"ops", "params", "group", "kind", "phase", "stage"}, "an assign entry");
  PlanFile::Selector select = readSelector(o);
  // "all": every device (an interlaced pipeline's embedding and head).
  JsonValue stage = o.get("stage");
  if (stage.raw().is_string() && stage.getString() == "all")
    return PlanFile::Assign{std::move(select), DistDialect::kEveryStage, index};
  if (!stage.raw().is_number_integer())
    stage.failExpected("a stage",
                       "an integer >= 0, or \"all\" for every device");
  return PlanFile::Assign{std::move(select),
                          stage.getInt(0, kInt64Max, "a stage"), index};
}

/// A recompute entry selects forward ops only: recomputing a backward op
/// would not free any forward value.
PlanFile::Recompute readRecompute(const JsonValue &v, size_t index) {
  JsonObject o =
      v.getObject({"ops", "params", "group", "kind"}, "a recompute entry");
  return PlanFile::Recompute{readSelector(o), index};
}

/// A coshard entry selects forward ops (their backward ops follow) and the
/// number of pieces each rank's tp piece runs in.
PlanFile::Coshard readCoshard(const JsonValue &v, size_t index) {
  JsonObject o = v.getObject({"ops", "params", "group", "kind", "pieces"},
                             "a coshard entry");
  PlanFile::Selector select = readSelector(o);
  return PlanFile::Coshard{
      std::move(select), o.get("pieces").getInt(2, kInt64Max, "a piece count"),
      index};
}

PlanFile parsePlan(const nlohmann::json &root, const std::string &path);

PlanFile readPlan(const std::string &path) {
  return parsePlan(support::loadJsonFile(path, "plan file"), path);
}

PlanFile parsePlan(const nlohmann::json &root, const std::string &path) {
  JsonObject top = JsonValue(root, path)
                       .getObject({"policy", "mesh", "micro_batches", "zero1",
                                   "zero2", "zero3", "trans", "assign",
                                   "recompute", "coshard", "order"},
                                  "a plan");
  PlanFile plan;
  if (auto policy = top.find("policy")) {
    plan.policy = policy->getString("a plan policy (e.g. \"dp2xtp2\")");
    if (plan.policy->empty())
      policy->fail("expected a plan policy (e.g. \"dp2xtp2\"), got \"\"");
    // The auto policy takes the mesh as constraints on its search.
    if (auto mesh = top.find("mesh")) {
      if (*plan.policy != "auto")
        top.fail("give either 'policy' or 'mesh', not both (the policy fixes "
                 "the mesh; only \"auto\" takes a mesh, as constraints)");
      plan.mesh = readMesh(*mesh, 0);
    }
  } else if (auto mesh = top.find("mesh")) {
    plan.mesh = readMesh(*mesh, 1);
  } else {
    top.fail("needs a 'policy' (e.g. \"dp2xtp2\") or a 'mesh'");
  }
  if (auto mbs = top.find("micro_batches"))
    plan.microBatches = mbs->getInt(1, kInt64Max, "a micro-batch count");
  if (auto zero1 = top.find("zero1"))
    plan.zero1 = zero1->getBool("whether to use ZeRO-1");
  if (auto zero2 = top.find("zero2"))
    plan.zero2 = zero2->getBool("whether to use ZeRO-2");
  if (auto zero3 = top.find("zero3"))
    plan.zero3 = zero3->getBool("whether to use ZeRO-3");
  if (auto trans = top.find("trans")) {
    std::vector<JsonValue> entries = trans->getArray("a list of trans entries");
    for (size_t i = 0; i < entries.size(); ++i)
      plan.trans.push_back(readTrans(entries[i], i));
  }
  if (auto assign = top.find("assign")) {
    std::vector<JsonValue> entries =
        assign->getArray("a list of assign entries");
    for (size_t i = 0; i < entries.size(); ++i)
      plan.assign.push_back(readAssign(entries[i], i));
  }
  if (auto recompute = top.find("recompute")) {
    std::vector<JsonValue> entries =
        recompute->getArray("a list of recompute entries");
    for (size_t i = 0; i < entries.size(); ++i)
      plan.recompute.push_back(readRecompute(entries[i], i));
  }
  if (auto coshard = top.find("coshard")) {
    std::vector<JsonValue> entries =
        coshard->getArray("a list of coshard entries");
    for (size_t i = 0; i < entries.size(); ++i)
      plan.coshard.push_back(readCoshard(entries[i], i));
  }
  if (auto order = top.find("order"))
    for (const JsonValue &pair : order->getArray("a list of order entries")) {
      std::vector<JsonValue> names =
          pair.getArray("a pair [\"before\", \"after\"] of op names", 2, 2);
      plan.order.push_back({readOpName(names[0]), readOpName(names[1])});
    }
  return plan;
}

} // namespace

std::string PlanFile::Selector::str() const {
  std::string out;
  auto add = [&](const char *key, const std::optional<std::string> &value) {
    if (value)
      out += std::string(out.empty() ? "" : ", ") + key + " '" + *value + "'";
  };
  add("ops", ops);
  add("params", params);
  add("group", group);
  add("kind", kind);
  if (backward)
    out += ", phase backward";
  return out;
}

std::optional<PlanFile>
tessera::dist::parsePlanFile(std::string_view text, const std::string &origin,
                             std::string &error) noexcept {
  try {
    return parsePlan(support::parseJson(text, origin), origin);
  } catch (const std::exception &e) {
    error = e.what();
  } catch (...) {
    error = origin + ": unexpected error while reading the plan file";
  }
  return std::nullopt;
}

std::optional<PlanFile>
tessera::dist::readPlanFile(const std::string &path,
                            std::string &error) noexcept {
  try {
    return readPlan(path);
  } catch (const std::exception &e) {
    // tessera::Exception from the reader; std::bad_alloc on a huge, valid file.
    error = e.what();
  } catch (...) {
    error = path + ": unexpected error while reading the plan file";
  }
  return std::nullopt;
}
