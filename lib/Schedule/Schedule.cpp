//===- Schedule.cpp - Validator, statistics and re-timing -----------------===//

#include "tessera/Schedule/Schedule.h"

#include <algorithm>
#include <map>
#include <queue>
#include <sstream>

namespace tessera::schedule {

namespace {

constexpr int64_t kUnset = INT64_MIN;
// A validator that lists thousands of violations helps no one; the first few
// of each sort locate the problem.
constexpr int kMaxErrorsPerSort = 5;

std::string taskName(const PlacementGraph &g, int micro, int block) {
  std::ostringstream os;
  os << "micro-batch " << micro << " block " << g.block(block).id << " ("
     << kindName(g.block(block).kind) << ")";
  return os.str();
}

bool taskLess(const std::vector<Task> &tasks, int a, int b) {
  const Task &x = tasks[a], &y = tasks[b];
  if (x.start != y.start)
    return x.start < y.start;
  if (x.micro != y.micro)
    return x.micro < y.micro;
  return x.block < y.block;
}

// ASAP times for tasks under dependency edges and per-device order edges.
// Kahn's algorithm doubles as the deadlock check: a cycle means the device
// orders contradict the dependencies.
std::vector<int64_t> asapTimes(const PlacementGraph &g, int numMicro,
                               const std::vector<Task> &tasks,
                               const std::vector<std::vector<int>> &orders) {
  const int n = g.numBlocks();
  const size_t numTasks = tasks.size();
  std::vector<int> slot(static_cast<size_t>(numMicro) * n, -1);
  for (size_t t = 0; t < numTasks; ++t)
    slot[static_cast<size_t>(tasks[t].micro) * n + tasks[t].block] =
        static_cast<int>(t);
  std::vector<std::vector<int>> out(numTasks);
  std::vector<int> indeg(numTasks, 0);
  for (size_t t = 0; t < numTasks; ++t) {
    for (int p : g.preds(tasks[t].block)) {
      int u = slot[static_cast<size_t>(tasks[t].micro) * n + p];
      if (u < 0)
        throw Exception("schedule lacks " + taskName(g, tasks[t].micro, p));
      out[u].push_back(static_cast<int>(t));
      ++indeg[t];
    }
  }
  for (const auto &order : orders)
    for (size_t i = 1; i < order.size(); ++i) {
      out[order[i - 1]].push_back(order[i]);
      ++indeg[order[i]];
    }
  std::vector<int64_t> start(numTasks, 0);
  // A min-heap by task index keeps the processing deterministic.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t t = 0; t < numTasks; ++t)
    if (indeg[t] == 0)
      ready.push(static_cast<int>(t));
  size_t done = 0;
  while (!ready.empty()) {
    int t = ready.top();
    ready.pop();
    ++done;
    int64_t end = start[t] + g.block(tasks[t].block).span;
    for (int v : out[t]) {
      start[v] = std::max(start[v], end);
      if (--indeg[v] == 0)
        ready.push(v);
    }
  }
  if (done != numTasks)
    throw Exception("device orders contradict the dependencies (deadlock)");
  return start;
}

} // namespace

std::vector<std::vector<int>> deviceOrders(const PlacementGraph &g,
                                           const Schedule &s) {
  std::vector<std::vector<int>> orders(g.numDevices());
  for (size_t t = 0; t < s.tasks.size(); ++t) {
    int b = s.tasks[t].block;
    if (b < 0 || b >= g.numBlocks())
      continue;
    for (int d : g.block(b).devices)
      orders[d].push_back(static_cast<int>(t));
  }
  for (auto &order : orders)
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return taskLess(s.tasks, a, b); });
  return orders;
}

ScheduleStats computeStats(const PlacementGraph &g, const Schedule &s) {
  ScheduleStats st;
  const int ndevs = g.numDevices();
  st.peakMemory.assign(ndevs, 0);
  st.busy.assign(ndevs, 0);
  st.deviceFirstStart.assign(ndevs, 0);
  st.deviceLastEnd.assign(ndevs, 0);
  st.deviceBubble.assign(ndevs, 0);
  if (s.tasks.empty())
    return st;
  int64_t first = INT64_MAX, last = INT64_MIN;
  auto orders = deviceOrders(g, s);
  for (int d = 0; d < ndevs; ++d) {
    int64_t mem = 0, peak = 0, dFirst = INT64_MAX, dLast = INT64_MIN;
    const auto &order = orders[d];
    for (size_t i = 0; i < order.size(); ++i) {
      const Task &t = s.tasks[order[i]];
      const Block &b = g.block(t.block);
      mem += b.memory;
      // Memory is observed once every block starting at this time started.
      if (i + 1 == order.size() || s.tasks[order[i + 1]].start != t.start)
        peak = std::max(peak, mem);
      st.busy[d] += b.span;
      dFirst = std::min(dFirst, t.start);
      dLast = std::max(dLast, t.start + b.span);
    }
    st.peakMemory[d] = peak;
    if (!order.empty()) {
      st.deviceFirstStart[d] = dFirst;
      st.deviceLastEnd[d] = dLast;
      st.deviceBubble[d] = dLast - dFirst - st.busy[d];
    }
  }
  for (const Task &t : s.tasks) {
    if (t.block < 0 || t.block >= g.numBlocks())
      continue;
    first = std::min(first, t.start);
    last = std::max(last, t.start + g.block(t.block).span);
  }
  st.firstStart = first;
  st.makespan = last - first;
  return st;
}

