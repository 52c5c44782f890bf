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
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

#include <algorithm>
#include <vector>

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

/// The buffers a collective allocates and frees while it runs, beyond its
/// result: the CPU backend's packing and receive buffers (runtime/common/
/// Collectives.cpp packs pieces that are not contiguous; runtime/mpi/
/// HostComm.cpp gathers a small all-reduce whole and folds it, exchanges
/// chunks of a large one, receives an all-to-all's pieces before unpacking
/// them, and folds a reduce-scatter's pieces one at a time). At the op's moment
/// they add to what is live.
SmallVector<int64_t, 2> scratchPieces(Operation *op) {
  auto bytes = [](Value v) { return tessera::tensorBytes(v.getType()); };
  auto shape = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  SmallVector<int64_t, 2> pieces;
  if (auto ar = dyn_cast<AllReduceOp>(op)) {
    int64_t n = ar.getGroupSize(), b = bytes(ar.getInput());
    if (n < 2 || b == 0)
      return pieces;
    // The runtime's kSmallAllReduceBytes (runtime/mpi/HostComm.cpp).
    constexpr int64_t kSmallAllReduceBytes = 64 * 1024;
    if (n * b <= kSmallAllReduceBytes) {
      pieces.push_back(n * b);
      return pieces;
    }
    int64_t numel =
        cast<RankedTensorType>(ar.getInput().getType()).getNumElements();
    pieces.push_back(n * ((numel + n - 1) / n) * (b / numel));
  } else if (auto ag = dyn_cast<AllGatherOp>(op)) {
    // Gathered packed, then unpacked into the result unless contiguous.
    if (ag.getGroupSize() >= 2 &&
        outerOf(shape(ag.getResult()), ag.getDim()) > 1)
      pieces.push_back(bytes(ag.getResult()));
  } else if (auto rs = dyn_cast<ReduceScatterOp>(op)) {
    // The MPI backend sends the pieces from the input as they lie and folds
    // the received ones one at a time: one piece's receive buffer, and an
    // f32 accumulator of one piece for bf16. (NCCL, on CUDA, reads packed
    // pieces: a whole-size buffer where the dimension is not outermost,
    // which this CPU model does not count.)
    if (int64_t n = rs.getGroupSize(); n >= 2) {
      int64_t piece = bytes(rs.getResult());
      pieces.push_back(piece);
      auto type = cast<RankedTensorType>(rs.getResult().getType());
      if (type.getElementType().isBF16())
        pieces.push_back(type.getNumElements() * 4);
    }
  } else if (auto a2a = dyn_cast<AllToAllOp>(op)) {
    if (a2a.getGroupSize() >= 2) {
      int64_t b = bytes(a2a.getInput());
      pieces.push_back(b);
      if (outerOf(shape(a2a.getInput()), a2a.getSplitDim()) > 1)
        pieces.push_back(b);
    }
  }
  return pieces;
}

/// One storage of the step and its lifetime in moments: moment -1 is the
/// step's start (the arguments handed over), moment i is op i of the body
/// with its results allocated and its operands not yet released. A storage
/// is live at moments first..last.
struct Storage {
  int64_t bytes = 0;
  int first = -1, last = -1;
  Operation *def = nullptr; ///< null for an argument
  bool returned = false;    ///< the driver takes it when the step returns
};

/// The storages of `step` in the runtime's terms (see the header): views
/// share their source's storage; a storage dies after the last use of its
/// last value unless the driver holds it (a result, or a parameter or state
/// the step does not return) or a send keeps it until the step ends; an
/// argument that no op reads is dropped before the first op.
struct Lifetimes {
  std::vector<Storage> storages;
  llvm::DenseMap<Value, int> storageOf;
  std::vector<Operation *> ops; ///< op i of the body, the return included
  int moments() const { return int(ops.size()) + 1; }
};

