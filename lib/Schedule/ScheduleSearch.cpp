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
#include <numeric>
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
/// Searches of one memory explanation at most, whatever its node budget:
/// every search has a set-up cost even when it stops at its first node.
constexpr uint64_t kMaxExplainSearches = 4096;

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}

int64_t ceilDiv(int64_t a, int64_t b) { return -floorDiv(-a, b); }

/// Largest value over the phases t in [0, P) of
///   value + sum of the deltas whose phase is <= t,
/// given (phase, delta) pairs: the steady-state memory M(t) of a device is
/// of this form, and it only changes at the phases of its blocks, so the
/// maximum is found in O(k log k) for k blocks instead of O(P).
int64_t maxOverPhases(std::vector<std::pair<int64_t, int64_t>> &events,
                      int64_t value) {
  std::sort(events.begin(), events.end());
  size_t i = 0;
  // Phase 0 counts even when no block starts there.
  while (i < events.size() && events[i].first == 0)
    value += events[i++].second;
  int64_t peak = value;
  while (i < events.size()) {
    int64_t r = events[i].first;
    while (i < events.size() && events[i].first == r)
      value += events[i++].second;
    peak = std::max(peak, value);
  }
  return peak;
}

/// Latency of one micro-batch alone, each block as early as its
/// dependencies and its devices allow: at a period of at least this latency
/// micro-batches do not overlap, so larger periods cannot help.
int64_t soloLatency(const PlacementGraph &g) {
  std::vector<int64_t> devFree(g.numDevices(), 0), end(g.numBlocks(), 0);
  int64_t latency = 0;
  for (int x : g.topoOrder()) {
    int64_t st = 0;
    for (int p : g.preds(x))
      st = std::max(st, end[p]);
    for (int d : g.block(x).devices)
      st = std::max(st, devFree[d]);
    end[x] = st + g.block(x).span;
    for (int d : g.block(x).devices)
      devFree[d] = end[x];
    latency = std::max(latency, end[x]);
  }
  return latency;
}

/// Devices that run at least one block: only they take part in the search
/// (a placement may declare idle devices).
std::vector<int> usedDevices(const PlacementGraph &g) {
  std::vector<int> used;
  for (int d = 0; d < g.numDevices(); ++d)
    if (!g.blocksOn(d).empty())
      used.push_back(d);
  return used;
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
  /// Devices with blocks, and each device's row in the reservation table
  /// (-1 for an idle device): the table has one row per used device.
  std::vector<int> used, slot;
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

  a.used = usedDevices(g);
  a.slot.assign(ndevs, -1);
  for (size_t i = 0; i < a.used.size(); ++i)
    a.slot[a.used[i]] = static_cast<int>(i);
  a.soloLatency = soloLatency(g);
  return a;
}

