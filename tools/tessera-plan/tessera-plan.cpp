//===- tessera-plan.cpp - Plan a Piper input from the command line --------===//
//
// Reads Piper's JSON, overrides its machine limits from the command line,
// runs the planner and prints the plan, its time per sample under Piper's
// cost model and the planner's CPU time, as text or as one JSON object.
//
//===----------------------------------------------------------------------===//

#include "tessera/Planner/PiperPlanner.h"

#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

using namespace tessera::planner;

namespace {

const char *kUsage =
    "usage: tessera-plan --piper-json FILE [--devices K] [--memory-gib M]\n"
    "                    [--micro-batches N] [--bandwidth-gibps B]\n"
    "                    [--bandwidth-bps B] [--objective piper|iteration]\n"
    "                    [--schedule 1f1b|gpipe] [--knapsack exact|greedy]\n"
    "                    [--max-table-gib G] [--json]\n"
    "\n"
    "Plans the layer graph in FILE (Piper's input format) into pipeline\n"
    "stages with tensor- and data-parallel degrees and activation\n"
    "recomputation. Options override the file's maxDevices,\n"
    "maxMemoryPerDevice (GiB = 2^30 bytes), mbsInBatch and bandwidth\n"
    "(GiB/s = 2^30 bytes/s, or bytes/s with --bandwidth-bps).\n"
    "--objective piper minimises Piper's time per sample of the slowest\n"
    "stage; iteration (the default) adds the pipeline bubble.\n"
    "--max-table-gib bounds the planner's tables (default 2): a graph whose\n"
    "tables need more is refused up front, with the estimate.\n"
    "Counts are integers in [1, 1000000]; sizes and bandwidths finite\n"
    "numbers > 0. Each option may be given once, and only one of\n"
    "--bandwidth-gibps and --bandwidth-bps.\n";

struct Args {
  std::string file;
  long devices = -1;
  double memoryGiB = -1;
  long microBatches = -1;
  double bandwidth = -1; // bytes per second
  Objective objective = Objective::Iteration;
  Schedule schedule = Schedule::OneFOneB;
  KnapsackMode knapsack = KnapsackMode::Exact;
  double maxTableGiB = -1;
  bool json = false;
};

[[noreturn]] void usageError(const std::string &message) {
  std::cerr << "tessera-plan: error: " << message << "\n" << kUsage;
  std::exit(2);
}

/// A finite number > 0 that stays finite once multiplied by `scale` (GiB
/// to bytes): 1e308 GiB is not a size.
double parseNumber(const std::string &flag, const std::string &text,
                   double scale = 1) {
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ||
      *end != '\0' || !std::isfinite(v * scale) || v <= 0)
    usageError(flag + " expects a finite positive number, got '" + text + "'");
  return v * scale;
}

long parseInteger(const std::string &flag, const std::string &text, long max) {
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ||
      *end != '\0' || errno == ERANGE || v <= 0 || v > max)
    usageError(flag + " expects an integer in [1, " + std::to_string(max) +
               "], got '" + text + "'");
  return v;
}

Args parseArgs(int argc, char **argv) {
  Args a;
  std::set<std::string> given;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usageError(flag + " needs a value");
      return argv[++i];
    };
    // A repeated option would silently override the first.
    if (flag != "--help" && flag != "-h" && !given.insert(flag).second)
      usageError(flag + " is given twice");
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (flag == "--piper-json") {
      a.file = value();
    } else if (flag == "--devices") {
      a.devices = parseInteger(flag, value(), kMaxPiperDevices);
    } else if (flag == "--memory-gib") {
      a.memoryGiB =
          parseNumber(flag, value(), double(1ull << 30)) / double(1ull << 30);
    } else if (flag == "--micro-batches") {
      a.microBatches = parseInteger(flag, value(), kMaxPiperMicroBatches);
    } else if (flag == "--bandwidth-gibps") {
      a.bandwidth = parseNumber(flag, value(), double(1ull << 30));
    } else if (flag == "--bandwidth-bps") {
      a.bandwidth = parseNumber(flag, value());
    } else if (flag == "--objective") {
      std::string v = value();
      if (v == "piper")
        a.objective = Objective::Piper;
      else if (v == "iteration")
        a.objective = Objective::Iteration;
      else
        usageError("--objective must be 'piper' or 'iteration'");
    } else if (flag == "--schedule") {
      std::string v = value();
      if (v == "1f1b")
        a.schedule = Schedule::OneFOneB;
      else if (v == "gpipe")
        a.schedule = Schedule::GPipe;
      else
        usageError("--schedule must be '1f1b' or 'gpipe'");
    } else if (flag == "--knapsack") {
      std::string v = value();
      if (v == "exact")
        a.knapsack = KnapsackMode::Exact;
      else if (v == "greedy")
        a.knapsack = KnapsackMode::PiperGreedy;
      else
        usageError("--knapsack must be 'exact' or 'greedy'");
    } else if (flag == "--max-table-gib") {
      a.maxTableGiB =
          parseNumber(flag, value(), double(1ull << 30)) / double(1ull << 30);
    } else if (flag == "--json") {
      a.json = true;
    } else {
      usageError("unknown argument '" + flag + "'");
    }
  }
  if (a.file.empty())
    usageError("--piper-json FILE is required");
  if (given.count("--bandwidth-gibps") && given.count("--bandwidth-bps"))
    usageError("give either --bandwidth-gibps or --bandwidth-bps, not both");
  return a;
}

