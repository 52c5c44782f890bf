//===- OpProfile.h - every op of a step timed where it runs ----*- C++ -*-===//
//
// A program compiled with `tessera-compile --profile-ops` calls opMark(id)
// before each op of its steps; its Program table names each id's op
// (Program::opKeys). Run with `--profile-ops FILE`, the driver turns the
// marks on: an op's time is from its mark to the next one (its placement,
// its kernel and the releases after it, with the caches as the step leaves
// them) or to the end of the step, and FILE gets each op's median over the
// steps as a profile database entry (docs/planner.md), which the auto
// planner's cost model then uses instead of its estimate. Off, a mark is
// one load and branch.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_OPPROFILE_H
#define TESSERA_RUNTIME_OPPROFILE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {
namespace rt {

/// What an opMark id times, as the auto planner's profile database keys an
/// op: its name without its dialect ("matmul"), the element type it is
/// priced in ("fp32") and its operand shapes.
struct OpKey {
  std::string op;
  std::string dtype;
  std::vector<std::vector<int64_t>> shapes;
};

namespace opprofile {

/// Whether marks are timed (start() .. stop()).
extern bool active;
/// Times ids 0 .. ops - 1 from now on.
void start(size_t ops);
void stop();
/// The slow half of opMark.
void mark(int64_t id);
/// Closes the op in flight at the end of a step; its times join each op's
/// samples when `record` (false: a warm-up step, dropped).
void endStep(bool record);
/// Per id, the median of its recorded step times in seconds; negative for
/// an id no recorded step ran.
std::vector<double> medians();
/// The op name of the driver's entry: the seconds a step takes outside its
/// step function (reading the batch, the finiteness checks, the step report
/// and its log line), which the auto planner adds to every plan's step
/// (ProfileDatabase::driverSeconds; docs/planner.md).
inline constexpr const char *kDriverOp = "driver";
/// One step's time outside the step function (one-rank runs: the driver
/// calls it); joins the driver's samples when `record`.
void driverStep(double seconds, bool record);
/// This rank's measurements of the ids `keys` names, as the JSON text of
/// an array of {"op", "dtype", "shapes", "seconds", "count"}: one per
/// distinct key, the mean over the ids that share it (the same matmul in
/// every layer) of their medians. The communication ops (all_reduce,
/// all_gather, reduce_scatter, all_to_all, broadcast, send, recv) are left
/// out: their times include the waits for other ranks. With driverStep's
/// samples, one more entry {"op": kDriverOp, "dtype": "", "shapes": []}
/// holds their median.
std::string measurements(const std::vector<OpKey> &keys);
/// Writes measurements (one rank's, or every rank's: a key several ranks
/// measured takes the mean weighted by their counts) into the profile
/// database at `path` (docs/planner.md). An existing database keeps its
/// device, its rates and its other entries; these replace the entries of
/// the same key. Throws Error when `path` holds something else or cannot
/// be written.
void writeDatabase(const std::string &path,
                   const std::vector<std::string> &measured);
/// Throws writeDatabase's Error now when `path` exists and is not a profile
/// database (before a run whose profile could not be written).
void checkDatabase(const std::string &path);

} // namespace opprofile

/// Before op `id` of a step (programs compiled with --profile-ops).
inline void opMark(int64_t id) {
  if (opprofile::active)
    opprofile::mark(id);
}

} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_OPPROFILE_H
