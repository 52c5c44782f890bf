//===- RvdTest.cpp - RVD layouts and the collective search ----------------===//

#include "tessera/Layout/Rvd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>

using namespace tessera::layout;
using tessera::Error;
using tessera::Result;

namespace {

Mesh makeMesh(const std::string &text) {
  Result<Mesh> mesh = parseMesh(text);
  if (!mesh) {
    ADD_FAILURE() << text << ": " << mesh.message();
    return *Mesh::create({});
  }
  return *mesh;
}

Layout makeLayout(const Mesh &mesh, const std::string &text) {
  Result<Layout> layout = parseLayout(text, mesh);
  if (!layout) {
    ADD_FAILURE() << text << ": " << layout.message();
    return Layout{std::vector<AxisState>(mesh.numAxes())};
  }
  return *layout;
}

/// Every valid layout of \p tensor on \p mesh, normalised and deduplicated.
std::vector<Layout> allLayouts(const Mesh &mesh, const TensorShape &tensor) {
  std::vector<AxisState> choices = {AxisState::r(), AxisState::v()};
  for (int k = 0; k < static_cast<int>(tensor.dims.size()); ++k)
    choices.push_back(AxisState::d(k));
  std::set<Layout> layouts;
  Layout current{std::vector<AxisState>(mesh.numAxes())};
  std::function<void(size_t)> fill = [&](size_t axis) {
    if (axis == mesh.numAxes()) {
      if (Result<Layout> checked = checkLayout(mesh, tensor, current))
        layouts.insert(*checked);
      return;
    }
    for (const AxisState &state : choices) {
      current.states[axis] = state;
      fill(axis + 1);
    }
  };
  fill(0);
  return {layouts.begin(), layouts.end()};
}

std::vector<Transition> transitionsOf(const Path &path) {
  std::vector<Transition> result;
  for (const Step &step : path.steps)
    result.push_back(step.transition);
  return result;
}

//===----------------------------------------------------------------------===//
// Mesh and layout syntax
//===----------------------------------------------------------------------===//

TEST(RvdMesh, ParseAndRanks) {
  Mesh mesh = makeMesh("dp=2, tp=2,pp=3");
  EXPECT_EQ(mesh.str(), "dp=2,tp=2,pp=3");
  EXPECT_EQ(mesh.numRanks(), 12);
  EXPECT_EQ(mesh.axisIndex("pp"), std::optional<size_t>(2));
  EXPECT_EQ(mesh.axisIndex("xx"), std::nullopt);
  // Row-major, last axis fastest.
  EXPECT_EQ(mesh.coordinates(7), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(mesh.rankOf({1, 0, 1}), 7);
  for (int64_t rank = 0; rank < mesh.numRanks(); ++rank)
    EXPECT_EQ(mesh.rankOf(mesh.coordinates(rank)), rank);
}

TEST(RvdMesh, Groups) {
  Mesh mesh = makeMesh("dp=2,tp=2");
  EXPECT_EQ(mesh.groups(1),
            (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(mesh.groups(0),
            (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}}));
  EXPECT_TRUE(mesh.groups(5).empty());
}

TEST(RvdMesh, StrideAndGroupOf) {
  Mesh mesh = makeMesh("dp=2,tp=3,pp=2");
  EXPECT_EQ(mesh.stride(0), 6);
  EXPECT_EQ(mesh.stride(1), 2);
  EXPECT_EQ(mesh.stride(2), 1);
  using G = std::vector<int64_t>;
  // Rank 7 is (dp 1, tp 0, pp 1).
  EXPECT_EQ(mesh.groupOf(7, {1}), (G{7, 9, 11}));
  EXPECT_EQ(mesh.groupOf(7, {0}), (G{1, 7}));
  EXPECT_EQ(mesh.groupOf(7, {2, 0, 2}), (G{0, 1, 6, 7}));
  EXPECT_EQ(mesh.groupOf(7, {}), (G{7}));
  // One group along an axis is that axis' sub-group, in coordinate order.
  for (size_t axis = 0; axis < mesh.numAxes(); ++axis)
    for (const G &group : mesh.groups(axis))
      EXPECT_EQ(mesh.groupOf(group.back(), {axis}), group);
}

TEST(RvdMesh, Errors) {
  EXPECT_EQ(parseMesh("dp=2,tp").message(),
            "mesh 'dp=2,tp': entry 2 'tp' is not name=size");
  EXPECT_EQ(parseMesh("dp=2,dp=2").message(), "mesh axis 'dp' appears twice");
  EXPECT_EQ(parseMesh("dp=0").message(),
            "mesh axis 'dp' has size 0; sizes must be at least 1");
  EXPECT_EQ(parseMesh("2x=2").message(),
            "mesh axis 0 name '2x' is not an identifier");
  EXPECT_EQ(parseMesh("dp=-2").message(),
            "mesh 'dp=-2': entry 1 'dp=-2' is not name=size");
  EXPECT_EQ(Mesh::create({{"a", 65536}, {"b", 65536}}).message(),
            "mesh has more than 2^31 ranks");
}

TEST(RvdLayout, ParsePrintRoundTrip) {
  Mesh mesh = makeMesh("dp=2,tp=2,pp=2");
  Layout layout = makeLayout(mesh, " D0 ,V,R");
  EXPECT_EQ(layout.states[0], AxisState::d(0));
  EXPECT_EQ(layout.states[1], AxisState::v());
  EXPECT_EQ(layout.states[2], AxisState::r());
  EXPECT_EQ(layout.str(), "D0,V,R");
  EXPECT_EQ(makeLayout(mesh, "D12,D0,V").str(), "D12,D0,V");
}

TEST(RvdLayout, ParseErrors) {
  Mesh mesh = makeMesh("dp=2,tp=2,pp=2");
  EXPECT_EQ(parseLayout("D0,V", mesh).message(),
            "layout 'D0,V' has 2 entries but mesh 'dp=2,tp=2,pp=2' has 3 "
            "axes");
  EXPECT_EQ(parseLayout("D0,X,R", mesh).message(),
            "layout 'D0,X,R': entry 2 'X' is not R, V or D<dimension>");
  EXPECT_EQ(parseLayout("D,R,R", mesh).message(),
            "layout 'D,R,R': entry 1 'D' is not R, V or D<dimension>");
  EXPECT_EQ(parseLayout("R,,R", mesh).message(),
            "layout 'R,,R': entry 2 '' is not R, V or D<dimension>");
  EXPECT_EQ(parseLayout("d0,R,R", mesh).message(),
            "layout 'd0,R,R': entry 1 'd0' is not R, V or D<dimension>");
}

TEST(RvdLayout, SizeOneAxesAreReplicated) {
  Mesh mesh = makeMesh("dp=2,pp=1");
  EXPECT_EQ(makeLayout(mesh, "V,D0").str(), "V,R");
  EXPECT_EQ(makeLayout(mesh, "D1,V").str(), "D1,R");
  TensorShape tensor{{4, 4}, 4};
  Layout raw{{AxisState::d(0), AxisState::v()}};
  Result<Layout> checked = checkLayout(mesh, tensor, raw);
  ASSERT_TRUE(checked) << checked.message();
  EXPECT_EQ(checked->str(), "D0,R");
  // Nothing to do along a size-1 axis, in either direction.
  Result<Path> path =
      findPath(mesh, tensor, raw, makeLayout(mesh, "D0,R"), CostModel());
  ASSERT_TRUE(path) << path.message();
  EXPECT_TRUE(path->steps.empty());
  EXPECT_EQ(applyTransition(mesh, tensor, CostModel(), *checked,
                            {Primitive::LocalZero, 1, -1, -1})
                .message(),
            "local_zero on axis pp: an axis of size 1 is always R");
}

TEST(RvdLayout, CheckErrors) {
  Mesh mesh = makeMesh("dp=2,tp=4");
  TensorShape tensor{{8, 4, 6}, 4};
  EXPECT_EQ(checkLayout(mesh, tensor, makeLayout(mesh, "R,D2")).message(),
            "layout D2 on axis tp: dimension 2 of size 6 is not divisible by "
            "4");
  EXPECT_EQ(checkLayout(mesh, tensor, makeLayout(mesh, "D3,R")).message(),
            "layout D3 on axis dp: the tensor has rank 3");
  Layout negative{{AxisState::d(-1), AxisState::r()}};
  EXPECT_EQ(checkLayout(mesh, tensor, negative).message(),
            "layout D-1 on axis dp: the tensor has rank 3");
  EXPECT_EQ(checkLayout(mesh, tensor, Layout{{AxisState::r()}}).message(),
            "layout 'R' has 1 entries but mesh 'dp=2,tp=4' has 2 axes");
  EXPECT_EQ(
      checkLayout(mesh, TensorShape{{8, 4, 6}, 4}, makeLayout(mesh, "D1,D1"))
          .message(),
      "layout D1 on axes dp,tp: dimension 1 of size 4 is not divisible by 8 "
      "(2*4)");
  EXPECT_EQ(checkLayout(mesh, TensorShape{{8, 0}, 4}, makeLayout(mesh, "R,R"))
                .message(),
            "tensor dimension 1 has size 0; sizes must be at least 1");
  EXPECT_EQ(
      checkLayout(mesh, TensorShape{{8}, 0}, makeLayout(mesh, "R,R")).message(),
      "element size must be at least 1 byte, got 0");
  EXPECT_EQ(checkLayout(mesh, TensorShape{{int64_t(1) << 40, 1 << 22}, 4},
                        makeLayout(mesh, "R,R"))
                .message(),
            "tensor is too large: its size in bytes overflows 64 bits");
  // A V or R entry carrying a stray dimension is normalised, not an error.
  Result<Layout> stray = checkLayout(
      mesh, tensor,
      Layout{{AxisState{AxisKind::V, 3}, AxisState{AxisKind::R, 7}}});
  ASSERT_TRUE(stray) << stray.message();
  EXPECT_EQ(*stray, makeLayout(mesh, "V,R"));
}

TEST(RvdLayout, LocalShapesAndOffsets) {
  Mesh mesh = makeMesh("a=2,b=2");
  TensorShape tensor{{8, 6}, 2};
  Layout nested = makeLayout(mesh, "D0,D0");
  EXPECT_EQ(*localShape(mesh, tensor, nested), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(*localBytes(mesh, tensor, nested), 2 * 6 * 2);
  // The outer axis picks the half, the inner one the quarter inside it.
  EXPECT_EQ(*pieceOffsets(mesh, tensor, nested, {1, 0}),
            (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(*pieceOffsets(mesh, tensor, nested, {0, 1}),
            (std::vector<int64_t>{2, 0}));
  Layout cross = makeLayout(mesh, "D1,V");
  EXPECT_EQ(*localShape(mesh, tensor, cross), (std::vector<int64_t>{8, 3}));
  EXPECT_EQ(*pieceOffsets(mesh, tensor, cross, {1, 1}),
            (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(*localBytes(mesh, TensorShape{{}, 4}, makeLayout(mesh, "V,R")), 4);
  EXPECT_EQ(pieceOffsets(mesh, tensor, cross, {2, 0}).message(),
            "coordinate 2 is outside axis a of size 2");
  EXPECT_EQ(pieceOffsets(mesh, tensor, cross, {0}).message(),
            "got 1 coordinates for a mesh of 2 axes");
  EXPECT_EQ(localShape(mesh, TensorShape{{6}, 4}, nested).message(),
            "layout D0 on axes a,b: dimension 0 of size 6 is not divisible by "
            "4 (2*2)");
}

TEST(RvdPrimitive, Names) {
  for (int i = 0; i < kNumPrimitives; ++i) {
    Primitive primitive = static_cast<Primitive>(i);
    EXPECT_EQ(parsePrimitive(primitiveName(primitive)), primitive);
  }
  EXPECT_EQ(parsePrimitive("broadcast"), std::nullopt);
  EXPECT_TRUE(isCollective(Primitive::AllToAll));
  EXPECT_FALSE(isCollective(Primitive::LocalSlice));
  EXPECT_FALSE(isCollective(Primitive::LocalZero));
}

//===----------------------------------------------------------------------===//
// Costs of single steps
//===----------------------------------------------------------------------===//

TEST(RvdCost, StepFormulas) {
  Mesh mesh = makeMesh("x=4");
  TensorShape tensor{{8, 16}, 4}; // 512 bytes
  const double alpha = 1e-5, beta = 1e-9, gamma = 1e-13;
  CostModel model = CostModel::uniform(alpha, beta, gamma);
  auto step = [&](const char *layout, Transition t) {
    Result<Step> s =
        applyTransition(mesh, tensor, model, makeLayout(mesh, layout), t);
    EXPECT_TRUE(s) << s.message();
    return s ? *s : Step();
  };
  Step ar = step("V", {Primitive::AllReduce, 0, -1, -1});
  EXPECT_EQ(ar.after.str(), "R");
  EXPECT_EQ(ar.localBytes, 512);
  EXPECT_DOUBLE_EQ(ar.bytesSent, 2 * 3.0 / 4 * 512);
  EXPECT_DOUBLE_EQ(ar.cost, 2 * 3.0 / 4 * 512 * beta + 6 * alpha);
  Step rs = step("V", {Primitive::ReduceScatter, 0, -1, 1});
  EXPECT_EQ(rs.after.str(), "D1");
  EXPECT_DOUBLE_EQ(rs.cost, 3.0 / 4 * 512 * beta + 3 * alpha);
  Step ag = step("D0", {Primitive::AllGather, 0, 0, -1});
  EXPECT_EQ(ag.after.str(), "R");
  EXPECT_EQ(ag.localBytes, 128);
  EXPECT_DOUBLE_EQ(ag.bytesSent, 3 * 128);
  EXPECT_DOUBLE_EQ(ag.cost, 3 * 128 * beta + 3 * alpha);
  Step a2a = step("D0", {Primitive::AllToAll, 0, 0, 1});
  EXPECT_EQ(a2a.after.str(), "D1");
  EXPECT_DOUBLE_EQ(a2a.cost, 3.0 / 4 * 128 * beta + 3 * alpha);
  Step slice = step("R", {Primitive::LocalSlice, 0, -1, 0});
  EXPECT_EQ(slice.after.str(), "D0");
  EXPECT_EQ(slice.bytesSent, 0);
  EXPECT_DOUBLE_EQ(slice.cost, 512.0 / 4 * gamma);
  Step zero = step("R", {Primitive::LocalZero, 0, -1, -1});
  EXPECT_EQ(zero.after.str(), "V");
  // The collectives are priced by the cost library's model, ring algorithms
  // on the axis' link (all_gather's logical tensor is its output).
  using tessera::cost::Collective;
  auto ring = [&](Collective kind, double bytes) {
    return tessera::cost::collectiveTime(
        kind, tessera::cost::CollectiveAlgorithm::Ring, bytes, 4,
        model.link(mesh, 0));
  };
  EXPECT_EQ(ar.cost, ring(Collective::AllReduce, 512));
  EXPECT_EQ(rs.cost, ring(Collective::ReduceScatter, 512));
  EXPECT_EQ(ag.cost, ring(Collective::AllGather, 4 * 128));
  EXPECT_EQ(a2a.cost, ring(Collective::AllToAll, 128));
  EXPECT_DOUBLE_EQ(zero.cost, 512 * gamma);
}

TEST(RvdCost, PerAxisLinksAndSendRecv) {
  Mesh mesh = makeMesh("dp=2,tp=2,pp=2");
  CostModel model = CostModel::uniform(1e-5, 1e-9);
  model.axisLinks["pp"] = {2e-5, 4e-9};
  EXPECT_DOUBLE_EQ(sendRecvCost(model, mesh, 2, 1000), 2e-5 + 1000 * 4e-9);
  EXPECT_DOUBLE_EQ(sendRecvCost(model, mesh, 0, 1000), 1e-5 + 1000 * 1e-9);
  EXPECT_EQ(model.link(mesh, 2).alpha, 2e-5);
  EXPECT_EQ(model.link(mesh, 1).alpha, 1e-5);
}

TEST(RvdCost, ModelErrors) {
  Mesh mesh = makeMesh("dp=2,tp=2");
  TensorShape tensor{{4}, 4};
  CostModel model;
  model.axisLinks["ep"] = {1e-5, 1e-9};
  EXPECT_EQ(checkCostModel(mesh, model)->message,
            "cost model names axis 'ep', which is not in mesh 'dp=2,tp=2'");
  Result<Path> path = findPath(mesh, tensor, makeLayout(mesh, "V,R"),
                               makeLayout(mesh, "R,R"), model);
  EXPECT_EQ(path.message(),
            "cost model names axis 'ep', which is not in mesh 'dp=2,tp=2'");
  model.axisLinks.clear();
  model.axisLinks["tp"] = {1e-5, -1};
  EXPECT_EQ(checkCostModel(mesh, model)->message,
            "cost model: beta of axis tp must be finite and non-negative");
  model.axisLinks.clear();
  model.defaultLink.alpha = NAN;
  EXPECT_EQ(checkCostModel(mesh, model)->message,
            "cost model: alpha of the default link must be finite and "
            "non-negative");
  model.defaultLink.alpha = 0;
  model.gamma = -1;
  EXPECT_EQ(checkCostModel(mesh, model)->message,
            "cost model: gamma must be finite and non-negative");
  model.gamma = 0;
  EXPECT_FALSE(checkCostModel(mesh, model));
}

TEST(RvdTransition, Errors) {
  Mesh mesh = makeMesh("a=2,b=2");
  TensorShape tensor{{4, 6}, 4};
  CostModel model;
  auto error = [&](const char *layout, Transition t) {
    Result<Step> step =
        applyTransition(mesh, tensor, model, makeLayout(mesh, layout), t);
    return step ? std::string("applied: ") + step->after.str() : step.message();
  };
  EXPECT_EQ(error("R,R", {Primitive::AllReduce, 0, -1, -1}),
            "all_reduce on axis a: needs V, the axis is R");
  EXPECT_EQ(error("V,R", {Primitive::AllGather, 0, 0, -1}),
            "all_gather on axis a: needs a split D, the axis is V");
  EXPECT_EQ(error("D1,R", {Primitive::AllGather, 0, 0, -1}),
            "all_gather on axis a: the axis splits dimension 1, not 0");
  EXPECT_EQ(error("D0,R", {Primitive::AllToAll, 0, 0, 0}),
            "all_to_all on axis a: source and target dimensions are both 0");
  EXPECT_EQ(error("R,R", {Primitive::LocalSlice, 0, -1, 2}),
            "local_slice on axis a: target dimension 2 is not a dimension of "
            "a rank-2 tensor");
  EXPECT_EQ(error("R,R", {Primitive::AllReduce, 2, -1, -1}),
            "all_reduce on axis 2: the mesh has 2 axes");
  EXPECT_EQ(error("V,R", {Primitive::AllReduce, 0, 1, -1}),
            "all_reduce on axis a: takes no source dimension (got 1)");
  EXPECT_EQ(error("V,R", {Primitive::ReduceScatter, 0, -1, -1}),
            "reduce_scatter on axis a: target dimension -1 is not a "
            "dimension of a rank-2 tensor");
  // 6 / 2 = 3 rows per rank on b; a second split by 2 does not divide.
  EXPECT_EQ(error("R,D1", {Primitive::LocalSlice, 0, -1, 1}),
            "local_slice on axis a: dimension 1 is already split by the "
            "inner axis b; a split is only added inside the existing ones "
            "(go through R on b first)");
  EXPECT_EQ(error("D1,V", {Primitive::ReduceScatter, 1, -1, 1}),
            "reduce_scatter on axis b: dimension 1 of local size 3 is not "
            "divisible by 2");
  EXPECT_EQ(error("D0,D0", {Primitive::AllGather, 0, 0, -1}),
            "all_gather on axis a: dimension 0 is also split by the inner "
            "axis b; only the innermost split of a dimension can be undone "
            "(un-split b first)");
  EXPECT_EQ(error("D0,D1", {Primitive::AllToAll, 0, 0, 1}),
            "all_to_all on axis a: dimension 1 is already split by the inner "
            "axis b; a split is only added inside the existing ones (go "
            "through R on b first)");
  // The innermost splitter may act.
  EXPECT_EQ(error("D0,D0", {Primitive::AllGather, 1, 0, -1}), "applied: D0,R");
  EXPECT_EQ(error("D0,R", {Primitive::LocalSlice, 1, -1, 0}), "applied: D0,D0");
}

//===----------------------------------------------------------------------===//
// The data each rank holds: every legal step is checked on real numbers
//===----------------------------------------------------------------------===//

/// A dense local tensor of integers (sums stay exact).
struct Dense {
  std::vector<int64_t> shape;
  std::vector<long long> values;

  int64_t size() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  bool operator==(const Dense &other) const {
    return shape == other.shape && values == other.values;
  }
};

/// Rows [start, start + length) of dimension \p dim.
Dense sliceDim(const Dense &t, size_t dim, int64_t start, int64_t length) {
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < dim; ++i)
    outer *= t.shape[i];
  for (size_t i = dim + 1; i < t.shape.size(); ++i)
    inner *= t.shape[i];
  Dense result{t.shape, {}};
  result.shape[dim] = length;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = start; r < start + length; ++r)
      for (int64_t i = 0; i < inner; ++i)
        result.values.push_back(t.values[(o * t.shape[dim] + r) * inner + i]);
  return result;
}

Dense chunk(const Dense &t, size_t dim, int64_t index, int64_t count) {
  int64_t length = t.shape[dim] / count;
  return sliceDim(t, dim, index * length, length);
}

Dense concat(const std::vector<Dense> &parts, size_t dim) {
  Dense result{parts[0].shape, {}};
  result.shape[dim] = 0;
  for (const Dense &part : parts)
    result.shape[dim] += part.shape[dim];
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < dim; ++i)
    outer *= result.shape[i];
  for (size_t i = dim + 1; i < result.shape.size(); ++i)
    inner *= result.shape[i];
  for (int64_t o = 0; o < outer; ++o)
    for (const Dense &part : parts)
      for (int64_t i = 0; i < part.shape[dim] * inner; ++i)
        result.values.push_back(part.values[o * part.shape[dim] * inner + i]);
  return result;
}

Dense add(Dense a, const Dense &b) {
  for (size_t i = 0; i < a.values.size(); ++i)
    a.values[i] += b.values[i];
  return a;
}

Dense subtract(Dense a, const Dense &b) {
  for (size_t i = 0; i < a.values.size(); ++i)
    a.values[i] -= b.values[i];
  return a;
}

Dense zerosLike(const Dense &t) {
  return Dense{t.shape, std::vector<long long>(t.values.size(), 0)};
}

/// The piece of \p global a rank at \p coords holds under \p layout,
/// computed here independently of the library: the axes splitting a
/// dimension form a mixed-radix index, outer axis most significant.
Dense piece(const Mesh &mesh, const Dense &global, const Layout &layout,
            const std::vector<int64_t> &coords) {
  Dense result = global;
  for (size_t k = 0; k < global.shape.size(); ++k) {
    int64_t index = 0, count = 1;
    for (size_t a = 0; a < mesh.numAxes(); ++a) {
      if (layout.states[a].isSplit(static_cast<int>(k))) {
        index = index * mesh.axis(a).size + coords[a];
        count *= mesh.axis(a).size;
      }
    }
    result = chunk(result, k, index, count);
  }
  return result;
}

/// The coordinates with every R axis set to 0: replicas share this key.
int64_t canonicalRank(const Mesh &mesh, const Layout &layout,
                      std::vector<int64_t> coords) {
  for (size_t a = 0; a < mesh.numAxes(); ++a)
    if (layout.states[a].kind == AxisKind::R)
      coords[a] = 0;
  return mesh.rankOf(coords);
}

/// Per-rank data that represents \p global under \p layout: replicas equal,
/// pieces as defined, and random partial values that sum to the piece.
std::vector<Dense> distribute(const Mesh &mesh, const Dense &global,
                              const Layout &layout, std::mt19937 &rng) {
  std::uniform_int_distribution<int> noise(-50, 50);
  const int64_t ranks = mesh.numRanks();
  std::vector<Dense> data(ranks);
  // First random partials everywhere, then the last V member of every
  // partial group (all V coordinates maximal) absorbs the difference.
  for (int64_t rank = 0; rank < ranks; ++rank) {
    std::vector<int64_t> coords = mesh.coordinates(rank);
    data[rank] = piece(mesh, global, layout, coords);
    for (long long &value : data[rank].values)
      value = noise(rng);
  }
  for (int64_t rank = 0; rank < ranks; ++rank) {
    std::vector<int64_t> coords = mesh.coordinates(rank);
    if (canonicalRank(mesh, layout, coords) != rank)
      continue;
    bool last = true;
    for (size_t a = 0; a < mesh.numAxes(); ++a)
      if (layout.states[a].kind == AxisKind::V &&
          coords[a] != mesh.axis(a).size - 1)
        last = false;
    if (!last)
      continue;
    Dense rest = piece(mesh, global, layout, coords);
    for (int64_t other = 0; other < ranks; ++other) {
      std::vector<int64_t> oc = mesh.coordinates(other);
      if (other == rank || canonicalRank(mesh, layout, oc) != other)
        continue;
      bool sameGroup = true;
      for (size_t a = 0; a < mesh.numAxes(); ++a)
        if (layout.states[a].kind != AxisKind::V && oc[a] != coords[a])
          sameGroup = false;
      if (sameGroup)
        rest = subtract(rest, data[other]);
    }
    data[rank] = rest;
  }
  for (int64_t rank = 0; rank < ranks; ++rank)
    data[rank] = data[canonicalRank(mesh, layout, mesh.coordinates(rank))];
  return data;
}

/// Whether \p data represents \p global under \p layout; else why not.
std::string represents(const Mesh &mesh, const Dense &global,
                       const Layout &layout, const std::vector<Dense> &data) {
  const int64_t ranks = mesh.numRanks();
  for (int64_t rank = 0; rank < ranks; ++rank) {
    std::vector<int64_t> coords = mesh.coordinates(rank);
    if (!(data[rank] == data[canonicalRank(mesh, layout, coords)]))
      return "rank " + std::to_string(rank) + " differs from its replica";
    bool first = true;
    for (size_t a = 0; a < mesh.numAxes(); ++a)
      if (layout.states[a].kind == AxisKind::V && coords[a] != 0)
        first = false;
    if (!first)
      continue;
    Dense sum = zerosLike(piece(mesh, global, layout, coords));
    if (data[rank].shape != sum.shape)
      return "rank " + std::to_string(rank) + " holds the wrong shape";
    for (int64_t other = 0; other < ranks; ++other) {
      std::vector<int64_t> oc = mesh.coordinates(other);
      bool sameGroup = true;
      for (size_t a = 0; a < mesh.numAxes(); ++a)
        if (layout.states[a].kind != AxisKind::V && oc[a] != coords[a])
          sameGroup = false;
      if (sameGroup)
        sum = add(sum, data[other]);
    }
    if (!(sum == piece(mesh, global, layout, coords)))
      return "the partial values of rank " + std::to_string(rank) +
             " do not sum to its piece";
  }
  return "";
}

/// Runs a transition's collective semantics inside every group of its axis.
std::vector<Dense> simulate(const Mesh &mesh, const Transition &t,
                            const std::vector<Dense> &data) {
  std::vector<Dense> result = data;
  const int64_t n = mesh.axis(t.axis).size;
  for (int64_t rank = 0; rank < mesh.numRanks(); ++rank) {
    std::vector<int64_t> coords = mesh.coordinates(rank);
    if (coords[t.axis] != 0)
      continue;
    std::vector<int64_t> group;
    for (int64_t c = 0; c < n; ++c) {
      coords[t.axis] = c;
      group.push_back(mesh.rankOf(coords));
    }
    Dense sum = zerosLike(data[group[0]]);
    std::vector<Dense> members;
    for (int64_t member : group) {
      sum = add(sum, data[member]);
      members.push_back(data[member]);
    }
    for (int64_t i = 0; i < n; ++i) {
      Dense &out = result[group[i]];
      const Dense &own = data[group[i]];
      switch (t.primitive) {
      case Primitive::AllReduce:
        out = sum;
        break;
      case Primitive::ReduceScatter:
        out = chunk(sum, t.toDim, i, n);
        break;
      case Primitive::AllGather:
        out = concat(members, t.fromDim);
        break;
      case Primitive::AllToAll: {
        std::vector<Dense> received;
        for (const Dense &sender : members)
          received.push_back(chunk(sender, t.toDim, i, n));
        out = concat(received, t.fromDim);
        break;
      }
      case Primitive::LocalSlice:
        out = chunk(own, t.toDim, i, n);
        break;
      case Primitive::LocalZero:
        out = i == 0 ? own : zerosLike(own);
        break;
      }
    }
  }
  return result;
}

Dense randomGlobal(const std::vector<int64_t> &shape, std::mt19937 &rng) {
  Dense global{shape, {}};
  std::uniform_int_distribution<int> value(-1000, 1000);
  for (int64_t i = 0; i < global.size(); ++i)
    global.values.push_back(value(rng));
  return global;
}

TEST(RvdSemantics, EveryLegalStepMovesTheRightData) {
  const std::vector<std::pair<const char *, std::vector<int64_t>>> cases = {
      {"x=2", {4, 6}},     {"x=4", {4, 8}},         {"a=2,b=2", {4, 6}},
      {"a=2,b=3", {6, 6}}, {"a=2,b=2,c=2", {8, 4}}, {"a=2,b=2", {8}},
  };
  std::mt19937 rng(7);
  CostModel model;
  int checked = 0;
  for (const auto &[meshText, shape] : cases) {
    Mesh mesh = makeMesh(meshText);
    TensorShape tensor{shape, 8};
    Dense global = randomGlobal(shape, rng);
    for (const Layout &layout : allLayouts(mesh, tensor)) {
      std::vector<Dense> data = distribute(mesh, global, layout, rng);
      ASSERT_EQ(represents(mesh, global, layout, data), "")
          << meshText << " " << layout.str();
      for (const Step &step : enumerateSteps(mesh, tensor, model, layout)) {
        std::vector<Dense> moved = simulate(mesh, step.transition, data);
        EXPECT_EQ(represents(mesh, global, step.after, moved), "")
            << meshText << " " << layout.str() << " -> " << step.after.str()
            << " by " << formatStep(mesh, step);
        // The library's piece offsets agree with the data each rank holds.
        for (int64_t rank = 0; rank < mesh.numRanks(); ++rank) {
          Result<std::vector<int64_t>> shapeOf =
              localShape(mesh, tensor, step.after);
          ASSERT_TRUE(shapeOf);
          EXPECT_EQ(moved[rank].shape, *shapeOf);
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 500);
}

TEST(RvdSemantics, PieceOffsetsMatchTheIndependentDefinition) {
  Mesh mesh = makeMesh("a=2,b=3,c=2");
  TensorShape tensor{{12, 6}, 4};
  Dense global{{12, 6}, {}};
  for (int i = 0; i < 72; ++i)
    global.values.push_back(i);
  for (const Layout &layout : allLayouts(mesh, tensor)) {
    for (int64_t rank = 0; rank < mesh.numRanks(); ++rank) {
      std::vector<int64_t> coords = mesh.coordinates(rank);
      Dense expected = piece(mesh, global, layout, coords);
      Result<std::vector<int64_t>> offsets =
          pieceOffsets(mesh, tensor, layout, coords);
      ASSERT_TRUE(offsets) << offsets.message();
      // Row-major global index of the piece's first element.
      EXPECT_EQ(expected.values[0], (*offsets)[0] * 6 + (*offsets)[1])
          << layout.str() << " rank " << rank;
    }
  }
}

/// Why the axis-order rule exists: the same collectives applied to an outer
/// axis while an inner one splits the dimension leave the wrong data.
TEST(RvdSemantics, SplitsInsideAnInnerSplitAreWrong) {
  Mesh mesh = makeMesh("a=2,b=2");
  std::mt19937 rng(11);
  Dense global = randomGlobal({8}, rng);
  Layout inner = makeLayout(mesh, "R,D0");
  Layout nested = makeLayout(mesh, "D0,D0");
  std::vector<Dense> sliced = simulate(mesh, {Primitive::LocalSlice, 0, -1, 0},
                                       distribute(mesh, global, inner, rng));
  EXPECT_NE(represents(mesh, global, nested, sliced), "");
  std::vector<Dense> gathered = simulate(mesh, {Primitive::AllGather, 0, 0, -1},
                                         distribute(mesh, global, nested, rng));
  EXPECT_NE(represents(mesh, global, inner, gathered), "");
  // ... whereas the permitted order works.
  std::vector<Dense> innerGathered =
      simulate(mesh, {Primitive::AllGather, 1, 0, -1},
               distribute(mesh, global, nested, rng));
  EXPECT_EQ(represents(mesh, global, makeLayout(mesh, "D0,R"), innerGathered),
            "");
}

//===----------------------------------------------------------------------===//
// Canonical conversions
//===----------------------------------------------------------------------===//

class RvdCanonical : public ::testing::Test {
protected:
  Mesh mesh = makeMesh("tp=4");
  TensorShape tensor{{8, 16}, 4};
  CostModel model = CostModel::uniform(1e-5, 1e-9, 1e-14);

  Path solve(const char *from, const char *to) {
    Result<Path> path = findPath(mesh, tensor, makeLayout(mesh, from),
                                 makeLayout(mesh, to), model);
    EXPECT_TRUE(path) << path.message();
    return path ? *path : Path();
  }
};

TEST_F(RvdCanonical, PartialToReplicatedIsOneAllReduce) {
  Path path = solve("V", "R");
  EXPECT_EQ(transitionsOf(path),
            (std::vector<Transition>{{Primitive::AllReduce, 0, -1, -1}}));
  EXPECT_DOUBLE_EQ(path.cost, 2 * 3.0 / 4 * 512 * 1e-9 + 6 * 1e-5);
  EXPECT_EQ(formatPath(mesh, path), "V(tp) -all_reduce-> R(tp)");
}

TEST_F(RvdCanonical, PartialToSplitIsOneReduceScatter) {
  Path path = solve("V", "D1");
  EXPECT_EQ(transitionsOf(path),
            (std::vector<Transition>{{Primitive::ReduceScatter, 0, -1, 1}}));
  EXPECT_EQ(formatPath(mesh, path), "V(tp) -reduce_scatter-> D1(tp)");
}

TEST_F(RvdCanonical, SplitToSplitIsAllToAll) {
  Path path = solve("D0", "D1");
  EXPECT_EQ(transitionsOf(path),
            (std::vector<Transition>{{Primitive::AllToAll, 0, 0, 1}}));
  EXPECT_EQ(formatPath(mesh, path), "D0(tp) -all_to_all-> D1(tp)");
}

TEST_F(RvdCanonical, SplitToReplicatedIsAllGather) {
  Path path = solve("D1", "R");
  EXPECT_EQ(transitionsOf(path),
            (std::vector<Transition>{{Primitive::AllGather, 0, 1, -1}}));
  EXPECT_EQ(path.steps[0].localBytes, 128);
  EXPECT_DOUBLE_EQ(path.cost, 3 * 128 * 1e-9 + 3 * 1e-5);
}

TEST_F(RvdCanonical, ReplicatedToSplitIsAFreeSlice) {
  Path path = solve("R", "D0");
  EXPECT_EQ(transitionsOf(path),
            (std::vector<Transition>{{Primitive::LocalSlice, 0, -1, 0}}));
  EXPECT_EQ(path.steps[0].bytesSent, 0);
  EXPECT_LT(path.cost, 1e-10);
  EXPECT_EQ(formatPath(mesh, path), "R(tp) -local_slice-> D0(tp)");
}

TEST_F(RvdCanonical, ReplicatedToPartialIsLocalZero) {
  Path path = solve("R", "V");
  EXPECT_EQ(transitionsOf(path),
            (std::vector<Transition>{{Primitive::LocalZero, 0, -1, -1}}));
}

TEST_F(RvdCanonical, SplitToPartialGathersThenZeroes) {
  Path path = solve("D0", "V");
  EXPECT_EQ(transitionsOf(path),
            (std::vector<Transition>{{Primitive::AllGather, 0, 0, -1},
                                     {Primitive::LocalZero, 0, -1, -1}}));
}

TEST_F(RvdCanonical, SameLayoutIsEmpty) {
  Path path = solve("V", "V");
  EXPECT_TRUE(path.steps.empty());
  EXPECT_EQ(path.cost, 0);
  EXPECT_EQ(formatPath(mesh, path), "");
}

TEST(RvdSearch, TwoAxesReduceBeforeGathering) {
  Mesh mesh = makeMesh("dp=2,tp=2");
  TensorShape tensor{{8, 16}, 4}; // 512 bytes, 256 per dp half
  const double alpha = 1e-5, beta = 1e-9;
  CostModel model = CostModel::uniform(alpha, beta);
  Result<Path> path = findPath(mesh, tensor, makeLayout(mesh, "D0,V"),
                               makeLayout(mesh, "R,R"), model);
  ASSERT_TRUE(path) << path.message();
  // Reducing the half first moves 256 bytes through the all-reduce rather
  // than 512 after gathering.
  EXPECT_EQ(formatPath(mesh, *path),
            "V(tp) -all_reduce-> R(tp); D0(dp) -all_gather-> R(dp)");
  const double expected =
      (2 * 0.5 * 256 * beta + 2 * alpha) + (1 * 256 * beta + alpha);
  EXPECT_DOUBLE_EQ(path->cost, expected);
  EXPECT_EQ(path->steps[0].after.str(), "D0,R");
  EXPECT_EQ(path->steps[1].after.str(), "R,R");

  // The other order is dearer.
  Result<Step> gather = applyTransition(mesh, tensor, model, path->source,
                                        {Primitive::AllGather, 0, 0, -1});
  ASSERT_TRUE(gather);
  Result<Step> reduce = applyTransition(mesh, tensor, model, gather->after,
                                        {Primitive::AllReduce, 1, -1, -1});
  ASSERT_TRUE(reduce);
  EXPECT_GT(gather->cost + reduce->cost, path->cost);

  // A ring all-reduce is a reduce-scatter plus an all-gather, so the
  // three-step route costs the same (up to rounding): fewer steps win.
  double threeSteps = 0;
  Layout at = path->source;
  for (Transition t : {Transition{Primitive::ReduceScatter, 1, -1, 0},
                       Transition{Primitive::AllGather, 1, 0, -1},
                       Transition{Primitive::AllGather, 0, 0, -1}}) {
    Result<Step> step = applyTransition(mesh, tensor, model, at, t);
    ASSERT_TRUE(step) << step.message();
    threeSteps += step->cost;
    at = step->after;
  }
  EXPECT_EQ(at.str(), "R,R");
  EXPECT_NEAR(threeSteps, path->cost, 1e-15);
}

TEST(RvdSearch, PerAxisLinksPickTheReduceScatterAxis) {
  // Hierarchical all-reduce: reduce-scatter on the fast axis, all-reduce the
  // smaller shard over the slow one, all-gather on the fast axis.
  Mesh mesh = makeMesh("dp=2,tp=2");
  TensorShape tensor{{1024, 1024}, 4};
  CostModel model = CostModel::uniform(1e-6, 1e-11);
  model.axisLinks["dp"] = {1e-5, 1e-10}; // across nodes
  Result<Path> path = findPath(mesh, tensor, makeLayout(mesh, "V,V"),
                               makeLayout(mesh, "R,R"), model);
  ASSERT_TRUE(path) << path.message();
  EXPECT_EQ(formatPath(mesh, *path),
            "V(tp) -reduce_scatter-> D0(tp); V(dp) -all_reduce-> R(dp); "
            "D0(tp) -all_gather-> R(tp)");
  // Swap the links: now tp is the slow axis.
  model.axisLinks.clear();
  model.defaultLink = {1e-5, 1e-10};
  model.axisLinks["dp"] = {1e-6, 1e-11};
  path = findPath(mesh, tensor, makeLayout(mesh, "V,V"),
                  makeLayout(mesh, "R,R"), model);
  ASSERT_TRUE(path) << path.message();
  EXPECT_EQ(formatPath(mesh, *path),
            "V(dp) -reduce_scatter-> D0(dp); V(tp) -all_reduce-> R(tp); "
            "D0(dp) -all_gather-> R(dp)");
}

TEST(RvdSearch, LatencyDecidesBetweenGatherAndAllToAll) {
  // R,D0 -> D0,D0 cannot slice the outer axis inside b's split. Either
  // gather on b and slice twice (one collective), or move b's split to
  // dimension 1 and back (two all-to-alls, fewer bytes).
  Mesh mesh = makeMesh("a=2,b=2");
  TensorShape tensor{{64, 64}, 4};
  Layout from = makeLayout(mesh, "R,D0"), to = makeLayout(mesh, "D0,D0");
  Result<Path> latencyBound =
      findPath(mesh, tensor, from, to, CostModel::uniform(1e-3, 1e-9));
  ASSERT_TRUE(latencyBound) << latencyBound.message();
  EXPECT_EQ(formatPath(mesh, *latencyBound),
            "D0(b) -all_gather-> R(b); R(a) -local_slice-> D0(a); "
            "R(b) -local_slice-> D0(b)");
  Result<Path> bandwidthBound =
      findPath(mesh, tensor, from, to, CostModel::uniform(0, 1e-9));
  ASSERT_TRUE(bandwidthBound) << bandwidthBound.message();
  EXPECT_EQ(formatPath(mesh, *bandwidthBound),
            "D0(b) -all_to_all-> D1(b); R(a) -local_slice-> D0(a); "
            "D1(b) -all_to_all-> D0(b)");
  EXPECT_DOUBLE_EQ(bandwidthBound->cost, (0.5 * 8192 * 1e-9) +
                                             (8192.0 / 2 * 1e-14) +
                                             (0.5 * 4096 * 1e-9));
}

TEST(RvdSearch, InvalidAndUnreachable) {
  Mesh mesh = makeMesh("dp=2,tp=4");
  TensorShape tensor{{8, 4, 6}, 4};
  CostModel model;
  EXPECT_EQ(findPath(mesh, tensor, makeLayout(mesh, "R,D2"),
                     makeLayout(mesh, "R,R"), model)
                .message(),
            "source layout D2 on axis tp: dimension 2 of size 6 is not "
            "divisible by 4");
  EXPECT_EQ(findPath(mesh, tensor, makeLayout(mesh, "R,R"),
                     makeLayout(mesh, "D5,R"), model)
                .message(),
            "target layout D5 on axis dp: the tensor has rank 3");
  SearchOptions noZero;
  noZero.disabled = {Primitive::LocalZero};
  EXPECT_EQ(findPath(mesh, tensor, makeLayout(mesh, "D0,R"),
                     makeLayout(mesh, "V,R"), model, noZero)
                .message(),
            "no sequence of primitives converts layout 'D0,R' into 'V,R' on "
            "mesh 'dp=2,tp=4' without local_zero");
  SearchOptions noLocal;
  noLocal.disabled = {Primitive::LocalZero, Primitive::LocalSlice};
  EXPECT_EQ(findPath(mesh, tensor, makeLayout(mesh, "R,R"),
                     makeLayout(mesh, "D0,R"), model, noLocal)
                .message(),
            "no sequence of primitives converts layout 'R,R' into 'D0,R' on "
            "mesh 'dp=2,tp=4' without local_slice, local_zero");
  // Disabling all_to_all still leaves a route.
  SearchOptions noAllToAll;
  noAllToAll.disabled = {Primitive::AllToAll};
  Result<Path> path = findPath(mesh, tensor, makeLayout(mesh, "D0,R"),
                               makeLayout(mesh, "D1,R"), model, noAllToAll);
  ASSERT_TRUE(path) << path.message();
  EXPECT_EQ(formatPath(mesh, *path),
            "D0(dp) -all_gather-> R(dp); R(dp) -local_slice-> D1(dp)");
}

TEST(RvdSearch, Deterministic) {
  Mesh mesh = makeMesh("dp=2,tp=2,pp=2");
  TensorShape tensor{{8, 8}, 2};
  CostModel model = CostModel::uniform(1e-5, 1e-9);
  model.axisLinks["dp"] = {3e-5, 5e-9};
  for (const Layout &from : allLayouts(mesh, tensor)) {
    Layout to = makeLayout(mesh, "R,D1,V");
    Result<Path> a = findPath(mesh, tensor, from, to, model);
    Result<Path> b = findPath(mesh, tensor, from, to, model);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(formatPath(mesh, *a), formatPath(mesh, *b));
    EXPECT_EQ(transitionsOf(*a), transitionsOf(*b));
    EXPECT_EQ(a->cost, b->cost);
  }
  // Candidate steps come sorted in tie-breaking order.
  std::vector<Step> steps =
      enumerateSteps(mesh, tensor, model, makeLayout(mesh, "V,D0,R"));
  ASSERT_FALSE(steps.empty());
  for (size_t i = 1; i < steps.size(); ++i)
    EXPECT_TRUE(steps[i - 1].transition < steps[i].transition);
  EXPECT_TRUE(enumerateSteps(mesh, tensor, model, Layout{}).empty());
}

//===----------------------------------------------------------------------===//
// The search against brute force
//===----------------------------------------------------------------------===//

bool sameCost(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

struct Candidate {
  double cost = 0;
  std::vector<Transition> steps;
};

/// The search's documented order: cost (relative 1e-9), steps, transitions.
bool before(const Candidate &a, const Candidate &b) {
  if (!sameCost(a.cost, b.cost))
    return a.cost < b.cost;
  if (a.steps.size() != b.steps.size())
    return a.steps.size() < b.steps.size();
  return a.steps < b.steps;
}

/// The best sequence of at most \p depth primitives from \p source to every
/// layout it reaches. The one-step relation comes from applyTransition over
/// every conceivable (primitive, axis, dims), not from enumerateSteps, and
/// is cached in \p moves across sources.
std::map<Layout, Candidate>
bruteForce(const Mesh &mesh, const TensorShape &tensor, const CostModel &model,
           const SearchOptions &options, const Layout &source, int depth,
           std::map<Layout, std::vector<Step>> &moves) {
  const int rank = static_cast<int>(tensor.dims.size());
  auto movesOf = [&](const Layout &layout) -> const std::vector<Step> & {
    auto it = moves.find(layout);
    if (it != moves.end())
      return it->second;
    std::vector<Step> &list = moves[layout];
    for (int p = 0; p < kNumPrimitives; ++p) {
      if (options.disabled.count(static_cast<Primitive>(p)))
        continue;
      for (size_t axis = 0; axis < mesh.numAxes(); ++axis)
        for (int from = -1; from < rank; ++from)
          for (int to = -1; to < rank; ++to)
            if (Result<Step> step = applyTransition(
                    mesh, tensor, model, layout,
                    {static_cast<Primitive>(p), axis, from, to}))
              list.push_back(*step);
    }
    return list;
  };
  std::map<Layout, Candidate> best;
  Candidate current;
  std::function<void(const Layout &)> walk = [&](const Layout &at) {
    auto it = best.find(at);
    if (it == best.end() || before(current, it->second))
      best[at] = current;
    if (static_cast<int>(current.steps.size()) == depth)
      return;
    // Copy: movesOf may insert into the map while this list is in use.
    std::vector<Step> list = movesOf(at);
    for (const Step &step : list) {
      double saved = current.cost;
      current.cost += step.cost;
      current.steps.push_back(step.transition);
      walk(step.after);
      current.steps.pop_back();
      current.cost = saved;
    }
  };
  walk(source);
  return best;
}

struct BruteCase {
  const char *mesh;
  std::vector<int64_t> shape;
};

void compareWithBruteForce(const BruteCase &c, const CostModel &model,
                           const SearchOptions &options, int &compared,
                           int &unreachable) {
  const int kDepth = 5;
  Mesh mesh = makeMesh(c.mesh);
  TensorShape tensor{c.shape, 4};
  std::vector<Layout> layouts = allLayouts(mesh, tensor);
  std::map<Layout, std::vector<Step>> moves; // the one-step relation
  for (const Layout &source : layouts) {
    std::map<Layout, Candidate> brute =
        bruteForce(mesh, tensor, model, options, source, kDepth, moves);
    for (const Layout &target : layouts) {
      std::string where =
          std::string(c.mesh) + " " + source.str() + " -> " + target.str();
      Result<Path> path =
          findPath(mesh, tensor, source, target, model, options);
      auto found = brute.find(target);
      if (!path) {
        EXPECT_TRUE(found == brute.end()) << where << ": " << path.message();
        EXPECT_NE(path.message().find("no sequence of primitives"),
                  std::string::npos);
        ++unreachable;
        continue;
      }
      // The path is a real chain of legal steps and its cost their sum.
      Layout at = path->source;
      double sum = 0;
      for (const Step &step : path->steps) {
        Result<Step> again =
            applyTransition(mesh, tensor, model, at, step.transition);
        ASSERT_TRUE(again) << where << ": " << again.message();
        EXPECT_EQ(again->after, step.after) << where;
        EXPECT_EQ(again->cost, step.cost) << where;
        EXPECT_EQ(options.disabled.count(step.transition.primitive), 0u);
        sum += step.cost;
        at = step.after;
      }
      EXPECT_EQ(at, target) << where;
      EXPECT_EQ(sum, path->cost) << where;
      Candidate mine{path->cost, transitionsOf(*path)};
      if (static_cast<int>(path->steps.size()) <= kDepth) {
        // Brute force saw every sequence this short: same optimum, and the
        // same tie-breaking picks the same sequence.
        ASSERT_TRUE(found != brute.end()) << where;
        EXPECT_TRUE(sameCost(found->second.cost, path->cost))
            << where << ": brute " << found->second.cost << " search "
            << path->cost;
        EXPECT_EQ(found->second.steps, mine.steps) << where;
      } else if (found != brute.end()) {
        // Longer than brute force looks: it can only have found worse.
        EXPECT_TRUE(before(mine, found->second)) << where;
      }
      ++compared;
    }
  }
}

const std::vector<BruteCase> kBruteCases = {
    {"x=2", {4}},
    {"x=2", {3}},
    {"x=2", {2, 6}},
    {"x=2", {1, 3}},
    {"x=4", {8}},
    {"x=4", {4, 6}},
    {"x=4", {2, 2}},
    {"a=2,b=2", {4, 6}},
    {"a=2,b=2", {2, 3}},
    {"a=2,b=2", {8}},
    {"a=2,b=2", {}},
    {"a=3,b=2", {6, 4}},
    {"a=2,b=1,c=2", {4}},
    {"a=2,b=2,c=2", {8, 4}},
    {"a=2,b=2,c=2", {2, 6}},
    {"a=2,b=2,c=2", {3, 3}},
};

TEST(RvdBruteForce, UniformLinks) {
  int compared = 0, unreachable = 0;
  for (const BruteCase &c : kBruteCases)
    compareWithBruteForce(c, CostModel::uniform(1e-5, 1e-9), {}, compared,
                          unreachable);
  // With every primitive allowed, every valid layout reaches every other.
  EXPECT_EQ(unreachable, 0);
  EXPECT_GT(compared, 5000);
}

TEST(RvdBruteForce, PerAxisLinks) {
  int compared = 0, unreachable = 0;
  for (const BruteCase &c : kBruteCases) {
    // Links only for the axes this mesh has (others would be an error).
    Mesh mesh = makeMesh(c.mesh);
    CostModel model = CostModel::uniform(2e-6, 1e-11, 1e-14);
    if (mesh.axisIndex("a"))
      model.axisLinks["a"] = {3e-5, 2e-10};
    if (mesh.axisIndex("c"))
      model.axisLinks["c"] = {1e-6, 5e-12};
    compareWithBruteForce(c, model, {}, compared, unreachable);
  }
  EXPECT_EQ(unreachable, 0);
}

TEST(RvdBruteForce, BandwidthOnlyAndFreeLocalSteps) {
  // alpha = 0 and gamma = 0 leave many exact ties: tie-breaking decides.
  int compared = 0, unreachable = 0;
  for (const BruteCase &c : kBruteCases)
    compareWithBruteForce(c, CostModel::uniform(0, 1e-9, 0), {}, compared,
                          unreachable);
  EXPECT_EQ(unreachable, 0);
}

TEST(RvdBruteForce, DisabledPrimitives) {
  const std::vector<std::set<Primitive>> disabledSets = {
      {Primitive::LocalZero},
      {Primitive::AllToAll},
      {Primitive::AllReduce},
      {Primitive::LocalSlice, Primitive::LocalZero},
      {Primitive::ReduceScatter, Primitive::AllToAll},
  };
  int compared = 0, unreachable = 0;
  for (const std::set<Primitive> &disabled : disabledSets) {
    SearchOptions options;
    options.disabled = disabled;
    for (const BruteCase &c :
         {BruteCase{"x=2", {4, 6}}, BruteCase{"a=2,b=2", {4, 6}},
          BruteCase{"a=2,b=2,c=2", {8, 4}}})
      compareWithBruteForce(c, CostModel::uniform(1e-5, 1e-9), options,
                            compared, unreachable);
  }
  EXPECT_GT(unreachable, 0);
}

} // namespace
