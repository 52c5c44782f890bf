//===- PipelineReplay.cpp - a pipeline order at each stage's own times ----===//

#include "tessera/Schedule/PipelineReplay.h"

#include <algorithm>

namespace tessera::schedule {

ReplayedPipeline replayPipeline(const PipelineOrder &order, int stages,
                                int micro, const std::vector<double> &forward,
                                const std::vector<double> &backward,
                                const std::vector<double> &weight,
                                const CoreWaits &waits,
                                const std::vector<int> &devices) {
  ReplayedPipeline out;
  size_t n = static_cast<size_t>(stages), m = static_cast<size_t>(micro);
  if (stages < 1 || micro < 1 || forward.size() != n ||
      backward.size() != n || weight.size() != n) {
    out.error = "need one forward, B and W time per stage";
    return out;
  }
  // The device of each stage; every device from 0 holds one at least.
  std::vector<size_t> deviceOf(n);
  size_t numDevices = n;
  if (devices.empty()) {
    for (size_t s = 0; s < n; ++s)
      deviceOf[s] = s;
  } else {
    if (devices.size() != n) {
      out.error = "need one device per stage";
      return out;
    }
    int most = *std::max_element(devices.begin(), devices.end());
    std::vector<bool> used(static_cast<size_t>(std::max(most, 0)) + 1);
    for (size_t s = 0; s < n; ++s) {
      if (devices[s] < 0) {
        out.error = "a stage's device must be >= 0";
        return out;
      }
      deviceOf[s] = static_cast<size_t>(devices[s]);
      used[deviceOf[s]] = true;
    }
    if (std::count(used.begin(), used.end(), false)) {
      out.error = "every device from 0 to the last needs a stage";
      return out;
    }
    numDevices = used.size();
  }
  size_t blocks = order.blocks.size();
  // Per block: when it starts and ends, when the message it waits for
  // arrives (-1: none crosses devices), and its wait for a core.
  std::vector<double> start(blocks, 0), end(blocks, 0), arrives(blocks, -1),
      coreWait(blocks, 0);
  // The library's order is by start time in uniform blocks, which every
  // dependency precedes, so one pass replays it.
  auto replay = [&]() -> bool {
    std::vector<std::vector<double>> fEnd(n, std::vector<double>(m, 0.0)),
        bEnd = fEnd;
    out.stageEnds.assign(n, 0.0);
    out.deviceEnds.assign(numDevices, 0.0);
    out.busy = 0;
    for (size_t i = 0; i < blocks; ++i) {
      const OrderedBlock &b = order.blocks[i];
      if (b.stage < 0 || b.stage >= stages || b.micro < 0 ||
          b.micro >= micro) {
        out.error = "the schedule names a block outside the plan";
        return false;
      }
      size_t s = static_cast<size_t>(b.stage), k = static_cast<size_t>(b.micro);
      double ready = 0, time = 0;
      bool crosses = false;
      if (b.kind == BlockKind::Forward) {
        ready = s > 0 ? fEnd[s - 1][k] : 0.0;
        crosses = s > 0 && deviceOf[s - 1] != deviceOf[s];
        time = forward[s];
      } else if (b.kind == BlockKind::Backward) {
        ready = s + 1 < n ? bEnd[s + 1][k] : fEnd[s][k];
        crosses = s + 1 < n && deviceOf[s + 1] != deviceOf[s];
        time = backward[s];
      } else {
        ready = bEnd[s][k];
        time = weight[s];
      }
      double &free = out.deviceEnds[deviceOf[s]];
      arrives[i] = crosses ? ready : -1;
      start[i] = std::max(ready + coreWait[i], free);
      end[i] = start[i] + time;
      free = out.stageEnds[s] = end[i];
      out.busy += time;
      if (b.kind == BlockKind::Forward)
        fEnd[s][k] = end[i];
      else if (b.kind == BlockKind::Backward)
        bEnd[s][k] = end[i];
    }
    return true;
  };
  if (!replay())
    return out;
  if (waits.wait <= 0 || waits.chance <= 0)
    return out;
  // Each device's blocks, in the order it runs them (one after another).
  std::vector<std::vector<size_t>> ofDevice(numDevices);
  for (size_t j = 0; j < blocks; ++j)
    ofDevice[deviceOf[static_cast<size_t>(order.blocks[j].stage)]].push_back(j);
  bool any = false;
  for (size_t i = 0; i < blocks; ++i) {
    double t = arrives[i];
    // Only a device that is waiting when the message comes.
    if (t < 0 || start[i] > t)
      continue;
    size_t mine = deviceOf[static_cast<size_t>(order.blocks[i].stage)];
    double held = 0;
    for (size_t q = 0; q < numDevices; ++q) {
      if (q == mine)
        continue;
      // The last block of q that starts by t, if it still runs.
      const std::vector<size_t> &runs = ofDevice[q];
      auto after =
          std::upper_bound(runs.begin(), runs.end(), t,
                           [&](double x, size_t j) { return x < start[j]; });
      if (after != runs.begin() && t < end[*(after - 1)])
        held += std::min(end[*(after - 1)] - t, waits.wait);
    }
    coreWait[i] = waits.chance * waits.stageRanks * held;
    any |= coreWait[i] > 0;
  }
  if (any)
    replay();
  return out;
}

} // namespace tessera::schedule
