//===- tessera-schedule.cpp - Pipeline schedule search on JSON placements -===//
//
// A thin driver over the TesseraSchedule library: reads a placement (the
// format of bench/workloads/tessel) or synthesizes a standard pipeline,
// schedules it (search or a built-in), validates the result and prints P, W,
// peak memory, makespan, search time and an ASCII timeline; optionally writes
// SCHEDULE.json and a Chrome/Perfetto trace. Bad input is a message and a
// non-zero exit, never a crash.
//
//===----------------------------------------------------------------------===//

#include "tessera/Schedule/Builtins.h"
#include "tessera/Schedule/Export.h"
#include "tessera/Schedule/Placement.h"
#include "tessera/Schedule/Schedule.h"
#include "tessera/Schedule/ScheduleSearch.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>

using namespace tessera::schedule;
using tessera::Exception;

namespace {

const char *kUsage =
    "usage: tessera-schedule PLACEMENT.json --memory M [options]\n"
    "       tessera-schedule --pipeline P [--chunks V] [options]\n"
    "\n"
    "options:\n"
    "  --memory M           per-device memory limit, 0..2^63-1 (required with "
    "a\n"
    "                       placement file and with --method search)\n"
    "  --micro-batches N    micro-batches to schedule, 1..1000000 (default "
    "128;\n"
    "                       N x blocks at most 2^24)\n"
    "  --method NAME        search (default), gpipe, 1f1b; with --pipeline "
    "also\n"
    "                       interleaved, zb-h1, zb-h2, zb-v\n"
    "  -o SCHEDULE.json     write the schedule\n"
    "  --trace TRACE.json   write a Chrome/Perfetto trace (one track per "
    "device)\n"
    "  --timeline-width C   columns of the ASCII timeline, 0..10000 (default "
    "120,\n"
    "                       0: none)\n"
    "  --node-budget K      --method search: search nodes in all, >= 1\n"
    "                       (default 16000000; one period gets at most\n"
    "                       K/4, the memory explanation K/4)\n"
    "  --no-explain         --method search: do not search for the memory a\n"
    "                       smaller period needs\n"
    "  --pipeline P         synthesize a P-stage pipeline placement instead\n"
    "                       (P x chunks at most 1365)\n"
    "  --chunks V           with --pipeline and --method interleaved or "
    "search:\n"
    "                       model chunks per device (default 1; zb-v uses 2)\n"
    "  --spans F,B[,W]      with --pipeline: block spans of the synthesized\n"
    "                       pipeline, each 1..2^32 (default 1,2)\n"
    "  --emit-placement F   write the (synthesized) placement as JSON\n"
    "\n"
    "An option that does not apply to the chosen mode, or given twice, is an\n"
    "error.\n";

struct Options {
  std::string placementPath;
  std::optional<int64_t> memory;
  int microBatches = 128;
  std::string method = "search";
  std::string output, trace, emitPlacement;
  int64_t timelineWidth = 120;
  uint64_t nodeBudget = SearchOptions().nodeBudget;
  bool explain = true;
  std::optional<int> pipeline;
  int chunks = 1;
  std::vector<int64_t> spans;
};

/// An integer in [min, max]: out of range is an error, never a truncation.
int64_t parseInt(const std::string &flag, const std::string &text, int64_t min,
                 int64_t max) {
  int64_t v = 0;
  bool outOfRange = false;
  try {
    size_t used = 0;
    v = std::stoll(text, &used);
    if (used != text.size())
      throw std::invalid_argument(text);
  } catch (const std::out_of_range &) {
    outOfRange = true; // beyond int64_t: reported with the range below
  } catch (const std::exception &) {
    throw Exception("option " + flag + " expects an integer, got '" + text +
                    "'");
  }
  if (outOfRange || v < min || v > max)
    throw Exception("option " + flag + " expects an integer in [" +
                    std::to_string(min) + ", " + std::to_string(max) +
                    "], got " + text);
  return v;
}

/// Limits of the options (see kUsage). Any int64_t memory limit is fine: the
/// search works in units of the memory deltas and checks its arithmetic
/// (docs/schedule.md).
constexpr int64_t kMaxMemory = INT64_MAX;
constexpr int64_t kMaxMicroBatches = 1000000;
constexpr int64_t kMaxTimelineWidth = 10000;
constexpr int64_t kMaxNodeBudget = int64_t(1) << 62;
/// The schedule holds micro-batches x blocks tasks; spans and memory deltas
/// summed over them stay far inside int64_t (see Placement.h).
constexpr int64_t kMaxTasks = int64_t(1) << 24;

Options parseArgs(int argc, char **argv) {
  Options o;
  std::set<std::string> given;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        throw Exception("option " + a + " expects a value");
      return argv[++i];
    };
    if (!a.empty() && a[0] == '-' && a != "-h" && a != "--help") {
      std::string key = a == "--output" ? "-o" : a;
      if (!given.insert(key).second)
        throw Exception("option " + a + " is given twice");
    }
    if (a == "--memory")
      o.memory = parseInt(a, value(), 0, kMaxMemory);
    else if (a == "--micro-batches")
      o.microBatches =
          static_cast<int>(parseInt(a, value(), 1, kMaxMicroBatches));
    else if (a == "--method")
      o.method = value();
    else if (a == "-o" || a == "--output")
      o.output = value();
    else if (a == "--trace")
      o.trace = value();
    else if (a == "--timeline-width")
      o.timelineWidth = parseInt(a, value(), 0, kMaxTimelineWidth);
    else if (a == "--node-budget")
      o.nodeBudget =
          static_cast<uint64_t>(parseInt(a, value(), 1, kMaxNodeBudget));
    else if (a == "--no-explain")
      o.explain = false;
    else if (a == "--pipeline")
      o.pipeline =
          static_cast<int>(parseInt(a, value(), 1, kMaxPlacementDevices));
    else if (a == "--chunks")
      o.chunks = static_cast<int>(parseInt(a, value(), 1, kMaxPlacementBlocks));
    else if (a == "--spans") {
      std::stringstream ss(value());
      std::string item;
      while (std::getline(ss, item, ','))
        o.spans.push_back(parseInt("--spans", item, 1, kMaxBlockSpan));
      if (o.spans.size() < 2 || o.spans.size() > 3)
        throw Exception("--spans expects F,B or F,B,W");
    } else if (a == "--emit-placement")
      o.emitPlacement = value();
    else if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (!a.empty() && a[0] == '-')
      throw Exception("unknown option '" + a + "'");
    else if (o.placementPath.empty())
      o.placementPath = a;
    else
      throw Exception("more than one placement file given");
  }
  if (o.pipeline && !o.placementPath.empty())
    throw Exception("give either a placement file or --pipeline, not both");
  if (!o.pipeline && o.placementPath.empty())
    throw Exception("no placement file given");
  if (!o.pipeline && !o.memory)
    throw Exception("--memory is required with a placement file");
  // Options that only one mode reads: given elsewhere they would be
  // silently ignored.
  if (!o.pipeline)
    for (const char *flag : {"--chunks", "--spans"})
      if (given.count(flag))
        throw Exception(std::string(flag) +
                        " applies only with --pipeline (a placement file "
                        "gives its own blocks)");
  if (given.count("--chunks") && o.method != "interleaved" &&
      o.method != "search")
    throw Exception(
        "--chunks applies only to --method interleaved or "
        "search (" +
        o.method +
        (o.method == "zb-v" ? " always uses 2 chunks)" : " uses 1 chunk)"));
  if (o.pipeline) {
    // F, B and W blocks per (virtual) stage; zb-v always has 2 chunks.
    int64_t stages = int64_t(*o.pipeline) * (o.method == "zb-v" ? 2 : o.chunks);
    if (stages * 3 > kMaxPlacementBlocks)
      throw Exception(
          "--pipeline " + std::to_string(*o.pipeline) + " with " +
          std::to_string(stages / *o.pipeline) + " chunk(s) has " +
          std::to_string(stages) + " stages; a placement holds at most " +
          std::to_string(kMaxPlacementBlocks / 3) + " (3 blocks each)");
  }
  if (o.method != "search")
    for (const char *flag : {"--node-budget", "--no-explain"})
      if (given.count(flag))
        throw Exception(std::string(flag) + " applies only to --method search");
  return o;
}

void writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path);
  if (!out)
    throw Exception("cannot write '" + path + "'");
  out << text;
}

std::string joinInts(const std::vector<int64_t> &v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i)
    os << (i ? " " : "") << v[i];
  return os.str();
}

void printRepetend(const PlacementGraph &g, const Repetend &r) {
  std::cout << "repetend (micro-batch i runs each block at start + i*P; "
               "depth K = "
            << r.depth() << " micro-batches in flight):\n";
  std::cout << "  block kind devices          start  phase\n";
  for (int b = 0; b < g.numBlocks(); ++b) {
    const Block &blk = g.block(b);
    std::ostringstream devs;
    for (size_t k = 0; k < blk.devices.size(); ++k)
      devs << (k ? "," : "") << blk.devices[k];
    char line[160];
    std::snprintf(line, sizeof(line), "  %5d %-4s %-16s %6lld %6lld\n", blk.id,
                  kindName(blk.kind), devs.str().c_str(),
                  static_cast<long long>(r.starts[b]),
                  static_cast<long long>(r.starts[b] % r.period));
    std::cout << line;
  }
}

int run(const Options &o) {
  Placement placement;
  std::optional<BuiltinMethod> builtin;
  if (o.method != "search") {
    builtin = parseBuiltinMethod(o.method);
    if (!builtin)
      throw Exception("unknown method '" + o.method +
                      "' (search, gpipe, 1f1b, interleaved, zb-h1, "
                      "zb-h2, zb-v)");
  }
  PipelineSpec spec;
  if (o.pipeline) {
    spec.stages = *o.pipeline;
    spec.chunks = o.chunks;
    if (!o.spans.empty()) {
      spec.forwardSpan = o.spans[0];
      spec.backwardSpan = o.spans[1];
      spec.weightSpan = o.spans.size() > 2 ? o.spans[2] : 0;
    }
    if (builtin)
      spec = normalizeSpec(*builtin, spec);
    placement = makePipelinePlacement(spec);
    placement.name = "pipeline-" + std::to_string(spec.stages);
  } else {
    placement = loadPlacement(o.placementPath);
    if (builtin && *builtin != BuiltinMethod::GPipe &&
        *builtin != BuiltinMethod::OneFOneB)
      throw Exception("method '" + o.method +
                      "' needs a standard pipeline: use --pipeline P");
  }
  if (!o.emitPlacement.empty())
    writeText(o.emitPlacement, placementToJson(placement).dump(2) + "\n");
  PlacementGraph g(placement);
  if (int64_t(o.microBatches) * g.numBlocks() > kMaxTasks)
    throw Exception("--micro-batches " + std::to_string(o.microBatches) +
                    " x " + std::to_string(g.numBlocks()) +
                    " blocks is more than the " + std::to_string(kMaxTasks) +
                    " block instances a schedule may hold");

  std::cout << "placement: " << (placement.name.empty() ? "-" : placement.name)
            << " (" << g.numDevices() << " devices, " << g.numBlocks()
            << " blocks), memory limit "
            << (o.memory ? std::to_string(*o.memory) : "none") << ", "
            << o.microBatches << " micro-batches, method " << o.method << "\n";

  Schedule schedule;
  ScheduleSummary summary;
  summary.lowerBound = g.lowerBound();
  std::optional<Repetend> repetend;
  double seconds = 0;
  std::string note, effort;
  auto t0 = std::chrono::steady_clock::now();
  if (!builtin) {
    if (!o.memory)
      throw Exception("--method search needs --memory");
    SearchOptions so;
    so.memoryLimit = *o.memory;
    so.numMicroBatches = o.microBatches;
    so.nodeBudget = o.nodeBudget;
    so.explainMemory = o.explain;
    SearchResult r = searchSchedule(g, so);
    seconds = r.seconds;
    // The work done, in deterministic units (seconds vary from run to run).
    effort = "search nodes: " + std::to_string(r.nodes) + " in " +
             std::to_string(r.attempts.size()) +
             " period search(es), explanation " +
             std::to_string(r.explainNodes) + " in " +
             std::to_string(r.explainSearches) + " search(es), time quantum " +
             std::to_string(r.timeQuantum) + "\n";
    if (!r.found) {
      std::cout << effort;
      std::cerr << "error: " << r.message << "\n";
      return 1;
    }
    schedule = std::move(r.schedule);
    summary.period = r.repetend.period;
    repetend = r.repetend;
    note = r.message;
  } else {
    if (o.pipeline) {
      schedule = buildBuiltin(*builtin, spec, o.microBatches).schedule;
    } else {
      // On an arbitrary placement the built-in names mean their priority
      // rules: GPipe streams forwards first; 1F1B runs backwards first and
      // starts a forward only while memory allows.
      GreedyPolicy policy;
      policy.order = *builtin == BuiltinMethod::GPipe
                         ? GreedyPolicy::Order::ForwardFirst
                         : GreedyPolicy::Order::BackwardFirst;
      if (*builtin == BuiltinMethod::OneFOneB)
        policy.memoryCap.assign(g.numDevices(), *o.memory);
      schedule = greedyListSchedule(g, o.microBatches, policy);
    }
    seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    summary.period = observedPeriod(g, schedule);
  }
  ValidationReport rep = validateSchedule(g, schedule, o.memory);
  if (!rep.ok()) {
    std::cerr << "error: the " << o.method
              << " schedule violates the constraints: " << rep.errors.front()
              << "\n";
    return 1;
  }
  summary.makespan = rep.stats.makespan;
  summary.peakMemory = rep.stats.peakMemory;

  std::cout << "period P: " << summary.period << "\n";
  std::cout << "lower bound W: " << summary.lowerBound << "\n";
  std::cout << "peak memory: " << joinInts(summary.peakMemory) << "\n";
  std::cout << "makespan (" << o.microBatches
            << " micro-batches): " << summary.makespan << "\n";
  char timeLine[64];
  std::snprintf(timeLine, sizeof(timeLine), "%.4f", seconds);
  std::cout << (builtin ? "build time: " : "search time: ") << timeLine
            << " s\n"
            << effort;
  if (!note.empty())
    std::cout << "result: " << note << "\n";
  if (repetend)
    printRepetend(g, *repetend);
  if (o.timelineWidth > 0)
    std::cout << "timeline (digit: forward of micro-batch mod 10, a-j: "
                 "backward, A-J: weight gradient, '.': idle):\n"
              << asciiTimeline(g, schedule, o.timelineWidth);
  if (!o.output.empty())
    writeText(o.output, dumpJsonLines(scheduleToJson(g, schedule, summary)));
  if (!o.trace.empty())
    writeText(o.trace, dumpJsonLines(chromeTrace(g, schedule)));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(parseArgs(argc, argv));
  } catch (const std::exception &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
