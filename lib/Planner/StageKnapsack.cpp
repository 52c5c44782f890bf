//===- StageKnapsack.cpp - Per-stage choice of node configurations --------===//

#include "tessera/Planner/StageKnapsack.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tessera::planner {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Items that save the same number of bytes form a class. Exchange argument:
/// if an optimal cover takes k items of a class, it may as well take the k
/// cheapest, so the search branches on a count per class instead of on each
/// item. BERT's profiled layers differ in time by a few microseconds but save
/// identical memory; per-item branching would explore all their subsets.
struct WeightClass {
  double weight;
  std::vector<int> members;   ///< item indices, cheapest first
  std::vector<double> prefix; ///< prefix[k]: cost of the k cheapest
};

class CoverSearch {
public:
  CoverSearch(const std::vector<CoverItem> &items, double need,
              size_t nodeLimit, double incumbent)
      : need(need), nodeLimit(nodeLimit), best(incumbent) {
    std::vector<int> order(items.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      if (items[a].weight != items[b].weight)
        return items[a].weight > items[b].weight;
      return items[a].cost != items[b].cost ? items[a].cost < items[b].cost
                                            : a < b;
    });
    for (int i : order) {
      if (classes.empty() || classes.back().weight != items[i].weight)
        classes.push_back(WeightClass{items[i].weight, {}, {0.0}});
      classes.back().members.push_back(i);
      classes.back().prefix.push_back(classes.back().prefix.back() +
                                      items[i].cost);
    }
    // Branch on the classes with the cheapest bytes first, so that the
    // first leaf is the greedy answer and the bound prunes early.
    std::sort(classes.begin(), classes.end(),
              [&](const WeightClass &a, const WeightClass &b) {
                double ra = items[a.members[0]].cost / a.weight;
                double rb = items[b.members[0]].cost / b.weight;
                return ra != rb ? ra < rb : a.weight > b.weight;
              });
    // All items by cost per byte, tagged with their class position, for the
    // LP bound over the classes not yet decided.
    for (size_t g = 0; g < classes.size(); ++g)
      for (int i : classes[g].members)
        byRatio.push_back(
            Ratio{items[i].cost, items[i].weight, static_cast<int>(g)});
    std::stable_sort(byRatio.begin(), byRatio.end(),
                     [](const Ratio &a, const Ratio &b) {
                       return a.cost / a.weight < b.cost / b.weight;
                     });
    suffixWeight.assign(classes.size() + 1, 0);
    for (size_t g = classes.size(); g-- > 0;)
      suffixWeight[g] =
          suffixWeight[g + 1] + classes[g].weight * classes[g].members.size();
    counts.assign(classes.size(), 0);
  }

  void run() { dfs(0, 0, need); }

  bool foundBetter() const { return found; }
  bool complete() const { return !aborted; }
  double bestCost() const { return best; }

  /// The item indices of the best cover found.
  std::vector<int> bestItems() const {
    std::vector<int> out;
    for (size_t g = 0; g < classes.size(); ++g)
      for (int k = 0; k < bestCounts[g]; ++k)
        out.push_back(classes[g].members[k]);
    return out;
  }

private:
  struct Ratio {
    double cost, weight;
    int cls;
  };

  /// LP relaxation over the classes from \p g on: a valid lower bound on
  /// the cost of covering \p remaining with them.
  double lowerBound(size_t g, double remaining) const {
    double bound = 0;
    for (const Ratio &r : byRatio) {
      if (r.cls < static_cast<int>(g))
        continue;
      if (r.weight >= remaining)
        return bound + r.cost * (remaining / r.weight);
      bound += r.cost;
      remaining -= r.weight;
    }
    return kInf;
  }

  void dfs(size_t g, double cost, double remaining) {
    // Covered: the same nanobyte tolerance as the greedy.
    if (remaining < 1e-9) {
      if (cost < best) {
        best = cost;
        bestCounts = counts;
        std::fill(bestCounts.begin() + g, bestCounts.end(), 0);
        found = true;
      }
      return;
    }
    if (g == classes.size() || suffixWeight[g] < remaining)
      return;
    if (++nodes > nodeLimit) {
      aborted = true;
      return;
    }
    // Relative slack so that a bound equal to the incumbent up to rounding
    // does not keep the search going.
    if (cost + lowerBound(g, remaining) >= best * (1 - 1e-12))
      return;
    const WeightClass &c = classes[g];
    int most = static_cast<int>(
        std::min<double>(c.members.size(), std::ceil(remaining / c.weight)));
    for (int k = most; k >= 0 && !aborted; --k) {
      counts[g] = k;
      dfs(g + 1, cost + c.prefix[k], remaining - k * c.weight);
    }
    counts[g] = 0;
  }

  std::vector<WeightClass> classes;
  std::vector<Ratio> byRatio;
  double need;
  size_t nodeLimit;
  size_t nodes = 0;
  bool aborted = false;
  bool found = false;
  double best;
  std::vector<int> counts, bestCounts;
  std::vector<double> suffixWeight;
};

