//===- ScheduleSearch.cpp - Modulo-scheduling branch and bound ------------===//
//
// Formulation (details and soundness arguments in docs/schedule.md):
//  * every block b of micro-batch 0 gets a start s_b; micro-batch i runs it at
//    s_b + i * P, so one micro-batch's pattern repeats every P steps;
//  * dependencies: s_b >= s_a + span_a;
//  * resources: per device, the intervals [s_b mod P, + span_b) of its blocks
//    must not collide modulo P (a modulo reservation table);
//  * memory: with s_b = k_b * P + r_b (0 <= r_b < P) the steady-state memory
//    of a device at phase t in [0, P) is
//        M(t) = - sum_b m_b * k_b - sum_{b : r_b > t} m_b,
//    exact whenever the device's memory deltas per micro-batch sum to 0.
// A depth-first branch and bound assigns starts in a topological order, and
// P = W, W + 1, ... is tried until a period has a solution.
//
//===----------------------------------------------------------------------===//

#include "tessera/Schedule/ScheduleSearch.h"

#include <algorithm>
#include <chrono>
#include <sstream>

namespace tessera::schedule {

const char *outcomeName(PeriodOutcome outcome) {
  switch (outcome) {
  case PeriodOutcome::Found:
    return "found";
  case PeriodOutcome::Infeasible:
    return "infeasible";
  case PeriodOutcome::BudgetExhausted:
    return "budget exhausted";
  }
  return "?";
}

namespace {

constexpr int64_t kNoMemoryLimit = INT64_MAX / 4;

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}

/// Facts about the placement that do not depend on the period.
struct Analysis {
  /// Branching order: topological, by natural start time then index.
  std::vector<int> order;
  std::vector<int> position;
  /// Natural start of each block in one micro-batch: roots as late as the
  /// critical path allows (ALAP), the others as early as their dependencies.
  std::vector<int64_t> natural;
  std::vector<bool> isRoot;
  /// For a root r: shifting r and all its descendants by a whole period
  /// changes nothing (they form a closed set with zero net memory on every
  /// device), so P consecutive starts cover every choice.
  std::vector<bool> rootShiftFree;
  /// For a block b: delaying it by a whole period may lower memory (it holds
  /// memory and is not part of a closed set of non-positive net memory).
  std::vector<bool> mayDelay;
  /// Devices whose memory per micro-batch sums to 0: their steady state is
  /// periodic and the memory bound is exact.
  std::vector<bool> steadyDevice;
  /// Latency of one micro-batch scheduled alone, greedily.
  int64_t soloLatency = 0;
};

Analysis analyze(const PlacementGraph &g) {
  Analysis a;
  const int n = g.numBlocks();
  const int ndevs = g.numDevices();
  std::vector<int64_t> asap(n, 0), alap(n, 0);
  for (int x : g.topoOrder())
    for (int p : g.preds(x))
      asap[x] = std::max(asap[x], asap[p] + g.block(p).span);
  int64_t critical = 0;
  for (int x = 0; x < n; ++x)
    critical = std::max(critical, asap[x] + g.block(x).span);
  for (auto it = g.topoOrder().rbegin(); it != g.topoOrder().rend(); ++it) {
    int x = *it;
    int64_t latest = critical;
    for (int s : g.succs(x))
      latest = std::min(latest, alap[s]);
    alap[x] = latest - g.block(x).span;
  }
  a.isRoot.assign(n, false);
  a.natural.assign(n, 0);
  for (int x : g.topoOrder()) {
    a.isRoot[x] = g.preds(x).empty();
    if (a.isRoot[x]) {
      a.natural[x] = alap[x];
      continue;
    }
    for (int p : g.preds(x))
      a.natural[x] = std::max(a.natural[x], a.natural[p] + g.block(p).span);
  }
  a.order = g.topoOrder();
  // Successors start strictly later than their dependencies, so sorting by
  // natural start keeps the order topological.
  std::stable_sort(a.order.begin(), a.order.end(), [&](int x, int y) {
    if (a.natural[x] != a.natural[y])
      return a.natural[x] < a.natural[y];
    return x < y;
  });
  a.position.assign(n, 0);
  for (int i = 0; i < n; ++i)
    a.position[a.order[i]] = i;

  a.steadyDevice.assign(ndevs, false);
  for (int d = 0; d < ndevs; ++d)
    a.steadyDevice[d] = g.netMemory(d) == 0;

  a.rootShiftFree.assign(n, false);
  a.mayDelay.assign(n, false);
  for (int b = 0; b < n; ++b) {
    // S = b and its descendants; closed if nothing outside S feeds S \ {b}.
    std::vector<bool> inSet(n, false);
    for (int x = 0; x < n; ++x)
      inSet[x] = g.minDistance(b, x) != PlacementGraph::kNoPath;
    bool closed = true;
    std::vector<int64_t> net(ndevs, 0);
    for (int x = 0; x < n; ++x) {
      if (!inSet[x])
        continue;
      if (x != b)
        for (int p : g.preds(x))
          closed = closed && inSet[p];
      for (int d : g.block(x).devices)
        net[d] += g.block(x).memory;
    }
    bool allZero =
        std::all_of(net.begin(), net.end(), [](int64_t v) { return v == 0; });
    bool allNonPositive =
        std::all_of(net.begin(), net.end(), [](int64_t v) { return v <= 0; });
    a.rootShiftFree[b] = a.isRoot[b] && closed && allZero;
    a.mayDelay[b] = g.block(b).memory > 0 && !(closed && allNonPositive);
  }

  // One micro-batch alone, each block as early as its dependencies and its
  // devices allow: at a period of at least this latency micro-batches do
  // not overlap, so larger periods cannot help.
  std::vector<int64_t> devFree(ndevs, 0), end(n, 0);
  for (int x : g.topoOrder()) {
    int64_t st = 0;
    for (int p : g.preds(x))
      st = std::max(st, end[p]);
    for (int d : g.block(x).devices)
      st = std::max(st, devFree[d]);
    end[x] = st + g.block(x).span;
    for (int d : g.block(x).devices)
      devFree[d] = end[x];
    a.soloLatency = std::max(a.soloLatency, end[x]);
  }
  return a;
}

/// Peak memory of each device over micro-batches [0, N) of a periodic
/// schedule, computed from the exact event sequence (warm-up and cool-down
/// included). Returns false as soon as a device exceeds `limit`.
bool finitePeaks(const PlacementGraph &g, int64_t period,
                 const std::vector<int64_t> &starts, int numMicro,
                 int64_t limit, std::vector<int64_t> *peaks) {
  std::vector<std::pair<int64_t, int64_t>> events;
  if (peaks)
    peaks->assign(g.numDevices(), 0);
  for (int d = 0; d < g.numDevices(); ++d) {
    events.clear();
    for (int b : g.blocksOn(d)) {
      int64_t m = g.block(b).memory;
      if (m == 0)
        continue;
      for (int i = 0; i < numMicro; ++i)
        events.push_back({starts[b] + i * period, m});
    }
    std::sort(events.begin(), events.end());
    int64_t mem = 0, peak = 0;
    for (size_t i = 0; i < events.size(); ++i) {
      mem += events[i].second;
      if (i + 1 == events.size() || events[i + 1].first != events[i].first)
        peak = std::max(peak, mem);
    }
    if (peaks)
      (*peaks)[d] = peak;
    if (peak > limit)
      return false;
  }
  return true;
}

/// The branch and bound for one period.
class PeriodSearch {
public:
  PeriodSearch(const PlacementGraph &g, const Analysis &a, int64_t period,
               const SearchOptions &o)
      : g_(g), a_(a), P_(period), opt_(o), n_(g.numBlocks()),
        ndevs_(g.numDevices()) {}

