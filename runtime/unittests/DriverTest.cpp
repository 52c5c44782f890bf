//===- DriverTest.cpp - runMain end to end with a hand-written step -------===//
//
// The step functions here are what the emitter produces, written by hand:
// a bigram model (logits = W[idx], W: V x V) trained with softmax
// cross-entropy on the example's token data, with an SGD and an AdamW
// variant. runMain is called directly with argv arrays.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

using namespace tessera::rt;
using namespace tessera::rt::test;

namespace {

constexpr int64_t V = 84, B = 2, T = 8;
const std::string kData =
    std::string(TESSERA_RT_EXAMPLES_DIR) + "/data/train.bin";

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "tessera_rt_driver_" +
         std::to_string(::getpid()) + "_" + name;
}

/// (loss, dW) of the bigram model on one batch.
std::pair<Tensor, Tensor> bigramLossAndGrad(const Tensor &w, const Tensor &idx,
                                            const Tensor &targets) {
  Tensor logits = reshape(gather(w, idx, 0), {B * T, V});
  Tensor labels = reshape(targets, {B * T});
  Tensor loss = softmax_cross_entropy(logits, labels, -1, Reduction::mean);
  Tensor dlogits = softmax_cross_entropy_grad(
      logits, labels, scalar(1, w.dtype()), -1, Reduction::mean);
  Tensor dw = embedding_grad(reshape(dlogits, {B, T, V}), idx, {V, V});
  return {loss, dw};
}

// args: w, idx, targets, lr, weight_decay -> results: loss, w
void sgdStep(std::vector<Tensor> &args, std::vector<Tensor> &results) {
  auto [loss, dw] = bigramLossAndGrad(args[0], args[1], args[2]);
  results[0] = loss;
  results[1] = sgd_update(args[0], dw, args[3], args[4]);
}

std::vector<std::vector<double>> gHypers; // per step: lr b1 b2 eps wd step
// args: w, m, v, idx, targets, step, lr, beta1, beta2, eps, weight_decay
// results: loss, w, m, v
void adamwStep(std::vector<Tensor> &args, std::vector<Tensor> &results) {
  std::vector<double> seen;
  for (int i : {6, 7, 8, 9, 10, 5})
    seen.push_back(item(args[i]));
  gHypers.push_back(seen);
  auto [loss, dw] = bigramLossAndGrad(args[0], args[3], args[4]);
  auto [p, m, v] = adamw_update(args[0], dw, args[1], args[2], args[5], args[6],
                                args[7], args[8], args[9], args[10]);
  results = {loss, p, m, v};
}

// args: w, other, idx, targets, lr, weight_decay -> results: loss, w.
// `other` is read but not returned (as an integer parameter is passed
// through): the driver must keep it rather than donate it.
int gOtherSeen = 0;
void passThroughStep(std::vector<Tensor> &args, std::vector<Tensor> &results) {
  if (!args[1].defined() || args[1].shape() != Shape{3})
    throw Error("the parameter 'other' is missing");
  ++gOtherSeen;
  std::vector<Tensor> sgdArgs = {args[0], args[2], args[3], args[4], args[5]};
  args.clear(); // as emitted steps do
  sgdStep(sgdArgs, results);
}

void throwingStep(std::vector<Tensor> &, std::vector<Tensor> &) {
  throw Error("the step exploded");
}

ValueSpec spec(Role role, const std::string &name, DType dtype, Shape shape) {
  return ValueSpec{role, name, dtype, std::move(shape)};
}

StepProgram sgdProgram() {
  return {"sgd",
          {spec(Role::Param, "w", DType::f32, {V, V}),
           spec(Role::Input, "idx", DType::i64, {B, T}),
           spec(Role::Input, "targets", DType::i64, {B, T}),
           spec(Role::Hyper, "lr", DType::f32, {}),
           spec(Role::Hyper, "weight_decay", DType::f32, {})},
          {spec(Role::Loss, "loss", DType::f32, {}),
           spec(Role::Param, "w", DType::f32, {V, V})},
          sgdStep};
}

