//===- LayoutTest.cpp - reductions, reshape, transpose, slice, split,
//                      concat, broadcast_to, gather ----------------------===//

#include "TestUtil.h"

#include <algorithm>
#include <numeric>

using namespace tessera::rt;
using namespace tessera::rt::test;

namespace {

enum class Red { sum, mean, max };

std::vector<double> naiveReduce(const Tensor &x, std::vector<int64_t> axes,
                                Red kind, Shape *keptShape) {
  Shape kept = x.shape();
  for (int64_t &a : axes)
    a = a < 0 ? a + x.rank() : a;
  for (int64_t a : axes)
    kept[a] = 1;
  *keptShape = kept;
  std::vector<double> v = toDoubles(x);
  std::vector<double> out(shapeNumel(kept), kind == Red::max ? -INFINITY : 0.0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> idx = unravel(i, x.shape());
    for (int64_t a : axes)
      idx[a] = 0;
    double &o = out[ravel(idx, kept)];
    o = kind == Red::max ? std::max(o, v[i]) : o + v[i];
  }
  if (kind == Red::mean) {
    double count = static_cast<double>(x.numel()) / out.size();
    for (double &o : out)
      o /= count;
  }
  return out;
}

/// Every non-empty subset of {0..rank-1}.
std::vector<std::vector<int64_t>> axisSubsets(int64_t rank) {
  std::vector<std::vector<int64_t>> subsets;
  for (int mask = 1; mask < (1 << rank); ++mask) {
    std::vector<int64_t> s;
    for (int64_t a = 0; a < rank; ++a)
      if (mask & (1 << a))
        s.push_back(a);
    subsets.push_back(s);
  }
  return subsets;
}

} // namespace

TEST(Reduce, EveryAxisSubsetAndKeepdims) {
  Tensor x = randn({3, 4, 5, 2}, DType::f64, 7);
  Tensor xf = cast(x, DType::f32);
  for (const auto &axes : axisSubsets(4)) {
    for (bool keep : {false, true}) {
      for (Red kind : {Red::sum, Red::mean, Red::max}) {
        Shape kept;
        std::vector<double> ref = naiveReduce(x, axes, kind, &kept);
        auto run = [&](const Tensor &t) {
          return kind == Red::sum    ? reduce_sum(t, axes, keep)
                 : kind == Red::mean ? reduce_mean(t, axes, keep)
                                     : reduce_max(t, axes, keep);
        };
        Shape expectedShape;
        for (int64_t d = 0; d < 4; ++d)
          if (keep || std::find(axes.begin(), axes.end(), d) == axes.end())
            expectedShape.push_back(kept[d]);
        Tensor r = run(x);
        EXPECT_EQ(r.shape(), expectedShape);
        expectClose(r, ref, 1e-14);
        expectClose(run(xf), ref, 1e-6);
      }
    }
  }
  // Negative axes name the same dimensions.
  EXPECT_EQ(toDoubles(reduce_sum(x, {-1, -3}, false)),
            toDoubles(reduce_sum(x, {1, 3}, false)));
}

TEST(Reduce, Errors) {
  Tensor x = zeros({2, 3}, DType::f32);
  expectError([&] { reduce_sum(x, {}, false); }, "axes must not be empty");
  expectError([&] { reduce_sum(x, {2}, false); }, "axis 2 out of range");
  expectError([&] { reduce_mean(x, {1, -1}, false); }, "repeated");
}

TEST(Reduce, MaxPropagatesNaN) {
  Tensor x = fromValues({2, 3}, DType::f32, {1, NAN, 3, 4, 5, 6});
  std::vector<double> r = toDoubles(reduce_max(x, {1}, false));
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_EQ(r[1], 6);
}

TEST(Layout, ReshapeIsAView) {
  Tensor x = randn({2, 3, 4}, DType::f32, 1);
  Tensor r = reshape(x, {6, 4});
  EXPECT_EQ(r.shape(), (Shape{6, 4}));
  EXPECT_EQ(r.data<float>(), x.data<float>());
  EXPECT_EQ(toDoubles(r), toDoubles(x));
  expectError([&] { reshape(x, {5, 5}); }, "cannot reshape 2x3x4");
}

