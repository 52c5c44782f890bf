//===- ConstantFolder.cpp - evaluate ONNX nodes on constants --------------===//
//
// A small reference evaluator for the ops torch uses to compute shapes. It
// follows the ONNX operator specs (negative axes and indices, Slice
// clamping, Reshape's 0 and -1, numpy broadcasting) and works on any dtype
// through Tensor's int64/double accessors.
//
//===----------------------------------------------------------------------===//

#include "tessera/Target/ONNX/ConstantFolder.h"
#include "tessera/Support/Broadcast.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <type_traits>

namespace tessera::onnx_import {

bool broadcastShapes(const std::vector<int64_t> &a,
                     const std::vector<int64_t> &b, std::vector<int64_t> &out) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

namespace {

std::string shapeStr(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

/// The element count, saturated at INT64_MAX: shapes come from the file,
/// and every caller compares the count with a limit.
int64_t product(const std::vector<int64_t> &s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n))
      return INT64_MAX;
  return n;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    st[i] = st[i + 1] * shape[i + 1];
  return st;
}

using support::broadcastIndex;

int64_t intAttr(const Node &n, const char *name, int64_t dflt) {
  const Attribute *a = n.getAttribute(name);
  return a && a->kind == Attribute::Int ? a->i : dflt;
}

bool normalizeAxis(int64_t &axis, int64_t rank, std::string &error) {
  if (axis < -rank || axis >= rank) {
    error = "axis " + std::to_string(axis) + " is out of range for rank " +
            std::to_string(rank);
    return false;
  }
  if (axis < 0)
    axis += rank;
  return true;
}

/// normalizeAxis, then marks the axis in `seen`; an axis seen before is an
/// error ("axis <a> <twice>").
bool markAxis(int64_t &axis, std::vector<bool> &seen, const char *twice,
              std::string &error) {
  if (!normalizeAxis(axis, static_cast<int64_t>(seen.size()), error))
    return false;
  if (seen[axis]) {
    error = "axis " + std::to_string(axis) + " " + twice;
    return false;
  }
  seen[axis] = true;
  return true;
}

/// Axes from the opset-13+ input or the older attribute.
bool axesOf(const Node &n, const std::vector<const Tensor *> &in,
            size_t inputIdx, std::vector<int64_t> &axes, bool &present) {
  present = false;
  if (in.size() > inputIdx && in[inputIdx]) {
    axes = in[inputIdx]->toInts();
    present = true;
  } else if (const Attribute *a = n.getAttribute("axes")) {
    axes = a->ints;
    present = true;
  }
  return true;
}

bool isFloatLike(DType t) { return isFloatDType(t); }

/// `x op y` for ONNX's arithmetic, comparison and (on integers) logical
/// operators, computed in T; nullopt for an operator T does not fold.
/// Comparisons give 0 or 1; integer division truncates, as ONNX runtimes do.
template <typename T>
std::optional<T> applyBinary(const std::string &op, T x, T y) {
  if (op == "Add")
    return x + y;
  if (op == "Sub")
    return x - y;
  if (op == "Mul")
    return x * y;
  if (op == "Div")
    return x / y;
  if (op == "Equal")
    return T(x == y);
  if (op == "Less")
    return T(x < y);
  if (op == "Greater")
    return T(x > y);
  if (op == "LessOrEqual")
    return T(x <= y);
  if (op == "GreaterOrEqual")
    return T(x >= y);
  if constexpr (std::is_integral_v<T>) {
    if (op == "And")
      return T(x && y);
    if (op == "Or")
      return T(x || y);
    if (op == "Xor")
      return T((x != 0) != (y != 0));
  }
  return std::nullopt;
}

/// What a fold rule sees: the node, its opset, its inputs (null where an
/// optional input is omitted) and the largest result it may build.
struct FoldCall {
  const Node &n;
  int64_t opset;
  const std::vector<const Tensor *> &in;
  int64_t maxElements;
};

using FoldFn = FoldStatus (*)(const FoldCall &, std::vector<Tensor> &,
                              std::string &);

FoldStatus foldBinary(const FoldCall &c, std::vector<Tensor> &outs,
                      std::string &error) {
  const std::vector<const Tensor *> &in = c.in;
  const std::string &op = c.n.opType;
  const Tensor &a = *in[0], &b = *in[1];
  std::vector<int64_t> shape;
  if (!broadcastShapes(a.shape, b.shape, shape)) {
    error = "shapes " + shapeStr(a.shape) + " and " + shapeStr(b.shape) +
            " do not broadcast";
    return FoldStatus::Error;
  }
  if (product(shape) > c.maxElements)
    return FoldStatus::NotFoldable;
  bool compare = op == "Equal" || op == "Less" || op == "Greater" ||
                 op == "LessOrEqual" || op == "GreaterOrEqual";
  bool logical = op == "And" || op == "Or" || op == "Xor";
  Tensor r = Tensor::zeros(compare || logical ? DType::Bool : a.dtype, shape);
  bool fl = isFloatLike(a.dtype) || isFloatLike(b.dtype);
  for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
    int64_t ia = broadcastIndex(i, shape, a.shape);
    int64_t ib = broadcastIndex(i, shape, b.shape);
    if (fl) {
      std::optional<double> v =
          applyBinary<double>(op, a.getDouble(ia), b.getDouble(ib));
      if (!v)
        return FoldStatus::NotFoldable;
      if (compare)
        r.setInt(i, *v != 0);
      else
        r.setDouble(i, *v);
      continue;
    }
    int64_t y = b.getInt(ib);
    if (op == "Div" && y == 0) {
      error = "integer division by zero";
      return FoldStatus::Error;
    }
    std::optional<int64_t> v = applyBinary<int64_t>(op, a.getInt(ia), y);
    if (!v)
      return FoldStatus::NotFoldable;
    r.setInt(i, *v);
  }
  outs.push_back(std::move(r));
  return FoldStatus::Folded;
}

