//===- TensorTest.cpp - tensors, constants, the caching allocator ---------===//

#include "TestUtil.h"
#include <limits>

using namespace tessera::rt;
using namespace tessera::rt::test;

TEST(Tensor, ShapeAndAccessors) {
  Tensor t({2, 3, 4}, DType::f32);
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.rank(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 96);
  EXPECT_EQ(t.dim(1), 3);
  EXPECT_EQ(t.dim(-1), 4);
  EXPECT_THROW(t.dim(3), Error);
  EXPECT_THROW(t.data<double>(), Error); // dtype mismatch is caught
  Tensor s = scalar(2.5, DType::f64);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(item(s), 2.5);
  EXPECT_FALSE(Tensor().defined());
  EXPECT_THROW(Tensor({2, -1}, DType::f32), Error);
}

TEST(Tensor, CopiesShareStorageAndReleaseDropsOneReference) {
  Tensor a = fromValues({3}, DType::f32, {1, 2, 3});
  Tensor b = a;
  EXPECT_EQ(a.data<float>(), b.data<float>());
  a.release();
  EXPECT_FALSE(a.defined());
  EXPECT_EQ(a.shape(), (Shape{3})); // keeps its type
  EXPECT_THROW(a.data<float>(), Error);
  EXPECT_EQ(toDoubles(b), (std::vector<double>{1, 2, 3}));
  Tensor c = clone(b);
  EXPECT_NE(c.data<float>(), b.data<float>());
  EXPECT_EQ(toDoubles(c), toDoubles(b));
}

TEST(Tensor, ConstantsAndConversions) {
  EXPECT_EQ(toDoubles(full({2, 2}, DType::i64, 7)),
            (std::vector<double>{7, 7, 7, 7}));
  EXPECT_EQ(toDoubles(zeros({3}, DType::f64)), (std::vector<double>{0, 0, 0}));
  // Integers truncate toward zero, i1 is "nonzero".
  EXPECT_EQ(toDoubles(fromValues({4}, DType::i32, {1.9, -1.9, 0, 3})),
            (std::vector<double>{1, -1, 0, 3}));
  EXPECT_EQ(toDoubles(fromValues({3}, DType::i1, {0.5, 0, -2})),
            (std::vector<double>{1, 0, 1}));
  EXPECT_THROW(fromValues({2}, DType::f32, {1, 2, 3}), Error);
  EXPECT_THROW(item(zeros({2}, DType::f32)), Error);
  EXPECT_EQ(shapeToString({4, 8}), "4x8");
  EXPECT_EQ(shapeToString({}), "");
  EXPECT_EQ(dtypeSize(DType::i1), 1);
  EXPECT_STREQ(dtypeName(DType::i64), "i64");
}

TEST(Tensor, ZeroSizedTensors) {
  Tensor t({0, 5}, DType::f32);
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(toDoubles(add(t, t)).size(), 0u);
  EXPECT_EQ(
      matmul(Tensor({2, 0}, DType::f32), Tensor({0, 3}, DType::f32)).shape(),
      (Shape{2, 3}));
  EXPECT_EQ(
      toDoubles(matmul(zeros({2, 0}, DType::f64), zeros({0, 3}, DType::f64))),
      std::vector<double>(6, 0.0));
}

TEST(Allocator, LiveAndPeakFollowTensors) {
  int64_t base = liveBytes();
  resetPeak();
  EXPECT_EQ(peakBytes(), base);
  {
    Tensor a({1000}, DType::f32); // 4000 bytes
    EXPECT_EQ(liveBytes(), base + 4000);
    Tensor b({10}, DType::f64); // 80 bytes
    EXPECT_EQ(liveBytes(), base + 4080);
    Tensor alias = a; // shares storage: no new bytes
    EXPECT_EQ(liveBytes(), base + 4080);
    a.release();
    EXPECT_EQ(liveBytes(), base + 4080); // alias still holds it
    alias.release();
    EXPECT_EQ(liveBytes(), base + 80);
    EXPECT_EQ(peakBytes(), base + 4080);
  }
  EXPECT_EQ(liveBytes(), base);
  EXPECT_EQ(peakBytes(), base + 4080);
  resetPeak();
  EXPECT_EQ(peakBytes(), base);
}

TEST(Allocator, FreedBlocksAreReused) {
  // A steady-state step loop allocates the same sizes again: after the first
  // round every allocation must come from the cache.
  for (int i = 0; i < 2; ++i) {
    Tensor a({12345}, DType::f32), b({777}, DType::f64);
  }
  AllocatorStats before = allocatorStats();
  for (int i = 0; i < 5; ++i) {
    Tensor a({12345}, DType::f32), b({777}, DType::f64);
    Tensor c({12000}, DType::f32); // same size class as a, after a's block
    (void)c;
  }
  AllocatorStats after = allocatorStats();
  EXPECT_LE(after.systemAllocs - before.systemAllocs, 1);
  EXPECT_GE(after.cacheHits - before.cacheHits, 14);
  EXPECT_GT(after.cachedBytes, 0);
  emptyCache();
  EXPECT_EQ(allocatorStats().cachedBytes, 0);
}

