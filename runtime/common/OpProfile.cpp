//===- OpProfile.cpp - every op of a step timed where it runs -------------===//

#include "tessera/runtime/OpProfile.h"
#include "tessera/runtime/Tensor.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

namespace tessera {
namespace rt {
namespace opprofile {

bool active = false;

namespace {
using Clock = std::chrono::steady_clock;
struct State {
  std::vector<double> step;              ///< this step's time per id
  std::vector<char> ran;                 ///< whether this step ran the id
  std::vector<std::vector<double>> kept; ///< recorded steps' times per id
  std::vector<double> driver;            ///< driverStep's recorded times
  int64_t open = -1;                     ///< the id being timed
  Clock::time_point since;
};
State &state() {
  static State s;
  return s;
}
void closeOpen(Clock::time_point now) {
  State &s = state();
  if (s.open >= 0) {
    s.step[size_t(s.open)] +=
        std::chrono::duration<double>(now - s.since).count();
    s.ran[size_t(s.open)] = 1;
  }
  s.open = -1;
}
} // namespace

void start(size_t ops) {
  State &s = state();
  s.step.assign(ops, 0);
  s.ran.assign(ops, 0);
  s.kept.assign(ops, {});
  s.driver.clear();
  s.open = -1;
  active = true;
}

void stop() {
  active = false;
  state().open = -1;
}

void mark(int64_t id) {
  Clock::time_point now = Clock::now();
  State &s = state();
  closeOpen(now);
  // An id beyond the table (a program and table out of step) is not timed.
  if (id < 0 || size_t(id) >= s.step.size())
    return;
  s.open = id;
  s.since = Clock::now();
}

void endStep(bool record) {
  State &s = state();
  closeOpen(Clock::now());
  for (size_t i = 0; i < s.step.size(); ++i) {
    if (record && s.ran[i])
      s.kept[i].push_back(s.step[i]);
    s.step[i] = 0;
    s.ran[i] = 0;
  }
}

void driverStep(double seconds, bool record) {
  if (record && seconds >= 0)
    state().driver.push_back(seconds);
}

namespace {
double median(std::vector<double> v) {
  auto mid = v.begin() + std::ptrdiff_t(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}
} // namespace

std::vector<double> medians() {
  State &s = state();
  std::vector<double> out(s.kept.size(), -1);
  for (size_t i = 0; i < s.kept.size(); ++i)
    if (!s.kept[i].empty())
      out[i] = median(s.kept[i]);
  return out;
}

namespace {
/// An entry's key: its op, dtype and shapes as JSON text.
std::string keyText(const nlohmann::json &op, const nlohmann::json &dtype,
                    const nlohmann::json &shapes) {
  return nlohmann::json::array({op, dtype, shapes}).dump();
}
/// The profile database at `path`; null when there is no such file.
nlohmann::json readDatabase(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return nullptr;
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json old =
      nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (old.is_discarded() || !old.is_object() || !old.contains("entries") ||
      !old["entries"].is_array())
    throw Error("--profile-ops " + path +
                ": the file exists and is not a profile database (JSON "
                "with \"entries\"); give a new file or one that "
                "tessera-calibrate or --profile-ops wrote");
  return old;
}
} // namespace

void checkDatabase(const std::string &path) { readDatabase(path); }

std::string measurements(const std::vector<OpKey> &keys) {
  using nlohmann::json;
  static const char *const kCommunication[] = {
      "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
      "broadcast",  "send",       "recv"};
  std::vector<double> med = medians();
  // Distinct keys in first-seen order, each with the sum and count of its
  // ids' medians.
  std::map<std::string, size_t> index;
  std::vector<std::pair<const OpKey *, std::pair<double, int>>> ours;
  for (size_t i = 0; i < keys.size() && i < med.size(); ++i) {
    if (med[i] < 0 || std::count(std::begin(kCommunication),
                                 std::end(kCommunication), keys[i].op))
      continue;
    std::string k = keyText(keys[i].op, keys[i].dtype, keys[i].shapes);
    auto [it, fresh] = index.emplace(k, ours.size());
    if (fresh)
      ours.push_back({&keys[i], {0.0, 0}});
    ours[it->second].second.first += med[i];
    ours[it->second].second.second += 1;
  }
  json out = json::array();
  for (const auto &[key, sum] : ours)
    out.push_back({{"op", key->op},
                   {"dtype", key->dtype},
                   {"shapes", key->shapes},
                   {"seconds", sum.first / double(sum.second)},
                   {"count", sum.second}});
  if (!state().driver.empty())
    out.push_back({{"op", kDriverOp},
                   {"dtype", ""},
                   {"shapes", json::array()},
                   {"seconds", median(state().driver)},
                   {"count", 1}});
  return out.dump();
}

void writeDatabase(const std::string &path,
                   const std::vector<std::string> &measured) {
  using nlohmann::json;
  // Every rank's entries of one key merged: the mean over their ids.
  std::map<std::string, size_t> index;
  std::vector<std::pair<json, std::pair<double, int64_t>>> ours;
  for (const std::string &text : measured) {
    json entries = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (entries.is_discarded() || !entries.is_array())
      throw Error("--profile-ops: a rank's measurements are not JSON");
    for (const json &e : entries) {
      std::string k = keyText(e.at("op"), e.at("dtype"), e.at("shapes"));
      auto [it, fresh] = index.emplace(k, ours.size());
      if (fresh)
        ours.push_back({e, {0.0, 0}});
      int64_t count = e.at("count").get<int64_t>();
      ours[it->second].second.first += e.at("seconds").get<double>() * count;
      ours[it->second].second.second += count;
    }
  }
  // A new file names no device (any spec accepts it); one that
  // tessera-calibrate wrote keeps its spec's name.
  json db = {{"entries", json::array()}};
  {
    json old = readDatabase(path);
    if (!old.is_null()) {
      if (old.contains("device"))
        db["device"] = old["device"];
      for (const json &e : old["entries"]) {
        // Keep rates and the entries these measurements do not replace.
        if (e.is_object() && e.contains("shapes") && e.contains("op") &&
            e.contains("dtype") &&
            index.count(keyText(e["op"], e["dtype"], e["shapes"])))
          continue;
        db["entries"].push_back(e);
      }
    }
  }
  for (const auto &[e, sum] : ours)
    db["entries"].push_back({{"op", e["op"]},
                             {"dtype", e["dtype"]},
                             {"shapes", e["shapes"]},
                             {"seconds", sum.first / double(sum.second)}});
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << db.dump(1) << "\n";
    if (!out)
      throw Error("--profile-ops: cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error("--profile-ops: cannot replace " + path);
  }
}

} // namespace opprofile
} // namespace rt
} // namespace tessera