/// Copies `src` into a new tensor of `shape` (same element count).
Tensor reshaped(const Tensor &src, std::vector<int64_t> shape) {
  Tensor r = src;
  r.shape = std::move(shape);
  return r;
}

FoldStatus foldSlice(const FoldCall &c, std::vector<Tensor> &outs,
                     std::string &error) {
  const Node &n = c.n;
  int64_t opset = c.opset;
  const std::vector<const Tensor *> &in = c.in;
  const Tensor &x = *in[0];
  int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset >= 10) {
    if (in.size() < 3 || !in[1] || !in[2])
      return FoldStatus::NotFoldable;
    starts = in[1]->toInts();
    ends = in[2]->toInts();
    if (in.size() > 3 && in[3])
      axes = in[3]->toInts();
    if (in.size() > 4 && in[4])
      steps = in[4]->toInts();
  } else {
    const Attribute *s = n.getAttribute("starts"), *e = n.getAttribute("ends");
    if (!s || !e)
      return FoldStatus::NotFoldable;
    starts = s->ints;
    ends = e->ints;
    if (const Attribute *a = n.getAttribute("axes"))
      axes = a->ints;
  }
  std::vector<int64_t> st, sp, cnt;
  if (!sliceBounds(x.shape, starts, ends, axes, steps, st, sp, cnt, error))
    return FoldStatus::Error;
  Tensor r = Tensor::zeros(x.dtype, cnt);
  std::vector<int64_t> inStr = stridesOf(x.shape);
  size_t es = dtypeSize(x.dtype);
  for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
    int64_t flat = i, src = 0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      int64_t c = flat % cnt[d];
      flat /= cnt[d];
      src += (st[d] + c * sp[d]) * inStr[d];
    }
    std::copy_n(x.data.data() + src * es, es, r.data.data() + i * es);
  }
  outs.push_back(std::move(r));
  return FoldStatus::Folded;
}

} // namespace

