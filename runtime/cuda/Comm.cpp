//===- Comm.cpp - collectives and point to point over NCCL ----------------===//
//
// The CUDA backend of Comm.h (the data movement under common/Collectives.cpp,
// and send/recv), and of World.h's startWorld/finishWorld (the driver's
// multi-rank mode is the same on both backends).
//
// Bootstrap: MPI carries only host-side metadata. A communicator per rank
// list is an NCCL communicator whose ncclUniqueId the list's first rank
// creates and sends to the others over MPI point to point (so creating one
// involves the group's ranks only, as MPI_Comm_create_group does on the CPU
// backend); it is cached. Point to point uses one NCCL communicator over
// the whole world, created by initDevice when MPI runs several ranks.
//
// Streams: collectives run on the communication stream, send/recv on a
// third (p2p) stream. Before an operation, the
// communication stream waits for an event recorded on the compute stream
// (the operand is ready); after it, the compute stream waits for an event
// recorded on the communication stream (the result is ready before any
// kernel reads it, and a buffer the caching allocator hands out again is no
// longer being read or written by NCCL). The host never blocks except in
// recv's header exchange and in waitSends.
//
// Ranks sharing a GPU: NCCL refuses two ranks of one communicator on the
// same device, so when initDevice finds that (or TESSERA_CUDA_COMM=mpi asks
// for it) every collective and send/recv goes through MPI instead, on host
// copies of the operands (mpi/HostComm.cpp, the CPU backend's code): slow,
// but it runs any plan's ranks on one GPU, with the CPU backend's
// rank-order reductions. TESSERA_CUDA_COMM=nccl forces NCCL.
//
// Differences from the MPI backend: NCCL chooses its reduction order (every
// rank gets the same result, but not necessarily the serial left fold);
// i1 sums are reduced as max (logical or) and i1 min as min (logical and);
// float max/min do not promise NaN propagation.
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Comm.h"

#include "CommCommon.h"
#include "CudaRuntime.h"
#include "HostComm.h"
#include "Mpi.h"
#include "Watchdog.h"
#include "World.h"

#include <nccl.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace tessera {
namespace rt {
using namespace cuda;

namespace {

/// MPI's world (mpi::world(): its `dup` carries the NCCL ids and the
/// send/recv headers) and, beside it, NCCL's.
struct State {
  ncclComm_t world = nullptr; ///< point to point
  bool worldTried = false;
  /// Collectives and send/recv through MPI on host copies (ranks share a
  /// GPU, or TESSERA_CUDA_COMM=mpi).
  bool staged = false;
};
State &state() {
  static State s;
  return s;
}

/// The NCCL communicators of the rank lists used so far.
using Group = comm::Group<ncclComm_t>;
comm::GroupCache<ncclComm_t> &groups() {
  static comm::GroupCache<ncclComm_t> g(nullptr);
  return g;
}
ncclComm_t commOf(const comm::GroupInfo &g) {
  return static_cast<const Group &>(g).comm;
}

/// A send in flight: the tensor stays alive until its NCCL send is done.
struct PendingSend {
  MPI_Request header = MPI_REQUEST_NULL;
  std::vector<int64_t> headerData;
  Tensor data;
  cudaEvent_t done = nullptr;
  std::string what;
};
std::vector<PendingSend> &pendingSends() {
  static std::vector<PendingSend> p;
  return p;
}

/// Tensors that arrived ahead of the recv that wants them (NCCL delivers a
/// pair's messages in order; tags only select among them), by (peer, tag).
std::map<std::pair<int64_t, int64_t>, std::deque<Tensor>> &stash() {
  static std::map<std::pair<int64_t, int64_t>, std::deque<Tensor>> s;
  return s;
}

/// The MPI tag of headers; ids of communicators use tags below it.
constexpr int kHeaderTag = 32767;

void checkNccl(ncclResult_t rc, const std::string &what) {
  if (rc == ncclSuccess)
    return;
  throw Error(
      what + ": " + ncclGetErrorString(rc) +
      (rc == ncclSystemError || rc == ncclInternalError || rc == ncclRemoteError
           ? std::string(" (") + ncclGetLastError(nullptr) + ")"
           : std::string()));
}

ncclDataType_t ncclType(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return ncclFloat32;
  case DType::f64:
    return ncclFloat64;
  case DType::i32:
    return ncclInt32;
  case DType::i64:
    return ncclInt64;
  case DType::i1:
    return ncclUint8;
  case DType::bf16:
    return ncclBfloat16;
  }
  return ncclUint8;
}

ncclRedOp_t ncclOp(ReduceKind kind, DType dtype) {
  switch (kind) {
  case ReduceKind::sum:
    return dtype == DType::i1 ? ncclMax : ncclSum; // i1: logical or
  case ReduceKind::max:
    return ncclMax;
  case ReduceKind::min:
    return ncclMin;
  }
  return ncclSum;
}

/// `waiter` waits for `signaller`'s work so far (an event recorded now).
void streamAfter(cudaStream_t waiter, cudaStream_t signaller,
                 const std::string &what) {
  cudaEvent_t e;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
        what + ": cudaEventCreate");
  check(cudaEventRecord(e, signaller), what + ": cudaEventRecord");
  check(cudaStreamWaitEvent(waiter, e, 0), what + ": cudaStreamWaitEvent");
  cudaEventDestroy(e); // released once the wait is satisfied
}

