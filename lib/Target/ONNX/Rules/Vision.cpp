//===- Vision.cpp - import rules of convolutional networks ----------------===//
//
// Conv, MaxPool, AveragePool, GlobalAveragePool, BatchNormalization and
// Pad, for 2-D images [N, C, H, W], lowered to tsr ops that already have
// gradients, kernels on every backend, annotations and costs:
//
// - windows are gathered (im2col): the image becomes a table of pixels
//   [H*W + 1, N, C] (the extra row is the padding value) and one tsr.gather
//   with a constant index [K, P] (K = kernel taps, P = output positions)
//   gives every window's pixels; its gradient (scatter-add) sums the
//   overlapping windows' contributions;
// - Conv is then a matmul of the windows [N, P, C*K] by the weight
//   [C*K, Co] (per group), MaxPool a reduce_max over K, AveragePool a
//   reduce_sum over K times the reciprocal window sizes;
// - BatchNormalization in training mode normalizes by the batch's mean and
//   (biased) variance over N, H, W with reduce_mean, as PyTorch does; its
//   running statistics are outputs of the node, computed by ONNX's formula,
//   and are not updated state of the program (the initializers stay
//   constant; docs/architecture.md).
//
// Why not dedicated conv ops with cuDNN: this keeps every plan (dp splits
// N, tp splits the matmul's Co) and both backends working with the ops the
// partitioner and the kernels already know, at the cost of the im2col copy
// (K times the input). A MaxPool's gradient goes to every element equal to
// the window's maximum (PyTorch's to one of them): the same unless a window
// holds equal maxima (after a ReLU, equal zeros carry no gradient anyway).
//
//===----------------------------------------------------------------------===//

#include "tessera/Target/ONNX/ImportRules.h"

#include <cmath>
#include <limits>

