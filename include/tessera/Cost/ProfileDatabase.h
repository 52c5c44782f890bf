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

  std::optional<double> lookup(const std::string &op, const std::string &dtype,
                               const std::vector<Shape> &shapes) const;

  const std::string &device() const { return deviceName; }
  size_t size() const { return entries.size(); }

private:
  static std::string key(const std::string &op, const std::string &dtype,
                         const std::vector<Shape> &shapes);
  std::string deviceName;
  std::map<std::string, double> entries;
};

/// Measured time when \p profile has the op, roofline estimate otherwise.
double estimateOpTime(const DeviceSpec &spec, const ProfileDatabase *profile,
                      const std::string &op, const std::string &dtype,
                      const std::vector<Shape> &shapes, double flops,
                      double bytes);

} // namespace tessera::cost

#endif // TESSERA_COST_PROFILEDATABASE_H