ValidationReport validateSchedule(const PlacementGraph &g, const Schedule &s,
                                  std::optional<int64_t> memoryLimit) {
  ValidationReport rep;
  const int n = g.numBlocks();
  const int numMicro = s.numMicroBatches;
  if (numMicro < 0) {
    rep.errors.push_back("negative number of micro-batches");
    return rep;
  }
  std::vector<int64_t> start(static_cast<size_t>(numMicro) * n, kUnset);
  int structural = 0;
  auto structuralError = [&](const std::string &msg) {
    if (structural++ < kMaxErrorsPerSort)
      rep.errors.push_back(msg);
  };
  for (const Task &t : s.tasks) {
    if (t.micro < 0 || t.micro >= numMicro || t.block < 0 || t.block >= n) {
      structuralError("task (micro-batch " + std::to_string(t.micro) +
                      ", block index " + std::to_string(t.block) +
                      ") out of range");
      continue;
    }
    int64_t &slot = start[static_cast<size_t>(t.micro) * n + t.block];
    if (slot != kUnset)
      structuralError(taskName(g, t.micro, t.block) + " scheduled twice");
    slot = t.start;
  }
  for (int i = 0; i < numMicro; ++i)
    for (int b = 0; b < n; ++b)
      if (start[static_cast<size_t>(i) * n + b] == kUnset)
        structuralError(taskName(g, i, b) + " is missing");

  int depErrors = 0;
  for (const Task &t : s.tasks) {
    if (t.micro < 0 || t.micro >= numMicro || t.block < 0 || t.block >= n)
      continue;
    for (int p : g.preds(t.block)) {
      int64_t ps = start[static_cast<size_t>(t.micro) * n + p];
      if (ps == kUnset)
        continue;
      int64_t pend = ps + g.block(p).span;
      if (pend > t.start && depErrors++ < kMaxErrorsPerSort)
        rep.errors.push_back(
            taskName(g, t.micro, t.block) + " starts at " +
            std::to_string(t.start) + " before its dependency block " +
            std::to_string(g.block(p).id) + " ends at " + std::to_string(pend));
    }
  }

  auto orders = deviceOrders(g, s);
  int overlapErrors = 0, memErrors = 0;
  for (int d = 0; d < g.numDevices(); ++d) {
    const auto &order = orders[d];
    int64_t mem = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      const Task &t = s.tasks[order[i]];
      if (i > 0) {
        const Task &prev = s.tasks[order[i - 1]];
        int64_t prevEnd = prev.start + g.block(prev.block).span;
        if (prevEnd > t.start && overlapErrors++ < kMaxErrorsPerSort)
          rep.errors.push_back("device " + std::to_string(d) + ": " +
                               taskName(g, t.micro, t.block) + " at " +
                               std::to_string(t.start) + " overlaps " +
                               taskName(g, prev.micro, prev.block) +
                               " running until " + std::to_string(prevEnd));
      }
      mem += g.block(t.block).memory;
      bool lastAtTime =
          i + 1 == order.size() || s.tasks[order[i + 1]].start != t.start;
      if (memoryLimit && lastAtTime && mem > *memoryLimit &&
          memErrors++ < kMaxErrorsPerSort)
        rep.errors.push_back("device " + std::to_string(d) + ": memory " +
                             std::to_string(mem) + " exceeds the limit " +
                             std::to_string(*memoryLimit) + " at time " +
                             std::to_string(t.start));
    }
  }
  rep.stats = computeStats(g, s);
  return rep;
}

Schedule retimeAsap(const PlacementGraph &g, const Schedule &s) {
  auto orders = deviceOrders(g, s);
  std::vector<int64_t> start = asapTimes(g, s.numMicroBatches, s.tasks, orders);
  Schedule out = s;
  // ASAP times start at 0 by construction.
  for (size_t t = 0; t < out.tasks.size(); ++t)
    out.tasks[t].start = start[t];
  return out;
}

Schedule scheduleFromOrders(
    const PlacementGraph &g, int numMicro,
    const std::vector<std::vector<std::pair<int, int>>> &orders) {
  const int n = g.numBlocks();
  if (static_cast<int>(orders.size()) != g.numDevices())
    throw Exception("one order per device expected");
  std::vector<int> slot(static_cast<size_t>(numMicro) * n, -1);
  std::vector<int> seen(static_cast<size_t>(numMicro) * n, 0);
  Schedule s;
  s.numMicroBatches = numMicro;
  std::vector<std::vector<int>> taskOrders(g.numDevices());
  for (int d = 0; d < g.numDevices(); ++d) {
    for (auto [micro, b] : orders[d]) {
      if (micro < 0 || micro >= numMicro || b < 0 || b >= n)
        throw Exception("order of device " + std::to_string(d) +
                        " names an unknown task");
      const auto &devs = g.block(b).devices;
      if (std::find(devs.begin(), devs.end(), d) == devs.end())
        throw Exception("order of device " + std::to_string(d) + " holds " +
                        taskName(g, micro, b) + " which does not run there");
      size_t key = static_cast<size_t>(micro) * n + b;
      if (slot[key] < 0) {
        slot[key] = static_cast<int>(s.tasks.size());
        s.tasks.push_back({micro, b, 0});
      }
      ++seen[key];
      taskOrders[d].push_back(slot[key]);
    }
  }
  for (int i = 0; i < numMicro; ++i)
    for (int b = 0; b < n; ++b)
      if (seen[static_cast<size_t>(i) * n + b] !=
          static_cast<int>(g.block(b).devices.size()))
        throw Exception(taskName(g, i, b) +
                        " must appear once in the order of each of its "
                        "devices");
  std::vector<int64_t> start = asapTimes(g, numMicro, s.tasks, taskOrders);
  for (size_t t = 0; t < s.tasks.size(); ++t)
    s.tasks[t].start = start[t];
  return s;
}

} // namespace tessera::schedule
