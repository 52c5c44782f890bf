//===- PiperCostModel.cpp - Piper's stage time and memory -----------------===//

#include "tessera/Planner/PiperCostModel.h"

#include <algorithm>
#include <set>

namespace tessera::planner {

double iterationTime(double timePerSample, int microBatches, int sumD,
                     int minD) {
  return timePerSample * (microBatches + sumD - minD);
}

PiperCostModel::PiperCostModel(PiperInstance instance)
    : ins(std::move(instance)) {
  ins.validate();
  const int n = numNodes();
  for (int v = 0; v < n; ++v)
    index[ins.nodes[v].id] = v;
  in.resize(n);
  out.resize(n);
  for (const PiperEdge &e : ins.edges) {
    in[index[e.dest]].emplace_back(index[e.source], e.bytes);
    out[index[e.source]].emplace_back(index[e.dest], e.bytes);
  }
  std::set<int> degreeSet;
  syncFwAligned.resize(n);
  syncBwAligned.resize(n);
  for (int v = 0; v < n; ++v) {
    for (const auto &[t, configs] : ins.nodes[v].configs) {
      degreeSet.insert(t);
      auto &fw = syncFwAligned[v][t];
      auto &bw = syncBwAligned[v][t];
      for (const PiperConfig &c : configs) {
        std::vector<double> f, b;
        for (const auto &[u, bytes] : in[v])
          f.push_back(c.syncFw.at(ins.nodes[u].id));
        for (const auto &[w, bytes] : out[v])
          b.push_back(c.syncBw.at(ins.nodes[w].id));
        fw.push_back(std::move(f));
        bw.push_back(std::move(b));
      }
    }
  }
  allDegrees.assign(degreeSet.begin(), degreeSet.end());
}

int PiperCostModel::indexOf(int id) const {
  auto it = index.find(id);
  if (it == index.end())
    throw Exception("unknown node id " + std::to_string(id));
  return it->second;
}

const std::vector<PiperConfig> *PiperCostModel::configs(int v, int t) const {
  auto it = ins.nodes[v].configs.find(t);
  return it == ins.nodes[v].configs.end() ? nullptr : &it->second;
}

const std::vector<double> &PiperCostModel::syncFw(int v, int t, int c) const {
  return syncFwAligned[v].at(t)[c];
}

const std::vector<double> &PiperCostModel::syncBw(int v, int t, int c) const {
  return syncBwAligned[v].at(t)[c];
}

double PiperCostModel::alpha(int v, int t, int c,
                             const std::vector<char> &inStage) const {
  const PiperConfig &cfg = (*configs(v, t))[c];
  const std::vector<double> &fw = syncFw(v, t, c);
  const std::vector<double> &bw = syncBw(v, t, c);
  // Activations cross the boundary forward and their gradients backward,
  // hence the factor 2 on every boundary edge.
  double bytes = 0;
  for (size_t k = 0; k < in[v].size(); ++k)
    if (!inStage[in[v][k].first])
      bytes += 2 * (in[v][k].second + fw[k]);
  for (size_t k = 0; k < out[v].size(); ++k)
    if (!inStage[out[v][k].first])
      bytes += 2 * (out[v][k].second + bw[k]);
  return cfg.timePerSample + bytes / ins.bandwidth;
}

double PiperCostModel::beta(int v, int t, int c) const {
  // Piper charges 4 (d-1)/d w bytes per batch for the gradient all-reduce
  // (PipeDream's parameter-server accounting), spread over N samples.
  return 4 * (*configs(v, t))[c].parameterSize /
         (static_cast<double>(ins.mbsInBatch) * ins.bandwidth);
}

PlanEvaluation
PiperCostModel::evaluate(const std::vector<StageAssignment> &stages,
                         Schedule schedule) const {
  const int n = numNodes();
  if (stages.empty())
    throw Exception("a plan needs at least one stage");
  std::vector<int> stageOf(n, -1);
  PlanEvaluation result;
  int minD = ins.mbsInBatch;
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageAssignment &s = stages[i];
    std::string where = "stage " + std::to_string(i);
    if (s.nodes.empty())
      throw Exception(where + " is empty");
    if (s.config.size() != s.nodes.size())
      throw Exception(where + ": one configuration per node is needed");
    if (s.d < 1 || ins.mbsInBatch % s.d != 0)
      throw Exception(where + ": d=" + std::to_string(s.d) +
                      " does not divide the " + std::to_string(ins.mbsInBatch) +
                      " micro-batches");
    if (s.t < 1)
      throw Exception(where + ": t must be at least 1");
    for (size_t k = 0; k < s.nodes.size(); ++k) {
      int v = s.nodes[k];
      if (v < 0 || v >= n)
        throw Exception(where + ": node index out of range");
      if (stageOf[v] != -1)
        throw Exception("node " + std::to_string(ins.nodes[v].id) +
                        " is in two stages");
      stageOf[v] = static_cast<int>(i);
      const std::vector<PiperConfig> *cs = configs(v, s.t);
      if (!cs)
        throw Exception("node " + std::to_string(ins.nodes[v].id) +
                        " has no configuration for t=" + std::to_string(s.t));
      if (s.config[k] < 0 || s.config[k] >= static_cast<int>(cs->size()))
        throw Exception(where + ": configuration index out of range");
    }
    result.devicesUsed += s.t * s.d;
    result.sumD += s.d;
    minD = std::min(minD, s.d);
  }
  for (int v = 0; v < n; ++v)
    if (stageOf[v] == -1)
      throw Exception("node " + std::to_string(ins.nodes[v].id) +
                      " is in no stage");
  for (const PiperEdge &e : ins.edges)
    if (stageOf[index.at(e.source)] > stageOf[index.at(e.dest)])
      throw Exception("edge " + std::to_string(e.source) + "->" +
                      std::to_string(e.dest) + " goes backwards");
  if (result.devicesUsed > ins.maxDevices)
    throw Exception("the plan uses " + std::to_string(result.devicesUsed) +
                    " devices, more than " + std::to_string(ins.maxDevices));
  if (result.sumD > std::min(ins.mbsInBatch, ins.maxDevices))
    throw Exception("the data-parallel degrees sum to more than min(N, K)");