/// `stream` (communication: comm, the default, or p2p) waits for the
/// compute stream's work so far.
void commAfterCompute(const std::string &what, cudaStream_t stream = nullptr) {
  streamAfter(stream ? stream : ctx().comm, ctx().compute, what);
}

/// The compute stream waits for `stream`'s work so far.
void computeAfterComm(const std::string &what, cudaStream_t stream = nullptr) {
  streamAfter(ctx().compute, stream ? stream : ctx().comm, what);
}

/// Creates an NCCL communicator over `ranks` (world ranks, this one at
/// `pos`): ranks[0] makes the id and sends it to the others over MPI.
ncclComm_t createComm(const std::vector<int64_t> &ranks, int pos,
                      const std::string &where) {
  MPI_Comm boot = mpi::world().dup;
  ctx(); // the GPU must be chosen first
  ncclUniqueId id;
  int tag = static_cast<int>(comm::hashRanks(ranks) % kHeaderTag);
  if (pos == 0) {
    checkNccl(ncclGetUniqueId(&id), where + ": ncclGetUniqueId");
    for (size_t i = 1; i < ranks.size(); ++i)
      mpi::check(MPI_Send(&id, sizeof(id), MPI_BYTE, static_cast<int>(ranks[i]),
                          tag, boot),
                 where + ": MPI_Send of the NCCL id");
  } else {
    mpi::check(MPI_Recv(&id, sizeof(id), MPI_BYTE, static_cast<int>(ranks[0]),
                        tag, boot, MPI_STATUS_IGNORE),
               where + ": MPI_Recv of the NCCL id");
  }
  ncclComm_t comm;
  checkNccl(ncclCommInitRank(&comm, static_cast<int>(ranks.size()), id, pos),
            where + ": ncclCommInitRank");
  return comm;
}

/// comm::checkPeer, and NCCL cannot send to the calling rank itself.
void checkPeer(int64_t peer, const std::string &where) {
  comm::checkPeer(peer, where);
  if (peer == worldRank())
    throw Error(where + ": a rank cannot send to itself");
}

