//===- Collectives.cpp - the collectives of Comm.h, for both backends -----===//
//
// The backend-independent half of every collective: the group's checks,
// the message prefix, dimension checks, the shortcut for a group of one
// rank, and the layout of split and gathered pieces. The data movement is
// the backend's (CommCommon.h's hooks, in mpi/Comm.cpp and cuda/Comm.cpp).
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Comm.h"

#include "CommCommon.h"
#include "Watchdog.h"

namespace tessera {
namespace rt {

std::pair<Tensor, Shape> comm::packPieces(const Tensor &x, int64_t dim,
                                          int64_t n, const std::string &where) {
  comm::Pieces p = comm::splitPieces(x, dim, n, where);
  Shape pieceShape = x.shape();
  pieceShape[dim] /= n;
  if (p.outer == 1 || !x.numel())
    return {x.view({x.numel()}), pieceShape};
  Tensor out({x.numel()}, x.dtype());
  for (int64_t j = 0; j < n; ++j)
    comm::copyRuns(out, j * p.outer * p.run, p.run, x, j * p.run, n * p.run,
                   p.run, p.outer, where);
  return {out, pieceShape};
}

namespace {

/// The inverse of packPieces: n pieces of `pieceShape`, one after the other
/// in `packed`, concatenated along `dim`.
Tensor unpackPieces(const Tensor &packed, const Shape &pieceShape, int64_t dim,
                    int64_t n, const std::string &where) {
  Shape shape;
  comm::Pieces p =
      comm::concatPieces(pieceShape, dim, n, dtypeSize(packed.dtype()), shape);
  if (p.outer == 1 || !packed.numel())
    return packed.view(shape);
  Tensor out(shape, packed.dtype());
  for (int64_t j = 0; j < n; ++j)
    comm::copyRuns(out, j * p.run, n * p.run, packed, j * p.outer * p.run,
                   p.run, p.run, p.outer, where);
  return out;
}

} // namespace

Tensor all_reduce(const Tensor &xIn, const std::vector<int64_t> &ranks,
                  ReduceKind kind) {
  const comm::GroupInfo &g = comm::group(ranks, "all_reduce");
  Tensor x = comm::operand(xIn);
  if (g.size == 1)
    return clone(x);
  std::string where =
      std::string("all_reduce(") + comm::kindName(kind) + ") over " + g.desc;
  watchdog::Scope blocked(where);
  return comm::allReduce(g, x, kind, where);
}

Tensor all_gather(const Tensor &xIn, const std::vector<int64_t> &ranks,
                  int64_t dim) {
  const comm::GroupInfo &g = comm::group(ranks, "all_gather");
  std::string where = "all_gather over " + g.desc;
  Tensor x = comm::operand(xIn);
  dim = comm::normalizeDim(x, dim, where);
  if (g.size == 1)
    return clone(x);
  watchdog::Scope blocked(where);
  Tensor packed = comm::allGatherPacked(g, x, where);
  return unpackPieces(packed, x.shape(), dim, g.size, where);
}

Tensor reduce_scatter(const Tensor &xIn, const std::vector<int64_t> &ranks,
                      int64_t dim, ReduceKind kind) {
  const comm::GroupInfo &g = comm::group(ranks, "reduce_scatter");
  std::string where = std::string("reduce_scatter(") + comm::kindName(kind) +
                      ") over " + g.desc;
  Tensor x = comm::operand(xIn);
  dim = comm::normalizeDim(x, dim, where);
  if (g.size == 1)
    return clone(x);
  comm::splitPieces(x, dim, g.size, where);
  watchdog::Scope blocked(where);
  return comm::reduceScatter(g, x, dim, kind, where);
}

Tensor all_to_all(const Tensor &xIn, const std::vector<int64_t> &ranks,
                  int64_t splitDim, int64_t concatDim) {
  const comm::GroupInfo &g = comm::group(ranks, "all_to_all");
  std::string where = "all_to_all over " + g.desc;
  Tensor x = comm::operand(xIn);
  splitDim = comm::normalizeDim(x, splitDim, where);
  concatDim = comm::normalizeDim(x, concatDim, where);
  if (g.size == 1)
    return clone(x);
  auto [packed, pieceShape] = comm::packPieces(x, splitDim, g.size, where);
  Tensor received;
  {
    watchdog::Scope blocked(where);
    received = comm::allToAllPacked(g, packed, where);
  }
  return unpackPieces(received, pieceShape, concatDim, g.size, where);
}

Tensor broadcast(const Tensor &xIn, const std::vector<int64_t> &ranks,
                 int64_t root) {
  const comm::GroupInfo &g = comm::group(ranks, "broadcast");
  std::string where =
      "broadcast from rank " + std::to_string(root) + " over " + g.desc;
  int rootPos = comm::rootPosition(ranks, root, where);
  Tensor x = comm::operand(xIn);
  if (g.size == 1)
    return clone(x);
  watchdog::Scope blocked(where);
  return comm::broadcastFrom(g, x, rootPos, where);
}

} // namespace rt
} // namespace tessera
