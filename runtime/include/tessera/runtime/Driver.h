//===- Driver.h - the main() of emitted programs ----------------*- C++ -*-===//
//
// Part of the runtime API (see Runtime.h, the umbrella header). An emitted
// program describes its step function(s) as a Program and hands it to
// runMain, which owns flags, weights, data, the step loop and logging.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_DRIVER_H
#define TESSERA_RUNTIME_DRIVER_H

#include "tessera/runtime/OpProfile.h"
#include "tessera/runtime/Tensor.h"

#include <string>
#include <utility>
#include <vector>

namespace tessera {
namespace rt {

/// What an argument or result of an emitted step function is.
enum class Role {
  Param,    ///< a model parameter, `name` as in the model (state_dict)
  State,    ///< optimizer state, e.g. "adamw.m/<param name>"
  Input,    ///< data: a graph input of the model, by name (Program::inputs)
  Hyper,    ///< "lr", "beta1", "beta2", "eps", "weight_decay", "clip_norm"
            ///< (rank-0 f32)
  Step,     ///< the 1-based step counter (rank-0 i64)
  Loss,     ///< result: the mean loss of the step (rank-0)
  GradNorm, ///< result: the gradients' global L2 norm before clipping
  Grad,     ///< result of the gradient step: d(loss)/d(param `name`)
};

struct ValueSpec {
  Role role;
  std::string name;
  DType dtype;
  Shape shape;
  /// Integer inputs: the values must lie in [0, bound) (the vocabulary of
  /// the embedding they index, the classes of the loss); 0: unchecked.
  int64_t bound = 0;
  /// Hyperparameters: the value when the run does not set it (clip_norm:
  /// tessera-compile's --clip-norm, which OUT/run --clip-norm overrides).
  double defaultValue = 0;
  /// Optimizer state that is a piece of a whole (ZeRO-1, tensor
  /// parallelism): the whole's shape, and where each rank of the program
  /// (Program::ranks order) has its piece start in it. Empty: the value is
  /// whole. Checkpoints record them, so that any plan resumes any other's.
  Shape global = {};
  std::vector<Shape> offsets = {};
};

/// One emitted step function: all arguments in, all results out, in the
/// order of `args` and `results`. The function takes its arguments over:
/// it copies them into locals, clears `args` and drops each local after
/// its last use, so an argument whose only holder was `args` (the driver
/// donates the parameters and optimizer state of a training step) is freed
/// inside the step, as soon as the step no longer needs it. A caller that
/// keeps its own reference (evaluation, --no-donate) frees nothing.
using StepFn = void (*)(std::vector<Tensor> &args,
                        std::vector<Tensor> &results);

struct StepProgram {
  std::string optimizer; ///< "adamw" or "sgd"
  std::vector<ValueSpec> args;
  std::vector<ValueSpec> results;
  StepFn fn;
};

struct Program {
  std::string model;              ///< e.g. the ONNX file name
  std::string initWeights;        ///< safetensors beside the binary
  std::vector<StepProgram> steps; ///< one per optimizer
  /// Model FLOPs per step (forward + backward), for throughput logging.
  double flopsPerStep = 0;
  /// The device's peak FLOP/s (the compiler's device spec); with
  /// flopsPerStep, each step logs the model FLOPs utilisation
  /// flopsPerStep / seconds / (worldSize x peakFlopsPerRank). 0: unknown.
  double peakFlopsPerRank = 0;
  /// Optional: loss and gradients without an update (Param and Input
  /// arguments; Loss and Grad results), for --dump-grads.
  StepProgram gradient = {};
  /// The ranks, among the worldSize ranks of one job, that run this
  /// program (mpirun starts one process per rank; ranks whose code differs
  /// only in rank numbers share one program, and pick their values with
  /// rankValue). With worldSize > 1, runMain starts MPI and checks that
  /// mpirun gave this process one of these ranks.
  std::vector<int64_t> ranks = {0};
  int64_t worldSize = 1;
  /// The safetensors file of the program's large constants (masks,
  /// tables), which the emitted code reads with constant(key) instead of
  /// carrying them as source literals; relative to the executable's
  /// directory; empty when the program has none. runMain loads it before
  /// the first step.
  std::string constants;
  /// The model's data inputs (Role::Input names) in the graph's order, on
  /// every rank, including inputs this rank's steps do not take. A token
  /// file (--data FILE.bin) feeds the first the tokens and the second the
  /// next tokens; empty: "idx" and "targets" (programs written by hand).
  std::vector<std::string> inputs;
  /// The model's PyTorch state_dict in order: (name, initializer). --save
  /// writes every name, a trained parameter's value when the initializer
  /// is one (tied weights: several names, one parameter), else the
  /// initializer's value from the weights file (buffers, which training
  /// does not change). Empty: --save writes the parameters only.
  std::vector<std::pair<std::string, std::string>> stateDict;
  /// The plan the program was compiled for, in words ("mesh dp=2,tp=1,pp=2,
  /// 2 micro-batch(es), schedule 1f1b"; "one device"), which checkpoints
  /// record in their index.
  std::string plan;
  /// Programs compiled with --profile-ops: what each opMark id times
  /// (OpProfile.h); empty otherwise.
  std::vector<OpKey> opKeys;
};

/// The whole `OUT/run` interface:
///   --data FILE --steps K [--init FILE.safetensors] [--save FILE]
///   [--optimizer adamw|sgd] [--lr X] [--beta1 X] [--beta2 X] [--eps X]
///   [--weight-decay X] [--clip-norm X] [--seed S] [--log FILE.jsonl]
///   [--comm-timeout S] [--no-donate] [--profile-ops FILE]
/// Defaults: adamw, lr 1e-3 (adamw) / 0.1 (sgd), betas 0.9/0.999, eps 1e-8,
/// weight decay 0.01 (adamw) / 0 (sgd). Each step prints one JSON line to
/// stdout {"step", "loss", "lr", "grad_norm" (when the step returns it),
/// "tokens_per_s" (or "samples_per_s"), "flops_per_s" and "mfu" (when
/// flopsPerStep, peakFlopsPerRank are known), "elapsed_s", "peak_bytes" (this
/// step's), "val_peak_bytes" (with "val_loss")} and
/// a progress line to stderr. Errors (bad flag, missing file,
/// shape mismatch in --init) print "error: ..." and return 1. FILE is a token
/// file or a sample file (FILE.safetensors, one tensor [N, ...] per input by
/// name; docs/training.md); it is checked against the inputs before the first
/// step, and each step takes the Input arguments from it by name.
///
/// Details: "step" is 0-based (losses[i] of the PyTorch reference); "loss"
/// is null when the step function has no Loss result (e.g. a pipeline stage
/// without the head). Flags also take the form --flag=value. Without
/// --optimizer, a program with a single StepProgram uses that one. A
/// relative Program::initWeights resolves against the executable's
/// directory, a relative --init against the working directory. Params whose
/// dtype differs from the file's (both float) are converted.
///
/// Several ranks (Program::worldSize > 1, under mpirun): runMain calls
/// MPI_Init and MPI_Finalize, and exits 1 with "error: this is the program
/// of rank R of N, but it was started as rank r of n" when MPI disagrees
/// with the program. Every rank reads the same --data and --init files and
/// builds the same global batch; the step function takes its own parameters
/// and its slice of the batch. Only rank 0 prints the JSON and progress
/// lines and writes --log: its loss is the Loss result of the lowest rank
/// that has one, its peak_bytes the maximum over ranks. After every step
/// each rank completes its sends (waitSends). --save writes
/// Program::stateDict's names when the program has them (docs/training.md).
/// --save and --dump-grads gather
/// the ranks' Param (Grad) values by name to rank 0, which writes one file
/// holding each name once: the first holder by rank, then in spec order. An
/// error on any rank prints "error: rank R: ..." and aborts the whole job
/// (MPI_Abort), so no rank is left waiting. A communication call blocked
/// longer than --comm-timeout (default 600 s) ends the job with an error
/// naming the rank, the step and the call.
///
/// Training never continues on garbage: after every step each rank checks
/// the loss and its updated parameters, and a NaN or Inf stops the job
/// with an error naming the step and the parameter (with the gradient step,
/// whether its gradient or its update is not finite); nothing is saved from
/// that state. --init files with non-finite values, tokens outside an
/// input's bound (error naming the file, the step and the offset), a
/// directory or device as --data and a --save or --dump-grads path whose
/// directory does not exist are rejected before the first step.
int runMain(int argc, char **argv, const Program &program);

/// The position of this process's rank in the running Program's ranks (0
/// before runMain and in a one-rank program).
size_t rankIndex();
/// This rank's row of a table with one row per rank of the program (the
/// emitted code's rank-dependent slice offsets, groups and peers).
template <class T, size_t N> const T &rankValue(const T (&rows)[N]) {
  size_t i = rankIndex();
  if (i >= N)
    throw Error("rank table of " + std::to_string(N) +
                " rows has no row for rank position " + std::to_string(i));
  return rows[i];
}

/// The parsed flags (exposed for tests; runMain is the normal entry).
struct RunOptions {
  std::string data, init, save, log, dumpGrads;
  /// --profile-ops FILE: each op's median time into a profile database
  /// (programs compiled with tessera-compile --profile-ops, one rank).
  std::string profileOps;
  /// --trace FILE: each rank's steps, step functions and waits on other
  /// ranks as a Chrome trace (one process per rank).
  std::string trace;
  int64_t steps = -1;
  std::string optimizer; ///< empty: not given
  double lr = -1, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = -1;
  bool lrSet = false, weightDecaySet = false;
  /// --clip-norm (0: off); unset: the program's default (ValueSpec).
  double clipNorm = 0;
  bool clipNormSet = false;
  /// The learning-rate schedule (scheduledLr): warm-up steps, then
  /// "constant", "cosine" or "linear" decay to minLr at lrDecaySteps (-1:
  /// --steps).
  int64_t warmupSteps = 0;
  std::string lrDecay = "constant";
  int64_t lrDecaySteps = -1;
  double minLr = 0;
  bool minLrSet = false;
  /// Checkpoints (docs/training.md): every checkpointEvery steps (0: never)
  /// into checkpointDir, keeping the newest keepCheckpoints; resume: the
  /// directory whose newest checkpoint the run continues from.
  std::string checkpointDir, resume;
  /// Validation: the loss on the first evalSteps batches of valData after
  /// every evalEvery steps (0: after the last only).
  std::string valData;
  int64_t evalEvery = 0, evalSteps = 10;
  bool evalStepsSet = false;
  int64_t checkpointEvery = 0, keepCheckpoints = 3;
  int64_t seed = 0;
  /// Seconds a communication call may block before the job is ended
  /// (several ranks only; 0: never).
  double commTimeout = kDefaultCommTimeout;
  bool commTimeoutSet = false;
  /// --no-donate: the driver keeps the parameters and optimizer state it
  /// passes to a training step, instead of handing them over (the step
  /// then holds old and new side by side: more memory), so that a
  /// non-finite step can recompute the gradients from the old parameters
  /// and say whether a gradient or the update went wrong.
  bool noDonate = false;
  bool help = false;
  static constexpr double kDefaultCommTimeout = 600;
};
/// Throws Error("unknown flag ...", "missing value for ...", ...).
RunOptions parseRunOptions(int argc, char **argv);
/// The learning rate of 0-based step `step`: nanoGPT's get_lr (a linear
/// warm-up lr (step+1)/(warmupSteps+1), then cosine decay to minLr at
/// lrDecaySteps and minLr after), or the same with a linear or no decay.
double scheduledLr(const RunOptions &o, int64_t step);
/// The usage text --help prints.
std::string usage(const std::string &argv0);
/// Directory of the running executable (/proc/self/exe), without the
/// trailing slash.
std::string executableDir();

} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_DRIVER_H
