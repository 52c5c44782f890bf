//===- DistOps.cpp - dist operations --------------------------------------===//
//
// Verifiers of the communication ops (groups, dimensions, divisibility and
// the exact result type, with messages that name the numbers involved) and
// builders that compute result types.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace tessera;
using namespace tessera::dist;

#include "tessera/Dialect/Dist/IR/DistEnums.cpp.inc"

#define GET_OP_CLASSES
#include "tessera/Dialect/Dist/IR/DistOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {

/// "[0, 1]": a rank list, for messages.
std::string listStr(ArrayRef<int64_t> values) {
  std::string s = "[";
  for (auto [i, v] : llvm::enumerate(values))
    s += (i ? ", " : "") + std::to_string(v);
  return s + "]";
}

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The rank running `op`: the dist.rank of its enclosing function, if set.
/// In a function shared by several ranks (dist.ranks) the op's own
/// attributes are those of the first rank; dist.rank_values holds the
/// others' (checked by the dialect's attribute verifier).
std::optional<int64_t> executingRank(Operation *op) {
  auto func = op->getParentOfType<FunctionOpInterface>();
  if (!func)
    return std::nullopt;
  if (auto rank = getAttr<DistDialect::RankAttrHelper>(func))
    return rank.getInt();
  if (auto ranks = getAttr<DistDialect::RanksAttrHelper>(func))
    if (!ranks.empty())
      return ranks[0];
  return std::nullopt;
}

/// A group is non-empty, non-negative, sorted and unique, inside the mesh
/// when there is one, and holds the executing rank when it is known.
LogicalResult verifyGroup(Operation *op, ArrayRef<int64_t> ranks) {
  if (ranks.empty())
    return op->emitOpError("ranks must not be empty");
  if (llvm::any_of(ranks, [](int64_t r) { return r < 0; }))
    return op->emitOpError("ranks must be non-negative, found ")
           << listStr(ranks);
  for (size_t i = 1; i < ranks.size(); ++i)
    if (ranks[i] <= ranks[i - 1])
      return op->emitOpError("ranks must be sorted and unique, found ")
             << listStr(ranks);
  if (MeshAttr mesh = getEnclosingMesh(op))
    if (ranks.back() >= mesh.numRanks())
      return op->emitOpError("rank ")
             << ranks.back() << " is outside the mesh of " << mesh.numRanks()
             << " ranks";
  if (std::optional<int64_t> self = executingRank(op))
    if (!llvm::is_contained(ranks, *self))
      return op->emitOpError("runs on rank ")
             << *self << " (the function's dist.rank), which is not in ranks "
             << listStr(ranks);
  return success();
}

/// A point-to-point peer is a non-negative rank of the mesh other than the
/// executing one; a tag is non-negative.
LogicalResult verifyPeer(Operation *op, int64_t peer, int64_t tag) {
  if (peer < 0)
    return op->emitOpError("peer must be non-negative, found ") << peer;
  if (tag < 0)
    return op->emitOpError("tag must be non-negative, found ") << tag;
  if (MeshAttr mesh = getEnclosingMesh(op))
    if (peer >= mesh.numRanks())
      return op->emitOpError("peer ") << peer << " is outside the mesh of "
                                      << mesh.numRanks() << " ranks";
  if (std::optional<int64_t> self = executingRank(op))
    if (peer == *self)
      return op->emitOpError("peer ")
             << peer
             << " is the rank running this op (the function's "
                "dist.rank)";
  return success();
}

LogicalResult checkDim(Operation *op, int64_t dim, int64_t rank,
                       StringRef what) {
  if (dim < 0 || dim >= rank)
    return op->emitOpError()
           << what << " " << dim << " is out of range for rank " << rank
           << " (expected 0 <= " << what << " < " << rank << ")";
  return success();
}

LogicalResult checkDivisible(Operation *op, int64_t groupSize,
                             RankedTensorType type, int64_t dim,
                             StringRef which) {
  int64_t size = type.getDimSize(dim);
  if (size % groupSize != 0)
    return op->emitOpError()
           << op->getName().stripDialect() << " over " << groupSize
           << " ranks needs " << which << "dimension " << dim << " (size "
           << size << ") divisible by " << groupSize;
  return success();
}

LogicalResult checkElementType(Operation *op, RankedTensorType input,
                               RankedTensorType result) {
  if (input.getElementType() != result.getElementType())
    return op->emitOpError("result element type ")
           << result.getElementType() << " differs from the input's "
           << input.getElementType();
  return success();
}

/// `type` with dimension `dim` multiplied by `num` and divided by `den`.
RankedTensorType scaleDim(RankedTensorType type, int64_t dim, int64_t num,
                          int64_t den) {
  SmallVector<int64_t> shape(type.getShape());
  if (dim >= 0 && dim < type.getRank())
    shape[dim] = shape[dim] * num / den;
  return RankedTensorType::get(shape, type.getElementType());
}