/// True when MPI should carry the communication: TESSERA_CUDA_COMM=mpi, or
/// (unless it says nccl) two ranks on the same GPU of the same host.
/// Collective over the world; rank 0 says why.
bool useStagedComm(const mpi::World &w) {
  const char *env = std::getenv("TESSERA_CUDA_COMM");
  std::string mode = env ? env : "";
  if (!mode.empty() && mode != "auto" && mode != "nccl" && mode != "mpi")
    throw Error("TESSERA_CUDA_COMM must be auto, nccl or mpi, got '" + mode +
                "'");
  if (mode == "mpi")
    return true;
  if (mode == "nccl")
    return false;
  // Host name and PCI bus id of this rank's GPU, gathered from every rank.
  constexpr int kKey = 160;
  char key[kKey] = {};
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int hostLength = 0;
  mpi::check(MPI_Get_processor_name(host, &hostLength),
             "MPI_Get_processor_name");
  char bus[64] = {};
  check(cudaDeviceGetPCIBusId(bus, sizeof(bus), ctx().device),
        "cudaDeviceGetPCIBusId");
  std::snprintf(key, kKey, "%.95s/%s", host, bus);
  std::vector<char> keys(static_cast<size_t>(kKey) * w.size);
  mpi::check(
      MPI_Allgather(key, kKey, MPI_CHAR, keys.data(), kKey, MPI_CHAR, w.dup),
      "MPI_Allgather of the ranks' GPUs");
  for (int a = 0; a < w.size; ++a)
    for (int b = a + 1; b < w.size; ++b)
      if (std::strncmp(&keys[a * kKey], &keys[b * kKey], kKey) == 0) {
        if (w.rank == 0)
          std::fprintf(stderr,
                       "note: ranks %d and %d share GPU %s: collectives and "
                       "send/recv go through MPI on host copies (correct, "
                       "not fast; TESSERA_CUDA_COMM=nccl forces NCCL)\n",
                       a, b, &keys[a * kKey]);
        return true;
      }
  return false;
}

ncclComm_t worldComm(const std::string &where) {
  State &s = state();
  if (!s.world)
    throw Error(where + ": no NCCL world communicator (initDevice creates "
                        "it when MPI runs several ranks)");
  return s.world;
}

} // namespace

//===----------------------------------------------------------------------===//
// Start-up (World.h)
//===----------------------------------------------------------------------===//

void startWorld(int *argc, char ***argv) {
  if (!mpi::start(argc, argv))
    return;
  // Several ranks: choose the GPU and create the NCCL world communicator
  // now, while every rank is here (send/recv need it; initDevice does the
  // same again as a no-op).
  if (worldSize() > 1)
    initDevice();
}

void finishWorld() {
  mpi::finish([] {
    State &s = state();
    mpi::host::releaseGroups();
    groups().clear([](Group &g) { ncclCommDestroy(g.comm); });
    if (s.world)
      ncclCommDestroy(s.world);
    s.world = nullptr;
    s.worldTried = false;
    s.staged = false;
    stash().clear();
  });
}

namespace cuda {
/// Called by initDevice once the GPU is chosen: the world communicator of
/// send/recv must be created by every rank together, which only start-up
/// guarantees.
void initCommDevice() {
  State &s = state();
  const mpi::World &w = mpi::world();
  if (!w.active || w.size < 2 || s.worldTried)
    return;
  s.worldTried = true;
  s.staged = useStagedComm(w);
  if (s.staged)
    return;
  std::vector<int64_t> all(w.size);
  for (int r = 0; r < w.size; ++r)
    all[r] = r;
  s.world = createComm(all, w.rank, "NCCL world communicator");
}
} // namespace cuda

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

