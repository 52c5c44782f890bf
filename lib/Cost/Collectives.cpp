//===- Collectives.cpp - Alpha-beta cost of collectives -------------------===//

#include "tessera/Cost/Collectives.h"
#include "tessera/Support/EnumNames.h"

#include <algorithm>
#include <cmath>

namespace tessera::cost {

namespace {
constexpr support::EnumName<Collective> kCollectiveNames[] = {
    {Collective::AllReduce, "all_reduce"},
    {Collective::AllGather, "all_gather"},
    {Collective::ReduceScatter, "reduce_scatter"},
    {Collective::Broadcast, "broadcast"},
    {Collective::AllToAll, "all_to_all"},
    {Collective::SendRecv, "send_recv"}};
} // namespace

Collective parseCollective(const std::string &name) {
  if (std::optional<Collective> kind =
          support::parseEnum(kCollectiveNames, name))
    return *kind;
  throw Exception("unknown collective '" + name + "'");
}

const char *collectiveName(Collective kind) {
  return support::enumName(kCollectiveNames, kind);
}

AlphaBeta alphaBeta(const LinkSpec &link) {
  return {link.latency, 1.0 / link.bandwidth};
}

CollectiveTraffic collectiveTraffic(Collective kind,
                                    CollectiveAlgorithm algorithm, double bytes,
                                    int64_t ranks) noexcept {
  // A point-to-point transfer is not a group operation: it costs one message
  // even when "ranks" is 1 (the two ends are different devices).
  if (kind == Collective::SendRecv)
    return {1, bytes};
  if (ranks <= 1)
    return {0, 0};
  const double n = static_cast<double>(ranks);
  // Fraction of the buffer each rank must send in a bandwidth-optimal
  // algorithm: everything except its own 1/n share.
  const double share = (n - 1) / n;
  const double logN = std::ceil(std::log2(n));
  if (algorithm == CollectiveAlgorithm::Ring) {
    switch (kind) {
    case Collective::AllReduce: // reduce-scatter then all-gather
      return {2 * (n - 1), 2 * share * bytes};
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
      return {n - 1, share * bytes};
    case Collective::Broadcast: // pipelined chain: latency per hop only
      return {n - 1, bytes};
    case Collective::SendRecv:
      break;
    }
  } else {
    switch (kind) {
    case Collective::AllReduce: // pipelined reduce up + broadcast down
      return {2 * logN, 2 * bytes};
    case Collective::Broadcast:
      return {logN, bytes};
    case Collective::AllGather: // recursive doubling / halving
    case Collective::ReduceScatter:
      return {logN, share * bytes};
    case Collective::AllToAll: // Bruck: log rounds, half the data each
      return {logN, 0.5 * logN * bytes};
    case Collective::SendRecv:
      break;
    }
  }
  return {0, 0};
}

double collectiveTime(Collective kind, CollectiveAlgorithm algorithm,
                      double bytes, int64_t ranks,
                      const AlphaBeta &link) noexcept {
  CollectiveTraffic traffic = collectiveTraffic(kind, algorithm, bytes, ranks);
  return traffic.messages * link.alpha + traffic.bytes * link.beta;
}

double collectiveTime(Collective kind, CollectiveAlgorithm algorithm,
                      double bytes, int ranks, const LinkSpec &link) {
  if (ranks < 1)
    throw Exception("collective over fewer than one rank");
  if (bytes < 0)
    throw Exception("collective of a negative number of bytes");
  if (!(link.bandwidth > 0))
    throw Exception("collective over a link without bandwidth");
  return collectiveTime(kind, algorithm, bytes, int64_t(ranks),
                        alphaBeta(link));
}

const LinkSpec &linkForGroup(const DeviceSpec &spec, int64_t ranks,
                             int64_t stride) {
  return ranks * stride <= spec.devicesPerNode ? spec.intraNode
                                               : spec.interNode;
}

double bestCollectiveTime(Collective kind, double bytes, int ranks,
                          const LinkSpec &link) {
  double ring =
      collectiveTime(kind, CollectiveAlgorithm::Ring, bytes, ranks, link);
  double tree =
      collectiveTime(kind, CollectiveAlgorithm::Tree, bytes, ranks, link);
  return std::min(ring, tree);
}

double bestCollectiveTime(const DeviceSpec &spec, Collective kind, double bytes,
                          int ranks) {
  return bestCollectiveTime(kind, bytes, ranks, linkForGroup(spec, ranks));
}

} // namespace tessera::cost
