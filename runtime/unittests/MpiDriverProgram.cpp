//===- MpiDriverProgram.cpp - hand-written per-rank programs for runMain --===//
//
// What tessera-compile emits for several ranks, written by hand: a bigram
// model with a bias (logits = W[idx] + b, W: V x V, b: V) trained with SGD
// on the example's token data, as
//   serial        one rank, the whole batch;
//   dp R N        data parallel: rank R computes the gradient of its B/N
//                 rows, all_reduce(sum) / N, every rank holds W and b;
//   pp R 2        two pipeline stages: rank 0 holds W and sends W[idx],
//                 rank 1 holds b, computes the loss and sends d(logits)
//                 back (only rank 1 has the Loss);
//   throw R N     dp, but rank 1 throws in its second step;
// each with a gradient step for --dump-grads. test/Runtime/mpi-driver.test
// runs them under mpirun and compares them with `serial`.
//
//   TesseraMpiDriverProgram write-init FILE    writes initial W and b
//   TesseraMpiDriverProgram VARIANT [R N] <runMain flags>
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Runtime.h"

#include <cstdio>
#include <cstring>
#include <random>
#include <string>

using namespace tessera::rt;

namespace {

constexpr int64_t V = 84, B = 4, T = 8;
int64_t gRank = 0, gWorld = 1;

ValueSpec spec(Role role, const std::string &name, DType dtype, Shape shape) {
  return ValueSpec{role, name, dtype, std::move(shape)};
}

std::vector<int64_t> allRanks() {
  std::vector<int64_t> ranks;
  for (int64_t r = 0; r < gWorld; ++r)
    ranks.push_back(r);
  return ranks;
}

/// This rank's rows of the global batch.
Tensor myRows(const Tensor &x) {
  int64_t rows = B / gWorld;
  return slice(x, {gRank * rows, 0}, {(gRank + 1) * rows, T}, {1, 1});
}

struct LossAndGrads {
  Tensor loss, dw, db;
};

/// Mean loss over the given rows and its gradients.
LossAndGrads lossAndGrads(const Tensor &w, const Tensor &b, const Tensor &idx,
                          const Tensor &targets) {
  int64_t rows = idx.dim(0);
  Tensor logits = reshape(add(gather(w, idx, 0), b), {rows * T, V});
  Tensor labels = reshape(targets, {rows * T});
  LossAndGrads out;
  out.loss = softmax_cross_entropy(logits, labels, -1, Reduction::mean);
  Tensor dlogits = softmax_cross_entropy_grad(
      logits, labels, scalar(1, w.dtype()), -1, Reduction::mean);
  out.dw = embedding_grad(reshape(dlogits, {rows, T, V}), idx, {V, V});
  out.db = reduce_sum(dlogits, {0}, false);
  return out;
}

/// The data-parallel gradient: every rank's mean over its rows, averaged.
LossAndGrads dpLossAndGrads(const Tensor &w, const Tensor &b, const Tensor &idx,
                            const Tensor &targets) {
  LossAndGrads local = lossAndGrads(w, b, myRows(idx), myRows(targets));
  Tensor inv = scalar(1.0 / gWorld, w.dtype());
  std::vector<int64_t> ranks = allRanks();
  return {mul(all_reduce(local.loss, ranks, ReduceKind::sum), inv),
          mul(all_reduce(local.dw, ranks, ReduceKind::sum), inv),
          mul(all_reduce(local.db, ranks, ReduceKind::sum), inv)};
}

// serial and dp. args: w, b, idx, targets, lr, weight_decay
// results: loss, w, b
using GradsFn = LossAndGrads (*)(const Tensor &, const Tensor &, const Tensor &,
                                 const Tensor &);
template <GradsFn grads>
void sgdStep(std::vector<Tensor> &a, std::vector<Tensor> &r) {
  LossAndGrads g = grads(a[0], a[1], a[2], a[3]);
  r = {g.loss, sgd_update(a[0], g.dw, a[4], a[5]),
       sgd_update(a[1], g.db, a[4], a[5])};
}
template <GradsFn grads>
void gradStep(std::vector<Tensor> &a, std::vector<Tensor> &r) {
  LossAndGrads g = grads(a[0], a[1], a[2], a[3]);
  r = {g.loss, g.dw, g.db};
}
const auto serialStep = sgdStep<lossAndGrads>;
const auto serialGrad = gradStep<lossAndGrads>;
const auto dpStep = sgdStep<dpLossAndGrads>;
const auto dpGrad = gradStep<dpLossAndGrads>;
int gCalls = 0;
// Rank 1 throws in step 2: rank 0 has printed step 0's line before it
// entered step 1's all_reduce, which rank 1 completed, so the line is out
// before the abort (throwing in step 1 raced with that print).
void throwingStep(std::vector<Tensor> &a, std::vector<Tensor> &r) {
  if (gRank == 1 && gCalls++ == 2)
    throw Error("the step exploded");
  dpStep(a, r);
}

// pp stage 0. args: w, idx, targets[, lr, weight_decay]; results: w or dw.
Tensor stage0Grad(const Tensor &w, const Tensor &idx) {
  send(gather(w, idx, 0), 1, 0);
  Tensor dh = recv({B, T, V}, w.dtype(), 1, 1);
  return embedding_grad(dh, idx, {V, V});
}
void stage0Step(std::vector<Tensor> &a, std::vector<Tensor> &r) {
  r = {sgd_update(a[0], stage0Grad(a[0], a[1]), a[3], a[4])};
}
void stage0GradStep(std::vector<Tensor> &a, std::vector<Tensor> &r) {
  r = {stage0Grad(a[0], a[1])};
}
// pp stage 1. args: b, idx, targets[, lr, weight_decay]; results: loss, b
// (or loss, db).
std::pair<Tensor, Tensor> stage1LossAndGrad(const Tensor &b,
                                            const Tensor &targets) {
  Tensor h = recv({B, T, V}, b.dtype(), 0, 0);
  Tensor logits = reshape(add(h, b), {B * T, V});
  Tensor labels = reshape(targets, {B * T});
  Tensor loss = softmax_cross_entropy(logits, labels, -1, Reduction::mean);
  Tensor dlogits = softmax_cross_entropy_grad(
      logits, labels, scalar(1, b.dtype()), -1, Reduction::mean);
  send(reshape(dlogits, {B, T, V}), 0, 1);
  return {loss, reduce_sum(dlogits, {0}, false)};
}
void stage1Step(std::vector<Tensor> &a, std::vector<Tensor> &r) {
  auto [loss, db] = stage1LossAndGrad(a[0], a[2]);
  r = {loss, sgd_update(a[0], db, a[3], a[4])};
}
void stage1GradStep(std::vector<Tensor> &a, std::vector<Tensor> &r) {
  auto [loss, db] = stage1LossAndGrad(a[0], a[2]);
  r = {loss, db};
}

std::vector<ValueSpec> inputsAndHypers(std::vector<ValueSpec> specs,
                                       bool hypers) {
  specs.push_back(spec(Role::Input, "idx", DType::i64, {B, T}));
  specs.push_back(spec(Role::Input, "targets", DType::i64, {B, T}));
  if (hypers) {
    specs.push_back(spec(Role::Hyper, "lr", DType::f32, {}));
    specs.push_back(spec(Role::Hyper, "weight_decay", DType::f32, {}));
  }
  return specs;
}

Program makeProgram(const std::string &variant) {
  ValueSpec w = spec(Role::Param, "w", DType::f32, {V, V});
  ValueSpec b = spec(Role::Param, "b", DType::f32, {V});
  ValueSpec loss = spec(Role::Loss, "loss", DType::f32, {});
  ValueSpec dw = spec(Role::Grad, "w", DType::f32, {V, V});
  ValueSpec db = spec(Role::Grad, "b", DType::f32, {V});
  Program p;
  p.model = "bigram+bias";
  p.ranks = {gRank};
  p.worldSize = gWorld;
  if (variant == "serial" || variant == "dp" || variant == "throw") {
    StepFn step = variant == "serial" ? serialStep
                  : variant == "dp"   ? dpStep
                                      : throwingStep;
    p.steps = {{"sgd", inputsAndHypers({w, b}, true), {loss, w, b}, step}};
    p.gradient = {"",
                  inputsAndHypers({w, b}, false),
                  {loss, dw, db},
                  variant == "serial" ? serialGrad : dpGrad};
  } else if (variant == "pp" && gRank == 0) {
    p.steps = {{"sgd", inputsAndHypers({w}, true), {w}, stage0Step}};
    p.gradient = {"", inputsAndHypers({w}, false), {dw}, stage0GradStep};
  } else if (variant == "pp") {
    p.steps = {{"sgd", inputsAndHypers({b}, true), {loss, b}, stage1Step}};
    p.gradient = {"", inputsAndHypers({b}, false), {loss, db}, stage1GradStep};
  } else {
    std::fprintf(stderr, "unknown variant '%s'\n", variant.c_str());
    std::exit(2);
  }
  return p;
}

int writeInit(const std::string &path) {
  std::mt19937 gen(5);
  std::normal_distribution<double> dist(0.0, 0.5);
  std::vector<double> wv(V * V), bv(V);
  for (double &x : wv)
    x = dist(gen);
  for (double &x : bv)
    x = dist(gen);
  writeSafetensors(path, {{"w", fromValues({V, V}, DType::f32, wv)},
                          {"b", fromValues({V}, DType::f32, bv)}});
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 3 && std::strcmp(argv[1], "write-init") == 0)
    return writeInit(argv[2]);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s write-init FILE | VARIANT [R N] FLAGS\n",
                 argv[0]);
    return 2;
  }
  std::string variant = argv[1];
  int used = 2;
  if (variant != "serial") {
    if (argc < 4)
      return 2;
    gRank = std::atoll(argv[2]);
    gWorld = std::atoll(argv[3]);
    used = 4;
  }
  Program program = makeProgram(variant);
  // runMain sees the program's own flags, as OUT/run passes them.
  std::vector<char *> args = {argv[0]};
  args.insert(args.end(), argv + used, argv + argc);
  args.push_back(nullptr);
  return runMain(static_cast<int>(args.size()) - 1, args.data(), program);
}
