//===- tessera-interp.cpp - run a tsr function on safetensors -------------===//
//
//   tessera-interp FILE.mlir [--func NAME] --inputs IN.safetensors
//                  [--outputs OUT.safetensors]
//
// Runs the function (default: the first one) on the CPU runtime's kernels.
// Arguments are taken from IN by name: tsr.param / tsr.input names, else
// "arg<i>". Results are written to OUT by name: tsr.output / tsr.grad names,
// "loss" for tsr.loss, else "result<i>"; each is also summarised on stdout.
// Any error is one line "error: ..." and exit 1.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Exec/Interpreter.h"
#include "tessera/InitAll.h"
#include "tessera/Support/InputFile.h"
#include "tessera/llm/Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <exception>
#include <iostream>
#include <map>

using namespace mlir;
using namespace tessera;

namespace {

int fail(const std::string &message) {
  std::cerr << "error: " << message << "\n";
  return 1;
}

std::string nameOf(DictionaryAttr attrs, const char *const keys[],
                   const std::string &fallback) {
  if (attrs)
    for (const char *const *k = keys; *k; ++k) {
      if (auto s = attrs.getAs<StringAttr>(*k))
        return s.str();
    }
  return fallback;
}

} // namespace

int main(int argc, char **argv) {
  std::string file, funcName, inputs, outputs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    if (a == "--func") {
      if (!value(funcName))
        return fail("--func needs a value");
    } else if (a == "--inputs") {
      if (!value(inputs))
        return fail("--inputs needs a value");
    } else if (a == "--outputs") {
      if (!value(outputs))
        return fail("--outputs needs a value");
    } else if (a == "--help" || a == "-h") {
      std::cout << "usage: tessera-interp FILE.mlir [--func NAME] --inputs "
                   "IN.safetensors [--outputs OUT.safetensors]\n";
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return fail("unknown option '" + a + "'");
    } else if (file.empty()) {
      file = a;
    } else {
      return fail("unexpected argument '" + a + "'");
    }
  }
  if (file.empty())
    return fail("no input file (see --help)");

  // A regular file of bounded size whose brackets nest no deeper than MLIR's
  // recursive parser can take (docs/fuzzing.md).
  std::string readError;
  std::optional<std::string> text = support::readMlirFile(file, readError);
  if (!text)
    return fail(readError);
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // The extensions' kernels (the core's are always there).
  llm::registerLlmKernels();
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(*text, file),
                             llvm::SMLoc());
  std::string parseErrors;
  llvm::raw_string_ostream errs(parseErrors);
  SourceMgrDiagnosticHandler handler(sources, &context, errs);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sources, &context);
  if (!module)
    return fail("cannot parse " + file + "\n" + parseErrors);

  func::FuncOp f;
  for (auto candidate : module->getOps<func::FuncOp>())
    if (funcName.empty() || candidate.getSymName() == funcName) {
      f = candidate;
      break;
    }
  if (!f)
    return fail(funcName.empty() ? "no function in " + file
                                 : "no function named '" + funcName + "'");

  try {
    std::map<std::string, rt::Tensor> named;
    if (!inputs.empty())
      for (auto &[name, t] : rt::readSafetensors(inputs))
        named[name] = t;
    static const char *const argKeys[] = {
        Tsr::ParamAttrHelper::getNameStr().data(),
        Tsr::InputAttrHelper::getNameStr().data(), nullptr};
    std::vector<rt::Tensor> args;
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      std::string name =
          nameOf(f.getArgAttrDict(i), argKeys, "arg" + std::to_string(i));
      auto it = named.find(name);
      if (it == named.end())
        return fail("no tensor '" + name + "' for argument " +
                    std::to_string(i) + " in " +
                    (inputs.empty() ? std::string("(no --inputs)") : inputs));
      args.push_back(it->second);
    }
    std::vector<rt::Tensor> results;
    std::string error;
    if (!exec::interpret(f, args, results, error))
      return fail(error);
    static const char *const resultKeys[] = {
        Tsr::OutputAttrHelper::getNameStr().data(),
        Tsr::GradAttrHelper::getNameStr().data(), nullptr};
    std::vector<std::pair<std::string, rt::Tensor>> out;
    for (unsigned i = 0; i < results.size(); ++i) {
      DictionaryAttr attrs = f.getResultAttrDict(i);
      std::string name =
          nameOf(attrs, resultKeys,
                 attrs && attrs.get(Tsr::LossAttrHelper::getNameStr())
                     ? std::string("loss")
                     : "result" + std::to_string(i));
      out.push_back({name, results[i]});
      std::cout << name << ": " << rt::dtypeName(results[i].dtype()) << " "
                << rt::shapeToString(results[i].shape()) << "\n";
    }
    if (!outputs.empty())
      rt::writeSafetensors(outputs, out);
  } catch (const std::exception &e) {
    return fail(e.what());
  }
  return 0;
}
