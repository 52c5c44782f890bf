//===- Collectives.h - Alpha-beta cost of collectives -----------*- C++ -*-===//
//
// The one collective cost model, in the alpha-beta form: each message a rank
// sends on the critical path pays a latency alpha and each byte beta
// (1/bandwidth). Ring algorithms are bandwidth optimal but pay (n-1)
// latencies; tree algorithms pay log2(n) latencies and win for small
// messages. Its users:
// - the RVD search (lib/Layout) prices every collective step and every
//   send/recv with it, ring algorithms, on its per-axis alpha-beta links;
// - the auto policy (dist-plan plan=auto) takes the cheaper of ring and tree
//   on a device spec's links (bestCollectiveTime).
// The alpha-beta overloads never throw (the RVD search is called by passes
// built without exceptions, and checks its links up front); the LinkSpec
// overloads check their arguments and throw tessera::Exception.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_COST_COLLECTIVES_H
#define TESSERA_COST_COLLECTIVES_H

#include "tessera/Cost/DeviceSpec.h"

#include <cstdint>
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

/// A link in the alpha-beta model.
struct AlphaBeta {
  double alpha = 0; ///< seconds per message
  double beta = 0;  ///< seconds per byte (1 / bandwidth)
};

/// \p link in the alpha-beta form: alpha = latency, beta = 1 / bandwidth.
AlphaBeta alphaBeta(const LinkSpec &link);

/// What one rank sends on the critical path of a collective.
struct CollectiveTraffic {
  double messages = 0;
  double bytes = 0;
};

/// The traffic of one collective over \p ranks ranks (>= 1). \p bytes (>= 0)
/// is the size of the full logical tensor: the all-reduced buffer, the
/// gathered output, the scattered input, the broadcast or sent buffer. A
/// send/recv is one message even when \p ranks is 1 (its two ends are
/// different devices); any other collective over one rank sends nothing.
CollectiveTraffic collectiveTraffic(Collective kind,
                                    CollectiveAlgorithm algorithm, double bytes,
                                    int64_t ranks) noexcept;

/// Time of one collective: messages * alpha + bytes * beta of its traffic.
/// The arguments are not checked (see collectiveTraffic; alpha and beta
/// finite and non-negative).
double collectiveTime(Collective kind, CollectiveAlgorithm algorithm,
                      double bytes, int64_t ranks,
                      const AlphaBeta &link) noexcept;

/// The same on a device spec's link; throws tessera::Exception for fewer
/// than one rank, negative bytes or a link without bandwidth.
double collectiveTime(Collective kind, CollectiveAlgorithm algorithm,
                      double bytes, int ranks, const LinkSpec &link);

/// The link a group of \p ranks ranks, \p stride apart in rank order, uses
/// on \p spec: inside a node when it spans at most one node's devices,
/// otherwise the slower inter-node link.
const LinkSpec &linkForGroup(const DeviceSpec &spec, int64_t ranks,
                             int64_t stride = 1);

/// min over ring and tree on \p link.
double bestCollectiveTime(Collective kind, double bytes, int ranks,
                          const LinkSpec &link);

/// min over ring and tree on the link of a group of consecutive ranks.
double bestCollectiveTime(const DeviceSpec &spec, Collective kind, double bytes,
                          int ranks);

} // namespace tessera::cost

#endif // TESSERA_COST_COLLECTIVES_H
