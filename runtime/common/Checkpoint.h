//===- Checkpoint.h - training checkpoints (private) ------------*- C++ -*-===//
//
// --checkpoint-dir DIR --checkpoint-every K and --resume DIR of OUT/run
// (docs/training.md). A checkpoint is a directory DIR/step-NNNNNNNN with one
// safetensors file per rank (rank-RRRRR.safetensors: the rank's parameters
// and optimizer state, under the step function's names, its own shards) and
// an index.json that rank 0 writes last. It is written under a temporary
// name, every file fsynced, and renamed into place by rank 0 once every
// rank has written: a checkpoint directory without the temporary name is
// complete, and a kill at any moment leaves the previous ones intact.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMMON_CHECKPOINT_H
#define TESSERA_RUNTIME_COMMON_CHECKPOINT_H

#include "tessera/runtime/Driver.h"

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace tessera {
namespace rt {

/// What a checkpoint restores: the steps done (the next step's index, so
/// also the data position and the dropout masks' counter) and this rank's
/// parameters and optimizer state by name.
struct CheckpointState {
  int64_t stepsDone = 0;
  std::map<std::string, Tensor> params, states;
};

/// This rank's piece of a value: the whole's shape and where it starts.
struct Box {
  Shape global, offset;
};

/// Where this rank's piece of `spec` lies in the whole (ValueSpec::global
/// and offsets; a whole value: itself at the origin).
Box boxOf(const ValueSpec &spec);

/// Copies the elements of host tensor `piece` (at `from` in the whole) that
/// lie in host tensor `target` (at `to`) and were not copied before
/// (`covered`, one flag per element of `target`); returns how many it
/// copied.
int64_t copyOverlap(const Tensor &piece, const Shape &from, Tensor &target,
                    const Shape &to, std::vector<char> &covered);

/// Writes checkpoint `state.stepsDone` into `dir` (created if missing),
/// then deletes all but the newest `keep` checkpoints and any temporary
/// directory a killed run left. Collective over the world's ranks.
void writeCheckpoint(const std::string &dir, const Program &program,
                     const StepProgram &step, const CheckpointState &state,
                     int64_t keep);

/// The newest complete checkpoint in `dir`; throws when there is none.
std::string latestCheckpoint(const std::string &dir);

/// This rank's part of the checkpoint at `path`, checked against the
/// program: the same model and optimizer, and every Param and State of
/// `step` with its shape: from the rank's own file under the same plan,
/// else put together from the pieces of all rank files, which record where
/// each lies in the whole (ValueSpec::global/offsets of the plan that
/// wrote them): any plan's checkpoint resumes under any other (ZeRO-1 and
/// tensor-parallel pieces included). A part the pieces do not cover, or a
/// whole of another shape, is an error naming the tensor.
CheckpointState readCheckpoint(const std::string &path, const Program &program,
                               const StepProgram &step);

/// `tessera-ckpt info PATH`: what the checkpoint at PATH (a step directory,
/// or a --checkpoint-dir: its newest complete checkpoint) holds: its step,
/// model, optimizer and rank files, then each tensor with its dtype and its
/// shape on each rank (a shard's shape differs from the whole's), read from
/// the files' headers only. Throws Error on what is not a checkpoint.
void describeCheckpoint(const std::string &path, std::ostream &os);

} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_COMMON_CHECKPOINT_H