/// all_gather (`gathers`: dim grows n times) and reduce_scatter (dim
/// shrinks n times) over a group of n ranks.
template <typename OpTy>
LogicalResult verifyGatherOrScatter(OpTy op, StringRef name, bool gathers) {
  if (failed(verifyGroup(op, op.getRanks())))
    return failure();
  RankedTensorType in = tensorType(op.getInput()),
                   out = tensorType(op.getResult());
  int64_t n = op.getGroupSize(), dim = op.getDim();
  if (failed(checkDim(op, dim, in.getRank(), "dim")) ||
      (!gathers && failed(checkDivisible(op, n, in, dim, ""))) ||
      failed(checkElementType(op, in, out)))
    return failure();
  RankedTensorType expected =
      gathers ? scaleDim(in, dim, n, 1) : scaleDim(in, dim, 1, n);
  if (out != expected)
    return op.emitOpError()
           << name << " over " << n << " ranks of " << in << " along " << dim
           << " gives " << expected << ", not " << out;
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() { return verifyGroup(*this, getRanks()); }

// The attributes that differ between the ranks running the same op
// (RankVariantOpInterface): the group, the root, the peer and the tag.
namespace {
constexpr StringRef kGroup[] = {"ranks"};
constexpr StringRef kGroupAndRoot[] = {"ranks", "root"};
constexpr StringRef kPeer[] = {"peer", "tag"};
} // namespace
ArrayRef<StringRef> AllReduceOp::getRankVariantAttrNames() { return kGroup; }
ArrayRef<StringRef> AllGatherOp::getRankVariantAttrNames() { return kGroup; }
ArrayRef<StringRef> ReduceScatterOp::getRankVariantAttrNames() {
  return kGroup;
}
ArrayRef<StringRef> AllToAllOp::getRankVariantAttrNames() { return kGroup; }
ArrayRef<StringRef> BroadcastOp::getRankVariantAttrNames() {
  return kGroupAndRoot;
}
ArrayRef<StringRef> SendOp::getRankVariantAttrNames() { return kPeer; }
ArrayRef<StringRef> RecvOp::getRankVariantAttrNames() { return kPeer; }

void AllGatherOp::build(OpBuilder &builder, OperationState &state, Value input,
                        ArrayRef<int64_t> ranks, int64_t dim) {
  build(builder, state,
        scaleDim(tensorType(input), dim, std::max<int64_t>(ranks.size(), 1), 1),
        input, ranks, dim);
}

LogicalResult AllGatherOp::verify() {
  return verifyGatherOrScatter(*this, "all_gather", /*gathers=*/true);
}

void ReduceScatterOp::build(OpBuilder &builder, OperationState &state,
                            Value input, ArrayRef<int64_t> ranks, int64_t dim) {
  build(builder, state,
        scaleDim(tensorType(input), dim, 1, std::max<int64_t>(ranks.size(), 1)),
        input, ranks, dim);
}

LogicalResult ReduceScatterOp::verify() {
  return verifyGatherOrScatter(*this, "reduce_scatter", /*gathers=*/false);
}

void AllToAllOp::build(OpBuilder &builder, OperationState &state, Value input,
                       ArrayRef<int64_t> ranks, int64_t splitDim,
                       int64_t concatDim) {
  int64_t n = std::max<int64_t>(ranks.size(), 1);
  build(builder, state,
        scaleDim(scaleDim(tensorType(input), splitDim, 1, n), concatDim, n, 1),
        input, ranks, splitDim, concatDim);
}

LogicalResult AllToAllOp::verify() {
  if (failed(verifyGroup(*this, getRanks())))
    return failure();
  RankedTensorType in = tensorType(getInput()), out = tensorType(getResult());
  int64_t n = getGroupSize(), split = getSplitDim(), concat = getConcatDim();
  if (failed(checkDim(*this, split, in.getRank(), "split_dim")) ||
      failed(checkDim(*this, concat, in.getRank(), "concat_dim")))
    return failure();
  if (split == concat)
    return emitOpError("split_dim and concat_dim are both ")
           << split << "; an all_to_all moves a split between two dimensions";
  if (failed(checkDivisible(*this, n, in, split, "split ")) ||
      failed(checkElementType(*this, in, out)))
    return failure();
  RankedTensorType expected = scaleDim(scaleDim(in, split, 1, n), concat, n, 1);
  if (out != expected)
    return emitOpError("all_to_all over ")
           << n << " ranks of " << in << " splitting " << split
           << " and concatenating along " << concat << " gives " << expected
           << ", not " << out;
  return success();
}

LogicalResult BroadcastOp::verify() {
  if (failed(verifyGroup(*this, getRanks())))
    return failure();
  if (!llvm::is_contained(getRanks(), getRoot()))
    return emitOpError("root ")
           << getRoot() << " is not in ranks " << listStr(getRanks());
  return success();
}

//===----------------------------------------------------------------------===//
// Point to point
//===----------------------------------------------------------------------===//

LogicalResult SendOp::verify() {
  return verifyPeer(*this, getPeer(), getTag());
}

LogicalResult RecvOp::verify() {
  return verifyPeer(*this, getPeer(), getTag());
}
