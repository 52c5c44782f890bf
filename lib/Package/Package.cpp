//===- Package.cpp - what tessera-compile writes into OUT -----------------===//

#include "tessera/Package/Package.h"

#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/Dist/Analysis/MemoryPrediction.h"
#include "tessera/Dialect/Dist/IR/DistAttrs.h"
#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Dist/IR/DistOps.h"
#include "tessera/Dialect/Dist/Transforms/Passes.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Pipelines/TrainPipeline.h"
#include "tessera/Target/ONNX/OnnxModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/Cpp/CppEmitter.h"
#include "tessera/Interfaces/ExtensionInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <set>

using namespace mlir;

namespace tessera::package {

namespace {

/// The programs' constants file (convert-tsr-to-emitc's constants-file),
/// in OUT.
constexpr const char *kConstantsFile = "constants.safetensors";

/// The safetensors writer's element type for a runtime element type.
std::optional<onnx_import::DType> onnxDType(Type t) {
  if (t.isF32())
    return onnx_import::DType::Float;
  if (t.isF64())
    return onnx_import::DType::Double;
  if (t.isBF16())
    return onnx_import::DType::BFloat16;
  if (t.isInteger(32))
    return onnx_import::DType::Int32;
  if (t.isInteger(64))
    return onnx_import::DType::Int64;
  if (t.isInteger(1))
    return onnx_import::DType::Bool;
  return std::nullopt;
}

std::string outPath(const PackageOptions &options, StringRef name) {
  SmallString<256> p(options.outDir);
  llvm::sys::path::append(p, name);
  return std::string(p);
}

LogicalResult fail(const PackageOptions &options, const Twine &message) {
  llvm::errs() << options.toolName << ": error: " << message << "\n";
  return failure();
}

void progress(const PackageOptions &options, const Twine &message) {
  if (options.progress)
    *options.progress << options.toolName << ": " << message << "\n";
}

/// The step of `optimizer` that `rank` runs (any rank: -1).
func::FuncOp findStep(ModuleOp module, StringRef optimizer, int64_t rank) {
  for (auto f : module.getOps<func::FuncOp>()) {
    auto role = getAttr<Tsr::TrainStepAttrHelper>(f);
    SmallVector<int64_t> ranks = dist::ranksOf(f);
    if (role && role.getValue() == optimizer &&
        (rank < 0 ? ranks.empty() : llvm::is_contained(ranks, rank)))
      return f;
  }
  return {};
}

/// Runs a program, echoing its output only when it fails.
LogicalResult run(const PackageOptions &options, StringRef program,
                  ArrayRef<StringRef> args, StringRef log) {
  auto path = llvm::sys::findProgramByName(program);
  if (!path)
    return fail(options, "'" + program + "' not found in PATH");
  SmallVector<StringRef> argv{*path};
  llvm::append_range(argv, args);
  std::optional<StringRef> redirects[] = {std::nullopt, log, log};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*path, argv, std::nullopt, redirects, 0, 0,
                                     &message);
  if (rc != 0) {
    llvm::errs() << options.toolName << ": error: " << program << " failed ("
                 << (message.empty() ? "exit " + std::to_string(rc) : message)
                 << "); its output:\n";
    if (auto buffer = llvm::MemoryBuffer::getFile(log))
      llvm::errs() << (*buffer)->getBuffer();
    return failure();
  }
  return success();
}

} // namespace

LogicalResult writeOutFile(const PackageOptions &options, StringRef name,
                           StringRef text) {
  std::string path = outPath(options, name);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return fail(options, "cannot write " + path + ": " + ec.message());
  os << text;
  return success();
}

int64_t worldSize(ModuleOp module) {
  auto mesh =
      module->getAttrOfType<dist::MeshAttr>(Dist::MeshAttrHelper::getNameStr());
  return mesh ? mesh.numRanks() : 1;
}

