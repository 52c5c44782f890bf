//===- Driver.cpp - runMain: flags, weights, data, the step loop ----------===//

#include "tessera/runtime/Driver.h"

#include "tessera/runtime/Files.h"
#include "tessera/runtime/Ops.h"

#include "Logging.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <unistd.h>

namespace tessera {
namespace rt {

namespace {

const char *const kValueFlags[] = {
    "--data", "--steps", "--init",      "--save", "--optimizer",
    "--lr",   "--beta1", "--beta2",     "--eps",  "--weight-decay",
    "--seed", "--log",   "--dump-grads"};

double parseDouble(const std::string &flag, const std::string &value) {
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    throw Error("invalid number '" + value + "' for " + flag);
  return v;
}

int64_t parseInt(const std::string &flag, const std::string &value) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE)
    throw Error("invalid integer '" + value + "' for " + flag);
  return v;
}

std::string joinPath(const std::string &dir, const std::string &file) {
  if (file.empty() || file[0] == '/' || dir.empty())
    return file;
  return dir + "/" + file;
}

const ValueSpec *findSpec(const std::vector<ValueSpec> &specs, Role role,
                          const std::string &name) {
  for (const ValueSpec &spec : specs)
    if (spec.role == role && spec.name == name)
      return &spec;
  return nullptr;
}

const StepProgram &selectStep(const Program &program,
                              const std::string &optimizer) {
  if (program.steps.empty())
    throw Error("the program has no step function");
  if (optimizer.empty() && program.steps.size() == 1)
    return program.steps.front();
  std::string wanted = optimizer.empty() ? "adamw" : optimizer;
  std::string available;
  for (const StepProgram &step : program.steps) {
    if (step.optimizer == wanted)
      return step;
    available += (available.empty() ? "" : ", ") + step.optimizer;
  }
  throw Error("the program has no step function for optimizer '" + wanted +
              "' (available: " + available + ")");
}

/// The Param tensors from the weights file, checked against the specs.
std::map<std::string, Tensor> loadParams(const StepProgram &step,
                                         const std::string &path) {
  std::map<std::string, Tensor> file;
  for (auto &entry : readSafetensors(path))
    file[entry.first] = entry.second;
  std::map<std::string, Tensor> params;
  for (const ValueSpec &spec : step.args) {
    if (spec.role != Role::Param)
      continue;
    auto it = file.find(spec.name);
    if (it == file.end())
      throw Error(path + ": parameter '" + spec.name + "' is missing");
    const Tensor &t = it->second;
    if (t.shape() != spec.shape)
      throw Error(path + ": parameter '" + spec.name + "' has shape " +
                  shapeToString(t.shape()) + ", the program expects " +
                  shapeToString(spec.shape));
    if (t.dtype() != spec.dtype && !(isFloat(t.dtype()) && isFloat(spec.dtype)))
      throw Error(path + ": parameter '" + spec.name + "' has dtype " +
                  dtypeName(t.dtype()) + ", the program expects " +
                  dtypeName(spec.dtype));
    params[spec.name] = cast(t, spec.dtype);
  }
  return params;
}

/// Runs the program's gradient step on the first batch and writes every
/// parameter's gradient (and the loss, as metadata) to `path`.
void dumpGradients(const Program &program,
                   const std::map<std::string, Tensor> &params,
                   const TokenData *data, int64_t B, int64_t T,
                   const std::string &path) {
  const StepProgram &g = program.gradient;
  if (!g.fn)
    throw Error("--dump-grads: this program has no gradient step");
  std::pair<Tensor, Tensor> batch;
  if (data)
    batch = data->batch(0, B, T);
  std::vector<Tensor> args, results;
  for (const ValueSpec &spec : g.args) {
    if (spec.role == Role::Param) {
      auto it = params.find(spec.name);
      if (it == params.end())
        throw Error("--dump-grads: no parameter '" + spec.name + "'");
      args.push_back(it->second);
    } else if (spec.role == Role::Input) {
      args.push_back(
          cast(spec.name == "idx" ? batch.first : batch.second, spec.dtype));
    } else {
      throw Error("--dump-grads: unexpected argument '" + spec.name +
                  "' of the gradient step");
    }
  }
  results.assign(g.results.size(), Tensor());
  g.fn(args, results);
  std::vector<std::pair<std::string, Tensor>> named;
  std::string loss;
  for (size_t r = 0; r < results.size(); ++r) {
    if (g.results[r].role == Role::Grad)
      named.push_back({g.results[r].name, results[r]});
    else if (g.results[r].role == Role::Loss)
      loss = std::to_string(item(results[r]));
  }
  writeSafetensors(path, named,
                   {{"format", "pt"},
                    {"model", program.model},
                    {"what", "gradients on the first batch"},
                    {"loss", loss}});
}

double hyperValue(const std::string &name, const RunOptions &o) {
  if (name == "lr")
    return o.lr;
  if (name == "beta1")
    return o.beta1;
  if (name == "beta2")
    return o.beta2;
  if (name == "eps")
    return o.eps;
  if (name == "weight_decay")
    return o.weightDecay;
  throw Error("the program asks for an unknown hyperparameter '" + name + "'");
}

int run(int argc, char **argv, const Program &program) {
  RunOptions o = parseRunOptions(argc, argv);
  if (o.help) {
    std::cout << usage(argc > 0 ? argv[0] : "run");
    return 0;
  }
  if (o.steps < 0)
    throw Error("missing --steps (see --help)");
  const StepProgram &step = selectStep(program, o.optimizer);
  if (!step.fn)
    throw Error("the step function for '" + step.optimizer + "' is null");
  bool sgd = step.optimizer == "sgd";
  if (!o.lrSet)
    o.lr = sgd ? 0.1 : 1e-3;
  if (!o.weightDecaySet)
    o.weightDecay = sgd ? 0.0 : 0.01;
  setBaseSeed(o.seed);
  // Several ranks may share a machine: one BLAS thread each, unless the
  // user chose otherwise through OpenBLAS's own variable.
  if (!std::getenv("OPENBLAS_NUM_THREADS"))
    setBlasThreads(1);

  // Data first: its errors are the cheapest to report.
  const ValueSpec *idxSpec = findSpec(step.args, Role::Input, "idx");
  const ValueSpec *targetSpec = findSpec(step.args, Role::Input, "targets");
  const ValueSpec *shapeSpec = idxSpec ? idxSpec : targetSpec;
  std::unique_ptr<TokenData> data;
  int64_t B = 0, T = 0;
  if (shapeSpec) {
    if (o.data.empty())
      throw Error("missing --data FILE.bin (see --help)");
    if (shapeSpec->shape.size() != 2)
      throw Error("input '" + shapeSpec->name + "' must be B x T, got " +
                  shapeToString(shapeSpec->shape));
    B = shapeSpec->shape[0];
    T = shapeSpec->shape[1];
    data = std::make_unique<TokenData>(o.data);
    data->batch(0, B, T); // fail now if the file is too short
  }
  for (const ValueSpec &spec : step.args)
    if (spec.role == Role::Input && spec.name != "idx" &&
        spec.name != "targets")
      throw Error("the program asks for an unknown input '" + spec.name + "'");

  std::string initPath =
      !o.init.empty() ? o.init : joinPath(executableDir(), program.initWeights);
  if (initPath.empty())
    throw Error("no initial weights: pass --init FILE.safetensors");
  std::map<std::string, Tensor> params = loadParams(step, initPath);
  std::map<std::string, Tensor> states;
  std::map<std::string, Tensor> hypers;
  for (const ValueSpec &spec : step.args) {
    if (spec.role == Role::State)
      states[spec.name] = zeros(spec.shape, spec.dtype);
    else if (spec.role == Role::Hyper)
      hypers[spec.name] =
          full(spec.shape, spec.dtype, hyperValue(spec.name, o));
    else if (spec.role == Role::Loss)
      throw Error("a Loss cannot be an argument of the step function");
  }
  if (!o.dumpGrads.empty())
    dumpGradients(program, params, data.get(), B, T, o.dumpGrads);
  StepLogger logger(o.log);

  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  std::vector<Tensor> args, results;
  for (int64_t i = 0; i < o.steps; ++i) {
    Clock::time_point stepStart = Clock::now();
    std::pair<Tensor, Tensor> batch;
    if (data)
      batch = data->batch(i, B, T);
    args.clear();
    for (const ValueSpec &spec : step.args) {
      switch (spec.role) {
      case Role::Param:
        args.push_back(params.at(spec.name));
        break;
      case Role::State:
        args.push_back(states.at(spec.name));
        break;
      case Role::Input:
        args.push_back(
            cast(spec.name == "idx" ? batch.first : batch.second, spec.dtype));
        break;
      case Role::Hyper:
        args.push_back(hypers.at(spec.name));
        break;
      case Role::Step:
        args.push_back(
            full(spec.shape, spec.dtype, static_cast<double>(i + 1)));
        break;
      case Role::Loss:
      case Role::Grad:
        break;
      }
    }
    results.assign(step.results.size(), Tensor());
    step.fn(args, results);
    args.clear(); // drop the old parameters before the next step
    if (results.size() != step.results.size())
      throw Error("the step function returned " +
                  std::to_string(results.size()) + " results, expected " +
                  std::to_string(step.results.size()));
    StepMetrics m;
    for (size_t r = 0; r < results.size(); ++r) {
      const ValueSpec &spec = step.results[r];
      if (!results[r].defined())
        throw Error("the step function left result " + std::to_string(r) +
                    " ('" + spec.name + "') undefined");
      if (spec.role == Role::Loss) {
        m.loss = item(results[r]);
      } else if (spec.role == Role::Param || spec.role == Role::State) {
        auto &table = spec.role == Role::Param ? params : states;
        auto it = table.find(spec.name);
        if (it == table.end())
          throw Error("the step function returns '" + spec.name +
                      "', which is not one of its arguments");
        if (results[r].shape() != it->second.shape())
          throw Error("the step function returns '" + spec.name +
                      "' of shape " + shapeToString(results[r].shape()) +
                      ", expected " + shapeToString(it->second.shape()));
        it->second = results[r];
      }
    }
    results.clear();
    Clock::time_point now = Clock::now();
    double seconds = std::chrono::duration<double>(now - stepStart).count();
    m.step = i;
    m.totalSteps = o.steps;
    m.tokensPerSecond = seconds > 0 ? static_cast<double>(B * T) / seconds : 0;
    m.flopsPerSecond = seconds > 0 ? program.flopsPerStep / seconds : 0;
    m.elapsedSeconds = std::chrono::duration<double>(now - start).count();
    m.peakBytes = peakBytes();
    logger.log(m);
  }

  if (!o.save.empty()) {
    std::vector<std::pair<std::string, Tensor>> named;
    for (const ValueSpec &spec : step.args)
      if (spec.role == Role::Param)
        named.push_back({spec.name, params.at(spec.name)});
    writeSafetensors(o.save, named,
                     {{"format", "pt"},
                      {"model", program.model},
                      {"what", "parameters after " + std::to_string(o.steps) +
                                   " " + step.optimizer + " steps"}});
  }
  return 0;
}

} // namespace