/// Peak memory of each device over micro-batches [0, N) of a periodic
/// schedule, exact (warm-up and cool-down included). Returns false as soon
/// as a device exceeds `limit`.
///
/// It costs O(k^2 (K + 3)) per device for k blocks and depth K, whatever N:
/// with A and B the first and last start of micro-batch 0 on the device,
/// every count of started copies is strictly between 0 and N for times in
/// [B, A + (N-1)P), so there one period later the memory is the same plus
/// the device's net delta. The memory over that middle stretch is then
/// largest in its first or its last period, and only the event times in
/// [A, B + P) and from A + (N-2)P on need evaluating.
bool finitePeaks(const PlacementGraph &g, const std::vector<int> &used,
                 int64_t period, const std::vector<int64_t> &starts,
                 int numMicro, int64_t limit, std::vector<int64_t> *peaks) {
  std::vector<std::pair<int64_t, int64_t>> blocks; // (start, delta)
  std::vector<int64_t> times;
  if (peaks)
    peaks->assign(g.numDevices(), 0);
  const int64_t P = period, N = numMicro;
  for (int d : used) {
    blocks.clear();
    for (int b : g.blocksOn(d))
      if (g.block(b).memory != 0)
        blocks.push_back({starts[b], g.block(b).memory});
    if (blocks.empty())
      continue;
    int64_t A = INT64_MAX, B = INT64_MIN;
    for (const auto &[s, m] : blocks) {
      A = std::min(A, s);
      B = std::max(B, s);
    }
    times.clear();
    const int64_t lateFrom = A + (N - 2) * P;
    for (const auto &[s, m] : blocks) {
      for (int64_t i = 0; i < N && s + i * P < B + P; ++i)
        times.push_back(s + i * P);
      for (int64_t i = std::max<int64_t>(0, ceilDiv(lateFrom - s, P)); i < N;
           ++i)
        times.push_back(s + i * P);
    }
    // Memory once every start at time t has happened: each block has
    // clamp(floor((t - s) / P) + 1, 0, N) started copies.
    int64_t peak = 0;
    for (int64_t t : times) {
      int64_t mem = 0;
      for (const auto &[s, m] : blocks)
        mem += m * std::clamp<int64_t>(floorDiv(t - s, P) + 1, 0, N);
      peak = std::max(peak, mem);
    }
    if (peaks)
      (*peaks)[d] = peak;
    if (peak > limit)
      return false;
  }
  return true;
}

/// The branch and bound for one period: at most `findBudget` nodes to a
/// first solution, then improveBudget more to shorten the latency, never
/// more than `cap` in all.
class PeriodSearch {
public:
  PeriodSearch(const PlacementGraph &g, const Analysis &a, int64_t period,
               const SearchOptions &o, uint64_t findBudget, uint64_t cap)
      : g_(g), a_(a), P_(period), opt_(o), n_(g.numBlocks()),
        ndevs_(g.numDevices()), budget_(std::min(findBudget, cap)), cap_(cap) {}

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
  /// One row of P cells per used device (Analysis::slot): 0 free, else
  /// owner block + 1.
  std::vector<int> occupancy_;
  /// Lower bounds of every start, one vector per depth (undo by depth).
  std::vector<std::vector<int64_t>> lb_;
  /// Unassigned blocks with positive memory, per device: until 0 the memory
  /// of the device has no valid lower bound (they may still move later).
  std::vector<int> positiveLeft_;
  std::vector<std::pair<int64_t, int64_t>> phases_;
  std::vector<std::vector<int64_t>> values_;

