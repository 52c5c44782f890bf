//===- Kernels.cpp - the interpreter's runtime functions, by name ---------===//

#include "tessera/Exec/Kernels.h"

#include "llvm/ADT/StringMap.h"

#include <mutex>

namespace tessera {
namespace exec {

namespace {

llvm::StringMap<Kernel> &table() {
  static llvm::StringMap<Kernel> kernels;
  return kernels;
}

std::mutex &tableMutex() {
  static std::mutex m;
  return m;
}

/// Every function of the core runtime's Ops.h, under its own name (the
/// callee of the tsr op of the same name).
void registerCoreKernels() {
  auto add = [](llvm::StringRef name, Kernel k) {
    table().try_emplace(name, std::move(k));
  };
  add("neg", kernelOf(&rt::neg));
  add("exp", kernelOf(&rt::exp));
  add("log", kernelOf(&rt::log));
  add("sqrt", kernelOf(&rt::sqrt));
  add("rsqrt", kernelOf(&rt::rsqrt));
  add("erf", kernelOf(&rt::erf));
  add("tanh", kernelOf(&rt::tanh));
  add("relu", kernelOf(&rt::relu));
  add("sigmoid", kernelOf(&rt::sigmoid));
  add("sin", kernelOf(&rt::sin));
  add("cos", kernelOf(&rt::cos));
  add("gelu", kernelOf(&rt::gelu));
  add("add", kernelOf(&rt::add));
  add("sub", kernelOf(&rt::sub));
  add("mul", kernelOf(&rt::mul));
  add("div", kernelOf(&rt::div));
  add("pow", kernelOf(&rt::pow));
  add("compare", kernelOf(&rt::compare));
  add("where", kernelOf(&rt::where));
  add("cast", kernelOf(&rt::cast));
  add("dropout", kernelOf(&rt::dropout));
  add("matmul", kernelOf(&rt::matmul));
  add("softmax", kernelOf(&rt::softmax));
  add("log_softmax", kernelOf(&rt::log_softmax));
  add("layer_norm", kernelOf(&rt::layer_norm));
  add("reduce_sum", kernelOf(&rt::reduce_sum));
  add("reduce_mean", kernelOf(&rt::reduce_mean));
  add("reduce_max", kernelOf(&rt::reduce_max));
  add("reshape", kernelOf(&rt::reshape));
  add("transpose", kernelOf(&rt::transpose));
  add("broadcast_to", kernelOf(&rt::broadcast_to));
  add("slice", kernelOf(&rt::slice));
  add("split", kernelOf(&rt::split));
  add("concat", kernelOf(&rt::concat));
  add("gather", kernelOf(&rt::gather));
  add("softmax_cross_entropy", kernelOf(&rt::softmax_cross_entropy));
  add("softmax_grad", kernelOf(&rt::softmax_grad));
  add("log_softmax_grad", kernelOf(&rt::log_softmax_grad));
  add("gelu_grad", kernelOf(&rt::gelu_grad));
  add("layer_norm_grad", kernelOf(&rt::layer_norm_grad));
  add("softmax_cross_entropy_grad", kernelOf(&rt::softmax_cross_entropy_grad));
  add("embedding_grad", kernelOf(&rt::embedding_grad));
  add("sgd_update", kernelOf(&rt::sgd_update));
  add("adamw_update", kernelOf(&rt::adamw_update));
}

void ensureCoreKernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::lock_guard<std::mutex> lock(tableMutex());
    registerCoreKernels();
  });
}

} // namespace

void registerKernel(llvm::StringRef callee, Kernel kernel) {
  ensureCoreKernels();
  std::lock_guard<std::mutex> lock(tableMutex());
  table()[callee] = std::move(kernel);
}

const Kernel *lookupKernel(llvm::StringRef callee) {
  ensureCoreKernels();
  std::lock_guard<std::mutex> lock(tableMutex());
  auto it = table().find(callee);
  return it == table().end() ? nullptr : &it->second;
}

rt::Compare parseEnum(const std::string &name, rt::Compare *) {
  static const std::pair<const char *, rt::Compare> cases[] = {
      {"eq", rt::Compare::eq}, {"ne", rt::Compare::ne},
      {"lt", rt::Compare::lt}, {"le", rt::Compare::le},
      {"gt", rt::Compare::gt}, {"ge", rt::Compare::ge}};
  for (auto [text, value] : cases)
    if (name == text)
      return value;
  throw rt::Error("unknown comparison '" + name + "'");
}

rt::Reduction parseEnum(const std::string &name, rt::Reduction *) {
  static const std::pair<const char *, rt::Reduction> cases[] = {
      {"mean", rt::Reduction::mean},
      {"sum", rt::Reduction::sum},
      {"none", rt::Reduction::none}};
  for (auto [text, value] : cases)
    if (name == text)
      return value;
  throw rt::Error("unknown reduction '" + name + "'");
}

} // namespace exec
} // namespace tessera
