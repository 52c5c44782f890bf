//===- AutoPlanSearch.cpp - The auto mesh search --------------------------===//
//
// The partitioner runs uniform meshes only: every stage has the same dp and
// tp degree, and pp = devices / (dp * tp). So the search enumerates (tp, dp,
// micro-batches) and, for each, needs the best cut of the unit chain into
// exactly pp stages. That cut is Piper's problem restricted to t = tp and
// d = 1 per stage, which the planner solves exactly when it is given one
// dp replica: maxDevices = tp * pp, only tp configurations, and a prime
// micro-batch count N >= pp, so that no d > 1 fits (see cut()). Times are
// per micro-batch ("sample" in Piper's terms) and y (the in-flight count)
// is the number of stages from a stage to the last, as under 1F1B; the
// objective is Piper's (the slowest stage), which for a fixed pp is what
// the pipeline's step time depends on. The step time then adds the pipeline's
// fill and drain (from the schedule library) and the once-per-step work
// (optimizer updates and the data-parallel gradient all-reduce).
//
// Links follow the partitioner's rank order, the mesh dist-plan builds,
// #dist.mesh<[dp, tp, pp]> (layout::Mesh: row-major, pp fastest): a group of
// n ranks at stride s stays inside a node only when n * s <= devices_per_node.
//
//===----------------------------------------------------------------------===//

#include "tessera/Planner/AutoPlanSearch.h"

#include "tessera/Cost/Collectives.h"
#include "tessera/Cost/DeviceSpec.h"
#include "tessera/Cost/MemoryModel.h"
#include "tessera/Cost/ProfileDatabase.h"
#include "tessera/Cost/Roofline.h"
#include "tessera/Layout/Rvd.h"
#include "tessera/Planner/PiperPlanner.h"
#include "tessera/Schedule/PipelineOrder.h"
#include "tessera/Schedule/PipelineReplay.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <ctime>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>