bool reshapeShape(const std::vector<int64_t> &in, std::vector<int64_t> target,
                  bool allowZero, std::vector<int64_t> &out,
                  std::string &error) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowZero) {
      if (i >= in.size()) {
        error = "shape entry 0 at position " + std::to_string(i) +
                " has no input dimension to copy";
        return false;
      }
      target[i] = in[i];
    }
    if (target[i] == -1) {
      if (infer >= 0) {
        error = "shape " + shapeStr(target) + " has more than one -1";
        return false;
      }
      infer = static_cast<int64_t>(i);
    } else if (target[i] < 0) {
      error = "shape " + shapeStr(target) + " has a negative entry";
      return false;
    } else if (__builtin_mul_overflow(known, target[i], &known)) {
      error = "shape " + shapeStr(target) + " has too many elements";
      return false;
    }
  }
  int64_t total = product(in);
  if (infer >= 0)
    target[infer] = known ? total / known : 0;
  if (product(target) != total) {
    error = "cannot reshape " + shapeStr(in) + " to " + shapeStr(target);
    return false;
  }
  out = std::move(target);
  return true;
}

bool unsqueezeShape(const std::vector<int64_t> &in,
                    const std::vector<int64_t> &axes, std::vector<int64_t> &out,
                    std::string &error) {
  int64_t rank = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> isNew(rank, false);
  for (int64_t a : axes)
    if (!markAxis(a, isNew, "appears twice", error))
      return false;
  out.clear();
  size_t k = 0;
  for (int64_t i = 0; i < rank; ++i)
    out.push_back(isNew[i] ? 1 : in[k++]);
  return true;
}

bool squeezeShape(const std::vector<int64_t> &in,
                  const std::vector<int64_t> &axes, bool axesGiven,
                  std::vector<int64_t> &out, std::string &error) {
  int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> drop(rank, false);
  for (int64_t a : axes) {
    if (!normalizeAxis(a, rank, error))
      return false;
    if (in[a] != 1) {
      error = "cannot squeeze dimension " + std::to_string(a) + " of size " +
              std::to_string(in[a]);
      return false;
    }
    drop[a] = true;
  }
  out.clear();
  for (int64_t i = 0; i < rank; ++i)
    if (!(axesGiven ? drop[i] : in[i] == 1))
      out.push_back(in[i]);
  return true;
}

bool sliceBounds(const std::vector<int64_t> &shape,
                 const std::vector<int64_t> &starts,
                 const std::vector<int64_t> &ends, std::vector<int64_t> axes,
                 std::vector<int64_t> steps, std::vector<int64_t> &first,
                 std::vector<int64_t> &step, std::vector<int64_t> &count,
                 std::string &error) {
  int64_t rank = static_cast<int64_t>(shape.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || starts.size() != axes.size() ||
      starts.size() != steps.size()) {
    error = "starts, ends, axes and steps have different lengths";
    return false;
  }
  first.assign(rank, 0);
  step.assign(rank, 1);
  count = shape;
  std::vector<bool> seen(rank, false);
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t ax = axes[k];
    if (!markAxis(ax, seen, "is sliced twice", error))
      return false;
    int64_t dim = shape[ax], sp = steps[k];
    if (sp == 0) {
      error = "slice step must not be 0";
      return false;
    }
    // Clamp as the ONNX spec: INT_MAX-style ends mean "to the end".
    int64_t s = starts[k], e = ends[k];
    if (s < 0)
      s += dim;
    if (e < 0)
      e += dim;
    if (sp > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count[ax] = e > s ? (e - s + sp - 1) / sp : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count[ax] = s > e ? (s - e - sp - 1) / (-sp) : 0;
    }
    first[ax] = s;
    step[ax] = sp;
  }
  return true;
}