void printPlanReport(ModuleOp module, StringRef plan, raw_ostream &os) {
  auto mesh =
      module->getAttrOfType<dist::MeshAttr>(Dist::MeshAttrHelper::getNameStr());
  if (!mesh)
    return;
  int64_t micro = 1;
  StringRef schedule;
  if (dist::PipelineAttr pipeline = dist::getEnclosingPipeline(module)) {
    micro = pipeline.getMicroBatches();
    if (pipeline.getSchedule())
      schedule = pipeline.getSchedule().getValue();
  }
  os << "tessera-compile: plan " << plan << " on " << mesh << ", " << micro
     << " micro-batch(es)"
     << (micro > 1 && !schedule.empty() ? " (" + schedule.str() + ")"
                                        : std::string())
     << "\n";
  // What the built-in policies decided (tp splits, pp stages).
  if (auto report = getAttr<Dist::PlanReportAttrHelper>(module))
    for (auto line : report.getAsValueRange<StringAttr>())
      os << "  " << line << "\n";
  for (int64_t rank = 0; rank < mesh.numRanks(); ++rank) {
    func::FuncOp f = findStep(module, "adamw", rank);
    if (!f)
      continue;
    int64_t ops = 0, collectives = 0, sends = 0, recvs = 0, params = 0;
    f.walk([&](Operation *op) {
      if (isa<func::FuncOp, func::ReturnOp>(op))
        return;
      ++ops;
      if (isa<dist::SendOp>(op))
        ++sends;
      else if (isa<dist::RecvOp>(op))
        ++recvs;
      else if (isa<dist::DistDialect>(op->getDialect()))
        ++collectives;
    });
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (getArgAttr<Tsr::ParamAttrHelper>(f, i))
        ++params;
    auto c = mesh.coords(rank);
    os << llvm::formatv(
        "  rank {0} (dp {1}, tp {2}, pp {3}): {4} params, {5} ops, {6} "
        "collectives, {7} sends, {8} receives\n",
        rank, c[0], c[1], c[2], params, ops, collectives, sends, recvs);
  }
}

