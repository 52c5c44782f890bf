//===- Comm.h - collectives and point to point between ranks ----*- C++ -*-===//
//
// Part of the runtime API (see Runtime.h, the umbrella header). The dist
// dialect's communication ops lower to these calls. The CPU backend
// (runtime/mpi/Comm.cpp) implements them with MPI, the CUDA backend
// (runtime/cuda/Comm.cpp) with NCCL; runMain initialises MPI when
// Program::worldSize > 1.
//
// Groups are explicit sorted lists of world ranks that include the calling
// rank. A group of one rank never touches MPI (the op is a local copy), so a
// single-rank program runs without MPI. Every MPI failure throws Error naming
// the operation, the group and MPI's error string.
//
// Determinism: reductions do not use MPI_Allreduce/MPI_Reduce_scatter, whose
// summation order Open MPI chooses per message size and rank count. Each rank
// instead reduces its chunk of the data in the order of `ranks`
// (((x_r0 + x_r1) + x_r2) + ...) in the tensor's dtype, and the reduced
// chunks are then exchanged. So every rank gets the identical (bit for bit)
// result, equal to the serial left fold over the ranks' values; for two
// ranks that is exactly a + b.
//
// i1 tensors reduce as booleans: sum and max are logical or, min is
// logical and. Float max/min propagate NaN.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMM_H
#define TESSERA_RUNTIME_COMM_H

#include "tessera/runtime/Tensor.h"

#include <cstdint>
#include <vector>

namespace tessera {
namespace rt {

enum class ReduceKind { sum, max, min };

/// Collectives over an explicit sorted list of world ranks that includes the
/// calling rank (the groups of the dist dialect). Communicators for a rank
/// list are created once (MPI_Comm_create_group, collective over the group
/// only) and cached. All operate on whole tensors (f32, f64, i32, i64, i1),
/// and every rank of the group passes a tensor of the same shape and dtype.
Tensor all_reduce(const Tensor &x, const std::vector<int64_t> &ranks,
                  ReduceKind kind);
/// Concatenates the pieces along `dim` in the order of `ranks`.
Tensor all_gather(const Tensor &x, const std::vector<int64_t> &ranks,
                  int64_t dim);
/// Reduces, then the rank at position i of `ranks` keeps piece i along `dim`
/// (x.dim(dim) must divide by the group size).
Tensor reduce_scatter(const Tensor &x, const std::vector<int64_t> &ranks,
                      int64_t dim, ReduceKind kind);
/// Splits x along splitDim into n pieces, sends piece j to ranks[j], and
/// concatenates the received pieces along concatDim in the order of ranks.
Tensor all_to_all(const Tensor &x, const std::vector<int64_t> &ranks,
                  int64_t splitDim, int64_t concatDim);
/// The value of world rank `root` (which is in `ranks`) on every rank; the
/// other ranks' x gives only the shape and dtype.
Tensor broadcast(const Tensor &x, const std::vector<int64_t> &ranks,
                 int64_t root);

/// Point to point. send is asynchronous: the tensor is kept alive (tensors
/// are immutable, so no copy is needed) and the request completed at the
/// latest by the next call of waitSends() (the driver calls it at the end of
/// every step), so a rank never blocks in send. recv blocks until the tensor
/// arrives; its shape and dtype must match the sent tensor's (a mismatch is
/// an error naming both). Tags (0 <= tag <= MPI_TAG_UB, which MPI makes at
/// least 32767) distinguish messages between the same pair of ranks;
/// messages with the same peer and tag arrive in the order they were sent.
void send(const Tensor &x, int64_t peer, int64_t tag);
Tensor recv(const Shape &shape, DType dtype, int64_t peer, int64_t tag);
/// Completes every pending send.
void waitSends();

/// MPI's rank and size of MPI_COMM_WORLD; 0 and 1 while MPI is not
/// initialised.
int64_t worldRank();
int64_t worldSize();

} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_COMM_H
