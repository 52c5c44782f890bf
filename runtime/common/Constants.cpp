//===- Constants.cpp - the program's constants file -----------------------===//
//
// Large constants (a causal mask of T x T, lookup tables) are not written
// into the emitted C++ as literals, which made GPT-2's programs megabytes
// of source and their compilation minutes long: the compiler puts them in
// one safetensors file beside the programs, and the code reads each with
// constant(key). Backend-independent: the table holds tensors on
// defaultDevice().
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Files.h"

#include <map>
#include <mutex>
#include <string>

namespace tessera {
namespace rt {

namespace {
struct ConstantTable {
  std::mutex mutex;
  std::string path;
  std::map<std::string, Tensor> tensors;
};
ConstantTable &table() {
  static ConstantTable t;
  return t;
}
} // namespace

void loadConstants(const std::string &path) {
  std::map<std::string, Tensor> tensors;
  for (auto &[name, tensor] : readSafetensors(path))
    tensors[name] = toDevice(tensor);
  ConstantTable &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.path = path;
  t.tensors = std::move(tensors);
}

Tensor constant(const std::string &key) {
  ConstantTable &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.tensors.find(key);
  if (it == t.tensors.end())
    throw Error("the program reads constant '" + key + "', which is not in " +
                (t.path.empty() ? std::string("any loaded constants file")
                                : "'" + t.path + "'"));
  // Each use gets its own storage, as a literal did.
  return clone(it->second);
}

} // namespace rt
} // namespace tessera
