//===- ScheduleSearch.h - Periodic schedule search under memory -*- C++ -*-===//
//
// Tessel's problem (HPCA'24): given the placement of one micro-batch, a
// per-device memory limit and a number of micro-batches, find a schedule that
// repeats a pattern (the repetend) with the smallest steady-state period P,
// plus short warm-up and cool-down. Solved here as modulo scheduling with a
// deterministic branch and bound instead of an SMT solver; see
// docs/schedule.md for the formulation and why each pruning rule is sound.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SCHEDULE_SCHEDULESEARCH_H
#define TESSERA_SCHEDULE_SCHEDULESEARCH_H

#include "tessera/Schedule/Placement.h"
#include "tessera/Schedule/Schedule.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::schedule {

struct SearchOptions {
  /// Per-device memory limit (deltas summed from 0 must stay <= it).
  int64_t memoryLimit = INT64_MAX / 4;
  /// Micro-batches of the returned schedule; warm-up and cool-down of this
  /// many micro-batches are checked against the memory limit exactly.
  int numMicroBatches = 128;
  /// Largest period tried, in the placement's time units; 0 picks the
  /// latency of one micro-batch run alone (at that period micro-batches no
  /// longer overlap).
  int64_t maxPeriod = 0;
  /// Branch-and-bound nodes of the whole search, all periods together: the
  /// bound on its work. One period gets at most a quarter of it, so that a
  /// period the budget cannot decide does not starve the larger ones; the
  /// memory explanation gets another quarter for all its searches. Budgets
  /// are node counts, not seconds, so that every run returns the same
  /// schedule. (searchPeriod() gives its one period the whole budget.)
  uint64_t nodeBudget = 16'000'000;
  /// Nodes spent after the first solution of a period to shorten one
  /// micro-batch's latency (warm-up and cool-down).
  uint64_t improveBudget = 20'000;
  /// Whole periods of extra delay tried for blocks whose delay can lower
  /// memory (positive blocks above a join); see docs/schedule.md.
  int extraPeriods = 1;
  /// When no schedule is found, or the best period is above W, also find
  /// the memory that would be needed (costs extra searches, within the
  /// explanation's share of the node budget).
  bool explainMemory = true;
  /// Bound on the lower bound W in time quanta (raised to 16 per block of
  /// the busiest device): W is the size of a block's domain of starts and
  /// of a device's reservation row at the first period tried. Spans are
  /// divided by their gcd; when W is still larger they are rounded up to a
  /// coarser time quantum (see SearchResult::timeQuantum).
  int64_t maxPeriodSteps = 128;
};

enum class PeriodOutcome {
  /// A schedule with this period exists (and was found).
  Found,
  /// Proven: no schedule with this period within the search space.
  Infeasible,
  /// The node budget ran out before a proof either way.
  BudgetExhausted,
};

const char *outcomeName(PeriodOutcome outcome);

/// The pattern every micro-batch follows: micro-batch i runs block b at
/// starts[b] + i * period.
struct Repetend {
  int64_t period = 0;
  std::vector<int64_t> starts;
  /// Last end minus first start of one micro-batch.
  int64_t latency = 0;
  /// Steady-state peak memory per device (exact for devices whose net
  /// memory per micro-batch is 0).
  std::vector<int64_t> steadyPeak;
  /// Micro-batches in flight at once (Tessel's K).
  int64_t depth() const {
    return period > 0 ? (latency + period - 1) / period : 0;
  }
};

struct PeriodSearchResult {
  PeriodOutcome outcome = PeriodOutcome::Infeasible;
  Repetend repetend;
  uint64_t nodes = 0;
};

/// Searches for a repetend of exactly this period, in the placement's own
/// time units (no quantisation), with options.nodeBudget nodes. Throws
/// Exception when the period is above both options.maxPeriodSteps and
/// the latency of one micro-batch.
PeriodSearchResult searchPeriod(const PlacementGraph &graph, int64_t period,
                                const SearchOptions &options);

struct PeriodAttempt {
  int64_t period = 0;
  PeriodOutcome outcome = PeriodOutcome::Infeasible;
  uint64_t nodes = 0;
};

struct SearchResult {
  bool found = false;
  /// W: the largest busy time per micro-batch over the devices.
  int64_t lowerBound = 0;
  Repetend repetend;
  /// All micro-batches, re-timed as early as possible and validated.
  Schedule schedule;
  ScheduleStats stats;
  /// Every period search, in order (periods in the placement's time units).
  /// The search runs in rounds of growing budgets, so a period left
  /// undecided may appear again with more nodes.
  std::vector<PeriodAttempt> attempts;
  /// True when every period below the returned one was proven infeasible
  /// (periods on the time quantum's grid, spans as quantised).
  bool provenOptimal = false;
  /// Memory limit at which a schedule with P = W exists (set when asked and
  /// the returned period is above W, or nothing was found).
  std::optional<int64_t> memoryForLowerBound;
  /// Smallest memory limit with any schedule, and its period (set when
  /// nothing was found and it could be determined).
  std::optional<int64_t> memoryNeeded;
  std::optional<int64_t> periodAtMemoryNeeded;
  /// False when the value is only an upper bound: a smaller memory was not
  /// disproved within the explanation's budget.
  bool memoryForLowerBoundExact = true;
  bool memoryNeededExact = true;
  /// Work done, deterministic (the same input gives the same counts):
  /// branch-and-bound nodes of the main search (all periods) and of the
  /// memory explanation, and the explanation's searches.
  uint64_t nodes = 0;
  uint64_t explainNodes = 0;
  uint64_t explainSearches = 0;
  /// The search's time step in the placement's units: starts and periods
  /// are multiples of it, and it works on spans ceil(span / q). The gcd of
  /// the spans (1 for most placements) unless maxPeriodSteps forced a
  /// coarser grid; then spansQuantised is set and the period is optimal
  /// only up to the quantisation (the schedule itself is exact: re-timed
  /// and validated with the real spans).
  int64_t timeQuantum = 1;
  bool spansQuantised = false;
  /// The main search's node budget ran out (a period was left undecided,
  /// or untried).
  bool budgetExhausted = false;
  /// Seconds of the main search (not of the memory explanation).
  double seconds = 0;
  double explainSeconds = 0;
  /// One line for a user: what was found, or why nothing was, and which
  /// limit stopped the search when one did.
  std::string message;
};

/// Tries P = W, W+1, ... (on the time quantum's grid) and returns the first
/// period with a schedule. Throws Exception on a request it cannot
/// represent (no micro-batch, times or memory beyond 64-bit range).
SearchResult searchSchedule(const PlacementGraph &graph,
                            const SearchOptions &options);

/// Micro-batches [0, numMicroBatches) of a repetend, not re-timed.
Schedule instantiate(const PlacementGraph &graph, const Repetend &repetend,
                     int numMicroBatches);

/// Steady-state peak memory per device of a periodic schedule: the maximum
/// over one period of the memory reached once every block has started
/// infinitely often. Exact for devices whose net memory per micro-batch is 0.
std::vector<int64_t> steadyStatePeak(const PlacementGraph &graph,
                                     int64_t period,
                                     const std::vector<int64_t> &starts);

} // namespace tessera::schedule

#endif // TESSERA_SCHEDULE_SCHEDULESEARCH_H
