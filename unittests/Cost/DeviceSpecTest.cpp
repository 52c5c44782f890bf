//===- DeviceSpecTest.cpp - Device specs and the roofline -----------------===//

#include "tessera/Cost/DeviceSpec.h"
#include "tessera/Cost/Roofline.h"

#include <gtest/gtest.h>

using namespace tessera::cost;
using tessera::Exception;

namespace {

const char *kTinySpec = R"({
  "name": "tiny",
  "peak_flops": {"fp32": 1e12, "bf16": 4e12},
  "memory_bandwidth": 1e11,
  "memory_bytes": 1e9,
  "devices_per_node": 4,
  "intra_node": {"bandwidth": 1e10, "latency": 1e-6},
  "inter_node": {"bandwidth": 1e9, "latency": 1e-5}
})";

TEST(DeviceSpec, BundledSpecsLoadByName) {
  std::vector<std::string> names = bundledDeviceSpecNames();
  ASSERT_EQ(names.size(), 3u);
  DeviceSpec h100 = loadDeviceSpec("h100-sxm");
  EXPECT_EQ(h100.name, "h100-sxm");
  EXPECT_DOUBLE_EQ(h100.peakFlopsFor("bf16"), 9.894e14);
  EXPECT_DOUBLE_EQ(h100.memoryBandwidth, 3.35e12);
  EXPECT_EQ(h100.devicesPerNode, 8);
  EXPECT_GT(h100.intraNode.bandwidth, h100.interNode.bandwidth);
  DeviceSpec a100 = loadDeviceSpec("a100-sxm");
  EXPECT_DOUBLE_EQ(a100.peakFlopsFor("fp16"), 3.12e14);
  DeviceSpec cpu = loadDeviceSpec("cpu");
  EXPECT_EQ(cpu.devicesPerNode, 1);
  EXPECT_GT(cpu.peakFlopsFor("fp32"), 0);
}

TEST(DeviceSpec, ParsesAllFields) {
  DeviceSpec s = parseDeviceSpec(kTinySpec);
  EXPECT_EQ(s.name, "tiny");
  EXPECT_DOUBLE_EQ(s.memoryBytes, 1e9);
  EXPECT_DOUBLE_EQ(s.intraNode.latency, 1e-6);
  EXPECT_DOUBLE_EQ(s.interNode.bandwidth, 1e9);
}

TEST(DeviceSpec, ErrorsNameTheProblem) {
  auto expectError = [](const std::string &text, const std::string &what) {
    try {
      parseDeviceSpec(text, "spec.json");
      FAIL() << "accepted: " << text;
    } catch (const Exception &e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
          << e.what();
    }
  };
  expectError("{", "malformed JSON");
  expectError("[]", "expected a device spec (an object)");
  expectError(R"({"name": "x"})", "peak_flops");
  std::string noBw = kTinySpec;
  noBw.replace(noBw.find("\"memory_bandwidth\""), 18, "\"memory_bandwidthX\"");
  expectError(noBw, "memory_bandwidth");
  std::string negative = kTinySpec;
  negative.replace(negative.find("1e9,"), 3, "-5");
  expectError(negative, "memory_bytes");
  EXPECT_THROW(loadDeviceSpec("/nonexistent/spec.json"), Exception);
  EXPECT_THROW(parseDeviceSpec(kTinySpec).peakFlopsFor("fp8"), Exception);
}