namespace comm {

const GroupInfo &group(const std::vector<int64_t> &ranks, const char *op) {
  if (state().staged)
    return mpi::host::group(ranks, op);
  return groups().get(
      ranks, op,
      [](const std::vector<int64_t> &ranks, int pos, const std::string &,
         const std::string &where) { return createComm(ranks, pos, where); });
}

Tensor operand(const Tensor &x) { return onDevice(x); }

/// One 2-d copy on the compute stream.
void copyRuns(Tensor &dst, int64_t dstOffset, int64_t dstPitch,
              const Tensor &src, int64_t srcOffset, int64_t srcPitch,
              int64_t run, int64_t rows, const std::string &where) {
  copy2D(static_cast<char *>(dst.deviceData()) + dstOffset, dstPitch,
         static_cast<const char *>(src.deviceData()) + srcOffset, srcPitch, run,
         rows, where.c_str());
}

Tensor allReduce(const GroupInfo &g, const Tensor &x, ReduceKind kind,
                 const std::string &where) {
  if (state().staged)
    return toDevice(mpi::host::allReduce(g, toHost(x), kind, where));
  Tensor out(x.shape(), x.dtype());
  if (!x.numel())
    return out;
  commAfterCompute(where);
  checkNccl(ncclAllReduce(x.deviceData(), out.deviceData(), x.numel(),
                          ncclType(x.dtype()), ncclOp(kind, x.dtype()),
                          commOf(g), ctx().comm),
            where + ": ncclAllReduce");
  computeAfterComm(where);
  return out;
}

Tensor allGatherPacked(const GroupInfo &g, const Tensor &x,
                       const std::string &where) {
  if (state().staged)
    return toDevice(mpi::host::allGatherPacked(g, toHost(x), where));
  Tensor packed({g.size * x.numel()}, x.dtype());
  if (x.numel()) {
    commAfterCompute(where);
    checkNccl(ncclAllGather(x.deviceData(), packed.deviceData(), x.numel(),
                            ncclType(x.dtype()), commOf(g), ctx().comm),
              where + ": ncclAllGather");
    computeAfterComm(where);
  }
  return packed;
}

Tensor reduceScatter(const GroupInfo &g, const Tensor &x, int64_t dim,
                     ReduceKind kind, const std::string &where) {
  if (state().staged)
    return toDevice(mpi::host::reduceScatter(g, toHost(x), dim, kind, where));
  // ncclReduceScatter reads the pieces one after the other.
  auto [packed, pieceShape] = packPieces(x, dim, g.size, where);
  Tensor out(pieceShape, packed.dtype());
  if (out.numel()) {
    commAfterCompute(where);
    checkNccl(ncclReduceScatter(packed.deviceData(), out.deviceData(),
                                out.numel(), ncclType(packed.dtype()),
                                ncclOp(kind, packed.dtype()), commOf(g),
                                ctx().comm),
              where + ": ncclReduceScatter");
    computeAfterComm(where);
  }
  return out;
}

Tensor allToAllPacked(const GroupInfo &g, const Tensor &packed,
                      const std::string &where) {
  if (state().staged)
    return toDevice(mpi::host::allToAllPacked(g, toHost(packed), where));
  int64_t piece = packed.numel() / g.size;
  Tensor received({packed.numel()}, packed.dtype());
  if (piece) {
    commAfterCompute(where);
    int64_t bytes = piece * dtypeSize(packed.dtype());
    const char *src = static_cast<const char *>(packed.deviceData());
    char *dst = static_cast<char *>(received.deviceData());
    ncclDataType_t type = ncclType(packed.dtype());
    // NCCL has no all-to-all: grouped sends and receives, one per peer.
    checkNccl(ncclGroupStart(), where + ": ncclGroupStart");
    for (int j = 0; j < g.size; ++j) {
      checkNccl(
          ncclSend(src + j * bytes, piece, type, j, commOf(g), ctx().comm),
          where + ": ncclSend");
      checkNccl(
          ncclRecv(dst + j * bytes, piece, type, j, commOf(g), ctx().comm),
          where + ": ncclRecv");
    }
    checkNccl(ncclGroupEnd(), where + ": ncclGroupEnd");
    computeAfterComm(where);
  }
  return received;
}

Tensor broadcastFrom(const GroupInfo &g, const Tensor &x, int rootPos,
                     const std::string &where) {
  if (state().staged)
    return toDevice(mpi::host::broadcastFrom(g, toHost(x), rootPos, where));
  Tensor out(x.shape(), x.dtype());
  if (x.numel()) {
    commAfterCompute(where);
    checkNccl(ncclBroadcast(x.deviceData(), out.deviceData(), x.numel(),
                            ncclType(x.dtype()), rootPos, commOf(g),
                            ctx().comm),
              where + ": ncclBroadcast");
    computeAfterComm(where);
  }
  return out;
}

} // namespace comm

//===----------------------------------------------------------------------===//
// Point to point
//===----------------------------------------------------------------------===//