namespace {

FoldStatus foldIdentity(const FoldCall &c, std::vector<Tensor> &outs,
                        std::string &) {
  outs.push_back(*c.in[0]);
  return FoldStatus::Folded;
}

FoldStatus foldSize(const FoldCall &c, std::vector<Tensor> &outs,
                    std::string &) {
  Tensor r = Tensor::zeros(DType::Int64, {});
  r.setInt(0, product(c.in[0]->shape));
  outs.push_back(std::move(r));
  return FoldStatus::Folded;
}

FoldStatus foldShape(const FoldCall &c, std::vector<Tensor> &outs,
                     std::string &) {
  const std::vector<int64_t> &s = c.in[0]->shape;
  int64_t rank = static_cast<int64_t>(s.size());
  int64_t start = intAttr(c.n, "start", 0), end = intAttr(c.n, "end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i)
    dims.push_back(s[i]);
  outs.push_back(Tensor::fromInts(dims));
  return FoldStatus::Folded;
}

FoldStatus foldCast(const FoldCall &c, std::vector<Tensor> &outs,
                    std::string &) {
  const Tensor &x = *c.in[0];
  const Attribute *to = c.n.getAttribute("to");
  if (!to)
    return FoldStatus::NotFoldable;
  DType dt = static_cast<DType>(to->i);
  if (dtypeSize(dt) == 0 || dt == DType::Complex64 || dt == DType::Complex128 ||
      x.dtype == DType::String)
    return FoldStatus::NotFoldable;
  Tensor r = Tensor::zeros(dt, x.shape);
  bool fromFloat = isFloatDType(x.dtype);
  for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
    if (fromFloat)
      r.setDouble(i, x.getDouble(i));
    else if (isFloatDType(dt))
      r.setDouble(i, static_cast<double>(x.getInt(i)));
    else
      r.setInt(i, x.getInt(i));
  }
  outs.push_back(std::move(r));
  return FoldStatus::Folded;
}

FoldStatus foldNegAbs(const FoldCall &c, std::vector<Tensor> &outs,
                      std::string &) {
  const Tensor &x = *c.in[0];
  bool neg = c.n.opType == "Neg";
  Tensor r = Tensor::zeros(x.dtype, x.shape);
  bool fl = isFloatDType(x.dtype);
  for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
    if (fl) {
      double v = x.getDouble(i);
      r.setDouble(i, neg ? -v : std::fabs(v));
    } else {
      int64_t v = x.getInt(i);
      r.setInt(i, neg ? -v : (v < 0 ? -v : v));
    }
  }
  outs.push_back(std::move(r));
  return FoldStatus::Folded;
}

FoldStatus foldMinMax(const FoldCall &c, std::vector<Tensor> &outs,
                      std::string &error) {
  bool min = c.n.opType == "Min";
  Tensor acc = *c.in[0];
  for (size_t k = 1; k < c.in.size(); ++k) {
    const Tensor &y = *c.in[k];
    std::vector<int64_t> shape;
    if (!broadcastShapes(acc.shape, y.shape, shape)) {
      error = "inputs do not broadcast";
      return FoldStatus::Error;
    }
    if (product(shape) > c.maxElements)
      return FoldStatus::NotFoldable;
    Tensor r = Tensor::zeros(acc.dtype, shape);
    bool fl = isFloatDType(acc.dtype);
    for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
      int64_t ia = broadcastIndex(i, shape, acc.shape);
      int64_t ib = broadcastIndex(i, shape, y.shape);
      if (fl) {
        double a = acc.getDouble(ia), b = y.getDouble(ib);
        r.setDouble(i, min ? std::min(a, b) : std::max(a, b));
      } else {
        int64_t a = acc.getInt(ia), b = y.getInt(ib);
        r.setInt(i, min ? std::min(a, b) : std::max(a, b));
      }
    }
    acc = std::move(r);
  }
  outs.push_back(std::move(acc));
  return FoldStatus::Folded;
}

FoldStatus foldNot(const FoldCall &c, std::vector<Tensor> &outs,
                   std::string &) {
  Tensor r = Tensor::zeros(DType::Bool, c.in[0]->shape);
  for (int64_t i = 0, e = r.numElements(); i < e; ++i)
    r.setInt(i, !c.in[0]->getInt(i));
  outs.push_back(std::move(r));
  return FoldStatus::Folded;
}

