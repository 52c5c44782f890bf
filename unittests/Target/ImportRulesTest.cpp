//===- ImportRulesTest.cpp - the ONNX importer's rule table ---------------===//
//
// Lookup by (domain, op type, opset): the rule of the greatest version not
// above the model's opset, none below the first version, replacement of a
// registered version, and the core families' registrations.
//
//===----------------------------------------------------------------------===//

#include "tessera/Target/ONNX/ImportRules.h"

#include "gtest/gtest.h"

using namespace tessera::onnx_import;

namespace {

/// A rule that fails with a marker in `seen`, so a test can tell rules
/// apart without an ImportContext.
ImportRule marker(int id, int &seen) {
  return [id, &seen](ImportContext &) {
    seen = id;
    return mlir::failure();
  };
}

int call(const ImportRule *rule, int &seen) {
  seen = 0;
  if (!rule)
    return -1;
  Model model;
  mlir::MLIRContext ctx;
  ImportOptions options;
  ImportRuleRegistry none;
  ImportContext context(model, &ctx, options, none);
  (void)(*rule)(context);
  return seen;
}

TEST(ImportRules, LookupPicksTheGreatestVersionNotAboveTheOpset) {
  ImportRuleRegistry r;
  int seen = 0;
  r.add("Slice", marker(1, seen), 1);
  r.add("Slice", marker(10, seen), 10);
  r.add("Slice", marker(13, seen), 13);
  EXPECT_EQ(call(r.lookup("", "Slice", 1), seen), 1);
  EXPECT_EQ(call(r.lookup("", "Slice", 9), seen), 1);
  EXPECT_EQ(call(r.lookup("", "Slice", 10), seen), 10);
  EXPECT_EQ(call(r.lookup("", "Slice", 12), seen), 10);
  EXPECT_EQ(call(r.lookup("", "Slice", 17), seen), 13);
}

TEST(ImportRules, NoRuleBelowTheFirstVersionOrInAnotherDomain) {
  ImportRuleRegistry r;
  int seen = 0;
  r.add("Gelu", marker(20, seen), 20);
  r.add("Rope", marker(1, seen), 1, "com.example");
  EXPECT_EQ(r.lookup("", "Gelu", 17), nullptr);
  EXPECT_TRUE(r.has("", "Gelu"));
  EXPECT_EQ(r.lookup("", "Rope", 17), nullptr);
  EXPECT_FALSE(r.has("", "Rope"));
  EXPECT_EQ(call(r.lookup("com.example", "Rope", 1), seen), 1);
  EXPECT_FALSE(r.has("com.example", "Gelu"));
}

TEST(ImportRules, AddingTheSameVersionAgainReplacesIt) {
  ImportRuleRegistry r;
  int seen = 0;
  r.add("Tanh", marker(1, seen), 6);
  r.add("Tanh", marker(2, seen), 6);
  r.add("Tanh", marker(3, seen), 1);
  EXPECT_EQ(call(r.lookup("", "Tanh", 6), seen), 2);
  EXPECT_EQ(call(r.lookup("", "Tanh", 5), seen), 3);
}

TEST(ImportRules, CoreFamiliesAreRegistered) {
  ImportRuleRegistry &r = importRules();
  for (const char *op :
       {"Constant", "Identity", "Add", "Tanh", "Gelu", "Cast", "MatMul",
        "Gemm", "LayerNormalization", "ReduceMean", "Reshape", "Slice",
        "Gather", "Dropout", "SoftmaxCrossEntropyLoss"})
    EXPECT_NE(r.lookup("", op, 17), nullptr) << op;
  EXPECT_EQ(r.lookup("", "Hardmax", 17), nullptr);
}

} // namespace