void send(const Tensor &xIn, int64_t peer, int64_t tag) {
  if (state().staged)
    return mpi::host::send(toHost(xIn), peer, tag);
  std::string where = comm::sendWhere(peer, tag);
  checkPeer(peer, where);
  comm::checkTag(tag, where);
  Tensor x = onDevice(xIn);
  ncclComm_t comm = worldComm(where);
  // The header (user tag, dtype, shape) travels over MPI under one MPI tag,
  // so headers arrive in the order of the NCCL messages they describe.
  PendingSend p;
  p.headerData.push_back(tag);
  comm::appendHeader(p.headerData, x);
  p.data = x;
  p.what = where;
  mpi::check(MPI_Isend(p.headerData.data(),
                       static_cast<int>(p.headerData.size()), MPI_INT64_T,
                       static_cast<int>(peer), kHeaderTag, mpi::world().dup,
                       &p.header),
             where + ": MPI_Isend");
  if (x.numel()) {
    commAfterCompute(where, ctx().p2p);
    checkNccl(ncclSend(x.deviceData(), x.numel(), ncclType(x.dtype()),
                       static_cast<int>(peer), comm, ctx().p2p),
              where + ": ncclSend");
    check(cudaEventCreateWithFlags(&p.done, cudaEventDisableTiming),
          where + ": cudaEventCreate");
    check(cudaEventRecord(p.done, ctx().p2p), where + ": cudaEventRecord");
  }
  pendingSends().push_back(std::move(p));
}

Tensor recv(const Shape &shape, DType dtype, int64_t peer, int64_t tag) {
  if (state().staged)
    return toDevice(mpi::host::recv(shape, dtype, peer, tag));
  std::string where = comm::recvWhere(peer, tag);
  checkPeer(peer, where);
  comm::checkTag(tag, where);
  watchdog::Scope blocked(where);
  ncclComm_t comm = worldComm(where);
  auto &queue = stash()[{peer, tag}];
  Tensor got;
  if (!queue.empty()) {
    got = queue.front();
    queue.pop_front();
  }
  while (!got.defined()) {
    // The peer's next message, whatever its tag: NCCL delivers in order.
    MPI_Status status;
    mpi::check(MPI_Probe(static_cast<int>(peer), kHeaderTag, mpi::world().dup,
                         &status),
               where + ": MPI_Probe");
    int length = 0;
    mpi::check(MPI_Get_count(&status, MPI_INT64_T, &length),
               where + ": MPI_Get_count");
    std::vector<int64_t> header(std::max(length, 0));
    mpi::check(MPI_Recv(header.data(), length, MPI_INT64_T,
                        static_cast<int>(peer), kHeaderTag, mpi::world().dup,
                        MPI_STATUS_IGNORE),
               where + ": MPI_Recv");
    // The user's tag, then what comm::appendHeader wrote.
    std::pair<DType, Shape> sent = comm::readHeader(header, 1, where);
    Tensor t(sent.second, sent.first);
    if (t.numel()) {
      // t's block may have been in use on the compute stream until now.
      commAfterCompute(where, ctx().p2p);
      checkNccl(ncclRecv(t.deviceData(), t.numel(), ncclType(t.dtype()),
                         static_cast<int>(peer), comm, ctx().p2p),
                where + ": ncclRecv");
      computeAfterComm(where, ctx().p2p);
    }
    if (header[0] == tag)
      got = t;
    else
      stash()[{peer, header[0]}].push_back(t);
  }
  if (got.dtype() != dtype || got.shape() != shape)
    throw comm::mismatch(where, dtype, shape, peer, got.dtype(), got.shape());
  return got;
}

void waitSends() {
  if (state().staged)
    return mpi::host::waitSends();
  std::vector<PendingSend> all;
  all.swap(pendingSends());
  for (PendingSend &p : all) {
    watchdog::Scope blocked(p.what + " (completing the send)");
    mpi::check(MPI_Wait(&p.header, MPI_STATUS_IGNORE), p.what + ": MPI_Wait");
    if (p.done) {
      cudaError_t rc = cudaEventSynchronize(p.done);
      cudaEventDestroy(p.done);
      check(rc, p.what + ": cudaEventSynchronize");
    }
  }
}

} // namespace rt
} // namespace tessera
