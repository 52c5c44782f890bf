//===- World.cpp - MPI start-up and the world, for both backends ----------===//
//
// The MPI side that the CPU backend (whose communicators are MPI's) and the
// CUDA backend (whose NCCL communicators are bootstrapped over MPI) share:
// Mpi.h's world state, start-up and teardown, error check and dtype
// mapping, and World.h's abort and driver messages. Each backend's
// startWorld/finishWorld (its Comm.cpp) wraps mpi::start and mpi::finish
// with its own communicators.
//
//===----------------------------------------------------------------------===//

#include "Mpi.h"

#include "Bootstrap.h"
#include "CommCommon.h"

#include "tessera/runtime/Comm.h"

#include "Watchdog.h"
#include "World.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#ifdef __linux__
#include <sched.h>
#endif

namespace tessera {
namespace rt {

void mpi::check(int rc, const std::string &what) {
  if (rc == MPI_SUCCESS)
    return;
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, message, &length) != MPI_SUCCESS)
    length = std::snprintf(message, sizeof(message), "MPI error %d", rc);
  throw Error(what + " failed: " + std::string(message, length));
}

MPI_Datatype mpi::datatype(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return MPI_FLOAT;
  case DType::f64:
    return MPI_DOUBLE;
  case DType::i32:
    return MPI_INT32_T;
  case DType::i64:
    return MPI_INT64_T;
  case DType::i1:
    return MPI_UINT8_T;
  case DType::bf16: // moved as bits; reductions fold on the host
    return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

//===----------------------------------------------------------------------===//
// Start-up and teardown
//===----------------------------------------------------------------------===//

mpi::World &mpi::world() {
  static World w;
  return w;
}

/// TESSERA_CPU_SPREAD, set by a compiled program's run script under
/// TESSERA_BIND=spread when its ranks outnumber the host's CPUs: binds
/// this rank to its CPU
/// (comm::spreadCpu), so that ranks that compute at the same time (a
/// pipeline stage's dp and tp ranks) do not take turns on one core while
/// another holds only waiting ranks: the kernel does not move them apart
/// itself, since a waiting rank polls and every core looks busy. The
/// calling thread only; threads started later inherit it.
static void bindToSpreadCpu(int rank, int size) {
  const char *spread = std::getenv("TESSERA_CPU_SPREAD");
  if (!spread || !*spread)
    return;
#ifdef __linux__
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0)
    throw Error(std::string("TESSERA_CPU_SPREAD: sched_getaffinity: ") +
                std::strerror(errno));
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask))
      cpus.push_back(c);
  int cpu = comm::spreadCpu(spread, rank, size, cpus);
  CPU_ZERO(&mask);
  CPU_SET(cpu, &mask);
  if (sched_setaffinity(0, sizeof mask, &mask) != 0)
    throw Error("TESSERA_CPU_SPREAD: cannot bind rank " + std::to_string(rank) +
                " to CPU " + std::to_string(cpu) + ": " + std::strerror(errno));
#endif
}

bool mpi::start(int *argc, char ***argv) {
  if (world().active)
    return false;
  // Filled aside and stored once complete: a failure leaves the world as it
  // was (not started).
  World w;
  int initialized = 0;
  if (MPI_Initialized(&initialized) != MPI_SUCCESS)
    throw Error("MPI_Initialized failed");
  if (!initialized) {
    // Ranks started by environment variables (torchrun, Slurm without PMI)
    // meet before MPI_Init, which then knows where to find the others.
    if (std::optional<EnvironmentLaunch> launch = environmentLaunch()) {
      w.bootstrap = std::make_shared<Bootstrap>(*launch);
      w.bootstrap->beforeInit();
    }
    // MPI's default handler aborts on error before we can name the failing
    // call; MPI_Init has no communicator yet, so its failure is fatal anyway.
    if (MPI_Init(argc, argv) != MPI_SUCCESS)
      throw Error("MPI_Init failed");
    w.startedMpi = true;
  }
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
        "MPI_Comm_set_errhandler(MPI_COMM_WORLD)");
  if (w.bootstrap)
    w.comm = w.bootstrap->joinWorld();
  check(MPI_Comm_rank(w.comm, &w.rank), "MPI_Comm_rank");
  check(MPI_Comm_size(w.comm, &w.size), "MPI_Comm_size");
  check(MPI_Comm_dup(w.comm, &w.dup), "MPI_Comm_dup(the world)");
  check(MPI_Comm_set_errhandler(w.dup, MPI_ERRORS_RETURN),
        "MPI_Comm_set_errhandler");
  void *tagUb = nullptr;
  int found = 0;
  check(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tagUb, &found),
        "MPI_Comm_get_attr(MPI_TAG_UB)");
  if (found && tagUb)
    w.tagUpperBound = *static_cast<int *>(tagUb);
  w.active = true;
  world() = w;
  // Once started, so that an error ends the job as any rank's error does.
  bindToSpreadCpu(w.rank, w.size);
  return true;
}