namespace tessera::planner::autoplan {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string resolveSpecName(const std::string &name) {
  if (name == "h100")
    return "h100-sxm";
  if (name == "a100")
    return "a100-sxm";
  return name;
}

/// The axes of the mesh a (dp, tp, pp) plan runs on, in mesh order.
enum PlanAxis : size_t { kDp = 0, kTp = 1, kPp = 2 };

/// The mesh dist-plan builds for a (dp, tp, pp) plan.
layout::Mesh planMesh(int64_t d, int64_t t, int64_t pp) {
  auto mesh = layout::Mesh::create({{"dp", d}, {"tp", t}, {"pp", pp}});
  assert(mesh && "degrees are at least 1 and at most kMaxDevices");
  return *mesh;
}

/// The link of the groups along `axis` of `mesh`: their ranks lie
/// mesh.stride(axis) apart in rank order.
const cost::LinkSpec &groupLink(const cost::DeviceSpec &spec,
                                const layout::Mesh &mesh, size_t axis) {
  return cost::linkForGroup(spec, mesh.axis(axis).size, mesh.stride(axis));
}

/// The cost model's time of a collective the partitioner emits: none when
/// there is nothing to send or no one to send it to.
double collective(cost::Collective kind, double bytes, int64_t ranks,
                  const cost::LinkSpec &link) {
  if (ranks <= 1 || bytes <= 0)
    return 0;
  return cost::bestCollectiveTime(kind, bytes, static_cast<int>(ranks), link);
}

/// `count` collectives of `kind` that move `bytes` in all (the runtime's
/// one per parameter): each pays the link's latency.
double collectives(cost::Collective kind, double bytes, int count,
                   int64_t ranks, const cost::LinkSpec &link) {
  if (count <= 1)
    return collective(kind, bytes, ranks, link);
  return double(count) * collective(kind, bytes / count, ranks, link);
}

/// The training driver's work for `values` step values and `paramBytes`
/// of updated parameters on a rank (runtime/common/Driver.cpp), once per
/// step: each argument passed in and each result taken back by name (an
/// op's fixed cost each), and the check that every updated parameter is
/// finite (one read of them).
double driverWork(const cost::DeviceSpec &spec, double values,
                  double paramBytes) {
  return 2.0 * values * spec.opOverhead + paramBytes / spec.memoryBandwidth;
}

/// Per-unit costs of one candidate (tp, dp, micro-batches).
struct UnitCosts {
  std::vector<double> micro;  ///< forward + backward per micro-batch
  std::vector<double> microF; ///< of which the forward
  /// The backward ops per micro-batch: (OpCost::reach, time), for the
  /// zb-h1 split of a stage's backward into B and W.
  std::vector<std::vector<std::pair<int, double>>> backward;
  std::vector<double> step; ///< once per step
  /// The tp collectives within micro and step.
  std::vector<double> microComm, stepComm;
  std::vector<double> memA;  ///< activations per in-flight micro-batch
  std::vector<double> memB;  ///< parameters, gradients, optimizer state
  std::vector<double> grads; ///< gradient bytes per device (dp sync)
  /// Gradient bytes held per device: through the backward, and at the
  /// update (ZeRO-2: dp shards by then).
  std::vector<double> gradsHeld, gradsAtUpdate;
  std::vector<int> gradCount; ///< their tensors (one collective each)
  /// The unit's parameters are sharded over dp (ZeRO-3) and gathered for
  /// the forward and again for the backward.
  std::vector<char> zero3;
  size_t profiled = 0;        ///< ops timed by the profile database
  size_t priced = 0;          ///< ops priced (views and communication aside)
  // The stage memory model's terms per unit (bytes per device; see
  // StageMemory).
  std::vector<double> resident;     ///< parameters and optimizer state
  std::vector<double> fixedHeld;    ///< kept activations without the batch
                                    ///< (held once, until the backward)
  std::vector<double> inputs;       ///< the replica's data inputs
  std::vector<double> largest;      ///< the largest parameter's update
  /// The peak of its forward ops in the last micro-batch's forward, with
  /// the unit's shared values not yet used there (Live::sharedAhead).
  std::vector<double> liveFLast;
  std::vector<double> liveF, liveB; ///< peak live bytes of its forward
                                    ///< (backward) ops, one micro-batch
  std::vector<double> shared;       ///< Unit::sharedBytes with micro-batches
  std::vector<double> weightHeld;   ///< Unit::weightBytes per micro-batch
  /// Per unit, the tied parameters it reads of an earlier unit: (index in
  /// Problem::tied, owner, bytes per device).
  struct TiedRead {
    size_t index;
    int owner;
    double bytes;
  };
  std::vector<std::vector<TiedRead>> tiedReads;
  int64_t microBatches = 1;
  int64_t pp = 1;
  double sendScale = 0; ///< the fraction of the batch one replica sends
};

/// The bytes a stage sends in a step: its activations forward and the
/// gradients of what it received back.
struct Sent {
  double forward = 0, back = 0;
};

/// Each unit's edges, for ranges grown one unit at a time: (the other end,
/// bytes), the bytes negative where the unit is the edge's target.
using Incident = std::vector<std::vector<std::pair<size_t, double>>>;

Incident incidentEdges(const std::vector<Edge> &edges, size_t n) {
  Incident incident(n);
  for (const Edge &e : edges) {
    incident[e.from].push_back({size_t(e.to), e.bytes});
    incident[e.to].push_back({size_t(e.from), -e.bytes});
  }
  return incident;
}

/// The bytes crossing the boundary of a range [a, b], kept up to date as b
/// grows (in O(edges of b), not O(all edges) per range as boundaryBytes()):
/// all of them, and those the range sends (an edge leaving it sends
/// forward, one entering sends back), at the full batch.
struct Boundary {
  size_t a;
  double crossing = 0;
  Sent sent;
  void add(const Incident &incident, size_t b) {
    for (auto [other, signedBytes] : incident[b]) {
      double bytes = std::abs(signedBytes);
      bool out = signedBytes >= 0, inside = other >= a && other < b;
      crossing += inside ? -bytes : other == b ? 0 : bytes;
      if (other == b)
        continue;
      if (inside) // the edge was crossing from the other end
        (out ? sent.back : sent.forward) -= bytes;
      else
        (out ? sent.forward : sent.back) += bytes;
    }
  }
};

/// The terms of one stage's peak memory per device, built unit by unit
/// (add), so that all ranges [a, b] from one a cost O(n). The peak is the
/// larger of two kinds of moments: a micro-batch's forward or backward,
/// with the other in-flight micro-batches' kept activations, and the
/// update, when the new value and optimizer state of a parameter are
/// allocated while the old ones are still held. Within the backward of
/// unit u, the gradients of the stage's later units are live (and of all
/// its units once a previous micro-batch accumulated them); within a
/// forward, none (one micro-batch).
///
/// The moments of a pipeline schedule with m micro-batches and y in flight
/// (y forwards F0 .. F(y-1) before the first backward B0, then backward k
/// followed by forward k + y while there is one: 1F1B; GPipe is y = m):
///  * B0 finds y micro-batches' activations and no accumulated gradients;
///  * backward k >= 1 finds the gradients and min(y, m - k) micro-batches'
///    activations;
///  * forward k + y finds the gradients and y - 1 others.
/// The values computed from parameters alone (UnitCosts::shared) are made
/// at their first use in F0 and die at their last use in the last forward,
/// F(m-1): while unit u runs, F0 holds those of units up to u, F(m-1)
/// those from u on, and every moment between all of them. A tied
/// parameter received from an earlier stage (Problem::tied) is held
/// through the micro-batches and its gradient's total accumulated with
/// the others and kept, sent, to the end. Each forward sends its
/// activations on and each backward its gradients back, and the runtime
/// keeps what it sent until the step ends, so a moment holds the sends of
/// the forwards and backwards before it. Where backward k's activations
/// and sends trade (k up to m - y), the bound takes the moment with the
/// most of both: y micro-batches kept after all m forwards' sends. Under
/// zb-h1 a stage that defers each W by `lag` micro-batches holds min(k,
/// lag) W's values (UnitCosts::weightHeld) at backward k.
class StageMemory {
public:
  StageMemory(const UnitCosts &c) : c(c) {}
  void add(size_t u) {
    if (first < 0)
      first = int(u);
    for (const UnitCosts::TiedRead &t : c.tiedReads[u])
      if (t.owner < first && std::find(tiedSeen.begin(), tiedSeen.end(),
                                       t.index) == tiedSeen.end()) {
        tiedSeen.push_back(t.index);
        received += t.bytes;
        receivedFrom.push_back({t.owner, t.bytes});
      }
    double g = c.gradsHeld[u], f = c.liveF[u] + kept;
    shared += c.shared[u];
    trainF = std::max(trainF, f);
    trainFFirst = std::max(trainFFirst, f + shared);
    trainFLast = std::max(trainFLast + c.shared[u], c.liveFLast[u] + kept);
    trainB = std::max(trainB + (c.microBatches > 1 ? 0 : g), c.liveB[u] + kept);
    kept += c.memA[u];
    grads += g;
    gradsAtUpdate += c.gradsAtUpdate[u];
    resident += c.resident[u];
    held += c.fixedHeld[u];
    weightHeld += c.weightHeld[u];
    inputs += c.inputs[u];
    largest = std::max(largest, c.largest[u]);
  }
  /// The terms a replay along a schedule's order combines (virtual stages):
  /// what the stage holds for the step, per micro-batch in flight, and
  /// while one of its forwards or backwards runs (the running micro-batch's
  /// own activations included).
  struct Parts {
    double fixed = 0;  ///< parameters, state, inputs, held values
    double kept = 0;   ///< activations per micro-batch in flight
    double grads = 0;  ///< gradients, once a backward ran
    double shared = 0; ///< from parameters alone: first to last forward
    double forward = 0, backward = 0; ///< while one runs, without shared
    double weightHeld = 0;            ///< per deferred W
    double largest = 0;               ///< the update's scratch
    double resident = 0;              ///< parameters and state
    /// Tied parameters received (in fixed and grads): (owner unit, bytes).
    std::vector<std::pair<int, double>> received;
  };
  Parts parts() const {
    Parts out;
    out.fixed = resident + inputs + held + received;
    out.kept = kept;
    out.grads = grads + received;
    out.shared = shared;
    out.forward = trainF;
    out.backward = trainB;
    out.weightHeld = weightHeld;
    out.largest = largest;
    out.resident = resident;
    out.received = receivedFrom;
    return out;
  }
  /// Bytes with y micro-batches in flight and `sent` the bytes the stage
  /// sends in the step (forward: activations, back: gradients).
  double bytes(int y, Sent sent, int lag = 0) const {
    int64_t m = c.microBatches;
    // Sends per micro-batch; activations of the y - 1 others.
    double f = sent.forward / double(m), g = sent.back / double(m);
    double others = double(y - 1) * kept;
    // A forward that holds all the shared values, F0's and F(m-1)'s.
    double fAll = trainF + shared + received;
    double fFirst = trainFFirst + received, fLast = trainFLast + received;
    double trainB = this->trainB + received, grads = this->grads + received;
    // After k backwards (or during backward k), W j has run once j + lag
    // < k: min(k, lag) W's wait with their values, and the gradients
    // exist only once a W has run (k > lag; without zb-h1, from B0 on).
    auto pendingW = [&](int64_t k) {
      return double(std::min<int64_t>(k, lag)) * weightHeld;
    };
    auto gradsAfter = [&](int64_t k) { return k > lag ? grads : 0.0; };
    // F(y-1), the last forward before B0, and B0.
    double warm = y == 1 ? fFirst : y == m ? fLast : fAll;
    double train =
        std::max(warm + (y - 1) * f, trainB + (m > y ? shared : 0) + y * f) +
        others;
    if (m > 1 && m > y) {
      // B(m-y), the last backward with y kept; F(m-1), the last forward;
      // and before it B(m-1-y) and F(m-2), the last moments that hold
      // all the shared values with the gradients.
      train = std::max(train, trainB + others + gradsAfter(m - y) + m * f +
                                  (m - y) * g + pendingW(m - y));
      train = std::max(train, fLast + others + gradsAfter(m - y) +
                                  (m - 1) * f + (m - y) * g + pendingW(m - y));
      if (m >= y + 2) {
        train = std::max(train, trainB + shared + others +
                                    gradsAfter(m - 1 - y) + (m - 1) * f +
                                    (m - 1 - y) * g + pendingW(m - 1 - y));
        train = std::max(train, fAll + others + gradsAfter(m - 1 - y) +
                                    (m - 2) * f + (m - 1 - y) * g +
                                    pendingW(m - 1 - y));
      }
    } else if (m > 1) {
      // All m forwards first: B1.
      train = std::max(train, trainB + double(m - 2) * kept + gradsAfter(1) +
                                  m * f + g + pendingW(1));
    }
    if (lag > 0) {
      // The W's left after the last backward, min(m, lag + 1) of them,
      // the first of which writes the gradients: every send made, no
      // activations held.
      train = std::max(train, grads + m * (f + g) +
                                  double(std::min<int64_t>(m, lag + 1)) *
                                      weightHeld);
    }
    double update =
        gradsAtUpdate + received + largest + sent.forward + sent.back;
    return resident + inputs + std::max(held + train, update);
  }

private:
  const UnitCosts &c;
  double trainF = 0, trainFFirst = 0, trainFLast = 0, trainB = 0, kept = 0,
         grads = 0, gradsAtUpdate = 0, resident = 0, held = 0, inputs = 0,
         largest = 0, shared = 0, received = 0, weightHeld = 0;
  int first = -1;
  std::vector<size_t> tiedSeen; ///< indices in Problem::tied
  std::vector<std::pair<int, double>> receivedFrom; ///< (owner unit, bytes)
};

/// The operand shapes of `op` on one device when the batch is split
/// `batchParts` ways and tp `t` ways; nullopt when a split does not divide
/// (no measurement can match then).
std::optional<std::vector<cost::Shape>>
localShapes(const OpCost &op, int64_t batchParts, int64_t t) {
  std::vector<cost::Shape> shapes;
  for (const OpCost::Operand &o : op.operands) {
    cost::Shape shape = o.shape;
    auto divide = [&](int dim, int64_t parts) {
      if (dim < 0 || parts == 1)
        return true;
      if (size_t(dim) >= shape.size() || shape[dim] % parts != 0)
        return false;
      shape[dim] /= parts;
      return true;
    };
    if (!divide(op.perMicroBatch ? o.batchDim : -1, batchParts) ||
        !divide(op.tpSplit ? o.tpDim : -1, t))
      return std::nullopt;
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

class Search {
public:
  Search(const Problem &p, const cost::DeviceSpec &spec,
         const cost::ProfileDatabase *profile)
      : p(p), spec(spec), profile(profile) {}

  Result run();
  StepEvaluation evaluatePlan(const PlanShape &shape) const;
  StepEvaluation evaluateVirtual(const PlanShape &shape,
                                 const std::vector<int64_t> &devices) const;

private:
  UnitCosts unitCosts(int64_t t, int64_t d, int64_t m, int64_t pp) const;
  /// Memory of units [a, b] holding y micro-batches.
  double stageMemory(const UnitCosts &c, size_t a, size_t b, int y,
                     int lag = 0) const;
  /// The micro-batches by which `stage` defers its W's (zb-h1: its index).
  int deferredW(int64_t stage) const {
    return p.schedule == "zb-h1" ? int(stage) : 0;
  }
  Sent sentBytes(const UnitCosts &c, size_t a, size_t b) const;
  int inFlight(int stage, int64_t pp, int64_t m) const;
  /// The least per-device memory any cut into pp stages needs (`least`;
  /// infinity when the pins allow none), and the fastest cut that fits
  /// (by its slowest stage; empty when none fits).
  std::vector<size_t> memoryCuts(const UnitCosts &c, int64_t t, int64_t d,
                                 int64_t pp, int64_t m, double edgeScale,
                                 double &least) const;
  /// Stage boundaries from the planner (first unit of each stage), or empty
  /// when no cut fits.
  std::vector<size_t> cut(const UnitCosts &c, int64_t t, int64_t pp, int64_t m,
                          double edgeScale, double bandwidth);
  /// The cut that minimises the closed-form step time exactly (a dynamic
  /// program per threshold on the once-per-step work), or empty when no cut
  /// fits; `tooLarge` when that would take more than kExactCutWork steps
  /// (the caller then uses cut()).
  std::vector<size_t> exactCut(const UnitCosts &c, int64_t t, int64_t d,
                               int64_t pp, int64_t m, double edgeScale,
                               bool &tooLarge) const;
  void evaluate(const UnitCosts &c, const std::vector<size_t> &starts,
                int64_t t, int64_t d, int64_t m, int64_t pp, double edgeScale,
                std::vector<StagePrediction> &stages, double &micro,
                double &step) const;
  double boundaryBytes(size_t a, size_t b, double edgeScale) const;
  /// A stage's once-per-step data-parallel communication: the gradient
  /// all-reduce before the update (ZeRO-1: reduce-scatter and all-gather,
  /// the same bytes) and, for the parameters ZeRO-3 shards (`sharded`
  /// bytes in `shardedCount` tensors), their gathers; one collective per
  /// parameter.
  double dpSync(double grads, int count, double sharded, int shardedCount,
                int64_t d, const cost::LinkSpec &link) const;
  /// Whether the schedule runs two virtual stages per device (interleaved
  /// 1F1B, ZB-V), each device's pair placed as dist-plan places them.
  bool virtualStages() const {
    return p.schedule == "interleaved" || p.schedule == "zb-v";
  }
  /// Units on every device (Problem::everyDevice).
  bool interlacedPlan() const {
    return std::count(p.everyDevice.begin(), p.everyDevice.end(), true) > 0;
  }
  std::vector<int64_t> virtualDevices(int64_t pp) const {
    std::vector<int64_t> devices;
    for (int64_t s = 0; s < 2 * pp; ++s)
      devices.push_back(p.schedule == "zb-v" ? (s < pp ? s : 2 * pp - 1 - s)
                                             : s % pp);
    return devices;
  }
  /// The first units of `parts` contiguous stages that balance the units'
  /// time per micro-batch (the least slowest stage).
  std::vector<size_t> balancedStarts(int64_t t, int64_t d, int64_t m,
                                     int64_t parts) const;
  /// The part of units [a, b]'s data-parallel communication the step
  /// waits for: all of it, or with DeviceSpec::overlapDpReduction what
  /// outlasts the last micro-batch's backward (each unit's gradients are
  /// reduced once its backward made them, in backward order, one
  /// collective after another, beside the backward of the units before it).
  double dpExposed(const UnitCosts &c, size_t a, size_t b, int64_t d,
                   const cost::LinkSpec &link) const;
  bool fitsMemory(const std::vector<StagePrediction> &stages) const;
  /// The step time with the schedule library's fill and drain (the closed
  /// form when pp == 1); "" or the schedule library's error.
  std::string scheduledStep(int64_t pp, int64_t m,
                            const std::vector<StagePrediction> &stages,
                            double &stepSeconds, double &bubble,
                            double &shared) const;
  /// The closed-form step time of `stages`, the wait for compute slots
  /// included (`shared`).
  double closedForm(int64_t pp, int64_t m,
                    const std::vector<StagePrediction> &stages,
                    double &shared) const;
  /// How long a pipeline's stages wait for their cores when ranks share
  /// them (DeviceSpec::coreWait); none without sharing. `pp`: the stages'
  /// device groups.
  schedule::CoreWaits coreWaits(int64_t pp) const;
  /// The wait for compute slots (DeviceSpec::computeSlots) of a plan whose
  /// schedule spans `span` seconds of the step, its stages on `groups`
  /// device groups (0: one group each; virtual stages share theirs).
  double sharedCompute(const std::vector<StagePrediction> &stages, int64_t m,
                       double span, int64_t groups = 0) const;

  /// The stage a constrained plan pins unit `u` to, or -1.
  int64_t pinOf(size_t u) const {
    return u < p.unitStages.size() ? p.unitStages[u] : -1;
  }
  /// Whether units [a, b] may form stage `stage` under the pins.
  bool pinsAllow(size_t a, size_t b, int64_t stage) const {
    for (size_t u = a; u <= b && u < p.unitStages.size(); ++u)
      if (p.unitStages[u] >= 0 && p.unitStages[u] != stage)
        return false;
    return true;
  }
  /// Whether some cut into pp stages keeps every pin: each stage needs a
  /// unit, so between two pinned units (and the chain's ends) there are at
  /// least as many units as stages.
  bool pinsFeasible(int64_t pp) const {
    int64_t prevUnit = -1, prevStage = -1;
    for (size_t u = 0; u < p.unitStages.size(); ++u) {
      int64_t s = p.unitStages[u];
      if (s < 0)
        continue;
      if (s < prevStage || int64_t(u) - prevUnit < s - prevStage)
        return false;
      prevUnit = int64_t(u);
      prevStage = s;
    }
    return int64_t(p.units.size()) - prevUnit >= pp - prevStage;
  }
  bool pinsAllow(const std::vector<size_t> &starts) const {
    size_t n = p.units.size();
    for (size_t i = 0; i < starts.size(); ++i)
      if (!pinsAllow(starts[i],
                     i + 1 < starts.size() ? starts[i + 1] - 1 : n - 1,
                     int64_t(i)))
        return false;
    return true;
  }

  const Problem &p;
  const cost::DeviceSpec &spec;
  const cost::ProfileDatabase *profile; ///< null: the roofline only
  size_t plannerCalls = 0;
  double plannerSeconds = 0;
};

UnitCosts Search::unitCosts(int64_t t, int64_t d, int64_t m, int64_t pp) const {
  size_t n = p.units.size();
  UnitCosts c;
  for (std::vector<double> *v :
       {&c.micro, &c.microF, &c.step, &c.microComm, &c.stepComm, &c.memA,
        &c.memB, &c.grads, &c.gradsHeld, &c.gradsAtUpdate, &c.resident,
        &c.fixedHeld, &c.inputs, &c.largest, &c.liveF, &c.liveFLast, &c.liveB,
        &c.shared, &c.weightHeld})
    v->assign(n, 0);
  c.backward.assign(n, {});
  c.tiedReads.assign(n, {});
  for (size_t i = 0; i < p.tied.size(); ++i)
    for (int r : p.tied[i].readers)
      c.tiedReads[r].push_back(
          {i, p.tied[i].owner,
           p.tied[i].split ? p.tied[i].bytes / double(t) : p.tied[i].bytes});
  c.gradCount.assign(n, 0);
  c.zero3.assign(n, 0);
  // The fraction of the global batch one micro-batch of one replica holds.
  double s = 1.0 / double(d * m);
  const cost::LinkSpec &tpLink = groupLink(spec, planMesh(d, t, pp), kTp);
  for (const OpCost &op : p.ops) {
    if (op.view)
      continue;
    double split = op.tpSplit ? double(t) : 1.0;
    double scale = op.perMicroBatch ? s : 1.0;
    if (op.commOnly) {
      const cost::LinkSpec &ppLink = groupLink(spec, planMesh(d, t, pp), kPp);
      double comm =
          collective(cost::Collective::AllGather, op.ppAllGatherBytes * scale,
                     op.ppRanks, ppLink) +
          collective(cost::Collective::AllReduce, op.ppAllReduceBytes * scale,
                     op.ppRanks, ppLink) +
          collective(cost::Collective::SendRecv, op.ppSendBytes * scale, 2,
                     ppLink);
      (op.perMicroBatch ? c.micro : c.step)[op.unit] += comm;
      (op.perMicroBatch ? c.microComm : c.stepComm)[op.unit] += comm;
      if (op.perMicroBatch && op.backward)
        c.backward[op.unit].push_back({op.reach, comm});
      else if (op.perMicroBatch)
        c.microF[op.unit] += comm;
      continue;
    }
    ++c.priced;
    double flops = op.flops * scale / split;
    double bytes = (op.batchBytes * scale + op.fixedBytes) / split;
    double time = cost::rooflineTime(spec, flops, bytes, op.dtype);
    if (profile) {
      std::optional<std::vector<cost::Shape>> shapes =
          localShapes(op, d * m, t);
      std::optional<double> exact =
          shapes ? profile->lookup(op.op, op.dtype, *shapes) : std::nullopt;
      // The op's rate (per FLOP of its kind), at least the time its bytes
      // take at the memory bandwidth: the rates are fitted on ops whose
      // FLOPs grow with their bytes, and would price an op of few FLOPs
      // and many bytes (a fill, a copy, an embedding's gradient table) at
      // its fixed cost alone.
      auto rated = [&](double f, double b) -> std::optional<double> {
        if (std::optional<double> r = profile->lookupRate(op.op, op.dtype, f))
          return std::max(*r, spec.opOverhead + b / spec.memoryBandwidth);
        return std::nullopt;
      };
      // The estimate without an exact entry: the op's rate, else the
      // roofline.
      auto estimate = [&](double f, double b) {
        if (std::optional<double> r = rated(f, b))
          return *r;
        return cost::rooflineTime(spec, f, b, op.dtype);
      };
      if (exact) {
        time = *exact;
        ++c.profiled;
      } else if (std::optional<std::vector<cost::Shape>> whole =
                     t > 1 && op.tpSplit ? localShapes(op, d * m, 1)
                                         : std::nullopt) {
        // A tp piece that no one-device run could time: the op's own
        // measurement at its whole shape, scaled by the estimate's ratio
        // between the piece and the whole.
        std::optional<double> measuredWhole =
            profile->lookup(op.op, op.dtype, *whole);
        double wholeFlops = op.flops * scale;
        double wholeBytes = op.batchBytes * scale + op.fixedBytes;
        double wholeEstimate = estimate(wholeFlops, wholeBytes);
        if (measuredWhole && wholeEstimate > 0) {
          time = *measuredWhole * estimate(flops, bytes) / wholeEstimate;
          ++c.profiled;
        } else if (std::optional<double> r = rated(flops, bytes)) {
          time = *r;
          ++c.profiled;
        }
      } else if (std::optional<double> r = rated(flops, bytes)) {
        time = *r;
        ++c.profiled;
      }
    }
    double comm = collective(cost::Collective::AllReduce,
                             op.allReduceBytes * scale, t, tpLink) +
                  collective(cost::Collective::AllGather,
                             op.allGatherBytes * scale, t, tpLink);
    (op.perMicroBatch ? c.micro : c.step)[op.unit] += time + comm;
    (op.perMicroBatch ? c.microComm : c.stepComm)[op.unit] += comm;
    if (op.perMicroBatch && op.backward)
      c.backward[op.unit].push_back({op.reach, time + comm});
    else if (op.perMicroBatch)
      c.microF[op.unit] += time + comm;
  }
  c.microBatches = m;
  c.pp = pp;
  c.sendScale = 1.0 / double(d);
  // `held`: the values computed from parameters alone are held for the
  // step (micro-batches), not live at the op only. `gathered`: ZeRO-3's
  // whole copies of the parameters an op reads are alive at it.
  auto live = [&](const std::vector<Unit::Live> &points, bool held,
                  bool gathered) {
    double peak = 0;
    for (const Unit::Live &l : points)
      peak = std::max(
          peak, (l.batch + l.batchSplit / double(t)) * s + l.fixed +
                    l.fixedSplit / double(t) -
                    (held ? l.shared + l.sharedSplit / double(t) + l.paramCopy +
                                l.paramCopySplit / double(t)
                          : 0) +
                    (gathered ? l.params + l.paramsSplit / double(t) : 0));
    return peak;
  };
  for (size_t u = 0; u < n; ++u) {
    const Unit &unit = p.units[u];
    double params = unit.paramBytes + unit.paramBytesSplit / double(t);
    double state = unit.stateBytes + unit.stateBytesSplit / double(t);
    // ZeRO-3 keeps 1/d of each parameter between uses; the whole copies
    // gathered for an op are alive at it (Unit::Live::params).
    bool zero3 = p.zero3 && d > 1 && !unit.paramsWhole;
    c.zero3[u] = zero3;
    c.resident[u] = (zero3 ? params / double(d) : params) +
                    (p.zero1 || zero3 ? state / double(d) : state);
    c.fixedHeld[u] = unit.actFixedBytes + unit.actFixedBytesSplit / double(t);
    // With micro-batches, one copy of each value computed from the
    // parameters alone serves them all (CSE) and lives from the first
    // forward to the last; dist-recompute leaves those the backward reads,
    // held for the step. Not under ZeRO-3: dist-partition gathers the
    // parameter for each micro-batch's use and makes such values (a
    // weight's transpose) again from it, as with one micro-batch.
    bool held = m > 1 && !zero3;
    if (held) {
      c.shared[u] = unit.sharedBytes + unit.sharedBytesSplit / double(t);
      c.fixedHeld[u] +=
          unit.paramCopyBytes + unit.paramCopyBytesSplit / double(t);
    }
    c.inputs[u] = unit.inputBytes / double(d);
    // The update of the largest parameter allocates its new value and its
    // new optimizer state while the old ones are still held.
    double stateRatio = params > 0
                            ? (p.zero1 || zero3 ? state / double(d) : state) /
                                  (zero3 ? params / double(d) : params)
                            : 0;
    c.largest[u] =
        (zero3 ? unit.largestParamBytes / double(d) : unit.largestParamBytes) *
        (1 + stateRatio);
    c.liveF[u] = live(unit.forwardLive, held, zero3);
    c.liveFLast[u] = c.liveF[u];
    if (held) {
      std::vector<Unit::Live> ahead = unit.forwardLive;
      for (Unit::Live &l : ahead) {
        l.fixed += l.sharedAhead;
        l.fixedSplit += l.sharedAheadSplit;
      }
      c.liveFLast[u] = live(ahead, held, zero3);
    }
    c.liveB[u] = live(unit.backwardLive, held, zero3);
    c.grads[u] = params;
    c.gradCount[u] = unit.params;
    // ZeRO-2 (reduced early): a gradient is reduce-scattered once the last
    // micro-batch's backward made it; with one micro-batch that is right
    // away, with several the running totals stay whole to the last.
    bool zero2 = p.zero2 && d > 1;
    c.gradsAtUpdate[u] = zero2 ? params / double(d) : params;
    c.gradsHeld[u] = zero2 && m == 1 ? params / double(d) : params;
    // The training driver's work around each step, on the ranks that hold
    // the unit.
    c.step[u] +=
        driverWork(spec, unit.stepValues, zero3 ? params / double(d) : params);
    // The planner library's additive memory (cut()): a lower bound of the
    // stage memory, so that it rejects no cut that fits; the search checks
    // every cut with stageMemory() afterwards.
    c.memB[u] = c.resident[u] + c.inputs[u] + c.fixedHeld[u];
    c.memA[u] = (unit.actBytes + unit.actBytesSplit / double(t)) * s;
    c.weightHeld[u] =
        (unit.weightBytes + unit.weightBytesSplit / double(t)) * s;
  }
  return c;
}

int Search::inFlight(int stage, int64_t pp, int64_t m) const {
  return cost::inFlightMicroBatches(
      p.schedule == "gpipe" ? cost::PipelineSchedule::GPipe
                            : cost::PipelineSchedule::OneFOneB,
      stage, static_cast<int>(pp), static_cast<int>(m));
}

double Search::stageMemory(const UnitCosts &c, size_t a, size_t b, int y,
                           int lag) const {
  StageMemory mem(c);
  for (size_t u = a; u <= b; ++u)
    mem.add(u);
  return mem.bytes(y, sentBytes(c, a, b), lag);
}

Sent Search::sentBytes(const UnitCosts &c, size_t a, size_t b) const {
  Sent sent;
  if (c.pp == 1)
    return sent;
  for (const Edge &e : p.edges) {
    bool fromIn = size_t(e.from) >= a && size_t(e.from) <= b;
    bool toIn = size_t(e.to) >= a && size_t(e.to) <= b;
    if (fromIn != toIn)
      (fromIn ? sent.forward : sent.back) += e.bytes * c.sendScale;
  }
  return sent;
}

std::vector<size_t> Search::memoryCuts(const UnitCosts &c, int64_t t, int64_t d,
                                       int64_t pp, int64_t m, double edgeScale,
                                       double &least) const {
  // Two dynamic programs over (stages so far, units so far): the cut whose
  // largest stage is smallest (filling stages greedily from the last one is
  // not enough: a range's send buffers, and under zb-h1 its deferred W's,
  // do not grow with it), and among the cuts that fit the one whose slowest
  // stage, (m + pp - 1) x its micro-batch time plus its once-per-step time,
  // is fastest. O(pp n^2) ranges, each extended by one unit in O(its edges).
  size_t n = p.units.size();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  least = kInf;
  if (pp < 1 || size_t(pp) > n)
    return {};
  const layout::Mesh mesh = planMesh(d, t, pp);
  const cost::LinkSpec &ppLink = groupLink(spec, mesh, kPp);
  const cost::LinkSpec &dpLink = groupLink(spec, mesh, kDp);
  double limit = p.memoryBytes * (1 + 1e-12);
  Incident incident = incidentEdges(p.edges, n);
  // [k][e]: units [0, e) as stages 0..k-1, and stage k-1's first unit.
  std::vector<std::vector<double>> small(pp + 1,
                                         std::vector<double>(n + 1, kInf)),
      fast = small;
  std::vector<std::vector<size_t>> smallFrom(pp + 1,
                                             std::vector<size_t>(n + 1)),
      fastFrom = smallFrom;
  small[0][0] = fast[0][0] = 0;
  for (int64_t k = 1; k <= pp; ++k) {
    int y = inFlight(int(k - 1), pp, m), lag = deferredW(k - 1);
    for (size_t a = size_t(k - 1); a < n; ++a) {
      if (small[k - 1][a] == kInf)
        continue;
      StageMemory stage(c);
      Boundary boundary{a};
      double micro = 0, step = 0, grads = 0;
      int count = 0;
      for (size_t b = a; b < n; ++b) {
        // A unit pinned to another stage ends the range.
        if (int64_t pin = pinOf(b); pin >= 0 && pin != k - 1)
          break;
        stage.add(b);
        micro += c.micro[b];
        step += c.step[b];
        grads += c.grads[b];
        count += c.gradCount[b];
        boundary.add(incident, b);
        Sent scaled;
        if (pp > 1)
          scaled = {boundary.sent.forward * c.sendScale,
                    boundary.sent.back * c.sendScale};
        double bytes = stage.bytes(y, scaled, lag);
        double v = std::max(small[k - 1][a], bytes);
        if (v < small[k][b + 1]) {
          small[k][b + 1] = v;
          smallFrom[k][b + 1] = a;
        }
        if (bytes > limit || fast[k - 1][a] == kInf)
          continue;
        double x = micro;
        if (pp > 1)
          x += 2 * collective(cost::Collective::SendRecv,
                              boundary.crossing * edgeScale, 2, ppLink) +
               2 * spec.blockStart;
        double time =
            std::max(fast[k - 1][a], double(m + pp - 1) * x + step +
                                         dpExposed(c, a, b, d, dpLink));
        if (time < fast[k][b + 1]) {
          fast[k][b + 1] = time;
          fastFrom[k][b + 1] = a;
        }
      }
    }
  }
  least = small[pp][n];
  if (fast[pp][n] == kInf)
    return {};
  std::vector<size_t> starts(pp, 0);
  for (int64_t k = pp, e = int64_t(n); k >= 1; --k) {
    starts[k - 1] = fastFrom[k][e];
    e = int64_t(fastFrom[k][e]);
  }
  return starts;
}

double Search::dpSync(double grads, int count, double sharded, int shardedCount,
                      int64_t d, const cost::LinkSpec &link) const {
  // ZeRO-2 reduce-scatters each gradient and all-gathers each updated
  // parameter (a ring all-reduce's two halves, in two collectives).
  double t =
      p.zero2 && d > 1
          ? collectives(cost::Collective::ReduceScatter, grads, count, d,
                        link) +
                collectives(cost::Collective::AllGather, grads, count, d, link)
          : collectives(cost::Collective::AllReduce, grads, count, d, link);
  // ZeRO-3 gathers every parameter it shards twice per micro-batch: for
  // the forward and again for the backward (dist-partition); the callers
  // count the micro-batches in.
  if (shardedCount > 0 && d > 1)
    t += 2 * collectives(cost::Collective::AllGather, sharded, shardedCount, d,
                         link);
  return t;
}

std::vector<size_t> Search::balancedStarts(int64_t t, int64_t d, int64_t m,
                                           int64_t parts) const {
  size_t n = p.units.size();
  UnitCosts c = unitCosts(t, d, m, parts);
  std::vector<double> prefix(n + 1, 0);
  for (size_t u = 0; u < n; ++u)
    prefix[u + 1] = prefix[u] + c.micro[u];
  // best[k][e]: units [0, e) in k stages; from[k][e]: the last one's start.
  std::vector<std::vector<double>> best(parts + 1,
                                        std::vector<double>(n + 1, kInf));
  std::vector<std::vector<size_t>> from(parts + 1,
                                        std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  for (int64_t k = 1; k <= parts; ++k)
    for (size_t e = size_t(k); e <= n; ++e)
      for (size_t a = size_t(k - 1); a < e; ++a) {
        double v = std::max(best[k - 1][a], prefix[e] - prefix[a]);
        if (v < best[k][e]) {
          best[k][e] = v;
          from[k][e] = a;
        }
      }
  std::vector<size_t> starts(parts, 0);
  for (int64_t k = parts, e = int64_t(n); k >= 1; --k) {
    starts[k - 1] = from[k][e];
    e = int64_t(from[k][e]);
  }
  return starts;
}

double Search::dpExposed(const UnitCosts &c, size_t a, size_t b, int64_t d,
                         const cost::LinkSpec &link) const {
  if (!spec.overlapDpReduction || d == 1) {
    double grads = 0, sharded = 0;
    int count = 0, shardedCount = 0;
    for (size_t u = a; u <= b; ++u) {
      grads += c.grads[u];
      count += c.gradCount[u];
      if (c.zero3[u]) {
        sharded += c.grads[u];
        shardedCount += c.gradCount[u];
      }
    }
    // Each micro-batch gathers its own copies (dist-partition).
    int64_t m = c.microBatches;
    return dpSync(grads, count, sharded * double(m), int(shardedCount * m), d,
                  link);
  }
  double now = 0, busyUntil = 0;
  for (size_t u = b + 1; u-- > a;) {
    for (auto [reach, time] : c.backward[u])
      now += time;
    if (c.gradCount[u] == 0)
      continue;
    busyUntil =
        std::max(busyUntil, now) +
        dpSync(c.grads[u], c.gradCount[u],
               c.zero3[u] ? c.grads[u] * double(c.microBatches) : 0,
               c.zero3[u] ? int(c.gradCount[u] * c.microBatches) : 0, d, link);
  }
  return std::max(0.0, busyUntil - now);
}

double Search::boundaryBytes(size_t a, size_t b, double edgeScale) const {
  double bytes = 0;
  for (const Edge &e : p.edges) {
    bool fromIn = size_t(e.from) >= a && size_t(e.from) <= b;
    bool toIn = size_t(e.to) >= a && size_t(e.to) <= b;
    if (fromIn != toIn)
      bytes += e.bytes * edgeScale;
  }
  return bytes;
}

std::vector<size_t> Search::cut(const UnitCosts &c, int64_t t, int64_t pp,
                                int64_t m, double edgeScale, double bandwidth) {
  size_t n = p.units.size();
  if (pp == 1)
    return {0};
  planner::PiperInstance ins;
  ins.maxMemoryPerDevice = p.memoryBytes;
  ins.maxDevices = static_cast<int>(t * pp);
  ins.bandwidth = bandwidth;
  // d must divide Piper's micro-batch count N and the d's sum to at most N:
  // with N the smallest prime >= pp, d = N would need more devices than
  // the replica has, so every stage gets d = 1, and up to pp stages fit.
  int primeN = static_cast<int>(std::max<int64_t>(pp, 2));
  auto isPrime = [](int x) {
    for (int q = 2; q * q <= x; ++q)
      if (x % q == 0)
        return false;
    return true;
  };
  while (!isPrime(primeN))
    ++primeN;
  ins.mbsInBatch = primeN;
  // Unit edges, plus the chain u -> u+1 so that the downsets are suffixes
  // and stages contiguous unit ranges.
  std::map<std::pair<int, int>, double> edges;
  for (size_t u = 0; u + 1 < n; ++u)
    edges[{int(u), int(u + 1)}] = 0;
  for (const Edge &e : p.edges)
    edges[{e.from, e.to}] += e.bytes * edgeScale;
  std::vector<std::vector<int>> ins_(n), outs(n);
  for (auto &[k, bytes] : edges) {
    ins.edges.push_back({k.first, k.second, bytes});
    outs[k.first].push_back(k.second);
    ins_[k.second].push_back(k.first);
  }
  // GPipe holds all m micro-batches on every stage, where Piper's y is N.
  double yScale = p.schedule == "gpipe" ? double(m) / primeN : 1.0;
  for (size_t u = 0; u < n; ++u) {
    planner::PiperNode node;
    node.id = static_cast<int>(u);
    node.name = p.units[u].name;
    planner::PiperConfig cfg;
    cfg.id = "vanilla";
    // Once-per-step work amortised over the micro-batches, so that the cut
    // balances it too.
    cfg.timePerSample = c.micro[u] + c.step[u] / double(m);
    cfg.parameterSize = 0; // d = 1: no resync inside one replica
    cfg.memoryA = c.memA[u] * yScale;
    cfg.memoryB = c.memB[u];
    for (int v : ins_[u])
      cfg.syncFw[v] = 0;
    for (int v : outs[u])
      cfg.syncBw[v] = 0;
    node.configs[static_cast<int>(t)].push_back(cfg);
    ins.nodes.push_back(std::move(node));
  }
  planner::PlannerOptions options;
  options.objective = planner::Objective::Piper;
  options.schedule = p.schedule == "gpipe" ? planner::Schedule::GPipe
                                           : planner::Schedule::OneFOneB;
  ++plannerCalls;
  planner::Plan plan;
  try {
    plan = planner::planPiper(ins, options);
  } catch (const Exception &) {
    return {}; // nothing fits
  }
  plannerSeconds += plan.stats.cpuSeconds;
  std::vector<std::pair<size_t, size_t>> ranges;
  for (const planner::PlannedStage &s : plan.stages)
    ranges.push_back({size_t(s.nodeIds.front()), size_t(s.nodeIds.back())});
  // The planner may leave devices unused when more stages would not lower
  // the bottleneck; the mesh needs exactly pp stages, so split the slowest
  // stages further (memory is checked again by the caller).
  auto time = [&](std::pair<size_t, size_t> r) {
    double x = 0;
    for (size_t u = r.first; u <= r.second; ++u)
      x += c.micro[u];
    return x;
  };
  while (int64_t(ranges.size()) < pp) {
    int best = -1;
    for (size_t i = 0; i < ranges.size(); ++i)
      if (ranges[i].second > ranges[i].first &&
          (best < 0 || time(ranges[i]) > time(ranges[best])))
        best = static_cast<int>(i);
    if (best < 0)
      return {};
    auto [a, b] = ranges[best];
    size_t mid = a;
    double total = time(ranges[best]), run = 0, gap = kInf;
    for (size_t u = a; u < b; ++u) {
      run += c.micro[u];
      if (std::abs(total - 2 * run) < gap) {
        gap = std::abs(total - 2 * run);
        mid = u;
      }
    }
    ranges[best] = {a, mid};
    ranges.insert(ranges.begin() + best + 1, {mid + 1, b});
  }
  std::vector<size_t> starts;
  for (auto &r : ranges)
    starts.push_back(r.first);
  // The planner knows no pins: a cut that breaks one is no cut (the caller
  // then takes the least-memory cut, which keeps them).
  if (!pinsAllow(starts))
    return {};
  return starts;
}

/// Inner steps of exactCut's dynamic programs above which the planner's cut
/// is used instead: small models (GPT-2's 14 layer groups at any pp) are
/// cut exactly, a 98-group GPT-3 at large pp by the planner.
constexpr double kExactCutWork = 4e6;

std::vector<size_t> Search::exactCut(const UnitCosts &c, int64_t t, int64_t d,
                                     int64_t pp, int64_t m, double edgeScale,
                                     bool &tooLarge) const {
  size_t n = p.units.size();
  tooLarge = false;
  // The work below is at least pp n^2 / 2 steps (one threshold); deciding
  // that before the n^2 tables keeps their size bounded by kExactCutWork
  // too (thousands of units would otherwise allocate gigabytes first).
  if (double(pp) * double(n) * double(n) / 2 > kExactCutWork) {
    tooLarge = true;
    return {};
  }
  // Per range [a, b]: its time per micro-batch and once-per-step time, as
  // evaluate() computes them.
  const layout::Mesh mesh = planMesh(d, t, pp);
  const cost::LinkSpec &ppLink = groupLink(spec, mesh, kPp);
  const cost::LinkSpec &dpLink = groupLink(spec, mesh, kDp);
  std::vector<double> micro(n * n, 0), step(n * n, 0);
  std::vector<int> y(pp);
  for (int64_t i = 0; i < pp; ++i)
    y[i] = inFlight(static_cast<int>(i), pp, m);
  double limit = p.memoryBytes * (1 + 1e-12);
  std::vector<char> fits(pp * n * n, 0); ///< [i][a][b]: as stage i
  Incident incident = incidentEdges(p.edges, n);
  std::vector<double> thresholds;
  for (size_t a = 0; a < n; ++a) {
    double mi = 0, st = 0, grads = 0;
    Boundary boundary{a};
    int count = 0;
    // The stages the range's pinned units ask for (a constrained plan):
    // lo > hi while none is pinned; a range pinned to two is no stage.
    int64_t pinLo = std::numeric_limits<int64_t>::max(), pinHi = -1;
    StageMemory mem(c);
    for (size_t b = a; b < n; ++b) {
      if (int64_t pin = pinOf(b); pin >= 0) {
        pinLo = std::min(pinLo, pin);
        pinHi = std::max(pinHi, pin);
      }
      mi += c.micro[b];
      st += c.step[b];
      grads += c.grads[b];
      count += c.gradCount[b];
      mem.add(b);
      boundary.add(incident, b);
      Sent scaled;
      if (pp > 1)
        scaled = {boundary.sent.forward * c.sendScale,
                  boundary.sent.back * c.sendScale};
      for (int64_t i = 0; i < pp; ++i)
        fits[(i * n + a) * n + b] =
            mem.bytes(y[i], scaled, deferredW(i)) <= limit &&
            (pinHi < 0 || (pinLo == i && pinHi == i));
      double x = mi;
      if (pp > 1)
        x += 2 * collective(cost::Collective::SendRecv,
                            boundary.crossing * edgeScale, 2, ppLink);
      micro[a * n + b] = x;
      step[a * n + b] = st + dpExposed(c, a, b, d, dpLink);
      thresholds.push_back(step[a * n + b]);
    }
  }
  std::sort(thresholds.begin(), thresholds.end());
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()),
                   thresholds.end());
  if (double(thresholds.size()) * double(pp) * double(n) * double(n) / 2 >
      kExactCutWork) {
    // The planner library knows no pins: a constrained plan keeps the
    // dynamic program with one threshold (the slowest stage alone, the
    // planner's own objective) rather than lose its pins.
    if (p.unitStages.empty()) {
      tooLarge = true;
      return {};
    }
    thresholds = {thresholds.back()};
  }
  double k = double(m + pp - 1);
  // f[i][b]: the least slowest-stage time of stages 0..i over units 0..b,
  // every stage's once-per-step time at most tau; from[i][b]: stage i's
  // first unit.
  std::vector<double> f(pp * n);
  std::vector<size_t> from(pp * n);
  auto solve = [&](double tau) {
    std::fill(f.begin(), f.end(), kInf);
    for (int64_t i = 0; i < pp; ++i)
      for (size_t b = size_t(i); b < n; ++b)
        for (size_t a = size_t(i); a <= b; ++a) {
          if (step[a * n + b] > tau || !fits[(i * n + a) * n + b])
            continue;
          double before = i == 0 ? (a == 0 ? 0 : kInf) : f[(i - 1) * n + a - 1];
          double v = std::max(before, micro[a * n + b]);
          if (v < f[i * n + b]) {
            f[i * n + b] = v;
            from[i * n + b] = a;
          }
        }
    return f[(pp - 1) * n + n - 1];
  };
  // g(tau) only falls as tau grows: g(largest) bounds every later tau.
  double floor = solve(thresholds.back());
  if (floor == kInf)
    return {};
  double best = kInf;
  std::vector<size_t> bestStarts;
  for (double tau : thresholds) {
    if (tau + k * floor >= best)
      break;
    double g = solve(tau);
    if (g == kInf || k * g + tau >= best)
      continue;
    std::vector<size_t> starts(pp);
    double realStep = 0;
    for (int64_t i = pp - 1, b = int64_t(n) - 1; i >= 0; --i) {
      starts[i] = from[i * n + size_t(b)];
      realStep = std::max(realStep, step[starts[i] * n + size_t(b)]);
      b = int64_t(starts[i]) - 1;
    }
    if (k * g + realStep < best) {
      best = k * g + realStep;
      bestStarts = starts;
    }
  }
  return bestStarts;
}

void Search::evaluate(const UnitCosts &c, const std::vector<size_t> &starts,
                      int64_t t, int64_t d, int64_t m, int64_t pp,
                      double edgeScale, std::vector<StagePrediction> &stages,
                      double &micro, double &step) const {
  size_t n = p.units.size();
  stages.clear();
  micro = step = 0;
  const layout::Mesh mesh = planMesh(d, t, pp);
  const cost::LinkSpec &ppLink = groupLink(spec, mesh, kPp);
  const cost::LinkSpec &dpLink = groupLink(spec, mesh, kDp);
  for (size_t i = 0; i < starts.size(); ++i) {
    StagePrediction s;
    s.firstUnit = starts[i];
    s.lastUnit = i + 1 < starts.size() ? starts[i + 1] - 1 : n - 1;
    s.inFlight = inFlight(static_cast<int>(i), pp, m);
    s.memoryBytes = stageMemory(c, s.firstUnit, s.lastUnit, s.inFlight,
                                deferredW(int64_t(i)));
    double grads = 0;
    int count = 0;
    for (size_t u = s.firstUnit; u <= s.lastUnit; ++u) {
      count += c.gradCount[u];
      s.microSeconds += c.micro[u];
      s.microForward += c.microF[u];
      // W: what no earlier stage waits for (dist-schedule's split).
      for (auto [reach, time] : c.backward[u])
        if (reach >= int(s.firstUnit))
          s.microWeight += time;
      s.stepSeconds += c.step[u];
      s.microCompute += c.micro[u] - c.microComm[u];
      s.stepCompute += c.step[u] - c.stepComm[u];
      grads += c.grads[u];
    }
    // Activations forward and their gradients backward, per micro-batch,
    // and the start of each of the two blocks after its receive.
    if (pp > 1) {
      s.microSends =
          2 * collective(cost::Collective::SendRecv,
                         boundaryBytes(s.firstUnit, s.lastUnit, edgeScale), 2,
                         ppLink) +
          2 * spec.blockStart;
      s.microSeconds += s.microSends;
    }
    s.stepSeconds += dpExposed(c, s.firstUnit, s.lastUnit, d, dpLink);
    micro = std::max(micro, s.microSeconds);
    step = std::max(step, s.stepSeconds);
    stages.push_back(s);
  }
}

bool Search::fitsMemory(const std::vector<StagePrediction> &stages) const {
  bool fits = true;
  for (const StagePrediction &s : stages)
    fits = fits && s.memoryBytes <= p.memoryBytes * (1 + 1e-12);
  return fits;
}

/// Spans 1 (F) : 2 (B): the fill and drain are those of the schedule.
static double closedFormStep(int64_t pp, int64_t m, double micro, double step) {
  return double(m + pp - 1) * micro + step;
}

/// Zero bubble (ZB-H1): the fill and drain shrink to (pp - 1) (F + B - W)
/// of the slowest stage (Qi et al., "Zero Bubble Pipeline Parallelism"),
/// never below the forward's fill.
static double zeroBubbleStep(int64_t pp, int64_t m, double micro,
                             double forward, double weight, double step) {
  double fill = std::max(forward, micro - 2 * weight);
  return double(m) * micro + double(pp - 1) * fill + step;
}

double Search::sharedCompute(const std::vector<StagePrediction> &stages,
                             int64_t m, double span, int64_t groups) const {
  // Ranks of one node compete for its computeSlots: with r times more ranks
  // than slots, the step takes at least r x the work of its average rank
  // (every stage has dp x tp ranks). A plan whose ranks take turns (a
  // pipeline's fill and drain) already spends that long; one that keeps
  // them all busy (dp, tp) waits for the difference. The work counts the
  // rank's collectives and sends as well as its ops: ranks that share
  // cores are host processes, whose messages are copied, folded and
  // polled for by their own core.
  double ranks = double(std::min<int64_t>(p.devices, spec.devicesPerNode));
  if (stages.empty())
    return 0;
  double work = 0;
  for (const StagePrediction &s : stages)
    work += double(m) * s.microSeconds + s.stepSeconds;
  work /= double(groups > 0 ? groups : int64_t(stages.size()));
  if (!spec.contention.empty()) {
    // Measured sharing: the plan's ranks are busy `busy` of the span at
    // once on average (the dp4 step: all of them; a one-micro-batch
    // pipeline: one stage's), and everything slows by the calibrated
    // slowdown of that many busy ranks (linear between counts; the rest
    // wait, polling).
    if (span <= 0)
      return 0;
    double busy = std::clamp(ranks * work / span, 1.0, ranks);
    const std::vector<double> &g = spec.contention;
    size_t lo = std::min(g.size() - 1, size_t(busy) - 1);
    size_t hi = std::min(g.size() - 1, lo + 1);
    double slow = g[lo] + (g[hi] - g[lo]) * (busy - double(lo + 1));
    return std::max(0.0, span * (slow - 1));
  }
  double ratio = ranks / spec.computeSlots;
  if (ratio <= 1)
    return 0;
  return std::max(0.0, work * ratio - span);
}

schedule::CoreWaits Search::coreWaits(int64_t pp) const {
  // Ranks beyond the node's compute slots share cores: a stage waiting for
  // a message may find its core held by a computing rank
  // (DeviceSpec::coreWait). Each rank computing when the message arrives
  // holds the receiver's core with the measured chance
  // (DeviceSpec::coreChance) or, without one, the chance a balanced
  // placement gives (N ranks on S slots: N / S to a core, so (N / S - 1) /
  // (N - 1) for each other rank).
  schedule::CoreWaits w;
  double ranks = double(std::min<int64_t>(p.devices, spec.devicesPerNode));
  double perCore = ranks / std::max(1.0, spec.computeSlots);
  if (spec.coreWait <= 0 || perCore <= 1 || ranks <= 1)
    return w;
  w.wait = spec.coreWait;
  w.chance = spec.coreChance > 0 ? spec.coreChance
                                 : (perCore - 1) / (ranks - 1);
  w.stageRanks = std::max(1.0, ranks / double(pp));
  return w;
}

/// The slowest stage's times: per micro-batch and once per step.
struct Slowest {
  double micro = 0, step = 0;
  /// The forward, B and W parts of a micro-batch, each the largest over
  /// the stages.
  double forward = 0, backwardB = 0, weight = 0;
  explicit Slowest(const std::vector<StagePrediction> &stages) {
    for (const StagePrediction &s : stages) {
      micro = std::max(micro, s.microSeconds);
      step = std::max(step, s.stepSeconds);
      forward = std::max(forward, s.microForward);
      weight = std::max(weight, s.microWeight);
      backwardB =
          std::max(backwardB, s.microSeconds - s.microForward - s.microWeight);
    }
  }
};

double Search::closedForm(int64_t pp, int64_t m,
                          const std::vector<StagePrediction> &stages,
                          double &shared) const {
  Slowest w(stages);
  if (p.schedule == "zb-h1" && pp > 1) {
    double step = zeroBubbleStep(pp, m, w.micro, w.forward, w.weight, w.step);
    shared = sharedCompute(stages, m, step);
    return step + shared;
  }
  shared = sharedCompute(stages, m, closedFormStep(pp, m, w.micro, w.step));
  return closedFormStep(pp, m, w.micro, w.step) + shared;
}

std::string Search::scheduledStep(int64_t pp, int64_t m,
                                  const std::vector<StagePrediction> &stages,
                                  double &stepSeconds, double &bubble,
                                  double &shared) const {
  Slowest w(stages);
  bubble = 0;
  stepSeconds = closedForm(pp, m, stages, shared);
  if (pp <= 1)
    return "";
  schedule::PipelineSpec ps;
  ps.stages = static_cast<int>(pp);
  ps.forwardSpan = 1;
  ps.backwardSpan = 2;
  if (p.schedule == "zb-h1") {
    // Spans as dist-schedule gives them: the slowest stage's F, B and W
    // in units of the forward, rounded, each 1 to 8 (W at least 1: the
    // schedule library needs the block).
    double f = std::max(w.forward, 1e-12 * w.micro);
    auto span = [&](double x) {
      return std::max<int64_t>(1, std::min<int64_t>(8, std::llround(x / f)));
    };
    ps.forwardSpan = 1;
    ps.backwardSpan = span(w.backwardB);
    ps.weightSpan = span(w.weight);
  }
  schedule::PipelineOrder order = schedule::pipelineOrder(
      p.schedule, ps, static_cast<int>(m), std::nullopt);
  if (!order.error.empty())
    return p.schedule + ": " + order.error;
  // The order replayed with each block at its own stage's time
  // (schedule::replayPipeline), so unequal stages (a small embedding stage,
  // a heavy head) cost what they take, not the slowest stage's time each.
  // Sends: half of a stage's per-micro-batch sends with its forward, half
  // with its backward.
  bool splitW = ps.weightSpan > 0;
  std::vector<double> fT(pp), bT(pp), wT(pp);
  for (int64_t s = 0; s < pp; ++s) {
    const StagePrediction &st = stages[s];
    wT[s] = splitW ? st.microWeight : 0.0;
    fT[s] = st.microForward + st.microSends / 2;
    bT[s] = std::max(0.0, st.microSeconds - fT[s] - wT[s]);
  }
  schedule::ReplayedPipeline replayed = schedule::replayPipeline(
      order, int(pp), int(m), fT, bT, wT, coreWaits(pp));
  if (!replayed.error.empty())
    return p.schedule + ": " + replayed.error;
  const std::vector<double> &free = replayed.stageEnds;
  double busy = replayed.busy;
  double makespan = 0, total = 0;
  for (int64_t s = 0; s < pp; ++s) {
    makespan = std::max(makespan, free[s]);
    total = std::max(total, free[s] + stages[s].stepSeconds);
  }
  bubble = makespan > 0 ? 1 - busy / (double(pp) * makespan) : 0;
  shared = sharedCompute(stages, m, total);
  stepSeconds = total + shared;
  return "";
}

StepEvaluation Search::evaluatePlan(const PlanShape &shape) const {
  StepEvaluation out;
  size_t n = p.units.size();
  const std::vector<size_t> &starts = shape.stageStarts;
  if (shape.dp < 1 || shape.tp < 1 || shape.pp < 1 || shape.microBatches < 1) {
    out.error = "dp, tp, pp and the micro-batch count must be >= 1";
    return out;
  }
  if (int64_t(starts.size()) != shape.pp || starts.front() != 0 ||
      starts.back() >= n) {
    out.error = "need pp stage starts, the first 0, all below the unit count";
    return out;
  }
  for (size_t i = 1; i < starts.size(); ++i)
    if (starts[i] <= starts[i - 1]) {
      out.error = "stage starts must ascend";
      return out;
    }
  int64_t t = shape.tp, d = shape.dp, pp = shape.pp, m = shape.microBatches;
  UnitCosts c = unitCosts(t, d, m, pp);
  out.profiledOps = c.profiled;
  out.pricedOps = c.priced;
  double micro = 0, step = 0;
  evaluate(c, starts, t, d, m, pp, 1.0 / double(d * m), out.stages, micro,
           step);
  out.fits = fitsMemory(out.stages);
  double shared = 0;
  out.closedFormSeconds = closedForm(pp, m, out.stages, shared);
  out.error = scheduledStep(pp, m, out.stages, out.stepSeconds, out.bubble,
                            out.sharedComputeSeconds);
  return out;
}

StepEvaluation
Search::evaluateVirtual(const PlanShape &shape,
                        const std::vector<int64_t> &devices) const {
  StepEvaluation out;
  size_t n = p.units.size();
  const std::vector<size_t> &starts = shape.stageStarts;
  int64_t stages = shape.pp, t = shape.tp, d = shape.dp, m = shape.microBatches;
  if (d < 1 || t < 1 || stages < 1 || m < 1 ||
      int64_t(starts.size()) != stages || starts.front() != 0 ||
      starts.back() >= n || int64_t(devices.size()) != stages) {
    out.error = "need one start and one device per virtual stage";
    return out;
  }
  for (size_t i = 1; i < starts.size(); ++i)
    if (starts[i] <= starts[i - 1]) {
      out.error = "stage starts must ascend";
      return out;
    }
  int64_t numDevices = *std::max_element(devices.begin(), devices.end()) + 1;
  if (stages % numDevices != 0 ||
      *std::min_element(devices.begin(), devices.end()) < 0) {
    out.error = "every device needs the same number of virtual stages";
    return out;
  }
  UnitCosts c = unitCosts(t, d, m, stages);
  out.profiledOps = c.profiled;
  out.pricedOps = c.priced;
  double micro = 0, step = 0;
  evaluate(c, starts, t, d, m, stages, 1.0 / double(d * m), out.stages, micro,
           step);
  // Time: the schedule library's order, spans as dist-schedule gives them,
  // replayed below at each stage's own times.
  schedule::PipelineSpec ps;
  ps.stages = int(numDevices);
  ps.chunks = int(stages / numDevices);
  ps.vShape =
      ps.chunks == 2 && devices.size() >= 2 && devices[0] == devices.back();
  // The blocks' spans as dist-schedule derives them, so that the replay
  // below follows the order the program runs: each stage's forward, B and
  // W FLOPs (a W: a backward op no earlier stage waits for, under the
  // zero-bubble schedules), in units of the smallest stage's forward.
  bool zeroBubble = p.schedule.rfind("zb", 0) == 0;
  std::vector<double> fF(stages, 0), fB(stages, 0), fW(stages, 0);
  for (const OpCost &op : p.ops) {
    if (!op.modelFlops)
      continue;
    int64_t s = 0;
    while (s + 1 < stages && int64_t(starts[s + 1]) <= op.unit)
      ++s;
    double x = op.tpSplit ? op.flops / double(t) : op.flops;
    if (!op.backward)
      fF[s] += x;
    else if (zeroBubble && op.reach >= int(starts[s]))
      fW[s] += x;
    else
      fB[s] += x;
  }
  double fUnit = std::numeric_limits<double>::infinity();
  for (double x : fF)
    if (x > 0)
      fUnit = std::min(fUnit, x);
  if (!std::isfinite(fUnit))
    fUnit = 1;
  auto span = [&](const std::vector<double> &v) {
    double x = *std::max_element(v.begin(), v.end());
    return std::max<int64_t>(1, std::min<int64_t>(8, std::llround(x / fUnit)));
  };
  ps.forwardSpan = span(fF);
  ps.backwardSpan = span(fB);
  ps.weightSpan = zeroBubble ? span(fW) : 0;
  schedule::PipelineOrder order =
      schedule::pipelineOrder(p.schedule, ps, int(m), std::nullopt);
  if (!order.error.empty()) {
    out.error = p.schedule + ": " + order.error;
    return out;
  }
  // The order replayed with each virtual stage's own F, B and W
  // (schedule::replayPipeline, as scheduledStep does for one stage per
  // device): a device runs its stages' blocks one after another, and with
  // ranks sharing cores a message between devices may wait for a core.
  bool splitW = ps.weightSpan > 0;
  std::vector<double> fT(stages), bT(stages), wT(stages);
  for (int64_t s = 0; s < stages; ++s) {
    const StagePrediction &st = out.stages[s];
    wT[s] = splitW ? st.microWeight : 0.0;
    fT[s] = st.microForward + st.microSends / 2;
    bT[s] = std::max(0.0, st.microSeconds - fT[s] - wT[s]);
  }
  std::vector<int> deviceOf(devices.begin(), devices.end());
  schedule::ReplayedPipeline replayed = schedule::replayPipeline(
      order, int(stages), int(m), fT, bT, wT, coreWaits(numDevices), deviceOf);
  if (!replayed.error.empty()) {
    out.error = p.schedule + ": " + replayed.error;
    return out;
  }
  // Each device's once-per-step work follows its last block.
  std::vector<double> deviceStep(numDevices, 0);
  for (int64_t i = 0; i < stages; ++i)
    deviceStep[devices[i]] += out.stages[i].stepSeconds;
  double makespan = 0, total = 0;
  for (int64_t dev = 0; dev < numDevices; ++dev) {
    makespan = std::max(makespan, replayed.deviceEnds[dev]);
    total = std::max(total, replayed.deviceEnds[dev] + deviceStep[dev]);
  }
  out.bubble =
      makespan > 0 ? 1 - replayed.busy / (double(numDevices) * makespan) : 0;
  out.sharedComputeSeconds = sharedCompute(out.stages, m, total, numDevices);
  out.stepSeconds = total + out.sharedComputeSeconds;
  out.closedFormSeconds = out.stepSeconds;
  // Memory: each device replayed along the order.
  std::vector<StageMemory::Parts> parts;
  std::vector<Sent> sent;
  for (int64_t i = 0; i < stages; ++i) {
    StageMemory mem(c);
    for (size_t u = out.stages[i].firstUnit; u <= out.stages[i].lastUnit; ++u)
      mem.add(u);
    parts.push_back(mem.parts());
    sent.push_back(
        sentBytes(c, out.stages[i].firstUnit, out.stages[i].lastUnit));
  }
  // A tied parameter whose owner runs on the same device is not received
  // (nor its gradient sent back): the device holds it once.
  auto stageOfUnit = [&](int u) {
    int64_t s = 0;
    while (s + 1 < stages && int64_t(starts[s + 1]) <= u)
      ++s;
    return s;
  };
  for (int64_t i = 0; i < stages; ++i)
    for (auto [owner, bytes] : parts[i].received)
      if (devices[stageOfUnit(owner)] == devices[i]) {
        parts[i].fixed -= bytes;
        parts[i].grads -= bytes;
      }
  std::vector<double> peak(numDevices, 0);
  for (int64_t dev = 0; dev < numDevices; ++dev) {
    std::vector<int64_t> inFlight(stages, 0), fDone(stages, 0),
        bDone(stages, 0), pendingW(stages, 0), wDone(stages, 0);
    double fixed = 0, update = 0, largest = 0, allSent = 0;
    for (int64_t i = 0; i < stages; ++i)
      if (devices[i] == dev) {
        fixed += parts[i].fixed;
        update += parts[i].resident + parts[i].grads;
        largest = std::max(largest, parts[i].largest);
        allSent += sent[i].forward + sent[i].back;
      }
    // The update: parameters and state, every gradient, the largest
    // parameter's new value and state, every send.
    double best = update + largest + allSent;
    for (const schedule::OrderedBlock &b : order.blocks) {
      int64_t s = b.stage;
      if (s < 0 || s >= stages || devices[s] != dev)
        continue;
      double held = fixed;
      for (int64_t i = 0; i < stages; ++i) {
        if (devices[i] != dev)
          continue;
        held += double(inFlight[i]) * parts[i].kept +
                double(pendingW[i]) * parts[i].weightHeld +
                double(fDone[i]) * sent[i].forward / double(m) +
                double(bDone[i]) * sent[i].back / double(m);
        // The gradients exist once a backward made them (split W: once
        // a W did).
        if (m > 1 && (splitW ? wDone[i] : bDone[i]) > 0)
          held += parts[i].grads;
        // Made at the first forward, alive to the last.
        if (m > 1 && ((fDone[i] > 0 && fDone[i] < m) ||
                      (i == s && b.kind == schedule::BlockKind::Forward)))
          held += parts[i].shared;
      }
      if (b.kind == schedule::BlockKind::Forward) {
        best = std::max(best, held + parts[s].forward);
        ++inFlight[s];
        ++fDone[s];
      } else if (b.kind == schedule::BlockKind::Backward) {
        // Its own micro-batch's activations are in `backward`.
        best = std::max(best, held - parts[s].kept + parts[s].backward);
        --inFlight[s];
        ++bDone[s];
        if (splitW)
          ++pendingW[s];
      } else {
        // Its values are in `held`; the first W writes the gradients.
        best = std::max(best, held + (m > 1 && wDone[s] == 0 ? parts[s].grads
                                                              : 0.0));
        --pendingW[s];
        ++wDone[s];
      }
    }
    peak[dev] = best;
  }
  for (int64_t i = 0; i < stages; ++i)
    out.stages[i].memoryBytes = peak[devices[i]];
  out.fits = fitsMemory(out.stages);
  return out;
}

/// The cuts of the replayed search's enumeration (Search::run).
constexpr double kReplayedCuts = 2000;

/// C(n - 1, pp - 1): the cuts of n units into pp stages (as a double,
/// saturating far above kReplayedCuts).
static double cutCount(size_t n, int64_t pp) {
  double count = 1;
  for (int64_t i = 1; i < pp && count <= 1e18; ++i)
    count = count * double(int64_t(n) - i) / double(i);
  return count;
}

/// Every cut of n units into pp contiguous stages (each its stages' first
/// units, the first 0), in lexicographic order; callers bound the count
/// with cutCount.
static std::vector<std::vector<size_t>> allCuts(size_t n, int64_t pp) {
  std::vector<std::vector<size_t>> cuts;
  std::vector<size_t> starts(size_t(pp), 0);
  std::function<void(int64_t, size_t)> each = [&](int64_t i, size_t from) {
    if (i == pp) {
      cuts.push_back(starts);
      return;
    }
    for (size_t u = from; u + size_t(pp - i) <= n; ++u) {
      starts[size_t(i)] = u;
      each(i + 1, u + 1);
    }
  };
  each(1, 1);
  return cuts;
}

/// The largest per-device memory of a plan's stages.
static double peakBytes(const std::vector<StagePrediction> &stages) {
  double peak = 0;
  for (const StagePrediction &st : stages)
    peak = std::max(peak, st.memoryBytes);
  return peak;
}

StepEvaluation interlaced(const Problem &problem, const PlanShape &shape,
                          const std::vector<bool> &everyDevice,
                          const std::vector<int64_t> &stageDevices);

Result Search::run() {
  std::clock_t start = std::clock();
  Result best;
  best.specName = spec.name;
  best.stepSeconds = kInf;
  size_t n = p.units.size();
  double leastNeeded = kInf;
  std::vector<Candidate> feasible;
  std::string scheduleError; ///< why the schedule refused a mesh, if it did
  int64_t lastPinned = -1; ///< the largest stage a unit is pinned to
  for (int64_t s : p.unitStages)
    lastPinned = std::max(lastPinned, s);
  // A plan evaluated whole (virtual stages, an interlaced pipeline) that
  // fits: a candidate, and the choice when fastest.
  auto keep = [&](const PlanShape &shape, const StepEvaluation &e) {
    ++best.feasible;
    feasible.push_back({shape, e.stepSeconds});
    if (e.stepSeconds < best.stepSeconds) {
      best.shape = shape;
      best.profiledOps = e.profiledOps;
      best.pricedOps = e.pricedOps;
      best.stages = e.stages;
      best.stepSeconds = e.stepSeconds;
      best.bubble = e.bubble;
      best.sharedComputeSeconds = e.sharedComputeSeconds;
    }
  };
  for (int64_t t : p.tpDegrees) {
    if (p.devices % t != 0 || (p.fixedTp && t != p.fixedTp))
      continue;
    for (int64_t d = 1; d <= p.devices / t; ++d) {
      if ((p.devices / t) % d != 0 || p.batch % d != 0 ||
          (p.fixedDp && d != p.fixedDp) ||
          (!p.dpDegrees.empty() &&
           !std::count(p.dpDegrees.begin(), p.dpDegrees.end(), d)))
        continue;
      int64_t pp = p.devices / (t * d);
      if (pp > int64_t(n) || (p.fixedPp && pp != p.fixedPp) ||
          pp <= lastPinned || !pinsFeasible(pp))
        continue;
      int64_t perReplica = p.batch / d;
      for (int64_t m = 1; m <= perReplica; ++m) {
        if (perReplica % m != 0 ||
            (p.fixedMicroBatches > 0 && m != p.fixedMicroBatches))
          continue;
        if (interlacedPlan()) {
          // Ops on every device: pipelines of the other units, every cut
          // of them (the pipelined units in order; at most kReplayedCuts,
          // else the even cut), each priced as an interlaced plan.
          // On every device pp splits each micro-batch's piece of the
          // batch too (dist-partition).
          if (pp < 2 || virtualStages() || lastPinned >= 0 ||
              (perReplica / m) % pp != 0)
            continue;
          std::vector<size_t> piped;
          for (size_t u = 0; u < n; ++u)
            if (!p.everyDevice[u])
              piped.push_back(u);
          if (piped.size() < size_t(pp))
            continue;
          ++best.candidates;
          std::vector<std::vector<size_t>> cuts;
          if (cutCount(piped.size(), pp) <= kReplayedCuts) {
            cuts = allCuts(piped.size(), pp);
          } else {
            cuts.emplace_back();
            for (int64_t i = 0; i < pp; ++i)
              cuts.back().push_back(size_t(i) * piped.size() / size_t(pp));
          }
          // As unit numbers.
          for (std::vector<size_t> &cut : cuts)
            for (size_t &k : cut)
              k = piped[k];
          StepEvaluation chosen;
          chosen.stepSeconds = kInf;
          PlanShape shape{d, t, pp, m, {}};
          for (const std::vector<size_t> &starts : cuts) {
            StepEvaluation e =
                interlaced(p, {d, t, pp, m, starts}, p.everyDevice, {});
            if (!e.error.empty())
              continue;
            if (!e.fits) {
              leastNeeded = std::min(leastNeeded, peakBytes(e.stages));
              continue;
            }
            if (e.stepSeconds < chosen.stepSeconds) {
              chosen = std::move(e);
              shape.stageStarts = starts;
            }
          }
          if (chosen.stepSeconds == kInf)
            continue;
          // The stages name the pipelined units by their own numbers.
          for (StagePrediction &st : chosen.stages) {
            st.firstUnit = piped[st.firstUnit];
            st.lastUnit = piped[st.lastUnit];
          }
          keep(shape, chosen);
          continue;
        }
        if (virtualStages()) {
          // Two virtual stages per device: pipelines only, cut for time.
          if (pp < 2 || 2 * pp > int64_t(n) || lastPinned >= 0)
            continue;
          ++best.candidates;
          StepEvaluation e = evaluateVirtual(
              {d, t, 2 * pp, m, balancedStarts(t, d, m, 2 * pp)},
              virtualDevices(pp));
          if (!e.error.empty()) {
            // The library's conditions (m vs pp), without the schedule's
            // name evaluateVirtual puts first.
            scheduleError = e.error.substr(
                e.error.rfind(p.schedule + ": ", 0) == 0 ? p.schedule.size() + 2
                                                         : 0);
            continue;
          }
          if (!e.fits) {
            leastNeeded = std::min(leastNeeded, peakBytes(e.stages));
            continue;
          }
          PlanShape shape{d, t, pp, m, {}};
          for (const StagePrediction &st : e.stages)
            shape.stageStarts.push_back(st.firstUnit);
          keep(shape, e);
          continue;
        }
        ++best.candidates;
        UnitCosts c = unitCosts(t, d, m, pp);
        double edgeScale = 1.0 / double(d * m);
        // A lower bound first: the pipeline cannot beat its total work
        // spread over the stages, nor its slowest unit.
        double work = 0, slowest = 0;
        for (size_t u = 0; u < n; ++u) {
          work += c.micro[u];
          slowest = std::max(slowest, c.micro[u]);
        }
        // The replayed schedule (scheduledStep) takes at least the busiest
        // stage's m micro-batches, and one micro-batch's way through every
        // stage.
        double bound = std::max(double(m) * std::max(work / pp, slowest), work);
        double least = 0;
        std::vector<size_t> fitting =
            memoryCuts(c, t, d, pp, m, edgeScale, least);
        if (least > p.memoryBytes * (1 + 1e-12)) {
          leastNeeded = std::min(leastNeeded, least);
          continue;
        }
        if (bound >= best.stepSeconds && feasible.size() >= 4)
          continue;
        const cost::LinkSpec &ppLink = groupLink(spec, planMesh(d, t, pp), kPp);
        bool tooLarge = false;
        std::vector<size_t> starts =
            p.exactCuts ? exactCut(c, t, d, pp, m, edgeScale, tooLarge)
                        : std::vector<size_t>();
        if (!p.exactCuts || tooLarge)
          starts = cut(c, t, pp, m, edgeScale, ppLink.bandwidth);
        // The step time of a cut that fits (the schedule replayed with each
        // stage's own times, scheduledStep; the closed form without
        // stages), or infinity.
        auto timeOf = [&](const std::vector<size_t> &cut,
                          std::vector<StagePrediction> &stages,
                          double &shared) {
          if (cut.empty())
            return kInf;
          double micro = 0, step = 0;
          evaluate(c, cut, t, d, m, pp, edgeScale, stages, micro, step);
          if (!fitsMemory(stages))
            return kInf;
          shared = 0;
          double total = closedForm(pp, m, stages, shared);
          if (pp > 1) {
            double scheduled = 0, bubble = 0, sharedScheduled = 0;
            if (scheduledStep(pp, m, stages, scheduled, bubble, sharedScheduled)
                    .empty()) {
              total = scheduled;
              shared = sharedScheduled;
            }
          }
          return total;
        };
        std::vector<StagePrediction> stages;
        double shared = 0;
        double total = timeOf(starts, stages, shared);
        // Another cut replaces the current one when it fits and is faster.
        auto consider = [&](const std::vector<size_t> &cut) {
          std::vector<StagePrediction> other;
          double otherShared = 0;
          double otherTotal = timeOf(cut, other, otherShared);
          if (otherTotal < total) {
            starts = cut;
            stages = std::move(other);
            shared = otherShared;
            total = otherTotal;
          }
        };
        // Few cuts (at most kReplayedCuts): each replayed, the fastest that
        // fits kept. The dynamic programs rank by the slowest stage, which
        // the replay refines (unequal stages cost what they take).
        if (pp > 1 && cutCount(n, pp) <= kReplayedCuts)
          for (const std::vector<size_t> &cut : allCuts(n, pp))
            if (pinsAllow(cut) && cut != starts)
              consider(cut);
        // The planner's additive memory is a lower bound and its objective
        // not the step time: the fastest cut that fits by the slowest stage
        // may fit where it does not, or be faster (the exact cut needs no
        // second opinion).
        if ((!p.exactCuts || tooLarge || total == kInf) && fitting != starts)
          consider(fitting);
        if (total == kInf) {
          leastNeeded = std::min(leastNeeded, least);
          continue;
        }
        ++best.feasible;
        feasible.push_back({{d, t, pp, m, starts}, total});
        if (total < best.stepSeconds) {
          best.shape = {d, t, pp, m, starts};
          best.profiledOps = c.profiled;
          best.pricedOps = c.priced;
          best.stages = stages;
          best.stepSeconds = total;
          best.sharedComputeSeconds = shared;
        }
      }
    }
  }
  best.plannerCalls = plannerCalls;
  if (best.stepSeconds == kInf) {
    char buf[64];
    if (best.candidates == 0 && !p.constraints.empty()) {
      // Say what the constraints rule out: the mesh axes the model allows.
      std::string tps;
      for (int64_t t : p.tpDegrees)
        tps += (tps.empty() ? "" : ", ") + std::to_string(t);
      std::string dps;
      for (int64_t d : p.dpDegrees)
        dps += (dps.empty() ? "" : ", ") + std::to_string(d);
      best.error =
          "no plan satisfies the constraints " + p.constraints + " on " +
          std::to_string(p.devices) + " device(s): tp must be one of " + tps +
          " (dividing the attention heads" +
          (p.transConstrained ? " and the trans entries' dimensions" : "") +
          "), " + (dps.empty() ? "" : "dp one of " + dps + ", ") +
          "dp and the micro-batches must divide the batch (" +
          std::to_string(p.batch) + "), pp at most the " + std::to_string(n) +
          " layer group(s)" +
          (lastPinned >= 0 ? " and above the last stage assigned (" +
                                 std::to_string(lastPinned) + ")"
                           : "") +
          (interlacedPlan() ? ", and at least 2 with the ops on every "
                              "device (an interlaced pipeline), where dp x "
                              "micro-batches x pp divides the batch"
                            : "");
    } else if (leastNeeded < kInf) {
      best.leastBytes = leastNeeded;
      std::snprintf(buf, sizeof buf, "%.3g", leastNeeded / double(1 << 30));
      char have[64];
      std::snprintf(have, sizeof have, "%.3g", p.memoryBytes / double(1 << 30));
      best.error =
          std::string("no plan fits in ") + have +
          " GiB per device: the step needs at least " + buf +
          " GiB per device on " + std::to_string(p.devices) + " device(s)" +
          (p.constraints.empty() ? ""
                                 : " under the constraints " + p.constraints);
    } else if (!scheduleError.empty()) {
      // Meshes exist, but the schedule runs on none of them.
      best.error = "no plan of " + std::to_string(p.devices) +
                   " device(s) runs its schedule: " + scheduleError;
    } else {
      std::string tps;
      for (int64_t t : p.tpDegrees)
        tps += (tps.empty() ? "" : ", ") + std::to_string(t);
      best.error =
          "no mesh of " + std::to_string(p.devices) +
          " device(s) fits the model: dp x tp x pp = " +
          std::to_string(p.devices) + " with dp" +
          (p.fixedMicroBatches > 0
               ? " x the micro-batches (" +
                     std::to_string(p.fixedMicroBatches) + ")"
               : std::string()) +
          " dividing the batch (" + std::to_string(p.batch) + "), tp one of " +
          tps +
          " (dividing the attention heads and the MLP's hidden units), pp "
          "at most the " +
          std::to_string(n) + " layer group(s)" +
          (virtualStages()
               ? ", and --schedule " + p.schedule +
                     " runs two virtual stages per device: pp >= 2 with 2 x "
                     "pp at most the layer groups"
               : "");
    }
    return best;
  }
  // The winner's fill and drain from the schedule library (the virtual
  // stages' evaluation has them already).
  if (best.shape.pp > 1 && !virtualStages() && !interlacedPlan()) {
    best.error =
        scheduledStep(best.shape.pp, best.shape.microBatches, best.stages,
                      best.stepSeconds, best.bubble, best.sharedComputeSeconds);
    if (!best.error.empty())
      return best;
  }
  std::sort(feasible.begin(), feasible.end(),
            [](const Candidate &a, const Candidate &b) {
              return a.stepSeconds < b.stepSeconds;
            });
  for (size_t i = 1; i < feasible.size() && best.runnersUp.size() < 3; ++i)
    best.runnersUp.push_back(feasible[i]);
  best.modelFlops = p.modelFlopsPerStep;
  if (best.modelFlops <= 0)
    for (const OpCost &op : p.ops)
      if (op.modelFlops)
        best.modelFlops += op.flops;
  best.mfu = best.modelFlops / (best.stepSeconds * double(p.devices) *
                                spec.peakFlopsFor(p.mainDtype));
  best.cpuSeconds = double(std::clock() - start) / CLOCKS_PER_SEC;
  (void)plannerSeconds;
  return best;
}

/// The problem's profile database, if it names one. Throws when it does not
/// load or was measured on another device than the spec's.
std::optional<cost::ProfileDatabase> loadProfile(const Problem &p,
                                                 const cost::DeviceSpec &spec) {
  if (p.profileDatabase.empty())
    return std::nullopt;
  cost::ProfileDatabase db = cost::ProfileDatabase::load(p.profileDatabase);
  if (!db.device().empty() && db.device() != spec.name)
    throw Exception(p.profileDatabase + ": measured on '" + db.device() +
                    "', but the device spec is '" + spec.name + "'");
  return db;
}

/// What each step spends outside its step functions beyond the driver
/// work the units price on their ranks (driverWork), the same for every
/// plan of the problem's devices: the driver's measured time per step (the
/// profile database's "driver" entry, timed by `run --profile-ops` with one
/// rank: reading the batch, the finiteness checks, the step report, the
/// log line) less driverWork of the whole model on one device, and, with
/// several ranks, the step report's gather to rank 0 (a few numbers per
/// rank: an all-gather of 64 bytes a rank over the devices' link). So a
/// one-device plan's step is its step function and the measured driver
/// time. 0 without the entry: the units' driverWork alone, as before the
/// entry existed.
double driverStep(const Problem &p, const cost::DeviceSpec &spec,
                  const cost::ProfileDatabase *profile) {
  std::optional<double> driver =
      profile ? profile->driverSeconds() : std::nullopt;
  if (!driver)
    return 0;
  double priced = 0;
  for (const Unit &u : p.units)
    priced += driverWork(spec, u.stepValues, u.paramBytes + u.paramBytesSplit);
  return std::max(0.0, *driver - priced) +
         collective(cost::Collective::AllGather, 64.0 * double(p.devices),
                    p.devices, cost::linkForGroup(spec, p.devices, 1));
}

/// The driver's time added to a plan's predicted step (the search ranks
/// plans of one device count, which all pay it, without it).
void addDriver(StepEvaluation &e, double driver) {
  e.stepSeconds += driver;
  e.closedFormSeconds += driver;
  e.driverSeconds = driver;
}
void addDriver(Result &r, double driver) {
  if (r.stepSeconds > 0)
    r.mfu *= r.stepSeconds / (r.stepSeconds + driver);
  r.stepSeconds += driver;
  r.driverSeconds = driver;
  for (Candidate &c : r.runnersUp)
    c.stepSeconds += driver;
}

/// f(a Search over the problem, its spec and profile loaded), with the
/// driver's time per step added to the result (`withDriver`); an exception
/// becomes the result's error.
template <typename R, typename F>
R withSearch(const Problem &problem, F &&f, bool withDriver = true) noexcept {
  try {
    cost::DeviceSpec spec =
        cost::loadDeviceSpec(resolveSpecName(problem.deviceSpec));
    std::optional<cost::ProfileDatabase> profile = loadProfile(problem, spec);
    const cost::ProfileDatabase *db = profile ? &*profile : nullptr;
    Search search(problem, spec, db);
    R r = f(search);
    if (withDriver && r.error.empty())
      addDriver(r, driverStep(problem, spec, db));
    return r;
  } catch (const std::exception &e) {
    R r;
    r.error = e.what();
    return r;
  } catch (...) {
    R r;
    r.error = "unknown error in the auto planner";
    return r;
  }
}

} // namespace

StepEvaluation evaluatePlan(const Problem &problem,
                            const PlanShape &shape) noexcept {
  return withSearch<StepEvaluation>(
      problem, [&](Search &search) { return search.evaluatePlan(shape); });
}

StepEvaluation
evaluateVirtualPlan(const Problem &problem, const PlanShape &shape,
                    const std::vector<int64_t> &stageDevices) noexcept {
  return withSearch<StepEvaluation>(problem, [&](Search &search) {
    return search.evaluateVirtual(shape, stageDevices);
  });
}

/// The variants' units and ops, unit u's from variants[unitVariant[u]].
static Problem mixVariants(const std::vector<Problem> &variants,
                           const std::vector<int> &unitVariant) {
  Problem mixed = variants.front();
  mixed.ops.clear();
  for (size_t u = 0; u < mixed.units.size(); ++u)
    mixed.units[u] = variants[size_t(unitVariant[u])].units[u];
  for (size_t v = 0; v < variants.size(); ++v)
    for (const OpCost &c : variants[v].ops)
      if (size_t(unitVariant[size_t(c.unit)]) == v)
        mixed.ops.push_back(c);
  return mixed;
}

MixedPlan searchMixedStages(const std::vector<Problem> &variants,
                            const PlanShape &shape) noexcept {
  MixedPlan out;
  try {
    if (variants.empty()) {
      out.error = "no variants of the step to mix";
      return out;
    }
    const Problem &first = variants.front();
    size_t n = first.units.size();
    for (const Problem &v : variants) {
      if (v.units.size() != n) {
        out.error = "the variants of the step have different units";
        return out;
      }
      for (const OpCost &c : v.ops)
        if (c.unit < 0 || size_t(c.unit) >= n) {
          out.error = "an op of a variant names no unit";
          return out;
        }
    }
    int64_t pp = shape.pp;
    if (pp < 1 || size_t(pp) > n) {
      out.error = "need 1 to " + std::to_string(n) + " stages";
      return out;
    }
    if (first.schedule == "interleaved" || first.schedule == "zb-v") {
      out.error = "stages are mixed one per device, not virtual (" +
                  first.schedule + ")";
      return out;
    }
    cost::DeviceSpec spec =
        cost::loadDeviceSpec(resolveSpecName(first.deviceSpec));
    std::optional<cost::ProfileDatabase> profile = loadProfile(first, spec);
    const cost::ProfileDatabase *db = profile ? &*profile : nullptr;
    std::vector<std::unique_ptr<Search>> searches;
    for (const Problem &v : variants)
      searches.push_back(std::make_unique<Search>(v, spec, db));
    // The cuts: every one when few, else the given one.
    std::vector<std::vector<size_t>> cuts =
        cutCount(n, pp) <= kReplayedCuts
            ? allCuts(n, pp)
            : std::vector<std::vector<size_t>>{shape.stageStarts};
    const std::vector<int64_t> &pins = first.unitStages;
    double bestTime = kInf;
    for (const std::vector<size_t> &cut : cuts) {
      PlanShape s = shape;
      s.stageStarts = cut;
      // The pins of a constrained plan: unit u on stage pins[u].
      bool allowed = true;
      for (int64_t i = 0; i < pp && allowed; ++i) {
        size_t last = i + 1 < pp ? cut[size_t(i + 1)] - 1 : n - 1;
        for (size_t u = cut[size_t(i)]; u <= last && u < pins.size(); ++u)
          allowed = allowed && (pins[u] < 0 || pins[u] == i);
      }
      if (!allowed)
        continue;
      // Each stage's fastest variant that fits.
      std::vector<int> stageVariant(size_t(pp), -1);
      std::vector<double> stageTime(size_t(pp), kInf);
      for (size_t v = 0; v < variants.size(); ++v) {
        StepEvaluation e = searches[v]->evaluatePlan(s);
        if (!e.error.empty()) {
          out.error = e.error;
          return out;
        }
        for (size_t i = 0; i < e.stages.size(); ++i) {
          const StagePrediction &st = e.stages[i];
          double time =
              double(shape.microBatches) * st.microSeconds + st.stepSeconds;
          if (st.memoryBytes <= variants[v].memoryBytes * (1 + 1e-12) &&
              time < stageTime[i]) {
            stageTime[i] = time;
            stageVariant[i] = int(v);
          }
        }
      }
      if (std::count(stageVariant.begin(), stageVariant.end(), -1))
        continue;
      std::vector<int> unitVariant(n);
      for (int64_t i = 0; i < pp; ++i) {
        size_t last = i + 1 < pp ? cut[size_t(i + 1)] - 1 : n - 1;
        for (size_t u = cut[size_t(i)]; u <= last; ++u)
          unitVariant[u] = stageVariant[size_t(i)];
      }
      Problem mixed = mixVariants(variants, unitVariant);
      StepEvaluation e = Search(mixed, spec, db).evaluatePlan(s);
      if (!e.error.empty() || !e.fits || e.stepSeconds >= bestTime)
        continue;
      bestTime = e.stepSeconds;
      out.shape = s;
      out.unitVariant = std::move(unitVariant);
      out.problem = std::move(mixed);
      out.evaluation = std::move(e);
    }
    if (bestTime == kInf)
      out.error = "no cut into " + std::to_string(pp) +
                  " stages fits with any variant on each stage";
    else
      addDriver(out.evaluation, driverStep(first, spec, db));
  } catch (const std::exception &e) {
    out.error = e.what();
  } catch (...) {
    out.error = "unknown error in the auto planner";
  }
  return out;
}

namespace {
/// Adds `from`'s bytes to `to`: its kept activations and live points
/// scaled by `actScale`; with `holds`, its parameters, state and held
/// values too (else only what runs per micro-batch).
void addUnit(Unit &to, const Unit &from, double actScale, bool holds) {
  to.actBytes += from.actBytes * actScale;
  to.actBytesSplit += from.actBytesSplit * actScale;
  for (auto [mine, theirs] : {std::pair{&to.forwardLive, &from.forwardLive},
                              std::pair{&to.backwardLive, &from.backwardLive}})
    for (Unit::Live l : *theirs) {
      l.batch *= actScale;
      l.batchSplit *= actScale;
      mine->push_back(l);
    }
  if (!holds)
    return;
  to.paramBytes += from.paramBytes;
  to.paramBytesSplit += from.paramBytesSplit;
  to.stateBytes += from.stateBytes;
  to.stateBytesSplit += from.stateBytesSplit;
  to.actFixedBytes += from.actFixedBytes;
  to.actFixedBytesSplit += from.actFixedBytesSplit;
  to.sharedBytes += from.sharedBytes;
  to.sharedBytesSplit += from.sharedBytesSplit;
  to.paramCopyBytes += from.paramCopyBytes;
  to.paramCopyBytesSplit += from.paramCopyBytesSplit;
  to.inputBytes += from.inputBytes;
  to.largestParamBytes = std::max(to.largestParamBytes, from.largestParamBytes);
  to.params += from.params;
  to.stepValues += from.stepValues;
}

StepEvaluation interlaced(const Problem &problem, const PlanShape &shape,
                          const std::vector<bool> &everyDevice,
                          const std::vector<int64_t> &stageDevices) {
  StepEvaluation bad;
  size_t n = problem.units.size();
  if (everyDevice.size() != n || shape.pp < 1 ||
      shape.stageStarts.size() != size_t(shape.pp)) {
    bad.error = "an interlaced plan needs one flag per unit and one start "
                "per stage";
    return bad;
  }
  // Each (virtual) stage does 1/pp of the work of the ops on every device
  // (pp stages: one per device; with virtual stages a device's share is
  // split between its stages).
  double pp = double(shape.pp);
  // The pipelined units, renumbered; what the units on every device add
  // to each stage (folded into its first unit).
  Problem q = problem;
  q.units.clear();
  q.ops.clear();
  q.edges.clear();
  q.tied.clear();
  q.unitStages.clear();
  std::vector<int> renum(n, -1);
  Unit extra;
  for (size_t u = 0; u < n; ++u) {
    const Unit &e = problem.units[u];
    if (!everyDevice[u]) {
      renum[u] = int(q.units.size());
      q.units.push_back(e);
      continue;
    }
    // A vocabulary split leaves 1/pp of those parameters on each device.
    Unit piece = e;
    piece.paramBytes -= e.ppSplitParamBytes * (1 - 1 / pp);
    piece.stateBytes -= e.ppSplitStateBytes * (1 - 1 / pp);
    addUnit(extra, piece, 1.0 / pp, /*holds=*/true);
  }
  if (q.units.empty()) {
    bad.error = "every unit runs on every device: nothing is pipelined";
    return bad;
  }
  PlanShape local = shape;
  for (size_t &start : local.stageStarts) {
    if (start >= n || renum[start] < 0) {
      bad.error = "a stage starts at a unit on every device";
      return bad;
    }
    start = size_t(renum[start]);
  }
  std::vector<bool> holder(local.stageStarts.size(), true);
  for (size_t i = 0; i < stageDevices.size() && i < holder.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (stageDevices[j] == stageDevices[i])
        holder[i] = false; // the device's first stage holds the parameters
  for (size_t i = 0; i < local.stageStarts.size(); ++i)
    addUnit(q.units[local.stageStarts[i]], extra, 1.0, holder[i]);
  auto reach = [&](int r) {
    return r >= 0 && size_t(r) < n && renum[r] >= 0 ? renum[r] : 2147483647;
  };
  for (const OpCost &op : problem.ops) {
    if (!everyDevice[op.unit]) {
      OpCost c = op;
      c.unit = renum[op.unit];
      c.reach = reach(op.reach);
      q.ops.push_back(std::move(c));
      continue;
    }
    // 1/pp of each micro-batch's work on every stage (the batch split
    // over pp); an op once per step (an update) whole on each. Their
    // backward is never a deferred W (dist-schedule), so no W holds their
    // values either. A vocabulary split leaves 1/pp of the unit's split
    // parameters on each device: of the parameter-sized bytes an op reads
    // and of an update's work, each device does the unsplit share and 1/pp
    // of the split one (by the unit's bytes: which parameter an op reads
    // is not kept).
    const Unit &owner = problem.units[size_t(op.unit)];
    double splitShare =
        owner.paramBytes > 0
            ? std::min(1.0, owner.ppSplitParamBytes / owner.paramBytes)
            : 0.0;
    double kept = 1 - splitShare * (1 - 1 / pp);
    for (size_t first : local.stageStarts) {
      OpCost c = op;
      c.unit = int(first);
      c.reach = -1; // part of B: the schedules never defer these
      c.fixedBytes *= kept;
      if (op.perMicroBatch) {
        c.flops /= pp;
        c.batchBytes /= pp;
        c.allReduceBytes /= pp;
        c.allGatherBytes /= pp;
      } else {
        c.flops *= kept;
        c.batchBytes *= kept;
      }
      if (op.perMicroBatch || kept < 1)
        c.operands.clear(); // no measured shape is this piece's
      q.ops.push_back(std::move(c));
    }
  }
  for (const Edge &e : problem.edges)
    if (renum[e.from] >= 0 && renum[e.to] >= 0)
      q.edges.push_back({renum[e.from], renum[e.to], e.bytes});
  // The communication over pp (dist-partition's, docs/plans.md
  // "Interlaced pipeline"), on each device's first stage: per micro-batch,
  // a value the pipeline reads from the ops on every device is gathered
  // over pp (a partial sum, under a vocabulary split: all-reduced), and its
  // gradient is sent from the stage that reads it to every other device;
  // a value they read from the pipeline is sent to every device, and its
  // gradient gathered (all-reduced) over pp. Once a step, their weight
  // gradients are all-reduced over pp, but for the pieces a vocabulary
  // split leaves on each device.
  int64_t devices =
      stageDevices.empty()
          ? shape.pp
          : *std::max_element(stageDevices.begin(), stageDevices.end()) + 1;
  auto stageOf = [&](int ru) {
    size_t i = 0;
    while (i + 1 < local.stageStarts.size() &&
           int(local.stageStarts[i + 1]) <= ru)
      ++i;
    return i;
  };
  auto comm = [&](size_t stage, bool backward, bool perMicroBatch) {
    OpCost c;
    c.unit = int(local.stageStarts[stage]);
    c.commOnly = true;
    c.perMicroBatch = perMicroBatch;
    c.backward = backward;
    c.reach = -1;
    c.ppRanks = devices;
    return c;
  };
  // Each device's first stage, and the device's own first stage of `s`.
  std::vector<size_t> firsts;
  for (size_t i = 0; i < holder.size(); ++i)
    if (holder[i])
      firsts.push_back(i);
  auto firstOf = [&](size_t s) {
    int64_t dev = stageDevices.empty() ? int64_t(s) : stageDevices[s];
    for (size_t i : firsts)
      if ((stageDevices.empty() ? int64_t(i) : stageDevices[i]) == dev)
        return i;
    return s;
  };
  // A vocabulary split (parameters of those units split over pp: the
  // embedding and, tied or not, the head) leaves partial sums over pp at
  // both ends of the pipeline.
  bool partial = false;
  for (size_t u = 0; u < n; ++u)
    partial |= everyDevice[u] && problem.units[u].ppSplitParamBytes > 0;
  if (devices > 1) {
    for (const Edge &e : problem.edges) {
      bool into = everyDevice[e.from] && renum[e.to] >= 0;
      bool outOf = renum[e.from] >= 0 && everyDevice[e.to];
      if (!into && !outOf)
        continue;
      size_t reader = firstOf(stageOf(into ? renum[e.to] : renum[e.from]));
      for (size_t i : firsts) {
        // Gathered (reduced): forward into the pipeline, backward out.
        OpCost g = comm(i, /*backward=*/outOf, true);
        (partial ? g.ppAllReduceBytes : g.ppAllGatherBytes) = e.bytes;
        q.ops.push_back(g);
        // Sent: the reader's to every other device (backward into the
        // pipeline, forward out of it); each other device receives one.
        for (int64_t k = 0; k < (i == reader ? devices - 1 : 1); ++k) {
          if (i == reader && devices <= 1)
            break;
          OpCost sr = comm(i, /*backward=*/into, true);
          sr.ppSendBytes = e.bytes;
          q.ops.push_back(sr);
        }
      }
    }
    double reduced = 0;
    for (size_t u = 0; u < n; ++u)
      if (everyDevice[u])
        reduced += problem.units[u].paramBytes -
                   problem.units[u].ppSplitParamBytes +
                   problem.units[u].paramBytesSplit / double(shape.tp);
    for (size_t i : firsts) {
      OpCost r = comm(i, /*backward=*/false, false);
      r.ppAllReduceBytes = std::max(0.0, reduced);
      q.ops.push_back(r);
    }
  }
  for (const TiedParam &t : problem.tied) {
    if (renum[t.owner] < 0)
      continue;
    TiedParam k = t;
    k.owner = renum[t.owner];
    k.readers.clear();
    for (int r : t.readers)
      if (renum[r] >= 0)
        k.readers.push_back(renum[r]);
    if (!k.readers.empty())
      q.tied.push_back(std::move(k));
  }
  // Without the driver's time: run() ranks interlaced plans among its
  // candidates, and evaluateInterlacedPlan adds it once.
  return withSearch<StepEvaluation>(
      q,
      [&](Search &search) {
        return stageDevices.empty()
                   ? search.evaluatePlan(local)
                   : search.evaluateVirtual(local, stageDevices);
      },
      /*withDriver=*/false);
}
} // namespace

StepEvaluation
evaluateInterlacedPlan(const Problem &problem, const PlanShape &shape,
                       const std::vector<bool> &everyDevice,
                       const std::vector<int64_t> &stageDevices) noexcept {
  try {
    StepEvaluation e = interlaced(problem, shape, everyDevice, stageDevices);
    if (e.error.empty()) {
      cost::DeviceSpec spec =
          cost::loadDeviceSpec(resolveSpecName(problem.deviceSpec));
      std::optional<cost::ProfileDatabase> profile = loadProfile(problem, spec);
      addDriver(e, driverStep(problem, spec, profile ? &*profile : nullptr));
    }
    return e;
  } catch (const std::exception &x) {
    StepEvaluation e;
    e.error = x.what();
    return e;
  } catch (...) {
    StepEvaluation e;
    e.error = "out of memory in the auto planner";
    return e;
  }
}

std::string checkDeviceSpec(const std::string &nameOrPath) noexcept {
  try {
    cost::loadDeviceSpec(resolveSpecName(nameOrPath));
    return "";
  } catch (const std::exception &e) {
    return e.what();
  }
}

std::optional<double> devicePeakFlops(const std::string &nameOrPath,
                                      const std::string &dtype,
                                      std::string &error) noexcept {
  try {
    return cost::loadDeviceSpec(resolveSpecName(nameOrPath))
        .peakFlopsFor(dtype);
  } catch (const std::exception &e) {
    error = e.what();
    return std::nullopt;
  }
}

Result searchAutoPlan(const Problem &problem) noexcept {
  return withSearch<Result>(problem,
                            [](Search &search) { return search.run(); });
}

} // namespace tessera::planner::autoplan
