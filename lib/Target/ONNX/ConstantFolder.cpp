//===- ConstantFolder.cpp - evaluate ONNX nodes on constants --------------===//
//
// A small reference evaluator for the ops torch uses to compute shapes. It
// follows the ONNX operator specs (negative axes and indices, Slice
// clamping, Reshape's 0 and -1, numpy broadcasting) and works on any dtype
// through Tensor's int64/double accessors.
//
//===----------------------------------------------------------------------===//

#include "tessera/Target/ONNX/ConstantFolder.h"

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

/// Linear index into a tensor of shape `in`, broadcast to `out`, for the
/// element at linear index `flat` of `out`.
int64_t broadcastIndex(int64_t flat, const std::vector<int64_t> &out,
                       const std::vector<int64_t> &in) {
  int64_t idx = 0, inStride = 1;
  size_t off = out.size() - in.size();
  for (int64_t i = static_cast<int64_t>(out.size()) - 1; i >= 0; --i) {
    int64_t coord = flat % out[i];
    flat /= out[i];
    if (i >= static_cast<int64_t>(off)) {
      int64_t d = in[i - off];
      if (d != 1)
        idx += coord * inStride;
      inStride *= d;
    }
  }
  return idx;
}

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

FoldStatus binaryOp(const Node &n, const std::vector<const Tensor *> &in,
                    std::vector<Tensor> &outs, std::string &error,
                    int64_t maxElements) {
  const std::string &op = n.opType;
  const Tensor &a = *in[0], &b = *in[1];
  std::vector<int64_t> shape;
  if (!broadcastShapes(a.shape, b.shape, shape)) {
    error = "shapes " + shapeStr(a.shape) + " and " + shapeStr(b.shape) +
            " do not broadcast";
    return FoldStatus::Error;
  }
  if (product(shape) > maxElements)
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

FoldStatus sliceOp(const Node &n, int64_t opset,
                   const std::vector<const Tensor *> &in,
                   std::vector<Tensor> &outs, std::string &error) {
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

bool canFoldOpType(const std::string &opType) {
  // The op types of foldNode's branches below.
  static const char *const kFoldable[] = {
      "Abs",      "Add",       "And",
      "Cast",     "Concat",    "ConstantOfShape",
      "Div",      "Equal",     "Expand",
      "Gather",   "Greater",   "GreaterOrEqual",
      "Identity", "Less",      "LessOrEqual",
      "Max",      "Min",       "Mul",
      "Neg",      "Not",       "Or",
      "Range",    "Reshape",   "Shape",
      "Size",     "Slice",     "Squeeze",
      "Sub",      "Transpose", "Unsqueeze",
      "Where",    "Xor"};
  return std::find(std::begin(kFoldable), std::end(kFoldable), opType) !=
         std::end(kFoldable);
}

FoldStatus foldNode(const Node &n, int64_t opset,
                    const std::vector<const Tensor *> &in,
                    std::vector<Tensor> &outs, std::string &error,
                    int64_t maxElements) {
  outs.clear();
  const std::string &op = n.opType;
  if (!n.domain.empty())
    return FoldStatus::NotFoldable;
  // Only real numbers and booleans; Shape and Size read nothing but shapes.
  if (op != "Shape" && op != "Size")
    for (const Tensor *t : in)
      if (t && (dtypeSize(t->dtype) == 0 || t->dtype == DType::Complex64 ||
                t->dtype == DType::Complex128 ||
                t->data.size() != static_cast<size_t>(t->numElements()) *
                                      dtypeSize(t->dtype)))
        return FoldStatus::NotFoldable;
  auto need = [&](size_t k) {
    for (size_t i = 0; i < k; ++i)
      if (in.size() <= i || !in[i])
        return false;
    return true;
  };

  if (op == "Identity") {
    if (!need(1))
      return FoldStatus::NotFoldable;
    outs.push_back(*in[0]);
    return FoldStatus::Folded;
  }
  if (op == "Shape" || op == "Size") {
    if (!need(1))
      return FoldStatus::NotFoldable;
    const std::vector<int64_t> &s = in[0]->shape;
    if (op == "Size") {
      Tensor r = Tensor::zeros(DType::Int64, {});
      r.setInt(0, product(s));
      outs.push_back(std::move(r));
      return FoldStatus::Folded;
    }
    int64_t rank = static_cast<int64_t>(s.size());
    int64_t start = intAttr(n, "start", 0), end = intAttr(n, "end", rank);
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
  if (op == "Cast") {
    if (!need(1))
      return FoldStatus::NotFoldable;
    const Attribute *to = n.getAttribute("to");
    if (!to)
      return FoldStatus::NotFoldable;
    DType dt = static_cast<DType>(to->i);
    if (dtypeSize(dt) == 0 || dt == DType::Complex64 ||
        dt == DType::Complex128 || in[0]->dtype == DType::String)
      return FoldStatus::NotFoldable;
    Tensor r = Tensor::zeros(dt, in[0]->shape);
    bool fromFloat = isFloatDType(in[0]->dtype);
    for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
      if (fromFloat)
        r.setDouble(i, in[0]->getDouble(i));
      else if (isFloatDType(dt))
        r.setDouble(i, static_cast<double>(in[0]->getInt(i)));
      else
        r.setInt(i, in[0]->getInt(i));
    }
    outs.push_back(std::move(r));
    return FoldStatus::Folded;
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" ||
      op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
      op == "GreaterOrEqual" || op == "And" || op == "Or" || op == "Xor") {
    if (!need(2))
      return FoldStatus::NotFoldable;
    return binaryOp(n, in, outs, error, maxElements);
  }
  if (op == "Neg" || op == "Abs") {
    if (!need(1))
      return FoldStatus::NotFoldable;
    Tensor r = Tensor::zeros(in[0]->dtype, in[0]->shape);
    bool fl = isFloatDType(in[0]->dtype);
    for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
      if (fl) {
        double v = in[0]->getDouble(i);
        r.setDouble(i, op == "Neg" ? -v : std::fabs(v));
      } else {
        int64_t v = in[0]->getInt(i);
        r.setInt(i, op == "Neg" ? -v : (v < 0 ? -v : v));
      }
    }
    outs.push_back(std::move(r));
    return FoldStatus::Folded;
  }
  if (op == "Min" || op == "Max") {
    if (in.empty() || !need(in.size()))
      return FoldStatus::NotFoldable;
    Tensor acc = *in[0];
    for (size_t k = 1; k < in.size(); ++k) {
      std::vector<int64_t> shape;
      if (!broadcastShapes(acc.shape, in[k]->shape, shape)) {
        error = "inputs do not broadcast";
        return FoldStatus::Error;
      }
      if (product(shape) > maxElements)
        return FoldStatus::NotFoldable;
      Tensor r = Tensor::zeros(acc.dtype, shape);
      bool fl = isFloatDType(acc.dtype);
      for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
        int64_t ia = broadcastIndex(i, shape, acc.shape);
        int64_t ib = broadcastIndex(i, shape, in[k]->shape);
        if (fl) {
          double x = acc.getDouble(ia), y = in[k]->getDouble(ib);
          r.setDouble(i, op == "Min" ? std::min(x, y) : std::max(x, y));
        } else {
          int64_t x = acc.getInt(ia), y = in[k]->getInt(ib);
          r.setInt(i, op == "Min" ? std::min(x, y) : std::max(x, y));
        }
      }
      acc = std::move(r);
    }
    outs.push_back(std::move(acc));
    return FoldStatus::Folded;
  }
  if (op == "Not") {
    if (!need(1))
      return FoldStatus::NotFoldable;
    Tensor r = Tensor::zeros(DType::Bool, in[0]->shape);
    for (int64_t i = 0, e = r.numElements(); i < e; ++i)
      r.setInt(i, !in[0]->getInt(i));
    outs.push_back(std::move(r));
    return FoldStatus::Folded;
  }
  if (op == "Where") {
    if (!need(3))
      return FoldStatus::NotFoldable;
    std::vector<int64_t> s1, shape;
    if (!broadcastShapes(in[0]->shape, in[1]->shape, s1) ||
        !broadcastShapes(s1, in[2]->shape, shape)) {
      error = "condition and values do not broadcast";
      return FoldStatus::Error;
    }
    if (product(shape) > maxElements)
      return FoldStatus::NotFoldable;
    Tensor r = Tensor::zeros(in[1]->dtype, shape);
    size_t es = dtypeSize(r.dtype);
    for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
      bool c = in[0]->getInt(broadcastIndex(i, shape, in[0]->shape));
      const Tensor &src = c ? *in[1] : *in[2];
      int64_t j = broadcastIndex(i, shape, src.shape);
      std::copy_n(src.data.data() + j * es, es, r.data.data() + i * es);
    }
    outs.push_back(std::move(r));
    return FoldStatus::Folded;
  }
  if (op == "Gather") {
    if (!need(2))
      return FoldStatus::NotFoldable;
    const Tensor &data = *in[0], &idx = *in[1];
    int64_t rank = static_cast<int64_t>(data.shape.size());
    int64_t axis = intAttr(n, "axis", 0);
    if (!normalizeAxis(axis, rank, error))
      return FoldStatus::Error;
    std::vector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
    shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
    shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
    if (product(shape) > maxElements)
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
  if (op == "Concat") {
    if (in.empty() || !need(in.size()))
      return FoldStatus::NotFoldable;
    const Tensor &first = *in[0];
    int64_t rank = static_cast<int64_t>(first.shape.size());
    int64_t axis = intAttr(n, "axis", 0);
    if (!normalizeAxis(axis, rank, error))
      return FoldStatus::Error;
    std::vector<int64_t> shape = first.shape;
    shape[axis] = 0;
    for (const Tensor *t : in) {
      if (t->shape.size() != first.shape.size() || t->dtype != first.dtype) {
        error = "inputs have different ranks or element types";
        return FoldStatus::Error;
      }
      shape[axis] += t->shape[axis];
    }
    if (product(shape) > maxElements)
      return FoldStatus::NotFoldable;
    Tensor r = Tensor::zeros(first.dtype, shape);
    int64_t outer =
        product(std::vector<int64_t>(shape.begin(), shape.begin() + axis));
    size_t pos = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (const Tensor *t : in) {
        size_t chunk = t->data.size() / std::max<int64_t>(outer, 1);
        r.data.replace(pos, chunk, t->data, o * chunk, chunk);
        pos += chunk;
      }
    outs.push_back(std::move(r));
    return FoldStatus::Folded;
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    if (!need(1))
      return FoldStatus::NotFoldable;
    std::vector<int64_t> axes, shape;
    bool present;
    axesOf(n, in, 1, axes, present);
    bool ok = op == "Unsqueeze"
                  ? unsqueezeShape(in[0]->shape, axes, shape, error)
                  : squeezeShape(in[0]->shape, axes, present, shape, error);
    if (!ok)
      return FoldStatus::Error;
    outs.push_back(reshaped(*in[0], shape));
    return FoldStatus::Folded;
  }
  if (op == "Reshape") {
    if (!need(2))
      return FoldStatus::NotFoldable;
    std::vector<int64_t> shape;
    if (!reshapeShape(in[0]->shape, in[1]->toInts(),
                      intAttr(n, "allowzero", 0) != 0, shape, error))
      return FoldStatus::Error;
    outs.push_back(reshaped(*in[0], shape));
    return FoldStatus::Folded;
  }
  if (op == "ConstantOfShape") {
    if (!need(1))
      return FoldStatus::NotFoldable;
    std::vector<int64_t> shape = in[0]->toInts();
    for (int64_t d : shape)
      if (d < 0) {
        error = "negative dimension in " + shapeStr(shape);
        return FoldStatus::Error;
      }
    if (product(shape) > maxElements)
      return FoldStatus::NotFoldable;
    const Attribute *v = n.getAttribute("value");
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
  if (op == "Range") {
    if (!need(3))
      return FoldStatus::NotFoldable;
    double start = in[0]->getDouble(0), limit = in[1]->getDouble(0),
           delta = in[2]->getDouble(0);
    if (delta == 0) {
      error = "Range delta must not be 0";
      return FoldStatus::Error;
    }
    int64_t count = std::max<int64_t>(
        0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
    if (count > maxElements)
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
  if (op == "Slice") {
    if (!need(1))
      return FoldStatus::NotFoldable;
    return sliceOp(n, opset, in, outs, error);
  }
  if (op == "Expand") {
    if (!need(2))
      return FoldStatus::NotFoldable;
    std::vector<int64_t> shape;
    if (!broadcastShapes(in[0]->shape, in[1]->toInts(), shape)) {
      error = "cannot expand " + shapeStr(in[0]->shape) + " to " +
              shapeStr(in[1]->toInts());
      return FoldStatus::Error;
    }
    if (product(shape) > maxElements)
      return FoldStatus::NotFoldable;
    Tensor r = Tensor::zeros(in[0]->dtype, shape);
    size_t es = dtypeSize(r.dtype);
    for (int64_t i = 0, e = r.numElements(); i < e; ++i)
      std::copy_n(in[0]->data.data() +
                      broadcastIndex(i, shape, in[0]->shape) * es,
                  es, r.data.data() + i * es);
    outs.push_back(std::move(r));
    return FoldStatus::Folded;
  }
  if (op == "Transpose") {
    if (!need(1))
      return FoldStatus::NotFoldable;
    const Tensor &x = *in[0];
    int64_t rank = static_cast<int64_t>(x.shape.size());
    std::vector<int64_t> perm;
    if (const Attribute *p = n.getAttribute("perm"))
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
  return FoldStatus::NotFoldable;
}

} // namespace tessera::onnx_import
