//===- Export.cpp - Schedule output: JSON, Chrome trace, ASCII ------------===//

#include "tessera/Schedule/Export.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

using json = nlohmann::ordered_json;

namespace tessera::schedule {

namespace {

std::vector<int> sortedTasks(const Schedule &s) {
  std::vector<int> idx(s.tasks.size());
  for (size_t i = 0; i < idx.size(); ++i)
    idx[i] = static_cast<int>(i);
  std::sort(idx.begin(), idx.end(), [&](int a, int b) {
    const Task &x = s.tasks[a], &y = s.tasks[b];
    return std::tie(x.start, x.micro, x.block) <
           std::tie(y.start, y.micro, y.block);
  });
  return idx;
}

int64_t firstStart(const Schedule &s) {
  int64_t first = INT64_MAX;
  for (const Task &t : s.tasks)
    first = std::min(first, t.start);
  return s.tasks.empty() ? 0 : first;
}

} // namespace

json scheduleToJson(const PlacementGraph &g, const Schedule &s,
                    const ScheduleSummary &sum) {
  json blocks = json::array();
  int64_t origin = firstStart(s);
  for (int i : sortedTasks(s)) {
    const Task &t = s.tasks[i];
    blocks.push_back({{"micro", t.micro},
                      {"id", g.block(t.block).id},
                      {"start", t.start - origin}});
  }
  json out = json::object();
  out["placement"] = g.placement().name;
  out["micro_batches"] = s.numMicroBatches;
  out["period"] = sum.period;
  out["lower_bound"] = sum.lowerBound;
  out["makespan"] = sum.makespan;
  out["peak_memory"] = sum.peakMemory;
  out["blocks"] = std::move(blocks);
  return out;
}

json chromeTrace(const PlacementGraph &g, const Schedule &s) {
  json events = json::array();
  events.push_back(
      {{"name", "process_name"},
       {"ph", "M"},
       {"pid", 0},
       {"args", {{"name", "tessera-schedule " + g.placement().name}}}});
  for (int d = 0; d < g.numDevices(); ++d)
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", d},
                      {"args", {{"name", "device " + std::to_string(d)}}}});
  int64_t origin = firstStart(s);
  for (int i : sortedTasks(s)) {
    const Task &t = s.tasks[i];
    const Block &b = g.block(t.block);
    std::string name = std::string(kindName(b.kind)) + std::to_string(b.id) +
                       " mb" + std::to_string(t.micro);
    for (int d : b.devices)
      events.push_back(
          {{"name", name},
           {"cat", kindName(b.kind)},
           {"ph", "X"},
           {"pid", 0},
           {"tid", d},
           {"ts", t.start - origin},
           {"dur", b.span},
           {"args",
            {{"micro", t.micro}, {"block", b.id}, {"memory", b.memory}}}});
  }
  json out = json::object();
  out["traceEvents"] = std::move(events);
  out["displayTimeUnit"] = "ms";
  return out;
}

std::string dumpJsonLines(const json &j) {
  if (!j.is_object())
    return j.dump() + "\n";
  std::ostringstream os;
  os << "{";
  bool firstKey = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    os << (firstKey ? "\n" : ",\n") << "  " << json(it.key()).dump() << ": ";
    firstKey = false;
    const json &v = it.value();
    if (v.is_array() && !v.empty() && v.front().is_object()) {
      os << "[";
      for (size_t i = 0; i < v.size(); ++i)
        os << (i ? ",\n    " : "\n    ") << v[i].dump();
      os << "\n  ]";
    } else {
      os << v.dump();
    }
  }
  os << "\n}\n";
  return os.str();
}

std::string asciiTimeline(const PlacementGraph &g, const Schedule &s,
                          int64_t width) {
  int64_t origin = firstStart(s);
  int64_t end = origin;
  for (const Task &t : s.tasks)
    end = std::max(end, t.start + g.block(t.block).span);
  int64_t cols = std::max<int64_t>(0, std::min(width, end - origin));
  std::vector<std::string> rows(g.numDevices(), std::string(cols, '.'));
  for (const Task &t : s.tasks) {
    const Block &b = g.block(t.block);
    char c = b.kind == BlockKind::Forward    ? char('0' + t.micro % 10)
             : b.kind == BlockKind::Backward ? char('a' + t.micro % 10)
                                             : char('A' + t.micro % 10);
    // Only the visible columns: spans may be millions of steps long.
    int64_t from = std::max<int64_t>(0, t.start - origin);
    int64_t to = std::min(cols, t.start - origin + b.span);
    for (int64_t col = from; col < to; ++col)
      for (int d : b.devices)
        rows[d][col] = c;
  }
  std::ostringstream os;
  int labelWidth = static_cast<int>(std::to_string(g.numDevices() - 1).size());
  for (int d = 0; d < g.numDevices(); ++d) {
    std::string label = std::to_string(d);
    os << "dev " << std::string(labelWidth - label.size(), ' ') << label << " |"
       << rows[d] << (end - origin > cols ? "|..." : "|") << "\n";
  }
  return os.str();
}

int64_t observedPeriod(const PlacementGraph &g, const Schedule &s) {
  if (s.numMicroBatches < 2 || g.numBlocks() == 0)
    return 0;
  std::vector<int64_t> starts(s.numMicroBatches, INT64_MIN);
  for (const Task &t : s.tasks)
    if (t.block == 0 && t.micro >= 0 && t.micro < s.numMicroBatches)
      starts[t.micro] = t.start;
  std::vector<int64_t> gaps;
  for (int i = 1; i < s.numMicroBatches; ++i)
    if (starts[i] != INT64_MIN && starts[i - 1] != INT64_MIN)
      gaps.push_back(starts[i] - starts[i - 1]);
  if (gaps.empty())
    return 0;
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  return gaps[gaps.size() / 2];
}

} // namespace tessera::schedule
