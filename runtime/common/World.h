//===- World.h - the ranks of a job, as the driver sees them ----*- C++ -*-===//
//
// What the backend-independent driver (common/Driver.cpp) needs of a job of
// several ranks, without MPI's types: starting and ending the world (each
// backend also sets up and frees its communicators), aborting the job, and
// the driver's own messages to rank 0 over the whole world. Implemented over
// MPI (mpi/World.cpp; startWorld/finishWorld in each backend's Comm.cpp),
// which both backends use: the CPU backend's communicators are MPI's, the
// CUDA backend bootstraps NCCL over it. Not installed; worldRank() and
// worldSize() are Comm.h's.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMMON_WORLD_H
#define TESSERA_RUNTIME_COMMON_WORLD_H

#include "tessera/runtime/Tensor.h"

#include <cstdint>
#include <string>

namespace tessera {
namespace rt {

/// MPI_Init unless MPI is already initialised, MPI calls made to return
/// errors, and the backend's communication set up (CUDA: the GPU and the
/// NCCL world communicator when there are several ranks). Collective over
/// the world; a no-op while the world is started.
void startWorld(int *argc, char ***argv);
/// Completes pending sends, frees the backend's cached communicators and,
/// if startWorld started MPI, calls MPI_Finalize. Collective over the world;
/// a no-op unless the world is started.
void finishWorld();
/// True between startWorld() and finishWorld().
bool worldStarted();
/// The largest tag send/recv accept (MPI_TAG_UB, at least 32767).
int64_t worldTagUpperBound();
/// Ends every rank of the job (MPI_Abort on the whole world with `code`).
void abortWorld(int code);

// The driver's messages (its gathers to rank 0) run on the whole world,
// which the programs' send/recv (on a private duplicate) never match. Each
// throws Error("<what>: <the MPI call><detail> failed: <MPI's error>").

/// Rank 0 receives every rank's `count` values into `all` (rank order).
void worldGather(const int *mine, int count, int *all, const std::string &what);
void worldGather(const double *mine, int count, double *all,
                 const std::string &what);
/// Rank 0 receives rank r's `count` bytes at all + displs[r] (counts[r]).
void worldGatherv(const char *mine, int count, char *all, const int *counts,
                  const int *displs, const std::string &what);
/// Rank r receives counts[r] bytes from rank 0's `all` + displs[r].
void worldScatterv(const char *all, const int *counts, const int *displs,
                   char *mine, int count, const std::string &what);
/// Blocking send of a host tensor's data to `dest` / receive into a host
/// tensor of the right shape and dtype from `source`.
void worldSend(const Tensor &t, int dest, int tag, const std::string &what,
               const std::string &detail);
void worldRecv(Tensor &t, int source, int tag, const std::string &what,
               const std::string &detail);

} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_COMMON_WORLD_H
