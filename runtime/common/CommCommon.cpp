//===- CommCommon.cpp - what both backends' communicators share -----------===//

#include "CommCommon.h"

#include "World.h"

namespace tessera {
namespace rt {
namespace comm {

std::string rankList(const std::vector<int64_t> &ranks) {
  std::string s = "ranks [";
  for (size_t i = 0; i < ranks.size(); ++i)
    s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

const char *kindName(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::sum:
    return "sum";
  case ReduceKind::max:
    return "max";
  case ReduceKind::min:
    return "min";
  }
  return "?";
}

uint64_t hashRanks(const std::vector<int64_t> &ranks) {
  uint64_t hash = 1469598103934665603ull;
  for (int64_t r : ranks)
    hash = (hash ^ static_cast<uint64_t>(r)) * 1099511628211ull;
  return hash;
}

int checkGroup(const std::vector<int64_t> &ranks, const char *op,
               std::string &where) {
  where = std::string(op) + " over " + rankList(ranks);
  if (ranks.empty())
    throw Error(std::string(op) + ": the group of ranks is empty");
  int64_t me = worldRank();
  int64_t world = worldSize();
  int pos = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= world)
      throw Error(where + ": rank " + std::to_string(ranks[i]) +
                  " is outside the world of " + std::to_string(world) +
                  " ranks");
    if (i > 0 && ranks[i] <= ranks[i - 1])
      throw Error(where + ": the ranks must be sorted and distinct");
    if (ranks[i] == me)
      pos = static_cast<int>(i);
  }
  if (pos < 0)
    throw Error(where + ": the calling rank " + std::to_string(me) +
                " is not in the group");
  return pos;
}

int64_t normalizeDim(const Tensor &x, int64_t dim, const std::string &where) {
  int64_t r = x.rank();
  if (dim < -r || dim >= r)
    throw Error(where + ": dimension " + std::to_string(dim) +
                " out of range for shape " + shapeToString(x.shape()));
  return dim < 0 ? dim + r : dim;
}

namespace {
/// Rows before `dim` and bytes per row after it.
void outerInner(const Shape &shape, int64_t dim, int64_t elemSize,
                int64_t &outer, int64_t &inner) {
  outer = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  inner = elemSize;
  for (size_t d = dim + 1; d < shape.size(); ++d)
    inner *= shape[d];
}
} // namespace

Pieces splitPieces(const Tensor &x, int64_t dim, int64_t n,
                   const std::string &where) {
  if (x.shape()[dim] % n != 0)
    throw Error(where + ": dimension " + std::to_string(dim) + " of shape " +
                shapeToString(x.shape()) + " does not divide into " +
                std::to_string(n) + " pieces");
  Pieces p;
  int64_t inner;
  outerInner(x.shape(), dim, dtypeSize(x.dtype()), p.outer, inner);
  p.run = x.shape()[dim] / n * inner;
  return p;
}

Pieces concatPieces(const Shape &pieceShape, int64_t dim, int64_t n,
                    int64_t elemSize, Shape &shape) {
  shape = pieceShape;
  shape[dim] *= n;
  Pieces p;
  int64_t inner;
  outerInner(shape, dim, elemSize, p.outer, inner);
  p.run = pieceShape[dim] * inner;
  return p;
}

int rootPosition(const std::vector<int64_t> &ranks, int64_t root,
                 const std::string &where) {
  int rootPos = -1;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i] == root)
      rootPos = static_cast<int>(i);
  if (rootPos < 0)
    throw Error(where + ": the root is not in the group");
  return rootPos;
}

std::string sendWhere(int64_t peer, int64_t tag) {
  return "send to rank " + std::to_string(peer) + " (tag " +
         std::to_string(tag) + ")";
}

std::string recvWhere(int64_t peer, int64_t tag) {
  return "recv from rank " + std::to_string(peer) + " (tag " +
         std::to_string(tag) + ")";
}

void checkPeer(int64_t peer, const std::string &where) {
  if (!worldStarted())
    throw Error(where + ": MPI is not initialised (runMain starts it when "
                        "Program::worldSize > 1)");
  if (peer < 0 || peer >= worldSize())
    throw Error(where + ": rank " + std::to_string(peer) +
                " is outside the world of " + std::to_string(worldSize()) +
                " ranks");
}

void checkTag(int64_t tag, const std::string &where) {
  if (tag < 0 || tag > worldTagUpperBound())
    throw Error(where + ": tag must be in [0, " +
                std::to_string(worldTagUpperBound()) + "]");
}

void appendHeader(std::vector<int64_t> &header, const Tensor &x) {
  header.push_back(static_cast<int64_t>(x.dtype()));
  header.push_back(x.rank());
  header.insert(header.end(), x.shape().begin(), x.shape().end());
}

std::pair<DType, Shape> readHeader(const std::vector<int64_t> &header,
                                   size_t first, const std::string &where) {
  int64_t f = static_cast<int64_t>(first);
  if (header.size() < first + 2 || header[first + 1] < 0 ||
      header.size() != static_cast<size_t>(f + 2 + header[first + 1]) ||
      header[first] < 0 || header[first] > static_cast<int64_t>(DType::bf16))
    throw Error(where + ": the message is not a tensor sent by send()");
  return {static_cast<DType>(header[first]),
          Shape(header.begin() + f + 2, header.end())};
}

namespace {
std::string typeAndShape(DType dtype, const Shape &shape) {
  std::string s = dtypeName(dtype);
  return shape.empty() ? s + " scalar" : s + " " + shapeToString(shape);
}
} // namespace

Error mismatch(const std::string &where, DType dtype, const Shape &shape,
               int64_t peer, DType sentType, const Shape &sentShape) {
  return Error(where + ": expected " + typeAndShape(dtype, shape) + ", rank " +
               std::to_string(peer) + " sent " +
               typeAndShape(sentType, sentShape));
}

int spreadCpu(const std::string &spread, int64_t rank, int64_t size,
              const std::vector<int> &cpus) {
  std::vector<int64_t> entries;
  size_t i = 0;
  while (i < spread.size()) {
    if (spread[i] == ' ' || spread[i] == ',') {
      ++i;
      continue;
    }
    size_t end = i;
    int64_t value = 0;
    while (end < spread.size() && spread[end] >= '0' && spread[end] <= '9' &&
           value < (int64_t(1) << 40))
      value = value * 10 + (spread[end++] - '0');
    if (end == i ||
        (end < spread.size() && spread[end] != ' ' && spread[end] != ','))
      throw Error("TESSERA_CPU_SPREAD must list one non-negative integer per "
                  "rank, got '" +
                  spread + "'");
    entries.push_back(value);
    i = end;
  }
  if (int64_t(entries.size()) != size)
    throw Error("TESSERA_CPU_SPREAD lists " + std::to_string(entries.size()) +
                " rank(s), but the job has " + std::to_string(size) +
                " (it belongs to the run script of a compiled program; unset "
                "it to leave the ranks unbound)");
  if (cpus.empty() || rank < 0 || rank >= size)
    throw Error("TESSERA_CPU_SPREAD: no CPU to place rank " +
                std::to_string(rank) + " on");
  return cpus[size_t(entries[size_t(rank)] % int64_t(cpus.size()))];
}

} // namespace comm
} // namespace rt
} // namespace tessera