TEST(Layout, TransposeEveryPermutation) {
  for (DType dtype : {DType::f32, DType::i64, DType::i1}) {
    Shape shape = {2, 3, 4, 5};
    Tensor x = randint(shape, dtype, 0, dtype == DType::i1 ? 1 : 1000, 3);
    std::vector<double> v = toDoubles(x);
    std::vector<int64_t> perm = {0, 1, 2, 3};
    do {
      Tensor r = transpose(x, perm);
      Shape outShape;
      for (int64_t p : perm)
        outShape.push_back(shape[p]);
      ASSERT_EQ(r.shape(), outShape);
      std::vector<double> rv = toDoubles(r);
      for (int64_t i = 0; i < r.numel(); ++i) {
        std::vector<int64_t> oi = unravel(i, outShape), ii(4);
        for (int d = 0; d < 4; ++d)
          ii[perm[d]] = oi[d];
        ASSERT_EQ(rv[i], v[ravel(ii, shape)]);
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  expectError(
      [] {
        transpose(zeros({2, 3}, DType::f32), {0, 0});
      },
      "not a permutation");
}

TEST(Layout, TransposeLargeEnoughToTile) {
  // Dimensions past the 32-element tiles, odd on purpose, so that the tiled
  // path runs with partial tiles and a batch dimension.
  Shape shape = {3, 37, 45};
  for (DType dtype : {DType::f32, DType::i1}) {
    Tensor x = randint(shape, dtype, 0, dtype == DType::i1 ? 1 : 1000, 8);
    std::vector<double> v = toDoubles(x);
    std::vector<int64_t> perm = {0, 1, 2};
    do {
      Tensor r = transpose(x, perm);
      std::vector<double> rv = toDoubles(r);
      for (int64_t i = 0; i < r.numel(); ++i) {
        std::vector<int64_t> oi = unravel(i, r.shape()), ii(3);
        for (int d = 0; d < 3; ++d)
          ii[perm[d]] = oi[d];
        ASSERT_EQ(rv[i], v[ravel(ii, shape)]);
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  // A Linear weight [out, in] -> [in, out].
  Tensor w = randn({96, 40}, DType::f64, 9);
  std::vector<double> wv = toDoubles(w), tv = toDoubles(transpose(w, {1, 0}));
  for (int64_t i = 0; i < 96; ++i)
    for (int64_t j = 0; j < 40; ++j)
      ASSERT_EQ(tv[j * 96 + i], wv[i * 40 + j]);
}

TEST(Layout, BroadcastTo) {
  Tensor x = randn({3, 1}, DType::f64, 2);
  Tensor r = broadcast_to(x, {2, 3, 4});
  std::vector<double> v = toDoubles(x), rv = toDoubles(r);
  for (int64_t i = 0; i < r.numel(); ++i)
    EXPECT_EQ(rv[i], v[broadcastSource(unravel(i, r.shape()), x.shape())]);
  expectError([&] { broadcast_to(x, {2, 4}); }, "do not broadcast");
  expectError(
      [&] {
        broadcast_to(zeros({2, 3}, DType::f32), {3});
      },
      "cannot broadcast 2x3 to 3");
}

TEST(Layout, SliceWithSteps) {
  Shape shape = {5, 6, 7};
  Tensor x = randn(shape, DType::f32, 4);
  std::vector<double> v = toDoubles(x);
  std::vector<int64_t> starts = {1, 0, 2}, limits = {5, 6, 7},
                       steps = {2, 1, 3};
  Tensor r = slice(x, starts, limits, steps);
  ASSERT_EQ(r.shape(), (Shape{2, 6, 2}));
  std::vector<double> rv = toDoubles(r);
  for (int64_t i = 0; i < r.numel(); ++i) {
    std::vector<int64_t> idx = unravel(i, r.shape());
    for (int d = 0; d < 3; ++d)
      idx[d] = starts[d] + idx[d] * steps[d];
    EXPECT_EQ(rv[i], v[ravel(idx, shape)]);
  }
  EXPECT_EQ(slice(x, {0, 3, 0}, {5, 3, 7}, {1, 1, 1}).numel(), 0);
  expectError(
      [&] {
        slice(x, {0, 0, 0}, {5, 7, 7}, {1, 1, 1});
      },
      "dimension 1 of size 6");
}

TEST(Layout, SplitAndConcatEveryAxis) {
  Shape shape = {4, 6, 5};
  for (DType dtype : {DType::f64, DType::i32}) {
    Tensor x = randint(shape, dtype, -100, 100, 9);
    std::vector<double> v = toDoubles(x);
    for (int64_t axis = -3; axis < 3; ++axis) {
      int64_t a = axis < 0 ? axis + 3 : axis;
      int64_t size = shape[a];
      std::vector<int64_t> sizes = {1, size - 3, 0, 2};
      std::vector<Tensor> pieces = split(x, axis, sizes);
      ASSERT_EQ(pieces.size(), 4u);
      int64_t start = 0;
      for (size_t p = 0; p < pieces.size(); ++p) {
        Shape ps = shape;
        ps[a] = sizes[p];
        ASSERT_EQ(pieces[p].shape(), ps);
        std::vector<double> pv = toDoubles(pieces[p]);
        for (int64_t i = 0; i < pieces[p].numel(); ++i) {
          std::vector<int64_t> idx = unravel(i, ps);
          idx[a] += start;
          ASSERT_EQ(pv[i], v[ravel(idx, shape)]);
        }
        start += sizes[p];
      }
      Tensor back = concat(pieces, axis);
      EXPECT_EQ(back.shape(), shape);
      EXPECT_EQ(toDoubles(back), v);
    }
  }
  expectError(
      [] {
        split(zeros({4}, DType::f32), 0, {1, 2});
      },
      "sizes add up to 3");
  expectError(
      [] {
        concat({zeros({2, 3}, DType::f32), zeros({3, 3}, DType::f32)}, 1);
      },
      "differ outside the concatenation axis");
}

TEST(Layout, GatherEveryAxis) {
  Shape shape = {4, 5, 3};
  Tensor data = randn(shape, DType::f32, 5);
  std::vector<double> v = toDoubles(data);
  for (DType idt : {DType::i64, DType::i32}) {
    for (int64_t axis = 0; axis < 3; ++axis) {
      Tensor idx = randint({2, 3}, idt, 0, shape[axis] - 1, 6 + axis);
      std::vector<double> iv = toDoubles(idx);
      Tensor r = gather(data, idx, axis);
      Shape expected(shape.begin(), shape.begin() + axis);
      expected.push_back(2);
      expected.push_back(3);
      expected.insert(expected.end(), shape.begin() + axis + 1, shape.end());
      ASSERT_EQ(r.shape(), expected);
      std::vector<double> rv = toDoubles(r);
      for (int64_t i = 0; i < r.numel(); ++i) {
        std::vector<int64_t> oi = unravel(i, expected), di;
        for (int64_t d = 0; d < axis; ++d)
          di.push_back(oi[d]);
        di.push_back(static_cast<int64_t>(iv[oi[axis] * 3 + oi[axis + 1]]));
        for (int64_t d = axis + 2; d < static_cast<int64_t>(oi.size()); ++d)
          di.push_back(oi[d]);
        ASSERT_EQ(rv[i], v[ravel(di, shape)]);
      }
    }
  }
  // The embedding lookup of the model: wte[idx] with idx B x T.
  Tensor table = randn({84, 32}, DType::f32, 1);
  Tensor ids = randint({4, 32}, DType::i64, 0, 83, 2);
  EXPECT_EQ(gather(table, ids, 0).shape(), (Shape{4, 32, 32}));
  expectError(
      [&] {
        gather(table, fromValues({2}, DType::i64, {3, 84}), 0);
      },
      "index 84 at position 1 is outside [0, 84)");
  expectError([&] { gather(table, fromValues({1}, DType::i64, {-1}), 0); },
              "index -1");
}

// The layout ops move bf16 elements as they are: the same op on the f32
// values of a bf16 tensor gives the same values, bit for bit.
TEST(Layout, Bf16MovesExactly) {
  Tensor f =
      cast(cast(randn({2, 3, 4}, DType::f32, 11), DType::bf16), DType::f32);
  Tensor b = cast(f, DType::bf16);
  auto same = [](const Tensor &bf16, const Tensor &f32) {
    EXPECT_EQ(bf16.dtype(), DType::bf16);
    EXPECT_EQ(bf16.shape(), f32.shape());
    EXPECT_EQ(toDoubles(bf16), toDoubles(f32));
  };
  same(transpose(b, {2, 0, 1}), transpose(f, {2, 0, 1}));
  same(reshape(b, {6, 4}), reshape(f, {6, 4}));
  same(slice(b, {0, 1, 0}, {2, 3, 4}, {1, 1, 2}),
       slice(f, {0, 1, 0}, {2, 3, 4}, {1, 1, 2}));
  same(concat({b, b}, 1), concat({f, f}, 1));
  same(split(b, 2, {1, 3})[1], split(f, 2, {1, 3})[1]);
  same(broadcast_to(b, {5, 2, 3, 4}), broadcast_to(f, {5, 2, 3, 4}));
  Tensor idx = fromValues({2}, DType::i64, {1, 0});
  same(gather(b, idx, 1), gather(f, idx, 1));
}