StepProgram adamwProgram() {
  return {"adamw",
          {spec(Role::Param, "w", DType::f32, {V, V}),
           spec(Role::State, "adamw.m/w", DType::f32, {V, V}),
           spec(Role::State, "adamw.v/w", DType::f32, {V, V}),
           spec(Role::Input, "idx", DType::i64, {B, T}),
           spec(Role::Input, "targets", DType::i64, {B, T}),
           spec(Role::Step, "step", DType::i64, {}),
           spec(Role::Hyper, "lr", DType::f32, {}),
           spec(Role::Hyper, "beta1", DType::f32, {}),
           spec(Role::Hyper, "beta2", DType::f32, {}),
           spec(Role::Hyper, "eps", DType::f32, {}),
           spec(Role::Hyper, "weight_decay", DType::f32, {})},
          {spec(Role::Loss, "loss", DType::f32, {}),
           spec(Role::Param, "w", DType::f32, {V, V}),
           spec(Role::State, "adamw.m/w", DType::f32, {V, V}),
           spec(Role::State, "adamw.v/w", DType::f32, {V, V})},
          adamwStep};
}

struct RunResult {
  int status;
  std::string out, err;
};

RunResult runWith(const std::vector<std::string> &flags,
                  const Program &program) {
  std::vector<std::string> storage = {"run"};
  storage.insert(storage.end(), flags.begin(), flags.end());
  std::vector<char *> argv;
  for (std::string &s : storage)
    argv.push_back(s.data());
  argv.push_back(nullptr);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int status = runMain(static_cast<int>(storage.size()), argv.data(), program);
  RunResult r{status, ::testing::internal::GetCapturedStdout(),
              ::testing::internal::GetCapturedStderr()};
  return r;
}

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

/// Initial weights written to a temporary file; returns its path.
std::string writeInit(const std::string &name, Shape shape = {V, V}) {
  std::string path = tempPath(name);
  writeSafetensors(path, {{"other", zeros({3}, DType::f32)},
                          {"w", randn(shape, DType::f32, 77, 0.1)}});
  return path;
}

} // namespace

