//===- CommCommon.h - what both backends' communicators share ---*- C++ -*-===//
//
// The backend-independent half of Comm.h's implementations (mpi/Comm.cpp
// over MPI, cuda/Comm.cpp over NCCL): validating and caching groups of
// ranks, the argument checks of the collectives and of send/recv, the
// layout of split and gathered pieces, and the header a send puts before a
// tensor's data. Messages name the operation and the group as
// "<op> over ranks [0, 2]: ...". Not installed; no MPI or NCCL types here.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMMON_COMMCOMMON_H
#define TESSERA_RUNTIME_COMMON_COMMCOMMON_H

#include "tessera/runtime/Comm.h"
#include "tessera/runtime/Tensor.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tessera {
namespace rt {
namespace comm {

/// "ranks [0, 2]".
std::string rankList(const std::vector<int64_t> &ranks);
/// "sum", "max", "min".
const char *kindName(ReduceKind kind);
/// FNV-1a over the list: every member computes the same value without
/// talking (tags that keep concurrent communicator creations apart).
uint64_t hashRanks(const std::vector<int64_t> &ranks);

/// A group of ranks (a sorted rank list): what the shared collectives read.
struct GroupInfo {
  int pos = 0;      ///< the calling rank's position in the list
  int size = 1;     ///< ranks in the list
  std::string desc; ///< "ranks [0, 2]" for messages
};

/// A group as a backend keeps it; Handle is its communicator type (MPI_Comm,
/// ncclComm_t).
template <typename Handle> struct Group : GroupInfo {
  Handle comm;
};

/// Checks `ranks` for `op`: not empty, in the world, sorted and distinct,
/// and holding the calling rank; returns that rank's position. Sets `where`
/// to "<op> over ranks [...]".
int checkGroup(const std::vector<int64_t> &ranks, const char *op,
               std::string &where);

/// The groups used so far, each with its communicator, created on first use
/// (groups of one rank have none: their ops are local copies).
template <typename Handle> class GroupCache {
public:
  /// `none`: the communicator of a group of one rank (MPI_COMM_NULL).
  explicit GroupCache(Handle none) : none_(none) {}

  /// The group of `ranks`; on first use checked (checkGroup) and, with
  /// several ranks, given create(ranks, pos, desc, where) as communicator.
  template <typename Create>
  const Group<Handle> &get(const std::vector<int64_t> &ranks, const char *op,
                           Create &&create) {
    auto it = groups_.find(ranks);
    if (it != groups_.end())
      return it->second;
    std::string where;
    Group<Handle> g;
    g.comm = none_;
    g.pos = checkGroup(ranks, op, where);
    g.size = static_cast<int>(ranks.size());
    g.desc = rankList(ranks);
    if (g.size > 1)
      g.comm = create(ranks, g.pos, g.desc, where);
    return groups_.emplace(ranks, g).first->second;
  }

  /// Empties the cache first (a failure leaves no half-freed entry behind),
  /// then calls release(group) for every group with a communicator.
  template <typename Release> void clear(Release &&release) {
    std::map<std::vector<int64_t>, Group<Handle>> cached = std::move(groups_);
    groups_.clear();
    for (auto &entry : cached)
      if (entry.second.comm != none_)
        release(entry.second);
  }

private:
  Handle none_;
  std::map<std::vector<int64_t>, Group<Handle>> groups_;
};

/// "<where>: dimension d out of range for shape s"; the dimension in
/// [0, rank).
int64_t normalizeDim(const Tensor &x, int64_t dim, const std::string &where);
/// Where n equal pieces along `dim` lie in a contiguous tensor: each of
/// `outer` rows (the product of the dims before `dim`) holds one run of
/// `run` bytes per piece, piece j's at (row * n + j) * run. Collectives
/// send the pieces one after the other (packed: piece j's runs at
/// (j * outer + row) * run), which is the tensor itself when outer == 1.
struct Pieces {
  int64_t outer = 1, run = 0;
};
/// x split into n pieces along `dim` (which must divide into them).
Pieces splitPieces(const Tensor &x, int64_t dim, int64_t n,
                   const std::string &where);
/// n pieces of `pieceShape` concatenated along `dim` into `shape`.
Pieces concatPieces(const Shape &pieceShape, int64_t dim, int64_t n,
                    int64_t elemSize, Shape &shape);
/// x cut into n pieces along `dim`, laid out piece after piece (x itself,
/// viewed flat, when it already is: outer == 1), and the shape of one
/// piece. Uses the backend's copyRuns (Collectives.cpp).
std::pair<Tensor, Shape> packPieces(const Tensor &x, int64_t dim, int64_t n,
                                    const std::string &where);
/// The position of world rank `root` in `ranks`; an error unless it is in.
int rootPosition(const std::vector<int64_t> &ranks, int64_t root,
                 const std::string &where);

/// "send to rank P (tag T)", "recv from rank P (tag T)".
std::string sendWhere(int64_t peer, int64_t tag);
std::string recvWhere(int64_t peer, int64_t tag);
/// The world is started and `peer` is in it.
void checkPeer(int64_t peer, const std::string &where);
/// 0 <= tag <= worldTagUpperBound().
void checkTag(int64_t tag, const std::string &where);

/// The header send() puts before a tensor's data: dtype, rank, dims.
void appendHeader(std::vector<int64_t> &header, const Tensor &x);
/// Reads the header that starts at header[first] and fills the rest of it;
/// "<where>: the message is not a tensor sent by send()" otherwise.
std::pair<DType, Shape> readHeader(const std::vector<int64_t> &header,
                                   size_t first, const std::string &where);
/// "<where>: expected f32 4x8, rank P sent f64 scalar".
Error mismatch(const std::string &where, DType dtype, const Shape &shape,
               int64_t peer, DType sentType, const Shape &sentShape);

//===----------------------------------------------------------------------===//
// Implemented by each backend (mpi/Comm.cpp, cuda/Comm.cpp) for the
// collectives of common/Collectives.cpp, which check the arguments, handle
// groups of one rank and lay pieces out; `where` names the call in errors.
// Every buffer is a contiguous piece after piece: piece j of a collective
// over n ranks is elements [j * numel / n, (j + 1) * numel / n).
//===----------------------------------------------------------------------===//

/// The group of `ranks` for `op`, checked (checkGroup) and given its
/// communicator on first use.
const GroupInfo &group(const std::vector<int64_t> &ranks, const char *op);
/// x where the backend's communication reads it (device memory for CUDA).
Tensor operand(const Tensor &x);
/// Copies `rows` runs of `run` bytes: run o from src's byte srcOffset +
/// o * srcPitch to dst's byte dstOffset + o * dstPitch.
void copyRuns(Tensor &dst, int64_t dstOffset, int64_t dstPitch,
              const Tensor &src, int64_t srcOffset, int64_t srcPitch,
              int64_t run, int64_t rows, const std::string &where);
/// x reduced over the group (every member gets the whole result).
Tensor allReduce(const GroupInfo &g, const Tensor &x, ReduceKind kind,
                 const std::string &where);
/// The members' x one after the other, as a flat tensor of g.size * numel.
Tensor allGatherPacked(const GroupInfo &g, const Tensor &x,
                       const std::string &where);
/// Piece g.pos of x (x cut into g.size pieces along `dim`, checked by
/// the caller) reduced over the group. The backend lays the pieces out as
/// it needs: the MPI backend sends them from x as they are, NCCL packs them.
Tensor reduceScatter(const GroupInfo &g, const Tensor &x, int64_t dim,
                     ReduceKind kind, const std::string &where);
/// Piece j of `packed` to member j; the pieces received, one after the
/// other, as a flat tensor.
Tensor allToAllPacked(const GroupInfo &g, const Tensor &packed,
                      const std::string &where);
/// The tensor of the member at `rootPos`, on every member (a fresh tensor).
Tensor broadcastFrom(const GroupInfo &g, const Tensor &x, int rootPos,
                     const std::string &where);

/// Where this rank runs when the job's ranks outnumber the host's CPUs: the
/// run script of a compiled program, under TESSERA_BIND=spread, sets
/// TESSERA_CPU_SPREAD to one integer per rank (docs/launch.md, "Ranks on
/// fewer CPUs"), and rank r
/// takes the CPU at position spread[r] modulo the count of `cpus` (the
/// CPUs it may run on, ascending). Returns that CPU; an entry that is not
/// a non-negative integer, or a count of entries other than `size`, is an
/// error naming the variable.
int spreadCpu(const std::string &spread, int64_t rank, int64_t size,
              const std::vector<int> &cpus);

} // namespace comm
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_COMMON_COMMCOMMON_H
