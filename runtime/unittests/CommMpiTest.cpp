//===- CommMpiTest.cpp - the MPI communicators against serial results -----===//
//
// Runs under mpirun (test/Runtime/mpi-comm.test, 2 and 4 ranks), not through
// lit's GoogleTest discovery. Every rank runs every test in the same order,
// so the collectives match; each rank derives every other rank's input from
// its rank number, computes the serial result with the tsr ops (concat,
// split) and a left fold, and checks its own output bit for bit.
//
// Groups cover the world, singletons and proper subsets used concurrently
// (ranks {0,2} and {1,3} of 4 at the same time). At the end rank 0 prints
// "TesseraCommMpiTest: N ranks: P passed, F failed" (a test passes when it
// passes on every rank) and the exit code is non-zero if any rank failed.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "CommCommon.h"
#include "Mpi.h"
#include "World.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#ifdef __linux__
#include <sched.h>
#include <unistd.h>
#endif

using namespace tessera::rt;
using namespace tessera::rt::test;

namespace {

const DType kAllTypes[] = {DType::f32, DType::f64, DType::i32,
                           DType::i64, DType::i1,  DType::bf16};
const ReduceKind kAllKinds[] = {ReduceKind::sum, ReduceKind::max,
                                ReduceKind::min};

int64_t me() { return worldRank(); }
int64_t world() { return worldSize(); }

/// The groups this rank belongs to, each a list every member computes
/// alike: the world, itself, the ranks of its parity ({0,2} and {1,3} of 4
/// run concurrently), its half of the world, and all ranks but 0.
std::vector<std::vector<int64_t>> myGroups() {
  std::vector<std::vector<int64_t>> groups;
  auto add = [&](std::vector<int64_t> g) {
    if (std::find(g.begin(), g.end(), me()) != g.end() &&
        std::find(groups.begin(), groups.end(), g) == groups.end())
      groups.push_back(g);
  };
  std::vector<int64_t> all, parity, half, tail;
  for (int64_t r = 0; r < world(); ++r) {
    all.push_back(r);
    if (r % 2 == me() % 2)
      parity.push_back(r);
    if ((r < world() / 2) == (me() < world() / 2))
      half.push_back(r);
    if (r > 0)
      tail.push_back(r);
  }
  add(all);
  add({me()});
  add(parity);
  add(half);
  add(tail);
  return groups;
}

/// The input of world rank `rank` for a test: random values of `dtype`,
/// deterministic in (rank, seed), so that any rank can compute any other's.
Tensor inputOf(int64_t rank, const Shape &shape, DType dtype, unsigned seed) {
  unsigned s = seed * 131 + static_cast<unsigned>(rank) * 7919 + 1;
  switch (dtype) {
  case DType::f32:
  case DType::f64:
    return randn(shape, dtype, s);
  case DType::i1:
    return randint(shape, dtype, 0, 1, s);
  case DType::bf16:
    return cast(randn(shape, DType::f32, s), DType::bf16);
  default:
    return randint(shape, dtype, -1000, 1000, s);
  }
}

template <typename T> T combineRef(T a, T b, ReduceKind kind) {
  if (kind == ReduceKind::sum)
    return a + b;
  if (kind == ReduceKind::max)
    return std::max(a, b);
  return std::min(a, b);
}

template <typename T>
void foldRef(std::vector<double> &acc, const std::vector<double> &x,
             ReduceKind kind) {
  for (size_t i = 0; i < acc.size(); ++i)
    acc[i] = static_cast<double>(
        combineRef<T>(static_cast<T>(acc[i]), static_cast<T>(x[i]), kind));
}

/// The serial reduction: ((x_0 op x_1) op x_2) ... in the dtype's
/// arithmetic (i1: or / and).
Tensor reduceRef(const std::vector<Tensor> &xs, ReduceKind kind) {
  std::vector<double> acc = toDoubles(xs[0]);
  DType dtype = xs[0].dtype();
  for (size_t j = 1; j < xs.size(); ++j) {
    std::vector<double> x = toDoubles(xs[j]);
    switch (dtype) {
    case DType::f32:
      foldRef<float>(acc, x, kind);
      break;
    case DType::f64:
      foldRef<double>(acc, x, kind);
      break;
    case DType::i32:
      foldRef<int32_t>(acc, x, kind);
      break;
    case DType::i64:
      foldRef<int64_t>(acc, x, kind);
      break;
    case DType::i1:
      foldRef<bool>(
          acc, x, kind == ReduceKind::min ? ReduceKind::min : ReduceKind::max);
      break;
    case DType::bf16: // folded in f32, rounded once (by fromValues)
      foldRef<float>(acc, x, kind);
      break;
    }
  }
  return fromValues(xs[0].shape(), dtype, acc);
}

std::vector<Tensor> inputsOf(const std::vector<int64_t> &group,
                             const Shape &shape, DType dtype, unsigned seed) {
  std::vector<Tensor> xs;
  for (int64_t r : group)
    xs.push_back(inputOf(r, shape, dtype, seed));
  return xs;
}

/// A seed that the members of `group` agree on, whatever other groups each
/// of them ran before.
unsigned groupSeed(const std::vector<int64_t> &group, unsigned base) {
  unsigned seed = base;
  for (int64_t r : group)
    seed = seed * 31 + static_cast<unsigned>(r) + 1;
  return seed * 1000;
}

int64_t position(const std::vector<int64_t> &group, int64_t rank) {
  return std::find(group.begin(), group.end(), rank) - group.begin();
}

/// Exact equality of shape, dtype and every element.
void expectSame(const Tensor &actual, const Tensor &expected,
                const std::string &what) {
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  std::vector<double> a = toDoubles(actual), e = toDoubles(expected);
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i)
    bad += !(a[i] == e[i]);
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << a.size()
                     << " elements differ";
}