TEST(Driver, SgdRunMatchesAManualLoopAndSaves) {
  std::string init = writeInit("init.safetensors");
  std::string save = tempPath("final.safetensors");
  std::string log = tempPath("log.jsonl");
  Program program{"bigram", "", {sgdProgram()}, 1e6};
  program.peakFlopsPerRank = 2e9;
  RunResult r =
      runWith({"--data", kData, "--steps", "4", "--init", init, "--optimizer",
               "sgd", "--lr", "0.5", "--save", save, "--log", log},
              program);
  ASSERT_EQ(r.status, 0) << r.err;

  // The same loop by hand.
  Tensor w = readSafetensors(init)[1].second;
  TokenData data(kData);
  std::vector<double> losses;
  for (int64_t step = 0; step < 4; ++step) {
    auto [idx, targets] = data.batch(step, B, T);
    auto [loss, dw] = bigramLossAndGrad(w, idx, targets);
    losses.push_back(item(loss));
    w = sgd_update(w, dw, scalar(0.5, DType::f32), scalar(0, DType::f32));
  }
  // Step 0's loss from first principles: mean of logsumexp - target logit.
  {
    Tensor w0 = readSafetensors(init)[1].second;
    auto [idx, targets] = data.batch(0, B, T);
    std::vector<double> wv = toDoubles(w0), iv = toDoubles(idx),
                        tv = toDoubles(targets);
    double total = 0;
    for (int64_t i = 0; i < B * T; ++i) {
      const double *row = wv.data() + static_cast<int64_t>(iv[i]) * V;
      double s = 0;
      for (int64_t c = 0; c < V; ++c)
        s += std::exp(row[c]);
      total += std::log(s) - row[static_cast<int64_t>(tv[i])];
    }
    EXPECT_NEAR(losses[0], total / (B * T), 1e-6);
  }

  std::vector<std::string> out = lines(r.out);
  ASSERT_EQ(out.size(), 4u) << r.out;
  for (int64_t step = 0; step < 4; ++step) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(out[step]);
    std::vector<std::string> keys;
    for (auto it = j.begin(); it != j.end(); ++it)
      keys.push_back(it.key());
    EXPECT_EQ(keys, (std::vector<std::string>{
                        "step", "loss", "lr", "tokens_per_s", "flops_per_s",
                        "mfu", "elapsed_s", "peak_bytes", "footprint_bytes",
                        "reserved_bytes"}));
    // This program has no static memory plan: the footprint is the peak.
    EXPECT_EQ(j["footprint_bytes"], j["peak_bytes"]);
    // One step time: flops_per_s / tokens_per_s = flopsPerStep / tokens,
    // and mfu = flops_per_s / (1 rank x peak), both printed to 6 digits.
    double flops = j["flops_per_s"].get<double>();
    EXPECT_NEAR(flops / j["tokens_per_s"].get<double>(), 1e6 / (B * T),
                1e-5 * 1e6 / (B * T));
    EXPECT_NEAR(j["mfu"].get<double>(), flops / 2e9, 1e-5 * flops / 2e9);
    EXPECT_EQ(j["step"].get<int64_t>(), step);
    EXPECT_EQ(j["loss"].get<double>(), losses[step]); // bit-exact
    EXPECT_GT(j["tokens_per_s"].get<double>(), 0);
    EXPECT_GE(j["elapsed_s"].get<double>(), 0);
    EXPECT_GE(j["peak_bytes"].get<int64_t>(), V * V * 4);
  }
  EXPECT_LT(losses[3], losses[0]); // it learns

  std::ifstream logIn(log);
  std::stringstream logText;
  logText << logIn.rdbuf();
  EXPECT_EQ(logText.str(), r.out);
  std::vector<std::string> progress = lines(r.err);
  ASSERT_EQ(progress.size(), 4u) << r.err;
  EXPECT_EQ(progress[0].rfind("step 1/4 | loss ", 0), 0u) << progress[0];
  EXPECT_NE(progress[0].find("tok/s"), std::string::npos);
  EXPECT_NE(progress[0].find("GFLOP/s"), std::string::npos);

  SafetensorsContents saved = readSafetensorsWithMetadata(save);
  ASSERT_EQ(saved.tensors.size(), 1u);
  EXPECT_EQ(saved.tensors[0].first, "w");
  EXPECT_EQ(toDoubles(saved.tensors[0].second), toDoubles(w));
  EXPECT_EQ(saved.metadata.at("model"), "bigram");
  for (const std::string &p : {init, save, log})
    std::remove(p.c_str());
}

TEST(Driver, AdamWByDefaultWithDocumentedHyperparameters) {
  std::string init = writeInit("init_adamw.safetensors");
  Program program{"bigram", "", {sgdProgram(), adamwProgram()}, 0};
  gHypers.clear();
  RunResult r =
      runWith({"--data", kData, "--steps", "3", "--init", init}, program);
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(gHypers.size(), 3u);
  for (size_t s = 0; s < 3; ++s) {
    EXPECT_EQ(gHypers[s][0], double(float(1e-3)));  // lr
    EXPECT_EQ(gHypers[s][1], double(float(0.9)));   // beta1
    EXPECT_EQ(gHypers[s][2], double(float(0.999))); // beta2
    EXPECT_EQ(gHypers[s][3], double(float(1e-8)));  // eps
    EXPECT_EQ(gHypers[s][4], double(float(0.01)));  // weight decay
    EXPECT_EQ(gHypers[s][5], double(s + 1));        // 1-based step
  }
  // The optimizer state flows from step to step: the same losses as a
  // manual AdamW loop.
  Tensor w = readSafetensors(init)[1].second;
  Tensor m = zeros({V, V}, DType::f32), v = zeros({V, V}, DType::f32);
  TokenData data(kData);
  std::vector<std::string> out = lines(r.out);
  ASSERT_EQ(out.size(), 3u);
  for (int64_t step = 0; step < 3; ++step) {
    auto [idx, targets] = data.batch(step, B, T);
    auto [loss, dw] = bigramLossAndGrad(w, idx, targets);
    EXPECT_EQ(nlohmann::json::parse(out[step])["loss"].get<double>(),
              item(loss));
    auto f = [](double x) { return scalar(x, DType::f32); };
    std::tie(w, m, v) =
        adamw_update(w, dw, m, v, scalar(step + 1, DType::i64), f(1e-3), f(0.9),
                     f(0.999), f(1e-8), f(0.01));
  }
  std::remove(init.c_str());
}