std::string usage(const std::string &argv0) {
  return "usage: " + argv0 +
         " --data FILE.bin --steps K [options]\n"
         "\n"
         "Trains the compiled model for K steps on nanoGPT token data.\n"
         "\n"
         "  --data FILE.bin        uint16 little-endian token ids\n"
         "  --steps K              number of optimizer steps\n"
         "  --init FILE            initial weights (safetensors; default: the\n"
         "                         program's weights beside the executable)\n"
         "  --save FILE            write the final parameters (safetensors)\n"
         "  --optimizer NAME       adamw (default) or sgd\n"
         "  --lr X                 learning rate (1e-3 adamw, 0.1 sgd)\n"
         "  --beta1 X, --beta2 X   AdamW betas (0.9, 0.999)\n"
         "  --eps X                AdamW epsilon (1e-8)\n"
         "  --weight-decay X       weight decay (0.01 adamw, 0 sgd)\n"
         "  --seed S               base seed of dropout masks (0)\n"
         "  --log FILE.jsonl       also write the per-step JSON lines there\n"
         "  --dump-grads FILE      first write the loss's gradients on the\n"
         "                         first batch (safetensors), then train\n"
         "  --help                 this text\n"
         "\n"
         "Each step prints a JSON line to stdout (step, loss, tokens_per_s,\n"
         "elapsed_s, peak_bytes) and a progress line to stderr.\n";
}