  PeriodSearchResult run();

private:
  bool dfs(int depth);
  bool enumeratePhases(size_t k);
  void domain(int depth, int b, std::vector<int64_t> &values) const;
  bool reservationFree(int b, int64_t start) const;
  void reserve(int b, int64_t start, int owner);
  bool fragmentationOk(int d) const;
  bool memoryOk(int d, const std::vector<int64_t> &lb);
  bool latencyOk(const std::vector<int64_t> &lb) const;
  void leaf();

  const PlacementGraph &g_;
  const Analysis &a_;
  const int64_t P_;
  const SearchOptions &opt_;
  const int n_, ndevs_;

  std::vector<int64_t> start_;
  std::vector<char> assigned_;
  /// Blocks occupying several devices get their phase chosen before the
  /// topological search (-1: not fixed); their cells are reserved up front.
  std::vector<int> multiDevice_;
  std::vector<int64_t> fixedPhase_;
  /// ndevs * P cells: 0 free, else owner block + 1.
  std::vector<int> occupancy_;
  /// Lower bounds of every start, one vector per depth (undo by depth).
  std::vector<std::vector<int64_t>> lb_;
  /// Unassigned blocks with positive memory, per device: until 0 the memory
  /// of the device has no valid lower bound (they may still move later).
  std::vector<int> positiveLeft_;
  std::vector<int64_t> rootMin_;
  std::vector<int64_t> scratch_;
  std::vector<std::vector<int64_t>> values_;

