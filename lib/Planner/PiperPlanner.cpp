//===- PiperPlanner.cpp - Piper-style multidimensional planner ------------===//
//
// Piper's dynamic program tabulates, for every downset, device budget k and
// sum of downstream data-parallel degrees s, the best bottleneck time: a
// table of (downset pairs) x K x min(N, K) updates, which is why it needs
// minutes at a few thousand devices. We turn the optimisation around:
//
//  1. Fix a bound tau on the stage time. A stage (S, t, d) then fits iff its
//     best configuration choice at y in-flight micro-batches takes at most
//     d * tau, and since that cost only grows with y, iff the downstream sum
//     D of data-parallel degrees is at most a cap(S, t, d, tau).
//  2. For fixed tau, a downset's partial plans are only compared by (D,
//     devices used), both smaller-is-better. We keep their Pareto frontier
//     (usually a handful of points instead of K x N cells), and from each
//     point only the smallest feasible d matters: a larger one costs more
//     devices and a larger D for every stage upstream.
//  3. Search tau: feasibility is monotone in tau, so bisection over the
//     ordered doubles finds the exact optimum; after every feasible probe we
//     jump down to the found plan's actual bottleneck.
//
// The iteration objective tau * (N + sum d - min d) adds the pipeline fill
// and drain. For a fixed lower bound delta on every d, the frontier gives the
// least sum of d at each tau, and a branch-and-bound walk over tau finds the
// best product; delta is enumerated over the divisors of N.
//
//===----------------------------------------------------------------------===//

#include "tessera/Planner/PiperPlanner.h"
#include "tessera/Planner/Downsets.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <limits>
#include <memory>

