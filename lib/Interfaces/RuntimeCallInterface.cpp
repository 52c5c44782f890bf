//===- RuntimeCallInterface.cpp - the runtime call of an op ---------------===//

#include "tessera/Interfaces/RuntimeCallInterface.h"

#include "mlir/IR/Operation.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;

namespace tessera {

#include "tessera/Interfaces/RuntimeCallInterface.cpp.inc"

RuntimeCall::RuntimeCall(Operation *op, StringRef callee)
    : operation(op), calleeName(callee.str()) {
  unsigned n = op->getNumResults();
  resultKind = n == 0   ? RuntimeResults::None
               : n == 1 ? RuntimeResults::Tensor
                        : RuntimeResults::Tuple;
}

RuntimeCall &RuntimeCall::operands() {
  for (unsigned i = 0, e = operation->getNumOperands(); i < e; ++i)
    operand(i);
  return *this;
}

RuntimeCall &RuntimeCall::operand(unsigned i) {
  assert(i < operation->getNumOperands() && "operand index out of range");
  RuntimeArg a{RuntimeArg::Kind::Operand};
  a.index = i;
  arguments.push_back(std::move(a));
  return *this;
}

RuntimeCall &RuntimeCall::tensor(Value v) {
  if (!v) {
    arguments.push_back(RuntimeArg{RuntimeArg::Kind::NoTensor});
    return *this;
  }
  for (OpOperand &use : operation->getOpOperands())
    if (use.get() == v)
      return operand(use.getOperandNumber());
  // A mistake in the op's record, not in the input: stop with its name.
  llvm::report_fatal_error(llvm::Twine("RuntimeCall::tensor: the value is "
                                       "not an operand of '") +
                           operation->getName().getStringRef() + "'");
}

RuntimeCall &RuntimeCall::operandList(unsigned first) {
  RuntimeArg a{RuntimeArg::Kind::OperandList};
  a.index = first;
  a.count = int64_t(operation->getNumOperands()) - first;
  arguments.push_back(std::move(a));
  return *this;
}

RuntimeCall &RuntimeCall::i64(int64_t v, StringRef rankVariant) {
  RuntimeArg a{RuntimeArg::Kind::Int};
  a.integer = v;
  a.rankVariant = rankVariant.str();
  arguments.push_back(std::move(a));
  return *this;
}

RuntimeCall &RuntimeCall::f64(double v) {
  RuntimeArg a{RuntimeArg::Kind::Float};
  a.real = v;
  arguments.push_back(std::move(a));
  return *this;
}

RuntimeCall &RuntimeCall::f64(const APFloat &v) {
  return f64(v.convertToDouble());
}

RuntimeCall &RuntimeCall::flag(bool v) {
  RuntimeArg a{RuntimeArg::Kind::Bool};
  a.flag = v;
  arguments.push_back(std::move(a));
  return *this;
}

RuntimeCall &RuntimeCall::ints(ArrayRef<int64_t> v, StringRef rankVariant) {
  RuntimeArg a{RuntimeArg::Kind::Ints};
  a.integers.assign(v.begin(), v.end());
  a.rankVariant = rankVariant.str();
  arguments.push_back(std::move(a));
  return *this;
}

RuntimeCall &RuntimeCall::shape(Type tensorType) {
  RuntimeArg a{RuntimeArg::Kind::Shape};
  a.type = tensorType;
  arguments.push_back(std::move(a));
  return *this;
}

RuntimeCall &RuntimeCall::dtype(Type tensorType) {
  RuntimeArg a{RuntimeArg::Kind::DType};
  a.type = tensorType;
  arguments.push_back(std::move(a));
  return *this;
}

RuntimeCall &RuntimeCall::enumValue(StringRef enumType, StringRef value) {
  RuntimeArg a{RuntimeArg::Kind::Enum};
  a.enumType = enumType.str();
  a.text = value.str();
  arguments.push_back(std::move(a));
  return *this;
}

RuntimeCall &RuntimeCall::returnsTuple() {
  resultKind = RuntimeResults::Tuple;
  return *this;
}

RuntimeCall &RuntimeCall::returnsList() {
  resultKind = RuntimeResults::List;
  return *this;
}

RuntimeCall &RuntimeCall::header(StringRef path) {
  headerName = path.str();
  return *this;
}

} // namespace tessera
