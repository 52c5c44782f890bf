//===- Collectives.cpp - Alpha-beta cost of collectives -------------------===//

#include "tessera/Cost/Collectives.h"

#include <cmath>

namespace tessera::cost {

Collective parseCollective(const std::string &name) {
  if (name == "all_reduce")
    return Collective::AllReduce;
  if (name == "all_gather")
    return Collective::AllGather;
  if (name == "reduce_scatter")
    return Collective::ReduceScatter;
  if (name == "broadcast")
    return Collective::Broadcast;
  if (name == "all_to_all")
    return Collective::AllToAll;
  if (name == "send_recv")
    return Collective::SendRecv;
  throw Exception("unknown collective '" + name + "'");
}

const char *collectiveName(Collective kind) {
  switch (kind) {
  case Collective::AllReduce:
    return "all_reduce";
  case Collective::AllGather:
    return "all_gather";
  case Collective::ReduceScatter:
    return "reduce_scatter";
  case Collective::Broadcast:
    return "broadcast";
  case Collective::AllToAll:
    return "all_to_all";
  case Collective::SendRecv:
    return "send_recv";
  }
  return "?";
}

double collectiveTime(Collective kind, CollectiveAlgorithm algorithm,
                      double bytes, int ranks, const LinkSpec &link) {
  if (ranks < 1)
    throw Exception("collective over fewer than one rank");
  if (bytes < 0)
    throw Exception("collective of a negative number of bytes");
  if (!(link.bandwidth > 0))
    throw Exception("collective over a link without bandwidth");
  // A point-to-point transfer is not a group operation: it costs one message
  // even when "ranks" is 1 (the two ends are different devices).
  if (kind == Collective::SendRecv)
    return link.latency + bytes / link.bandwidth;
  if (ranks == 1)
    return 0;
  const double n = ranks;
  const double a = link.latency;
  const double perByte = 1.0 / link.bandwidth;
  // Fraction of the buffer each rank must send in a bandwidth-optimal
  // algorithm: everything except its own 1/n share.
  const double share = (n - 1) / n;
  const double logN = std::ceil(std::log2(n));
  if (algorithm == CollectiveAlgorithm::Ring) {
    switch (kind) {
    case Collective::AllReduce: // reduce-scatter then all-gather
      return 2 * (n - 1) * a + 2 * share * bytes * perByte;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
      return (n - 1) * a + share * bytes * perByte;
    case Collective::Broadcast: // pipelined chain: latency per hop only
      return (n - 1) * a + bytes * perByte;
    case Collective::SendRecv:
      break;
    }
  } else {
    switch (kind) {
    case Collective::AllReduce: // pipelined reduce up + broadcast down
      return 2 * logN * a + 2 * bytes * perByte;
    case Collective::Broadcast:
      return logN * a + bytes * perByte;
    case Collective::AllGather: // recursive doubling / halving
    case Collective::ReduceScatter:
      return logN * a + share * bytes * perByte;
    case Collective::AllToAll: // Bruck: log rounds, half the data each
      return logN * a + 0.5 * logN * bytes * perByte;
    case Collective::SendRecv:
      break;
    }
  }
  return 0;
}

const LinkSpec &linkForGroup(const DeviceSpec &spec, int ranks) {
  return ranks <= spec.devicesPerNode ? spec.intraNode : spec.interNode;
}

double bestCollectiveTime(const DeviceSpec &spec, Collective kind, double bytes,
                          int ranks) {
  const LinkSpec &link = linkForGroup(spec, ranks);
  double ring =
      collectiveTime(kind, CollectiveAlgorithm::Ring, bytes, ranks, link);
  double tree =
      collectiveTime(kind, CollectiveAlgorithm::Tree, bytes, ranks, link);
  return std::min(ring, tree);
}

} // namespace tessera::cost