TEST(Driver, DonatesOnlyWhatTheStepReturns) {
  std::string init = writeInit("init_pass.safetensors");
  StepProgram sgd = sgdProgram();
  sgd.args.insert(sgd.args.begin() + 1,
                  spec(Role::Param, "other", DType::f32, {3}));
  sgd.fn = passThroughStep;
  Program program{"bigram", "", {sgd}, 0};
  gOtherSeen = 0;
  RunResult donated =
      runWith({"--data", kData, "--steps", "3", "--init", init}, program);
  ASSERT_EQ(donated.status, 0) << donated.err;
  EXPECT_EQ(gOtherSeen, 3);
  // Donation changes when a tensor is freed, never a value.
  RunResult kept =
      runWith({"--data", kData, "--steps", "3", "--init", init, "--no-donate"},
              program);
  ASSERT_EQ(kept.status, 0) << kept.err;
  std::vector<std::string> a = lines(donated.out), b = lines(kept.out);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(nlohmann::json::parse(a[i])["loss"].get<double>(),
              nlohmann::json::parse(b[i])["loss"].get<double>());
  std::remove(init.c_str());
}

TEST(Driver, SingleProgramAndSgdDefaults) {
  std::string init = writeInit("init_single.safetensors");
  std::string save = tempPath("single_final.safetensors");
  Program program{"bigram", "", {sgdProgram()}, 0};
  RunResult r = runWith(
      {"--data=" + kData, "--steps=1", "--init=" + init, "--save=" + save},
      program);
  ASSERT_EQ(r.status, 0) << r.err;
  // One SGD step with the defaults lr 0.1, weight decay 0.
  Tensor w = readSafetensors(init)[1].second;
  auto [idx, targets] = TokenData(kData).batch(0, B, T);
  Tensor dw = bigramLossAndGrad(w, idx, targets).second;
  Tensor expected =
      sgd_update(w, dw, scalar(0.1, DType::f32), scalar(0, DType::f32));
  EXPECT_EQ(toDoubles(readSafetensors(save)[0].second), toDoubles(expected));
  std::remove(init.c_str());
  std::remove(save.c_str());
}

TEST(Driver, InitWeightsBesideTheExecutable) {
  std::string name =
      "tessera_rt_test_init_" + std::to_string(::getpid()) + ".safetensors";
  std::string path = executableDir() + "/" + name;
  writeSafetensors(path, {{"w", zeros({V, V}, DType::f32)}});
  Program program{"bigram", name, {sgdProgram()}, 0};
  RunResult r = runWith({"--data", kData, "--steps", "1"}, program);
  std::remove(path.c_str());
  ASSERT_EQ(r.status, 0) << r.err;
  // Zero weights: uniform logits, loss ln(V).
  EXPECT_NEAR(nlohmann::json::parse(r.out)["loss"].get<double>(),
              std::log(84.0), 1e-6);
}

