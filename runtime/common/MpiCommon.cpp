//===- MpiCommon.cpp - MPI helpers both backends share --------------------===//
//
// Mpi.h's error check, dtype mapping and the MPI part of start-up; init()
// and finalize() are each backend's own (the CUDA one also sets up NCCL).
//
//===----------------------------------------------------------------------===//

#include "Mpi.h"

#include <cstdio>

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
  }
  return MPI_BYTE;
}

mpi::World mpi::startWorld(int *argc, char ***argv) {
  World w;
  int initialized = 0;
  if (MPI_Initialized(&initialized) != MPI_SUCCESS)
    throw Error("MPI_Initialized failed");
  if (!initialized) {
    // MPI's default handler aborts on error before we can name the failing
    // call; MPI_Init has no communicator yet, so its failure is fatal anyway.
    if (MPI_Init(argc, argv) != MPI_SUCCESS)
      throw Error("MPI_Init failed");
    w.startedMpi = true;
  }
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
        "MPI_Comm_set_errhandler(MPI_COMM_WORLD)");
  check(MPI_Comm_rank(MPI_COMM_WORLD, &w.rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &w.size), "MPI_Comm_size");
  check(MPI_Comm_dup(MPI_COMM_WORLD, &w.dup), "MPI_Comm_dup(MPI_COMM_WORLD)");
  check(MPI_Comm_set_errhandler(w.dup, MPI_ERRORS_RETURN),
        "MPI_Comm_set_errhandler");
  void *tagUb = nullptr;
  int found = 0;
  check(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tagUb, &found),
        "MPI_Comm_get_attr(MPI_TAG_UB)");
  if (found && tagUb)
    w.tagUpperBound = *static_cast<int *>(tagUb);
  return w;
}

} // namespace rt
} // namespace tessera
