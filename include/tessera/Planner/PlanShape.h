//===- PlanShape.h - The mesh and stages of a plan --------------*- C++ -*-===//
//
// Which uniform mesh a training step runs on and how it is cut into
// pipeline stages: the data-, tensor- and pipeline-parallel degrees, the
// micro-batches per step and the first layer group ("unit") of each stage.
// The auto mesh search produces one, a plan file's `mesh` gives its degrees,
// a built-in policy name ("dp2xtp2xpp2") its degrees too, and dist-plan
// annotates the step from it.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_PLANNER_PLANSHAPE_H
#define TESSERA_PLANNER_PLANSHAPE_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::planner {

struct PlanShape {
  int64_t dp = 1, tp = 1, pp = 1;
  int64_t microBatches = 1;
  /// The first unit of each of the pp stages, ascending from 0; empty when
  /// not chosen (dist-plan's pp policy then balances the units by FLOPs).
  std::vector<size_t> stageStarts;
};

} // namespace tessera::planner

#endif // TESSERA_PLANNER_PLANSHAPE_H
