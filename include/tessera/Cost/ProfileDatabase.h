//===- ProfileDatabase.h - Measured operator times --------------*- C++ -*-===//
//
// Analytical estimates are wrong by constant factors that differ per kernel;
// measured times fix that. The database maps (op, dtype, operand shapes) to a
// measured time in seconds and, when it has an entry, overrides the roofline.
//
// Format:
//   {"device": "h100-sxm",
//    "entries": [{"op": "matmul", "dtype": "bf16",
//                 "shapes": [[8, 1024, 1024], [1024, 4096]],
//                 "seconds": 1.2e-4}, ...]}
//
// An entry without "shapes" but with "seconds_per_flop" is a rate: any
// shape of that op and dtype takes seconds + flops x seconds_per_flop, with
// the op's FLOPs as the cost interface counts them (one per result element
// for an element-wise op, 2MNK for a matmul). tessera-calibrate writes
// rates; an entry for the exact shapes wins over a rate.
//
// The entry {"op": "driver", "dtype": "", "shapes": []} is not an op: it
// is the seconds a one-rank program's step takes outside its step function
// (the driver's batch, checks, step report and log line), which `run
// --profile-ops` measures (runtime OpProfile.h, kDriverOp) and the auto
// planner adds to every plan's step.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_COST_PROFILEDATABASE_H
#define TESSERA_COST_PROFILEDATABASE_H

#include "tessera/Cost/DeviceSpec.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera::cost {

using Shape = std::vector<int64_t>;

class ProfileDatabase {
public:
  static ProfileDatabase parse(const std::string &jsonText,
                               const std::string &origin = "<profile>");
  static ProfileDatabase load(const std::string &path);

  /// Records (or replaces) a measurement.
  void add(const std::string &op, const std::string &dtype,
           const std::vector<Shape> &shapes, double seconds);

  /// Records (or replaces) a rate: seconds + flops x secondsPerFlop.
  void addRate(const std::string &op, const std::string &dtype, double seconds,
               double secondsPerFlop);

  /// The measured time for exactly these shapes.
  std::optional<double> lookup(const std::string &op, const std::string &dtype,
                               const std::vector<Shape> &shapes) const;
  /// The measured time for these shapes, else from the op's rate at
  /// \p flops, else nullopt.
  std::optional<double> lookup(const std::string &op, const std::string &dtype,
                               const std::vector<Shape> &shapes,
                               double flops) const;
  /// The time from the op's rate alone (shapes unknown or not matching).
  std::optional<double> lookupRate(const std::string &op,
                                   const std::string &dtype,
                                   double flops) const;

  /// The driver's measured seconds per step outside the step function
  /// (the "driver" entry), if the database has it.
  std::optional<double> driverSeconds() const {
    return lookup(kDriverOp, "", {});
  }
  static constexpr const char *kDriverOp = "driver";

  const std::string &device() const { return deviceName; }
  size_t size() const { return entries.size() + rates.size(); }

private:
  static std::string key(const std::string &op, const std::string &dtype,
                         const std::vector<Shape> &shapes);
  std::string deviceName;
  std::map<std::string, double> entries;
  struct Rate {
    double seconds = 0, secondsPerFlop = 0;
  };
  std::map<std::string, Rate> rates; ///< by "op|dtype"
};

/// Measured time when \p profile has the op (its shapes, or a rate),
/// roofline estimate otherwise.
double estimateOpTime(const DeviceSpec &spec, const ProfileDatabase *profile,
                      const std::string &op, const std::string &dtype,
                      const std::vector<Shape> &shapes, double flops,
                      double bytes);

} // namespace tessera::cost

#endif // TESSERA_COST_PROFILEDATABASE_H
