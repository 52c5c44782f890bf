//===- ShareRanks.cpp - one program per class of equal ranks --------------===//
//
// Ranks whose per-rank functions are equal op by op, up to the attributes
// RankVariantOpInterface declares rank-dependent, get one set of functions:
// the first rank's, marked dist.ranks, with the other ranks' values of each
// differing attribute in dist.rank_values. With data parallelism every rank
// runs the same program on other slices and groups, so the C++ of a job is
// compiled once per pipeline stage (and tensor-parallel variant) instead of
// once per rank.
//
// Two ranks' programs are compared by a structural walk rather than
// upstream's OperationEquivalence, which compares attribute dictionaries
// whole: here the rank-variant attributes must be collected, not compared.
// A hash of each rank's program (everything but the rank-variant values)
// keeps the comparisons to candidates that can match.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Dist/IR/DistAttrs.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Dist/Transforms/Passes.h"
#include "tessera/Interfaces/RankVariantInterface.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"

#include <map>

namespace tessera::dist {
#define GEN_PASS_DEF_DISTSHARERANKPROGRAMS
#include "tessera/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace tessera::dist

using namespace mlir;
using namespace tessera;

namespace {

/// The rank-variant attribute names of `op` (none for most ops).
ArrayRef<StringRef> variantNames(Operation *op) {
  if (auto v = dyn_cast<RankVariantOpInterface>(op))
    return v.getRankVariantAttrNames();
  return {};
}

/// A function's attributes that take part in the comparison: all but its
/// name and its rank.
SmallVector<NamedAttribute> comparedFuncAttrs(Operation *f) {
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute a : f->getAttrs())
    if (a.getName() != SymbolTable::getSymbolAttrName() &&
        a.getName() != Dist::RankAttrHelper::getNameStr())
      attrs.push_back(a);
  return attrs;
}

/// The values of a rank's rank-variant attributes, in walk order.
using VariantValues = SmallVector<Attribute>;

/// One rank's program: its functions in module order.
struct RankProgram {
  int64_t rank;
  SmallVector<FunctionOpInterface> funcs;
  llvm::hash_code hash;
  VariantValues values;
};

/// The hash of everything the comparison looks at, rank-variant values
/// excepted (their presence and kind count).
llvm::hash_code hashProgram(ArrayRef<FunctionOpInterface> funcs) {
  llvm::hash_code h = llvm::hash_value(funcs.size());
  for (FunctionOpInterface f : funcs) {
    for (NamedAttribute a : comparedFuncAttrs(f))
      h = llvm::hash_combine(h, a.getName(), a.getValue());
    f->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op == f.getOperation())
        return; // hashed above, without its name and rank
      h = llvm::hash_combine(h, op->getName(), op->getNumOperands(),
                             op->getNumRegions());
      for (Type t : op->getResultTypes())
        h = llvm::hash_combine(h, t);
      ArrayRef<StringRef> variant = variantNames(op);
      for (NamedAttribute a : op->getAttrs())
        h = llvm::is_contained(variant, a.getName().getValue())
                ? llvm::hash_combine(h, a.getName())
                : llvm::hash_combine(h, a.getName(), a.getValue());
    });
  }
  return h;
}

/// Walks two rank programs in step. `values` collects b's rank-variant
/// values in walk order; the result says whether a and b are equal apart
/// from those values.
class Matcher {
public:
  bool programs(ArrayRef<FunctionOpInterface> a,
                ArrayRef<FunctionOpInterface> b, VariantValues &values) {
    out = &values;
    if (a.size() != b.size())
      return false;
    for (auto [fa, fb] : llvm::zip(a, b))
      if (comparedFuncAttrs(fa) != comparedFuncAttrs(fb) ||
          !regions(fa->getRegions(), fb->getRegions()))
        return false;
    return true;
  }

private:
  DenseMap<Value, Value> map; // a's values to b's
  VariantValues *out = nullptr;

  bool regions(MutableArrayRef<Region> a, MutableArrayRef<Region> b) {
    if (a.size() != b.size())
      return false;
    for (auto [ra, rb] : llvm::zip(a, b)) {
      if (ra.getBlocks().size() != rb.getBlocks().size())
        return false;
      for (auto [ba, bb] : llvm::zip(ra, rb)) {
        if (ba.getNumArguments() != bb.getNumArguments() ||
            ba.getOperations().size() != bb.getOperations().size())
          return false;
        for (auto [x, y] : llvm::zip(ba.getArguments(), bb.getArguments())) {
          if (x.getType() != y.getType())
            return false;
          map[x] = y;
        }
        for (auto [oa, ob] : llvm::zip(ba, bb))
          if (!ops(oa, ob))
            return false;
      }
    }
    return true;
  }

