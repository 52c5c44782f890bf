//===- tessera-compile.cpp - the one-shot driver --------------------------===//
//
//   tessera-compile MODEL.onnx -o OUT [--devices 1] [--target cpu|cuda]
//
// A thin driver over the libraries:
//   import (ONNX -> tsr)            OUT/model.mlir, OUT/init.safetensors
//   tessera-train-pipeline          OUT/train.mlir (adamw and sgd steps, and
//     (lib/Pipelines)               one device's grad_step; or per-rank
//                                   functions of the plan)
//   package (lib/Package)           OUT/[prog_K/]program.cpp, memory.json,
//                                   CMakeLists.txt, run
//   cmake + build                   OUT/[prog_K/]program, wrapped by OUT/run
// Every stage can also be run alone with tessera-translate / tessera-opt
// (tessera-opt --tessera-train-pipeline="..." reproduces OUT/train.mlir and,
// with rank=R, rank R's program.mlir of --emit-rank-ir).
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/InitAll.h"
#include "tessera/Package/Package.h"
#include "tessera/Pipelines/TrainPipeline.h"
#include "tessera/Planner/AutoPlanSearch.h"
#include "tessera/Support/InputFile.h"
#include "tessera/Support/InstallLayout.h"
#include "tessera/Target/ONNX/ImportONNX.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <sstream>

using namespace mlir;
using namespace tessera;
namespace cl = llvm::cl;

