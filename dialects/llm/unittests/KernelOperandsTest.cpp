//===- KernelOperandsTest.cpp - what the llm kernels reject ---------------===//
//
// The operand rules (runtime/common/Operands.cpp) that the CPU and CUDA
// kernels share, through the CPU kernels: each bad operand is an Error
// naming the op and what is wrong, never a crash or a wrong result. The
// CUDA kernels must give the same messages (their GPU check compares them).
//
//===----------------------------------------------------------------------===//

#include "tessera/llm/Runtime.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

using namespace tessera::rt;

namespace {

/// The message of the Error fn throws ("" when it throws none).
std::string errorOf(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

Tensor ones(const Shape &shape, DType dtype = DType::f32) {
  return full(shape, dtype, 1.0);
}

} // namespace

TEST(LlmKernelOperands, RmsNorm) {
  EXPECT_EQ(errorOf([] { llm::rms_norm(ones({4, 6}), ones({5}), 1e-5); }),
            "llm::rms_norm: weight is 5 f32, expected [6] f32");
  EXPECT_EQ(errorOf([] {
              llm::rms_norm(ones({4, 6}), ones({6}, DType::f64), 1e-5);
            }),
            "llm::rms_norm: weight is 6 f64, expected [6] f32");
  EXPECT_EQ(errorOf([] {
              llm::rms_norm(ones({4, 6}, DType::i64), ones({6}), 1e-5);
            }),
            "llm::rms_norm: expected f32 or f64 tensors, got i64");
  EXPECT_EQ(errorOf([] { llm::rms_norm(Tensor(), ones({6}), 1e-5); }),
            "llm::rms_norm: an operand is undefined");
  EXPECT_EQ(errorOf([] {
              llm::rms_norm_grad(ones({4, 5}), ones({4, 6}), ones({6}),
                                 ones({4, 1}));
            }),
            "llm::rms_norm_grad: grad is 4x5 f32, expected 4x6 f32");
  EXPECT_EQ(errorOf([] {
              llm::rms_norm_grad(ones({4, 6}), ones({4, 6}), ones({6}),
                                 ones({4}));
            }),
            "llm::rms_norm_grad: rstd is 4, expected 4x1");
}

TEST(LlmKernelOperands, SwigluAndSilu) {
  EXPECT_EQ(errorOf([] { llm::swiglu(ones({2, 3}), ones({3, 2})); }),
            "llm::swiglu: up is 3x2 f32, expected 2x3 f32");
  EXPECT_EQ(errorOf([] { llm::silu(ones({2}, DType::i1)); }),
            "llm::silu: expected f32 or f64 tensors, got i1");
}

TEST(LlmKernelOperands, Rope) {
  EXPECT_EQ(errorOf([] {
              llm::rope(ones({8}), ones({1, 8}), ones({1, 8}), false, false);
            }),
            "llm::rope: the input must have rank >= 2, got 8");
  EXPECT_EQ(errorOf([] {
              llm::rope(ones({2, 4, 5}), ones({4, 5}), ones({4, 5}), false,
                        false);
            }),
            "llm::rope: the last dimension must be even, got 5");
  EXPECT_EQ(errorOf([] {
              llm::rope(ones({2, 4, 6}), ones({5, 6}), ones({4, 6}), false,
                        false);
            }),
            "llm::rope: cos is 5x6 f32, expected 4x6 f32");
  EXPECT_EQ(errorOf([] {
              llm::rope(ones({2, 4, 6}), ones({4, 6}),
                        ones({4, 6}, DType::f64), true, false);
            }),
            "llm::rope: sin is 4x6 f64, expected 4x6 f32");
  EXPECT_EQ(errorOf([] { llm::rope_tables(1e4, false, {4, 5}, DType::f32); }),
            "llm::rope_tables: the tables' shape must be [t, d] with d even, "
            "got 4x5");
  EXPECT_EQ(errorOf([] { llm::rope_tables(1e4, false, {4, 6}, DType::i32); }),
            "llm::rope_tables: expected f32 or f64 tensors, got i32");
}

TEST(LlmKernelOperands, RepeatKv) {
  EXPECT_EQ(errorOf([] { llm::repeat_kv(ones({4, 6}), 2); }),
            "llm::repeat_kv: expected [.., h, t, d] and repeats >= 1, got 4x6 "
            "and 2");
  EXPECT_EQ(errorOf([] { llm::repeat_kv(ones({1, 2, 4, 6}), 0); }),
            "llm::repeat_kv: expected [.., h, t, d] and repeats >= 1, got "
            "1x2x4x6 and 0");
  // Any dtype is copied, exactly: output head i is input head i / repeats.
  Tensor x = fromValues({1, 2, 1, 2}, DType::i64, {1, 2, 3, 4});
  EXPECT_EQ(toDoubles(llm::repeat_kv(x, 2)),
            (std::vector<double>{1, 2, 1, 2, 3, 4, 3, 4}));
}

TEST(LlmKernelOperands, Attention) {
  EXPECT_EQ(errorOf([] {
              llm::attention(ones({4}), ones({4}), ones({4}), 1.0, false);
            }),
            "llm::attention: the query must have rank >= 2, got 4");
  EXPECT_EQ(errorOf([] {
              llm::attention(ones({2, 4, 8}), ones({2, 5, 6}), ones({2, 5, 8}),
                             1.0, false);
            }),
            "llm::attention: key is 2x5x6 f32, expected 2x5x8 f32");
  EXPECT_EQ(errorOf([] {
              llm::attention(ones({2, 4, 8}), ones({3, 5, 8}), ones({2, 5, 8}),
                             1.0, false);
            }),
            "llm::attention: key is 3x5x8 f32, expected 2x5x8 f32");
  EXPECT_EQ(errorOf([] {
              llm::attention(ones({2, 4, 8}), ones({2, 5, 8}), ones({2, 4, 3}),
                             1.0, false);
            }),
            "llm::attention: value is 2x4x3 f32, expected 2x5x3 f32");
  EXPECT_EQ(errorOf([] {
              llm::attention(ones({2, 4, 8}), ones({2, 5, 8}), ones({2, 5, 3}),
                             1.0, true);
            }),
            "llm::attention: a causal attention needs as many keys as "
            "queries, got 5 and 4");
  EXPECT_EQ(errorOf([] {
              llm::attention_grad(ones({2, 4, 3}), ones({2, 4, 8}),
                                  ones({2, 5, 8}), ones({2, 5, 3}),
                                  ones({2, 4, 3}), ones({2, 4}), 1.0, false);
            }),
            "llm::attention_grad: lse is 2x4 f32, expected 2x4x1 f32");
  EXPECT_EQ(errorOf([] {
              llm::attention_grad(ones({2, 4, 8}), ones({2, 4, 8}),
                                  ones({2, 5, 8}), ones({2, 5, 3}),
                                  ones({2, 4, 3}), ones({2, 4, 1}), 1.0, false);
            }),
            "llm::attention_grad: grad is 2x4x8 f32, expected 2x4x3 f32");
}