TEST(Driver, ErrorsExitWithOne) {
  std::string init = writeInit("init_err.safetensors");
  std::string wrongShape = writeInit("init_shape.safetensors", {V, 3});
  std::string noW = tempPath("init_now.safetensors");
  writeSafetensors(noW, {{"x", zeros({1}, DType::f32)}});
  Program sgdOnly{"bigram", "", {sgdProgram()}, 0};
  Program throwing{"bigram", "", {sgdProgram()}, 0};
  throwing.steps[0].fn = throwingStep;
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--data", kData, "--steps", "1", "--bogus", "3"},
       "error: unknown flag '--bogus'"},
      {{"--data", kData, "--steps"}, "error: missing value for --steps"},
      {{"--data", "--steps", "1"}, "error: missing value for --data"},
      {{"--data", kData, "--steps", "x"}, "error: invalid integer 'x'"},
      {{"--data", kData, "--steps", "1", "--lr", "1e-3x"},
       "error: invalid number '1e-3x' for --lr"},
      {{"--data", kData, "--init", init}, "error: missing --steps"},
      {{"--steps", "1", "--init", init}, "error: missing --data"},
      {{"--data", "/nonexistent/train.bin", "--steps", "1", "--init", init},
       "error: /nonexistent/train.bin: cannot open"},
      {{"--data", kData, "--steps", "1", "--init",
        "/nonexistent/i.safetensors"},
       "error: /nonexistent/i.safetensors: cannot open"},
      {{"--data", kData, "--steps", "1", "--init", noW},
       "parameter 'w' is missing"},
      {{"--data", kData, "--steps", "1", "--init", wrongShape},
       "parameter 'w' has shape 84x3, the program expects 84x84"},
      {{"--data", kData, "--steps", "1", "--init", init, "--optimizer",
        "adamw"},
       "no step function for optimizer 'adamw' (available: sgd)"},
      {{"--data", kData, "--steps", "1", "--init", init, "--optimizer", "lion"},
       "--optimizer must be adamw or sgd"},
      {{"--data", kData, "--steps", "1"}, "error: no initial weights"},
      {{"--data", kData, "--steps", "1", "--init", init, "--log",
        "/nonexistent/log.jsonl"},
       "cannot open the log file"},
      {{"stray"}, "error: unexpected argument 'stray'"},
  };
  for (const auto &c : cases) {
    RunResult r = runWith(c.first, sgdOnly);
    EXPECT_EQ(r.status, 1) << c.second;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.second), std::string::npos)
        << "expected '" << c.second << "' in: " << r.err;
    EXPECT_EQ(r.out, "") << c.second;
  }
  RunResult r =
      runWith({"--data", kData, "--steps", "1", "--init", init}, throwing);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error: step 0: the step exploded"), std::string::npos)
      << r.err;
  for (const std::string &p : {init, wrongShape, noW})
    std::remove(p.c_str());
}

