//===- tessera-compile.cpp - the one-shot driver --------------------------===//
//
//   tessera-compile MODEL.onnx -o OUT [--devices 1] [--target cpu|cuda]
//
// Runs the standard pipeline and builds the program:
//   import (ONNX -> tsr)            OUT/model.mlir, OUT/init.safetensors
//   tsr-autodiff, tsr-optimizer     OUT/train.mlir (adamw and sgd steps,
//                                   and the gradient step grad_step)
//   inline, canonicalize, cse
//   convert-tsr-to-emitc            OUT/program.cpp
//   cmake + build                   OUT/program, wrapped by OUT/run
// Every stage can also be run alone with tessera-translate / tessera-opt.
//
//===----------------------------------------------------------------------===//

#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/Dist/IR/DistAttrs.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Dist/Transforms/MemoryPrediction.h"
#include "tessera/Dialect/Dist/Transforms/Passes.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"
#include "tessera/Support/InputFile.h"
#include "tessera/Target/ONNX/ImportONNX.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/Cpp/CppEmitter.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <sstream>

using namespace mlir;
using namespace tessera;
using Dist = tessera::dist::DistDialect;
using Tsr = tessera::tsr::TsrDialect;
namespace cl = llvm::cl;

static cl::OptionCategory category("tessera-compile options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::Required, cl::cat(category));
static cl::opt<std::string> outDir("o", cl::desc("Output directory"),
                                   cl::value_desc("OUT"), cl::Required,
                                   cl::cat(category));
static cl::opt<int> devices("devices", cl::desc("Number of devices (>= 1)"),
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
static cl::opt<double>
    clipNorm("clip-norm",
             cl::desc("Clip gradients to this global norm: a finite number "
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
static cl::opt<std::string> schedule(
    "schedule",
    cl::desc("Pipeline schedule of the micro-batches: 1f1b, gpipe, "
             "interleaved, zb-h1, zb-h2, zb-v or search (--plan auto: 1f1b "
             "or gpipe). Only for a plan with pipeline stages or several "
             "micro-batches (interleaved, zb-v: with pipeline stages)"),
    cl::init("1f1b"), cl::cat(category));
static cl::opt<std::string> deviceSpec(
    "device-spec",
    cl::desc("Only with --plan auto: the device, h100, a100, cpu or a spec "
             "file (JSON, docs/planner.md)"),
    cl::init("cpu"), cl::cat(category));
static cl::opt<double>
    memoryGiB("memory-gib",
              cl::desc("Only with --plan auto: memory per device in GiB, a "
                       "finite number > 0"),
              cl::init(16.0), cl::cat(category));
static cl::opt<bool> noBuild("no-build",
                             cl::desc("Emit sources but do not build them"),
                             cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("Print only errors"),
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

LogicalResult writeFile(StringRef path,
                        llvm::function_ref<void(raw_ostream &)> fill) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    llvm::errs() << "tessera-compile: error: cannot write " << path << ": "
                 << ec.message() << "\n";
    return failure();
  }
  fill(os);
  return success();
}

/// Runs a program, echoing its output only when it fails.
LogicalResult run(StringRef program, ArrayRef<StringRef> args, StringRef log) {
  auto path = llvm::sys::findProgramByName(program);
  if (!path) {
    llvm::errs() << "tessera-compile: error: '" << program
                 << "' not found in PATH\n";
    return failure();
  }
  SmallVector<StringRef> argv{*path};
  llvm::append_range(argv, args);
  std::optional<StringRef> redirects[] = {std::nullopt, log, log};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*path, argv, std::nullopt, redirects, 0, 0,
                                     &message);
  if (rc != 0) {
    llvm::errs() << "tessera-compile: error: " << program << " failed ("
                 << (message.empty() ? "exit " + std::to_string(rc) : message)
                 << "); its output:\n";
    if (auto buffer = llvm::MemoryBuffer::getFile(log))
      llvm::errs() << (*buffer)->getBuffer();
    return failure();
  }
  return success();
}

/// The CMakeLists.txt of the emitted programs: one executable per rank
/// (`dirs` empty string: a single program at the top). The CPU target links
/// the runtime library built beside this tool; the CUDA target builds
/// runtime/cuda from its sources once for the chosen architecture
/// (runtime/cuda/TesseraCuda.cmake), since the kernels are compiled per
/// architecture.
std::string cmakeLists(ArrayRef<std::string> dirs, bool cuda) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "# Emitted by tessera-compile: the training program(s), one per "
        "rank.\n"
        "cmake_minimum_required(VERSION 3.20)\n"
        "project(tessera_program CXX)\n"
        "set(CMAKE_CXX_STANDARD 17)\n"
        "set(CMAKE_CXX_STANDARD_REQUIRED ON)\n"
        "if(NOT CMAKE_BUILD_TYPE)\n"
        "  set(CMAKE_BUILD_TYPE Release)\n"
        "endif()\n"
        "# The emitted code is a straight sequence of runtime calls (the\n"
        "# kernels are in the runtime library): -O1 compiles it 4x faster\n"
        "# than -O3 and runs as fast.\n"
        "set(CMAKE_CXX_FLAGS_RELEASE \"-O1 -DNDEBUG\")\n";
  if (cuda) {
    os << "include(\"" TESSERA_RUNTIME_SOURCE_DIR
          "/cuda/TesseraCuda.cmake\")\n";
    for (const std::string &dir : dirs) {
      std::string target = dir.empty() ? "program" : dir;
      std::string source = dir.empty() ? "program.cpp" : dir + "/program.cpp";
      std::string out = dir.empty() ? "${CMAKE_CURRENT_SOURCE_DIR}"
                                    : "${CMAKE_CURRENT_SOURCE_DIR}/" + dir;
      os << "\nadd_executable(" << target << " " << source << ")\n"
         << "set_target_properties(" << target
         << " PROPERTIES OUTPUT_NAME program\n  RUNTIME_OUTPUT_DIRECTORY "
         << out << ")\n"
         << "tessera_link_cuda_runtime(" << target << " CUDA_ARCH " << cudaArch
         << ")\n";
    }
    return s;
  }
  os << "find_package(MPI REQUIRED COMPONENTS CXX)\n"
        "find_package(Threads REQUIRED)\n"
        "set(TESSERA_RUNTIME_INCLUDE_DIR \"" TESSERA_RUNTIME_INCLUDE_DIR
        "\" CACHE PATH \"Tessera runtime headers\")\n"
        "set(TESSERA_RUNTIME_LIBRARY \"" TESSERA_RUNTIME_LIBRARY
        "\" CACHE FILEPATH \"Tessera runtime library\")\n"
        "set(TESSERA_OPENBLAS_LIBRARY \"" TESSERA_OPENBLAS_LIBRARY
        "\" CACHE FILEPATH \"OpenBLAS\")\n";
  for (const std::string &dir : dirs) {
    std::string target = dir.empty() ? "program" : dir;
    std::string source = dir.empty() ? "program.cpp" : dir + "/program.cpp";
    std::string out = dir.empty() ? "${CMAKE_CURRENT_SOURCE_DIR}"
                                  : "${CMAKE_CURRENT_SOURCE_DIR}/" + dir;
    os << "\nadd_executable(" << target << " " << source << ")\n"
       << "# Beside (or below) init.safetensors, which it loads by default.\n"
       << "set_target_properties(" << target
       << " PROPERTIES OUTPUT_NAME program\n  RUNTIME_OUTPUT_DIRECTORY " << out
       << ")\n"
       << "target_include_directories(" << target
       << " PRIVATE ${TESSERA_RUNTIME_INCLUDE_DIR})\n"
       << "target_link_libraries(" << target
       << " PRIVATE ${TESSERA_RUNTIME_LIBRARY}\n  ${TESSERA_OPENBLAS_LIBRARY} "
          "MPI::MPI_CXX Threads::Threads m)\n";
    // A runtime built with sanitizers (TESSERA_SANITIZE) needs their
    // run-time libraries in the program too.
    if (StringRef(TESSERA_RUNTIME_LINK_OPTIONS).size())
      os << "target_link_options(" << target
         << " PRIVATE " TESSERA_RUNTIME_LINK_OPTIONS ")\n";
  }
  return s;
}

/// OUT/run: the program itself, or all ranks under mpirun (MPMD: each rank
/// runs its own executable).
std::string runScript(ArrayRef<std::string> dirs, int64_t worldSize) {
  std::string s = "#!/bin/sh\n# Emitted by tessera-compile: runs the training "
                  "program (see --help).\n"
                  "here=$(cd \"$(dirname \"$0\")\" && pwd)\n";
  if (worldSize == 1) {
    std::string dir = dirs.front();
    s +=
        "exec \"$here/" + (dir.empty() ? "" : dir + "/") + "program\" \"$@\"\n";
    return s;
  }
  s += "# Open MPI refuses to start as root without these. Ranks may exceed\n"
       "# the cores (--oversubscribe); unbound ranks that yield when idle\n"
       "# share them better; containers often forbid the single-copy\n"
       "# transport.\n"
       "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n"
       "exec mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 "
       "\\\n  --mca btl_vader_single_copy_mechanism none --mca "
       "orte_base_help_aggregate 0 \\\n ";
  for (auto [i, dir] : llvm::enumerate(dirs))
    s += std::string(i ? " :" : "") + " -np 1 \"$here/" + dir +
         "/program\" \"$@\"";
  s += "\n";
  return s;
}

/// A summary of the plan: the mesh, and per rank its ops and messages.
void printPlan(ModuleOp module) {
  if (quiet)
    return;
  auto mesh =
      module->getAttrOfType<dist::MeshAttr>(Dist::MeshAttrHelper::getNameStr());
  int64_t micro = 1;
  if (auto m = getAttr<Dist::MicroBatchesAttrHelper>(module))
    micro = m.getInt();
  llvm::errs() << "tessera-compile: plan " << plan << " on " << mesh << ", "
               << micro << " micro-batch(es)"
               << (micro > 1 ? " (" + schedule + ")" : std::string()) << "\n";
  for (auto f : module.getOps<func::FuncOp>()) {
    if (!f.getSymName().starts_with("train_step_adamw_rank"))
      continue;
    int64_t ops = 0, collectives = 0, sends = 0, recvs = 0, params = 0;
    f.walk([&](Operation *op) {
      if (isa<func::FuncOp, func::ReturnOp>(op))
        return;
      ++ops;
      StringRef name = op->getName().getStringRef();
      if (name == "dist.send")
        ++sends;
      else if (name == "dist.recv")
        ++recvs;
      else if (name.starts_with("dist."))
        ++collectives;
    });
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (f.getArgAttr(i, Tsr::ParamAttrHelper::getNameStr()))
        ++params;
    int64_t rank = getAttr<Dist::RankAttrHelper>(f).getInt();
    auto c = mesh.coords(rank);
    llvm::errs() << llvm::formatv(
        "  rank {0} (dp {1}, tp {2}, pp {3}): {4} params, {5} ops, {6} "
        "collectives, {7} sends, {8} receives\n",
        rank, c[0], c[1], c[2], params, ops, collectives, sends, recvs);
  }
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
  if (devices < 1)
    return fail("--devices must be >= 1, got " + Twine(int(devices)));
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
  bool distributed = devices > 1 || microBatches > 1;
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
                                static_cast<const cl::Option *>(&schedule)})
      if (given(*o))
        return fail("--" + o->ArgStr +
                    " applies only with --devices > 1 or --micro-batches > 1 "
                    "(one device with one micro-batch has no plan)");
  if (zero1 && devices == 1)
    return fail("--zero1 shards the optimizer over data-parallel ranks: it "
                "needs --devices > 1");
  bool autoPlan = plan == "auto";
  for (const cl::Option *o : {static_cast<const cl::Option *>(&deviceSpec),
                              static_cast<const cl::Option *>(&memoryGiB)})
    if (given(*o) && !autoPlan)
      return fail("--" + o->ArgStr + " applies only with --plan auto");
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
  registry.insert<tsr::TsrDialect, dist::DistDialect, func::FuncDialect,
                  emitc::EmitCDialect>();
  func::registerInlinerExtension(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  // Import.
  auto buffer = llvm::MemoryBuffer::getFile(inputFile);
  if (!buffer)
    return fail("cannot read ONNX model '" + inputFile +
                "': " + buffer.getError().message());
  onnx_import::ImportOptions options;
  options.lossOutput = lossOutput;
  options.weightsOut = path("init.safetensors");
  OwningOpRef<ModuleOp> module = onnx_import::importONNX(
      (*buffer)->getBuffer(), inputFile, &context, options);
  if (!module)
    return 1; // the importer reported the error
  if (failed(writeFile(path("model.mlir"),
                       [&](raw_ostream &os) { module->print(os); })))
    return 1;
  progress("imported " + inputFile + " -> " + path("model.mlir"));

  // The training step.
  PassManager pm(&context);
  pm.addPass(tsr::createTsrAutodiff());
  // Split means must divide by the global count (see tsr-decompose-means).
  if (distributed)
    pm.addPass(tsr::createTsrDecomposeMeans());
  for (const char *opt : {"adamw", "sgd"}) {
    tsr::TsrOptimizerOptions o;
    o.optimizer = opt;
    o.clipNorm = clipNorm;
    pm.addPass(tsr::createTsrOptimizer(o));
  }
  if (failed(pm.run(*module)))
    return 1;
  // The gradient function is also kept as `grad_step` (for --dump-grads).
  for (auto f : llvm::make_early_inc_range(module->getOps<func::FuncOp>()))
    if (!distributed && f.getNumResults() > 1 &&
        f.getResultAttr(1, Tsr::GradAttrHelper::getNameStr())) {
      OpBuilder b(f);
      b.setInsertionPointAfter(f);
      auto copy = cast<func::FuncOp>(b.clone(*f));
      copy.setSymName("grad_step");
      break;
    }
  // Only the steps remain public; the rest is inlined into them.
  for (auto f : module->getOps<func::FuncOp>())
    if (!f.getSymName().starts_with("train_step_") &&
        f.getSymName() != "grad_step")
      f.setPrivate();
  PassManager cleanup(&context);
  cleanup.addPass(createInlinerPass());
  cleanup.addPass(createSymbolDCEPass());
  cleanup.addPass(createCanonicalizerPass());
  cleanup.addPass(createCSEPass());
  if (failed(cleanup.run(*module)))
    return 1;
  // The parallel plan and the per-rank functions.
  int64_t worldSize = 1;
  if (distributed) {
    PassManager dpm(&context);
    dist::DistPlanOptions planOptions;
    planOptions.plan = plan;
    planOptions.devices = devices;
    planOptions.microBatches = microBatches;
    planOptions.zero1 = zero1;
    // dist-plan rejects its auto-only options with any other plan.
    if (autoPlan) {
      planOptions.deviceSpec = deviceSpec;
      planOptions.memoryGiB = memoryGiB;
      planOptions.schedule = schedule;
      planOptions.report = !quiet;
    }
    // Interleaved 1F1B and ZB-V run two virtual stages per device.
    if (schedule == "interleaved" || schedule == "zb-v")
      planOptions.stagesPerDevice = 2;
    planOptions.vShape = schedule == "zb-v";
    dpm.addPass(dist::createDistPlan(planOptions));
    if (failed(dpm.run(*module)))
      return 1;
    // Whether the schedule applies depends on the plan (a plan file's mesh
    // and micro-batches). The auto policy weighs the schedule in its
    // choice, so there it always applies.
    if (given(schedule) && !autoPlan) {
      int64_t pp = 1, micro = 1;
      auto mesh = (*module)->getAttrOfType<dist::MeshAttr>(
          Dist::MeshAttrHelper::getNameStr());
      if (auto axis = mesh.axisIndex("pp"))
        pp = mesh.getSizes()[*axis];
      if (auto m = getAttr<Dist::MicroBatchesAttrHelper>(*module))
        micro = m.getInt();
      if (pp == 1 && micro == 1)
        return fail("--schedule orders micro-batches through pipeline "
                    "stages, but plan '" +
                    plan + "' has one stage and one micro-batch");
      if (pp == 1 && (schedule == "interleaved" || schedule == "zb-v"))
        return fail("--schedule " + schedule +
                    " interleaves virtual pipeline stages, but plan '" + plan +
                    "' has one stage (pp = 1)");
    }
    dpm.clear();
    dist::DistScheduleOptions scheduleOptions;
    scheduleOptions.schedule = schedule;
    dpm.addPass(dist::createDistSchedule(scheduleOptions));
    dpm.addPass(dist::createDistPartition());
    dpm.addPass(createCanonicalizerPass());
    if (failed(dpm.run(*module)))
      return 1;
    worldSize =
        (*module)
            ->getAttrOfType<dist::MeshAttr>(Dist::MeshAttrHelper::getNameStr())
            .numRanks();
    printPlan(*module);
  }
  if (failed(writeFile(path("train.mlir"),
                       [&](raw_ostream &os) { module->print(os); })))
    return 1;
  progress("training steps (adamw, sgd) -> " + path("train.mlir"));

  // The predicted peak tensor memory of each rank's step (OUT/memory.json;
  // the tests check it against the runtime's measured peaks).
  {
    std::string json;
    llvm::raw_string_ostream os(json);
    os << "{";
    bool firstOpt = true;
    for (const char *opt : {"adamw", "sgd"}) {
      os << (firstOpt ? "" : ", ") << "\"" << opt << "\": [";
      firstOpt = false;
      for (int64_t r = 0; r < worldSize; ++r) {
        std::string name = std::string("train_step_") + opt;
        if (distributed)
          name += "_rank" + std::to_string(r);
        auto f = module->lookupSymbol<func::FuncOp>(name);
        int64_t bytes = f ? dist::predictPeakBytes(f) : 0;
        os << (r ? ", " : "") << bytes;
        if (std::string(opt) == "adamw")
          progress(llvm::formatv("  rank {0}: predicted peak tensor memory "
                                 "{1:F2} MiB (adamw)",
                                 r, bytes / (1024.0 * 1024.0))
                       .str());
      }
      os << "]";
    }
    os << "}\n";
    if (failed(
            writeFile(path("memory.json"), [&](raw_ostream &o) { o << json; })))
      return 1;
  }

  // Emission: one program per rank.
  std::vector<std::string> programs;
  for (int64_t r = 0; r < (distributed ? worldSize : 1); ++r) {
    OwningOpRef<ModuleOp> copy(cast<ModuleOp>((*module)->clone()));
    std::string dir = distributed ? "rank_" + std::to_string(r) : "";
    if (distributed) {
      std::string suffix = "_rank" + std::to_string(r);
      for (auto f : llvm::make_early_inc_range(copy->getOps<func::FuncOp>())) {
        if (!f.getSymName().ends_with(suffix)) {
          f.erase();
          continue;
        }
        f.setSymName(f.getSymName().drop_back(suffix.size()));
      }
      if (std::error_code ec = llvm::sys::fs::create_directories(path(dir)))
        return fail("cannot create " + path(dir) + ": " + ec.message());
    }
    PassManager emit(&context);
    ConvertTsrToEmitCOptions emitOptions;
    emitOptions.modelName = llvm::sys::path::filename(inputFile).str();
    if (distributed)
      emitOptions.initWeights = "../init.safetensors";
    emit.addPass(createConvertTsrToEmitC(emitOptions));
    if (failed(emit.run(*copy)))
      return 1;
    std::string cpp;
    llvm::raw_string_ostream cppStream(cpp);
    cppStream << "// Emitted by tessera-compile from "
              << llvm::sys::path::filename(inputFile)
              << (distributed
                      ? ": the training program of rank " + std::to_string(r) +
                            " of " + std::to_string(worldSize) + ".\n"
                      : std::string(": the training program of one "
                                    "device.\n"));
    if (failed(emitc::translateToCpp(*copy, cppStream)))
      return fail("C++ emission failed");
    std::string source = dir.empty() ? "program.cpp" : dir + "/program.cpp";
    if (failed(writeFile(path(source), [&](raw_ostream &os) { os << cpp; })))
      return 1;
    programs.push_back(dir);
  }
  if (failed(writeFile(path("CMakeLists.txt"),
                       [&](raw_ostream &os) {
                         os << cmakeLists(programs, target == "cuda");
                       })) ||
      failed(writeFile(path("run"), [&](raw_ostream &os) {
        os << runScript(programs, worldSize);
      })))
    return 1;
  llvm::sys::fs::setPermissions(path("run"), llvm::sys::fs::all_read |
                                                 llvm::sys::fs::all_exe |
                                                 llvm::sys::fs::owner_write);
  progress("emitted " + std::to_string(programs.size()) + " program(s) in " +
           std::string(outAbs));
  if (noBuild)
    return 0;

  // Build.
  std::string log = path("build.log");
  std::string buildDir = path("build");
  if (failed(run("cmake",
                 {"-S", outAbs.str(), "-B", buildDir, "-G", "Ninja",
                  "-DCMAKE_BUILD_TYPE=Release"},
                 log)) ||
      failed(run("cmake", {"--build", buildDir}, log)))
    return 1;
  progress("built " + path("run"));
  return 0;
}
