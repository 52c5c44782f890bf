//===- Logging.h - per-step metrics lines (private) -------------*- C++ -*-===//

#ifndef TESSERA_RUNTIME_COMMON_LOGGING_H
#define TESSERA_RUNTIME_COMMON_LOGGING_H

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace tessera {
namespace rt {

struct StepMetrics {
  int64_t step = 0; ///< 0-based
  int64_t totalSteps = 0;
  std::optional<double> loss; ///< absent: the step function has no Loss
  double lr = 0;              ///< the step's learning rate (the schedule's)
  /// The gradients' global norm before clipping (Role::GradNorm).
  std::optional<double> gradNorm;
  /// The validation loss evaluated after this step, if it was, and the
  /// evaluation's peak tensor memory (the largest over the ranks).
  std::optional<double> valLoss;
  int64_t valPeakBytes = 0;
  double tokensPerSecond = 0; ///< this step's tokens over its wall time
  /// Sample data (not tokens): tokensPerSecond counts samples, printed as
  /// "samples_per_s" and "samples/s".
  bool samples = false;
  double elapsedSeconds = 0; ///< since the first step started
  int64_t peakBytes = 0;
  /// With several ranks: each rank's peak (peakBytes is their maximum), so
  /// that the compiler's per-rank memory prediction can be checked.
  std::vector<int64_t> peakBytesPerRank;
  /// The tensor memory the step held at its peak, as the device sees it:
  /// the static memory plan's arena (whole, allocated once) plus the
  /// caching allocator's peak beside it (the largest over the ranks, and
  /// each rank's with several). Without a plan it is peakBytes.
  int64_t footprintBytes = 0;
  std::vector<int64_t> footprintBytesPerRank;
  /// With several ranks: the seconds each rank spent in the step blocked on
  /// other ranks (receives, collectives, completing sends); the rest of
  /// its step it computed (its ops and the driver's work).
  std::vector<double> waitSecondsPerRank;
  /// Placements of the plan not taken because their slot was busy, so far
  /// (summed over the ranks): 0 when the plan matches the program.
  int64_t arenaConflicts = 0;
  /// What this process holds for tensors (rank 0's): the arena plus the
  /// caching allocator's blocks, live or cached, rounded to size classes.
  int64_t reservedBytes = 0;
  double flopsPerSecond = 0; ///< 0: unknown (no Program::flopsPerStep)
  /// Model FLOPs utilisation: flopsPerSecond over the job's peak (ranks x
  /// Program::peakFlopsPerRank); absent when either is unknown.
  std::optional<double> mfu;
};

/// {"step":0,"loss":4.3,"tokens_per_s":...,"elapsed_s":...,"peak_bytes":...}
/// (loss printed with 17 significant digits so it round-trips).
std::string stepJson(const StepMetrics &m);
/// "step    1/10 | loss 4.325484 | 12345 tok/s | 1.2 GFLOP/s | 0.52 s"
std::string progressLine(const StepMetrics &m);

/// Writes each step's JSON line to stdout (and the --log file) and its
/// progress line to stderr.
class StepLogger {
public:
  /// Opens `logPath` (if not empty) for writing, or appending; throws on
  /// failure.
  StepLogger(const std::string &logPath, bool append);
  void log(const StepMetrics &m);

private:
  std::ofstream file_;
};

} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_COMMON_LOGGING_H
