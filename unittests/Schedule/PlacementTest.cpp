//===- PlacementTest.cpp - Placement parsing and checks -------------------===//

#include "tessera/Schedule/Placement.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

using namespace tessera::schedule;
using nlohmann::json;

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
  } catch (const ScheduleError &e) {
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
  EXPECT_NE(errorOf(j).find("span must be >= 1"), std::string::npos);
  j = twoBlocks();
  j["blocks"][0].erase("span");
  EXPECT_NE(errorOf(j).find("missing field 'span'"), std::string::npos);
  j = twoBlocks();
  j["ndevs"] = "two";
  EXPECT_NE(errorOf(j).find("'ndevs' must be an integer"), std::string::npos);
  EXPECT_NE(errorOf(json::array()).find("expected a JSON object"),
            std::string::npos);
}

TEST(PlacementTest, MissingFileIsAnError) {
  EXPECT_THROW(loadPlacement("/nonexistent/placement.json"), ScheduleError);
}

} // namespace