long peakRssKiB() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss; // KiB on Linux
}

std::string joinInts(const std::vector<int> &v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i)
    os << (i ? "," : "") << v[i];
  return os.str();
}

} // namespace

int main(int argc, char **argv) {
  Args args = parseArgs(argc, argv);
  try {
    PiperInstance ins = loadPiperInstance(args.file);
    if (args.devices > 0)
      ins.maxDevices = static_cast<int>(args.devices);
    if (args.memoryGiB > 0)
      ins.maxMemoryPerDevice = args.memoryGiB * double(1ull << 30);
    if (args.microBatches > 0)
      ins.mbsInBatch = static_cast<int>(args.microBatches);
    if (args.bandwidth > 0)
      ins.bandwidth = args.bandwidth;

    PlannerOptions opts;
    opts.objective = args.objective;
    opts.schedule = args.schedule;
    opts.knapsack = args.knapsack;
    if (args.maxTableGiB > 0)
      opts.maxTableBytes =
          static_cast<size_t>(std::min(args.maxTableGiB, 1e9) * (1ull << 30));
    Plan plan = planPiper(ins, opts);

    if (args.json) {
      nlohmann::ordered_json j;
      j["time_per_sample"] = plan.timePerSample;
      j["iteration_time"] = plan.iterationTime;
      j["objective"] = objectiveName(plan.objective);
      j["schedule"] = scheduleName(plan.schedule);
      j["cpu_seconds"] = plan.stats.cpuSeconds;
      j["peak_rss_kib"] = peakRssKiB();
      j["devices_used"] = plan.devicesUsed;
      j["sum_d"] = plan.sumD;
      j["max_devices"] = ins.maxDevices;
      j["memory_bytes"] = ins.maxMemoryPerDevice;
      j["micro_batches"] = ins.mbsInBatch;
      j["bandwidth"] = ins.bandwidth;
      nlohmann::ordered_json stages = nlohmann::ordered_json::array();
      for (const PlannedStage &s : plan.stages) {
        nlohmann::ordered_json js;
        js["nodes"] = s.nodeIds;
        js["t"] = s.t;
        js["d"] = s.d;
        js["recompute"] = s.recomputeIds;
        js["in_flight"] = s.inFlight;
        js["time_per_sample"] = s.timePerSample;
        js["memory_bytes"] = s.memoryBytes;
        nlohmann::ordered_json configs = nlohmann::ordered_json::object();
        for (size_t k = 0; k < s.nodeIds.size(); ++k)
          configs[std::to_string(s.nodeIds[k])] = s.configIds[k];
        js["configs"] = configs;
        stages.push_back(js);
      }
      j["stages"] = stages;
      j["stats"] = {{"downsets", plan.stats.downsets},
                    {"stage_pairs", plan.stats.stagePairs},
                    {"chain", plan.stats.chain},
                    {"feasibility_runs", plan.stats.feasibilityRuns},
                    {"knapsack_solves", plan.stats.knapsackSolves},
                    {"inexact_knapsacks", plan.stats.inexactKnapsacks},
                    {"table_bytes", plan.stats.tableBytes},
                    {"cache_bytes", plan.stats.cacheBytes},
                    {"cache_full", plan.stats.cacheFull}};
      std::cout << j.dump(2) << "\n";
      return 0;
    }

    const double gib = double(1ull << 30);
    std::printf("input: %s (%zu nodes, %zu edges, %zu downsets%s)\n",
                args.file.c_str(), ins.nodes.size(), ins.edges.size(),
                plan.stats.downsets, plan.stats.chain ? ", a chain" : "");
    std::printf("limits: %d devices, %.3f GiB per device, %d micro-batches, "
                "%.3f GiB/s\n",
                ins.maxDevices, ins.maxMemoryPerDevice / gib, ins.mbsInBatch,
                ins.bandwidth / gib);
    std::printf("objective: %s, schedule: %s\n", objectiveName(plan.objective),
                scheduleName(plan.schedule));
    std::printf("plan: %zu stages, %d devices used, sum of d %d\n",
                plan.stages.size(), plan.devicesUsed, plan.sumD);
    for (size_t i = 0; i < plan.stages.size(); ++i) {
      const PlannedStage &s = plan.stages[i];
      std::printf("stage %zu: t=%d d=%d y=%d time/sample=%.6g s memory=%.3f "
                  "GiB nodes=[%s] recompute=[%s]\n",
                  i, s.t, s.d, s.inFlight, s.timePerSample, s.memoryBytes / gib,
                  joinInts(s.nodeIds).c_str(),
                  joinInts(s.recomputeIds).c_str());
    }
    std::printf("time per sample: %.9g s\n", plan.timePerSample);
    std::printf("iteration time: %.9g s\n", plan.iterationTime);
    std::printf("cpu seconds: %.6f\n", plan.stats.cpuSeconds);
    std::printf("planner tables: %.1f MiB counted up front, %.1f MiB of "
                "caches%s\n",
                plan.stats.tableBytes / double(1 << 20),
                plan.stats.cacheBytes / double(1 << 20),
                plan.stats.cacheFull ? " (full: recomputing beyond)" : "");
    std::printf("peak rss: %ld KiB\n", peakRssKiB());
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "tessera-plan: error: " << e.what() << "\n";
    return 1;
  }
}
