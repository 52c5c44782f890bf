//===- MemoryPrediction.cpp - peak tensor memory of a step ----------------===//
//
// A replay of the step in program order with reference-counted storage, the
// way the emitted program and the runtime behave (see the header). Values
// that share storage (views) form one storage; a storage dies after the
// last use of its last value, unless the driver holds it (results) or a
// send keeps it until the step ends. Arguments are the step's own (the
// driver donates them): they die after their last use too, except a
// parameter or state the step does not return (the driver keeps it).
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Dist/Analysis/MemoryPrediction.h"
#include "tessera/Dialect/Dist/IR/DistOps.h"
#include "tessera/Dialect/Tsr/Analysis/OpMetrics.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Interfaces/CostInterface.h"

#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace tessera {
namespace dist {

namespace {

/// The value whose storage `op`'s result shares (ViewLikeOpInterface).
std::optional<Value> viewOf(Operation *op) {
  if (auto view = dyn_cast<ViewLikeOpInterface>(op))
    if (Value source = view.getViewSource())
      return source;
  return std::nullopt;
}

/// Elements of `shape` before `dim` (the runs a piece of `dim` is cut
/// into: 1 means the pieces are contiguous and need no packing).
int64_t outerOf(ArrayRef<int64_t> shape, int64_t dim) {
  int64_t outer = 1;
  for (int64_t d = 0; d < dim && d < int64_t(shape.size()); ++d)
    outer *= shape[d];
  return outer;
}

/// Bytes a collective allocates and frees while it runs, beyond its result:
/// the CPU backend's packing and receive buffers (runtime/common/
/// Collectives.cpp packs pieces that are not contiguous; runtime/mpi/
/// HostComm.cpp gathers a small all-reduce whole and folds it, exchanges
/// chunks of a large one, and receives a reduce-scatter's or all-to-all's
/// pieces before folding or unpacking them). At the op's moment they add
/// to what is live.
int64_t scratchBytes(Operation *op) {
  auto bytes = [](Value v) { return tessera::tensorBytes(v.getType()); };
  auto shape = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  if (auto ar = dyn_cast<AllReduceOp>(op)) {
    int64_t n = ar.getGroupSize(), b = bytes(ar.getInput());
    if (n < 2 || b == 0)
      return 0;
    // The runtime's kSmallAllReduceBytes (runtime/mpi/HostComm.cpp).
    constexpr int64_t kSmallAllReduceBytes = 64 * 1024;
    if (n * b <= kSmallAllReduceBytes)
      return n * b;
    int64_t numel =
        cast<RankedTensorType>(ar.getInput().getType()).getNumElements();
    return n * ((numel + n - 1) / n) * (b / numel);
  }
  if (auto ag = dyn_cast<AllGatherOp>(op)) {
    // Gathered packed, then unpacked into the result unless contiguous.
    if (ag.getGroupSize() < 2)
      return 0;
    return outerOf(shape(ag.getResult()), ag.getDim()) > 1
               ? bytes(ag.getResult())
               : 0;
  }
  if (auto rs = dyn_cast<ReduceScatterOp>(op)) {
    if (rs.getGroupSize() < 2)
      return 0;
    int64_t b = bytes(rs.getInput());
    return b + (outerOf(shape(rs.getInput()), rs.getDim()) > 1 ? b : 0);
  }
  if (auto a2a = dyn_cast<AllToAllOp>(op)) {
    if (a2a.getGroupSize() < 2)
      return 0;
    int64_t b = bytes(a2a.getInput());
    return b + (outerOf(shape(a2a.getInput()), a2a.getSplitDim()) > 1 ? b : 0);
  }
  return 0;
}

} // namespace

int64_t predictPeakBytes(func::FuncOp step) {
  Block &body = step.getBody().front();
  // Storage of each value, its size, and whether something outside the
  // step's ops (driver, pending send) holds it to the end.
  llvm::DenseMap<Value, int> storageOf;
  std::vector<int64_t> size;
  std::vector<bool> pinned;
  std::vector<Operation *> lastUse;
  auto newStorage = [&](int64_t bytes, bool pin) {
    size.push_back(bytes);
    pinned.push_back(pin);
    lastUse.push_back(nullptr);
    return int(size.size()) - 1;
  };
  // The names of the parameters and state the step returns.
  auto nameOf = [](DictionaryAttr attrs) -> StringAttr {
    if (!attrs)
      return {};
    if (auto n = attrs.getAs<StringAttr>(Tsr::ParamAttrHelper::getNameStr()))
      return n;
    return attrs.getAs<StringAttr>(Tsr::StateAttrHelper::getNameStr());
  };
  llvm::DenseSet<StringAttr> returned;
  for (unsigned r = 0; r < step.getNumResults(); ++r)
    if (StringAttr n = nameOf(step.getResultAttrDict(r)))
      returned.insert(n);
  int64_t live = 0;
  for (BlockArgument arg : body.getArguments()) {
    StringAttr n = nameOf(step.getArgAttrDict(arg.getArgNumber()));
    storageOf[arg] = newStorage(tessera::tensorBytes(arg.getType()),
                                /*pin=*/n && !returned.contains(n));
    live += size.back();
  }
  // Last uses (per storage), and pins for results and sends.
  for (Operation &op : body) {
    bool holds = isa<func::ReturnOp, SendOp>(op);
    for (Value v : op.getOperands()) {
      auto it = storageOf.find(v);
      if (it == storageOf.end())
        continue;
      lastUse[it->second] = &op;
      if (holds)
        pinned[it->second] = true;
    }
    for (Value r : op.getResults()) {
      if (auto base = viewOf(&op)) {
        auto it = storageOf.find(*base);
        if (it != storageOf.end()) {
          storageOf[r] = it->second;
          continue;
        }
      }
      storageOf[r] =
          newStorage(tessera::tensorBytes(r.getType()), /*pin=*/false);
    }
  }
  // Replay. An argument that no op reads is dropped before the first op.
  int64_t peak = live;
  std::vector<bool> allocated(size.size(), false);
  for (BlockArgument arg : body.getArguments()) {
    int s = storageOf[arg];
    allocated[s] = true;
    if (lastUse[s] == nullptr && !pinned[s]) {
      live -= size[s];
      allocated[s] = false;
      pinned[s] = true;
    }
  }
  for (Operation &op : body) {
    for (Value r : op.getResults()) {
      int s = storageOf[r];
      if (!allocated[s]) {
        allocated[s] = true;
        live += size[s];
      }
    }
    peak = std::max(peak, live + scratchBytes(&op));
    // Storage whose last use is this op (or never used) dies now.
    auto release = [&](int s) {
      if (allocated[s] && !pinned[s] &&
          (lastUse[s] == &op || lastUse[s] == nullptr)) {
        live -= size[s];
        allocated[s] = false;
        pinned[s] = true; // never count it twice
      }
    };
    for (Value v : op.getOperands()) {
      auto it = storageOf.find(v);
      if (it != storageOf.end())
        release(it->second);
    }
    for (Value r : op.getResults())
      release(storageOf[r]);
  }
  return peak;
}

} // namespace dist
} // namespace tessera
