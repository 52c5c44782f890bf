//===- Logging.cpp - per-step metrics lines -------------------------------===//

#include "Logging.h"

#include "tessera/runtime/Tensor.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace tessera {
namespace rt {

namespace {
std::string number(double v, const char *format) {
  if (!std::isfinite(v))
    return "null"; // JSON has no NaN/inf
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}
} // namespace

std::string stepJson(const StepMetrics &m) {
  std::string s = "{\"step\": " + std::to_string(m.step) + ", \"loss\": ";
  s += m.loss ? number(*m.loss, "%.17g") : "null";
  s += ", \"lr\": " + number(m.lr, "%.17g");
  if (m.gradNorm)
    s += ", \"grad_norm\": " + number(*m.gradNorm, "%.9g");
  if (m.valLoss)
    s += ", \"val_loss\": " + number(*m.valLoss, "%.17g");
  s += m.samples ? ", \"samples_per_s\": " : ", \"tokens_per_s\": ";
  s += number(m.tokensPerSecond, "%.6g");
  if (m.flopsPerSecond > 0)
    s += ", \"flops_per_s\": " + number(m.flopsPerSecond, "%.6g");
  if (m.mfu)
    s += ", \"mfu\": " + number(*m.mfu, "%.6g");
  s += ", \"elapsed_s\": " + number(m.elapsedSeconds, "%.6g");
  s += ", \"peak_bytes\": " + std::to_string(m.peakBytes);
  if (m.valLoss)
    s += ", \"val_peak_bytes\": " + std::to_string(m.valPeakBytes);
  // One JSON list per rank-indexed field (absent with one rank).
  auto list = [&](const char *key, const auto &values, auto format) {
    if (values.empty())
      return;
    s += std::string(", \"") + key + "\": [";
    for (size_t r = 0; r < values.size(); ++r)
      s += (r ? ", " : "") + format(values[r]);
    s += "]";
  };
  auto integer = [](int64_t v) { return std::to_string(v); };
  list("peak_bytes_per_rank", m.peakBytesPerRank, integer);
  s += ", \"footprint_bytes\": " + std::to_string(m.footprintBytes);
  list("footprint_bytes_per_rank", m.footprintBytesPerRank, integer);
  list("wait_s_per_rank", m.waitSecondsPerRank,
       [](double v) { return number(v, "%.6g"); });
  if (m.reservedBytes > 0)
    s += ", \"reserved_bytes\": " + std::to_string(m.reservedBytes);
  if (m.arenaConflicts > 0)
    s += ", \"arena_conflicts\": " + std::to_string(m.arenaConflicts);
  s += "}";
  return s;
}

std::string progressLine(const StepMetrics &m) {
  char buf[256];
  int width = static_cast<int>(std::to_string(m.totalSteps).size());
  std::string loss = m.loss ? number(*m.loss, "%.6f") : "-";
  int n = std::snprintf(buf, sizeof(buf), "step %*lld/%lld | loss %s | %.0f %s",
                        width, static_cast<long long>(m.step + 1),
                        static_cast<long long>(m.totalSteps), loss.c_str(),
                        m.tokensPerSecond, m.samples ? "samples/s" : "tok/s");
  std::string s(buf, n);
  if (m.flopsPerSecond > 0) {
    std::snprintf(buf, sizeof(buf), " | %.2f GFLOP/s", m.flopsPerSecond / 1e9);
    s += buf;
  }
  if (m.mfu) {
    std::snprintf(buf, sizeof(buf), " | MFU %.1f%%", 100 * *m.mfu);
    s += buf;
  }
  if (m.gradNorm) {
    std::snprintf(buf, sizeof(buf), " | norm %.4g", *m.gradNorm);
    s += buf;
  }
  if (m.valLoss) {
    std::snprintf(buf, sizeof(buf), " | val loss %.6f", *m.valLoss);
    s += buf;
  }
  std::snprintf(buf, sizeof(buf), " | peak %.1f MiB | %.2f s",
                m.peakBytes / (1024.0 * 1024.0), m.elapsedSeconds);
  return s + buf;
}

StepLogger::StepLogger(const std::string &logPath, bool append) {
  if (logPath.empty())
    return;
  file_.open(logPath,
             std::ios::out | (append ? std::ios::app : std::ios::trunc));
  if (!file_)
    throw Error(logPath +
                ": cannot open the log file: " + std::strerror(errno));
}

void StepLogger::log(const StepMetrics &m) {
  std::string json = stepJson(m);
  std::cout << json << '\n' << std::flush;
  std::cerr << progressLine(m) << '\n' << std::flush;
  if (file_.is_open()) {
    file_ << json << '\n' << std::flush;
    if (!file_)
      throw Error("writing the log file failed");
  }
}

} // namespace rt
} // namespace tessera
