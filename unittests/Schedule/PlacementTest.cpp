//===- PlacementTest.cpp - Placement parsing and checks -------------------===//

#include "tessera/Schedule/Placement.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

using namespace tessera::schedule;
using nlohmann::json;
using tessera::Exception;

namespace {

json twoBlocks() {
  return json::parse(R"({"name": "t", "ndevs": 2, "blocks": [
    {"id": 0, "kind": "F", "span": 1, "memory": 1, "devices": [0], "deps": []},
    {"id": 7, "kind": "B", "span": 2, "memory": -1, "devices": [0, 1],
     "deps": [0]}]})");
}

std::string errorOf(const json &j) {
  try {
    parsePlacement(j);
  } catch (const Exception &e) {
    return e.what();
  }
  return "";
}

TEST(PlacementTest, ParsesFieldsAndBuildsGraph) {
  Placement p = parsePlacement(twoBlocks());
  EXPECT_EQ(p.name, "t");
  ASSERT_EQ(p.blocks.size(), 2u);
  EXPECT_EQ(p.blocks[1].kind, BlockKind::Backward);
  PlacementGraph g(p);
  EXPECT_EQ(g.indexOf(7), 1);
  EXPECT_EQ(g.indexOf(3), -1);
  EXPECT_EQ(g.preds(1), std::vector<int>{0});
  EXPECT_EQ(g.busy(0), 3);
  EXPECT_EQ(g.busy(1), 2);
  EXPECT_EQ(g.lowerBound(), 3);
  EXPECT_EQ(g.netMemory(0), 0);
  EXPECT_EQ(g.netMemory(1), -1);
  EXPECT_EQ(g.minDistance(0, 1), 1);
  EXPECT_EQ(g.minDistance(1, 0), PlacementGraph::kNoPath);
}

TEST(PlacementTest, RoundTripsThroughJson) {
  Placement p = parsePlacement(twoBlocks());
  Placement q = parsePlacement(placementToJson(p));
  EXPECT_EQ(placementToJson(p), placementToJson(q));
}

TEST(PlacementTest, RejectsUnknownDependency) {
  json j = twoBlocks();
  j["blocks"][1]["deps"] = {5};
  EXPECT_NE(errorOf(j).find("unknown dependency 5"), std::string::npos);
}

TEST(PlacementTest, RejectsCycle) {
  json j = twoBlocks();
  j["blocks"][0]["deps"] = {7};
  EXPECT_NE(errorOf(j).find("cycle"), std::string::npos);
}

TEST(PlacementTest, RejectsBadFields) {
  json j = twoBlocks();
  j["blocks"][1]["id"] = 0;
  EXPECT_NE(errorOf(j).find("duplicate block id 0"), std::string::npos);
  j = twoBlocks();
  j["blocks"][0]["devices"] = {2};
  EXPECT_NE(errorOf(j).find("out of range"), std::string::npos);
  j = twoBlocks();
  j["blocks"][0]["kind"] = "X";
  EXPECT_NE(errorOf(j).find("unknown kind 'X'"), std::string::npos);
  j = twoBlocks();
  j["blocks"][0]["span"] = 0;
  EXPECT_NE(errorOf(j).find("blocks[0].span: expected a span in time steps "
                            "(an integer in [1, 4294967296]), got 0"),
            std::string::npos);
  j = twoBlocks();
  j["blocks"][0].erase("span");
  EXPECT_NE(errorOf(j).find("blocks[0]: missing key 'span'"),
            std::string::npos);
  j = twoBlocks();
  j["ndevs"] = "two";
  EXPECT_NE(errorOf(j).find("ndevs: expected a device count (an integer in "
                            "[1, 4096]), got \"two\""),
            std::string::npos);
  EXPECT_NE(errorOf(json::array()).find("expected a placement (an object)"),
            std::string::npos);
}

// Values beyond the fields' int are refused, never truncated (2^31 would
// become a negative id, 2^32 device 0, 2^64 - 1 memory -1).
TEST(PlacementTest, RejectsValuesOutOfRange) {
  json j = twoBlocks();
  j["blocks"][1]["id"] = 2147483648LL;
  EXPECT_NE(errorOf(j).find("blocks[1].id: expected a block id (an integer "
                            "in [-2147483648, 2147483647]), got 2147483648"),
            std::string::npos);
  j = twoBlocks();
  j["blocks"][1]["deps"] = {4294967296LL};
  EXPECT_NE(errorOf(j).find("blocks[1].deps[0]: expected a block id"),
            std::string::npos);
  j = twoBlocks();
  j["blocks"][0]["devices"] = {4294967296LL};
  EXPECT_NE(errorOf(j).find("blocks[0].devices[0]: expected a device index "
                            "(an integer in [0, 2147483647]), got 4294967296"),
            std::string::npos);
  j = twoBlocks();
  j["blocks"][0]["memory"] = 18446744073709551615ULL;
  EXPECT_NE(errorOf(j).find("blocks[0].memory: expected a memory delta (an "
                            "integer in [-2147483647, 2147483647]), got "
                            "18446744073709551615"),
            std::string::npos);
  j = twoBlocks();
  j["blocks"][0]["span"] = int64_t(1) << 40;
  EXPECT_NE(errorOf(j).find("blocks[0].span: expected a span in time steps"),
            std::string::npos);
  j = twoBlocks();
  j["ndevs"] = 5000;
  EXPECT_NE(errorOf(j).find("ndevs: expected a device count (an integer in "
                            "[1, 4096]), got 5000"),
            std::string::npos);
  j = twoBlocks();
  json block = j["blocks"][0];
  j["blocks"] = json::array();
  for (int i = 0; i < 4097; ++i) {
    block["id"] = i;
    j["blocks"].push_back(block);
  }
  EXPECT_NE(errorOf(j).find("blocks: expected the blocks of one micro-batch "
                            "(an array of 1 to 4096 elements), got an array "
                            "of 4097 elements"),
            std::string::npos);
}

// A misspelt optional key would otherwise mean "absent" (memory 0).
TEST(PlacementTest, RejectsUnknownKeysWithASuggestion) {
  json j = twoBlocks();
  j["blocks"][0]["memmory"] = 1;
  EXPECT_NE(errorOf(j).find("blocks[0]: unknown key 'memmory' (did you mean "
                            "'memory'?)"),
            std::string::npos);
  j = twoBlocks();
  j["ndev"] = 2;
  EXPECT_NE(errorOf(j).find("unknown key 'ndev' (did you mean 'ndevs'?)"),
            std::string::npos);
  j = twoBlocks();
  j["blocks"][0]["kind"] = 1;
  EXPECT_NE(errorOf(j).find("blocks[0].kind: expected a block kind (a "
                            "string), got 1"),
            std::string::npos);
  j = twoBlocks();
  j["blocks"][0]["deps"] = 0;
  EXPECT_NE(errorOf(j).find("blocks[0].deps: expected a list of block ids (an "
                            "array), got 0"),
            std::string::npos);
}

TEST(PlacementTest, ReadsOnlyRegularFiles) {
  auto loadError = [](const std::string &path) {
    try {
      loadPlacement(path);
    } catch (const Exception &e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(loadError("/dev/zero"),
            "cannot read placement file '/dev/zero': it is not a regular file "
            "(a device, FIFO or socket)");
  EXPECT_EQ(loadError("/"), "cannot read placement file '/': it is a "
                            "directory");
}

TEST(PlacementTest, MissingFileIsAnError) {
  EXPECT_THROW(loadPlacement("/nonexistent/placement.json"), Exception);
}

} // namespace
