//===- RuntimeCallInterface.h - the runtime call of an op -------*- C++ -*-===//
//
// A RuntimeCall describes the call of a runtime function that computes one
// op: the callee, then each argument as where it comes from. The emitted
// program (lib/Conversion/RuntimeCall) and the interpreter (lib/Exec) read
// the same description, so an op's call is written once, in its TableGen
// record:
//
//   let rtArgs = [{ .operands().flag(getApproximate() ==
//   GeluApproximation::tanh) }];
//
// becomes `RuntimeCall(op, "gelu").operands().flag(...)`, emitted as
// `tessera::rt::gelu(x, true)`.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_INTERFACES_RUNTIMECALLINTERFACE_H
#define TESSERA_INTERFACES_RUNTIMECALLINTERFACE_H

#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace tessera {

/// One argument of a runtime call.
struct RuntimeArg {
  enum class Kind {
    Operand,     ///< the op's operand `index`, a tensor
    NoTensor,    ///< an absent optional operand: an undefined tensor
    OperandList, ///< operands [index, index + count) as std::vector<Tensor>
    Int,         ///< int64_t `integer`
    Float,       ///< double `real`
    Bool,        ///< bool `flag`
    Ints,        ///< std::vector<int64_t> `integers`
    Shape,       ///< the shape of `type` (a ranked tensor), as rt::Shape
    DType,       ///< the element type of `type`, as rt::DType
    Enum,        ///< the value `text` of the runtime enum `enumType`
  };
  Kind kind;
  int64_t index = 0, count = 0;
  int64_t integer = 0;
  double real = 0;
  bool flag = false;
  llvm::SmallVector<int64_t> integers;
  mlir::Type type;
  std::string enumType, text;
  /// Int and Ints: the name of a RankVariantOpInterface attribute whose
  /// values may differ between the ranks that share one program; "" if
  /// the value is the same for all.
  std::string rankVariant;
};

/// How the callee returns the op's results.
enum class RuntimeResults {
  None,   ///< void: the op has no results
  Tensor, ///< one Tensor
  Tuple,  ///< std::tuple of one Tensor per result
  List,   ///< std::vector<Tensor> of one Tensor per result
};

class RuntimeCall {
public:
  /// The call of `tessera::rt::<callee>` for `op`. Results default to one
  /// Tensor, a tuple for several results, none for none. An empty callee
  /// means that the op is not a call (the frame materialises it).
  RuntimeCall(mlir::Operation *op, llvm::StringRef callee);

  // Arguments, in call order.
  /// Every operand, in order.
  RuntimeCall &operands();
  /// The operand holding `v`, or an undefined Tensor when `v` is null (an
  /// absent optional operand).
  RuntimeCall &tensor(mlir::Value v);
  /// Operand number `i`.
  RuntimeCall &operand(unsigned i);
  /// The operands from `first` on, as one std::vector<Tensor>.
  RuntimeCall &operandList(unsigned first = 0);
  RuntimeCall &i64(int64_t v, llvm::StringRef rankVariant = "");
  RuntimeCall &f64(double v);
  RuntimeCall &f64(const llvm::APFloat &v);
  RuntimeCall &flag(bool v);
  RuntimeCall &ints(llvm::ArrayRef<int64_t> v,
                    llvm::StringRef rankVariant = "");
  RuntimeCall &shape(mlir::Type tensorType);
  RuntimeCall &dtype(mlir::Type tensorType);
  /// `tessera::rt::<enumType>::<value>`.
  RuntimeCall &enumValue(llvm::StringRef enumType, llvm::StringRef value);

  // Results.
  RuntimeCall &returnsTuple();
  RuntimeCall &returnsList();

  /// A header to include for the callee (an extension's runtime API);
  /// empty for the core runtime (tessera/runtime/Runtime.h).
  RuntimeCall &header(llvm::StringRef path);

  bool isCall() const { return !calleeName.empty(); }
  llvm::StringRef callee() const { return calleeName; }
  llvm::StringRef headerPath() const { return headerName; }
  llvm::ArrayRef<RuntimeArg> args() const { return arguments; }
  RuntimeResults results() const { return resultKind; }
  mlir::Operation *op() const { return operation; }

private:
  mlir::Operation *operation;
  std::string calleeName, headerName;
  llvm::SmallVector<RuntimeArg> arguments;
  RuntimeResults resultKind;
};

} // namespace tessera

#include "tessera/Interfaces/RuntimeCallInterface.h.inc"

#endif // TESSERA_INTERFACES_RUNTIMECALLINTERFACE_H
