//===- Interpreter.cpp - run tsr functions on the CPU runtime -------------===//
//
// One runtime call per op, the call its record describes
// (RuntimeCallOpInterface), as the emitted C++ makes it (see
// lib/Conversion/RuntimeCallToEmitC), but dispatched at run time through
// the kernel table (Kernels.h). This is a plain C++ target: the runtime
// reports errors as exceptions, caught here.
//
//===----------------------------------------------------------------------===//

#include "tessera/Exec/Interpreter.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Exec/Kernels.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <exception>

using namespace mlir;
using namespace tessera;
using namespace tessera::tsr;

namespace tessera {
namespace exec {

bool toRuntimeDType(Type t, rt::DType &dtype) {
  if (t.isF32())
    dtype = rt::DType::f32;
  else if (t.isF64())
    dtype = rt::DType::f64;
  else if (t.isInteger(64))
    dtype = rt::DType::i64;
  else if (t.isInteger(32))
    dtype = rt::DType::i32;
  else if (t.isInteger(1))
    dtype = rt::DType::i1;
  else if (t.isBF16())
    dtype = rt::DType::bf16;
  else
    return false;
  return true;
}

namespace {

std::vector<int64_t> vec(ArrayRef<int64_t> a) { return {a.begin(), a.end()}; }

rt::Shape shapeOf(Type t) { return vec(cast<RankedTensorType>(t).getShape()); }

rt::DType dtypeOf(Type t) {
  rt::DType d = rt::DType::f32;
  if (!toRuntimeDType(cast<RankedTensorType>(t).getElementType(), d))
    throw rt::Error("the CPU runtime has no " + [&] {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << cast<RankedTensorType>(t).getElementType();
      return s;
    }() + " tensors");
  return d;
}

rt::Tensor constant(ConstantOp op) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense)
    throw rt::Error("only dense constants are supported");
  rt::Shape shape = shapeOf(op.getType());
  rt::DType dtype = dtypeOf(op.getType());
  auto value = [](Attribute a) -> double {
    if (auto f = dyn_cast<FloatAttr>(a))
      return f.getValueAsDouble();
    auto i = cast<IntegerAttr>(a);
    if (i.getType().isInteger(1))
      return i.getValue().getBoolValue() ? 1 : 0;
    return double(i.getValue().getSExtValue());
  };
  if (dense.isSplat())
    return rt::full(shape, dtype, value(dense.getSplatValue<Attribute>()));
  std::vector<double> values;
  values.reserve(dense.getNumElements());
  for (Attribute a : dense.getValues<Attribute>())
    values.push_back(value(a));
  return rt::fromValues(shape, dtype, values);
}

class Runner {
public:
  llvm::DenseMap<Value, rt::Tensor> env;

  const rt::Tensor &get(Value v) {
    auto it = env.find(v);
    if (it == env.end())
      throw rt::Error("internal: value used before definition");
    return it->second;
  }

  void set(Operation *op, std::vector<rt::Tensor> values) {
    for (auto [r, t] : llvm::zip(op->getResults(), values))
      env[r] = t;
  }

  void run(Operation *op) {
    if (auto c = dyn_cast<ConstantOp>(op)) {
      set(op, {constant(c)});
      return;
    }
    auto iface = dyn_cast<RuntimeCallOpInterface>(op);
    if (!iface || !iface.getRuntimeCall().isCall())
      throw rt::Error("no interpreter rule for '" +
                      op->getName().getStringRef().str() + "'");
    RuntimeCall call = iface.getRuntimeCall();
    const Kernel *kernel = lookupKernel(call.callee());
    if (!kernel)
      throw rt::Error("no kernel registered for tessera::rt::" +
                      call.callee().str());
    std::vector<CallValue> args;
    for (const RuntimeArg &a : call.args()) {
      switch (a.kind) {
      case RuntimeArg::Kind::Operand:
        args.push_back(get(op->getOperand(a.index)));
        break;
      case RuntimeArg::Kind::NoTensor:
        args.push_back(rt::Tensor());
        break;
      case RuntimeArg::Kind::OperandList: {
        std::vector<rt::Tensor> list;
        for (int64_t i = 0; i < a.count; ++i)
          list.push_back(get(op->getOperand(a.index + i)));
        args.push_back(std::move(list));
        break;
      }
      case RuntimeArg::Kind::Int:
        args.push_back(a.integer);
        break;
      case RuntimeArg::Kind::Float:
        args.push_back(a.real);
        break;
      case RuntimeArg::Kind::Bool:
        args.push_back(a.flag);
        break;
      case RuntimeArg::Kind::Ints:
        args.push_back(vec(a.integers));
        break;
      case RuntimeArg::Kind::Shape:
        args.push_back(shapeOf(a.type));
        break;
      case RuntimeArg::Kind::DType:
        args.push_back(dtypeOf(a.type));
        break;
      case RuntimeArg::Kind::Enum:
        args.push_back(a.text);
        break;
      }
    }
    std::vector<rt::Tensor> results = (*kernel)(args);
    if (results.size() != op->getNumResults())
      throw rt::Error("tessera::rt::" + call.callee().str() + " returned " +
                      std::to_string(results.size()) + " tensors for " +
                      std::to_string(op->getNumResults()) + " results");
    set(op, std::move(results));
  }
};

} // namespace

bool interpret(func::FuncOp f, const std::vector<rt::Tensor> &args,
               std::vector<rt::Tensor> &results, std::string &error) {
  if (f.isExternal() || !f.getBody().hasOneBlock()) {
    error = "function '" + f.getSymName().str() + "' has no single-block body";
    return false;
  }
  if (args.size() != f.getNumArguments()) {
    error = "function '" + f.getSymName().str() + "' takes " +
            std::to_string(f.getNumArguments()) + " arguments, given " +
            std::to_string(args.size());
    return false;
  }
  Runner runner;
  Operation *current = nullptr;
  try {
    for (auto [i, arg] : llvm::enumerate(f.getArguments())) {
      rt::Shape expected = shapeOf(arg.getType());
      if (args[i].shape() != expected ||
          args[i].dtype() != dtypeOf(arg.getType()))
        throw rt::Error("argument " + std::to_string(i) + " has shape " +
                        rt::shapeToString(args[i].shape()) + " (" +
                        rt::dtypeName(args[i].dtype()) +
                        "), the function wants " + rt::shapeToString(expected) +
                        " (" + rt::dtypeName(dtypeOf(arg.getType())) + ")");
      runner.env[arg] = args[i];
    }
    for (Operation &op : f.getBody().front()) {
      current = &op;
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        results.clear();
        for (Value v : ret.getOperands())
          results.push_back(runner.get(v));
        return true;
      }
      runner.run(&op);
    }
  } catch (const std::exception &e) {
    std::string where;
    if (current) {
      llvm::raw_string_ostream os(where);
      os << "'" << current->getName() << "' at " << current->getLoc() << ": ";
    }
    error = where + e.what();
    return false;
  }
  error = "function '" + f.getSymName().str() + "' has no return";
  return false;
}

} // namespace exec
} // namespace tessera