FoldStatus foldWhere(const FoldCall &c, std::vector<Tensor> &outs,
                     std::string &error) {
  const std::vector<const Tensor *> &in = c.in;
  std::vector<int64_t> s1, shape;
  if (!broadcastShapes(in[0]->shape, in[1]->shape, s1) ||
      !broadcastShapes(s1, in[2]->shape, shape)) {
    error = "condition and values do not broadcast";
    return FoldStatus::Error;
  }
  if (product(shape) > c.maxElements)
    return FoldStatus::NotFoldable;
  Tensor r = Tensor::zeros(in[1]->dtype, shape);
  size_t es = dtypeSize(r.dtype);
  for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
    bool cond = in[0]->getInt(broadcastIndex(i, shape, in[0]->shape));
    const Tensor &src = cond ? *in[1] : *in[2];
    int64_t j = broadcastIndex(i, shape, src.shape);
    std::copy_n(src.data.data() + j * es, es, r.data.data() + i * es);
  }
  outs.push_back(std::move(r));
  return FoldStatus::Folded;
}

FoldStatus foldGather(const FoldCall &c, std::vector<Tensor> &outs,
                      std::string &error) {
  const Tensor &data = *c.in[0], &idx = *c.in[1];
  int64_t rank = static_cast<int64_t>(data.shape.size());
  int64_t axis = intAttr(c.n, "axis", 0);
  if (!normalizeAxis(axis, rank, error))
    return FoldStatus::Error;
  std::vector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  if (product(shape) > c.maxElements)
    return FoldStatus::NotFoldable;
  Tensor r = Tensor::zeros(data.dtype, shape);
  int64_t outer = product(
      std::vector<int64_t>(data.shape.begin(), data.shape.begin() + axis));
  int64_t inner = product(
      std::vector<int64_t>(data.shape.begin() + axis + 1, data.shape.end()));
  int64_t dim = data.shape[axis], ni = idx.numElements();
  size_t es = dtypeSize(data.dtype);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < ni; ++k) {
      int64_t j = idx.getInt(k);
      if (j < -dim || j >= dim) {
        error = "index " + std::to_string(j) + " is out of range for size " +
                std::to_string(dim);
        return FoldStatus::Error;
      }
      if (j < 0)
        j += dim;
      std::copy_n(data.data.data() + ((o * dim + j) * inner) * es, inner * es,
                  r.data.data() + ((o * ni + k) * inner) * es);
    }
  outs.push_back(std::move(r));
  return FoldStatus::Folded;
}

FoldStatus foldConcat(const FoldCall &c, std::vector<Tensor> &outs,
                      std::string &error) {
  const Tensor &first = *c.in[0];
  int64_t rank = static_cast<int64_t>(first.shape.size());
  int64_t axis = intAttr(c.n, "axis", 0);
  if (!normalizeAxis(axis, rank, error))
    return FoldStatus::Error;
  std::vector<int64_t> shape = first.shape;
  shape[axis] = 0;
  for (const Tensor *t : c.in) {
    if (t->shape.size() != first.shape.size() || t->dtype != first.dtype) {
      error = "inputs have different ranks or element types";
      return FoldStatus::Error;
    }
    shape[axis] += t->shape[axis];
  }
  if (product(shape) > c.maxElements)
    return FoldStatus::NotFoldable;
  Tensor r = Tensor::zeros(first.dtype, shape);
  int64_t outer =
      product(std::vector<int64_t>(shape.begin(), shape.begin() + axis));
  size_t pos = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor *t : c.in) {
      size_t chunk = t->data.size() / std::max<int64_t>(outer, 1);
      r.data.replace(pos, chunk, t->data, o * chunk, chunk);
      pos += chunk;
    }
  outs.push_back(std::move(r));
  return FoldStatus::Folded;
}

FoldStatus foldSqueezes(const FoldCall &c, std::vector<Tensor> &outs,
                        std::string &error) {
  std::vector<int64_t> axes, shape;
  bool present;
  axesOf(c.n, c.in, 1, axes, present);
  bool ok = c.n.opType == "Unsqueeze"
                ? unsqueezeShape(c.in[0]->shape, axes, shape, error)
                : squeezeShape(c.in[0]->shape, axes, present, shape, error);
  if (!ok)
    return FoldStatus::Error;
  outs.push_back(reshaped(*c.in[0], shape));
  return FoldStatus::Folded;
}