namespace tessera::planner {

const char *objectiveName(Objective objective) {
  return objective == Objective::Piper ? "piper" : "iteration";
}

const char *scheduleName(Schedule schedule) {
  return schedule == Schedule::GPipe ? "gpipe" : "1f1b";
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kNoCap = std::numeric_limits<int>::max() / 4;
constexpr int kNoDevices = std::numeric_limits<int>::max();

/// A stage cost within budget; an infeasible stage (infinite cost) never is,
/// not even for an unbounded tau.
bool within(double cost, double budget) {
  return cost < kInf && cost <= budget;
}

uint64_t toBits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

double fromBits(uint64_t b) {
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

/// The best-cost curve of one stage candidate as a function of y, built
/// lazily: most y are decided by two closed forms (the all-fastest choice
/// fits up to y0, nothing fits beyond y1) and only the band in between needs
/// a knapsack per y.
struct Curve {
  /// Options with the d-dependent resync folded into the costs; empty when
  /// the stage's choice does not depend on d (then DegreeData::alphaOpts).
  std::vector<NodeOptions> ownOpts;
  const std::vector<NodeOptions> *opts = nullptr;
  double fastCost = 0;
  int y0 = 0;               ///< the fastest choice fits for every y <= y0
  int y1 = 0;               ///< no choice fits for y > y1
  std::vector<double> cost; ///< cost[y - y0 - 1] for y0 < y <= y1; NaN: unknown
  bool built = false;
};

struct DegreeData {
  int t = 1;
  std::vector<NodeOptions> alphaOpts; ///< costs: the d-divided part
  std::vector<double> beta0, beta1;   ///< the (d-1)/d part per option
  /// Every node's options share one resync term, so the best choice does
  /// not depend on d and one curve serves all d.
  bool dIndependent = true;
  double betaSum = 0;
  std::vector<Curve> curves; ///< [0] when dIndependent, else per divisor
};

struct PairData {
  std::vector<DegreeData> degrees;
};

struct Point {
  int D;   ///< sum of data-parallel degrees of the stages so far
  int dev; ///< devices they use
  uint32_t from;
  uint32_t fromIdx;
  int t;
  int d;
};

class PlannerEngine {
public:
  PlannerEngine(const PiperCostModel &model, const PlannerOptions &options,
                PlannerStats &stats)
      : model(model), opt(options), stats(stats),
        lattice(model.numNodes(), successorLists(model), options.maxDownsets) {
    const PiperInstance &ins = model.instance();
    N = ins.mbsInBatch;
    K = ins.maxDevices;
    M = ins.maxMemoryPerDevice;
    Dmax = std::min(N, K);
    for (int d = 1; d <= Dmax; ++d)
      if (N % d == 0)
        divisors.push_back(d);
    dIndex.assign(Dmax + 1, -1);
    for (size_t i = 0; i < divisors.size(); ++i)
      dIndex[divisors[i]] = static_cast<int>(i);
    slots.resize(lattice.size());
    for (size_t j = 0; j < lattice.size(); ++j)
      slots[j].assign(lattice.subsets(j).size(), -1);
    frontier.resize(lattice.size());
    inStage.assign(model.numNodes(), 0);
    bucket.assign(Dmax + 1, Point{0, kNoDevices, 0, 0, 0, 0});
    stats.downsets = lattice.size();
    stats.stagePairs = lattice.numPairs();
    stats.chain = lattice.isChain();
  }

  /// Runs the feasibility program at bound \p tau with every d >= \p delta;
  /// returns whether the whole graph can be planned.
  bool run(double tau, int delta) {
    ++stats.feasibilityRuns;
    for (auto &f : frontier)
      f.clear();
    frontier[0].push_back(Point{0, 0, 0, 0, 0, 0});
    std::vector<std::pair<int, int>> records;
    for (size_t J = 1; J < lattice.size(); ++J) {
      // Candidates are bucketed by D (at most min(N, K) values): the best
      // per D, then one sweep keeps the Pareto frontier. Cheaper than
      // sorting the thousands of candidates a downset can receive.
      int lowD = Dmax + 1, highD = -1;
      const std::vector<uint32_t> &subs = lattice.subsets(J);
      for (size_t k = 0; k < subs.size(); ++k) {
        const std::vector<Point> &F = frontier[subs[k]];
        if (F.empty())
          continue;
        PairData &pd = pairData(J, k);
        const int maxD = F.back().D, minD = F.front().D;
        const int minDev = F.back().dev;
        for (DegreeData &dd : pd.degrees) {
          // Prefix maxima of cap over ascending d: the smallest d that
          // accepts a downstream sum D is the first record with cap >= D.
          records.clear();
          int bestCap = -1;
          for (int d : divisors) {
            if (d < delta)
              continue;
            if (minD + d > Dmax || minDev + dd.t * d > K)
              break;
            int cap = capOf(dd, d, tau, maxD);
            if (cap > bestCap) {
              records.emplace_back(d, cap);
              bestCap = cap;
              if (bestCap >= maxD)
                break;
            }
          }
          size_t r = 0;
          for (size_t p = 0; p < F.size(); ++p) {
            while (r < records.size() && records[r].second < F[p].D)
              ++r;
            if (r == records.size())
              break;
            int d = records[r].first;
            int D = F[p].D + d, dev = F[p].dev + dd.t * d;
            if (D > Dmax || dev > K)
              continue;
            Point &slot = bucket[D];
            if (slot.dev > dev) {
              slot = Point{D, dev, subs[k], static_cast<uint32_t>(p), dd.t, d};
              lowD = std::min(lowD, D);
              highD = std::max(highD, D);
            }
          }
        }
      }
      // Pareto frontier in (D, devices): ascending D, strictly fewer devices.
      std::vector<Point> &out = frontier[J];
      for (int D = lowD; D <= highD; ++D) {
        Point &slot = bucket[D];
        if (slot.dev <= K && (out.empty() || slot.dev < out.back().dev))
          out.push_back(slot);
        slot.dev = kNoDevices;
      }
    }
    return !frontier[lattice.fullId()].empty();
  }

  const std::vector<Point> &fullFrontier() const {
    return frontier[lattice.fullId()];
  }

  struct TracedStage {
    std::vector<int> nodes;
    int t, d, y;
    DegreeData *dd;
    double internalTime;
  };

  /// Follows the provenance of the full set's frontier point \p idx.
  std::vector<TracedStage> trace(size_t idx) {
    std::vector<TracedStage> stages;
    size_t J = lattice.fullId();
    const Point *p = &frontier[J][idx];
    while (J != 0) {
      const Point &down = frontier[p->from][p->fromIdx];
      TracedStage s;
      s.nodes = difference(J, p->from);
      s.t = p->t;
      s.d = p->d;
      s.y = opt.schedule == Schedule::GPipe ? N / s.d
                                            : (down.D + s.d - 1) / s.d + 1;
      // Locate the pair's data for this t to report its internal time.
      const std::vector<uint32_t> &subs = lattice.subsets(J);
      size_t k =
          std::lower_bound(subs.begin(), subs.end(), p->from) - subs.begin();
      PairData &pd = pairData(J, k);
      s.dd = nullptr;
      for (DegreeData &dd : pd.degrees)
        if (dd.t == s.t)
          s.dd = &dd;
      s.internalTime = stageTime(*s.dd, s.d, s.y);
      stages.push_back(std::move(s));
      J = p->from;
      p = &down;
    }
    return stages;
  }

  /// Internal time per sample of a stage candidate at (d, y).
  double stageTime(DegreeData &dd, int d, int y) {
    Curve &c = curveFor(dd, d);
    double cost = costAt(c, y);
    if (dd.dIndependent)
      cost += (d - 1) * dd.betaSum;
    return cost / d;
  }

  /// Whether a stage at internal time \p time passes the check at \p tau.
  bool passes(DegreeData &dd, int d, int y, double tau) {
    Curve &c = curveFor(dd, d);
    double budget = d * tau - (dd.dIndependent ? (d - 1) * dd.betaSum : 0);
    return within(costAt(c, y), budget);
  }

  /// Configuration choice of a traced stage, as option indices per node.
  std::vector<int> chooseConfigs(const TracedStage &s) {
    Curve &c = curveFor(*s.dd, s.d);
    ++stats.knapsackSolves;
    StageChoice ch = chooseStageConfigs(*c.opts, s.y, M, opt.knapsack,
                                        opt.knapsackNodeLimit);
    if (!ch.feasible)
      throw PlanError("internal error: a traced stage does not fit");
    return std::vector<int>(ch.choice.begin(), ch.choice.end());
  }

  const std::vector<int> &divisorList() const { return divisors; }
  int maxSumD() const { return Dmax; }

private:
  static std::vector<std::vector<int>> successorLists(const PiperCostModel &m) {
    std::vector<std::vector<int>> succ(m.numNodes());
    for (int v = 0; v < m.numNodes(); ++v)
      for (const auto &[w, bytes] : m.outEdges(v))
        succ[v].push_back(w);
    return succ;
  }

  std::vector<int> difference(size_t J, size_t I) const {
    std::vector<int> out;
    std::set_difference(lattice.members(J).begin(), lattice.members(J).end(),
                        lattice.members(I).begin(), lattice.members(I).end(),
                        std::back_inserter(out));
    return out;
  }

  PairData &pairData(size_t J, size_t k) {
    int32_t &slot = slots[J][k];
    if (slot >= 0)
      return *pairs[slot];
    slot = static_cast<int32_t>(pairs.size());
    pairs.push_back(std::make_unique<PairData>());
    PairData &pd = *pairs.back();
    std::vector<int> nodes = difference(J, lattice.subsets(J)[k]);
    for (int v : nodes)
      inStage[v] = 1;
    for (int t : model.degrees()) {
      if (t > K)
        break;
      bool all = true;
      for (int v : nodes)
        if (!model.configs(v, t)) {
          all = false;
          break;
        }
      if (!all)
        continue;
      DegreeData dd;
      dd.t = t;
      for (int v : nodes) {
        const std::vector<PiperConfig> &cs = *model.configs(v, t);
        NodeOptions o;
        o.count = static_cast<int>(cs.size());
        double b[2] = {0, 0};
        for (int c = 0; c < o.count; ++c) {
          o.cost[c] = model.alpha(v, t, c, inStage);
          o.memA[c] = cs[c].memoryA;
          o.memB[c] = cs[c].memoryB;
          b[c] = model.beta(v, t, c);
        }
        if (o.count == 2 && b[0] != b[1])
          dd.dIndependent = false;
        dd.betaSum += b[0];
        dd.alphaOpts.push_back(o);
        dd.beta0.push_back(b[0]);
        dd.beta1.push_back(o.count == 2 ? b[1] : b[0]);
      }
      dd.curves.resize(dd.dIndependent ? 1 : divisors.size());
      pd.degrees.push_back(std::move(dd));
    }
    for (int v : nodes)
      inStage[v] = 0;
    return pd;
  }

  Curve &curveFor(DegreeData &dd, int d) {
    Curve &c = dd.curves[dd.dIndependent ? 0 : dIndex[d]];
    if (!c.built)
      buildCurve(dd, d, c);
    return c;
  }

  void buildCurve(DegreeData &dd, int d, Curve &c) {
    c.built = true;
    c.opts = &dd.alphaOpts;
    if (!dd.dIndependent) {
      c.ownOpts = dd.alphaOpts;
      for (size_t i = 0; i < c.ownOpts.size(); ++i) {
        c.ownOpts[i].cost[0] += (d - 1) * dd.beta0[i];
        c.ownOpts[i].cost[1] += (d - 1) * dd.beta1[i];
      }
      c.opts = &c.ownOpts;
    }
    // Fastest choice per node (ties: the one with less memory per y).
    double fastA = 0, fastB = 0;
    c.fastCost = 0;
    for (const NodeOptions &o : *c.opts) {
      int b = 0;
      if (o.count == 2 &&
          (o.cost[1] < o.cost[0] ||
           (o.cost[1] == o.cost[0] &&
            (o.memA[1] < o.memA[0] ||
             (o.memA[1] == o.memA[0] && o.memB[1] < o.memB[0])))))
        b = 1;
      c.fastCost += o.cost[b];
      fastA += o.memA[b];
      fastB += o.memB[b];
    }
    const int yCap = opt.schedule == Schedule::GPipe ? N : Dmax;
    auto fastFits = [&](int y) { return fastA * y + fastB <= M; };
    auto minFits = [&](int y) {
      double m = 0;
      for (const NodeOptions &o : *c.opts) {
        double best = o.memA[0] * y + o.memB[0];
        if (o.count == 2)
          best = std::min(best, o.memA[1] * y + o.memB[1]);
        m += best;
      }
      // Slack so that y1 never excludes a y the knapsack accepts.
      return m <= M + 1e-6;
    };
    c.y0 = maxTrue(fastFits, yCap);
    c.y1 = std::max(c.y0, maxTrue(minFits, yCap));
    c.cost.assign(c.y1 - c.y0, std::numeric_limits<double>::quiet_NaN());
  }

  /// Largest y in [0, cap] with pred(y), for a predicate true on a prefix
  /// (pred(0) is taken as true).
  template <typename Pred> static int maxTrue(Pred pred, int cap) {
    int lo = 0, hi = cap;
    while (lo < hi) {
      int mid = lo + (hi - lo + 1) / 2;
      if (pred(mid))
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }

  double costAt(Curve &c, int y) {
    if (y <= c.y0)
      return c.fastCost;
    if (y > c.y1)
      return kInf;
    double &slot = c.cost[y - c.y0 - 1];
    if (std::isnan(slot)) {
      ++stats.knapsackSolves;
      StageChoice ch = chooseStageConfigs(*c.opts, y, M, opt.knapsack,
                                          opt.knapsackNodeLimit);
      if (!ch.exact)
        ++stats.inexactKnapsacks;
      slot = ch.feasible ? ch.cost : kInf;
    }
    return slot;
  }

  /// Largest y <= yNeed whose best cost is within budget (0: none).
  int maxY(Curve &c, double budget, int yNeed) {
    int lo = 0;
    if (c.y0 >= 1) {
      if (c.fastCost > budget)
        return 0; // every choice costs at least the fastest one
      lo = std::min(c.y0, yNeed);
    }
    int hi = std::min(c.y1, yNeed);
    while (lo < hi) {
      int mid = lo + (hi - lo + 1) / 2;
      if (within(costAt(c, mid), budget))
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }

  /// Largest downstream sum D of data-parallel degrees that a stage
  /// candidate at (t, d) accepts within \p tau; -1 when none. Only sums up to
  /// \p maxD are of interest, which bounds the work.
  int capOf(DegreeData &dd, int d, double tau, int maxD) {
    Curve &c = curveFor(dd, d);
    double budget = d * tau - (dd.dIndependent ? (d - 1) * dd.betaSum : 0);
    if (budget < 0)
      return -1;
    if (opt.schedule == Schedule::GPipe)
      return within(costAt(c, N / d), budget) ? kNoCap : -1;
    int yNeed = (maxD + d - 1) / d + 1;
    int y = maxY(c, budget, yNeed);
    if (y < 1)
      return -1;
    return y >= yNeed ? kNoCap : d * (y - 1);
  }

  const PiperCostModel &model;
  const PlannerOptions &opt;
  PlannerStats &stats;
  DownsetLattice lattice;
  int N, K, Dmax;
  double M;
  std::vector<int> divisors, dIndex;
  std::vector<std::vector<int32_t>> slots;
  std::vector<std::unique_ptr<PairData>> pairs;
  std::vector<std::vector<Point>> frontier;
  std::vector<char> inStage;
  std::vector<Point> bucket; ///< per D: best candidate of the current downset
};

/// A lower bound on any plan's bottleneck: every device-second of compute
/// must fit in K devices, tau * sum(t d) >= sum over nodes of t * p.
double computeLowerBound(const PiperCostModel &model) {
  double work = 0;
  for (int v = 0; v < model.numNodes(); ++v) {
    double best = kInf;
    for (const auto &[t, cs] : model.instance().nodes[v].configs)
      for (const PiperConfig &c : cs)
        best = std::min(best, t * c.timePerSample);
    work += best;
  }
  return work / model.instance().maxDevices;
}

class Search {
public:
  Search(const PiperCostModel &model, const PlannerOptions &opt,
         PlannerStats &stats)
      : model(model), opt(opt), stats(stats), engine(model, opt, stats),
        N(model.instance().mbsInBatch) {}

  /// The least feasible tau with every d >= delta (kInf: none), leaving the
  /// engine's frontier at that tau.
  double minTau(int delta) {
    if (!engine.run(kInf, delta))
      return kInf;
    double hi = planBottleneck(kInf);
    if (!std::isfinite(hi))
      throw PlanError("internal error: a feasible plan has no finite time");
    // Walk up from the work lower bound by doubling: the first feasible
    // probe is then within a factor two of the optimum.
    double lo = computeLowerBound(model) * (1 - 1e-9);
    if (!(lo > 0)) {
      lo = 0;
      if (engine.run(0, delta))
        return 0;
      lo = hi * 1e-12;
    }
    while (lo * 2 < hi) {
      if (!engine.run(lo * 2, delta)) {
        lo *= 2;
        continue;
      }
      hi = std::min(lo * 2, planBottleneck(lo * 2));
      break;
    }
    if (engine.run(lo, delta)) // the bound was not strict after all
      return minTauBits(0, lo, delta);
    // Geometric bisection to a relative gap of 1e-9, then certify the last
    // plan by one probe just below its bottleneck: the only candidates left
    // are stage times in that sliver, and there is almost never another.
    while (hi > lo * (1 + 1e-9)) {
      double mid = std::sqrt(lo * hi);
      if (!(mid > lo && mid < hi))
        break;
      if (engine.run(mid, delta))
        hi = std::min(mid, planBottleneck(mid));
      else
        lo = mid;
    }
    return minTauBits(lo, hi, delta);
  }

  /// Exact finish: bisection over the doubles in (lo, hi], lo infeasible and
  /// hi feasible, jumping to the found plan's bottleneck after each success.
  double minTauBits(double lo, double hi, int delta) {
    bool probeBelow = true;
    while (toBits(hi) - toBits(lo) > 1) {
      double below = std::nextafter(hi, 0.0);
      // Probe just below hi first: it usually proves hi optimal at once.
      double mid = probeBelow && toBits(hi) - toBits(lo) > 64
                       ? below
                       : fromBits(toBits(lo) + (toBits(hi) - toBits(lo)) / 2);
      if (engine.run(mid, delta)) {
        double jumped = planBottleneck(mid);
        // No jump below the probe: fall back to plain halving.
        if (!(jumped < mid))
          probeBelow = false;
        hi = std::min(mid, jumped);
      } else {
        lo = mid;
        if (mid == below)
          break;
      }
    }
    engine.run(hi, delta);
    return hi;
  }

  /// Bottleneck of the plan at the frontier point with the fewest devices,
  /// nudged up until it passes the feasibility check itself.
  double planBottleneck(double tau) {
    const std::vector<Point> &F = engine.fullFrontier();
    auto stages = engine.trace(F.size() - 1);
    double worst = 0;
    for (auto &s : stages)
      worst = std::max(worst, s.internalTime);
    for (int guard = 0; guard < 8; ++guard) {
      bool ok = true;
      for (auto &s : stages)
        ok = ok && engine.passes(*s.dd, s.d, s.y, worst);
      if (ok)
        return std::min(worst, tau);
      worst = std::nextafter(worst, kInf);
    }
    return tau;
  }

  PlannerEngine &eng() { return engine; }

  /// Iteration objective: min over tau and delta of tau (N - delta + D(tau)).
  void iterationSearch(double &bestTau, int &bestDelta) {
    best = kInf;
    for (int delta : engine.divisorList()) {
      double tau0 = minTau(delta);
      if (tau0 == kInf || tau0 * N >= best)
        break; // tau0 only grows with delta
      int h0 = engine.fullFrontier().front().D;
      consider(tau0, delta, h0);
      double tauMax = best / N;
      if (tauMax > tau0 && engine.run(tauMax, delta)) {
        int hMax = engine.fullFrontier().front().D;
        consider(tauMax, delta, hMax);
        walk(tau0, h0, tauMax, hMax, delta);
      }
    }
    bestTau = tauBest;
    bestDelta = deltaBest;
  }

private:
  void consider(double tau, int delta, int sumD) {
    double value = tau * (N - delta + sumD);
    if (value < best) {
      best = value;
      tauBest = tau;
      deltaBest = delta;
    }
  }

  /// Branch and bound over tau in (a, b], where the least sum of d is ha at
  /// a and hb at b. Only the left end of a step of D(tau) can be optimal.
  void walk(double a, int ha, double b, int hb, int delta) {
    if (ha == hb || a * (N - delta + hb) >= best)
      return;
    if (toBits(b) - toBits(a) <= 1 ||
        stats.feasibilityRuns >= opt.maxFeasibilityRuns)
      return; // b itself was already considered
    double mid = fromBits(toBits(a) + (toBits(b) - toBits(a)) / 2);
    if (!engine.run(mid, delta)) {
      walk(mid, ha, b, hb, delta);
      return;
    }
    int hm = engine.fullFrontier().front().D;
    consider(mid, delta, hm);
    walk(a, ha, mid, hm, delta);
    walk(mid, hm, b, hb, delta);
  }

  const PiperCostModel &model;
  const PlannerOptions &opt;
  PlannerStats &stats;
  PlannerEngine engine;
  int N;
  double best = kInf, tauBest = kInf;
  int deltaBest = 1;
};

} // namespace

Plan planPiper(const PiperInstance &instance, const PlannerOptions &options) {
  std::clock_t start = std::clock();
  PiperCostModel model(instance);
  Plan plan;
  plan.objective = options.objective;
  plan.schedule = options.schedule;
  Search search(model, options, plan.stats);
  PlannerEngine &engine = search.eng();

  double tau;
  int delta = 1;
  if (options.objective == Objective::Piper) {
    tau = search.minTau(1);
  } else {
    search.iterationSearch(tau, delta);
  }
  if (tau == kInf)
    throw PlanError("no feasible plan: no split of the graph over " +
                    std::to_string(instance.maxDevices) + " devices fits in " +
                    std::to_string(instance.maxMemoryPerDevice) +
                    " bytes per device");
  if (!engine.run(tau, delta))
    throw PlanError("internal error: the optimum is not reproducible");
  // Piper objective: the fewest devices; iteration: the least sum of d.
  const auto &F = engine.fullFrontier();
  size_t pick = options.objective == Objective::Piper ? F.size() - 1 : 0;
  auto traced = engine.trace(pick);

  const PiperInstance &ins = model.instance();
  for (auto &s : traced) {
    StageAssignment a;
    a.nodes = s.nodes;
    a.t = s.t;
    a.d = s.d;
    a.config = engine.chooseConfigs(s);
    plan.assignment.push_back(std::move(a));
  }
  PlanEvaluation ev = model.evaluate(plan.assignment, options.schedule);
  if (!ev.fitsMemory)
    throw PlanError("internal error: the planned stages exceed memory");
  plan.timePerSample = ev.timePerSample;
  plan.iterationTime = ev.iterationTime;
  plan.devicesUsed = ev.devicesUsed;
  plan.sumD = ev.sumD;
  for (size_t i = 0; i < plan.assignment.size(); ++i) {
    const StageAssignment &a = plan.assignment[i];
    PlannedStage ps;
    ps.t = a.t;
    ps.d = a.d;
    ps.inFlight = ev.stages[i].inFlight;
    ps.timePerSample = ev.stages[i].timePerSample;
    ps.memoryBytes = ev.stages[i].memoryBytes;
    std::vector<std::pair<int, std::string>> byId;
    for (size_t k = 0; k < a.nodes.size(); ++k)
      byId.emplace_back(ins.nodes[a.nodes[k]].id,
                        (*model.configs(a.nodes[k], a.t))[a.config[k]].id);
    std::sort(byId.begin(), byId.end());
    for (const auto &[id, cfg] : byId) {
      ps.nodeIds.push_back(id);
      ps.configIds.push_back(cfg);
      PiperConfig probe;
      probe.id = cfg;
      if (probe.recomputes())
        ps.recomputeIds.push_back(id);
    }
    plan.stages.push_back(std::move(ps));
  }
  plan.stats.cpuSeconds =
      static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  return plan;
}

} // namespace tessera::planner
