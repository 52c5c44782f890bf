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

} // namespace
