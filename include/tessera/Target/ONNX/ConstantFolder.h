//===- ConstantFolder.h - evaluate ONNX nodes on constants -----*- C++ -*-===//
//
// torch exports compute shapes with small integer subgraphs (Shape, Gather,
// Concat, Unsqueeze, ...). tsr has no integer shape arithmetic, so the
// importer evaluates such nodes, when all their inputs are known at import
// time, with this plain C++ evaluator and never emits them. Float math on
// constants that the folder's table lacks is imported by its rule and
// folded by the built ops' own folders (ImportContext::foldBuiltOps).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_TARGET_ONNX_CONSTANTFOLDER_H
#define TESSERA_TARGET_ONNX_CONSTANTFOLDER_H

#include "tessera/Target/ONNX/OnnxModel.h"

namespace tessera::onnx_import {

enum class FoldStatus {
  Folded,      // `outputs` holds one tensor per node output
  NotFoldable, // op (or this use of it) not evaluated here: emit IR instead
  Error,       // the node is invalid on these inputs; `error` says why
};

/// Evaluates `node` (default domain, opset `opset`) on constant inputs;
/// `inputs[i]` is null where an optional input is omitted. Folding stops at
/// `maxElements` result elements so that a huge constant stays an op.
FoldStatus foldNode(const Node &node, int64_t opset,
                    const std::vector<const Tensor *> &inputs,
                    std::vector<Tensor> &outputs, std::string &error,
                    int64_t maxElements = 1 << 20);

/// Whether foldNode evaluates some nodes of this (ai.onnx) op type.
bool canFoldOpType(const std::string &opType);

/// Numpy broadcast of two shapes; false if they do not broadcast.
bool broadcastShapes(const std::vector<int64_t> &a,
                     const std::vector<int64_t> &b, std::vector<int64_t> &out);

/// Shape rules shared by the folder and the importer (which applies them to
/// run-time values). Each returns false and sets `error` on invalid input.

/// Reshape's target: 0 copies the input dimension (unless allowZero), one
/// -1 is inferred.
bool reshapeShape(const std::vector<int64_t> &in, std::vector<int64_t> target,
                  bool allowZero, std::vector<int64_t> &out,
                  std::string &error);
/// Unsqueeze: `axes` index the result (negative from its end).
bool unsqueezeShape(const std::vector<int64_t> &in,
                    const std::vector<int64_t> &axes, std::vector<int64_t> &out,
                    std::string &error);
/// Squeeze: `axes` must have size 1; without axes every 1 goes.
bool squeezeShape(const std::vector<int64_t> &in,
                  const std::vector<int64_t> &axes, bool axesGiven,
                  std::vector<int64_t> &out, std::string &error);
/// Slice with ONNX's clamping, for every dimension of `shape`: the first
/// element, the step and the number of elements taken. `axes` and `steps`
/// may be empty (all leading axes, steps of 1).
bool sliceBounds(const std::vector<int64_t> &shape,
                 const std::vector<int64_t> &starts,
                 const std::vector<int64_t> &ends, std::vector<int64_t> axes,
                 std::vector<int64_t> steps, std::vector<int64_t> &first,
                 std::vector<int64_t> &step, std::vector<int64_t> &count,
                 std::string &error);

} // namespace tessera::onnx_import

#endif // TESSERA_TARGET_ONNX_CONSTANTFOLDER_H