static cl::OptionCategory category("tessera-compile options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::Required, cl::cat(category));
static cl::opt<std::string> outDir("o", cl::desc("Output directory"),
                                   cl::value_desc("OUT"), cl::Required,
                                   cl::cat(category));
static cl::opt<int> devices("devices",
                            cl::desc("Number of devices (1 to 4096)"),
                            cl::init(1), cl::cat(category));
static cl::opt<std::string>
    target("target",
           cl::desc("cpu (OpenBLAS + MPI) or cuda (cuBLASLt + NCCL; the "
                    "same emitted C++, linked with runtime/cuda)"),
           cl::init("cpu"), cl::cat(category));
static cl::opt<std::string> cudaArch(
    "cuda-arch",
    cl::desc("Only with --target cuda: the GPU architecture the runtime's "
             "kernels are compiled for (CMAKE_CUDA_ARCHITECTURES, e.g. 90a, "
             "80;90, native)"),
    cl::init("90a"), cl::cat(category));
static cl::opt<std::string>
    lossOutput("loss-output",
               cl::desc("Graph output that is the loss (default: the only "
                        "rank-0 float output)"),
               cl::cat(category));
static cl::opt<std::string> freeze(
    "freeze",
    cl::desc("Keep the initializers whose names match this regular "
             "expression constant (not trained), whatever the model says"),
    cl::value_desc("REGEX"), cl::cat(category));
static cl::opt<std::string> train(
    "train",
    cl::desc("Train the initializers whose names match this regular "
             "expression, whatever the model says (by default the model's "
             "parameter list decides, else masks are constants)"),
    cl::value_desc("REGEX"), cl::cat(category));
static cl::opt<double>
    clipNorm("clip-norm",
             cl::desc("Clip gradients to this global norm by default (the "
                      "run's --clip-norm overrides it): a finite number "
                      ">= 0 (0: off)"),
             cl::init(0.0), cl::cat(category));
static cl::opt<std::string>
    plan("plan",
         cl::desc("Parallel plan: dp, tp, pp, a product like dp2xtp2xpp2, "
                  "auto, or a plan file (.json); see docs/plans.md. Only "
                  "with --devices > 1 or --micro-batches > 1"),
         cl::init("dp"), cl::cat(category));
static cl::opt<int> microBatches(
    "micro-batches",
    cl::desc("Micro-batches per step: pipeline micro-batches, or gradient "
             "accumulation on one device"),
    cl::init(1), cl::cat(category));
static cl::opt<bool> zero1("zero1",
                           cl::desc("Shard optimizer state and updates over "
                                    "the data-parallel ranks (ZeRO-1); the "
                                    "plan must have dp > 1"),
                           cl::cat(category));
static cl::opt<bool> zero2(
    "zero2",
    cl::desc("ZeRO-1, and each gradient reduce-scattered into shards over "
             "the data-parallel ranks instead of all-reduced whole (ZeRO-2); "
             "the plan must have dp > 1"),
    cl::cat(category));
static cl::opt<bool> zero3(
    "zero3",
    cl::desc("ZeRO-1, and each parameter kept sharded over the data-parallel "
             "ranks, all-gathered before its forward and backward uses "
             "(ZeRO-3 / FSDP); the plan must have dp > 1"),
    cl::cat(category));
static cl::opt<std::string> reduceEarly(
    "reduce-early",
    cl::desc("When gradients are reduced (micro-batch sums, ZeRO-2's "
             "reduce-scatters): auto (the order with the lower predicted "
             "peak memory), always (as soon as each is complete) or never "
             "(right before its first use); the results are the same bit for "
             "bit. Only with --devices > 1 or --micro-batches > 1"),
    cl::init("auto"), cl::cat(category));
static cl::opt<bool>
    raise("raise",
          cl::desc("Raise imported subgraphs into the ops of the linked "
                   "extension dialects, e.g. x * sigmoid(x) into llm.silu "
                   "(tsr-raise; =false: train the imported ops as they "
                   "are)"),
          cl::init(true), cl::cat(category));
static cl::opt<std::string> precision(
    "precision",
    cl::desc("fp32, or bf16: the step keeps bf16 weights, activations and "
             "gradients and computes every op in f32; master weights, "
             "optimizer state, loss and gradient norm stay f32 "
             "(tsr-mixed-precision, docs/training.md)"),
    cl::init("fp32"), cl::cat(category));
static cl::opt<std::string> schedule(
    "schedule",
    cl::desc("Pipeline schedule of the micro-batches: 1f1b, gpipe, "
             "interleaved, zb-h1, zb-h2, zb-v or search (--plan auto: 1f1b, "
             "gpipe, zb-h1, interleaved or zb-v). Only for a plan with "
             "pipeline stages or several "
             "micro-batches (interleaved, zb-v: with pipeline stages)"),
    cl::init("1f1b"), cl::cat(category));
static cl::opt<std::string> deviceSpec(
    "device-spec",
    cl::desc("The device: h100-sxm, a100-sxm, cpu or a spec file (JSON, "
             "docs/planner.md). --plan auto plans for it; the programs log "
             "the model FLOPs utilisation against its peak (fp32 on cpu, "
             "tf32 on cuda). Default: cpu, or h100-sxm with --target cuda"),
    cl::init("cpu"), cl::cat(category));
static cl::opt<std::string> profileDb(
    "profile-db",
    cl::desc("A profile database of measured op times or rates (JSON, "
             "docs/planner.md; tessera-calibrate --profile-db writes one) "
             "that replace the roofline estimates of the ops they match, in "
             "--plan auto's search and in every plan's predicted step"),
    cl::init(""), cl::cat(category));
static cl::opt<double>
    memoryGiB("memory-gib",
              cl::desc("Only with --plan auto: memory per device in GiB, a "
                       "finite number > 0"),
              cl::init(16.0), cl::cat(category));
static cl::opt<bool> shareRanks(
    "share-ranks",
    cl::desc("Ranks whose programs differ only in rank numbers (slice "
             "offsets, groups, peers) share one program, compiled once "
             "(dist-share-rank-programs; default on, =false: one program "
             "per rank)"),
    cl::init(true), cl::cat(category));
static cl::opt<bool> staticMemory(
    "static-memory",
    cl::desc("Place each step's activations, gradients and messages at "
             "offsets of one arena per rank that the program allocates once "
             "(dist-static-memory; default on, =false: every tensor from the "
             "runtime's caching allocator)"),
    cl::init(true), cl::cat(category));
static cl::opt<bool> profileOps(
    "profile-ops",
    cl::desc("Emit programs that can time every op where it runs: their "
             "`run --profile-ops FILE` writes each op's median time into the "
             "profile database FILE, which --profile-db then reads (with "
             "several ranks, every rank's ops but the communication; "
             "docs/planner.md)"),
    cl::cat(category));
static cl::list<std::string> dialectPlugins(
    "load-dialect-plugin",
    cl::desc("Load an extension dialect built out of tree (a shared library "
             "with MLIR's dialect plugin entry point, docs/extending.md); "
             "may be repeated"),
    cl::value_desc("LIBRARY"), cl::cat(category));
static cl::opt<bool> noBuild("no-build",
                             cl::desc("Emit sources but do not build them"),
                             cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("Print only errors"),
                           cl::cat(category));
static cl::opt<bool>
    emitRankIR("emit-rank-ir",
               cl::desc("Also write the IR each program is emitted from "
                        "(OUT/[prog_K/]program.mlir)"),
               cl::cat(category));

namespace {

int fail(const Twine &message) {
  llvm::errs() << "tessera-compile: error: " << message << "\n";
  return 1;
}

void progress(const Twine &message) {
  if (!quiet)
    llvm::errs() << "tessera-compile: " << message << "\n";
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "Tessera: compile a single-device ONNX model "
                              "into a training program\n\n"
                              "An option given outside the mode it applies to "
                              "(\"Only with ...\" below) is an error, not "
                              "ignored.\n");
  if (target != "cpu" && target != "cuda")
    return fail("--target " + target + " is unknown (use cpu or cuda)");
  if (devices < 1 || devices > support::kMaxDevices)
    return fail("--devices must be in [1, " + Twine(support::kMaxDevices) +
                "], got " + Twine(int(devices)));
  if (microBatches < 1)
    return fail("--micro-batches must be >= 1, got " +
                Twine(int(microBatches)));
  // The norm is computed in f32: NaN, negatives and values beyond f32 would
  // silently turn clipping off.
  if (!std::isfinite(static_cast<float>(clipNorm)) || clipNorm < 0) {
    std::ostringstream value;
    value << clipNorm;
    return fail("--clip-norm must be a finite number >= 0 (0: off), got " +
                value.str());
  }
  // A plan file plans one device too (recomputation, co-shard); a built-in
  // policy there would have nothing to do.
  bool distributed = devices > 1 || microBatches > 1 ||
                     StringRef(plan).ends_with(".json");
  // Options that only some modes read are errors elsewhere, not silently
  // ignored (--help says which mode each needs).
  auto given = [](const cl::Option &o) { return o.getNumOccurrences() > 0; };
  if (given(cudaArch) && target != "cuda")
    return fail("--cuda-arch applies only with --target cuda");
  // It is written into the emitted CMakeLists.txt.
  if (cudaArch.empty() || llvm::any_of(std::string(cudaArch), [](char c) {
        return !llvm::isAlnum(c) && c != '-' && c != '_' && c != ';';
      }))
    return fail("--cuda-arch expects CMAKE_CUDA_ARCHITECTURES (e.g. 90a, "
                "80;90, native), got '" +
                cudaArch + "'");
  if (!distributed)
    for (const cl::Option *o : {static_cast<const cl::Option *>(&plan),
                                static_cast<const cl::Option *>(&schedule),
                                static_cast<const cl::Option *>(&reduceEarly)})
      if (given(*o))
        return fail("--" + o->ArgStr +
                    " applies only with --devices > 1 or --micro-batches > 1" +
                    (o == &plan ? " or a plan file (one device with one "
                                  "micro-batch has no built-in plan)"
                                : " (one device with one micro-batch has no "
                                  "plan)"));
  if (reduceEarly != "auto" && reduceEarly != "always" &&
      reduceEarly != "never")
    return fail("--reduce-early expects auto, always or never, got '" +
                reduceEarly + "'");
  for (const cl::opt<bool> *o : {&zero1, &zero2, &zero3})
    if (*o && devices == 1)
      return fail("--" + o->ArgStr +
                  " shards over data-parallel ranks: it needs --devices > 1");
  bool autoPlan = plan == "auto";
  // A plan file may name the auto policy: dist-plan checks the auto-only
  // options once it has read the file.
  bool planFile = StringRef(plan).ends_with(".json");
  if (given(memoryGiB) && !autoPlan && !planFile)
    return fail("--memory-gib applies only with --plan auto");
  if (given(profileDb) && devices == 1)
    return fail("--profile-db times the plans of several devices: it needs "
                "--devices > 1");
  // The model is mapped whole: refuse directories, devices and FIFOs, and
  // anything over protobuf's 2 GiB limit, before reading.
  std::string modelError = support::checkInputFile(inputFile, "ONNX model",
                                                   support::kMaxModelFileBytes);
  if (!modelError.empty())
    return fail(modelError);

  if (std::error_code ec = llvm::sys::fs::create_directories(outDir))
    return fail("cannot create " + outDir + ": " + ec.message());
  SmallString<256> outAbs(outDir);
  llvm::sys::fs::make_absolute(outAbs);
  auto path = [&](StringRef name) {
    SmallString<256> p(outAbs);
    llvm::sys::path::append(p, name);
    return std::string(p);
  };

  DialectRegistry registry;
  registerAllDialects(registry);
  // Out-of-tree extensions add their dialects and what they attach to them
  // (raising patterns, lowering, runtime library) to the registry.
  for (const std::string &library : dialectPlugins) {
    llvm::Expected<DialectPlugin> plugin = DialectPlugin::load(library);
    if (!plugin)
      return fail("cannot load dialect plugin '" + library +
                  "': " + llvm::toString(plugin.takeError()));
    plugin->registerDialectRegistryCallbacks(registry);
  }
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  package::PackageOptions out;
  out.outDir = std::string(outAbs);
  out.modelName = llvm::sys::path::filename(inputFile).str();
  out.target = target;
  out.cudaArch = cudaArch;
  // The device the utilisation is measured against: fp32 on the CPU
  // backend, tf32 for the CUDA runtime's GEMMs.
  std::string device = given(deviceSpec) || target == "cpu"
                           ? std::string(deviceSpec)
                           : std::string("h100");
  std::string specError;
  std::optional<double> peak = planner::autoplan::devicePeakFlops(
      device, target == "cuda" ? "tf32" : "fp32", specError);
  if (!peak)
    return fail("--device-spec: " + specError);
  out.peakFlopsPerRank = *peak;
  // The runtime beside an installed tool, else the one of its build tree.
  out.runtimeIncludeDir =
      support::installedOr("include", TESSERA_RUNTIME_INCLUDE_DIR);
  out.runtimeSourceDir =
      support::installedOr("share/tessera/runtime", TESSERA_RUNTIME_SOURCE_DIR);
  out.runtimeLibrary =
      support::installedOr("lib/libTesseraRuntime.a", TESSERA_RUNTIME_LIBRARY);
  out.openblasLibrary = TESSERA_OPENBLAS_LIBRARY;
  out.runtimeLinkOptions = TESSERA_RUNTIME_LINK_OPTIONS;
  out.emitRankIR = emitRankIR;
  out.staticMemory = staticMemory;
  out.profileOps = profileOps;
  out.progress = quiet ? nullptr : &llvm::errs();

  // Import.
  auto buffer = llvm::MemoryBuffer::getFile(inputFile);
  if (!buffer)
    return fail("cannot read ONNX model '" + inputFile +
                "': " + buffer.getError().message());
  onnx_import::ImportOptions options;
  options.lossOutput = lossOutput;
  options.weightsOut = path("init.safetensors");
  options.freeze = freeze;
  options.train = train;
  options.report = [](const std::string &line, bool) { progress(line); };
  OwningOpRef<ModuleOp> module = onnx_import::importONNX(
      (*buffer)->getBuffer(), inputFile, &context, options);
  if (!module)
    return 1; // the importer reported the error
  // With locations: they name the ONNX nodes, which plans match and
  // diagnostics cite (tessera-opt OUT/model.mlir reproduces the pipeline).
  std::string text;
  llvm::raw_string_ostream textStream(text);
  module->print(textStream, OpPrintingFlags().enableDebugInfo());
  textStream << "\n";
  if (failed(package::writeOutFile(out, "model.mlir", text)))
    return 1;
  progress("imported " + inputFile + " -> " + path("model.mlir"));

  // The training steps, and with a plan the per-rank functions.
  TrainPipelineOptions pipeline;
  pipeline.devices = devices;
  pipeline.microBatches = microBatches;
  pipeline.fixMicroBatches = given(microBatches);
  pipeline.plan = plan;
  pipeline.schedule = schedule;
  pipeline.requirePipeline = given(schedule);
  pipeline.zero1 = zero1;
  pipeline.zero2 = zero2;
  pipeline.zero3 = zero3;
  pipeline.reduceEarly = reduceEarly;
  pipeline.clipNorm = clipNorm;
  pipeline.shareRanks = shareRanks;
  // An extension dialect without kernels for the target is refused at
  // packaging, naming the dialect (RuntimeLibraryInterface); --raise=false
  // then trains the imported core ops instead.
  pipeline.raise = raise;
  pipeline.precision = precision;
  // Every other plan gets the planner's prediction in the plan report.
  // (A plan file always: its policy may be auto, which needs the spec.)
  if (!autoPlan && distributed && (!quiet || planFile)) {
    pipeline.predict = true;
    pipeline.deviceSpec = target == "cuda" && !given(deviceSpec)
                              ? std::string("h100")
                              : std::string(deviceSpec);
    if (given(profileDb))
      pipeline.profileDb = profileDb;
  }
  if (autoPlan || planFile) {
    if (autoPlan)
      pipeline.deviceSpec = deviceSpec;
    // Only when given: dist-plan rejects them for a plan file whose policy
    // is not auto.
    if (given(profileDb))
      pipeline.profileDb = profileDb;
    if (given(memoryGiB))
      pipeline.memoryGiB = memoryGiB;
    pipeline.report = !quiet;
  }
  PassManager pm(&context);
  std::string pipelineError;
  if (failed(buildTrainPipeline(
          pm, pipeline, [&](const Twine &why) { pipelineError = why.str(); })))
    return fail(pipelineError);
  if (failed(pm.run(*module)))
    return 1;
  int64_t ranks = package::worldSize(*module);
  if (distributed && !quiet)
    package::printPlanReport(*module, plan, llvm::errs());
  text.clear();
  module->print(textStream);
  textStream << "\n"; // as tessera-opt prints it
  if (failed(package::writeOutFile(out, "train.mlir", text)))
    return 1;
  progress("training steps (adamw, sgd) -> " + path("train.mlir"));

  // The predicted peak tensor memory of each rank's step (the tests check
  // it against the runtime's measured peaks), then one program per rank.
  std::pair<int64_t, int64_t> largest{0, 0};
  if (failed(package::writeMemoryJson(*module, out, &largest)))
    return 1;
  // The auto planner chose the plan by its own memory model, which does not
  // count every buffer the program holds; the replayed peak is the one the
  // runtime measures.
  if (given(memoryGiB) && largest.first > memoryGiB * double(1ull << 30)) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", double(memoryGiB));
    llvm::errs() << llvm::formatv(
        "tessera-compile: warning: rank {0}'s predicted peak tensor memory "
        "{1:F2} MiB exceeds --memory-gib {2} ({3:F2} MiB); the auto "
        "planner's memory model, which chose the plan, counts less than the "
        "program holds (docs/plans.md)\n",
        largest.second, largest.first / (1024.0 * 1024.0), limit,
        memoryGiB * 1024.0);
  }
  FailureOr<package::EmittedPrograms> programs =
      package::emitPrograms(*module, out);
  if (failed(programs) || failed(package::writeBuildFiles(*programs, out)))
    return 1;
  progress("emitted " + std::to_string(programs->dirs.size()) +
           " program(s) for " + std::to_string(ranks) + " rank(s) in " +
           std::string(outAbs));
  if (noBuild)
    return 0;
  return failed(package::build(out)) ? 1 : 0;
}
