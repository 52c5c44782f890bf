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
#include <string>

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

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

/// Bytes of the planner's tables, against PlannerOptions::maxTableBytes.
struct TableBudget {
  size_t limit = 0;
  size_t used = 0;
  bool full = false;
  bool take(size_t bytes) {
    if (used + bytes > limit) {
      full = true;
      return false;
    }
    used += bytes;
    return true;
  }
};

/// Entries of T in fixed chunks that never move (so indices stay valid),
/// each chunk charged to the table budget. alloc() returns kNone instead of
/// going over it: the callers then recompute instead of caching.
template <typename T> class Arena {
public:
  void init(size_t chunkSize, TableBudget *budget) {
    chunk = chunkSize;
    this->budget = budget;
  }
  /// n contiguous entries (n <= the chunk size), filled with `fill`.
  uint32_t alloc(size_t n, const T &fill) {
    if (chunks.empty() || used + n > chunk) {
      if ((chunks.size() + 1) * chunk >= kNone ||
          !budget->take(chunk * sizeof(T)))
        return kNone;
      chunks.push_back(std::make_unique<T[]>(chunk));
      used = 0;
    }
    size_t first = (chunks.size() - 1) * chunk + used;
    std::fill_n(&chunks.back()[used], n, fill);
    used += n;
    return static_cast<uint32_t>(first);
  }
  T &operator[](uint32_t i) { return chunks[i / chunk][i % chunk]; }
  size_t bytes() const { return chunks.size() * chunk * sizeof(T); }

private:
  size_t chunk = 1;
  size_t used = 0;
  TableBudget *budget = nullptr;
  std::vector<std::unique_ptr<T[]>> chunks;
};

/// The best-cost curve of a stage candidate at one d as a function of y:
/// the fastest configuration choice fits up to y0, nothing fits beyond y1,
/// and in between a knapsack per y gives the cost, cached in the band
/// arena (y1 - y0 entries from `band`, NaN until asked).
struct CurveRec {
  double fastCost = 0;
  int32_t y0 = 0, y1 = 0;
  uint32_t band = kNone;
  bool built = false;
};

/// What the search keeps of one stage candidate (a pair of nested
/// downsets) at one tensor-parallel degree: 32 bytes, whatever the size of
/// the stage. Its node options are recomputed from the pair when a
/// knapsack needs them. When the choice does not depend on d (every node's
/// options share one resync term), the curve is stored here and `extra` is
/// its band; otherwise `extra` is the first of one CurveRec per divisor of
/// N in the curve arena.
struct StageRec {
  double fastCost = 0;
  double betaSum = 0; ///< the resync term, per (d - 1), when d-independent
  int32_t y0 = 0, y1 = 0;
  uint32_t extra = kNone;
  uint8_t flags = 0;
};
constexpr uint8_t kBuilt = 1, kValid = 2, kDIndependent = 4;
// The size docs/planner.md and the up-front estimate count per record.
static_assert(sizeof(StageRec) == 32, "a stage record is 32 bytes");

/// A curve wherever it lives; `band` is where its band index is kept, or
/// null for a transient curve (recomputed, never cached).
struct Curve {
  double fastCost;
  int y0, y1;
  uint32_t *band;
};

/// A stage candidate: downset J minus its k-th sub-downset, at degree
/// index ti, with its record.
struct StageRef {
  size_t J, k;
  int ti;
  size_t rec;
};

struct Point {
  int D;   ///< sum of data-parallel degrees of the stages so far
  int dev; ///< devices they use
  uint32_t from;
  uint32_t fromIdx;
  int t;
  int d;
};

/// Tensor-parallel degrees the search considers: those of the instance
/// that fit in K devices.
std::vector<int> usableDegrees(const PiperCostModel &m) {
  std::vector<int> out;
  for (int t : m.degrees())
    if (t <= m.instance().maxDevices)
      out.push_back(t);
  return out;
}

/// Bytes per pair of nested downsets: its sub-downset index in the lattice
/// and one record per degree.
size_t bytesPerPair(const PiperCostModel &m) {
  return sizeof(uint32_t) +
         std::max<size_t>(1, usableDegrees(m).size()) * sizeof(StageRec);
}

