//===- Roofline.h - Roofline time of one operator ---------------*- C++ -*-===//
//
// The per-operator estimate: an operator that performs `flops` arithmetic
// and moves `bytes` through device memory can go no faster than either
// resource allows. The op interface supplies flops and bytes from shapes;
// this function only turns them into seconds on a spec.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_COST_ROOFLINE_H
#define TESSERA_COST_ROOFLINE_H

#include "tessera/Cost/DeviceSpec.h"

#include <string>

namespace tessera::cost {

/// op_overhead + max(flops / peak(dtype), bytes / memory bandwidth), in
/// seconds.
double rooflineTime(const DeviceSpec &spec, double flops, double bytes,
                    const std::string &dtype);

/// Arithmetic intensity (FLOP/byte) at which \p dtype turns compute bound.
double ridgePoint(const DeviceSpec &spec, const std::string &dtype);

} // namespace tessera::cost

#endif // TESSERA_COST_ROOFLINE_H
