//===- Kernels.h - the interpreter's runtime functions, by name -*- C++ -*-===//
//
// The interpreter makes the call that an op's RuntimeCall describes
// (tessera/Interfaces/RuntimeCallInterface.h), so it needs the runtime
// function behind each callee name: this table. The core runtime's
// functions (Ops.h) are registered on first use; an extension registers its
// own CPU kernels, under the same names its ops' records use, with
//
//   exec::registerKernel("llm::rms_norm", exec::kernelOf(&rt::llm::rms_norm));
//
// kernelOf adapts a plain C++ function: each parameter is read from the
// call's argument of the same position (Tensor, std::vector<Tensor>,
// int64_t, double, bool, std::vector<int64_t> / Shape, DType, or a runtime
// enum given by name), and the result (Tensor, std::tuple of Tensors,
// std::vector<Tensor> or void) becomes the op's results.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_EXEC_KERNELS_H
#define TESSERA_EXEC_KERNELS_H

#include "tessera/runtime/Runtime.h"

#include "llvm/ADT/StringRef.h"

#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace tessera {
namespace exec {

/// One argument of a runtime call, as the interpreter passes it. An enum is
/// its case name ("lt", "mean").
using CallValue =
    std::variant<rt::Tensor, std::vector<rt::Tensor>, int64_t, double, bool,
                 std::vector<int64_t>, rt::DType, std::string>;
using Kernel =
    std::function<std::vector<rt::Tensor>(const std::vector<CallValue> &)>;

/// Registers (or replaces) the kernel of `callee` (the name without
/// `tessera::rt::`).
void registerKernel(llvm::StringRef callee, Kernel kernel);
/// The kernel of `callee`, or null when none is registered.
const Kernel *lookupKernel(llvm::StringRef callee);

// The runtime enums that calls pass by name.
rt::Compare parseEnum(const std::string &name, rt::Compare *);
rt::Reduction parseEnum(const std::string &name, rt::Reduction *);

namespace detail {

template <typename T> T argument(const CallValue &v) {
  using D = std::decay_t<T>;
  if constexpr (std::is_enum_v<D> && !std::is_same_v<D, rt::DType>)
    return parseEnum(std::get<std::string>(v), static_cast<D *>(nullptr));
  else
    return std::get<D>(v);
}

inline std::vector<rt::Tensor> results(rt::Tensor t) { return {std::move(t)}; }
inline std::vector<rt::Tensor> results(std::vector<rt::Tensor> t) { return t; }
template <typename... T> std::vector<rt::Tensor> results(std::tuple<T...> t) {
  return std::apply(
      [](auto &...x) { return std::vector<rt::Tensor>{std::move(x)...}; }, t);
}

template <typename R, typename... P, size_t... I>
std::vector<rt::Tensor> invoke(R (*fn)(P...),
                               const std::vector<CallValue> &args,
                               std::index_sequence<I...>) {
  if constexpr (std::is_void_v<R>) {
    fn(argument<P>(args[I])...);
    return {};
  } else {
    return results(fn(argument<P>(args[I])...));
  }
}

} // namespace detail

/// The kernel that calls `fn` with the call's arguments in order.
template <typename R, typename... P> Kernel kernelOf(R (*fn)(P...)) {
  return [fn](const std::vector<CallValue> &args) {
    if (args.size() != sizeof...(P))
      throw rt::Error("the call passes " + std::to_string(args.size()) +
                      " arguments to a kernel of " +
                      std::to_string(sizeof...(P)));
    try {
      return detail::invoke(fn, args, std::index_sequence_for<P...>{});
    } catch (const std::bad_variant_access &) {
      throw rt::Error("the call's arguments do not match the kernel's "
                      "parameter types");
    }
  };
}

} // namespace exec
} // namespace tessera

#endif // TESSERA_EXEC_KERNELS_H