/// Whether the program of `rank` (-1: the one program) reads the constants
/// file: one of its functions holds an outlined constant.
static bool readsConstants(ModuleOp module, int64_t rank) {
  for (auto f : module.getOps<func::FuncOp>()) {
    if (rank >= 0 && !llvm::is_contained(dist::ranksOf(f), rank))
      continue;
    WalkResult walk = f.walk([](tsr::ConstantOp op) {
      auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
      return isOutlinedConstant(dense, kOutlineConstantsAbove)
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return true;
  }
  return false;
}

LogicalResult writeMemoryJson(ModuleOp module, const PackageOptions &options,
                              std::pair<int64_t, int64_t> *largest) {
  bool distributed = static_cast<bool>(module->getAttrOfType<dist::MeshAttr>(
      Dist::MeshAttrHelper::getNameStr()));
  int64_t ranks = worldSize(module);
  // The runtime holds the constants file's tensors for the whole run
  // (runtime/common/Constants.cpp): a program that reads any of them loads
  // all of them, which adds to its rank's peak; a program that reads none
  // (a pipeline stage without large constants) loads nothing.
  int64_t held = 0;
  std::set<std::string> keys;
  module.walk([&](tsr::ConstantOp op) {
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!isOutlinedConstant(dense, kOutlineConstantsAbove) ||
        !keys.insert(outlinedConstantKey(dense)).second)
      return;
    if (std::optional<std::string> bytes = constantBytes(dense))
      held += static_cast<int64_t>(bytes->size());
  });
  // Per optimizer and rank: the peak of live tensor bytes (what the
  // runtime's peak_bytes measures) and, with the static memory plan, the
  // arena and the footprint (arena + the caching allocator's peak beside
  // it, the runtime's footprint_bytes); without a plan the footprint is
  // the peak.
  struct Figures {
    int64_t peak = 0, arena = 0, footprint = 0;
  };
  std::vector<std::vector<Figures>> figures;
  for (StringRef opt : kTrainOptimizers) {
    figures.emplace_back();
    for (int64_t r = 0; r < ranks; ++r) {
      func::FuncOp f = findStep(module, opt, distributed ? r : -1);
      Figures fig;
      if (f) {
        int64_t constants =
            readsConstants(module, distributed ? r : -1) ? held : 0;
        fig.peak = dist::predictPeakBytes(f) + constants;
        fig.footprint = fig.peak;
        if (options.staticMemory) {
          dist::StaticMemoryPlan plan = dist::planStaticMemory(f);
          fig.arena = plan.arenaBytes;
          fig.footprint = plan.footprintBytes() + constants;
        }
      }
      figures.back().push_back(fig);
      if (opt == "adamw" && largest && (r == 0 || fig.peak > largest->first))
        *largest = {fig.peak, r};
      if (opt == "adamw")
        progress(options,
                 llvm::formatv("  rank {0}: predicted peak tensor memory "
                               "{1:F2} MiB, footprint {2:F2} MiB with an "
                               "arena of {3:F2} MiB (adamw)",
                               r, fig.peak / (1024.0 * 1024.0),
                               fig.footprint / (1024.0 * 1024.0),
                               fig.arena / (1024.0 * 1024.0))
                     .str());
    }
  }
  std::string json;
  llvm::raw_string_ostream os(json);
  auto table = [&](int64_t Figures::*field) {
    for (auto [i, opt] : llvm::enumerate(kTrainOptimizers)) {
      os << (i ? ", " : "") << "\"" << opt << "\": [";
      for (auto [r, fig] : llvm::enumerate(figures[i]))
        os << (r ? ", " : "") << fig.*field;
      os << "]";
    }
  };
  os << "{";
  table(&Figures::peak);
  os << ", \"arena\": {";
  table(&Figures::arena);
  os << "}, \"footprint\": {";
  table(&Figures::footprint);
  os << "}}\n";
  return writeOutFile(options, "memory.json", json);
}

/// Adds the runtime libraries of the dialects (other than the core's) whose
/// ops `module` holds, once each; an error names a dialect without kernels
/// for the target.
static LogicalResult addExtensionLibraries(ModuleOp module,
                                           const PackageOptions &options,
                                           EmittedPrograms &programs) {
  llvm::SetVector<Dialect *> dialects;
  module.walk([&](Operation *op) {
    if (Dialect *d = op->getDialect())
      dialects.insert(d);
  });
  for (Dialect *dialect : dialects) {
    auto *iface = dyn_cast<RuntimeLibraryInterface>(dialect);
    if (!iface)
      continue;
    RuntimeLibrary library;
    std::string why;
    if (failed(iface->getRuntimeLibrary(options.target, library, why)))
      return fail(options, "the " + dialect->getNamespace().str() +
                               " ops cannot be built for --target " +
                               options.target + ": " + why);
    for (std::string &dir : library.includeDirs)
      if (!llvm::is_contained(programs.extensionIncludeDirs, dir))
        programs.extensionIncludeDirs.push_back(std::move(dir));
    for (std::string &lib : library.libraries)
      if (!llvm::is_contained(programs.extensionLibraries, lib))
        programs.extensionLibraries.push_back(std::move(lib));
    for (RuntimeLibrary::Source &source : library.sources) {
      std::pair<std::string, std::string> entry{std::move(source.dir),
                                                std::move(source.target)};
      if (!llvm::is_contained(programs.extensionSources, entry))
        programs.extensionSources.push_back(std::move(entry));
    }
  }
  return success();
}

/// EmittedPrograms::spreadOfRank: a rank's pp coordinate plus its position
/// in its stage's group (the ranks that share its pp coordinate).
static std::vector<int64_t> cpuSpread(ModuleOp module) {
  auto mesh =
      module->getAttrOfType<dist::MeshAttr>(Dist::MeshAttrHelper::getNameStr());
  if (!mesh)
    return {0};
  std::optional<unsigned> pp = mesh.axisIndex("pp");
  SmallVector<StringRef> others;
  for (StringAttr name : mesh.getNames())
    if (name.getValue() != "pp")
      others.push_back(name.getValue());
  std::vector<int64_t> spread;
  for (int64_t r = 0; r < mesh.numRanks(); ++r) {
    SmallVector<int64_t> stage = mesh.groupOf(r, others);
    spread.push_back((pp ? mesh.coords(r)[*pp] : 0) +
                     (llvm::find(stage, r) - stage.begin()));
  }
  return spread;
}

FailureOr<EmittedPrograms> emitPrograms(ModuleOp module,
                                        const PackageOptions &options) {
  MLIRContext *ctx = module.getContext();
  bool distributed = static_cast<bool>(module->getAttrOfType<dist::MeshAttr>(
      Dist::MeshAttrHelper::getNameStr()));
  int64_t ranks = worldSize(module);
  EmittedPrograms programs;
  if (failed(addExtensionLibraries(module, options, programs)))
    return failure();
  constexpr size_t kNone = ~size_t(0);
  programs.programOfRank.assign(distributed ? ranks : 1, kNone);
  programs.spreadOfRank = cpuSpread(module);
  // The large constants of every program, once each (keyed by content),
  // for OUT/constants.safetensors.
  std::map<std::string, onnx_import::Tensor> constants;
  for (int64_t r = 0; r < (distributed ? ranks : 1); ++r) {
    // A rank of a class already emitted runs that class's program.
    if (programs.programOfRank[r] != kNone)
      continue;
    size_t index = programs.dirs.size();
    OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
    std::string dir = distributed ? "prog_" + std::to_string(index) : "";
    SmallVector<int64_t> classRanks{r};
    PassManager pm(ctx);
    if (distributed) {
      if (std::error_code ec =
              llvm::sys::fs::create_directories(outPath(options, dir)))
        return fail(options, "cannot create " + outPath(options, dir) + ": " +
                                 ec.message());
      dist::DistExtractRankOptions extract;
      extract.rank = r;
      pm.addPass(dist::createDistExtractRank(extract));
      if (failed(pm.run(*copy)))
        return failure();
      pm.clear();
      for (auto f : copy->getOps<func::FuncOp>())
        if (SmallVector<int64_t> shared = dist::ranksOf(f); !shared.empty())
          classRanks = shared;
    }
    for (int64_t member : classRanks)
      programs.programOfRank[member] = index;
    programs.dirs.push_back(dir);
    std::string prefix = dir.empty() ? "" : dir + "/";
    if (options.emitRankIR) {
      std::string ir;
      llvm::raw_string_ostream irStream(ir);
      copy->print(irStream);
      irStream << "\n"; // as tessera-opt prints it
      if (failed(writeOutFile(options, prefix + "program.mlir", ir)))
        return failure();
    }
    // After --emit-rank-ir's copy, which stays the pipeline's output.
    if (options.staticMemory) {
      pm.addPass(dist::createDistStaticMemory());
      if (failed(pm.run(*copy)))
        return failure();
      pm.clear();
    }
    ConvertTsrToEmitCOptions emitOptions;
    emitOptions.modelName = options.modelName;
    emitOptions.peakFlops = options.peakFlopsPerRank;
    emitOptions.profileOps = options.profileOps;
    if (distributed)
      emitOptions.initWeights = "../init.safetensors";
    emitOptions.constantsFile =
        distributed ? "../" + std::string(kConstantsFile) : kConstantsFile;
    WalkResult walk = copy->walk([&](tsr::ConstantOp op) {
      auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
      if (!isOutlinedConstant(dense, emitOptions.outlineConstantsAbove))
        return WalkResult::advance();
      std::string key = outlinedConstantKey(dense);
      std::optional<std::string> bytes = constantBytes(dense);
      std::optional<onnx_import::DType> dtype =
          onnxDType(dense.getElementType());
      if (!bytes || !dtype) {
        op.emitError("constant of element type ")
            << dense.getElementType() << " has no runtime type";
        return WalkResult::interrupt();
      }
      auto [it, inserted] = constants.try_emplace(key);
      if (!inserted) {
        // Keys are 64-bit hashes: equal keys must be equal values.
        if (it->second.data != *bytes) {
          op.emitError("two different constants hash to the key ") << key;
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      }
      it->second.name = key;
      it->second.dtype = *dtype;
      auto shape = cast<ShapedType>(dense.getType()).getShape();
      it->second.shape.assign(shape.begin(), shape.end());
      it->second.data = std::move(*bytes);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    pm.addPass(createConvertTsrToEmitC(emitOptions));
    if (failed(pm.run(*copy)))
      return failure();
    std::string cpp;
    llvm::raw_string_ostream cppStream(cpp);
    std::string who = "one device";
    if (distributed) {
      who = (classRanks.size() == 1 ? "rank " : "ranks ") +
            llvm::join(
                llvm::map_range(classRanks,
                                [](int64_t v) { return std::to_string(v); }),
                ", ") +
            " of " + std::to_string(ranks);
    }
    cppStream << "// Emitted by tessera-compile from " << options.modelName
              << ": the training program of " << who << ".\n";
    if (failed(emitc::translateToCpp(*copy, cppStream)))
      return fail(options, "C++ emission failed");
    if (failed(writeOutFile(options, prefix + "program.cpp", cpp)))
      return failure();
  }
  if (!constants.empty()) {
    std::vector<const onnx_import::Tensor *> tensors;
    for (auto &[key, tensor] : constants)
      tensors.push_back(&tensor);
    std::string error;
    if (!onnx_import::writeSafetensors(outPath(options, kConstantsFile),
                                       tensors, error))
      return fail(options, error);
  }
  return programs;
}

std::string cmakeLists(const EmittedPrograms &programs,
                       const PackageOptions &options) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "# Emitted by tessera-compile: the training program(s), one per "
        "class of\n# ranks that run the same code.\n"
        "cmake_minimum_required(VERSION 3.20)\n"
        "project(tessera_program CXX)\n"
        "set(CMAKE_CXX_STANDARD 17)\n"
        "set(CMAKE_CXX_STANDARD_REQUIRED ON)\n"
        "if(NOT CMAKE_BUILD_TYPE)\n"
        "  set(CMAKE_BUILD_TYPE Release)\n"
        "endif()\n"
        "# The emitted code is a straight sequence of runtime calls (the\n"
        "# kernels are in the runtime library, built optimised): -O0\n"
        "# compiles it 2.5x faster than -O1 (GPT-2's 5000-line programs:\n"
        "# 4 s instead of 10 s each) at about 0.4 us more per call, which\n"
        "# is nothing beside GPT-2's kernels but 15% of the 1.5 ms step of\n"
        "# the 2-layer tiny model (bench/compile/README.md). For small\n"
        "# models trained long, configure with -DTESSERA_PROGRAM_OPT=-O1.\n"
        "set(TESSERA_PROGRAM_OPT \"-O0\" CACHE STRING\n"
        "  \"Optimisation flag of the emitted programs\")\n"
        "set(CMAKE_CXX_FLAGS_RELEASE \"${TESSERA_PROGRAM_OPT} -DNDEBUG\")\n";
  // The CUDA target builds runtime/cuda from its sources once for the
  // chosen architecture (runtime/cuda/TesseraCuda.cmake), since the kernels
  // are compiled per architecture; the CPU target links the runtime library
  // built beside the compiler.
  bool cuda = options.target == "cuda";
  if (cuda)
    os << "include(\"" << options.runtimeSourceDir
       << "/cuda/TesseraCuda.cmake\")\n";
  else
    os << "find_package(MPI REQUIRED COMPONENTS CXX)\n"
          "find_package(Threads REQUIRED)\n"
          "set(TESSERA_RUNTIME_INCLUDE_DIR \""
       << options.runtimeIncludeDir
       << "\" CACHE PATH \"Tessera runtime headers\")\n"
          "set(TESSERA_RUNTIME_LIBRARY \""
       << options.runtimeLibrary
       << "\" CACHE FILEPATH \"Tessera runtime library\")\n"
          "set(TESSERA_OPENBLAS_LIBRARY \""
       << options.openblasLibrary << "\" CACHE FILEPATH \"OpenBLAS\")\n";
  for (const std::string &dir : programs.dirs) {
    std::string target = dir.empty() ? "program" : dir;
    std::string source = dir.empty() ? "program.cpp" : dir + "/program.cpp";
    std::string out = dir.empty() ? "${CMAKE_CURRENT_SOURCE_DIR}"
                                  : "${CMAKE_CURRENT_SOURCE_DIR}/" + dir;
    os << "\nadd_executable(" << target << " " << source << ")\n";
    if (!cuda)
      os << "# Beside (or below) init.safetensors, which it loads by "
            "default.\n";
    os << "set_target_properties(" << target
       << " PROPERTIES OUTPUT_NAME program\n  RUNTIME_OUTPUT_DIRECTORY " << out
       << ")\n";
    if (cuda) {
      os << "tessera_link_cuda_runtime(" << target << " CUDA_ARCH "
         << options.cudaArch << ")\n";
      // Extension dialects' kernels, compiled here for the same
      // architecture once the core's CUDA library is a target.
      for (const auto &[dir, library] : programs.extensionSources)
        os << "if(NOT TARGET " << library << ")\n  add_subdirectory(\"" << dir
           << "\" \"${CMAKE_BINARY_DIR}/" << library
           << "\" EXCLUDE_FROM_ALL)\nendif()\ntarget_link_libraries(" << target
           << " PRIVATE " << library << ")\n";
      if (!programs.extensionIncludeDirs.empty()) {
        os << "target_include_directories(" << target << " PRIVATE";
        for (const std::string &dir : programs.extensionIncludeDirs)
          os << "\n  \"" << dir << "\"";
        os << ")\n";
      }
      continue;
    }
    // Extension dialects' kernels first: they call the core runtime.
    os << "target_include_directories(" << target
       << " PRIVATE ${TESSERA_RUNTIME_INCLUDE_DIR}";
    for (const std::string &dir : programs.extensionIncludeDirs)
      os << "\n  \"" << dir << "\"";
    os << ")\n"
       << "target_link_libraries(" << target << " PRIVATE";
    for (const std::string &lib : programs.extensionLibraries)
      os << " \"" << lib << "\"";
    os << " ${TESSERA_RUNTIME_LIBRARY}\n  ${TESSERA_OPENBLAS_LIBRARY} "
          "MPI::MPI_CXX Threads::Threads m)\n";
    // A runtime built with sanitizers (TESSERA_SANITIZE) needs their
    // run-time libraries in the program too.
    if (!options.runtimeLinkOptions.empty())
      os << "target_link_options(" << target << " PRIVATE "
         << options.runtimeLinkOptions << ")\n";
  }
  return s;
}

std::string runScript(const EmittedPrograms &programs) {
  std::string s = "#!/bin/sh\n# Emitted by tessera-compile: runs the training "
                  "program (see --help).\n"
                  "here=$(cd \"$(dirname \"$0\")\" && pwd)\n";
  if (programs.programOfRank.size() <= 1) {
    std::string dir = programs.dirs.front();
    s +=
        "exec \"$here/" + (dir.empty() ? "" : dir + "/") + "program\" \"$@\"\n";
    return s;
  }
  // Each rank's program, by the rank a launcher gave this process.
  size_t ranks = programs.programOfRank.size();
  std::string spreadList;
  for (size_t r = 0; r < ranks; ++r)
    spreadList +=
        (r ? " " : "") + std::to_string(r < programs.spreadOfRank.size()
                                            ? programs.spreadOfRank[r]
                                            : int64_t(r));
  s += "# Open MPI refuses to start as root without the first two. Ranks may\n"
       "# exceed the cores: unbound ranks that yield when idle share them\n"
       "# better; containers often forbid the single-copy transport.\n"
       "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n"
       "export OMPI_MCA_mpi_yield_when_idle=1 "
       "OMPI_MCA_btl_vader_single_copy_mechanism=none\n"
       "# Started as one rank of " +
       std::to_string(ranks) +
       " by a launcher (mpirun, srun, torchrun: docs/launch.md):\n"
       "# run that rank's program.\n"
       "rank=\n"
       "if [ -n \"${OMPI_COMM_WORLD_RANK:-}\" ]; then "
       "rank=$OMPI_COMM_WORLD_RANK\n"
       "elif [ -n \"${PMIX_RANK:-}\" ]; then rank=$PMIX_RANK\n"
       "elif [ -n \"${PMI_RANK:-}\" ]; then rank=$PMI_RANK\n"
       "elif [ -n \"${RANK:-}\" ] && [ -n \"${WORLD_SIZE:-}\" ]; then "
       "rank=$RANK\n"
       "elif [ -n \"${SLURM_PROCID:-}\" ] && [ -n \"${SLURM_NTASKS:-}\" ] "
       "&& [ -n \"${SLURM_STEP_ID:-}\" ]; then\n"
       "  rank=$SLURM_PROCID\n"
       "fi\n"
       "if [ -n \"$rank\" ]; then\n"
       "  case \"$rank\" in\n";
  for (auto [index, dir] : llvm::enumerate(programs.dirs)) {
    std::string pattern;
    for (auto [rank, program] : llvm::enumerate(programs.programOfRank))
      if (program == index)
        pattern += (pattern.empty() ? "" : "|") + std::to_string(rank);
    s += "  " + pattern + ") exec \"$here/" + dir + "/program\" \"$@\" ;;\n";
  }
  s += "  *) echo \"error: this job has " + std::to_string(ranks) +
       " ranks (0-" + std::to_string(ranks - 1) +
       "); the launcher started rank $rank\" >&2; exit 1 ;;\n"
       "  esac\n"
       "fi\n"
       "# Otherwise mpirun starts every rank, unbound and --oversubscribe'd;\n"
       "# --hostfile FILE (first) spreads them over the hosts of FILE.\n"
       "hostfile=\n"
       "if [ \"${1:-}\" = --hostfile ]; then\n"
       "  [ $# -ge 2 ] || { echo \"error: --hostfile needs a file\" >&2; exit "
       "1; }\n"
       "  hostfile=$2; shift 2\n"
       "fi\n"
       "# TESSERA_BIND=spread and more ranks than this host's CPUs: each rank\n"
       "# binds itself to a CPU (TESSERA_CPU_SPREAD: per rank, its place in\n"
       "# its pipeline stage plus the stage), so that the ranks that compute\n"
       "# at the same time take different CPUs. Unbound by default.\n"
       "case \"${TESSERA_BIND:-none}\" in\n"
       "  spread|none) ;;\n"
       "  *) echo \"error: TESSERA_BIND is spread or none, not" +
       " '$TESSERA_BIND'\" >&2; exit 1 ;;\n"
       "esac\n"
       "if [ -z \"$hostfile\" ] && [ \"${TESSERA_BIND:-none}\" = spread ] && "
       "[ \"$(nproc 2>/dev/null || echo " +
       std::to_string(ranks) + ")\" -lt " + std::to_string(ranks) +
       " ]; then\n"
       "  export TESSERA_CPU_SPREAD=\"" +
       spreadList +
       "\"\n"
       "fi\n"
       "# One entry per rank, in rank order: the program of its class.\n"
       "exec mpirun ${hostfile:+--hostfile \"$hostfile\"} --oversubscribe "
       "--bind-to none \\\n  --mca orte_base_help_aggregate 0 \\\n ";
  for (auto [rank, program] : llvm::enumerate(programs.programOfRank))
    s += std::string(rank ? " :" : "") + " -np 1 \"$here/" +
         programs.dirs[program] + "/program\" \"$@\"";
  s += "\n";
  return s;
}

LogicalResult writeBuildFiles(const EmittedPrograms &programs,
                              const PackageOptions &options) {
  if (failed(writeOutFile(options, "CMakeLists.txt",
                          cmakeLists(programs, options))) ||
      failed(writeOutFile(options, "run", runScript(programs))))
    return failure();
  llvm::sys::fs::setPermissions(outPath(options, "run"),
                                llvm::sys::fs::all_read |
                                    llvm::sys::fs::all_exe |
                                    llvm::sys::fs::owner_write);
  return success();
}

LogicalResult build(const PackageOptions &options) {
  std::string log = outPath(options, "build.log");
  std::string buildDir = outPath(options, "build");
  if (failed(run(options, "cmake",
                 {"-S", options.outDir, "-B", buildDir, "-G", "Ninja",
                  "-DCMAKE_BUILD_TYPE=Release"},
                 log)) ||
      failed(run(options, "cmake", {"--build", buildDir}, log)))
    return failure();
  progress(options, "built " + outPath(options, "run"));
  return success();
}

} // namespace tessera::package
