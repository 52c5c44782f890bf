//===- HostComm.cpp - collectives and point to point on host tensors ------===//
//
// See HostComm.h. Point to point runs on a private duplicate of the world
// communicator so that the driver's own messages (on the world itself) can
// never match a program's.
//
//===----------------------------------------------------------------------===//

#include "HostComm.h"

#include "DType.h"

#include "Watchdog.h"
#include "World.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

namespace tessera {
namespace rt {
namespace mpi {
namespace host {

namespace {

/// The communicators of the rank lists used so far.
comm::GroupCache<MPI_Comm> &groups() {
  static comm::GroupCache<MPI_Comm> g(MPI_COMM_NULL);
  return g;
}
MPI_Comm commOf(const comm::GroupInfo &g) {
  return static_cast<const host::Group &>(g).comm;
}

/// A send in flight: the tensor and header stay alive until it completes.
struct PendingSend {
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  std::vector<int64_t> header;
  Tensor data;
  std::string what;
};
std::vector<PendingSend> &pendingSends() {
  static std::vector<PendingSend> p;
  return p;
}

/// MPI counts are int: larger messages would need derived datatypes, which
/// no CPU-sized tensor needs yet.
int toCount(int64_t n, const std::string &what) {
  if (n > INT_MAX)
    throw Error(what + ": " + std::to_string(n) +
                " elements do not fit one MPI message");
  return static_cast<int>(n);
}

/// The communicator of a group of several ranks (checked by
/// comm::checkGroup). MPI_Comm_create_group is collective over the group
/// alone, so disjoint groups ({0,2} and {1,3}) can be created concurrently.
MPI_Comm createComm(const std::vector<int64_t> &ranks, const std::string &desc,
                    const std::string &where) {
  MPI_Comm comm = MPI_COMM_NULL;
  int size = static_cast<int>(ranks.size());
  MPI_Group worldGroup, group;
  mpi::check(MPI_Comm_group(mpi::world().dup, &worldGroup),
             where + ": MPI_Comm_group");
  std::vector<int> members(ranks.begin(), ranks.end());
  int rc = MPI_Group_incl(worldGroup, size, members.data(), &group);
  MPI_Group_free(&worldGroup);
  mpi::check(rc, where + ": MPI_Group_incl");
  // The tag keeps apart concurrent creations that share processes; any
  // value works as long as the members agree, so derive it from the list.
  int tag = static_cast<int>(comm::hashRanks(ranks) % 32768);
  watchdog::Scope blocked(where + ": creating the communicator of " + desc);
  rc = MPI_Comm_create_group(mpi::world().dup, group, tag, &comm);
  MPI_Group_free(&group);
  mpi::check(rc, where + ": MPI_Comm_create_group");
  mpi::check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN),
             where + ": MPI_Comm_set_errhandler");
  return comm;
}

template <typename T> T combine(T a, T b, ReduceKind kind) {
  switch (kind) {
  case ReduceKind::sum:
    return a + b;
  case ReduceKind::max:
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(a) || std::isnan(b))
        return a + b; // NaN, as torch.maximum
    return b > a ? b : a;
  case ReduceKind::min:
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(a) || std::isnan(b))
        return a + b;
    return b < a ? b : a;
  }
  return a;
}

/// Acc: the type the fold runs in (bf16 folds in f32 and rounds once).
template <typename T, typename Acc = T>
void foldTyped(const void *src, int64_t n, int64_t count, void *dst,
               ReduceKind kind) {
  const T *in = static_cast<const T *>(src);
  T *out = static_cast<T *>(dst);
  if constexpr (std::is_same_v<T, Acc>) {
    // Block by block into `out`, the kind chosen once per block: each
    // element is still combined left to right (the same bits as one
    // accumulator per element), and the sum is a loop the compiler
    // vectorizes. Element by element with the kind's switch inside, the
    // fold of a dp step's gradients took a tenth of a CPU rank's time.
    std::copy(in, in + count, out);
    for (int64_t j = 1; j < n; ++j) {
      const T *block = in + j * count;
      if (kind == ReduceKind::sum)
        for (int64_t i = 0; i < count; ++i)
          out[i] = out[i] + block[i];
      else
        for (int64_t i = 0; i < count; ++i)
          out[i] = combine(out[i], block[i], kind);
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    Acc acc = static_cast<Acc>(in[i]);
    for (int64_t j = 1; j < n; ++j)
      acc = combine(acc, static_cast<Acc>(in[j * count + i]), kind);
    out[i] = static_cast<T>(acc);
  }
}

void foldBool(const void *src, int64_t n, int64_t count, void *dst,
              ReduceKind kind) {
  const uint8_t *in = static_cast<const uint8_t *>(src);
  uint8_t *out = static_cast<uint8_t *>(dst);
  for (int64_t i = 0; i < count; ++i) {
    bool acc = in[i] != 0;
    for (int64_t j = 1; j < n; ++j)
      acc = kind == ReduceKind::min ? acc && in[j * count + i] != 0
                                    : acc || in[j * count + i] != 0;
    out[i] = acc;
  }
}

/// dst[i] = src[0*count + i] op src[1*count + i] op ... (n blocks), folded
/// left to right: the one place that fixes the reduction order.
void fold(const void *src, int64_t n, int64_t count, void *dst, DType dtype,
          ReduceKind kind) {
  switch (dtype) {
  case DType::f32:
    return foldTyped<float>(src, n, count, dst, kind);
  case DType::f64:
    return foldTyped<double>(src, n, count, dst, kind);
  case DType::i32:
    return foldTyped<int32_t>(src, n, count, dst, kind);
  case DType::i64:
    return foldTyped<int64_t>(src, n, count, dst, kind);
  case DType::i1:
    return foldBool(src, n, count, dst, kind);
  case DType::bf16:
    return foldTyped<detail::BFloat16, float>(src, n, count, dst, kind);
  }
}

/// One step of fold() done a piece at a time: acc[i] = src[i] (first) or
/// acc[i] op src[i], over `rows` runs of `run` elements, run o of src at
/// element o * pitch. Store is what acc holds between steps: T itself,
/// f32 for bf16 (widened and rounded once at the end by the caller), and a
/// byte for i1.
template <typename T, typename Acc = T, typename Store = T>
void foldPieceTyped(void *accV, const void *srcV, int64_t rows, int64_t run,
                    int64_t pitch, bool first, ReduceKind kind) {
  Store *acc = static_cast<Store *>(accV);
  const T *src = static_cast<const T *>(srcV);
  for (int64_t o = 0; o < rows; ++o)
    for (int64_t i = 0; i < run; ++i) {
      Acc v = static_cast<Acc>(src[o * pitch + i]);
      Store &a = acc[o * run + i];
      a = static_cast<Store>(first ? v : combine(static_cast<Acc>(a), v, kind));
    }
}

void foldPiece(void *acc, const void *src, int64_t rows, int64_t run,
               int64_t pitch, bool first, DType dtype, ReduceKind kind) {
  switch (dtype) {
  case DType::f32:
    return foldPieceTyped<float>(acc, src, rows, run, pitch, first, kind);
  case DType::f64:
    return foldPieceTyped<double>(acc, src, rows, run, pitch, first, kind);
  case DType::i32:
    return foldPieceTyped<int32_t>(acc, src, rows, run, pitch, first, kind);
  case DType::i64:
    return foldPieceTyped<int64_t>(acc, src, rows, run, pitch, first, kind);
  case DType::i1:
    // As foldBool: min is "and", sum and max are "or".
    return foldPieceTyped<uint8_t, bool>(acc, src, rows, run, pitch, first,
                                         kind);
  case DType::bf16:
    return foldPieceTyped<detail::BFloat16, float, float>(acc, src, rows, run,
                                                          pitch, first, kind);
  }
}

/// Below this many bytes gathered per rank, all_reduce gathers whole tensors
/// and folds them (one collective, latency-bound sizes); above, each rank
/// folds one chunk (bandwidth-bound sizes). Both fold in the same order, so
/// the size never changes a result.
constexpr int64_t kSmallAllReduceBytes = 64 * 1024;

/// Completes `p`, throwing with its description on failure.
void complete(PendingSend &p) {
  watchdog::Scope blocked(p.what + " (completing the send)");
  for (MPI_Request &r : p.requests)
    if (r != MPI_REQUEST_NULL)
      mpi::check(MPI_Wait(&r, MPI_STATUS_IGNORE), p.what + ": MPI_Wait");
}

} // namespace

const Group &group(const std::vector<int64_t> &ranks, const char *op) {
  return groups().get(
      ranks, op,
      [](const std::vector<int64_t> &ranks, int, const std::string &desc,
         const std::string &where) { return createComm(ranks, desc, where); });
}

void releaseGroups() {
  groups().clear([](Group &g) {
    mpi::check(MPI_Comm_free(&g.comm), "MPI_Comm_free(" + g.desc + ")");
  });
}

Tensor allReduce(const comm::GroupInfo &g, const Tensor &x, ReduceKind kind,
                 const std::string &where) {
  MPI_Comm c = commOf(g);
  int64_t n = g.size, numel = x.numel(), esize = dtypeSize(x.dtype());
  MPI_Datatype type = mpi::datatype(x.dtype());
  Tensor out(x.shape(), x.dtype(), Device::host);
  if (numel * n * esize <= kSmallAllReduceBytes) {
    Tensor all({n * numel}, x.dtype(), Device::host);
    int count = toCount(numel, where);
    mpi::check(
        MPI_Allgather(x.rawData(), count, type, all.rawData(), count, type, c),
        where + ": MPI_Allgather");
    fold(all.rawData(), n, numel, out.rawData(), x.dtype(), kind);
    return out;
  }
  // Chunk j of the flat tensor is folded by the rank at position j.
  std::vector<int> counts(n), displs(n);
  for (int64_t j = 0, offset = 0; j < n; ++j) {
    int64_t cnt = numel / n + (j < numel % n ? 1 : 0);
    counts[j] = toCount(cnt, where);
    displs[j] = toCount(offset, where);
    offset += cnt;
  }
  int mine = counts[g.pos];
  Tensor chunks({n * mine}, x.dtype(), Device::host);
  std::vector<int> recvCounts(n, mine), recvDispls(n);
  for (int64_t j = 0; j < n; ++j)
    recvDispls[j] = toCount(j * mine, where);
  mpi::check(MPI_Alltoallv(x.rawData(), counts.data(), displs.data(), type,
                           chunks.rawData(), recvCounts.data(),
                           recvDispls.data(), type, c),
             where + ": MPI_Alltoallv");
  char *outBytes = static_cast<char *>(out.rawData());
  fold(chunks.rawData(), n, mine, outBytes + displs[g.pos] * esize, x.dtype(),
       kind);
  mpi::check(MPI_Allgatherv(MPI_IN_PLACE, 0, type, outBytes, counts.data(),
                            displs.data(), type, c),
             where + ": MPI_Allgatherv");
  return out;
}

Tensor allGatherPacked(const comm::GroupInfo &g, const Tensor &x,
                       const std::string &where) {
  int count = toCount(x.numel(), where);
  MPI_Datatype type = mpi::datatype(x.dtype());
  Tensor packed({g.size * x.numel()}, x.dtype(), Device::host);
  mpi::check(MPI_Allgather(x.rawData(), count, type, packed.rawData(), count,
                           type, commOf(g)),
             where + ": MPI_Allgather");
  return packed;
}

Tensor allToAllPacked(const comm::GroupInfo &g, const Tensor &packed,
                      const std::string &where) {
  int count = toCount(packed.numel() / g.size, where);
  MPI_Datatype type = mpi::datatype(packed.dtype());
  Tensor received({packed.numel()}, packed.dtype(), Device::host);
  mpi::check(MPI_Alltoall(packed.rawData(), count, type, received.rawData(),
                          count, type, commOf(g)),
             where + ": MPI_Alltoall");
  return received;
}

Tensor reduceScatter(const comm::GroupInfo &g, const Tensor &x, int64_t dim,
                     ReduceKind kind, const std::string &where) {
  // MPI_Reduce_scatter_block would need the pieces packed (a second
  // whole-size buffer for a dimension that is not outermost) and gives no
  // fold order; this sends each piece from x as it lies and folds the
  // pieces one at a time in member order, as fold() does, so the results
  // are the same bit for bit and the scratch is one piece.
  MPI_Comm c = commOf(g);
  int64_t n = g.size;
  comm::Pieces p = comm::splitPieces(x, dim, n, where);
  Shape pieceShape = x.shape();
  pieceShape[dim] /= n;
  DType dtype = x.dtype();
  Tensor out(pieceShape, dtype, Device::host);
  int64_t numel = out.numel();
  if (!numel)
    return out;
  int64_t esize = dtypeSize(dtype), run = p.run / esize, rows = p.outer;
  int count = toCount(numel, where);
  MPI_Datatype elem = mpi::datatype(dtype);
  // Piece j: `rows` runs of `run` elements, n * run apart, from element
  // j * run of x.
  MPI_Datatype piece = elem;
  int pieceCount = count;
  if (rows > 1) {
    mpi::check(MPI_Type_vector(toCount(rows, where), toCount(run, where),
                               toCount(n * run, where), elem, &piece),
               where + ": MPI_Type_vector");
    mpi::check(MPI_Type_commit(&piece), where + ": MPI_Type_commit");
    pieceCount = 1;
  }
  const char *base = static_cast<const char *>(x.rawData());
  // One tag suffices: the group's communicator carries nothing else point
  // to point, and every member calls its collectives in the same order.
  constexpr int kTag = 0;
  std::vector<MPI_Request> sends;
  for (int64_t j = 0; j < n; ++j) {
    if (j == g.pos)
      continue;
    sends.emplace_back(MPI_REQUEST_NULL);
    mpi::check(MPI_Isend(base + j * p.run, pieceCount, piece,
                         static_cast<int>(j), kTag, c, &sends.back()),
               where + ": MPI_Isend");
  }
  Tensor received(pieceShape, dtype, Device::host);
  // bf16 folds in f32 and rounds once, as fold() does.
  Tensor wide = dtype == DType::bf16
                    ? Tensor(pieceShape, DType::f32, Device::host)
                    : Tensor();
  for (int64_t j = 0; j < n; ++j) {
    const void *src = base + j * p.run;
    int64_t pitch = n * run;
    if (j != g.pos) {
      mpi::check(MPI_Recv(received.rawData(), count, elem, static_cast<int>(j),
                          kTag, c, MPI_STATUS_IGNORE),
                 where + ": MPI_Recv");
      src = received.rawData();
      pitch = run;
    }
    foldPiece(dtype == DType::bf16 ? wide.rawData() : out.rawData(), src, rows,
              run, pitch, j == 0, dtype, kind);
  }
  if (dtype == DType::bf16) {
    const float *w = static_cast<const float *>(wide.rawData());
    auto *o = static_cast<detail::BFloat16 *>(out.rawData());
    for (int64_t i = 0; i < numel; ++i)
      o[i] = detail::BFloat16(w[i]);
  }
  mpi::check(MPI_Waitall(static_cast<int>(sends.size()), sends.data(),
                         MPI_STATUSES_IGNORE),
             where + ": MPI_Waitall");
  if (rows > 1)
    mpi::check(MPI_Type_free(&piece), where + ": MPI_Type_free");
  return out;
}

Tensor broadcastFrom(const comm::GroupInfo &g, const Tensor &x, int rootPos,
                     const std::string &where) {
  int count = toCount(x.numel(), where);
  // The root's tensor is only read, so it is sent from in place; the result
  // is a fresh tensor on every rank, as the other collectives return.
  Tensor out =
      g.pos == rootPos ? clone(x) : Tensor(x.shape(), x.dtype(), Device::host);
  mpi::check(MPI_Bcast(out.rawData(), count, mpi::datatype(x.dtype()), rootPos,
                       commOf(g)),
             where + ": MPI_Bcast");
  return out;
}

//===----------------------------------------------------------------------===//
// Point to point
//===----------------------------------------------------------------------===//

void send(const Tensor &x, int64_t peer, int64_t tag) {
  std::string where = comm::sendWhere(peer, tag);
  comm::checkPeer(peer, where);
  comm::checkTag(tag, where);
  // A header first, so that recv can name both shapes on a mismatch; the
  // same (peer, tag, communicator) keeps header and data in order.
  PendingSend p;
  comm::appendHeader(p.header, x);
  p.data = x;
  p.what = where;
  int count = toCount(x.numel(), where);
  mpi::check(MPI_Isend(p.header.data(), static_cast<int>(p.header.size()),
                       MPI_INT64_T, static_cast<int>(peer),
                       static_cast<int>(tag), mpi::world().dup, &p.requests[0]),
             where + ": MPI_Isend");
  mpi::check(MPI_Isend(x.rawData(), count, mpi::datatype(x.dtype()),
                       static_cast<int>(peer), static_cast<int>(tag),
                       mpi::world().dup, &p.requests[1]),
             where + ": MPI_Isend");
  std::vector<PendingSend> &pending = pendingSends();
  pending.push_back(std::move(p));
  // Drop finished sends now and then, so a long step (many micro-batches)
  // does not hold every sent tensor until waitSends().
  if (pending.size() % 32 == 0) {
    std::vector<PendingSend> still;
    for (PendingSend &q : pending) {
      int done = 1;
      for (MPI_Request &r : q.requests) {
        int flag = 1;
        if (r != MPI_REQUEST_NULL)
          mpi::check(MPI_Test(&r, &flag, MPI_STATUS_IGNORE),
                     q.what + ": MPI_Test");
        done = done && flag;
      }
      if (!done)
        still.push_back(std::move(q));
    }
    pending.swap(still);
  }
}

Tensor recv(const Shape &shape, DType dtype, int64_t peer, int64_t tag) {
  std::string where = comm::recvWhere(peer, tag);
  watchdog::Scope blocked(where);
  comm::checkPeer(peer, where);
  comm::checkTag(tag, where);
  MPI_Status status;
  mpi::check(MPI_Probe(static_cast<int>(peer), static_cast<int>(tag),
                       mpi::world().dup, &status),
             where + ": MPI_Probe");
  int headerLength = 0;
  mpi::check(MPI_Get_count(&status, MPI_INT64_T, &headerLength),
             where + ": MPI_Get_count");
  std::vector<int64_t> header(std::max(headerLength, 0));
  mpi::check(MPI_Recv(header.data(), headerLength, MPI_INT64_T,
                      static_cast<int>(peer), static_cast<int>(tag),
                      mpi::world().dup, MPI_STATUS_IGNORE),
             where + ": MPI_Recv");
  auto [sentType, sentShape] = comm::readHeader(header, 0, where);
  if (sentType != dtype || sentShape != shape) {
    // Consume the data too, so that the next message on this tag is not
    // mistaken for a header.
    std::vector<char> discard(shapeNumel(sentShape) * dtypeSize(sentType));
    mpi::check(MPI_Recv(discard.data(),
                        toCount(static_cast<int64_t>(discard.size()), where),
                        MPI_BYTE, static_cast<int>(peer), static_cast<int>(tag),
                        mpi::world().dup, MPI_STATUS_IGNORE),
               where + ": MPI_Recv");
    throw comm::mismatch(where, dtype, shape, peer, sentType, sentShape);
  }
  Tensor out(shape, dtype, Device::host);
  mpi::check(MPI_Recv(out.rawData(), toCount(out.numel(), where),
                      mpi::datatype(dtype), static_cast<int>(peer),
                      static_cast<int>(tag), mpi::world().dup,
                      MPI_STATUS_IGNORE),
             where + ": MPI_Recv");
  return out;
}

void waitSends() {
  std::vector<PendingSend> &pending = pendingSends();
  // Taken out first: a failure leaves no half-completed entries behind.
  std::vector<PendingSend> all;
  all.swap(pending);
  for (PendingSend &p : all)
    complete(p);
}

} // namespace host
} // namespace mpi
} // namespace rt
} // namespace tessera