std::string describe(const std::vector<int64_t> &group, DType dtype) {
  std::string s = "ranks [";
  for (size_t i = 0; i < group.size(); ++i)
    s += (i ? "," : "") + std::to_string(group[i]);
  return s + "] " + dtypeName(dtype);
}

std::vector<int64_t> splitSizes(int64_t total, int64_t n) {
  return std::vector<int64_t>(n, total / n);
}

//===----------------------------------------------------------------------===//
// Placement (TESSERA_CPU_SPREAD)
//===----------------------------------------------------------------------===//

TEST(CommMpi, SpreadPicksTheCpuAtTheRanksEntryModuloTheCount) {
  std::vector<int> cpus = {2, 5, 7};
  EXPECT_EQ(comm::spreadCpu("0 1 1 2", 0, 4, cpus), 2);
  EXPECT_EQ(comm::spreadCpu("0 1 1 2", 2, 4, cpus), 5);
  EXPECT_EQ(comm::spreadCpu("0 1 1 2", 3, 4, cpus), 7);
  EXPECT_EQ(comm::spreadCpu("0,1,4,2", 2, 4, cpus), 5); // 4 mod 3
  EXPECT_EQ(comm::spreadCpu(" 3  0 ", 0, 2, {4, 6}), 6);
  EXPECT_THROW(comm::spreadCpu("0 1 2", 0, 4, cpus), Error);   // a rank short
  EXPECT_THROW(comm::spreadCpu("0 1 x 2", 0, 4, cpus), Error); // not a number
  EXPECT_THROW(comm::spreadCpu("0 -1", 0, 2, cpus), Error);
  EXPECT_THROW(comm::spreadCpu("0 1", 0, 2, {}), Error);
}