RunOptions parseRunOptions(int argc, char **argv) {
  RunOptions o;
  // --help wins over any other (possibly wrong) flag.
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      o.help = true;
      return o;
    }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string flag = arg, value;
    bool inlineValue = false;
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inlineValue = true;
    }
    bool known = false;
    for (const char *f : kValueFlags)
      known = known || flag == f;
    if (!known)
      throw Error((arg.rfind("-", 0) == 0 ? "unknown flag '"
                                          : "unexpected argument '") +
                  arg + "' (see --help)");
    if (!inlineValue) {
      // A following flag is not a value: "--data --steps 3" misses a file.
      if (i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0)
        throw Error("missing value for " + flag);
      value = argv[++i];
    }
    if (flag == "--data")
      o.data = value;
    else if (flag == "--steps") {
      o.steps = parseInt(flag, value);
      if (o.steps < 0)
        throw Error("--steps must be >= 0, got " + value);
    } else if (flag == "--init")
      o.init = value;
    else if (flag == "--save")
      o.save = value;
    else if (flag == "--log")
      o.log = value;
    else if (flag == "--dump-grads")
      o.dumpGrads = value;
    else if (flag == "--optimizer") {
      if (value != "adamw" && value != "sgd")
        throw Error("--optimizer must be adamw or sgd, got '" + value + "'");
      o.optimizer = value;
    } else if (flag == "--lr") {
      o.lr = parseDouble(flag, value);
      o.lrSet = true;
    } else if (flag == "--beta1")
      o.beta1 = parseDouble(flag, value);
    else if (flag == "--beta2")
      o.beta2 = parseDouble(flag, value);
    else if (flag == "--eps")
      o.eps = parseDouble(flag, value);
    else if (flag == "--weight-decay") {
      o.weightDecay = parseDouble(flag, value);
      o.weightDecaySet = true;
    } else if (flag == "--seed")
      o.seed = parseInt(flag, value);
  }
  return o;
}

std::string executableDir() {
  std::string buf(4096, '\0');
  ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0)
    return ".";
  buf.resize(n);
  size_t slash = buf.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : buf.substr(0, slash);
}

int runMain(int argc, char **argv, const Program &program) {
  try {
    return run(argc, argv, program);
  } catch (const std::exception &e) {
    std::cerr << "error: " << e.what() << std::endl;
  } catch (...) {
    std::cerr << "error: unknown exception" << std::endl;
  }
  return 1;
}

} // namespace rt
} // namespace tessera
