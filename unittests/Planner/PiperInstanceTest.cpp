//===- PiperInstanceTest.cpp - Reading Piper's format and its errors ------===//

#include "tessera/Planner/PiperPlanner.h"

#include <gtest/gtest.h>

using namespace tessera::planner;
using tessera::Exception;

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
  } catch (const Exception &e) {
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
  expectError("[1, 2]", "expected a Piper input (an object)");
  expectError(replaced(kTwoNodes, "\"mbsInBatch\": 4,", ""),
              "in.json: missing key 'mbsInBatch'");
  expectError(replaced(kTwoNodes, "\"maxDevices\": 2", "\"maxDevices\": 2.5"),
              "maxDevices: expected a device count (an integer in [1, "
              "1000000]), got 2.5");
  expectError(replaced(kTwoNodes, "\"timePerSample\": 0.5,", ""),
              "nodes[0].TMPCs.1[0]: missing key 'timePerSample'");
  expectError(replaced(kTwoNodes, "\"bandwidth\": 1e9", "\"bandwidth\": \"x\""),
              "bandwidth: expected bytes per second (a finite number > 0), "
              "got \"x\"");
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
      "nodes[0].TMPCs.1[0].memoryUsageB: expected a size in bytes (a finite "
      "number >= 0), got -5");
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

// Every key is known: a misspelt one would otherwise be "missing" at best
// or, for an optional one, silently absent.
TEST(PiperInstance, UnknownKeysAreErrorsWithASuggestion) {
  expectError(replaced(kTwoNodes, "\"maxDevices\"", "\"maxDevicse\""),
              "in.json: unknown key 'maxDevicse' (did you mean 'maxDevices'?)");
  expectError(replaced(kTwoNodes, "\"name\": \"a\"", "\"nmae\": \"a\""),
              "in.json: nodes[0]: unknown key 'nmae' (did you mean 'name'?)");
  expectError(
      replaced(kTwoNodes, "\"communicationCost\"", "\"communicationCosts\""),
      "edges[0]: unknown key 'communicationCosts' (did you mean "
      "'communicationCost'?)");
  expectError(replaced(kTwoNodes, "\"mbsInBatch\": 4", "\"maxBatchSize\": 4"),
              "unknown key 'maxBatchSize' (Piper's README name");
  expectError(replaced(kTwoNodes, "\"maxDevices\": 2,",
                       "\"maxDevices\": 2, \"maxDevices\": 4,"),
              "in.json: duplicate key 'maxDevices'");
}

// Integers are range-checked before narrowing to int; counts are bounded
// because the planner keeps tables of min(N, K) entries.
TEST(PiperInstance, OutOfRangeValuesAreErrors) {
  expectError(
      replaced(kTwoNodes, "\"maxDevices\": 2", "\"maxDevices\": 2147483648"),
      "maxDevices: expected a device count (an integer in [1, "
      "1000000]), got 2147483648");
  expectError(replaced(kTwoNodes, "\"mbsInBatch\": 4", "\"mbsInBatch\": 0"),
              "mbsInBatch: expected a micro-batch count (an integer in [1, "
              "1000000]), got 0");
  expectError(replaced(kTwoNodes, "{\"id\": 9,", "{\"id\": 4294967305,"),
              "nodes[1].id: expected a node id");
  expectError(replaced(kTwoNodes, "\"bandwidth\": 1e9", "\"bandwidth\": 1e999"),
              "in.json: malformed JSON: number overflow parsing '1e999'");
  expectError(replaced(kTwoNodes, "{\"1\": [", "{\"4294967297\": ["),
              "nodes[0].TMPCs: key '4294967297' is not an integer");
  // t x min(N, K) + K must fit the planner's int device counts.
  expectError(replaced(replaced(kTwoNodes, "{\"1\": [", "{\"2000000000\": ["),
                       "\"maxDevices\": 2", "\"maxDevices\": 1000"),
              "node 7, t=2000000000: tensor-parallel degree too large");
  expectError(replaced(kTwoNodes, "\"syncTimeBw\": {\"9\": 0}",
                       "\"syncTimeBw\": {\"9\": -1}"),
              "nodes[0].TMPCs.1[0].syncTimeBw.9: expected extra bytes on the "
              "edge (a finite number >= 0), got -1");
}

TEST(PiperInstance, ReadsOnlyRegularFiles) {
  auto loadError = [](const std::string &path) {
    try {
      loadPiperInstance(path);
    } catch (const Exception &e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(loadError("/dev/zero"),
            "cannot read Piper input '/dev/zero': it is not a regular file (a "
            "device, FIFO or socket)");
  EXPECT_EQ(loadError("/"), "cannot read Piper input '/': it is a directory");
}

TEST(PiperInstance, NoFeasiblePlanIsAClearError) {
  // Two nodes of 100*y + 5 bytes cannot fit in 150 bytes anywhere.
  PiperInstance ins = parsePiperInstance(replaced(
      kTwoNodes, "\"maxMemoryPerDevice\": 1e9", "\"maxMemoryPerDevice\": 90"));
  try {
    planPiper(ins);
    FAIL() << "planned an instance that does not fit";
  } catch (const Exception &e) {
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
