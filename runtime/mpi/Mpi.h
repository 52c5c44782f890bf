//===- Mpi.h - MPI start-up and error checks (private) ----------*- C++ -*-===//
//
// Shared by the communicators (Comm.cpp), the driver (common/Driver.cpp) and
// the MPI tests. Not part of the API emitted programs see: runMain owns
// MPI's lifetime.
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

#include <string>

namespace tessera {
namespace rt {
namespace mpi {

/// MPI_Init unless MPI is already initialised, then makes MPI calls return
/// errors (instead of aborting) and creates the communicators' private
/// duplicate of MPI_COMM_WORLD. Collective over MPI_COMM_WORLD.
void init(int *argc, char ***argv);
/// Completes pending sends, frees the cached communicators and, if init()
/// started MPI, calls MPI_Finalize. Collective over MPI_COMM_WORLD.
void finalize();
/// What start-up finds, for both backends' init(): MPI_Init unless MPI is
/// already initialised (startedMpi), MPI calls made to return errors, and a
/// private duplicate of MPI_COMM_WORLD (`dup`, errors returned too).
struct World {
  int rank = 0, size = 1;
  MPI_Comm dup = MPI_COMM_NULL;
  int64_t tagUpperBound = 32767; ///< MPI_TAG_UB
  bool startedMpi = false;
};
World startWorld(int *argc, char ***argv);
/// True between init() and finalize().
bool active();
/// Throws Error("<what>: <MPI's error string>") unless rc is MPI_SUCCESS.
void check(int rc, const std::string &what);
/// The MPI datatype of one element of `dtype` (i1: MPI_UINT8_T).
MPI_Datatype datatype(DType dtype);

} // namespace mpi
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_MPI_MPI_H