  uint64_t nodes_ = 0, budget_ = 0;
  bool budgetHit_ = false, improving_ = false;
  int64_t bestLatency_ = INT64_MAX;
  std::vector<int64_t> best_;
};

void PeriodSearch::domain(int depth, int b,
                          std::vector<int64_t> &values) const {
  values.clear();
  const int64_t E = std::max(0, opt_.extraPeriods);
  if (depth == 0) {
    // Time is translation invariant: pin the first root at 0.
    values.push_back(0);
    return;
  }
  if (a_.isRoot[b]) {
    // A root has no dependency to wait for; try starts near its natural
    // (ALAP) alignment first, alternating later and earlier.
    int64_t nat = a_.natural[b];
    int64_t radius = a_.rootShiftFree[b] ? P_ : (P_ - 1) + E * P_;
    int64_t count = a_.rootShiftFree[b] ? P_ : 2 * radius + 1;
    for (int64_t k = 0; static_cast<int64_t>(values.size()) < count; ++k) {
      int64_t off = (k + 1) / 2 * (k % 2 ? 1 : -1);
      if (off > radius || -off > radius)
        break;
      values.push_back(nat + off);
    }
    return;
  }
  // Dependencies are all placed (topological order), so the lower bound is
  // the earliest start. Starts beyond lo + P - 1 repeat a phase one period
  // later; that only helps a block that holds memory (see mayDelay).
  int64_t lo = lb_[depth][b];
  int64_t count = P_ + (a_.mayDelay[b] ? E * P_ : 0);
  for (int64_t v = 0; v < count; ++v)
    values.push_back(lo + v);
}

// Keeps only the starts whose phase was fixed by enumeratePhases().
static void filterPhase(std::vector<int64_t> &values, int64_t phase,
                        int64_t P) {
  if (phase < 0)
    return;
  values.erase(std::remove_if(
                   values.begin(), values.end(),
                   [&](int64_t v) { return v - floorDiv(v, P) * P != phase; }),
               values.end());
}

bool PeriodSearch::reservationFree(int b, int64_t start) const {
  const Block &blk = g_.block(b);
  int64_t phase = start - floorDiv(start, P_) * P_;
  for (int d : blk.devices) {
    const int *row = &occupancy_[static_cast<size_t>(d) * P_];
    for (int64_t k = 0; k < blk.span; ++k) {
      int64_t c = phase + k;
      if (c >= P_)
        c -= P_;
      if (row[c])
        return false;
    }
  }
  return true;
}

void PeriodSearch::reserve(int b, int64_t start, int owner) {
  const Block &blk = g_.block(b);
  int64_t phase = start - floorDiv(start, P_) * P_;
  for (int d : blk.devices) {
    int *row = &occupancy_[static_cast<size_t>(d) * P_];
    for (int64_t k = 0; k < blk.span; ++k) {
      int64_t c = phase + k;
      if (c >= P_)
        c -= P_;
      row[c] = owner;
    }
  }
}

// Necessary condition for the blocks still to place on a device: each block
// of span >= s needs s free cells in a row (cyclically), so the free runs
// must hold at least as many such blocks as remain.
bool PeriodSearch::fragmentationOk(int d) const {
  const int *row = &occupancy_[static_cast<size_t>(d) * P_];
  int64_t firstBusy = -1;
  for (int64_t c = 0; c < P_; ++c)
    if (row[c]) {
      firstBusy = c;
      break;
    }
  if (firstBusy < 0)
    return true;
  int64_t runs[64];
  int numRuns = 0;
  bool tooManyRuns = false;
  int64_t run = 0, free = 0;
  for (int64_t k = 1; k <= P_; ++k) {
    int64_t c = (firstBusy + k) % P_;
    if (!row[c]) {
      ++run;
      ++free;
    } else if (run) {
      if (numRuns < 64)
        runs[numRuns++] = run;
      else
        tooManyRuns = true;
      run = 0;
    }
  }
  int64_t need = 0, maxSpan = 0;
  for (int b : g_.blocksOn(d))
    if (!assigned_[b] && fixedPhase_[b] < 0) {
      need += g_.block(b).span;
      maxSpan = std::max(maxSpan, g_.block(b).span);
    }
  if (need > free)
    return false;
  if (maxSpan <= 1 || tooManyRuns)
    return true;
  // For each distinct span s >= 2 still to place.
  for (int b : g_.blocksOn(d)) {
    if (assigned_[b] || fixedPhase_[b] >= 0 || g_.block(b).span < 2)
      continue;
    int64_t s = g_.block(b).span;
    int64_t demand = 0;
    for (int x : g_.blocksOn(d))
      if (!assigned_[x] && fixedPhase_[x] < 0 && g_.block(x).span >= s)
        ++demand;
    int64_t supply = 0;
    for (int r = 0; r < numRuns; ++r)
      supply += runs[r] / s;
    if (supply < demand)
      return false;
  }
  return true;
}

// Lower bound of the steady-state peak on a device: placed blocks count
// exactly; unplaced blocks all free memory (no positive one is left) and
// freeing later only raises the memory, so their lower bounds give a lower
// bound of M(t) at every phase.
bool PeriodSearch::memoryOk(int d, const std::vector<int64_t> &lb) {
  if (!a_.steadyDevice[d] || positiveLeft_[d] > 0)
    return true;
  scratch_.assign(P_ + 1, 0);
  int64_t base = 0;
  for (int b : g_.blocksOn(d)) {
    int64_t m = g_.block(b).memory;
    if (m == 0)
      continue;
    int64_t s = assigned_[b] ? start_[b] : lb[b];
    int64_t k = floorDiv(s, P_);
    int64_t r = s - k * P_;
    base -= m * k;
    // Phases t < r have not yet seen this micro-batch's start.
    scratch_[0] -= m;
    scratch_[r] += m;
  }
  int64_t acc = 0;
  for (int64_t t = 0; t < P_; ++t) {
    acc += scratch_[t];
    if (base + acc > opt_.memoryLimit)
      return false;
  }
  return true;
}

bool PeriodSearch::latencyOk(const std::vector<int64_t> &lb) const {
  int64_t minStart = INT64_MAX, maxEnd = INT64_MIN;
  for (int b = 0; b < n_; ++b) {
    int64_t s = assigned_[b] ? start_[b] : lb[b];
    if (assigned_[b])
      minStart = std::min(minStart, s);
    maxEnd = std::max(maxEnd, s + g_.block(b).span);
  }
  return maxEnd - minStart < bestLatency_;
}

void PeriodSearch::leaf() {
  int64_t minStart = INT64_MAX, maxEnd = INT64_MIN;
  for (int b = 0; b < n_; ++b) {
    minStart = std::min(minStart, start_[b]);
    maxEnd = std::max(maxEnd, start_[b] + g_.block(b).span);
  }
  int64_t latency = maxEnd - minStart;
  if (latency >= bestLatency_)
    return;
  // Warm-up and cool-down are not periodic: check them on the real event
  // sequence, and keep searching if they overflow.
  if (!finitePeaks(g_, P_, start_, std::max(1, opt_.numMicroBatches),
                   opt_.memoryLimit, nullptr))
    return;
  bestLatency_ = latency;
  best_ = start_;
  if (!improving_) {
    improving_ = true;
    budget_ = std::min(budget_, nodes_ + opt_.improveBudget);
  }
}

bool PeriodSearch::dfs(int depth) {
  if (depth == n_) {
    leaf();
    return improving_ && opt_.improveBudget == 0;
  }
  const int b = a_.order[depth];
  const Block &blk = g_.block(b);
  std::vector<int64_t> &values = values_[depth];
  domain(depth, b, values);
  const bool fixed = fixedPhase_[b] >= 0;
  filterPhase(values, fixedPhase_[b], P_);
  const std::vector<int64_t> &lb = lb_[depth];
  std::vector<int64_t> &next = lb_[depth + 1];
  for (int64_t v : values) {
    if (++nodes_ > budget_) {
      budgetHit_ = true;
      return true;
    }
    if (!fixed && !reservationFree(b, v))
      continue;
    start_[b] = v;
    assigned_[b] = 1;
    if (!fixed)
      reserve(b, v, b + 1);
    if (blk.memory > 0)
      for (int d : blk.devices)
        --positiveLeft_[d];
    next = lb;
    for (int x = 0; x < n_; ++x) {
      int64_t dist = g_.minDistance(b, x);
      if (!assigned_[x] && dist != PlacementGraph::kNoPath)
        next[x] = std::max(next[x], v + dist);
    }
    bool ok = true;
    for (int d : blk.devices)
      ok = ok && fragmentationOk(d);
    for (int d = 0; ok && d < ndevs_; ++d)
      ok = memoryOk(d, next);
    if (ok && improving_)
      ok = latencyOk(next);
    bool stop = ok && dfs(depth + 1);
    if (blk.memory > 0)
      for (int d : blk.devices)
        ++positiveLeft_[d];
    if (!fixed)
      reserve(b, v, 0);
    assigned_[b] = 0;
    if (stop)
      return true;
  }
  return false;
}

// Multi-device blocks are the most constrained resource users (the same
// phase must be free on all their devices), and in a topological order they
// come late, after single-device choices that may already have made them
// impossible. Choosing their phases first, with the per-device packing check,
// removes that thrashing; the branching stays exhaustive.
bool PeriodSearch::enumeratePhases(size_t k) {
  if (k == multiDevice_.size())
    return dfs(0);
  const int b = multiDevice_[k];
  for (int64_t phase = 0; phase < P_; ++phase) {
    if (++nodes_ > budget_) {
      budgetHit_ = true;
      return true;
    }
    if (!reservationFree(b, phase))
      continue;
    reserve(b, phase, b + 1);
    fixedPhase_[b] = phase;
    bool ok = true;
    for (int d : g_.block(b).devices)
      ok = ok && fragmentationOk(d);
    bool stop = ok && enumeratePhases(k + 1);
    fixedPhase_[b] = -1;
    reserve(b, phase, 0);
    if (stop)
      return true;
  }
  return false;
}

PeriodSearchResult PeriodSearch::run() {
  start_.assign(n_, 0);
  assigned_.assign(n_, 0);
  occupancy_.assign(static_cast<size_t>(ndevs_) * P_, 0);
  positiveLeft_.assign(ndevs_, 0);
  for (int b = 0; b < n_; ++b)
    if (g_.block(b).memory > 0)
      for (int d : g_.block(b).devices)
        ++positiveLeft_[d];
  values_.assign(n_, {});
  lb_.assign(n_ + 1, std::vector<int64_t>(n_, INT64_MIN / 4));
  // Initial lower bounds: every block is at least as late as the earliest
  // start any root may take plus the dependency path from it.
  std::vector<int64_t> tmp;
  for (int depth = 0; depth < n_; ++depth) {
    int r = a_.order[depth];
    if (!a_.isRoot[r])
      continue;
    domain(depth, r, tmp);
    int64_t lo = *std::min_element(tmp.begin(), tmp.end());
    for (int x = 0; x < n_; ++x) {
      int64_t dist = g_.minDistance(r, x);
      if (dist != PlacementGraph::kNoPath)
        lb_[0][x] = std::max(lb_[0][x], lo + dist);
    }
  }
  budget_ = opt_.nodeBudget;
  fixedPhase_.assign(n_, -1);
  multiDevice_.clear();
  for (int b : a_.order)
    if (g_.block(b).devices.size() > 1)
      multiDevice_.push_back(b);
  // The first block is pinned at time 0 (translation invariance).
  if (!multiDevice_.empty() && multiDevice_.front() == a_.order.front()) {
    int b = multiDevice_.front();
    multiDevice_.erase(multiDevice_.begin());
    reserve(b, 0, b + 1);
    fixedPhase_[b] = 0;
  }
  enumeratePhases(0);

  PeriodSearchResult res;
  res.nodes = nodes_;
  if (!best_.empty()) {
    res.outcome = PeriodOutcome::Found;
    int64_t minStart = *std::min_element(best_.begin(), best_.end());
    Repetend &rep = res.repetend;
    rep.period = P_;
    rep.starts = best_;
    for (int64_t &s : rep.starts)
      s -= minStart;
    rep.latency = bestLatency_;
    rep.steadyPeak = steadyStatePeak(g_, P_, rep.starts);
  } else {
    res.outcome =
        budgetHit_ ? PeriodOutcome::BudgetExhausted : PeriodOutcome::Infeasible;
  }
  return res;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

int64_t maxPeriodFor(const PlacementGraph &g, const Analysis &a,
                     const SearchOptions &o) {
  if (o.maxPeriod > 0)
    return std::max(o.maxPeriod, g.lowerBound());
  return std::max(g.lowerBound(), a.soloLatency);
}

/// Smallest memory limit in [lo, hi] for which `feasible` holds, assuming
/// `feasible(hi)`; monotone because a schedule fitting a limit fits any
/// larger one.
template <typename Fn>
int64_t bisectMemory(int64_t lo, int64_t hi, Fn feasible) {
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (feasible(mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  return hi;
}

} // namespace

std::vector<int64_t> steadyStatePeak(const PlacementGraph &g, int64_t period,
                                     const std::vector<int64_t> &starts) {
  std::vector<int64_t> peaks(g.numDevices(), 0);
  std::vector<int64_t> diff;
  for (int d = 0; d < g.numDevices(); ++d) {
    diff.assign(period + 1, 0);
    int64_t base = 0;
    for (int b : g.blocksOn(d)) {
      int64_t m = g.block(b).memory;
      int64_t k = floorDiv(starts[b], period);
      int64_t r = starts[b] - k * period;
      base -= m * k;
      diff[0] -= m;
      diff[r] += m;
    }
    int64_t acc = 0, peak = INT64_MIN;
    for (int64_t t = 0; t < period; ++t) {
      acc += diff[t];
      peak = std::max(peak, base + acc);
    }
    peaks[d] = peak;
  }
  return peaks;
}

Schedule instantiate(const PlacementGraph &g, const Repetend &rep,
                     int numMicro) {
  Schedule s;
  s.numMicroBatches = numMicro;
  for (int i = 0; i < numMicro; ++i)
    for (int b = 0; b < g.numBlocks(); ++b)
      s.tasks.push_back({i, b, rep.starts[b] + i * rep.period});
  return s;
}

PeriodSearchResult searchPeriod(const PlacementGraph &g, int64_t period,
                                const SearchOptions &o) {
  if (period < g.lowerBound()) {
    PeriodSearchResult r;
    r.outcome = PeriodOutcome::Infeasible;
    return r;
  }
  Analysis a = analyze(g);
  return PeriodSearch(g, a, period, o).run();
}

SearchResult searchSchedule(const PlacementGraph &g, const SearchOptions &o) {
  auto t0 = std::chrono::steady_clock::now();
  if (o.numMicroBatches < 1)
    throw ScheduleError("the number of micro-batches must be >= 1");
  SearchResult res;
  res.lowerBound = g.lowerBound();
  const Analysis a = analyze(g);
  const int64_t W = g.lowerBound();
  const int64_t maxP = maxPeriodFor(g, a, o);

  bool allBelowInfeasible = true;
  for (int64_t P = W; P <= maxP; ++P) {
    PeriodSearchResult r = PeriodSearch(g, a, P, o).run();
    res.attempts.push_back({P, r.outcome, r.nodes});
    if (r.outcome == PeriodOutcome::Found) {
      res.found = true;
      res.repetend = r.repetend;
      res.provenOptimal = allBelowInfeasible;
      break;
    }
    allBelowInfeasible =
        allBelowInfeasible && r.outcome == PeriodOutcome::Infeasible;
  }

  if (res.found) {
    Schedule raw = instantiate(g, res.repetend, o.numMicroBatches);
    // Re-timing keeps each device's order, hence its memory sequence, and
    // only removes idle time; the validator has the last word all the same.
    Schedule compact = retimeAsap(g, raw);
    ValidationReport rep = validateSchedule(g, compact, o.memoryLimit);
    if (!rep.ok()) {
      compact = raw;
      rep = validateSchedule(g, compact, o.memoryLimit);
    }
    if (!rep.ok())
      throw ScheduleError("internal error: searched schedule is invalid: " +
                          rep.errors.front());
    res.schedule = std::move(compact);
    res.stats = rep.stats;
  }
  res.seconds = secondsSince(t0);

  auto t1 = std::chrono::steady_clock::now();
  SearchOptions probe = o;
  probe.improveBudget = 0;
  probe.nodeBudget = std::max<uint64_t>(1, o.nodeBudget / 4);
  auto feasibleAt = [&](int64_t P, int64_t limit) {
    probe.memoryLimit = limit;
    return PeriodSearch(g, a, P, probe).run().outcome == PeriodOutcome::Found;
  };
  // An upper bound on the memory needed at period P: any schedule found
  // without a limit, measured exactly.
  auto memoryUpperBound = [&](int64_t P) -> std::optional<int64_t> {
    probe.memoryLimit = kNoMemoryLimit;
    PeriodSearchResult r = PeriodSearch(g, a, P, probe).run();
    if (r.outcome != PeriodOutcome::Found)
      return std::nullopt;
    std::vector<int64_t> peaks;
    finitePeaks(g, P, r.repetend.starts, o.numMicroBatches, kNoMemoryLimit,
                &peaks);
    return *std::max_element(peaks.begin(), peaks.end());
  };
  bool explainW = o.explainMemory && (!res.found || res.repetend.period > W);
  if (explainW) {
    if (auto hi = memoryUpperBound(W))
      res.memoryForLowerBound =
          bisectMemory(std::min(*hi, o.memoryLimit + 1), *hi,
                       [&](int64_t m) { return feasibleAt(W, m); });
  }
  if (o.explainMemory && !res.found) {
    if (auto hi = memoryUpperBound(maxP)) {
      auto anyPeriod = [&](int64_t m) {
        for (int64_t P = W; P <= maxP; ++P)
          if (feasibleAt(P, m)) {
            res.periodAtMemoryNeeded = P;
            return true;
          }
        return false;
      };
      int64_t need =
          bisectMemory(std::min(*hi, o.memoryLimit + 1), *hi, anyPeriod);
      anyPeriod(need);
      res.memoryNeeded = need;
    }
  }
  res.explainSeconds = secondsSince(t1);

  std::ostringstream msg;
  if (res.found) {
    int64_t P = res.repetend.period;
    msg << "period P = " << P << ", lower bound W = " << W;
    if (P == W)
      msg << " (no bubble in the steady state)";
    else if (res.provenOptimal)
      msg << " (optimal: every smaller period was proven infeasible)";
    else
      msg << " (smaller periods not proven infeasible within the budget)";
    if (res.memoryForLowerBound)
      msg << "; P = W needs memory " << *res.memoryForLowerBound;
  } else {
    msg << "no schedule fits memory " << o.memoryLimit << " (periods " << W
        << ".." << maxP << " searched";
    if (!allBelowInfeasible)
      msg << ", some only up to the node budget";
    msg << ")";
    if (res.memoryNeeded)
      msg << "; the smallest memory with a schedule is " << *res.memoryNeeded
          << " (period " << res.periodAtMemoryNeeded.value_or(0) << ")";
    if (res.memoryForLowerBound)
      msg << "; P = W needs memory " << *res.memoryForLowerBound;
  }
  res.message = msg.str();
  return res;
}

} // namespace tessera::schedule