namespace tessera::onnx_import {
namespace {

/// A 2-D window: kernel, strides, dilations and pads (top, left, bottom,
/// right), and the output size.
struct Window {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t oh = 0, ow = 0;
  int64_t taps() const { return kh * kw; }
  int64_t positions() const { return oh * ow; }
};

/// The window of the current node from its attributes; `kernel` from the
/// weight (Conv) or the kernel_shape attribute (pools).
FailureOr<Window> windowOf(ImportContext &cx, ArrayRef<int64_t> imageShape,
                           std::optional<std::vector<int64_t>> kernel) {
  if (imageShape.size() != 4)
    return cx.err() << "expects a 4-D input [N, C, H, W], got "
                    << shapeString(imageShape)
                    << " (only 2-D images are supported)";
  std::string autoPad = cx.attrString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET")
    return cx.err() << "auto_pad '" << autoPad
                    << "' is not supported (export with explicit pads)";
  if (cx.attrInt("ceil_mode", 0) != 0)
    return cx.err() << "ceil_mode 1 is not supported";
  if (auto k = cx.attrInts("kernel_shape"))
    kernel = *k;
  if (!kernel || kernel->size() != 2)
    return cx.err() << "needs a 2-D kernel_shape";
  Window w;
  w.kh = (*kernel)[0];
  w.kw = (*kernel)[1];
  auto pair = [&](const char *name, int64_t &a, int64_t &b) -> LogicalResult {
    if (auto v = cx.attrInts(name)) {
      if (v->size() != 2)
        return cx.err() << name << " must have 2 values, got " << v->size();
      a = (*v)[0];
      b = (*v)[1];
    }
    return success();
  };
  if (failed(pair("strides", w.sh, w.sw)) ||
      failed(pair("dilations", w.dh, w.dw)))
    return failure();
  if (auto pads = cx.attrInts("pads")) {
    if (pads->size() != 4)
      return cx.err() << "pads must have 4 values, got " << pads->size();
    w.pt = (*pads)[0];
    w.pl = (*pads)[1];
    w.pb = (*pads)[2];
    w.pr = (*pads)[3];
  }
  if (w.kh < 1 || w.kw < 1 || w.sh < 1 || w.sw < 1 || w.dh < 1 || w.dw < 1 ||
      w.pt < 0 || w.pl < 0 || w.pb < 0 || w.pr < 0)
    return cx.err() << "kernel, strides and dilations must be >= 1 and pads "
                       ">= 0";
  int64_t h = imageShape[2], wd = imageShape[3];
  int64_t spanH = w.dh * (w.kh - 1) + 1, spanW = w.dw * (w.kw - 1) + 1;
  if (h + w.pt + w.pb < spanH || wd + w.pl + w.pr < spanW)
    return cx.err() << "the " << w.kh << "x" << w.kw
                    << " window does not fit the padded " << h << "x" << wd
                    << " image";
  w.oh = (h + w.pt + w.pb - spanH) / w.sh + 1;
  w.ow = (wd + w.pl + w.pr - spanW) / w.sw + 1;
  return w;
}

/// Every window's pixels: [K, P, N, C] from x [N, C, H, W]; taps outside
/// the image read `padValue`. `valid` (if given) gets each position's
/// number of taps inside the image.
FailureOr<Value> windows(ImportContext &cx, Value x, const Window &w,
                         double padValue,
                         std::vector<int64_t> *valid = nullptr) {
  auto type = cx.typeOf(x);
  int64_t n = type.getDimSize(0), c = type.getDimSize(1),
          h = type.getDimSize(2), wd = type.getDimSize(3);
  Type elem = type.getElementType();
  // Pixels first: [H*W, N, C], plus the padding row.
  FailureOr<Value> flat = cx.reshapeTo(x, {n, c, h * wd});
  if (failed(flat))
    return failure();
  FailureOr<Value> table = cx.transpose(*flat, {2, 0, 1});
  if (failed(table))
    return failure();
  Tensor index = Tensor::zeros(DType::Int64, {w.taps(), w.positions()});
  bool padded = false;
  if (valid)
    valid->assign(w.positions(), 0);
  for (int64_t ki = 0; ki < w.kh; ++ki)
    for (int64_t kj = 0; kj < w.kw; ++kj)
      for (int64_t oi = 0; oi < w.oh; ++oi)
        for (int64_t oj = 0; oj < w.ow; ++oj) {
          int64_t i = oi * w.sh - w.pt + ki * w.dh;
          int64_t j = oj * w.sw - w.pl + kj * w.dw;
          bool inside = i >= 0 && i < h && j >= 0 && j < wd;
          padded |= !inside;
          if (valid && inside)
            ++(*valid)[oi * w.ow + oj];
          index.setInt((ki * w.kw + kj) * w.positions() + oi * w.ow + oj,
                       inside ? i * wd + j : h * wd);
        }
  if (padded) {
    FailureOr<Value> pad = cx.scalarConstant(padValue, elem);
    if (failed(pad))
      return failure();
    FailureOr<Value> pad3 = cx.reshapeTo(*pad, {1, 1, 1});
    if (failed(pad3))
      return failure();
    auto row =
        cx.createTyped<tsr::BroadcastToOp>(cx.tensorOf({1, n, c}, elem), *pad3);
    if (failed(row))
      return failure();
    table = cx.concat({*table, row->getResult()}, 0);
    if (failed(table))
      return failure();
  }
  FailureOr<Value> idx = cx.materialize(index, cx.nodeName + "/windows");
  if (failed(idx))
    return failure();
  auto gather = cx.createInferred<tsr::GatherOp>(1, *table, *idx,
                                                 static_cast<uint64_t>(0));
  if (failed(gather))
    return failure();
  return gather->getResult();
}

/// [N, C, P] -> [N, C, OH, OW].
FailureOr<Value> toImage(ImportContext &cx, Value v, const Window &w) {
  auto shape = cx.typeOf(v).getShape();
  return cx.reshapeTo(v, {shape[0], shape[1], w.oh, w.ow});
}

LogicalResult importConv(ImportContext &cx) {
  if (failed(cx.checkAttributes({"auto_pad", "dilations", "group",
                                 "kernel_shape", "pads", "strides"})))
    return failure();
  FailureOr<Value> x = cx.input(0), weight = cx.input(1);
  if (failed(x) || failed(weight) || failed(cx.requireFloat(*x, "the input")))
    return failure();
  auto wShape = cx.typeOf(*weight).getShape();
  if (wShape.size() != 4)
    return cx.err() << "expects a 4-D weight [Co, C/group, kh, kw], got "
                    << shapeString(wShape);
  FailureOr<Window> w = windowOf(cx, cx.typeOf(*x).getShape(),
                                 std::vector<int64_t>{wShape[2], wShape[3]});
  if (failed(w))
    return failure();
  int64_t n = cx.typeOf(*x).getDimSize(0), c = cx.typeOf(*x).getDimSize(1);
  int64_t co = wShape[0], groups = cx.attrInt("group", 1);
  if (groups < 1 || c % groups || co % groups || wShape[1] != c / groups)
    return cx.err() << "group " << groups << " does not fit " << c
                    << " input channels, weight " << shapeString(wShape);
  int64_t k = w->taps(), p = w->positions(), cg = c / groups, cog = co / groups;
  FailureOr<Value> win = windows(cx, *x, *w, 0.0);
  if (failed(win))
    return failure();
  // [K, P, N, C] -> [N, P, C, K] -> [N, P, C*K] (channel-major, as the
  // weight's [Co, C/group, kh, kw] flattens).
  FailureOr<Value> t = cx.transpose(*win, {2, 1, 3, 0});
  if (failed(t))
    return failure();
  FailureOr<Value> cols = cx.reshapeTo(*t, {n, p, c * k});
  FailureOr<Value> wmat = cx.reshapeTo(*weight, {co, cg * k});
  if (failed(cols) || failed(wmat))
    return failure();
  SmallVector<Value> outs;
  for (int64_t g = 0; g < groups; ++g) {
    Value lhs = *cols, rhs = *wmat;
    if (groups > 1) {
      auto ls = cx.createInferred<tsr::SliceOp>(
          1, *cols, ArrayRef<int64_t>{0, 0, g * cg * k},
          ArrayRef<int64_t>{n, p, (g + 1) * cg * k},
          ArrayRef<int64_t>{1, 1, 1});
      auto rs = cx.createInferred<tsr::SliceOp>(
          1, *wmat, ArrayRef<int64_t>{g * cog, 0},
          ArrayRef<int64_t>{(g + 1) * cog, cg * k}, ArrayRef<int64_t>{1, 1});
      if (failed(ls) || failed(rs))
        return failure();
      lhs = ls->getResult();
      rhs = rs->getResult();
    }
    FailureOr<Value> rt = cx.transpose(rhs, {1, 0});
    if (failed(rt))
      return failure();
    FailureOr<Value> m = cx.binary<tsr::MatmulOp>(lhs, *rt); // [N, P, Co/g]
    if (failed(m))
      return failure();
    outs.push_back(*m);
  }
  Value y = outs.front();
  if (groups > 1) {
    FailureOr<Value> cat = cx.concat(outs, 2);
    if (failed(cat))
      return failure();
    y = *cat;
  }
  if (cx.hasInput(2)) {
    FailureOr<Value> bias = cx.input(2);
    if (failed(bias))
      return failure();
    FailureOr<Value> sum = cx.binary<tsr::AddOp>(y, *bias); // over Co
    if (failed(sum))
      return failure();
    y = *sum;
  }
  FailureOr<Value> nct = cx.transpose(y, {0, 2, 1}); // [N, Co, P]
  if (failed(nct))
    return failure();
  return cx.setOutput(0, toImage(cx, *nct, *w));
}

/// A pool's windows as [N, C, P, K] (with its window in `w`), taps outside
/// the image reading `padValue`; `valid` as windows() fills it.
FailureOr<Value> poolWindows(ImportContext &cx, Window &w, double padValue,
                             std::vector<int64_t> *valid = nullptr) {
  FailureOr<Value> x = cx.floatInput(0);
  if (failed(x))
    return failure();
  FailureOr<Window> win = windowOf(cx, cx.typeOf(*x).getShape(), std::nullopt);
  if (failed(win))
    return failure();
  w = *win;
  FailureOr<Value> pixels = windows(cx, *x, w, padValue, valid);
  if (failed(pixels))
    return failure();
  return cx.transpose(*pixels, {2, 3, 1, 0});
}

LogicalResult importMaxPool(ImportContext &cx) {
  if (failed(cx.checkAttributes({"auto_pad", "ceil_mode", "dilations",
                                 "kernel_shape", "pads", "storage_order",
                                 "strides"})))
    return failure();
  if (cx.hasOutput(1))
    return cx.err() << "the Indices output is not supported";
  Window w;
  FailureOr<Value> t =
      poolWindows(cx, w, -std::numeric_limits<double>::infinity());
  if (failed(t))
    return failure();
  FailureOr<Value> max = cx.reduce<tsr::ReduceMaxOp>(*t, {3}, false);
  if (failed(max))
    return failure();
  return cx.setOutput(0, toImage(cx, *max, w));
}

LogicalResult importAveragePool(ImportContext &cx) {
  if (failed(cx.checkAttributes({"auto_pad", "ceil_mode", "count_include_pad",
                                 "kernel_shape", "pads", "strides"})))
    return failure();
  Window w;
  std::vector<int64_t> valid;
  FailureOr<Value> t = poolWindows(cx, w, 0.0, &valid);
  if (failed(t))
    return failure();
  FailureOr<Value> sum = cx.reduce<tsr::ReduceSumOp>(*t, {3}, false);
  if (failed(sum))
    return failure();
  // The divisor per position: the whole window, or (count_include_pad 0,
  // the default) its taps inside the image.
  bool includePad = cx.attrInt("count_include_pad", 0) != 0;
  Tensor scale = Tensor::zeros(DType::Float, {w.positions()});
  for (int64_t i = 0; i < w.positions(); ++i)
    scale.setDouble(i, 1.0 / double(includePad ? w.taps() : valid[i]));
  FailureOr<Value> s = cx.materialize(scale, cx.nodeName + "/divisors");
  if (failed(s))
    return failure();
  FailureOr<Value> s2 = cx.castTo(*s, cx.typeOf(*sum).getElementType());
  if (failed(s2))
    return failure();
  FailureOr<Value> mean = cx.binary<tsr::MulOp>(*sum, *s2);
  if (failed(mean))
    return failure();
  return cx.setOutput(0, toImage(cx, *mean, w));
}

LogicalResult importGlobalAveragePool(ImportContext &cx) {
  FailureOr<Value> x = cx.floatFirstInput({});
  if (failed(x))
    return failure();
  int64_t rank = cx.typeOf(*x).getRank();
  if (rank < 3)
    return cx.err() << "expects [N, C, spatial...], got "
                    << shapeString(cx.typeOf(*x).getShape());
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  return cx.setOutput(0, cx.reduce<tsr::ReduceMeanOp>(*x, axes, true));
}

LogicalResult importBatchNorm(ImportContext &cx) {
  if (failed(cx.checkAttributes({"epsilon", "momentum", "training_mode"})))
    return failure();
  FailureOr<Value> x = cx.input(0), scale = cx.input(1), bias = cx.input(2),
                   runMean = cx.input(3), runVar = cx.input(4);
  if (failed(x) || failed(scale) || failed(bias) || failed(runMean) ||
      failed(runVar) || failed(cx.requireFloat(*x, "the input")))
    return failure();
  auto shape = cx.typeOf(*x).getShape();
  int64_t rank = static_cast<int64_t>(shape.size());
  if (rank < 2)
    return cx.err() << "expects [N, C, ...], got " << shapeString(shape);
  int64_t c = shape[1];
  double eps = cx.attrFloat("epsilon", 1e-5);
  double momentum = cx.attrFloat("momentum", 0.9);
  // Opset 14 and 15 say training through the attribute; a node with the
  // running-statistics outputs is in training mode either way.
  bool training =
      cx.attrInt("training_mode", 0) != 0 || cx.hasOutput(1) || cx.hasOutput(2);
  Type elem = cx.typeOf(*x).getElementType();
  // Per-channel vectors as [1, C, 1, ...].
  SmallVector<int64_t> chanShape(rank, 1);
  chanShape[1] = c;
  auto perChan = [&](Value v) -> FailureOr<Value> {
    FailureOr<Value> cast = cx.castTo(v, elem);
    if (failed(cast))
      return failure();
    return cx.reshapeTo(*cast, chanShape);
  };
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < rank; ++d)
    if (d != 1)
      axes.push_back(d);
  auto reduceMean = [&](Value v) {
    return cx.reduce<tsr::ReduceMeanOp>(v, axes, true);
  };
  FailureOr<Value> mean, var;
  if (training) {
    mean = reduceMean(*x);
  } else {
    mean = perChan(*runMean);
    var = perChan(*runVar);
  }
  if (failed(mean))
    return failure();
  FailureOr<Value> d = cx.binary<tsr::SubOp>(*x, *mean);
  if (failed(d))
    return failure();
  if (training) {
    FailureOr<Value> sq = cx.binary<tsr::MulOp>(*d, *d);
    if (failed(sq))
      return failure();
    var = reduceMean(*sq);
  }
  FailureOr<Value> epsV = cx.scalarConstant(eps, elem);
  if (failed(var) || failed(epsV))
    return failure();
  FailureOr<Value> varEps = cx.binary<tsr::AddOp>(*var, *epsV);
  if (failed(varEps))
    return failure();
  FailureOr<Value> inv = cx.unary<tsr::RsqrtOp>(*varEps);
  if (failed(inv))
    return failure();
  FailureOr<Value> norm = cx.binary<tsr::MulOp>(*d, *inv);
  FailureOr<Value> g = perChan(*scale), bb = perChan(*bias);
  if (failed(norm) || failed(g) || failed(bb))
    return failure();
  FailureOr<Value> scaled = cx.binary<tsr::MulOp>(*norm, *g);
  if (failed(scaled))
    return failure();
  FailureOr<Value> y = cx.binary<tsr::AddOp>(*scaled, *bb);
  if (failed(y) || failed(cx.setOutput(0, *y)))
    return failure();
  if (!training)
    return success();
  // The running statistics by ONNX's formula (input * momentum + current *
  // (1 - momentum), the current variance biased), [C] like the inputs.
  auto running = [&](size_t out, Value old, Value current) -> LogicalResult {
    if (!cx.hasOutput(out))
      return success();
    FailureOr<Value> cur = cx.reshapeTo(current, {c});
    FailureOr<Value> oldV = cx.castTo(old, elem);
    FailureOr<Value> m = cx.scalarConstant(momentum, elem),
                     m1 = cx.scalarConstant(1.0 - momentum, elem);
    if (failed(cur) || failed(oldV) || failed(m) || failed(m1))
      return failure();
    FailureOr<Value> a = cx.binary<tsr::MulOp>(*oldV, *m),
                     bv = cx.binary<tsr::MulOp>(*cur, *m1);
    if (failed(a) || failed(bv))
      return failure();
    return cx.setOutput(out, cx.binary<tsr::AddOp>(*a, *bv));
  };
  if (failed(running(1, *runMean, *mean)) || failed(running(2, *runVar, *var)))
    return failure();
  return success();
}

LogicalResult importPad(ImportContext &cx) {
  if (failed(cx.checkAttributes({"mode"})))
    return failure();
  std::string mode = cx.attrString("mode", "constant");
  if (mode != "constant")
    return cx.err() << "mode '" << mode << "' is not supported (constant only)";
  if (cx.hasInput(3))
    return cx.err() << "the axes input is not supported";
  FailureOr<Value> x = cx.input(0);
  if (failed(x))
    return failure();
  FailureOr<std::vector<int64_t>> pads = cx.constInts(1, "pads");
  if (failed(pads))
    return failure();
  auto type = cx.typeOf(*x);
  int64_t rank = type.getRank();
  if (static_cast<int64_t>(pads->size()) != 2 * rank)
    return cx.err() << "pads must have " << 2 * rank << " values, got "
                    << pads->size();
  double value = 0;
  if (cx.hasInput(2)) {
    FailureOr<const Tensor *> v = cx.requireConst(2, "constant_value");
    if (failed(v))
      return failure();
    if ((*v)->numElements() != 1)
      return cx.err() << "constant_value must be a scalar";
    value = (*v)->getDouble(0);
  }
  Value y = *x;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t before = (*pads)[d], after = (*pads)[d + rank];
    if (before < 0 || after < 0)
      return cx.err() << "negative pads (cropping) are not supported";
    if (!before && !after)
      continue;
    SmallVector<Value> parts;
    auto block = [&](int64_t size) -> LogicalResult {
      SmallVector<int64_t> shape(cx.typeOf(y).getShape());
      shape[d] = size;
      Type elem = type.getElementType();
      FailureOr<Value> s = cx.scalarConstant(value, elem);
      if (failed(s))
        return failure();
      FailureOr<Value> s1 = cx.reshapeTo(*s, SmallVector<int64_t>(rank, 1));
      if (failed(s1))
        return failure();
      auto op =
          cx.createTyped<tsr::BroadcastToOp>(cx.tensorOf(shape, elem), *s1);
      if (failed(op))
        return failure();
      parts.push_back(op->getResult());
      return success();
    };
    if (before && failed(block(before)))
      return failure();
    parts.push_back(y);
    if (after && failed(block(after)))
      return failure();
    FailureOr<Value> cat = cx.concat(parts, d);
    if (failed(cat))
      return failure();
    y = *cat;
  }
  return cx.setOutput(0, y);
}

} // namespace

void registerVisionImportRules(ImportRuleRegistry &r) {
  r.add("Conv", importConv);
  r.add("MaxPool", importMaxPool);
  r.add("AveragePool", importAveragePool);
  r.add("GlobalAveragePool", importGlobalAveragePool);
  r.add("BatchNormalization", importBatchNorm);
  r.add("Pad", importPad);
}

} // namespace tessera::onnx_import