FoldStatus foldReshape(const FoldCall &c, std::vector<Tensor> &outs,
                       std::string &error) {
  std::vector<int64_t> shape;
  if (!reshapeShape(c.in[0]->shape, c.in[1]->toInts(),
                    intAttr(c.n, "allowzero", 0) != 0, shape, error))
    return FoldStatus::Error;
  outs.push_back(reshaped(*c.in[0], shape));
  return FoldStatus::Folded;
}

FoldStatus foldConstantOfShape(const FoldCall &c, std::vector<Tensor> &outs,
                               std::string &error) {
  std::vector<int64_t> shape = c.in[0]->toInts();
  for (int64_t d : shape)
    if (d < 0) {
      error = "negative dimension in " + shapeStr(shape);
      return FoldStatus::Error;
    }
  if (product(shape) > c.maxElements)
    return FoldStatus::NotFoldable;
  const Attribute *v = c.n.getAttribute("value");
  DType dt = v ? v->t.dtype : DType::Float;
  if (dtypeSize(dt) == 0)
    return FoldStatus::NotFoldable;
  Tensor r = Tensor::zeros(dt, shape);
  if (v && v->t.numElements() == 1) {
    size_t es = dtypeSize(dt);
    for (int64_t i = 0, e = r.numElements(); i < e; ++i)
      std::copy_n(v->t.data.data(), es, r.data.data() + i * es);
  }
  outs.push_back(std::move(r));
  return FoldStatus::Folded;
}

FoldStatus foldRange(const FoldCall &c, std::vector<Tensor> &outs,
                     std::string &error) {
  const std::vector<const Tensor *> &in = c.in;
  double start = in[0]->getDouble(0), limit = in[1]->getDouble(0),
         delta = in[2]->getDouble(0);
  if (delta == 0) {
    error = "Range delta must not be 0";
    return FoldStatus::Error;
  }
  int64_t count = std::max<int64_t>(
      0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
  if (count > c.maxElements)
    return FoldStatus::NotFoldable;
  Tensor r = Tensor::zeros(in[0]->dtype, {count});
  bool fl = isFloatDType(in[0]->dtype);
  for (int64_t i = 0; i < count; ++i) {
    if (fl)
      r.setDouble(i, start + static_cast<double>(i) * delta);
    else
      r.setInt(i, in[0]->getInt(0) + i * in[2]->getInt(0));
  }
  outs.push_back(std::move(r));
  return FoldStatus::Folded;
}

FoldStatus foldExpand(const FoldCall &c, std::vector<Tensor> &outs,
                      std::string &error) {
  const Tensor &x = *c.in[0];
  std::vector<int64_t> shape;
  if (!broadcastShapes(x.shape, c.in[1]->toInts(), shape)) {
    error = "cannot expand " + shapeStr(x.shape) + " to " +
            shapeStr(c.in[1]->toInts());
    return FoldStatus::Error;
  }
  if (product(shape) > c.maxElements)
    return FoldStatus::NotFoldable;
  Tensor r = Tensor::zeros(x.dtype, shape);
  size_t es = dtypeSize(r.dtype);
  for (int64_t i = 0, e = r.numElements(); i < e; ++i)
    std::copy_n(x.data.data() + broadcastIndex(i, shape, x.shape) * es, es,
                r.data.data() + i * es);
  outs.push_back(std::move(r));
  return FoldStatus::Folded;
}

FoldStatus foldTranspose(const FoldCall &c, std::vector<Tensor> &outs,
                         std::string &) {
  const Tensor &x = *c.in[0];
  int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> perm;
  if (const Attribute *p = c.n.getAttribute("perm"))
    perm = p->ints;
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != rank)
    return FoldStatus::NotFoldable;
  std::vector<int64_t> shape(rank), inStr = stridesOf(x.shape);
  for (int64_t i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= rank)
      return FoldStatus::NotFoldable;
    shape[i] = x.shape[perm[i]];
  }
  Tensor r = Tensor::zeros(x.dtype, shape);
  size_t es = dtypeSize(x.dtype);
  for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
    int64_t flat = i, src = 0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      src += (flat % shape[d]) * inStr[perm[d]];
      flat /= shape[d];
    }
    std::copy_n(x.data.data() + src * es, es, r.data.data() + i * es);
  }
  outs.push_back(std::move(r));
  return FoldStatus::Folded;
}

