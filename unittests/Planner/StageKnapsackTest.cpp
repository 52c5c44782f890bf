//===- StageKnapsackTest.cpp - Exact per-stage configuration choice -------===//

#include "tessera/Planner/StageKnapsack.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

using namespace tessera::planner;

namespace {

double bruteForceCover(const std::vector<CoverItem> &items, double need) {
  double best = std::numeric_limits<double>::infinity();
  for (unsigned mask = 0; mask < (1u << items.size()); ++mask) {
    double c = 0, w = 0;
    for (size_t i = 0; i < items.size(); ++i)
      if (mask >> i & 1) {
        c += items[i].cost;
        w += items[i].weight;
      }
    if (need - w < 1e-9)
      best = std::min(best, c);
  }
  return best;
}

TEST(StageKnapsack, GreedyCanBeBeatenAndExactIsOptimal) {
  // Cheapest per byte first takes item 0 (1 per byte), then item 2 (1.05
  // per byte) to cover the rest; the big item 2 alone is cheaper.
  std::vector<CoverItem> items = {{1, 1}, {1.9, 1}, {10.5, 10}};
  CoverResult greedy = solveCoverGreedy(items, 10);
  CoverResult exact = solveCoverExact(items, 10);
  EXPECT_DOUBLE_EQ(greedy.cost, 1 + 10.5);
  EXPECT_DOUBLE_EQ(exact.cost, 10.5);
  EXPECT_TRUE(exact.exact);
  EXPECT_EQ(exact.taken, (std::vector<uint8_t>{0, 0, 1}));
}

TEST(StageKnapsack, ExactMatchesEnumerationOnRandomInstances) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> U(0, 1);
  for (int trial = 0; trial < 400; ++trial) {
    int n = 1 + trial % 14;
    std::vector<CoverItem> items;
    double total = 0;
    for (int i = 0; i < n; ++i) {
      // Few distinct weights half of the time, like profiled layers.
      double w = trial % 2 ? 1 + std::floor(3 * U(rng)) : 0.1 + U(rng);
      items.push_back({U(rng), w});
      total += w;
    }
    double need = total * U(rng);
    CoverResult exact = solveCoverExact(items, need);
    CoverResult greedy = solveCoverGreedy(items, need);
    double want = bruteForceCover(items, need);
    ASSERT_TRUE(exact.feasible);
    EXPECT_NEAR(exact.cost, want, 1e-12) << "trial " << trial;
    EXPECT_LE(exact.cost, greedy.cost + 1e-15);
    double covered = 0, cost = 0;
    for (int i = 0; i < n; ++i)
      if (exact.taken[i]) {
        covered += items[i].weight;
        cost += items[i].cost;
      }
    EXPECT_LT(need - covered, 1e-9);
    EXPECT_NEAR(cost, exact.cost, 1e-12);
  }
}

TEST(StageKnapsack, ManyNearlyIdenticalLayersStayExactAndFast) {
  // 32 layers saving the same bytes at slightly different costs, as in
  // BERT's profile: only the count matters, the cheapest are taken.
  std::vector<CoverItem> items;
  for (int i = 0; i < 32; ++i)
    items.push_back({0.0036 + 1e-6 * ((i * 37) % 32), 1.6e8});
  CoverResult r = solveCoverExact(items, 1.5e9, 1000);
  EXPECT_TRUE(r.exact);
  double want = 0;
  std::vector<double> costs;
  for (const CoverItem &it : items)
    costs.push_back(it.cost);
  std::sort(costs.begin(), costs.end());
  for (int i = 0; i < 10; ++i) // ceil(1.5e9 / 1.6e8) = 10
    want += costs[i];
  EXPECT_NEAR(r.cost, want, 1e-15);
}

TEST(StageKnapsack, StageChoiceUnderMemory) {
  // Two nodes, vanilla (fast, 10y + 0) or recompute (slower, 1y + 5).
  NodeOptions n;
  n.count = 2;
  n.cost[0] = 1.0;
  n.cost[1] = 1.5;
  n.memA[0] = 10;
  n.memB[0] = 0;
  n.memA[1] = 1;
  n.memB[1] = 5;
  std::vector<NodeOptions> nodes = {n, n};
  // y = 1: 20 bytes all-vanilla fits in 20.
  StageChoice c = chooseStageConfigs(nodes, 1, 20, KnapsackMode::Exact);
  EXPECT_TRUE(c.feasible);
  EXPECT_DOUBLE_EQ(c.cost, 2.0);
  // y = 2: 40 > 30, one node recomputes: 20 + 7 = 27.
  c = chooseStageConfigs(nodes, 2, 30, KnapsackMode::Exact);
  EXPECT_TRUE(c.feasible);
  EXPECT_DOUBLE_EQ(c.cost, 2.5);
  EXPECT_DOUBLE_EQ(c.memory, 27);
  // Both recompute at y = 2 use 14 bytes; 13 is too little.
  c = chooseStageConfigs(nodes, 2, 13, KnapsackMode::Exact);
  EXPECT_FALSE(c.feasible);
}

} // namespace
