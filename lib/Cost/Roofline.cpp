//===- Roofline.cpp - Roofline time of one operator -----------------------===//

#include "tessera/Cost/Roofline.h"

#include <algorithm>

namespace tessera::cost {

double rooflineTime(const DeviceSpec &spec, double flops, double bytes,
                    const std::string &dtype) {
  if (flops < 0 || bytes < 0)
    throw Exception("roofline: flops and bytes must be non-negative");
  double compute = flops / spec.peakFlopsFor(dtype);
  double memory = bytes / spec.memoryBandwidth;
  return spec.opOverhead + std::max(compute, memory);
}

double ridgePoint(const DeviceSpec &spec, const std::string &dtype) {
  return spec.peakFlopsFor(dtype) / spec.memoryBandwidth;
}

} // namespace tessera::cost
