//===- Collectives.h - Alpha-beta cost of collectives -----------*- C++ -*-===//
//
// Communication cost in the alpha-beta model: each message pays a latency
// alpha and each byte 1/bandwidth. Ring algorithms are bandwidth optimal but
// pay (n-1) latencies; tree algorithms pay log2(n) latencies and win for small
// messages. The RVD layout solver and the planner ask for the cheaper one.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_COST_COLLECTIVES_H
#define TESSERA_COST_COLLECTIVES_H

#include "tessera/Cost/DeviceSpec.h"

#include <string>

namespace tessera::cost {

enum class Collective {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  AllToAll,
  SendRecv
};

enum class CollectiveAlgorithm { Ring, Tree };

/// Parses "all_reduce", "all_gather", "reduce_scatter", "broadcast",
/// "all_to_all", "send_recv"; throws Exception otherwise.
Collective parseCollective(const std::string &name);
const char *collectiveName(Collective kind);

/// Time of one collective over \p ranks ranks on \p link. \p bytes is the
/// size of the full logical tensor (the all-reduced buffer, the gathered
/// output, the scattered input, the broadcast or sent buffer).
double collectiveTime(Collective kind, CollectiveAlgorithm algorithm,
                      double bytes, int ranks, const LinkSpec &link);

/// The link a group of \p ranks consecutive ranks uses on \p spec: inside a
/// node when it fits in one, otherwise the slower inter-node link.
const LinkSpec &linkForGroup(const DeviceSpec &spec, int ranks);

/// min over ring and tree on the group's link.
double bestCollectiveTime(const DeviceSpec &spec, Collective kind, double bytes,
                          int ranks);

} // namespace tessera::cost

#endif // TESSERA_COST_COLLECTIVES_H
