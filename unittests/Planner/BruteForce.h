//===- BruteForce.h - Reference enumeration of all Piper plans --*- C++ -*-===//
//
// Test-only: scores every plan of a small instance straight from the
// formulas in bench/workloads/piper/README.md, independently of the
// planner's cost model, and generates random small instances.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_UNITTESTS_PLANNER_BRUTEFORCE_H
#define TESSERA_UNITTESTS_PLANNER_BRUTEFORCE_H

#include "tessera/Planner/PiperInstance.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

namespace tessera::planner::testing {

struct BruteForceResult {
  double bestPiper = std::numeric_limits<double>::infinity();
  double bestIteration = std::numeric_limits<double>::infinity();
  long plans = 0; // memory-feasible plans scored
};

/// Enumerates every ordered partition into stages consistent with the edges,
/// every (t, d) per stage and every configuration per node.
class BruteForce {
public:
  BruteForce(const PiperInstance &ins, bool gpipe = false)
      : ins(ins), gpipe(gpipe), n(static_cast<int>(ins.nodes.size())) {
    for (int v = 0; v < n; ++v)
      pos[ins.nodes[v].id] = v;
  }

  BruteForceResult run() {
    stageOf.assign(n, -1);
    recurse((1 << n) - 1);
    return result;
  }

private:
  struct Stage {
    int mask, t, d;
  };

  void recurse(int remaining) {
    if (remaining == 0) {
      scoreConfigs();
      return;
    }
    // The next stage S: no edge may enter S from the nodes after it.
    for (int S = remaining; S; S = (S - 1) & remaining) {
      bool ok = true;
      for (const PiperEdge &e : ins.edges) {
        int u = pos.at(e.source), v = pos.at(e.dest);
        if ((remaining >> u & 1) && !(S >> u & 1) && (S >> v & 1))
          ok = false;
      }
      if (!ok)
        continue;
      for (int t = 1; t <= ins.maxDevices; ++t) {
        bool all = true;
        for (int v = 0; v < n; ++v)
          if ((S >> v & 1) && !ins.nodes[v].configs.count(t))
            all = false;
        if (!all)
          continue;
        for (int d = 1; d <= ins.mbsInBatch; ++d) {
          if (ins.mbsInBatch % d)
            continue;
          stages.push_back(Stage{S, t, d});
          if (devices() <= ins.maxDevices &&
              sumD() <= std::min(ins.mbsInBatch, ins.maxDevices))
            recurse(remaining & ~S);
          stages.pop_back();
        }
      }
    }
  }

  int devices() const {
    int s = 0;
    for (const Stage &st : stages)
      s += st.t * st.d;
    return s;
  }
  int sumD() const {
    int s = 0;
    for (const Stage &st : stages)
      s += st.d;
    return s;
  }

  void scoreConfigs() {
    for (size_t i = 0; i < stages.size(); ++i)
      for (int v = 0; v < n; ++v)
        if (stages[i].mask >> v & 1)
          stageOf[v] = static_cast<int>(i);
    choice.assign(n, 0);
    chooseNode(0);
  }

  void chooseNode(int v) {
    if (v == n) {
      score();
      return;
    }
    int t = stages[stageOf[v]].t;
    int options = static_cast<int>(ins.nodes[v].configs.at(t).size());
    for (int c = 0; c < options; ++c) {
      choice[v] = c;
      chooseNode(v + 1);
    }
  }

  void score() {
    const double N = ins.mbsInBatch, B = ins.bandwidth;
    int suffix = sumD(), minD = ins.mbsInBatch;
    double worst = 0;
    for (size_t i = 0; i < stages.size(); ++i) {
      const Stage &st = stages[i];
      int y = gpipe ? ins.mbsInBatch / st.d : (suffix + st.d - 1) / st.d;
      suffix -= st.d;
      minD = std::min(minD, st.d);
      double compute = 0, bytes = 0, resync = 0, memory = 0;
      for (int v = 0; v < n; ++v) {
        if (stageOf[v] != static_cast<int>(i))
          continue;
        const PiperConfig &c = ins.nodes[v].configs.at(st.t)[choice[v]];
        compute += c.timePerSample;
        resync += 4.0 * (st.d - 1) * c.parameterSize / (st.d * N * B);
        memory += c.memoryA * y + c.memoryB;
        for (const PiperEdge &e : ins.edges) {
          int u = pos.at(e.source), w = pos.at(e.dest);
          if (w == v && stageOf[u] != stageOf[v])
            bytes += 2 * (e.bytes + c.syncFw.at(e.source));
          if (u == v && stageOf[w] != stageOf[v])
            bytes += 2 * (e.bytes + c.syncBw.at(e.dest));
        }
      }
      if (memory > ins.maxMemoryPerDevice)
        return;
      worst = std::max(worst, compute / st.d + bytes / (st.d * B) + resync);
    }
    ++result.plans;
    result.bestPiper = std::min(result.bestPiper, worst);
    result.bestIteration =
        std::min(result.bestIteration, worst * (N + sumD() - minD));
  }