  bool ops(Operation &a, Operation &b) {
    if (a.getName() != b.getName() ||
        a.getNumOperands() != b.getNumOperands() ||
        !llvm::equal(a.getResultTypes(), b.getResultTypes()) ||
        a.getNumSuccessors() != 0 || b.getNumSuccessors() != 0)
      return false;
    for (auto [x, y] : llvm::zip(a.getOperands(), b.getOperands()))
      if (map.lookup(x) != y)
        return false;
    ArrayRef<StringRef> variant = variantNames(&a);
    DictionaryAttr da = a.getAttrDictionary(), db = b.getAttrDictionary();
    if (da.size() != db.size())
      return false;
    for (NamedAttribute x : da) {
      Attribute y = db.get(x.getName());
      if (!y)
        return false;
      if (!llvm::is_contained(variant, x.getName().getValue())) {
        if (x.getValue() != y)
          return false;
        continue;
      }
      // A rank-variant value: an integer or an integer array of the same
      // length, so that one table row per rank fits every rank.
      auto ax = dyn_cast<DenseI64ArrayAttr>(x.getValue());
      auto ay = dyn_cast<DenseI64ArrayAttr>(y);
      bool ints = isa<IntegerAttr>(x.getValue()) && isa<IntegerAttr>(y) &&
                  cast<IntegerAttr>(x.getValue()).getType() ==
                      cast<IntegerAttr>(y).getType();
      if (!ints && !(ax && ay && ax.size() == ay.size()))
        return false;
      out->push_back(y);
    }
    for (auto [x, y] : llvm::zip(a.getResults(), b.getResults()))
      map[x] = y;
    return regions(a.getRegions(), b.getRegions());
  }
};

struct DistShareRankProgramsPass
    : public dist::impl::DistShareRankProgramsBase<DistShareRankProgramsPass> {
  using DistShareRankProgramsBase::DistShareRankProgramsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::map<int64_t, RankProgram> byRank;
    for (auto f : module.getOps<FunctionOpInterface>()) {
      if (hasAttr<Dist::RanksAttrHelper>(f)) {
        f.emitError("dist-share-rank-programs: the ranks already share "
                    "programs (dist.ranks)");
        return signalPassFailure();
      }
      if (auto r = getAttr<Dist::RankAttrHelper>(f)) {
        RankProgram &p = byRank[r.getInt()];
        p.rank = r.getInt();
        p.funcs.push_back(f);
      }
    }
    // Classes in rank order; each is represented by its first rank.
    SmallVector<SmallVector<RankProgram *>> classes;
    for (auto &[rank, p] : byRank) {
      p.hash = hashProgram(p.funcs);
      bool placed = false;
      for (SmallVector<RankProgram *> &c : classes) {
        if (c.front()->hash != p.hash)
          continue;
        Matcher m;
        VariantValues values;
        if (!m.programs(c.front()->funcs, p.funcs, values))
          continue;
        p.values = std::move(values);
        c.push_back(&p);
        placed = true;
        break;
      }
      if (!placed) {
        classes.emplace_back();
        classes.back().push_back(&p);
      }
    }
    for (SmallVector<RankProgram *> &c : classes)
      if (c.size() > 1)
        share(c);
  }

  /// Keeps the class's first rank's functions for all of its ranks.
  void share(ArrayRef<RankProgram *> members) {
    RankProgram &first = *members.front();
    // The first rank's own values, in the same walk order as the others'.
    {
      Matcher m;
      VariantValues own;
      (void)m.programs(first.funcs, first.funcs, own);
      first.values = std::move(own);
    }
    SmallVector<int64_t> ranks;
    for (RankProgram *p : members)
      ranks.push_back(p->rank);
    Builder b(&getContext());
    size_t slot = 0;
    for (FunctionOpInterface f : first.funcs) {
      // Pre-order, as Matcher visits an op before its regions.
      f->walk<WalkOrder::PreOrder>([&](Operation *op) {
        ArrayRef<StringRef> variant = variantNames(op);
        if (variant.empty())
          return;
        SmallVector<NamedAttribute> differing;
        // The walk order of Matcher::ops: the op's attribute dictionary,
        // which is sorted by name.
        for (NamedAttribute a : op->getAttrDictionary()) {
          if (!llvm::is_contained(variant, a.getName().getValue()))
            continue;
          SmallVector<Attribute> rows;
          for (RankProgram *p : members)
            rows.push_back(p->values[slot]);
          ++slot;
          if (llvm::any_of(rows, [&](Attribute r) { return r != rows[0]; }))
            differing.push_back(
                b.getNamedAttr(a.getName(), b.getArrayAttr(rows)));
        }
        if (!differing.empty())
          setAttr<Dist::RankValuesAttrHelper>(op,
                                              b.getDictionaryAttr(differing));
      });
      removeAttr<Dist::RankAttrHelper>(f);
      setAttr<Dist::RanksAttrHelper>(f, b.getDenseI64ArrayAttr(ranks));
    }
    for (RankProgram *p : members.drop_front())
      for (FunctionOpInterface f : p->funcs)
        f.erase();
  }
};

} // namespace