TEST(Allocator, StorageIsAligned) {
  for (int64_t n : {1, 3, 17, 1000, 65537}) {
    Tensor t({n}, DType::f32);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.rawData()) % 64, 0u) << n;
  }
}

TEST(Tensor, FirstNonFinite) {
  double inf = std::numeric_limits<double>::infinity();
  double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor ok = fromValues({3}, DType::f32, {1, -2, 3e38});
  Tensor big = fromValues({2}, DType::f64, {1e300, -1e300});
  EXPECT_EQ(firstNonFinite({}), -1);
  EXPECT_EQ(firstNonFinite({ok, big, Tensor(), zeros({0}, DType::f32)}), -1);
  // Integer tensors hold no NaN; the last element and each kind is found.
  Tensor ints = fromValues({2}, DType::i64, {1, 2});
  for (double bad : {nan, inf, -inf}) {
    Tensor f32 = fromValues({4}, DType::f32, {0, 1, 2, bad});
    Tensor f64 = fromValues({2}, DType::f64, {bad, 0});
    EXPECT_EQ(firstNonFinite({ints, ok, f32}), 2) << bad;
    EXPECT_EQ(firstNonFinite({f64, f32}), 0) << bad;
  }
}

// The static memory plan: allocations of a slot's exact size go to the
// arena at its offset, once each; other sizes, host memory without a
// StaticMemory, and slots still busy go to the caching allocator.
TEST(StaticMemory, PlacesAllocationsAtTheirSlots) {
  char *base = nullptr;
  {
    StaticMemory memory(4096);
    memory.place({{1024, 400}, {0, 64}});
    Tensor a({100}, DType::f32); // 400 bytes: the slot at 1024
    Tensor b({16}, DType::f32);  // 64 bytes: the slot at 0
    Tensor c({16}, DType::f32);  // no slot left of its size
    base = static_cast<char *>(b.rawData());
    EXPECT_EQ(static_cast<char *>(a.rawData()), base + 1024);
    EXPECT_NE(static_cast<char *>(c.rawData()) - base, 0);
    AllocatorStats s = allocatorStats();
    EXPECT_EQ(s.arenaBytes, 4096);
    // Arena storage counts as live tensor memory, but not as the pool's.
    EXPECT_GE(s.liveBytes - s.poolLiveBytes, 464);
    int64_t conflicts = s.arenaConflicts;
    // A slot that meets a live storage (a at 1024..1424) is not used.
    memory.place({{1200, 40}});
    Tensor d({10}, DType::f32);
    EXPECT_FALSE(static_cast<char *>(d.rawData()) >= base &&
                 static_cast<char *>(d.rawData()) < base + 4096);
    EXPECT_EQ(allocatorStats().arenaConflicts, conflicts + 1);
    // Once a is gone, the same slot is free; an empty list drops what is
    // left of the op before.
    a.release();
    memory.place({{1200, 40}, {2048, 8}});
    Tensor e({10}, DType::f32);
    EXPECT_EQ(static_cast<char *>(e.rawData()), base + 1200);
    memory.place({});
    Tensor f({2}, DType::f32);
    EXPECT_NE(static_cast<char *>(f.rawData()), base + 2048);
  }
  // Outside a step nothing is placed; the arena stays for the next one.
  Tensor g({16}, DType::f32);
  EXPECT_NE(static_cast<char *>(g.rawData()), base);
  EXPECT_EQ(allocatorStats().arenaBytes, 4096);
  {
    StaticMemory memory(1024); // smaller: the same arena
    memory.place({{0, 64}});
    Tensor h({16}, DType::f32);
    EXPECT_EQ(static_cast<char *>(h.rawData()), base);
  }
}

// A larger arena replaces the block; a storage still in the old one keeps
// its memory (and its values) until it goes.
TEST(StaticMemory, GrowingKeepsLiveStorage) {
  Tensor kept;
  {
    StaticMemory memory(1 << 12);
    memory.place({{0, 32}});
    kept = fromValues({8}, DType::f32, {1, 2, 3, 4, 5, 6, 7, 8});
  }
  {
    StaticMemory memory(1 << 20);
    EXPECT_EQ(allocatorStats().arenaBytes, 1 << 20);
    memory.place({{0, 32}});
    Tensor t = full({8}, DType::f32, -1);
    EXPECT_NE(t.rawData(), kept.rawData());
  }
  EXPECT_EQ(toDoubles(kept), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}));
}