TEST(Driver, HelpPrintsUsage) {
  Program program{"bigram", "", {sgdProgram()}, 0};
  RunResult r = runWith({"--bogus", "--help"}, program);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("usage: run --data FILE --steps K", 0), 0u) << r.out;
  // The program's inputs, with their dtypes and shapes.
  EXPECT_NE(r.out.find("This program's inputs:\n  idx i64 "), std::string::npos)
      << r.out;
  for (const char *flag :
       {"--init", "--save", "--optimizer", "--lr", "--beta1", "--beta2",
        "--eps", "--weight-decay", "--seed", "--log"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
}

TEST(Driver, ParseRunOptions) {
  std::vector<std::string> args = {
      "run",    "--data", "d.bin",        "--steps=12",     "--lr", "2e-4",
      "--seed", "-3",     "--beta2=0.95", "--weight-decay", "0"};
  std::vector<char *> argv;
  for (std::string &s : args)
    argv.push_back(s.data());
  RunOptions o = parseRunOptions(static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(o.data, "d.bin");
  EXPECT_EQ(o.steps, 12);
  EXPECT_EQ(o.lr, 2e-4);
  EXPECT_TRUE(o.lrSet);
  EXPECT_EQ(o.seed, -3);
  EXPECT_EQ(o.beta2, 0.95);
  EXPECT_TRUE(o.weightDecaySet);
  EXPECT_EQ(o.weightDecay, 0);
  EXPECT_EQ(o.optimizer, "");
  EXPECT_FALSE(o.noDonate);
  // --no-donate takes no value: the flag after it is still a flag.
  std::vector<std::string> keep = {"run", "--no-donate", "--steps", "2"};
  std::vector<char *> keepArgv;
  for (std::string &s : keep)
    keepArgv.push_back(s.data());
  RunOptions k =
      parseRunOptions(static_cast<int>(keepArgv.size()), keepArgv.data());
  EXPECT_TRUE(k.noDonate);
  EXPECT_EQ(k.steps, 2);
}

// nanoGPT's get_lr, step by step: warm-up (i+1)/(w+1), cosine to min-lr at
// the decay step, min-lr after; linear and constant decays beside it.
TEST(Driver, LearningRateSchedule) {
  RunOptions o;
  o.lr = 1.0;
  o.steps = 10;
  o.warmupSteps = 2;
  o.lrDecay = "cosine";
  o.lrDecaySteps = 6;
  o.minLr = 0.1;
  EXPECT_EQ(scheduledLr(o, 0), 1.0 / 3.0);
  EXPECT_EQ(scheduledLr(o, 1), 2.0 / 3.0);
  EXPECT_EQ(scheduledLr(o, 2), 1.0);           // decay ratio 0: cos 0
  EXPECT_EQ(scheduledLr(o, 6), 0.1);           // ratio 1: cos pi = -1
  EXPECT_EQ(scheduledLr(o, 7), 0.1);           // after the decay
  EXPECT_NEAR(scheduledLr(o, 4), 0.55, 1e-15); // ratio 1/2: cos pi/2 ~ 0
  o.lrDecay = "linear";
  EXPECT_EQ(scheduledLr(o, 4), 0.1 + 0.5 * 0.9);
  o.lrDecay = "constant";
  EXPECT_EQ(scheduledLr(o, 9), 1.0);
  EXPECT_EQ(scheduledLr(o, 1), 2.0 / 3.0); // the warm-up still applies
}

namespace {
/// Spins until `seconds` have passed on the clock the profile reads.
void busy(double seconds) {
  auto until = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(seconds));
  while (std::chrono::steady_clock::now() < until) {
  }
}
} // namespace

// --profile-ops: an op's time runs from its mark to the next mark or the
// end of the step; a step recorded false (warm-up) is dropped; the median
// is over the recorded steps; ids that no recorded step ran have none. The
// times are lower bounds by construction (each op spins past its length).
TEST(OpProfile, MarksTimeTheOpsOfRecordedSteps) {
  opprofile::start(3);
  opMark(2); // the warm-up runs id 2, which no recorded step runs
  busy(1e-3);
  opprofile::endStep(false);
  for (int s = 0; s < 3; ++s) {
    opMark(0);
    busy(2e-3);
    opMark(1);
    busy(5e-4);
    opprofile::endStep(true);
  }
  opprofile::stop();
  opMark(0); // off: not timed
  std::vector<double> med = opprofile::medians();
  ASSERT_EQ(med.size(), 3u);
  EXPECT_GE(med[0], 2e-3);
  EXPECT_GE(med[1], 5e-4);
  EXPECT_EQ(med[2], -1.0);
}

// The database: one entry per key (ops sharing a key: the mean of their
// medians), added to an existing file whose device, rates and other
// entries stay and whose entry of the same key is replaced.
TEST(OpProfile, WritesAProfileDatabaseIntoAnExistingOne) {
  std::string path = tempPath("profile.json");
  {
    std::ofstream f(path);
    f << R"({"device": "calibrated-x", "entries": [
      {"op": "exp", "dtype": "fp32", "seconds": 1e-7, "seconds_per_flop": 2e-9},
      {"op": "matmul", "dtype": "fp32", "shapes": [[2, 3], [3, 4]], "seconds": 99},
      {"op": "neg", "dtype": "fp32", "shapes": [[5]], "seconds": 3e-7}]})";
  }
  std::vector<OpKey> keys = {{"matmul", "fp32", {{2, 3}, {3, 4}}},
                             {"matmul", "fp32", {{2, 3}, {3, 4}}},
                             {"add", "fp32", {{4}, {}}}};
  opprofile::start(3);
  opMark(0);
  busy(1e-3);
  opMark(1);
  busy(3e-3);
  opprofile::endStep(true);
  opprofile::stop();
  std::vector<double> med = opprofile::medians();
  opprofile::writeDatabase(path, {opprofile::measurements(keys)});
  std::ifstream in(path);
  nlohmann::json db = nlohmann::json::parse(in);
  EXPECT_EQ(db["device"], "calibrated-x");
  ASSERT_EQ(db["entries"].size(), 3u);
  EXPECT_EQ(db["entries"][0]["op"], "exp");
  EXPECT_EQ(db["entries"][0]["seconds_per_flop"], 2e-9);
  EXPECT_EQ(db["entries"][1]["op"], "neg");
  const nlohmann::json &mm = db["entries"][2];
  EXPECT_EQ(mm["op"], "matmul");
  EXPECT_EQ(mm["shapes"], nlohmann::json::parse("[[2, 3], [3, 4]]"));
  EXPECT_EQ(mm["seconds"].get<double>(), (med[0] + med[1]) / 2);
  EXPECT_GE(mm["seconds"].get<double>(), 2e-3);
  // Not a profile database: refused before and when writing.
  {
    std::ofstream f(path);
    f << "[1, 2]";
  }
  EXPECT_THROW(opprofile::checkDatabase(path), Error);
  EXPECT_THROW(
      opprofile::writeDatabase(path, {opprofile::measurements(keys)}), Error);
  std::remove(path.c_str());
  // A new file names no device.
  opprofile::writeDatabase(path, {opprofile::measurements(keys)});
  std::ifstream again(path);
  nlohmann::json fresh = nlohmann::json::parse(again);
  EXPECT_FALSE(fresh.contains("device"));
  EXPECT_EQ(fresh["entries"].size(), 1u);
  std::remove(path.c_str());
}