std::vector<int> ratioOrder(const std::vector<CoverItem> &items) {
  std::vector<int> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  // Cheapest time per byte saved first; Piper sorts (ratio, node) tuples,
  // and a stable sort by ratio gives the same order.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return items[a].cost / items[a].weight < items[b].cost / items[b].weight;
  });
  return order;
}

} // namespace

CoverResult solveCoverGreedy(const std::vector<CoverItem> &items, double need) {
  CoverResult r;
  r.taken.assign(items.size(), 0);
  double total = 0;
  for (const CoverItem &it : items)
    total += it.weight;
  if (total < need)
    return r; // infeasible
  double remaining = need;
  for (int i : ratioOrder(items)) {
    if (remaining < 1e-9)
      break;
    r.taken[i] = 1;
    r.cost += items[i].cost;
    remaining -= items[i].weight;
  }
  r.feasible = true;
  return r;
}

CoverResult solveCoverExact(const std::vector<CoverItem> &items, double need,
                            size_t nodeLimit) {
  CoverResult greedy = solveCoverGreedy(items, need);
  if (!greedy.feasible || need <= 0)
    return greedy;
  CoverSearch search(items, need, nodeLimit, greedy.cost);
  search.run();
  CoverResult r;
  r.feasible = true;
  r.exact = search.complete();
  if (!search.foundBetter()) {
    greedy.exact = r.exact;
    return greedy;
  }
  r.cost = search.bestCost();
  r.taken.assign(items.size(), 0);
  for (int i : search.bestItems())
    r.taken[i] = 1;
  return r;
}

StageChoice chooseStageConfigs(const std::vector<NodeOptions> &nodes, double y,
                               double memoryLimit, KnapsackMode mode,
                               size_t nodeLimit) {
  StageChoice r;
  r.choice.assign(nodes.size(), 0);
  // Start from the fastest option everywhere (ties: the smaller one).
  double memory = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeOptions &n = nodes[i];
    int b = 0;
    if (n.count == 2) {
      double m0 = n.memA[0] * y + n.memB[0], m1 = n.memA[1] * y + n.memB[1];
      if (n.cost[1] < n.cost[0] || (n.cost[1] == n.cost[0] && m1 < m0))
        b = 1;
    }
    r.choice[i] = static_cast<uint8_t>(b);
    r.cost += n.cost[b];
    memory += n.memA[b] * y + n.memB[b];
  }
  if (memory <= memoryLimit) {
    r.feasible = true;
    r.memory = memory;
    return r;
  }
  std::vector<CoverItem> items;
  std::vector<int> owner;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeOptions &n = nodes[i];
    if (n.count < 2)
      continue;
    int b = r.choice[i], o = 1 - b;
    double saving = (n.memA[b] * y + n.memB[b]) - (n.memA[o] * y + n.memB[o]);
    // Piper ignores savings below a nanobyte; so do we, for identical answers.
    if (saving > 1e-9) {
      items.push_back(CoverItem{n.cost[o] - n.cost[b], saving});
      owner.push_back(static_cast<int>(i));
    }
  }
  double need = memory - memoryLimit;
  CoverResult cover = mode == KnapsackMode::Exact
                          ? solveCoverExact(items, need, nodeLimit)
                          : solveCoverGreedy(items, need);
  if (!cover.feasible) {
    r.feasible = false;
    r.cost = kInf;
    return r;
  }
  r.feasible = true;
  r.exact = cover.exact;
  for (size_t k = 0; k < items.size(); ++k)
    if (cover.taken[k]) {
      r.choice[owner[k]] = static_cast<uint8_t>(1 - r.choice[owner[k]]);
      r.cost += items[k].cost;
      memory -= items[k].weight;
    }
  r.memory = memory;
  return r;
}

} // namespace tessera::planner