  uint64_t nodes_ = 0, budget_ = 0, cap_ = 0;
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
    const int *row = &occupancy_[static_cast<size_t>(a_.slot[d]) * P_];
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
    int *row = &occupancy_[static_cast<size_t>(a_.slot[d]) * P_];
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
  const int *row = &occupancy_[static_cast<size_t>(a_.slot[d]) * P_];
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
  phases_.clear();
  int64_t base = 0;
  for (int b : g_.blocksOn(d)) {
    int64_t m = g_.block(b).memory;
    if (m == 0)
      continue;
    int64_t s = assigned_[b] ? start_[b] : lb[b];
    int64_t k = floorDiv(s, P_);
    int64_t r = s - k * P_;
    // Phases t < r have not yet seen this micro-batch's start.
    base -= m * k + m;
    phases_.push_back({r, m});
  }
  return maxOverPhases(phases_, base) <= opt_.memoryLimit;
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
  if (!finitePeaks(g_, a_.used, P_, start_, std::max(1, opt_.numMicroBatches),
                   opt_.memoryLimit, nullptr))
    return;
  bestLatency_ = latency;
  best_ = start_;
  if (!improving_) {
    improving_ = true;
    // The improvement phase is not cut by a small find budget (so that the
    // schedule returned does not depend on when it was found), only by the
    // cap.
    budget_ = std::min(cap_, nodes_ + opt_.improveBudget);
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
    for (size_t i = 0; ok && i < a_.used.size(); ++i)
      ok = memoryOk(a_.used[i], next);
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
  occupancy_.assign(a_.used.size() * static_cast<size_t>(P_), 0);
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
  // The node that found the budget spent was not explored.
  res.nodes = std::min(nodes_, budget_);
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

/// Largest period tried, in the graph's time units (userMax: 0 for none).
int64_t maxPeriodFor(const PlacementGraph &g, int64_t solo, int64_t userMax) {
  if (userMax > 0)
    return std::max(userMax, g.lowerBound());
  return std::max(g.lowerBound(), solo);
}

/// Times and memory of N micro-batches must stay far inside 64 bits (the
/// search adds and multiplies them, and treats INT64_MAX / 4 as "no
/// limit"); refuse what could overflow instead of computing garbage.
void checkRange(const PlacementGraph &g, int numMicro) {
  const __int128 reach = static_cast<__int128>(numMicro) +
                         4 * static_cast<__int128>(g.numBlocks()) + 4;
  __int128 spans = 0;
  for (const Block &b : g.placement().blocks)
    spans += b.span;
  if (spans * reach > kNoMemoryLimit)
    throw Exception(
        "the spans are too large to schedule " + std::to_string(numMicro) +
        " micro-batches: times could exceed 2^61 steps; use a coarser time "
        "unit");
  for (int d = 0; d < g.numDevices(); ++d) {
    __int128 held = 0;
    for (int b : g.blocksOn(d)) {
      int64_t m = g.block(b).memory;
      held += m < 0 ? -static_cast<__int128>(m) : m;
    }
    if (held * reach > kNoMemoryLimit)
      throw Exception("the memory deltas of device " + std::to_string(d) +
                      " are too large to schedule " + std::to_string(numMicro) +
                      " micro-batches: memory could exceed 2^61; use a "
                      "coarser memory unit");
  }
}

/// The placement on a coarser time grid: spans ceil(span / q). A schedule
/// of it, scaled by q, is one of the real placement: every block only gets
/// shorter, so dependencies and reservations still hold, and the start
/// order, hence every device's memory, is the same.
Placement quantise(const Placement &placement, int64_t q) {
  Placement out = placement;
  for (Block &b : out.blocks)
    b.span = ceilDiv(b.span, q);
  return out;
}

/// The search's time grid (SearchResult::timeQuantum).
struct TimeGrid {
  int64_t q = 1;
  bool rounded = false;
  /// The placement with spans in quanta, when q > 1.
  std::optional<PlacementGraph> graph;
};

// The cost of one period's search (its domains, reservation table and
// packing checks) grows with the period in time steps, so spans of 10^6
// would make it a million times slower for the same problem. Dividing the
// spans by their gcd makes the search independent of the time unit; when
// the lower bound W is still more than the bound in quanta, the spans are
// rounded up to a coarser quantum, which bounds the domains whatever the
// magnitudes (the periods above W grow with the blocks, not with the spans:
// at most the latency of one micro-batch, a sum of spans). The bound is
// maxPeriodSteps, or 16 quanta per block of the busiest device when that is
// more: each block rounds up by less than a quantum, so a device loses at
// most about 1/8 of its time to the rounding.
TimeGrid chooseGrid(const PlacementGraph &g, const SearchOptions &o) {
  TimeGrid grid;
  int64_t gcd = 0, maxSpan = 1;
  for (const Block &b : g.placement().blocks) {
    gcd = std::gcd(gcd, b.span);
    maxSpan = std::max(maxSpan, b.span);
  }
  gcd = std::max<int64_t>(gcd, 1);
  size_t blocksPerDevice = 0;
  for (int d = 0; d < g.numDevices(); ++d)
    blocksPerDevice = std::max(blocksPerDevice, g.blocksOn(d).size());
  const int64_t bound = std::max<int64_t>(
      {1, o.maxPeriodSteps, 16 * static_cast<int64_t>(blocksPerDevice)});
  auto use = [&](int64_t q) {
    grid.q = q;
    if (q > 1)
      grid.graph.emplace(quantise(g.placement(), q));
    else
      grid.graph.reset();
    return (grid.graph ? *grid.graph : g).lowerBound();
  };
  int64_t steps = use(gcd);
  if (steps <= bound)
    return grid;
  // Coarsen by growing factors (x 5/4) until the bound holds, or until every
  // block is one quantum long: then W is at most the number of blocks and
  // cannot shrink any further.
  int64_t f = std::max<int64_t>(2, std::min(maxSpan, ceilDiv(steps, bound)));
  for (;; f = std::max(f + 1, f / 4 * 5)) {
    int64_t q = f >= maxSpan / gcd ? maxSpan : gcd * f;
    steps = use(q);
    if (steps <= bound || q == maxSpan)
      break;
  }
  for (const Block &b : g.placement().blocks)
    grid.rounded = grid.rounded || b.span % grid.q != 0;
  return grid;
}

/// Result of scanPeriods.
struct PeriodScan {
  /// The smallest period found (0: none), and its search.
  int64_t period = 0;
  PeriodSearchResult result;
  /// Per period from W: proven infeasible.
  std::vector<char> infeasible;
  /// The largest period searched at least once.
  int64_t lastTried = 0;
  /// The caller's budget ran out.
  bool stopped = false;

  /// Every period below the one found (all, when none was) is proven
  /// infeasible.
  bool proven(int64_t W) const {
    for (size_t i = 0; i < infeasible.size(); ++i)
      if (!infeasible[i] &&
          (period == 0 || W + static_cast<int64_t>(i) < period))
        return false;
    return true;
  }
};

/// Looks for the smallest period in [W, maxP] with a schedule, in rounds of
/// growing per-period budgets (x4, from cap/1024 up to cap). Each round
/// retries, in increasing order, the undecided periods below the best one
/// found and stops at the first one found. A period the budget cannot decide
/// thus never starves the larger ones (the first round tries them all
/// cheaply), and the answer is that of a plain ascending scan with `cap`
/// nodes per period whenever the caller's budget allows it. `search(P, b)`
/// runs one search with at most b nodes, or returns nothing once the
/// caller's budget is spent. With `anyPeriod`, the periods are tried from
/// the largest down and the first one found ends the scan (scanAnyPeriod).
template <typename Fn>
PeriodScan scanPeriodsIn(int64_t W, int64_t maxP, uint64_t cap, bool anyPeriod,
                         Fn search) {
  PeriodScan scan;
  scan.infeasible.assign(static_cast<size_t>(maxP - W + 1), 0);
  scan.lastTried = anyPeriod ? maxP : W - 1;
  int64_t best = maxP + 1;
  for (uint64_t round = std::max<uint64_t>(1, cap >> 10);; round *= 4) {
    round = std::min(round, cap);
    bool undecided = false;
    for (int64_t k = 0; k < best - W; ++k) {
      const int64_t P = anyPeriod ? maxP - k : W + k;
      if (scan.infeasible[P - W])
        continue;
      std::optional<PeriodSearchResult> r = search(P, round);
      if (!r) {
        scan.stopped = true;
        return scan;
      }
      if (!anyPeriod)
        scan.lastTried = std::max(scan.lastTried, P);
      if (r->outcome == PeriodOutcome::Found) {
        scan.period = P;
        scan.result = std::move(*r);
        if (anyPeriod)
          return scan;
        best = P;
        break;
      }
      scan.infeasible[P - W] = r->outcome == PeriodOutcome::Infeasible;
      undecided = undecided || !scan.infeasible[P - W];
    }
    if (!undecided || round == cap)
      return scan;
  }
}

template <typename Fn>
PeriodScan scanPeriods(int64_t W, int64_t maxP, uint64_t cap, Fn search) {
  return scanPeriodsIn(W, maxP, cap, /*anyPeriod=*/false, std::move(search));
}

/// Like scanPeriods, but for any period with a schedule: largest first
/// (they overlap micro-batches least, so they need the least memory), and
/// the first one found is the answer.
template <typename Fn>
PeriodScan scanAnyPeriod(int64_t W, int64_t maxP, uint64_t cap, Fn search) {
  return scanPeriodsIn(W, maxP, cap, /*anyPeriod=*/true, std::move(search));
}

/// The searches behind a memory explanation, all drawing on one node budget
/// (and at most kMaxExplainSearches of them).
class Explainer {
public:
  Explainer(const PlacementGraph &g, const Analysis &a, const SearchOptions &o,
            uint64_t budget)
      : g_(g), a_(a), probe_(o), left_(budget),
        perSearch_(std::max<uint64_t>(1, budget / 4)) {
    probe_.improveBudget = 0;
  }

  bool spent() const { return left_ == 0 || searches_ >= kMaxExplainSearches; }

  /// The most one of its searches may take.
  uint64_t perSearch() const { return perSearch_; }

  /// One search of period P within `limit` and at most `budget` nodes;
  /// nothing once the explanation's budget is spent.
  std::optional<PeriodSearchResult> search(int64_t P, int64_t limit,
                                           uint64_t budget) {
    if (spent())
      return std::nullopt;
    probe_.memoryLimit = limit;
    budget = std::min(budget, left_);
    PeriodSearchResult r =
        PeriodSearch(g_, a_, P, probe_, budget, budget).run();
    ++searches_;
    nodes_ += r.nodes;
    left_ -= std::min(left_, r.nodes);
    return r;
  }

  /// Exact peak over the N micro-batches of a repetend found at period P.
  int64_t peakOf(int64_t P, const PeriodSearchResult &r) const {
    std::vector<int64_t> peaks;
    finitePeaks(g_, a_.used, P, r.repetend.starts, probe_.numMicroBatches,
                kNoMemoryLimit, &peaks);
    return *std::max_element(peaks.begin(), peaks.end());
  }

  /// A schedule with period P within `limit`: its exact peak (at most
  /// `limit`), or nothing when there is none or none was found within the
  /// budget (then the explanation is inexact).
  std::optional<int64_t> peakAt(int64_t P, int64_t limit) {
    std::optional<PeriodSearchResult> r = search(P, limit, perSearch_);
    if (!r || r->outcome == PeriodOutcome::BudgetExhausted)
      exact_ = false;
    if (!r || r->outcome != PeriodOutcome::Found)
      return std::nullopt;
    return peakOf(P, *r);
  }

  void markInexact() { exact_ = false; }
  bool exact() const { return exact_; }
  uint64_t nodes() const { return nodes_; }
  uint64_t searches() const { return searches_; }

private:
  const PlacementGraph &g_;
  const Analysis &a_;
  SearchOptions probe_;
  uint64_t left_, perSearch_;
  uint64_t nodes_ = 0, searches_ = 0;
  bool exact_ = true;
};

/// Smallest memory limit in [lo, hi] with a schedule, given that hi has one.
/// Only multiples of `unit` can matter: a peak is 0 or a sum of deltas,
/// hence a multiple of their gcd. `witness(m)` returns the exact peak of a
/// schedule within m; the search jumps down to it, skipping the limits in
/// between. At most log2((hi - lo) / unit) + 1 probes, whatever the
/// magnitude of the memory values, and fewer when the budget runs out.
template <typename Fn>
int64_t bisectMemory(int64_t lo, int64_t hi, int64_t unit, Explainer &ex,
                     Fn witness) {
  lo = ceilDiv(lo, unit) * unit;
  while (lo < hi && !ex.spent()) {
    int64_t mid = lo + (hi - lo) / unit / 2 * unit;
    if (std::optional<int64_t> peak = witness(mid))
      hi = std::min(mid, *peak);
    else
      lo = mid + unit;
  }
  if (lo < hi)
    ex.markInexact();
  return hi;
}

/// Maps a repetend found on the quantised grid back to the placement's
/// time units (latency and steady peaks with the real spans).
Repetend toPlacementUnits(const PlacementGraph &g, const Repetend &r,
                          int64_t q) {
  Repetend out;
  out.period = r.period * q;
  out.starts = r.starts;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (size_t b = 0; b < out.starts.size(); ++b) {
    out.starts[b] *= q;
    first = std::min(first, out.starts[b]);
    last = std::max(last, out.starts[b] + g.block(static_cast<int>(b)).span);
  }
  out.latency = out.starts.empty() ? 0 : last - first;
  out.steadyPeak = steadyStatePeak(g, out.period, out.starts);
  return out;
}

} // namespace

std::vector<int64_t> steadyStatePeak(const PlacementGraph &g, int64_t period,
                                     const std::vector<int64_t> &starts) {
  std::vector<int64_t> peaks(g.numDevices(), 0);
  std::vector<std::pair<int64_t, int64_t>> phases;
  for (int d = 0; d < g.numDevices(); ++d) {
    phases.clear();
    int64_t base = 0;
    for (int b : g.blocksOn(d)) {
      int64_t m = g.block(b).memory;
      int64_t k = floorDiv(starts[b], period);
      int64_t r = starts[b] - k * period;
      base -= m * k + m;
      phases.push_back({r, m});
    }
    peaks[d] = maxOverPhases(phases, base);
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
  checkRange(g, std::max(1, o.numMicroBatches));
  Analysis a = analyze(g);
  if (period > std::max(o.maxPeriodSteps, soloLatency(g)))
    throw Exception(
        "period " + std::to_string(period) + " is above maxPeriodSteps (" +
        std::to_string(o.maxPeriodSteps) +
        ") and the latency of one micro-batch; searchSchedule quantises such "
        "placements");
  SearchOptions so = o;
  so.memoryLimit = std::min(o.memoryLimit, kNoMemoryLimit);
  return PeriodSearch(g, a, period, so, o.nodeBudget, o.nodeBudget).run();
}

SearchResult searchSchedule(const PlacementGraph &g0, const SearchOptions &o) {
  auto t0 = std::chrono::steady_clock::now();
  if (o.numMicroBatches < 1)
    throw Exception("the number of micro-batches must be >= 1");
  checkRange(g0, o.numMicroBatches);
  SearchResult res;
  res.lowerBound = g0.lowerBound();
  // The search runs on the (possibly) quantised placement `g`, in quanta;
  // everything reported is converted back to the placement's units.
  TimeGrid grid = chooseGrid(g0, o);
  const PlacementGraph &g = grid.graph ? *grid.graph : g0;
  const int64_t q = grid.q;
  res.timeQuantum = q;
  res.spansQuantised = grid.rounded;
  const Analysis a = analyze(g);
  const int64_t W = g.lowerBound();
  const int64_t maxP =
      maxPeriodFor(g, a.soloLatency,
                   o.maxPeriod > 0 ? std::max<int64_t>(1, o.maxPeriod / q) : 0);
  const int N = o.numMicroBatches;
  SearchOptions so = o;
  // checkRange keeps every reachable memory below kNoMemoryLimit, so a
  // larger limit means the same and cannot overflow.
  so.memoryLimit = std::min(o.memoryLimit, kNoMemoryLimit);
  const uint64_t budget = std::max<uint64_t>(1, o.nodeBudget);
  // The most one period's search may take.
  const uint64_t perPeriod = std::max<uint64_t>(1, budget / 4);

  // A device whose deltas sum to net > 0 per micro-batch ends N micro-batches
  // at N * net, whatever the schedule: over the limit, no search can help.
  int64_t unavoidable = 0;
  int growing = -1;
  for (int d : a.used) {
    int64_t end = static_cast<int64_t>(N) * g.netMemory(d);
    if (end > unavoidable) {
      unavoidable = end;
      growing = d;
    }
  }
  const bool hopeless = unavoidable > so.memoryLimit;
  // The first start on a device, in any schedule, is a block of micro-batch
  // 0 with no ancestor on that device, alone at its time: the peak is at
  // least the smallest delta among those blocks. Below it every period is
  // infeasible without a search (a limit of 0 with forwards that hold
  // memory, typically).
  int64_t firstStart = 0;
  for (int d : a.used) {
    int64_t least = INT64_MAX;
    for (int b : g.blocksOn(d)) {
      bool source = true;
      for (int x : g.blocksOn(d))
        source = source &&
                 (x == b || g.minDistance(x, b) == PlacementGraph::kNoPath);
      if (source)
        least = std::min(least, g.block(b).memory);
    }
    firstStart = std::max(firstStart, least);
  }
  const bool belowFirstStart = firstStart > so.memoryLimit;
  if (!hopeless && belowFirstStart)
    for (int64_t P = W; P <= maxP; ++P)
      res.attempts.push_back({P * q, PeriodOutcome::Infeasible, 0});

  PeriodScan scan;
  if (!hopeless && !belowFirstStart)
    scan = scanPeriods(
        W, maxP, perPeriod,
        [&](int64_t P, uint64_t round) -> std::optional<PeriodSearchResult> {
          if (res.nodes >= budget)
            return std::nullopt;
          PeriodSearchResult r =
              PeriodSearch(g, a, P, so, round, budget - res.nodes).run();
          res.nodes += r.nodes;
          res.attempts.push_back({P * q, r.outcome, r.nodes});
          return r;
        });
  else if (belowFirstStart)
    scan.lastTried = maxP;
  res.budgetExhausted = scan.stopped;
  const int64_t lastTried = scan.lastTried;
  const bool allBelowInfeasible = belowFirstStart || scan.proven(W);
  if (scan.period) {
    res.found = true;
    res.repetend = toPlacementUnits(g0, scan.result.repetend, q);
    res.provenOptimal = allBelowInfeasible;
  }

  if (res.found) {
    Schedule raw = instantiate(g0, res.repetend, N);
    // Re-timing keeps each device's order, hence its memory sequence, and
    // only removes idle time (and, on a quantised grid, the rounding); the
    // validator has the last word all the same.
    Schedule compact = retimeAsap(g0, raw);
    ValidationReport rep = validateSchedule(g0, compact, o.memoryLimit);
    if (!rep.ok()) {
      compact = raw;
      rep = validateSchedule(g0, compact, o.memoryLimit);
    }
    if (!rep.ok())
      throw Exception("internal error: searched schedule is invalid: " +
                      rep.errors.front());
    res.schedule = std::move(compact);
    res.stats = rep.stats;
  }
  res.seconds = secondsSince(t0);

  // The memory explanation: bisections whose probes are period searches,
  // all within a quarter of the node budget.
  auto t1 = std::chrono::steady_clock::now();
  int64_t unit = 0;
  for (const Block &b : g.placement().blocks)
    unit = std::gcd(unit, b.memory < 0 ? -b.memory : b.memory);
  unit = std::max<int64_t>(unit, 1);
  // Below the limit nothing fits, and below the unavoidable memory nothing
  // can.
  const int64_t lo = std::max({unavoidable, firstStart, so.memoryLimit + 1});
  const bool explainW =
      o.explainMemory && (!res.found || res.repetend.period > W * q);
  const bool explainNeed = o.explainMemory && !res.found;
  // When nothing fits, the smallest memory with any schedule comes first
  // (it is what a user needs) with half of the explanation's budget, so
  // that the question about W gets the rest.
  const uint64_t explainBudget = std::max<uint64_t>(1, budget / 4);
  Explainer needEx(g, a, so,
                   explainW ? std::max<uint64_t>(1, explainBudget / 2)
                            : explainBudget);
  if (explainNeed) {
    if (std::optional<int64_t> hi = needEx.peakAt(maxP, kNoMemoryLimit)) {
      // Whether some period has a schedule within m (for the bisection),
      // and the first period that has one (for the report).
      auto anyPeriod = [&](int64_t m) -> std::optional<int64_t> {
        PeriodScan sc = scanAnyPeriod(W, maxP, needEx.perSearch(),
                                      [&](int64_t P, uint64_t round) {
                                        return needEx.search(P, m, round);
                                      });
        if (!sc.period) {
          if (sc.stopped || !sc.proven(W))
            needEx.markInexact();
          return std::nullopt;
        }
        return needEx.peakOf(sc.period, sc.result);
      };
      int64_t need = bisectMemory(lo, *hi, unit, needEx, anyPeriod);
      PeriodScan first = scanPeriods(W, maxP, needEx.perSearch(),
                                     [&](int64_t P, uint64_t round) {
                                       return needEx.search(P, need, round);
                                     });
      if (first.stopped || !first.proven(W))
        needEx.markInexact();
      res.memoryNeeded = need;
      res.periodAtMemoryNeeded = (first.period ? first.period : maxP) * q;
    }
  }
  Explainer wEx(
      g, a, so,
      std::max<uint64_t>(1, explainBudget -
                                std::min(explainBudget, needEx.nodes())));
  if (explainW) {
    if (std::optional<int64_t> hi = wEx.peakAt(W, kNoMemoryLimit))
      res.memoryForLowerBound = bisectMemory(
          lo, *hi, unit, wEx, [&](int64_t m) { return wEx.peakAt(W, m); });
  }
  res.explainNodes = needEx.nodes() + wEx.nodes();
  res.explainSearches = needEx.searches() + wEx.searches();
  res.memoryNeededExact = needEx.exact();
  res.memoryForLowerBoundExact = wEx.exact();
  res.explainSeconds = secondsSince(t1);

  std::ostringstream msg;
  auto atMost = [](bool exact) { return exact ? "" : "at most "; };
  if (res.found) {
    int64_t P = res.repetend.period;
    msg << "period P = " << P << ", lower bound W = " << res.lowerBound;
    if (P == res.lowerBound)
      msg << " (no bubble in the steady state)";
    else if (P == W * q)
      msg << " (no bubble on the quantised grid)";
    else if (res.provenOptimal)
      msg << " (optimal: every smaller period was proven infeasible)";
    else
      msg << " (smaller periods not proven infeasible within the budget)";
    if (res.memoryForLowerBound)
      msg << "; P = W needs memory " << atMost(res.memoryForLowerBoundExact)
          << *res.memoryForLowerBound;
  } else {
    if (hopeless) {
      msg << "no schedule fits memory " << o.memoryLimit << ": the memory of "
          << "device " << growing << " grows by " << g.netMemory(growing)
          << " per micro-batch (its blocks hold more than they free), so " << N
          << " micro-batches end at " << unavoidable
          << " whatever the schedule";
    } else if (allBelowInfeasible) {
      msg << "no schedule fits memory " << o.memoryLimit << " (periods "
          << W * q << ".." << maxP * q << " searched)";
    } else {
      msg << "no schedule found for memory " << o.memoryLimit
          << " within the node budget of " << budget << " (periods " << W * q
          << ".." << lastTried * q << " searched, some only up to the budget";
      if (lastTried < maxP)
        msg << "; " << (lastTried + 1) * q << ".." << maxP * q << " not tried";
      msg << "); raise the node budget (--node-budget)";
    }
    if (res.memoryNeeded)
      msg << "; the smallest memory with a schedule is "
          << atMost(res.memoryNeededExact) << *res.memoryNeeded << " (period "
          << res.periodAtMemoryNeeded.value_or(0) << ")";
    if (res.memoryForLowerBound)
      msg << "; P = W needs memory " << atMost(res.memoryForLowerBoundExact)
          << *res.memoryForLowerBound;
  }
  if ((explainNeed && !needEx.exact()) || (explainW && !wEx.exact()))
    msg << "; the memory explanation ran out of its node budget ("
        << res.explainNodes << " nodes in " << res.explainSearches
        << " searches)";
  if (grid.rounded)
    msg << "; spans quantised by " << q
        << ": period optimal up to the quantisation";
  res.message = msg.str();
  return res;
}

} // namespace tessera::schedule