// Several ranks (--profile-ops on a program of several ranks): each rank's
// measurements leave out the communication ops, whose times include the
// waits for other ranks, and rank 0 writes them merged: a key two ranks
// measured takes the mean over all their ids.
TEST(OpProfile, MergesRanksAndLeavesOutTheCommunication) {
  std::string path = tempPath("profile-ranks.json");
  std::remove(path.c_str());
  std::vector<OpKey> keys = {{"matmul", "fp32", {{2, 3}, {3, 4}}},
                             {"all_reduce", "fp32", {{4}}},
                             {"recv", "fp32", {}},
                             {"send", "fp32", {{4}}}};
  opprofile::start(4);
  for (int64_t id = 0; id < 4; ++id) {
    opMark(id);
    busy(1e-3);
  }
  opprofile::endStep(true);
  opprofile::stop();
  double matmul = opprofile::medians()[0];
  std::string mine = opprofile::measurements(keys);
  nlohmann::json entries = nlohmann::json::parse(mine);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0]["op"], "matmul");
  EXPECT_EQ(entries[0]["count"], 1);
  // Another rank's: the same matmul three times at 3 ms, and a gelu.
  std::string other =
      R"([{"op": "matmul", "dtype": "fp32", "shapes": [[2, 3], [3, 4]],
           "seconds": 0.003, "count": 3},
          {"op": "gelu", "dtype": "fp32", "shapes": [[8]],
           "seconds": 1e-4, "count": 1}])";
  opprofile::writeDatabase(path, {mine, other});
  std::ifstream in(path);
  nlohmann::json db = nlohmann::json::parse(in);
  ASSERT_EQ(db["entries"].size(), 2u);
  EXPECT_EQ(db["entries"][0]["op"], "matmul");
  EXPECT_DOUBLE_EQ(db["entries"][0]["seconds"].get<double>(),
                   (matmul + 3 * 0.003) / 4);
  EXPECT_EQ(db["entries"][1]["op"], "gelu");
  EXPECT_FALSE(db["entries"][0].contains("count"));
  EXPECT_THROW(opprofile::writeDatabase(path, {"not json"}), Error);
  std::remove(path.c_str());
}
