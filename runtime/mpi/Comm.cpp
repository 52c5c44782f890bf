//===- Comm.cpp - collectives and point to point over MPI -----------------===//
//
// The CPU backend of Comm.h: the data movement under common/Collectives.cpp
// (CommCommon.h's hooks) and send/recv are HostComm.cpp's, which the CUDA
// backend also uses when ranks share a GPU; this file adds the start-up and
// the hooks that differ by backend (operands need no staging, copies are
// memcpy).
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Comm.h"

#include "CommCommon.h"
#include "HostComm.h"
#include "Mpi.h"
#include "World.h"

#include <cstring>

namespace tessera {
namespace rt {

//===----------------------------------------------------------------------===//
// Start-up
//===----------------------------------------------------------------------===//

void startWorld(int *argc, char ***argv) { mpi::start(argc, argv); }

void finishWorld() {
  mpi::finish([] { mpi::host::releaseGroups(); });
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

namespace comm {

const GroupInfo &group(const std::vector<int64_t> &ranks, const char *op) {
  return mpi::host::group(ranks, op);
}

Tensor operand(const Tensor &x) { return x; }

void copyRuns(Tensor &dst, int64_t dstOffset, int64_t dstPitch,
              const Tensor &src, int64_t srcOffset, int64_t srcPitch,
              int64_t run, int64_t rows, const std::string &) {
  char *d = static_cast<char *>(dst.rawData()) + dstOffset;
  const char *s = static_cast<const char *>(src.rawData()) + srcOffset;
  for (int64_t o = 0; o < rows; ++o)
    std::memcpy(d + o * dstPitch, s + o * srcPitch, run);
}

Tensor allReduce(const GroupInfo &g, const Tensor &x, ReduceKind kind,
                 const std::string &where) {
  return mpi::host::allReduce(g, x, kind, where);
}

Tensor allGatherPacked(const GroupInfo &g, const Tensor &x,
                       const std::string &where) {
  return mpi::host::allGatherPacked(g, x, where);
}

Tensor allToAllPacked(const GroupInfo &g, const Tensor &packed,
                      const std::string &where) {
  return mpi::host::allToAllPacked(g, packed, where);
}

Tensor reduceScatter(const GroupInfo &g, const Tensor &x, int64_t dim,
                     ReduceKind kind, const std::string &where) {
  return mpi::host::reduceScatter(g, x, dim, kind, where);
}

Tensor broadcastFrom(const GroupInfo &g, const Tensor &x, int rootPos,
                     const std::string &where) {
  return mpi::host::broadcastFrom(g, x, rootPos, where);
}

} // namespace comm

//===----------------------------------------------------------------------===//
// Point to point
//===----------------------------------------------------------------------===//

void send(const Tensor &x, int64_t peer, int64_t tag) {
  mpi::host::send(x, peer, tag);
}

Tensor recv(const Shape &shape, DType dtype, int64_t peer, int64_t tag) {
  return mpi::host::recv(shape, dtype, peer, tag);
}

void waitSends() { mpi::host::waitSends(); }

} // namespace rt
} // namespace tessera