  int suffix = result.sumD;
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageAssignment &s = stages[i];
    StageEvaluation ev;
    ev.inFlight = schedule == Schedule::GPipe ? ins.mbsInBatch / s.d
                                              : (suffix + s.d - 1) / s.d;
    suffix -= s.d;
    for (size_t k = 0; k < s.nodes.size(); ++k) {
      int v = s.nodes[k];
      const PiperConfig &cfg = (*configs(v, s.t))[s.config[k]];
      const std::vector<double> &fw = syncFw(v, s.t, s.config[k]);
      const std::vector<double> &bw = syncBw(v, s.t, s.config[k]);
      ev.computeSeconds += cfg.timePerSample;
      for (size_t j = 0; j < in[v].size(); ++j)
        if (stageOf[in[v][j].first] != static_cast<int>(i))
          ev.edgeBytes += 2 * (in[v][j].second + fw[j]);
      for (size_t j = 0; j < out[v].size(); ++j)
        if (stageOf[out[v][j].first] != static_cast<int>(i))
          ev.edgeBytes += 2 * (out[v][j].second + bw[j]);
      ev.resyncBytes +=
          4.0 * (s.d - 1) * cfg.parameterSize / s.d / ins.mbsInBatch;
      ev.memoryBytes += cfg.memoryA * ev.inFlight + cfg.memoryB;
    }
    ev.timePerSample = (ev.edgeBytes / s.d + ev.resyncBytes) / ins.bandwidth +
                       ev.computeSeconds / s.d;
    // The knapsack treats a nanobyte over as covered, as Piper does.
    if (ev.memoryBytes > ins.maxMemoryPerDevice + 1e-6)
      result.fitsMemory = false;
    result.timePerSample = std::max(result.timePerSample, ev.timePerSample);
    result.stages.push_back(ev);
  }
  result.iterationTime =
      iterationTime(result.timePerSample, ins.mbsInBatch, result.sumD, minD);
  return result;
}

} // namespace tessera::planner