// Every key known, every number finite and in range, the device count an
// integer that fits int.
TEST(DeviceSpec, RejectsUnknownKeysAndValuesOutOfRange) {
  auto expectError = [](const std::string &text, const std::string &what) {
    try {
      parseDeviceSpec(text, "spec.json");
      FAIL() << "accepted: " << text;
    } catch (const Exception &e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
          << e.what();
    }
  };
  auto replaced = [](std::string s, const std::string &from,
                     const std::string &to) {
    size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  expectError(
      replaced(kTinySpec, "\"memory_bandwidth\"", "\"memory_bandwith\""),
      "spec.json: unknown key 'memory_bandwith' (did you mean "
      "'memory_bandwidth'?)");
  expectError(replaced(kTinySpec, "\"latency\": 1e-6", "\"latncy\": 1e-6"),
              "spec.json: intra_node: unknown key 'latncy' (did you mean "
              "'latency'?)");
  expectError(replaced(kTinySpec, "\"devices_per_node\": 4",
                       "\"devices_per_node\": 2.5"),
              "devices_per_node: expected a device count (an integer in [1, "
              "1048576]), got 2.5");
  expectError(replaced(kTinySpec, "\"devices_per_node\": 4",
                       "\"devices_per_node\": 4294967297"),
              "got 4294967297");
  expectError(
      replaced(kTinySpec, "\"memory_bytes\": 1e9", "\"memory_bytes\": 1e999"),
      "spec.json: malformed JSON: number overflow parsing '1e999'");
  expectError(replaced(kTinySpec, "\"bf16\": 4e12", "\"bf16\": \"fast\""),
              "peak_flops.bf16: expected FLOP/s (a finite number > 0), got "
              "\"fast\"");
  expectError(replaced(kTinySpec, "\"name\": \"tiny\"", "\"name\": 3"),
              "name: expected the spec's name (a string), got 3");
}

TEST(DeviceSpec, ReadsOnlyRegularFiles) {
  auto loadError = [](const std::string &path) {
    try {
      loadDeviceSpec(path);
    } catch (const Exception &e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(loadError("/dev/zero"),
            "cannot read device spec '/dev/zero': it is not a regular file (a "
            "device, FIFO or socket)");
  EXPECT_EQ(loadError("/"), "cannot read device spec '/': it is a directory");
  EXPECT_EQ(loadError("/nonexistent/spec.json"),
            "unknown device spec '/nonexistent/spec.json' (not a bundled "
            "spec: h100-sxm, a100-sxm, cpu; not an existing file)");
}

TEST(Roofline, ComputeAndMemoryBound) {
  DeviceSpec s = parseDeviceSpec(kTinySpec);
  // Ridge at 1e12 / 1e11 = 10 FLOP/byte for fp32.
  EXPECT_DOUBLE_EQ(ridgePoint(s, "fp32"), 10.0);
  // Intensity 100: compute bound, 2e12 flops at 1e12 FLOP/s.
  EXPECT_DOUBLE_EQ(rooflineTime(s, 2e12, 2e10, "fp32"), 2.0);
  // Intensity 1: memory bound, 5e10 bytes at 1e11 B/s.
  EXPECT_DOUBLE_EQ(rooflineTime(s, 5e10, 5e10, "fp32"), 0.5);
  // bf16 is four times faster on the same flops.
  EXPECT_DOUBLE_EQ(rooflineTime(s, 4e12, 0, "bf16"), 1.0);
  EXPECT_THROW(rooflineTime(s, -1, 0, "fp32"), Exception);
}

// op_overhead, compute_slots, contention, core_wait, core_chance and
// block_start:
// optional, in range, and the overhead adds to every roofline time.
TEST(DeviceSpec, OpOverheadAndComputeSlots) {
  // The tiny spec with `keys` added.
  auto with = [](const char *keys) {
    std::string t = kTinySpec;
    t.insert(t.rfind('}'), keys);
    return t;
  };
  auto errorOf = [](std::string t) {
    try {
      parseDeviceSpec(t, "spec.json");
    } catch (const Exception &e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  // The error of the tiny spec with `keys`, which must name `key`.
  auto expectNamed = [&](const char *keys, const std::string &key) {
    std::string error = errorOf(with(keys));
    EXPECT_NE(error.find(key), std::string::npos) << error;
  };
  DeviceSpec plain = parseDeviceSpec(kTinySpec);
  EXPECT_EQ(plain.opOverhead, 0);
  EXPECT_EQ(plain.computeSlots, 4); // devices_per_node
  DeviceSpec s =
      parseDeviceSpec(with(R"(, "op_overhead": 2e-7, "compute_slots": 2.5)"));
  EXPECT_DOUBLE_EQ(s.opOverhead, 2e-7);
  EXPECT_DOUBLE_EQ(s.computeSlots, 2.5);
  EXPECT_DOUBLE_EQ(rooflineTime(s, 2e12, 0, "fp32"), 2.0 + 2e-7);
  EXPECT_EQ(errorOf(with(R"(, "compute_slots": 5)")),
            "spec.json: compute_slots: expected a number in "
            "[1, devices_per_node = 4], got 5");
  // contention: one positive slowdown per device of the node.
  EXPECT_EQ(parseDeviceSpec(with(R"(, "contention": [1, 1.1, 2, 2.5])"))
                .contention,
            (std::vector<double>{1, 1.1, 2, 2.5}));
  EXPECT_TRUE(plain.contention.empty());
  expectNamed(R"(, "contention": [1, 2])", "contention");
  expectNamed(R"(, "contention": [1, 0, 2, 2])", "contention");
  expectNamed(R"(, "op_overhead": -1)", "op_overhead");
  // core_wait: seconds, 0 unless given.
  EXPECT_EQ(plain.coreWait, 0);
  EXPECT_DOUBLE_EQ(parseDeviceSpec(with(R"(, "core_wait": 0.003)")).coreWait,
                   0.003);
  expectNamed(R"(, "core_wait": -0.001)", "core_wait");
  // core_chance: a probability.
  EXPECT_EQ(plain.coreChance, 0);
  EXPECT_DOUBLE_EQ(
      parseDeviceSpec(with(R"(, "core_chance": 0.7)")).coreChance, 0.7);
  EXPECT_EQ(errorOf(with(R"(, "core_chance": 1.5)")),
            "spec.json: core_chance: expected a probability in [0, 1], got 1.5");
  // block_start: seconds, 0 unless given.
  EXPECT_EQ(plain.blockStart, 0);
  EXPECT_DOUBLE_EQ(parseDeviceSpec(with(R"(, "block_start": 1e-5)")).blockStart,
                   1e-5);
  expectNamed(R"(, "block_start": -1e-6)", "block_start");
}

} // namespace