/// Every input a variadic op is given must be there.
constexpr size_t kAllInputs = ~size_t(0);

/// One row per ai.onnx op type the folder evaluates: the inputs it needs
/// (present and known) and its rule. This table is the folder's whole
/// knowledge of op types; canFoldOpType reads it too. Element-wise float
/// math beyond these (Sqrt, Exp, Pow, Cos, ...) is not here: a node whose
/// inputs are all constants and that this table does not fold is imported
/// by its import rule, and the importer folds the ops the rule built
/// through those ops' own folders (ImportContext::foldBuiltOps).
struct FoldRule {
  const char *opType;
  size_t needs;
  FoldFn fold;
};
constexpr FoldRule kFoldRules[] = {
    {"Abs", 1, foldNegAbs},
    {"Add", 2, foldBinary},
    {"And", 2, foldBinary},
    {"Cast", 1, foldCast},
    {"Concat", kAllInputs, foldConcat},
    {"ConstantOfShape", 1, foldConstantOfShape},
    {"Div", 2, foldBinary},
    {"Equal", 2, foldBinary},
    {"Expand", 2, foldExpand},
    {"Gather", 2, foldGather},
    {"Greater", 2, foldBinary},
    {"GreaterOrEqual", 2, foldBinary},
    {"Identity", 1, foldIdentity},
    {"Less", 2, foldBinary},
    {"LessOrEqual", 2, foldBinary},
    {"Max", kAllInputs, foldMinMax},
    {"Min", kAllInputs, foldMinMax},
    {"Mul", 2, foldBinary},
    {"Neg", 1, foldNegAbs},
    {"Not", 1, foldNot},
    {"Or", 2, foldBinary},
    {"Range", 3, foldRange},
    {"Reshape", 2, foldReshape},
    {"Shape", 1, foldShape},
    {"Size", 1, foldSize},
    {"Slice", 1, foldSlice},
    {"Squeeze", 1, foldSqueezes},
    {"Sub", 2, foldBinary},
    {"Transpose", 1, foldTranspose},
    {"Unsqueeze", 1, foldSqueezes},
    {"Where", 3, foldWhere},
    {"Xor", 2, foldBinary},
};

const FoldRule *lookupFoldRule(const std::string &opType) {
  for (const FoldRule &r : kFoldRules)
    if (opType == r.opType)
      return &r;
  return nullptr;
}

} // namespace

bool canFoldOpType(const std::string &opType) {
  return lookupFoldRule(opType) != nullptr;
}

FoldStatus foldNode(const Node &n, int64_t opset,
                    const std::vector<const Tensor *> &in,
                    std::vector<Tensor> &outs, std::string &error,
                    int64_t maxElements) {
  outs.clear();
  const FoldRule *rule = n.domain.empty() ? lookupFoldRule(n.opType) : nullptr;
  if (!rule)
    return FoldStatus::NotFoldable;
  // Only real numbers and booleans; Shape and Size read nothing but shapes.
  if (n.opType != "Shape" && n.opType != "Size")
    for (const Tensor *t : in)
      if (t && (dtypeSize(t->dtype) == 0 || t->dtype == DType::Complex64 ||
                t->dtype == DType::Complex128 ||
                t->data.size() != static_cast<size_t>(t->numElements()) *
                                      dtypeSize(t->dtype)))
        return FoldStatus::NotFoldable;
  size_t needs = rule->needs == kAllInputs ? in.size() : rule->needs;
  if (needs == 0 || in.size() < needs)
    return FoldStatus::NotFoldable;
  for (size_t i = 0; i < needs; ++i)
    if (!in[i])
      return FoldStatus::NotFoldable;
  return rule->fold(FoldCall{n, opset, in, maxElements}, outs, error);
}

} // namespace tessera::onnx_import
