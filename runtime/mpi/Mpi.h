//===- Mpi.h - MPI start-up and error checks (private) ----------*- C++ -*-===//
//
// The MPI layer under both backends' communicators (mpi/Comm.cpp; the CUDA
// backend's cuda/Comm.cpp bootstraps NCCL over it) and the MPI tests. Not
// part of the API emitted programs see, and not seen by the
// backend-independent code either: the driver reaches MPI through World.h.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_MPI_MPI_H
#define TESSERA_RUNTIME_MPI_MPI_H

#include "tessera/runtime/Tensor.h"

// Only MPI's C API is used; Open MPI's deprecated C++ bindings would only
// add warnings.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <functional>
#include <memory>
#include <string>

namespace tessera {
namespace rt {
namespace mpi {

class Bootstrap;

/// The world as start-up found it: MPI_Init unless MPI was already
/// initialised (startedMpi), MPI calls made to return errors, the world
/// communicator (`comm`: MPI_COMM_WORLD, or the one Bootstrap.h builds for
/// ranks started by environment variables) and a private duplicate of it
/// (`dup`, errors returned too) for the communicators.
/// worldRank()/worldSize() read it.
struct World {
  bool active = false; ///< between start() and finish()
  bool startedMpi = false;
  int rank = 0, size = 1;
  MPI_Comm comm = MPI_COMM_WORLD;
  MPI_Comm dup = MPI_COMM_NULL;
  /// Set when the ranks were started by environment variables.
  std::shared_ptr<Bootstrap> bootstrap;
  int64_t tagUpperBound = 32767; ///< MPI_TAG_UB
};
World &world();
/// Starts the world (collective over all ranks; Bootstrap.h's rendezvous
/// first when environment variables started them); false, doing nothing,
/// when it is started already. The backends' startWorld.
bool start(int *argc, char ***argv);
/// Unless the world is not started: completes pending sends (waitSends),
/// marks it stopped, calls `releaseCommunicators` (the backend's cached
/// ones), frees `dup` and, if start() started MPI, calls MPI_Finalize.
/// Collective over the world. The backends' finishWorld.
void finish(const std::function<void()> &releaseCommunicators);
/// Throws Error("<what> failed: <MPI's error string>") unless rc is
/// MPI_SUCCESS.
void check(int rc, const std::string &what);
/// The MPI datatype of one element of `dtype` (i1: MPI_UINT8_T).
MPI_Datatype datatype(DType dtype);

} // namespace mpi
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_MPI_MPI_H
