//===- MpiCommon.cpp - MPI helpers both backends share --------------------===//
//
// Mpi.h's error check and dtype mapping; the start-up itself (mpi::init,
// finalize) is each backend's own (the CUDA one also sets up NCCL).
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

} // namespace rt
} // namespace tessera