// Under TESSERA_CPU_SPREAD (test/Runtime/mpi-comm.test sets it for 4
// ranks) each rank runs on one CPU: the same CPU for equal entries, and
// different ones for entries one apart when the host has two or more.
TEST(CommMpi, SpreadBindsEachRankToItsCpu) {
  const char *spread = std::getenv("TESSERA_CPU_SPREAD");
  if (!spread || !*spread)
    GTEST_SKIP() << "TESSERA_CPU_SPREAD is not set";
#ifdef __linux__
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  ASSERT_EQ(CPU_COUNT(&mask), 1);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &mask))
    ++cpu;
  std::vector<int> cpus(size_t(world()), 0);
  MPI_Allgather(&cpu, 1, MPI_INT, cpus.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<int64_t> entries;
  for (const char *c = spread; *c;) {
    char *end = nullptr;
    entries.push_back(std::strtoll(c, &end, 10));
    c = end;
    while (*c == ' ' || *c == ',')
      ++c;
  }
  ASSERT_EQ(int64_t(entries.size()), world());
  bool several = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
  for (size_t i = 0; i < entries.size(); ++i)
    for (size_t j = 0; j < entries.size(); ++j) {
      if (entries[i] == entries[j])
        EXPECT_EQ(cpus[i], cpus[j]) << "ranks " << i << " and " << j;
      if (several && std::abs(entries[i] - entries[j]) == 1)
        EXPECT_NE(cpus[i], cpus[j]) << "ranks " << i << " and " << j;
    }
#endif
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

TEST(CommMpi, WorldMatchesMpi) {
  EXPECT_GE(world(), 2);
  EXPECT_GE(me(), 0);
  EXPECT_LT(me(), world());
}

// Small tensors take the gather-and-fold path, the larger one (and an odd
// element count, so chunks are uneven) the chunked path; both must equal the
// serial left fold exactly.
TEST(CommMpi, AllReduceEveryKindAndType) {
  const Shape shapes[] = {{}, {3, 5}, {37, 263}};
  for (const auto &group : myGroups()) {
    unsigned seed = groupSeed(group, 1);
    for (DType dtype : kAllTypes)
      for (ReduceKind kind : kAllKinds)
        for (const Shape &shape : shapes) {
          ++seed;
          std::vector<Tensor> xs = inputsOf(group, shape, dtype, seed);
          Tensor out = all_reduce(xs[position(group, me())], group, kind);
          expectSame(out, reduceRef(xs, kind),
                     "all_reduce " + describe(group, dtype) + " kind " +
                         std::to_string(static_cast<int>(kind)) + " shape " +
                         shapeToString(shape));
        }
  }
}

TEST(CommMpi, AllReduceSumOfTwoIsExactlyAPlusB) {
  if (world() < 2)
    return;
  std::vector<int64_t> pair = {0, 1};
  if (me() > 1)
    return;
  Tensor a = inputOf(0, {1000}, DType::f32, 77);
  Tensor b = inputOf(1, {1000}, DType::f32, 77);
  Tensor out = all_reduce(me() == 0 ? a : b, pair, ReduceKind::sum);
  expectSame(out, add(a, b), "a + b");
  // Every rank holds the same bits, in either order of the operands.
  expectSame(out, add(b, a), "b + a");
}

TEST(CommMpi, AllGatherEveryDim) {
  const Shape shape = {2, 3, 4};
  for (const auto &group : myGroups()) {
    unsigned seed = groupSeed(group, 2);
    for (DType dtype : kAllTypes)
      for (int64_t dim : {0, 1, 2, -1}) {
        std::vector<Tensor> xs = inputsOf(group, shape, dtype, ++seed);
        Tensor out = all_gather(xs[position(group, me())], group, dim);
        expectSame(out, concat(xs, dim),
                   "all_gather " + describe(group, dtype) + " dim " +
                       std::to_string(dim));
      }
  }
}

TEST(CommMpi, ReduceScatterEveryDim) {
  for (const auto &group : myGroups()) {
    unsigned seed = groupSeed(group, 3);
    int64_t n = group.size();
    // Dim 0: contiguous pieces; dims 1 and 2: strided runs (the MPI backend
    // sends them as vector datatypes and folds them as they arrive).
    Shape shape = {2 * n, 3 * n, 4 * n};
    for (DType dtype : kAllTypes)
      for (ReduceKind kind : kAllKinds)
        for (int64_t dim : {0, 2, 1}) {
          if (shape[dim] % n != 0)
            continue;
          std::vector<Tensor> xs = inputsOf(group, shape, dtype, ++seed);
          Tensor out =
              reduce_scatter(xs[position(group, me())], group, dim, kind);
          Tensor full = reduceRef(xs, kind);
          Tensor expected = split(
              full, dim, splitSizes(shape[dim], n))[position(group, me())];
          expectSame(out, expected,
                     "reduce_scatter " + describe(group, dtype) + " dim " +
                         std::to_string(dim));
        }
  }
}

TEST(CommMpi, AllToAllEveryDimPair) {
  const std::pair<int64_t, int64_t> dims[] = {{0, 0}, {0, 1}, {1, 0},
                                              {2, 1}, {1, 2}, {2, 2}};
  for (const auto &group : myGroups()) {
    unsigned seed = groupSeed(group, 4);
    int64_t n = group.size();
    Shape shape = {2 * n, 3 * n, 2 * n};
    for (DType dtype : kAllTypes)
      for (auto [splitDim, concatDim] : dims) {
        std::vector<Tensor> xs = inputsOf(group, shape, dtype, ++seed);
        Tensor out =
            all_to_all(xs[position(group, me())], group, splitDim, concatDim);
        // Piece `me` of every member's input, concatenated in group order.
        std::vector<Tensor> pieces;
        for (const Tensor &x : xs)
          pieces.push_back(
              split(x, splitDim,
                    splitSizes(shape[splitDim], n))[position(group, me())]);
        expectSame(out, concat(pieces, concatDim),
                   "all_to_all " + describe(group, dtype) + " split " +
                       std::to_string(splitDim) + " concat " +
                       std::to_string(concatDim));
      }
  }
}

TEST(CommMpi, BroadcastFromEveryRoot) {
  for (const auto &group : myGroups()) {
    unsigned seed = groupSeed(group, 5);
    for (DType dtype : kAllTypes)
      for (int64_t root : group) {
        std::vector<Tensor> xs = inputsOf(group, {4, 3}, dtype, ++seed);
        Tensor out = broadcast(xs[position(group, me())], group, root);
        expectSame(out, xs[position(group, root)],
                   "broadcast " + describe(group, dtype) + " root " +
                       std::to_string(root));
      }
  }
}

TEST(CommMpi, EmptyTensors) {
  std::vector<int64_t> all;
  for (int64_t r = 0; r < world(); ++r)
    all.push_back(r);
  Tensor x = zeros({0, 3}, DType::f32);
  EXPECT_EQ(all_reduce(x, all, ReduceKind::sum).shape(), (Shape{0, 3}));
  EXPECT_EQ(all_gather(x, all, 1).shape(), (Shape{0, 3 * world()}));
}

TEST(CommMpi, InvalidGroupsAreErrors) {
  auto message = [](auto fn) -> std::string {
    try {
      fn();
    } catch (const Error &e) {
      return e.what();
    }
    return "no error";
  };
  Tensor x = zeros({4}, DType::f32);
  int64_t other = (me() + 1) % world();
  EXPECT_NE(message([&] { all_reduce(x, {other}, ReduceKind::sum); })
                .find("the calling rank " + std::to_string(me()) +
                      " is not in the group"),
            std::string::npos);
  EXPECT_NE(message([&] {
              all_gather(x, {std::max(me(), other), std::min(me(), other)}, 0);
            }).find("sorted"),
            std::string::npos);
  EXPECT_NE(message([&] {
              broadcast(x, {me(), world()}, me());
            }).find("outside the world"),
            std::string::npos);
  EXPECT_NE(message([&] {
              broadcast(x, {me()}, other);
            }).find("the root is not in the group"),
            std::string::npos);
  // Raised before any message, on every rank alike.
  std::vector<int64_t> all;
  for (int64_t r = 0; r < world(); ++r)
    all.push_back(r);
  EXPECT_NE(message([&] {
              reduce_scatter(zeros({world() + 1}, DType::f32), all, 0,
                             ReduceKind::sum);
            }).find("does not divide into"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Point to point
//===----------------------------------------------------------------------===//

TEST(CommMpi, SendRecvRingWithTags) {
  int64_t next = (me() + 1) % world(), prev = (me() + world() - 1) % world();
  std::vector<Tensor> sent;
  for (DType dtype : kAllTypes) {
    // Sent in the order tag 2, tag 1, tag 1 (again); received by tag first,
    // and in order for equal tags.
    Tensor a = inputOf(me(), {3, 4}, dtype, 10);
    Tensor b = inputOf(me(), {5}, dtype, 11);
    Tensor c = inputOf(me(), {2, 2, 2}, dtype, 12);
    send(a, next, 2);
    send(b, next, 1);
    send(c, next, 1);
    Tensor gotB = recv({5}, dtype, prev, 1);
    Tensor gotC = recv({2, 2, 2}, dtype, prev, 1);
    Tensor gotA = recv({3, 4}, dtype, prev, 2);
    std::string what = std::string("from rank ") + std::to_string(prev) + " " +
                       dtypeName(dtype);
    expectSame(gotA, inputOf(prev, {3, 4}, dtype, 10), "tag 2 " + what);
    expectSame(gotB, inputOf(prev, {5}, dtype, 11), "first tag 1 " + what);
    expectSame(gotC, inputOf(prev, {2, 2, 2}, dtype, 12),
               "second tag 1 " + what);
  }
  // To itself, and a scalar.
  send(scalar(42, DType::i64), me(), 9);
  EXPECT_EQ(item(recv({}, DType::i64, me(), 9)), 42);
  waitSends();
}

// Sends never block: every rank sends before anyone receives, more data
// than MPI's eager limit, and the tensors may be released by the sender.
TEST(CommMpi, SendsDoNotBlock) {
  int64_t next = (me() + 1) % world(), prev = (me() + world() - 1) % world();
  for (int i = 0; i < 40; ++i) {
    Tensor x = inputOf(me(), {64 * 1024}, DType::f32, 100 + i);
    send(x, next, 3);
    x.release();
  }
  for (int i = 0; i < 40; ++i)
    expectSame(recv({64 * 1024}, DType::f32, prev, 3),
               inputOf(prev, {64 * 1024}, DType::f32, 100 + i),
               "message " + std::to_string(i));
  waitSends();
}

TEST(CommMpi, RecvShapeMismatchNamesBoth) {
  int64_t next = (me() + 1) % world(), prev = (me() + world() - 1) % world();
  send(zeros({4, 4}, DType::f32), next, 5);
  std::string message = "no error";
  try {
    recv({4, 8}, DType::f32, prev, 5);
  } catch (const Error &e) {
    message = e.what();
  }
  EXPECT_NE(message.find("recv from rank " + std::to_string(prev) +
                         " (tag 5): expected f32 4x8, rank " +
                         std::to_string(prev) + " sent f32 4x4"),
            std::string::npos)
      << message;
  // A dtype mismatch, then the same tag still works: the mismatched message
  // was consumed whole.
  send(zeros({2}, DType::i32), next, 5);
  send(full({3}, DType::f64, 1.5), next, 5);
  message = "no error";
  try {
    recv({2}, DType::i64, prev, 5);
  } catch (const Error &e) {
    message = e.what();
  }
  EXPECT_NE(message.find("expected i64 2, rank " + std::to_string(prev) +
                         " sent i32 2"),
            std::string::npos)
      << message;
  expectSame(recv({3}, DType::f64, prev, 5), full({3}, DType::f64, 1.5),
             "after a mismatch");
  EXPECT_THROW(send(zeros({1}, DType::f32), next, -1), Error);
  waitSends();
}

/// Prints only failures, with the rank: the ranks other than 0 use it
/// instead of GoogleTest's full output.
class FailurePrinter : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult &result) override {
    if (result.failed())
      std::fprintf(stderr, "[rank %lld] %s:%d: failure\n%s\n",
                   static_cast<long long>(me()), result.file_name(),
                   result.line_number(), result.summary());
  }
};

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  try {
    startWorld(&argc, &argv);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  ::testing::TestEventListeners &listeners =
      ::testing::UnitTest::GetInstance()->listeners();
  if (me() != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter);
  }
  int rc = 0;
  try {
    rc = RUN_ALL_TESTS();
  } catch (const std::exception &e) {
    // An exception escaping a test would leave the other ranks waiting.
    std::fprintf(stderr, "error: rank %lld: %s\n", static_cast<long long>(me()),
                 e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  // A test passes when it passed on every rank.
  const ::testing::UnitTest &unit = *::testing::UnitTest::GetInstance();
  std::vector<int> failed(unit.total_test_count(), 0), anyFailed(failed.size());
  int index = 0;
  for (int s = 0; s < unit.total_test_suite_count(); ++s)
    for (int t = 0; t < unit.GetTestSuite(s)->total_test_count(); ++t)
      failed[index++] =
          unit.GetTestSuite(s)->GetTestInfo(t)->result()->Failed();
  MPI_Allreduce(failed.data(), anyFailed.data(), static_cast<int>(index),
                MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int nFailed = 0, nRun = unit.test_to_run_count();
  for (int f : anyFailed)
    nFailed += f;
  if (me() == 0)
    std::printf("TesseraCommMpiTest: %lld ranks: %d passed, %d failed\n",
                static_cast<long long>(world()), nRun - nFailed, nFailed);
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  finishWorld();
  return worst != 0 || nFailed != 0 ? 1 : 0;
}
