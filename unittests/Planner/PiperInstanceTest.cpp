//===- PiperInstanceTest.cpp - Reading Piper's format and its errors ------===//

#include "tessera/Planner/PiperPlanner.h"

#include <gtest/gtest.h>

using namespace tessera::planner;

namespace {

const char *kTwoNodes = R"({
  "maxMemoryPerDevice": 1e9, "maxDevices": 2, "bandwidth": 1e9,
  "mbsInBatch": 4,
  "nodes": [
    {"id": 7, "name": "a", "TMPCs": {"1": [
      {"id": "vanilla", "timePerSample": 0.5, "parameterSize": 10,
       "memoryUsageA": 100, "memoryUsageB": 5,
       "syncTimeFw": {}, "syncTimeBw": {"9": 0}}]}},
    {"id": 9, "TMPCs": {"1": [
      {"id": "vanilla", "timePerSample": 0.25, "parameterSize": 0,
       "memoryUsageA": 100, "memoryUsageB": 0,
       "syncTimeFw": {"7": 0}, "syncTimeBw": {}}]}}
  ],
  "edges": [{"sourceId": 7, "destId": 9, "communicationCost": 1000}]
})";

void expectError(const std::string &text, const std::string &what) {
  try {
    parsePiperInstance(text, "in.json");
    FAIL() << "accepted input expected to fail with: " << what;
  } catch (const PlanError &e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
        << "message: " << e.what();
    EXPECT_NE(std::string(e.what()).find("in.json"), std::string::npos);
  }
}

std::string replaced(std::string s, const std::string &from,
                     const std::string &to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(PiperInstance, ParsesTheFormat) {
  PiperInstance ins = parsePiperInstance(kTwoNodes);
  EXPECT_EQ(ins.maxDevices, 2);
  EXPECT_EQ(ins.mbsInBatch, 4);
  ASSERT_EQ(ins.nodes.size(), 2u);
  EXPECT_EQ(ins.nodes[0].name, "a");
  EXPECT_DOUBLE_EQ(ins.nodes[0].configs.at(1)[0].memoryA, 100);
  EXPECT_DOUBLE_EQ(ins.edges[0].bytes, 1000);
  EXPECT_EQ(ins.nodes[1].configs.at(1)[0].syncFw.count(7), 1u);
}

TEST(PiperInstance, MalformedAndMissingFieldsAreErrors) {
  expectError("{\"maxDevices\": ", "malformed JSON");
  expectError("[1, 2]", "JSON object");
  expectError(replaced(kTwoNodes, "\"mbsInBatch\": 4,", ""),
              "missing field 'mbsInBatch'");
  expectError(replaced(kTwoNodes, "\"maxDevices\": 2", "\"maxDevices\": 2.5"),
              "'maxDevices' must be an integer");
  expectError(replaced(kTwoNodes, "\"timePerSample\": 0.5,", ""),
              "missing field 'timePerSample'");
  expectError(replaced(kTwoNodes, "\"bandwidth\": 1e9", "\"bandwidth\": \"x\""),
              "'bandwidth' must be a number");
  expectError(replaced(kTwoNodes, "{\"1\": [", "{\"one\": ["),
              "is not an integer");
}

TEST(PiperInstance, InconsistentGraphsAreErrors) {
  expectError(
      replaced(kTwoNodes, "\"syncTimeFw\": {\"7\": 0}", "\"syncTimeFw\": {}"),
      "syncTimeFw lacks incoming edge from 7");
  expectError(
      replaced(kTwoNodes, "\"syncTimeBw\": {}", "\"syncTimeBw\": {\"7\": 1}"),
      "has no edge from this node");
  expectError(replaced(kTwoNodes, "\"destId\": 9", "\"destId\": 8"),
              "endpoint is not a node");
  expectError(replaced(kTwoNodes, "{\"id\": 9,", "{\"id\": 7,"),
              "duplicate node id 7");
  expectError(
      replaced(kTwoNodes, "\"memoryUsageB\": 5", "\"memoryUsageB\": -5"),
      "non-negative");
  // A back edge 9 -> 7 closes a cycle.
  std::string cyclic = replaced(kTwoNodes, "\"edges\": [",
                                "\"edges\": [{\"sourceId\": 9, \"destId\": 7, "
                                "\"communicationCost\": 1},");
  cyclic = replaced(cyclic, "\"syncTimeFw\": {}, \"syncTimeBw\": {\"9\": 0}",
                    "\"syncTimeFw\": {\"9\": 0}, \"syncTimeBw\": {\"9\": 0}");
  cyclic = replaced(cyclic, "\"syncTimeFw\": {\"7\": 0}, \"syncTimeBw\": {}",
                    "\"syncTimeFw\": {\"7\": 0}, \"syncTimeBw\": {\"7\": 0}");
  expectError(cyclic, "cycle");
}

TEST(PiperInstance, NoFeasiblePlanIsAClearError) {
  // Two nodes of 100*y + 5 bytes cannot fit in 150 bytes anywhere.
  PiperInstance ins = parsePiperInstance(replaced(
      kTwoNodes, "\"maxMemoryPerDevice\": 1e9", "\"maxMemoryPerDevice\": 90"));
  try {
    planPiper(ins);
    FAIL() << "planned an instance that does not fit";
  } catch (const PlanError &e) {
    EXPECT_NE(std::string(e.what()).find("no feasible plan"),
              std::string::npos);
  }
}

TEST(PiperInstance, PlansTheTwoNodeGraph) {
  PiperInstance ins = parsePiperInstance(kTwoNodes);
  PlannerOptions opts;
  opts.objective = Objective::Piper;
  Plan plan = planPiper(ins, opts);
  // Two devices: either both nodes with d=2 (0.75/2 + resync 4*1*10/(2*4)/1e9)
  // or one node per stage (0.5 + 2000/1e9 for the slower one). y=1 with d=2
  // fits (205 <= 1e9), so one stage with d=2 wins.
  ASSERT_EQ(plan.stages.size(), 1u);
  EXPECT_EQ(plan.stages[0].d, 2);
  EXPECT_EQ(plan.stages[0].nodeIds, (std::vector<int>{7, 9}));
  EXPECT_NEAR(plan.timePerSample, 0.375 + 40.0 / 8 / 1e9, 1e-15);
}

} // namespace
