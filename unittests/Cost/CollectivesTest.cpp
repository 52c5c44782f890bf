//===- CollectivesTest.cpp - Alpha-beta collective costs ------------------===//

#include "tessera/Cost/Collectives.h"

#include <gtest/gtest.h>

using namespace tessera::cost;
using tessera::Exception;

namespace {

const LinkSpec kLink{1e9, 1e-5}; // 1 GB/s, 10 us

TEST(Collectives, RingFormulas) {
  // 8 ranks, 8e8 bytes: all-reduce moves 2 * 7/8 of the buffer per rank.
  EXPECT_DOUBLE_EQ(collectiveTime(Collective::AllReduce,
                                  CollectiveAlgorithm::Ring, 8e8, 8, kLink),
                   14 * 1e-5 + 2 * 0.875 * 0.8);
  EXPECT_DOUBLE_EQ(collectiveTime(Collective::AllGather,
                                  CollectiveAlgorithm::Ring, 8e8, 8, kLink),
                   7 * 1e-5 + 0.875 * 0.8);
  EXPECT_DOUBLE_EQ(collectiveTime(Collective::ReduceScatter,
                                  CollectiveAlgorithm::Ring, 8e8, 8, kLink),
                   7 * 1e-5 + 0.875 * 0.8);
  EXPECT_DOUBLE_EQ(collectiveTime(Collective::Broadcast,
                                  CollectiveAlgorithm::Ring, 8e8, 8, kLink),
                   7 * 1e-5 + 0.8);
}

TEST(Collectives, TreeFormulas) {
  EXPECT_DOUBLE_EQ(collectiveTime(Collective::AllReduce,
                                  CollectiveAlgorithm::Tree, 8e8, 8, kLink),
                   2 * 3 * 1e-5 + 2 * 0.8);
  // Non-power-of-two groups round the depth up.
  EXPECT_DOUBLE_EQ(collectiveTime(Collective::Broadcast,
                                  CollectiveAlgorithm::Tree, 1e9, 5, kLink),
                   3 * 1e-5 + 1.0);
}

TEST(Collectives, DegenerateGroups) {
  EXPECT_EQ(collectiveTime(Collective::AllReduce, CollectiveAlgorithm::Ring,
                           1e9, 1, kLink),
            0.0);
  EXPECT_DOUBLE_EQ(collectiveTime(Collective::SendRecv,
                                  CollectiveAlgorithm::Ring, 1e9, 2, kLink),
                   1e-5 + 1.0);
  EXPECT_THROW(collectiveTime(Collective::AllReduce, CollectiveAlgorithm::Ring,
                              1, 0, kLink),
               Exception);
  EXPECT_THROW(parseCollective("all_reduce_please"), Exception);
  EXPECT_EQ(parseCollective("reduce_scatter"), Collective::ReduceScatter);
  EXPECT_STREQ(collectiveName(Collective::AllToAll), "all_to_all");
}

TEST(Collectives, BestPicksTreeForSmallAndRingForLarge) {
  DeviceSpec spec;
  spec.devicesPerNode = 8;
  spec.intraNode = LinkSpec{1e11, 5e-6};
  spec.interNode = LinkSpec{1e10, 1e-5};
  // 64 ranks span nodes: the inter-node link is used.
  EXPECT_EQ(&linkForGroup(spec, 64), &spec.interNode);
  EXPECT_EQ(&linkForGroup(spec, 8), &spec.intraNode);
  double small = bestCollectiveTime(spec, Collective::AllReduce, 1e3, 64);
  EXPECT_DOUBLE_EQ(small, collectiveTime(Collective::AllReduce,
                                         CollectiveAlgorithm::Tree, 1e3, 64,
                                         spec.interNode));
  double large = bestCollectiveTime(spec, Collective::AllReduce, 1e10, 64);
  EXPECT_DOUBLE_EQ(large, collectiveTime(Collective::AllReduce,
                                         CollectiveAlgorithm::Ring, 1e10, 64,
                                         spec.interNode));
}

TEST(Collectives, AlphaBetaFormIsTheSameModel) {
  // The spec's link and its alpha-beta form price every collective alike.
  const AlphaBeta ab = alphaBeta(kLink);
  EXPECT_EQ(ab.alpha, 1e-5);
  EXPECT_EQ(ab.beta, 1.0 / 1e9);
  for (int k = 0; k <= static_cast<int>(Collective::SendRecv); ++k)
    for (auto algorithm :
         {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree})
      for (int ranks : {1, 2, 3, 8}) {
        Collective kind = static_cast<Collective>(k);
        CollectiveTraffic t = collectiveTraffic(kind, algorithm, 1e6, ranks);
        EXPECT_EQ(collectiveTime(kind, algorithm, 1e6, int64_t(ranks), ab),
                  t.messages * ab.alpha + t.bytes * ab.beta);
        EXPECT_DOUBLE_EQ(
            collectiveTime(kind, algorithm, 1e6, ranks, kLink),
            collectiveTime(kind, algorithm, 1e6, int64_t(ranks), ab));
      }
  // A ring all-gather of n shards of B sends (n-1) B per rank.
  EXPECT_EQ(collectiveTraffic(Collective::AllGather, CollectiveAlgorithm::Ring,
                              4 * 128.0, 4)
                .bytes,
            3 * 128.0);
  EXPECT_EQ(
      collectiveTraffic(Collective::SendRecv, CollectiveAlgorithm::Ring, 10, 1)
          .messages,
      1);
}

TEST(Collectives, LinkForGroupWithStride) {
  DeviceSpec spec;
  spec.devicesPerNode = 8;
  // 4 ranks 2 apart span 8 devices: one node; 4 ranks 4 apart do not.
  EXPECT_EQ(&linkForGroup(spec, 4, 2), &spec.intraNode);
  EXPECT_EQ(&linkForGroup(spec, 4, 4), &spec.interNode);
}

} // namespace
