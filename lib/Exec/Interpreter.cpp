//===- Interpreter.cpp - run tsr functions on the CPU runtime -------------===//
//
// One runtime call per op, as the emitted C++ makes them (see
// lib/Conversion/TsrToEmitC), but dispatched at run time. This is a plain
// C++ target: the runtime reports errors as exceptions, caught here.
//
//===----------------------------------------------------------------------===//

#include "tessera/Exec/Interpreter.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
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

rt::Reduction reduction(LossReduction r) {
  switch (r) {
  case LossReduction::mean:
    return rt::Reduction::mean;
  case LossReduction::sum:
    return rt::Reduction::sum;
  case LossReduction::none:
    return rt::Reduction::none;
  }
  return rt::Reduction::mean;
}

rt::Compare predicate(ComparePredicate p) {
  switch (p) {
  case ComparePredicate::eq:
    return rt::Compare::eq;
  case ComparePredicate::ne:
    return rt::Compare::ne;
  case ComparePredicate::lt:
    return rt::Compare::lt;
  case ComparePredicate::le:
    return rt::Compare::le;
  case ComparePredicate::gt:
    return rt::Compare::gt;
  case ComparePredicate::ge:
    return rt::Compare::ge;
  }
  return rt::Compare::eq;
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
  void set(Operation *op, rt::Tensor t) { env[op->getResult(0)] = t; }
  template <typename A, typename B>
  void set(Operation *op, std::tuple<A, B> t) {
    set(op, std::vector<rt::Tensor>{std::get<0>(t), std::get<1>(t)});
  }
  template <typename A, typename B, typename C>
  void set(Operation *op, std::tuple<A, B, C> t) {
    set(op, std::vector<rt::Tensor>{std::get<0>(t), std::get<1>(t),
                                    std::get<2>(t)});
  }

  void run(Operation *op) {
    auto x = [&](unsigned i) -> const rt::Tensor & {
      return get(op->getOperand(i));
    };
    llvm::TypeSwitch<Operation *>(op)
        .Case([&](NegOp) { set(op, rt::neg(x(0))); })
        .Case([&](ExpOp) { set(op, rt::exp(x(0))); })
        .Case([&](LogOp) { set(op, rt::log(x(0))); })
        .Case([&](SqrtOp) { set(op, rt::sqrt(x(0))); })
        .Case([&](RsqrtOp) { set(op, rt::rsqrt(x(0))); })
        .Case([&](ErfOp) { set(op, rt::erf(x(0))); })
        .Case([&](TanhOp) { set(op, rt::tanh(x(0))); })
        .Case([&](ReluOp) { set(op, rt::relu(x(0))); })
        .Case([&](SigmoidOp) { set(op, rt::sigmoid(x(0))); })
        .Case([&](SinOp) { set(op, rt::sin(x(0))); })
        .Case([&](CosOp) { set(op, rt::cos(x(0))); })
        .Case([&](GeluOp o) {
          set(op,
              rt::gelu(x(0), o.getApproximate() == GeluApproximation::tanh));
        })
        .Case([&](AddOp) { set(op, rt::add(x(0), x(1))); })
        .Case([&](SubOp) { set(op, rt::sub(x(0), x(1))); })
        .Case([&](MulOp) { set(op, rt::mul(x(0), x(1))); })
        .Case([&](DivOp) { set(op, rt::div(x(0), x(1))); })
        .Case([&](PowOp) { set(op, rt::pow(x(0), x(1))); })
        .Case([&](CompareOp o) {
          set(op, rt::compare(predicate(o.getPredicate()), x(0), x(1)));
        })
        .Case([&](WhereOp) { set(op, rt::where(x(0), x(1), x(2))); })
        .Case([&](CastOp o) { set(op, rt::cast(x(0), dtypeOf(o.getType()))); })
        .Case([&](ConstantOp o) { set(op, constant(o)); })
        .Case([&](DropoutOp o) {
          set(op, rt::dropout(x(0), o.getRatio().convertToDouble(),
                              int64_t(o.getSeed())));
        })
        .Case([&](MatmulOp) { set(op, rt::matmul(x(0), x(1))); })
        .Case([&](SoftmaxOp o) { set(op, rt::softmax(x(0), o.getAxis())); })
        .Case([&](LogSoftmaxOp o) {
          set(op, rt::log_softmax(x(0), o.getAxis()));
        })
        .Case([&](LayerNormOp o) {
          rt::Tensor bias = o.getBias() ? get(o.getBias()) : rt::Tensor();
          set(op, rt::layer_norm(x(0), x(1), bias, o.getAxis(),
                                 o.getEpsilon().convertToDouble()));
        })
        .Case([&](ReduceSumOp o) {
          set(op, rt::reduce_sum(x(0), vec(o.getAxes()), o.getKeepdims()));
        })
        .Case([&](ReduceMeanOp o) {
          set(op, rt::reduce_mean(x(0), vec(o.getAxes()), o.getKeepdims()));
        })
        .Case([&](ReduceMaxOp o) {
          set(op, rt::reduce_max(x(0), vec(o.getAxes()), o.getKeepdims()));
        })
        .Case([&](ReshapeOp o) {
          set(op, rt::reshape(x(0), shapeOf(o.getType())));
        })
        .Case([&](TransposeOp o) {
          set(op, rt::transpose(x(0), vec(o.getPerm())));
        })
        .Case([&](BroadcastToOp o) {
          set(op, rt::broadcast_to(x(0), shapeOf(o.getType())));
        })
        .Case([&](SliceOp o) {
          set(op, rt::slice(x(0), vec(o.getStarts()), vec(o.getLimits()),
                            vec(o.getSteps())));
        })
        .Case([&](SplitOp o) {
          set(op, rt::split(x(0), o.getAxis(), vec(o.getSizes())));
        })
        .Case([&](ConcatOp o) {
          std::vector<rt::Tensor> inputs;
          for (Value v : o.getInputs())
            inputs.push_back(get(v));
          set(op, rt::concat(inputs, o.getAxis()));
        })
        .Case([&](GatherOp o) { set(op, rt::gather(x(0), x(1), o.getAxis())); })
        .Case([&](SoftmaxCrossEntropyOp o) {
          set(op, rt::softmax_cross_entropy(x(0), x(1), o.getIgnoreIndex(),
                                            reduction(o.getReduction())));
        })
        .Case([&](SoftmaxGradOp o) {
          set(op, rt::softmax_grad(x(0), x(1), o.getAxis()));
        })
        .Case([&](LogSoftmaxGradOp o) {
          set(op, rt::log_softmax_grad(x(0), x(1), o.getAxis()));
        })
        .Case([&](GeluGradOp o) {
          set(op, rt::gelu_grad(x(0), x(1),
                                o.getApproximate() == GeluApproximation::tanh));
        })
        .Case([&](LayerNormGradOp o) {
          set(op,
              rt::layer_norm_grad(x(0), x(1), x(2), x(3), x(4), o.getAxis()));
        })
        .Case([&](SoftmaxCrossEntropyGradOp o) {
          set(op, rt::softmax_cross_entropy_grad(x(0), x(1), x(2),
                                                 o.getIgnoreIndex(),
                                                 reduction(o.getReduction())));
        })
        .Case([&](EmbeddingGradOp o) {
          set(op, rt::embedding_grad(x(0), x(1), shapeOf(o.getType())));
        })
        .Case([&](SgdUpdateOp) {
          set(op, rt::sgd_update(x(0), x(1), x(2), x(3)));
        })
        .Case([&](AdamwUpdateOp) {
          set(op, rt::adamw_update(x(0), x(1), x(2), x(3), x(4), x(5), x(6),
                                   x(7), x(8), x(9)));
        })
        .Default([&](Operation *o) {
          throw rt::Error("no interpreter rule for '" +
                          o->getName().getStringRef().str() + "'");
        });
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
