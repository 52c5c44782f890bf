//===- PlanUtils.h - dist-plan pieces shared with auto ----------*- C++ -*-===//
//
// The auto policy (AutoPlan.cpp) models the same program the built-in
// policies annotate: the same layer groups ("units") the pipeline policy
// cuts into stages, the same logical-dimension traces that decide which ops
// the batch and Megatron's tensor parallelism split. Sharing the code keeps
// the model and the plan that is finally written from drifting apart.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_LIB_DIALECT_DIST_TRANSFORMS_PLANUTILS_H
#define TESSERA_LIB_DIALECT_DIST_TRANSFORMS_PLANUTILS_H

#include "tessera/Annotation/Annotation.h"
#include "tessera/Dialect/Dist/Transforms/PlanFile.h"
#include "tessera/Planner/PlanShape.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>
#include <vector>

namespace tessera::dist::plan_detail {

struct LogicalDim {
  llvm::DenseMap<mlir::Value, int64_t> carriers; ///< value -> dimension
  llvm::DenseMap<mlir::Operation *, std::string> names;
};

/// The dimension of `spec` whose outermost factor is `name`, or -1.
int64_t dimOfName(const tessera::annotation::TensorSpec &spec,
                  const std::string &name);

/// Traces a logical dimension of size `factor`-divisible extent from the
/// seeds through the ops of `body`, both from operands to results and, if
/// `backward`, from results to operands. `accept` may veto an op.
LogicalDim traceDim(mlir::Block &body,
                    llvm::ArrayRef<std::pair<mlir::Value, int64_t>> seeds,
                    int64_t factor, bool backward,
                    llvm::function_ref<bool(mlir::Operation *)> accept);

/// The forward ops of a step grouped into layer units, in program order:
/// numbered layers ("h.3", with what comes before and after), or, in a
/// model without them, runs of one top-level module ("fc1", "conv2").
struct Units {
  llvm::SmallVector<mlir::Operation *> forward; ///< no constants, no return
  std::vector<int64_t> unitOf;    ///< per forward op: its (non-empty) unit
  std::vector<std::string> names; ///< per unit: "h.3", "(before the layers)"
  bool byModules = false;         ///< no numbered layers: units are module runs
};
Units groupUnits(mlir::Block &body);

/// Activation recomputation (dist-recompute): whether the backward reads a
/// copy of `v` instead of `v`. It does when `v`'s op is a forward op marked
/// dist.recompute and no forward op of another unit (nor the step's
/// return) reads `v`: such a value is its unit's checkpoint and is kept.
/// `unitOf`: each forward op's unit, as groupUnits gives it.
bool isRecomputed(mlir::Value v,
                  const llvm::DenseMap<mlir::Operation *, int64_t> &unitOf);

/// What a plan-file selector reads of a step (PlanSelect.cpp): each
/// forward op's layer group, the backward ops' forward op names, the
/// parameters' names.
struct SelectionContext {
  llvm::DenseMap<mlir::Operation *, std::string> groupOf; ///< forward ops
  llvm::StringMap<std::string> groupOfName;               ///< forward names
  llvm::DenseMap<mlir::Value, std::string> paramName;     ///< arguments
};
SelectionContext selectionContext(mlir::func::FuncOp f);

/// The value `v` is a view of (through transposes, reshapes and casts), or
/// `v`; the views on the way go to `chain`.
mlir::Value
sourceThroughViews(mlir::Value v,
                   llvm::SmallVectorImpl<mlir::Operation *> *chain = nullptr);

/// The name of the forward op a backward op differentiates, or "".
llvm::StringRef forwardNameOf(mlir::Operation *op);

/// The ops of `f` that `sel` selects, in program order.
llvm::SmallVector<mlir::Operation *> selectOps(mlir::func::FuncOp f,
                                               const PlanFile::Selector &sel,
                                               const SelectionContext &cx);

/// The error of a plan-file entry (`entry`[`index`]) that selects no op.
mlir::LogicalResult matchesNothing(mlir::Operation *where,
                                   llvm::StringRef entry, size_t index,
                                   const PlanFile::Selector &select);

/// Megatron's seeds: the head dimension of each reshape that splits the
/// hidden dimension into heads, and the hidden dimension at the input of
/// each MLP's down projection (an elementwise function of projections).
void tensorParallelSeeds(
    mlir::Block &body,
    llvm::SmallVectorImpl<std::pair<mlir::Value, int64_t>> &heads,
    llvm::SmallVectorImpl<std::pair<mlir::Value, int64_t>> &hidden);

/// The built-in policies (PlanPolicies.cpp). Each writes its attributes on
/// the ops of the training step `f` and emits its errors on `f` or an op.

/// Appends `lines` to the module's dist.plan_report, once (every training
/// step of the module is planned alike; the first reports for all).
void appendPlanReport(mlir::func::FuncOp f,
                      llvm::ArrayRef<mlir::Attribute> lines);

/// Adds `name -> axis` to the op's dist.split (one split per axis per op:
/// the first wins).
void addSplit(mlir::Operation *op, llvm::StringRef name, llvm::StringRef axis);
/// The name of the op's dimension that mesh axis `axis` splits (its
/// dist.split), or nullopt.
std::optional<std::string> splitOver(mlir::Operation *op, llvm::StringRef axis);

/// The size of mesh axis `axis` (dp, tp or pp) in `shape`.
inline int64_t axisSize(const planner::PlanShape &shape, llvm::StringRef axis) {
  return axis == "dp" ? shape.dp : axis == "tp" ? shape.tp : shape.pp;
}
/// dp and micro-batches: traces the batch from the data inputs' first
/// dimension, marks dist.batch and, with dp > 1, splits it over dp.
mlir::LogicalResult planBatch(mlir::func::FuncOp f,
                              const planner::PlanShape &shape);
/// Megatron-style tp: attention split by heads, the MLP column- then
/// row-parallel.
mlir::LogicalResult planTensorParallel(mlir::func::FuncOp f, int64_t tp);
/// dist-coshard on `module` (Coshard.cpp): the ops marked dist.coshard as
/// their pieces; success with nothing marked.
mlir::LogicalResult runCoshard(mlir::ModuleOp module);
/// ZeRO-1: the optimizer updates split over dp where dp divides them.
void planZero1(mlir::func::FuncOp f, int64_t dp);
/// ZeRO-2: ZeRO-1, and each split update's gradient reduced straight into
/// dp shards (reduce-scatter) with the ops between (views, the global norm,
/// clipping) split like the update.
void planZero2(mlir::func::FuncOp f, int64_t dp);
/// ZeRO-3: ZeRO-1, and each parameter whose update ZeRO-1 split is kept
/// sharded like its update (dist.zero3 on its argument); with `only`
/// non-empty, only the parameters it names (the others stay whole).
void planZero3(mlir::func::FuncOp f, int64_t dp,
               llvm::ArrayRef<std::string> only = {});
/// pp: stages by layer groups balanced by FLOPs (or the shape's stage
/// starts), `stagesPerDevice` virtual stages per device (in a V with
/// `vShape`, recorded in dist.pipeline); parameters with their first use,
/// the backward with the forward it differentiates.
mlir::LogicalResult planPipeline(mlir::func::FuncOp f,
                                 const planner::PlanShape &shape,
                                 int64_t stagesPerDevice, bool vShape);

struct AutoPlanOptions {
  int64_t devices = 1;
  int64_t microBatches = 1; ///< > 1: fixed; 1: chosen by the policy
  std::string deviceSpec = "cpu";
  std::string profileDatabase; ///< "" for none
  double memoryGiB = 16;
  std::string schedule = "1f1b";
  bool zero1 = false;
  bool zero2 = false;
  bool zero3 = false;
  bool report = false;
  /// A plan file's constraints on the search (docs/plans.md): mesh axis
  /// sizes to keep (0: free), micro-batches fixed even at 1, and the
  /// constraints in words for the error when none is feasible.
  int64_t fixedDp = 0, fixedTp = 0, fixedPp = 0;
  bool microBatchesFixed = false;
  std::string constraints;
  /// The file's assign and trans entries, which the search also keeps: a
  /// layer group whose forward ops entries assign to one stage is cut into
  /// that stage, and a mesh axis that trans entries split over has a size
  /// > 1 that divides every dimension they split over it.
  std::vector<PlanFile::Assign> assign;
  std::vector<PlanFile::Trans> trans;
};

/// The auto policy (AutoPlan.cpp): models the largest train step of
/// `module` and picks the fastest uniform mesh that fits in memory, with a
/// stage start per stage; the built-in policies then annotate that shape.
/// When no plan fits, it tries the memory savers: ZeRO-2 or ZeRO-3
/// (`zero2`, `zero3` come back true; `zero3Params` names the parameters
/// ZeRO-3 shards when only some stages need it, empty: every one) and
/// recomputing layer groups (dist.recompute marks).
/// Errors are emitted on the module.
mlir::LogicalResult planAuto(mlir::ModuleOp module,
                             const AutoPlanOptions &options,
                             planner::PlanShape &shape, bool &zero2,
                             bool &zero3,
                             std::vector<std::string> &zero3Params);

/// The auto policy's predicted step time of the plan the built-in
/// policies wrote on `module` (mesh `shape`, stages from the forward ops'
/// dist.stage), as lines for dist.plan_report; a plan the model cannot
/// evaluate gets a line that says why. Errors (no step, a bad spec) are
/// emitted on the module under "dist-plan: plan '<policy>'".
mlir::LogicalResult predictPlan(mlir::ModuleOp module,
                                const AutoPlanOptions &options,
                                llvm::StringRef policy,
                                const planner::PlanShape &shape,
                                llvm::SmallVectorImpl<std::string> &lines);

} // namespace tessera::dist::plan_detail

#endif // TESSERA_LIB_DIALECT_DIST_TRANSFORMS_PLANUTILS_H
