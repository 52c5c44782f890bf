//===- HostComm.h - collectives and point to point on host tensors, MPI ---===//
//
// The MPI data movement of both backends, on host tensors: the CPU
// backend's communicators (mpi/Comm.cpp forwards CommCommon.h's hooks and
// send/recv here), and the CUDA backend's when several ranks share one GPU
// and NCCL cannot run (cuda/Comm.cpp copies operands to the host and the
// results back). Every reduction folds the ranks' values in rank order, the
// one order that makes a data-parallel run equal, bit for bit, to gradient
// accumulation over as many micro-batches.
//
// Collectives run on one communicator per rank list (MPI_Comm_create_group,
// created on first use and cached); point to point runs on the world's
// private duplicate (mpi::world().dup). Results are fresh host tensors.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_MPI_HOSTCOMM_H
#define TESSERA_RUNTIME_MPI_HOSTCOMM_H

#include "CommCommon.h"
#include "Mpi.h"

#include <string>
#include <vector>

namespace tessera {
namespace rt {
namespace mpi {
namespace host {

using Group = comm::Group<MPI_Comm>;

/// The group of `ranks` (checked by comm::checkGroup on first use).
const Group &group(const std::vector<int64_t> &ranks, const char *op);
/// Frees every cached communicator (before MPI_Finalize).
void releaseGroups();

Tensor allReduce(const comm::GroupInfo &g, const Tensor &x, ReduceKind kind,
                 const std::string &where);
Tensor allGatherPacked(const comm::GroupInfo &g, const Tensor &x,
                       const std::string &where);
Tensor allToAllPacked(const comm::GroupInfo &g, const Tensor &packed,
                      const std::string &where);
/// Piece g.pos of x cut along `dim`, reduced over the group in member
/// order. Each piece goes from x to its member as it lies (strided runs are
/// one MPI vector datatype: nothing is packed), and the receiver folds the
/// pieces one at a time, so its only buffers beside the result are one
/// piece (and, for bf16, an f32 accumulator of one piece).
Tensor reduceScatter(const comm::GroupInfo &g, const Tensor &x, int64_t dim,
                     ReduceKind kind, const std::string &where);
Tensor broadcastFrom(const comm::GroupInfo &g, const Tensor &x, int rootPos,
                     const std::string &where);

/// Comm.h's send/recv/waitSends on host tensors: a header (dtype, shape)
/// then the data, both non-blocking on the sender's side.
void send(const Tensor &x, int64_t peer, int64_t tag);
Tensor recv(const Shape &shape, DType dtype, int64_t peer, int64_t tag);
void waitSends();

} // namespace host
} // namespace mpi
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_MPI_HOSTCOMM_H