  const PiperInstance &ins;
  bool gpipe;
  int n;
  std::map<int, int> pos;
  std::vector<Stage> stages;
  std::vector<int> stageOf, choice;
  BruteForceResult result;
};

/// A random instance: \p n nodes (a chain when \p chain, else a random DAG
/// over a topological order), t in {1, 2} for some nodes, a "vanilla" and an
/// "activation recomp" configuration, and a memory limit that sometimes
/// binds. With \p unequalParams the two configurations of a node may have
/// different parameter sizes (the resync then depends on the choice).
inline PiperInstance randomInstance(std::mt19937 &rng, int n, bool chain, int K,
                                    int N, bool unequalParams = false) {
  std::uniform_real_distribution<double> U(0, 1);
  PiperInstance ins;
  ins.maxDevices = K;
  ins.mbsInBatch = N;
  ins.bandwidth = 1e9 * (0.5 + U(rng));
  // Node ids are deliberately not 0..n-1 (the planner must map them).
  std::vector<int> ids;
  for (int v = 0; v < n; ++v)
    ids.push_back(10 + 3 * v);
  std::vector<std::pair<int, int>> edges;
  for (int v = 0; v + 1 < n; ++v) {
    if (chain) {
      edges.emplace_back(v, v + 1);
      continue;
    }
    for (int w = v + 1; w < n; ++w)
      if (w == v + 1 ? U(rng) < 0.7 : U(rng) < 0.3)
        edges.emplace_back(v, w);
  }
  for (auto [u, v] : edges)
    ins.edges.push_back(PiperEdge{ids[u], ids[v], 1e6 * U(rng)});
  double totalMem = 0;
  for (int v = 0; v < n; ++v) {
    PiperNode node;
    node.id = ids[v];
    int maxT = U(rng) < 0.6 ? 2 : 1;
    double p = 0.001 + 0.01 * U(rng), w = 1e7 * U(rng);
    double a = 1e8 * (0.2 + U(rng)), b = 1e8 * U(rng);
    for (int t = 1; t <= maxT; ++t) {
      PiperConfig van, rec;
      van.id = "vanilla";
      van.timePerSample = p / t * (1 + 0.1 * (t - 1));
      van.parameterSize = w / t;
      van.memoryA = a / t;
      van.memoryB = b / t;
      rec.id = "activation recomp";
      rec.timePerSample = van.timePerSample * (1.2 + 0.3 * U(rng));
      rec.parameterSize = unequalParams && U(rng) < 0.5
                              ? van.parameterSize * (0.5 + U(rng))
                              : van.parameterSize;
      rec.memoryA = van.memoryA * 0.1;
      rec.memoryB = van.memoryB + van.memoryA * 0.3;
      for (auto [x, y] : edges) {
        if (y == v) {
          double s = t > 1 ? 1e5 * U(rng) : 0;
          van.syncFw[ids[x]] = s;
          rec.syncFw[ids[x]] = s;
        }
        if (x == v) {
          double s = t > 1 ? 1e5 * U(rng) : 0;
          van.syncBw[ids[y]] = s;
          rec.syncBw[ids[y]] = s;
        }
      }
      node.configs[t] = {van, rec};
      if (t == 1)
        totalMem += van.memoryA + van.memoryB;
    }
    ins.nodes.push_back(node);
  }
  ins.maxMemoryPerDevice = totalMem * (0.25 + 0.9 * U(rng));
  return ins;
}

} // namespace tessera::planner::testing

#endif // TESSERA_UNITTESTS_PLANNER_BRUTEFORCE_H
