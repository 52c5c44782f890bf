//===- KernelCheck.cpp - the llm CUDA kernels against the CPU ones --------===//
//
// Needs a GPU (test/Runtime/gpu/run_gpu_checks.sh builds and runs it). Every
// llm kernel runs on both backends on the same random non-zero inputs, in
// f32 and f64, with outputs poisoned first; results must agree within the
// core check's bounds (1e-5 relative for f32, 1e-10 for f64: row sums
// accumulate in double on both, in a different order, and exp/sin/cos differ
// by a few ulp between the host and device libraries), and shape errors must
// be the CPU kernels' errors.
//
//===----------------------------------------------------------------------===//

#include "KernelCheck.h"

// The llm API of both backends (as the core's in KernelCheck.h).
#include "tessera/llm/Runtime.h"
#undef TESSERA_LLM_RUNTIME_H
#define tessera tessera_cpu
#include "tessera/llm/Runtime.h"
#undef tessera

#include <string>

namespace cllm = tessera_cpu::rt::llm;
namespace gllm = tessera::rt::llm;

namespace {

/// Shapes with rows of several lengths: shorter than a warp, not a multiple
/// of the block, longer than the block.
const std::vector<std::vector<int64_t>> kRowShapes = {
    {3, 7}, {2, 5, 64}, {4, 300}, {1, 1030}};

/// The message of what fn throws ("" when it does not throw).
template <typename E, typename Fn> std::string errorOf(Fn fn) {
  try {
    fn();
  } catch (const E &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(LlmCuda, RmsNormAndItsGradient) {
  for (cpu::DType dt : kFloats)
    for (const auto &shape : kRowShapes) {
      std::string what =
          "rms_norm " + cpu::shapeToString(shape) + " " + cpu::dtypeName(dt);
      Pair x = random(shape, dt), w = random({shape.back()}, dt);
      auto [cy, crstd] = cllm::rms_norm(x.c, w.c, 1e-5);
      auto [gy, grstd] = gllm::rms_norm(x.g, w.g, 1e-5);
      expectClose(cy, gy, what + " y");
      expectClose(crstd, grstd, what + " rstd");
      Pair g = random(shape, dt);
      // Both gradients from the same rstd (the CPU one), so that only the
      // gradient kernels are compared.
      gpu::Tensor rstd =
          gpu::fromValues(crstd.shape(), toGpu(dt), cpu::toDoubles(crstd));
      auto [cdx, cdw] = cllm::rms_norm_grad(g.c, x.c, w.c, crstd);
      auto [gdx, gdw] = gllm::rms_norm_grad(g.g, x.g, w.g, rstd);
      expectClose(cdx, gdx, what + " dx");
      expectClose(cdw, gdw, what + " dweight");
    }
}

TEST(LlmCuda, RmsNormGradientOverManyRows) {
  // More rows than one chunk of the two-pass weight gradient (32 rows per
  // chunk, at most 256 chunks): 9000 rows of 96.
  Pair x = random({9000, 96}), w = random({96}), g = random({9000, 96});
  auto [cy, crstd] = cllm::rms_norm(x.c, w.c, 1e-6);
  gpu::Tensor rstd =
      gpu::fromValues(crstd.shape(), gpu::DType::f32, cpu::toDoubles(crstd));
  auto [cdx, cdw] = cllm::rms_norm_grad(g.c, x.c, w.c, crstd);
  auto [gdx, gdw] = gllm::rms_norm_grad(g.g, x.g, w.g, rstd);
  expectClose(cdx, gdx, "dx");
  expectClose(cdw, gdw, "dweight");
}

TEST(LlmCuda, SiluAndSwiglu) {
  for (cpu::DType dt : kFloats)
    for (const auto &shape : kRowShapes) {
      std::string what = cpu::shapeToString(shape) + " " + cpu::dtypeName(dt);
      Pair a = random(shape, dt, -8, 8), b = random(shape, dt);
      expectClose(cllm::silu(a.c), gllm::silu(a.g), "silu " + what);
      expectClose(cllm::swiglu(a.c, b.c), gllm::swiglu(a.g, b.g),
                  "swiglu " + what);
    }
}

TEST(LlmCuda, RopeBothConventionsAndTranspose) {
  for (cpu::DType dt : kFloats)
    for (bool interleaved : {false, true}) {
      auto [cc, cs] = cllm::rope_tables(10000.0, interleaved, {12, 16}, dt);
      auto [gc, gs] =
          gllm::rope_tables(10000.0, interleaved, {12, 16}, toGpu(dt));
      std::string what = std::string(interleaved ? "interleaved " : "half ") +
                         cpu::dtypeName(dt);
      expectClose(cc, gc, "rope_tables cos " + what);
      expectClose(cs, gs, "rope_tables sin " + what);
      // Tables of random values, not the real ones, so that every product
      // of the kernel is checked against an independent operand.
      Pair x = random({2, 3, 12, 16}, dt), c = random({12, 16}, dt),
           s = random({12, 16}, dt);
      for (bool transpose : {false, true})
        expectClose(cllm::rope(x.c, c.c, s.c, interleaved, transpose),
                    gllm::rope(x.g, c.g, s.g, interleaved, transpose),
                    "rope " + what + (transpose ? " transposed" : ""));
    }
}

TEST(LlmCuda, RepeatKvCopiesExactly) {
  for (cpu::DType dt : {cpu::DType::f32, cpu::DType::f64, cpu::DType::i64})
    for (int64_t repeats : {1, 2, 3}) {
      Pair x = random({2, 2, 5, 8}, dt, -100, 100);
      expectEqual(cllm::repeat_kv(x.c, repeats), gllm::repeat_kv(x.g, repeats),
                  "repeat_kv x" + std::to_string(repeats) + " " +
                      cpu::dtypeName(dt));
    }
}

TEST(LlmCuda, AttentionAndItsGradient) {
  // Causal and not, tile-crossing lengths, more keys than queries.
  struct Case {
    std::vector<int64_t> q, k, v;
    bool causal;
  };
  const Case cases[] = {{{2, 3, 70, 16}, {2, 3, 70, 16}, {2, 3, 70, 16}, true},
                        {{2, 5, 16}, {2, 9, 16}, {2, 9, 24}, false},
                        {{1, 1, 1, 8}, {1, 1, 1, 8}, {1, 1, 1, 8}, true}};
  for (cpu::DType dt : kFloats)
    for (const Case &c : cases) {
      std::string what = "attention " + cpu::shapeToString(c.q) +
                         (c.causal ? " causal " : " ") + cpu::dtypeName(dt);
      Pair q = random(c.q, dt), k = random(c.k, dt), v = random(c.v, dt);
      auto [cy, clse] = cllm::attention(q.c, k.c, v.c, 0.3, c.causal);
      auto [gy, glse] = gllm::attention(q.g, k.g, v.g, 0.3, c.causal);
      expectClose(cy, gy, what + " y");
      expectClose(clse, glse, what + " lse");
      // Both gradients from the CPU forward's y and lse.
      Pair g = random(cy.shape(), dt);
      gpu::Tensor y =
          gpu::fromValues(cy.shape(), toGpu(dt), cpu::toDoubles(cy));
      gpu::Tensor lse =
          gpu::fromValues(clse.shape(), toGpu(dt), cpu::toDoubles(clse));
      auto [cdq, cdk, cdv] =
          cllm::attention_grad(g.c, q.c, k.c, v.c, cy, clse, 0.3, c.causal);
      auto [gdq, gdk, gdv] =
          gllm::attention_grad(g.g, q.g, k.g, v.g, y, lse, 0.3, c.causal);
      expectClose(cdq, gdq, what + " dq");
      expectClose(cdk, gdk, what + " dk");
      expectClose(cdv, gdv, what + " dv");
    }
}

TEST(LlmCuda, EmptyTensors) {
  Pair x = random({0, 8}), w = random({8});
  auto [cy, crstd] = cllm::rms_norm(x.c, w.c, 1e-5);
  auto [gy, grstd] = gllm::rms_norm(x.g, w.g, 1e-5);
  expectEqual(cy, gy, "rms_norm y");
  auto [cdx, cdw] = cllm::rms_norm_grad(x.c, x.c, w.c, crstd);
  auto [gdx, gdw] = gllm::rms_norm_grad(x.g, x.g, w.g, grstd);
  expectEqual(cdw, gdw, "rms_norm_grad dweight (zeros)");
  expectEqual(cllm::silu(x.c), gllm::silu(x.g), "silu");
}

TEST(LlmCuda, SameErrorsAsTheCpuKernels) {
  Pair x = random({4, 6}), w = random({5}), i = randomIndices({4, 6}, 3);
  auto same = [](const std::string &c, const std::string &g) {
    EXPECT_FALSE(c.empty());
    EXPECT_EQ(c, g);
  };
  same(errorOf<cpu::Error>([&] { cllm::rms_norm(x.c, w.c, 1e-5); }),
       errorOf<gpu::Error>([&] { gllm::rms_norm(x.g, w.g, 1e-5); }));
  same(errorOf<cpu::Error>([&] { cllm::silu(i.c); }),
       errorOf<gpu::Error>([&] { gllm::silu(i.g); }));
  same(errorOf<cpu::Error>([&] { cllm::rope(x.c, w.c, w.c, false, false); }),
       errorOf<gpu::Error>([&] { gllm::rope(x.g, w.g, w.g, false, false); }));
  same(errorOf<cpu::Error>([&] { cllm::repeat_kv(x.c, 2); }),
       errorOf<gpu::Error>([&] { gllm::repeat_kv(x.g, 2); }));
  same(errorOf<cpu::Error>([&] { cllm::attention(x.c, w.c, w.c, 1.0, true); }),
       errorOf<gpu::Error>([&] { gllm::attention(x.g, w.g, w.g, 1.0, true); }));
}