void mpi::finish(const std::function<void()> &releaseCommunicators) {
  World &w = world();
  if (!w.active)
    return;
  waitSends();
  // Marked inactive first: a failure below must not leave a half-freed
  // state that a second finish() would free again.
  w.active = false;
  releaseCommunicators();
  check(MPI_Comm_free(&w.dup), "MPI_Comm_free");
  if (w.comm != MPI_COMM_WORLD)
    check(MPI_Comm_free(&w.comm), "MPI_Comm_free");
  w.comm = MPI_COMM_WORLD;
  w.rank = 0;
  w.size = 1;
  if (w.bootstrap)
    w.bootstrap->beforeFinalize();
  if (w.startedMpi) {
    watchdog::Scope blocked("MPI_Finalize");
    check(MPI_Finalize(), "MPI_Finalize");
  }
  w.startedMpi = false;
  if (w.bootstrap)
    w.bootstrap->afterFinalize();
  w.bootstrap.reset();
}

bool worldStarted() { return mpi::world().active; }
int64_t worldRank() { return mpi::world().active ? mpi::world().rank : 0; }
int64_t worldSize() { return mpi::world().active ? mpi::world().size : 1; }
int64_t worldTagUpperBound() { return mpi::world().tagUpperBound; }

void abortWorld(int code) { MPI_Abort(mpi::world().comm, code); }

//===----------------------------------------------------------------------===//
// The driver's messages, on the world communicator
//===----------------------------------------------------------------------===//

void worldGather(const int *mine, int count, int *all,
                 const std::string &what) {
  watchdog::Scope blocked(what + " (gather to rank 0)");
  mpi::check(MPI_Gather(mine, count, MPI_INT, all, count, MPI_INT, 0,
                        mpi::world().comm),
             what + ": MPI_Gather");
}

void worldGather(const double *mine, int count, double *all,
                 const std::string &what) {
  watchdog::Scope blocked(what + " (gather to rank 0)");
  mpi::check(MPI_Gather(mine, count, MPI_DOUBLE, all, count, MPI_DOUBLE, 0,
                        mpi::world().comm),
             what + ": MPI_Gather");
}

void worldGatherv(const char *mine, int count, char *all, const int *counts,
                  const int *displs, const std::string &what) {
  watchdog::Scope blocked(what + " (gather to rank 0)");
  mpi::check(MPI_Gatherv(mine, count, MPI_CHAR, all, counts, displs, MPI_CHAR,
                         0, mpi::world().comm),
             what + ": MPI_Gatherv");
}

void worldScatterv(const char *all, const int *counts, const int *displs,
                   char *mine, int count, const std::string &what) {
  watchdog::Scope blocked(what + " (scatter from rank 0)");
  mpi::check(MPI_Scatterv(all, counts, displs, MPI_CHAR, mine, count, MPI_CHAR,
                          0, mpi::world().comm),
             what + ": MPI_Scatterv");
}

void worldSend(const Tensor &t, int dest, int tag, const std::string &what,
               const std::string &detail) {
  watchdog::Scope blocked(what + ": send to rank " + std::to_string(dest));
  mpi::check(MPI_Send(t.rawData(), static_cast<int>(t.numel()),
                      mpi::datatype(t.dtype()), dest, tag, mpi::world().comm),
             what + ": MPI_Send" + detail);
}

void worldRecv(Tensor &t, int source, int tag, const std::string &what,
               const std::string &detail) {
  watchdog::Scope blocked(what + ": receive from rank " +
                          std::to_string(source));
  mpi::check(MPI_Recv(t.rawData(), static_cast<int>(t.numel()),
                      mpi::datatype(t.dtype()), source, tag, mpi::world().comm,
                      MPI_STATUS_IGNORE),
             what + ": MPI_Recv" + detail);
}

} // namespace rt
} // namespace tessera