class PlannerEngine {
public:
  PlannerEngine(const PiperCostModel &model, const PlannerOptions &options,
                PlannerStats &stats)
      : model(model), opt(options), stats(stats),
        lattice(model.numNodes(), successorLists(model), options.maxDownsets,
                options.maxTableBytes / bytesPerPair(model),
                options.maxTableBytes,
                "the planner's tables would exceed its memory limit of " +
                    mib(options.maxTableBytes) +
                    " (raise it with --max-table-gib or "
                    "PlannerOptions::maxTableBytes)") {
    const PiperInstance &ins = model.instance();
    N = ins.mbsInBatch;
    K = ins.maxDevices;
    M = ins.maxMemoryPerDevice;
    bandwidth = ins.bandwidth;
    Dmax = std::min(N, K);
    for (int d = 1; d <= Dmax; ++d)
      if (N % d == 0)
        divisors.push_back(d);
    dIndex.assign(Dmax + 1, -1);
    for (size_t i = 0; i < divisors.size(); ++i)
      dIndex[divisors[i]] = static_cast<int>(i);
    degs = usableDegrees(model);
    nd = std::max<size_t>(1, degs.size());
    nodeDeg.resize(static_cast<size_t>(model.numNodes()) * nd);
    for (int v = 0; v < model.numNodes(); ++v)
      for (size_t ti = 0; ti < degs.size(); ++ti) {
        NodeDegree &x = nodeDeg[v * nd + ti];
        x.configs = model.configs(v, degs[ti]);
        if (!x.configs)
          continue;
        for (size_t c = 0; c < x.configs->size(); ++c) {
          x.fw[c] = &model.syncFw(v, degs[ti], static_cast<int>(c));
          x.bw[c] = &model.syncBw(v, degs[ti], static_cast<int>(c));
          x.beta[c] = model.beta(v, degs[ti], static_cast<int>(c));
        }
      }

    // Everything whose size is known up front, with the frontiers at their
    // largest (one point per sum of d): refused before it is allocated.
    size_t members = 0;
    for (size_t j = 0; j < lattice.size(); ++j)
      members += lattice.members(j).size();
    const size_t fixed =
        lattice.numPairs() * bytesPerPair(model) +
        lattice.size() * ((Dmax + 1) * sizeof(Point) + 2 * sizeof(size_t) +
                          3 * sizeof(std::vector<int>)) +
        members * sizeof(int) + (Dmax + 1) * (sizeof(Point) + sizeof(int));
    stats.tableBytes = fixed;
    if (fixed > opt.maxTableBytes)
      throw Exception(
          "the planner's tables for this graph need about " + mib(fixed) +
          " (" + std::to_string(lattice.numPairs()) +
          " pairs of nested downsets x " + std::to_string(nd) +
          " tensor-parallel degree(s) x " + std::to_string(sizeof(StageRec)) +
          " bytes, plus the lattice and the frontiers), more than the limit "
          "of " +
          mib(opt.maxTableBytes) +
          " (raise it with --max-table-gib or PlannerOptions::maxTableBytes)");
    budget.limit = opt.maxTableBytes;
    budget.used = fixed;

    pairBase.assign(lattice.size() + 1, 0);
    for (size_t j = 0; j < lattice.size(); ++j)
      pairBase[j + 1] = pairBase[j] + lattice.subsets(j).size();
    records.assign(lattice.numPairs() * nd, StageRec{});
    bands.init(std::max<size_t>(size_t(1) << 16, Dmax + 1), &budget);
    perD.init(std::max<size_t>(size_t(1) << 12, divisors.size()), &budget);
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
    std::vector<std::pair<int, int>> &caps = capScratch;
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
        build(J, k);
        const int maxD = F.back().D, minD = F.front().D;
        const int minDev = F.back().dev;
        for (size_t ti = 0; ti < degs.size(); ++ti) {
          StageRef s{J, k, static_cast<int>(ti), recordOf(J, k, ti)};
          if (!(records[s.rec].flags & kValid))
            continue;
          const int t = degs[ti];
          // Prefix maxima of cap over ascending d: the smallest d that
          // accepts a downstream sum D is the first record with cap >= D.
          caps.clear();
          int bestCap = -1;
          for (int d : divisors) {
            if (d < delta)
              continue;
            if (minD + d > Dmax || minDev + t * d > K)
              break;
            int cap = capOf(s, d, tau, maxD);
            if (cap > bestCap) {
              caps.emplace_back(d, cap);
              bestCap = cap;
              if (bestCap >= maxD)
                break;
            }
          }
          size_t r = 0;
          for (size_t p = 0; p < F.size(); ++p) {
            while (r < caps.size() && caps[r].second < F[p].D)
              ++r;
            if (r == caps.size())
              break;
            int d = caps[r].first;
            int D = F[p].D + d, dev = F[p].dev + t * d;
            if (D > Dmax || dev > K)
              continue;
            Point &slot = bucket[D];
            if (slot.dev > dev) {
              slot = Point{D, dev, subs[k], static_cast<uint32_t>(p), t, d};
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
    StageRef ref;
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
      const std::vector<uint32_t> &subs = lattice.subsets(J);
      size_t k =
          std::lower_bound(subs.begin(), subs.end(), p->from) - subs.begin();
      size_t ti = std::find(degs.begin(), degs.end(), s.t) - degs.begin();
      s.ref = StageRef{J, k, static_cast<int>(ti), recordOf(J, k, ti)};
      s.internalTime = stageTime(s.ref, s.d, s.y);
      stages.push_back(std::move(s));
      J = p->from;
      p = &down;
    }
    return stages;
  }

  /// Internal time per sample of a stage candidate at (d, y).
  double stageTime(const StageRef &s, int d, int y) {
    Curve c = curveFor(s, d);
    double cost = costAt(s, d, c, y);
    const StageRec &r = records[s.rec];
    if (r.flags & kDIndependent)
      cost += (d - 1) * r.betaSum;
    return cost / d;
  }

  /// Whether a stage at (d, y) passes the check at \p tau.
  bool passes(const StageRef &s, int d, int y, double tau) {
    Curve c = curveFor(s, d);
    return within(costAt(s, d, c, y), budgetAt(s, d, tau));
  }

  /// Configuration choice of a traced stage, as option indices per node.
  std::vector<int> chooseConfigs(const TracedStage &s) {
    ++stats.knapsackSolves;
    StageChoice ch = chooseStageConfigs(optionsOf(s.ref, s.d), s.y, M,
                                        opt.knapsack, opt.knapsackNodeLimit);
    if (!ch.feasible)
      throw Exception("internal error: a traced stage does not fit");
    return std::vector<int>(ch.choice.begin(), ch.choice.end());
  }

  const std::vector<int> &divisorList() const { return divisors; }
  int maxSumD() const { return Dmax; }

  void recordStats() {
    stats.cacheBytes = bands.bytes() + perD.bytes();
    stats.cacheFull = budget.full;
  }

private:
  static std::string mib(size_t bytes) {
    return std::to_string((bytes + (size_t(1) << 20) - 1) >> 20) + " MiB";
  }

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

  size_t recordOf(size_t J, size_t k, size_t ti) const {
    return (pairBase[J] + k) * nd + ti;
  }

  /// The nodes of stage candidate (J, k), into \p out.
  void stageNodes(size_t J, size_t k, std::vector<int> &out) const {
    out.clear();
    const std::vector<int> &sub = lattice.members(lattice.subsets(J)[k]);
    std::set_difference(lattice.members(J).begin(), lattice.members(J).end(),
                        sub.begin(), sub.end(), std::back_inserter(out));
  }

  /// PiperCostModel::alpha (same terms, same order) on the configurations
  /// looked up once per node and degree.
  double alphaOf(int v, size_t ti, int c) const {
    const NodeDegree &x = nodeDeg[v * nd + ti];
    const std::vector<std::pair<int, double>> &in = model.inEdges(v);
    const std::vector<std::pair<int, double>> &out = model.outEdges(v);
    const std::vector<double> &fw = *x.fw[c], &bw = *x.bw[c];
    double bytes = 0;
    for (size_t k = 0; k < in.size(); ++k)
      if (!inStage[in[k].first])
        bytes += 2 * (in[k].second + fw[k]);
    for (size_t k = 0; k < out.size(); ++k)
      if (!inStage[out[k].first])
        bytes += 2 * (out[k].second + bw[k]);
    return (*x.configs)[c].timePerSample + bytes / bandwidth;
  }

  /// Node options of a stage candidate (costs: the part divided by d, plus
  /// the resync when the choice depends on d), recomputed from the pair;
  /// the last one is kept, since a probe asks for the same stage several
  /// times in a row.
  const std::vector<NodeOptions> &optionsOf(const StageRef &s, int d) {
    const bool dInd = records[s.rec].flags & kDIndependent;
    const int key = dInd ? 0 : d;
    if (optsRec == s.rec && optsD == key)
      return opts;
    optsRec = s.rec;
    optsD = key;
    opts.clear();
    stageNodes(s.J, s.k, optsNodes);
    for (int v : optsNodes)
      inStage[v] = 1;
    for (int v : optsNodes) {
      const NodeDegree &x = nodeDeg[v * nd + s.ti];
      const std::vector<PiperConfig> &cs = *x.configs;
      NodeOptions o;
      o.count = static_cast<int>(cs.size());
      for (int c = 0; c < o.count; ++c) {
        o.cost[c] = alphaOf(v, s.ti, c);
        if (!dInd)
          o.cost[c] += (d - 1) * x.beta[c];
        o.memA[c] = cs[c].memoryA;
        o.memB[c] = cs[c].memoryB;
      }
      opts.push_back(o);
    }
    for (int v : optsNodes)
      inStage[v] = 0;
    return opts;
  }

  /// Fills the records of pair (J, k) for every degree, once.
  void build(size_t J, size_t k) {
    if (records[recordOf(J, k, 0)].flags & kBuilt)
      return;
    stageNodes(J, k, buildNodes);
    for (size_t ti = 0; ti < nd; ++ti) {
      StageRec &r = records[recordOf(J, k, ti)];
      r.flags = kBuilt;
      if (ti >= degs.size())
        continue;
      bool all = true;
      for (int v : buildNodes)
        all = all && nodeDeg[v * nd + ti].configs;
      if (!all)
        continue;
      r.flags |= kValid;
      // The best choice does not depend on d when every node's options
      // share one resync term; then one curve serves all d.
      bool dInd = true;
      double betaSum = 0;
      for (int v : buildNodes) {
        const NodeDegree &x = nodeDeg[v * nd + ti];
        if (x.configs->size() == 2 && x.beta[1] != x.beta[0])
          dInd = false;
        betaSum += x.beta[0];
      }
      r.betaSum = betaSum;
      if (dInd) {
        r.flags |= kDIndependent;
        CurveRec c;
        buildCurve(
            optionsOf(StageRef{J, k, static_cast<int>(ti), recordOf(J, k, ti)},
                      1),
            c);
        r.fastCost = c.fastCost;
        r.y0 = c.y0;
        r.y1 = c.y1;
      }
    }
  }

  /// The curve of a stage candidate at d: stored in its record (d does not
  /// matter), in the curve arena, or, when the table budget is spent, a
  /// transient one rebuilt here.
  Curve curveFor(const StageRef &s, int d) {
    StageRec &r = records[s.rec];
    if (r.flags & kDIndependent)
      return Curve{r.fastCost, r.y0, r.y1, &r.extra};
    if (r.extra == kNone)
      r.extra = perD.alloc(divisors.size(), CurveRec{});
    if (r.extra == kNone) {
      if (transientRec != s.rec || transientD != d) {
        transient = CurveRec{};
        buildCurve(optionsOf(s, d), transient);
        transientRec = s.rec;
        transientD = d;
      }
      return Curve{transient.fastCost, transient.y0, transient.y1, nullptr};
    }
    CurveRec &c = perD[r.extra + static_cast<uint32_t>(dIndex[d])];
    if (!c.built)
      buildCurve(optionsOf(s, d), c);
    return Curve{c.fastCost, c.y0, c.y1, &c.band};
  }

  void buildCurve(const std::vector<NodeOptions> &opts, CurveRec &c) {
    c.built = true;
    // Fastest choice per node (ties: the one with less memory per y).
    double fastA = 0, fastB = 0;
    c.fastCost = 0;
    for (const NodeOptions &o : opts) {
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
      for (const NodeOptions &o : opts) {
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

  double costAt(const StageRef &s, int d, const Curve &c, int y) {
    if (y <= c.y0)
      return c.fastCost;
    if (y > c.y1)
      return kInf;
    // The band's costs are cached while the table budget allows; past it
    // they are recomputed (slower, not bigger).
    if (c.band && *c.band == kNone)
      *c.band = bands.alloc(static_cast<size_t>(c.y1 - c.y0),
                            std::numeric_limits<double>::quiet_NaN());
    double *slot = c.band && *c.band != kNone
                       ? &bands[*c.band + static_cast<uint32_t>(y - c.y0 - 1)]
                       : nullptr;
    if (slot && !std::isnan(*slot))
      return *slot;
    ++stats.knapsackSolves;
    StageChoice ch = chooseStageConfigs(optionsOf(s, d), y, M, opt.knapsack,
                                        opt.knapsackNodeLimit);
    if (!ch.exact)
      ++stats.inexactKnapsacks;
    double cost = ch.feasible ? ch.cost : kInf;
    if (slot)
      *slot = cost;
    return cost;
  }

  /// Cost budget of a stage at d under tau (the resync taken out when the
  /// choice does not depend on d).
  double budgetAt(const StageRef &s, int d, double tau) const {
    const StageRec &r = records[s.rec];
    return d * tau - ((r.flags & kDIndependent) ? (d - 1) * r.betaSum : 0);
  }

  /// Largest y <= yNeed whose best cost is within budget (0: none).
  int maxY(const StageRef &s, int d, const Curve &c, double budget, int yNeed) {
    int lo = 0;
    if (c.y0 >= 1) {
      if (c.fastCost > budget)
        return 0; // every choice costs at least the fastest one
      lo = std::min(c.y0, yNeed);
    }
    int hi = std::min(c.y1, yNeed);
    while (lo < hi) {
      int mid = lo + (hi - lo + 1) / 2;
      if (within(costAt(s, d, c, mid), budget))
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }

  /// Largest downstream sum D of data-parallel degrees that a stage
  /// candidate at (t, d) accepts within \p tau; -1 when none. Only sums up to
  /// \p maxD are of interest, which bounds the work.
  int capOf(const StageRef &s, int d, double tau, int maxD) {
    Curve c = curveFor(s, d);
    double budget = budgetAt(s, d, tau);
    if (budget < 0)
      return -1;
    if (opt.schedule == Schedule::GPipe)
      return within(costAt(s, d, c, N / d), budget) ? kNoCap : -1;
    int yNeed = (maxD + d - 1) / d + 1;
    int y = maxY(s, d, c, budget, yNeed);
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
  std::vector<int> divisors, dIndex, degs;
  size_t nd = 1;
  TableBudget budget;
  std::vector<size_t> pairBase;
  std::vector<StageRec> records;
  Arena<double> bands;
  Arena<CurveRec> perD;
  /// One node's options at one degree, looked up once: the cost model's
  /// accessors go through maps, and the first feasibility run evaluates
  /// them for every node of every one of (up to) millions of candidates.
  struct NodeDegree {
    const std::vector<PiperConfig> *configs = nullptr;
    const std::vector<double> *fw[2] = {nullptr, nullptr};
    const std::vector<double> *bw[2] = {nullptr, nullptr};
    double beta[2] = {0, 0};
  };
  std::vector<NodeDegree> nodeDeg; ///< [v * nd + ti]
  double bandwidth = 0;
  std::vector<int> buildNodes, optsNodes;
  /// Per run and candidate: (d, cap) where the cap grows, ascending d.
  std::vector<std::pair<int, int>> capScratch;
  std::vector<NodeOptions> opts;
  size_t optsRec = SIZE_MAX;
  int optsD = -1;
  CurveRec transient;
  size_t transientRec = SIZE_MAX;
  int transientD = -1;
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
      throw Exception("internal error: a feasible plan has no finite time");
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
        ok = ok && engine.passes(s.ref, s.d, s.y, worst);
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
    throw Exception("no feasible plan: no split of the graph over " +
                    std::to_string(instance.maxDevices) + " devices fits in " +
                    std::to_string(instance.maxMemoryPerDevice) +
                    " bytes per device");
  if (!engine.run(tau, delta))
    throw Exception("internal error: the optimum is not reproducible");
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
    throw Exception("internal error: the planned stages exceed memory");
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
  engine.recordStats();
  plan.stats.cpuSeconds =
      static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  return plan;
}

} // namespace tessera::planner