Lifetimes lifetimesOf(func::FuncOp step) {
  Block &body = step.getBody().front();
  Lifetimes lt;
  std::vector<bool> pinned;
  std::vector<Operation *> lastUse;
  auto newStorage = [&](int64_t bytes, int first, Operation *def, bool pin) {
    lt.storages.push_back({bytes, first, first, def, false});
    pinned.push_back(pin);
    lastUse.push_back(nullptr);
    return int(lt.storages.size()) - 1;
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
  for (BlockArgument arg : body.getArguments()) {
    StringAttr n = nameOf(step.getArgAttrDict(arg.getArgNumber()));
    lt.storageOf[arg] = newStorage(tessera::tensorBytes(arg.getType()), -1,
                                   nullptr, /*pin=*/n && !returned.contains(n));
  }
  llvm::DenseMap<Operation *, int> index;
  for (Operation &op : body) {
    index[&op] = int(lt.ops.size());
    lt.ops.push_back(&op);
    bool holds = isa<func::ReturnOp, SendOp>(op);
    for (Value v : op.getOperands()) {
      auto it = lt.storageOf.find(v);
      if (it == lt.storageOf.end())
        continue;
      lastUse[it->second] = &op;
      if (holds)
        pinned[it->second] = true;
      if (isa<func::ReturnOp>(op))
        lt.storages[it->second].returned = true;
    }
    for (Value r : op.getResults()) {
      if (auto base = viewOf(&op)) {
        auto it = lt.storageOf.find(*base);
        if (it != lt.storageOf.end()) {
          lt.storageOf[r] = it->second;
          continue;
        }
      }
      lt.storageOf[r] = newStorage(tessera::tensorBytes(r.getType()),
                                   index[&op], &op, /*pin=*/false);
    }
  }
  int end = int(lt.ops.size()) - 1;
  for (auto [s, storage] : llvm::enumerate(lt.storages)) {
    if (pinned[s])
      storage.last = end;
    else if (lastUse[s])
      storage.last = index[lastUse[s]];
    // else: dropped at once (an argument before the first op, a result
    // after its op), so last stays first.
  }
  return lt;
}

/// The largest sum over moments of the bytes of the storages `take`
/// selects (weighted by `bytesOf`) plus the scratch `scratchAt` gives.
template <typename Take, typename BytesOf, typename ScratchAt>
int64_t peakOver(const Lifetimes &lt, Take take, BytesOf bytesOf,
                 ScratchAt scratchAt) {
  // delta[t + 1]: the change at moment t.
  std::vector<int64_t> delta(lt.moments() + 1, 0);
  for (const Storage &s : lt.storages) {
    if (!take(s))
      continue;
    delta[s.first + 1] += bytesOf(s);
    delta[s.last + 2] -= bytesOf(s);
  }
  int64_t live = 0, peak = 0;
  for (int t = -1; t + 1 < lt.moments(); ++t) {
    live += delta[t + 1];
    peak = std::max(peak, live + (t >= 0 ? scratchAt(t) : 0));
  }
  return peak;
}

int64_t alignUp(int64_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

} // namespace

int64_t predictPeakBytes(func::FuncOp step) {
  Lifetimes lt = lifetimesOf(step);
  return peakOver(
      lt, [](const Storage &) { return true; },
      [](const Storage &s) { return s.bytes; },
      [&](int t) {
        int64_t sum = 0;
        for (int64_t b : scratchPieces(lt.ops[t]))
          sum += b;
        return sum;
      });
}

StaticMemoryPlan planStaticMemory(func::FuncOp step) {
  Lifetimes lt = lifetimesOf(step);
  StaticMemoryPlan plan;

  // What goes in the arena: each op's new storages that die within the
  // step and its scratch buffers. Left to the pool: arguments, results,
  // constants (the runtime caches the large ones for the whole run), and
  // any storage of an op that also makes a pool storage of the same size
  // (the runtime could not tell which of the two takes the slot).
  struct Item {
    int64_t bytes, aligned;
    int first, last;
    Operation *op;
    int64_t offset = -1;
  };
  std::vector<Item> items;
  std::vector<bool> inArena(lt.storages.size(), false);
  std::vector<int64_t> poolScratch(lt.ops.size(), 0);
  for (auto [t, op] : llvm::enumerate(lt.ops)) {
    if (isa<tsr::ConstantOp, func::ReturnOp>(op))
      continue;
    llvm::SmallSet<int64_t, 4> poolSizes;
    SmallVector<int> made;
    for (Value r : op->getResults()) {
      int s = lt.storageOf.lookup(r);
      const Storage &storage = lt.storages[s];
      if (storage.def != op || storage.bytes == 0 ||
          llvm::is_contained(made, s))
        continue;
      if (storage.returned)
        poolSizes.insert(storage.bytes);
      else
        made.push_back(s);
    }
    size_t firstItem = items.size();
    for (int s : made) {
      const Storage &storage = lt.storages[s];
      if (poolSizes.contains(storage.bytes))
        continue;
      inArena[s] = true;
      items.push_back({storage.bytes, alignUp(storage.bytes), storage.first,
                       storage.last, op});
    }
    for (int64_t b : scratchPieces(op)) {
      if (poolSizes.contains(b))
        poolScratch[t] += b;
      else
        items.push_back({b, alignUp(b), int(t), int(t), op});
    }
    // Equal sizes of one op share the longest lifetime among them.
    for (size_t i = firstItem; i < items.size(); ++i)
      for (size_t j = firstItem; j < items.size(); ++j)
        if (items[i].bytes == items[j].bytes)
          items[i].last = std::max(items[i].last, items[j].last);
  }

  // Offsets: largest first, each at the lowest aligned offset free of
  // every placed item whose lifetime meets its own (TFLite's "greedy by
  // size" arena planner works the same way).
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (items[a].aligned != items[b].aligned)
      return items[a].aligned > items[b].aligned;
    return items[a].first < items[b].first;
  });
  std::vector<size_t> placed;
  SmallVector<std::pair<int64_t, int64_t>> busy;
  for (size_t i : order) {
    Item &item = items[i];
    busy.clear();
    for (size_t j : placed)
      if (items[j].first <= item.last && item.first <= items[j].last)
        busy.push_back({items[j].offset, items[j].offset + items[j].aligned});
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [lo, hi] : busy) {
      if (offset + item.aligned <= lo)
        break;
      offset = std::max(offset, hi);
    }
    item.offset = offset;
    placed.push_back(i);
    plan.arenaBytes = std::max(plan.arenaBytes, offset + item.aligned);
    plan.slots[item.op].push_back({offset, item.bytes});
  }

  plan.poolPeakBytes = peakOver(
      lt, [&](const Storage &s) { return !inArena[&s - lt.storages.data()]; },
      [](const Storage &s) { return s.bytes; },
      [&](int t) { return poolScratch[t]; });
  return plan;
}

} // namespace dist
} // namespace tessera
