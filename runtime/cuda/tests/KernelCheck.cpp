//===- KernelCheck.cpp - the CUDA backend against the CPU backend ---------===//
//
// Needs a GPU (test/Runtime/gpu/run_gpu_checks.sh). Every op of Ops.h (and
// the CUDA extras of Cuda.h) runs on both backends on the same random
// non-zero inputs; results must agree within 1e-5 relative for f32 (1e-10
// for f64, 1e-2 for bf16 GEMMs). New GPU storage is poisoned with NaN
// (TESSERA_CUDA_POISON), so an element a kernel fails to write shows up.
// How both backends live in one program: KernelCheck.h.
//
//===----------------------------------------------------------------------===//

#include "KernelCheck.h"

#include <iostream>

TEST(CudaDevice, HasAGpu) {
  gpu::CudaDeviceInfo info = gpu::cudaDeviceInfo();
  EXPECT_GE(info.count, 1);
  std::cout << "device " << info.device << ": " << info.name << " (sm_"
            << info.major << info.minor << ", " << info.totalBytes / (1 << 20)
            << " MiB)\n";
}

TEST(CudaTensor, ConstantsAndCopies) {
  gpu::Tensor f = gpu::full({3, 5}, gpu::DType::f32, 2.5);
  EXPECT_EQ(f.device(), gpu::Device::cuda);
  for (double v : gpu::toDoubles(f))
    EXPECT_EQ(v, 2.5);
  for (double v : gpu::toDoubles(gpu::zeros({7}, gpu::DType::i64)))
    EXPECT_EQ(v, 0);
  EXPECT_EQ(gpu::item(gpu::scalar(3, gpu::DType::i1)), 1);
  Pair p = random({4, 6});
  expectEqual(p.c, gpu::clone(p.g), "clone");
  gpu::Tensor h = gpu::toHost(p.g);
  EXPECT_EQ(h.device(), gpu::Device::host);
  expectEqual(p.c, gpu::toDevice(h), "toHost/toDevice");
  EXPECT_THROW(p.g.rawData(), gpu::Error);
  EXPECT_THROW(h.deviceData(), gpu::Error);
}

TEST(CudaTensor, AllocatorCachesAndCounts) {
  gpu::synchronize();
  int64_t before = gpu::liveBytes();
  {
    gpu::Tensor t({1000}, gpu::DType::f32);
    EXPECT_EQ(gpu::liveBytes(), before + 4000);
  }
  EXPECT_EQ(gpu::liveBytes(), before);
  int64_t hits = gpu::allocatorStats().cacheHits;
  gpu::Tensor again({1000}, gpu::DType::f32);
  EXPECT_EQ(gpu::allocatorStats().cacheHits, hits + 1);
}

TEST(CudaOps, Unary) {
  using CF = cpu::Tensor (*)(const cpu::Tensor &);
  using GF = gpu::Tensor (*)(const gpu::Tensor &);
  struct Op {
    const char *name;
    CF c;
    GF g;
    bool positive;
  };
  Op ops[] = {{"neg", cpu::neg, gpu::neg, false},
              {"exp", cpu::exp, gpu::exp, false},
              {"log", cpu::log, gpu::log, true},
              {"sqrt", cpu::sqrt, gpu::sqrt, true},
              {"rsqrt", cpu::rsqrt, gpu::rsqrt, true},
              {"erf", cpu::erf, gpu::erf, false},
              {"tanh", cpu::tanh, gpu::tanh, false},
              {"relu", cpu::relu, gpu::relu, false},
              {"sigmoid", cpu::sigmoid, gpu::sigmoid, false},
              {"sin", cpu::sin, gpu::sin, false},
              {"cos", cpu::cos, gpu::cos, false}};
  for (cpu::DType dt : kFloats)
    for (const Op &op : ops) {
      Pair x =
          op.positive ? random({3, 17, 5}, dt, 0.1, 4) : random({3, 17, 5}, dt);
      expectClose(op.c(x.c), op.g(x.g), op.name);
    }
  for (cpu::DType dt : kFloats)
    for (bool approx : {false, true}) {
      Pair x = random({1000}, dt, -4, 4), g = random({1000}, dt);
      expectClose(cpu::gelu(x.c, approx), gpu::gelu(x.g, approx), "gelu");
      expectClose(cpu::gelu_grad(x.c, g.c, approx),
                  gpu::gelu_grad(x.g, g.g, approx), "gelu_grad");
    }
}

TEST(CudaOps, BinaryBroadcast) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}},      {{2, 1, 4}, {3, 1}},
      {{5, 6}, {}},           {{1, 7}, {6, 1}},      {{2, 3, 4, 5}, {3, 1, 5}},
      {{}, {4, 4}},           {{4, 1, 3}, {1, 5, 1}}};
  for (cpu::DType dt : kFloats)
    for (auto &s : shapes) {
      Pair a = random(s.first, dt), b = random(s.second, dt);
      Pair pa = random(s.first, dt, 0.2, 3);
      expectClose(cpu::add(a.c, b.c), gpu::add(a.g, b.g), "add");
      expectClose(cpu::sub(a.c, b.c), gpu::sub(a.g, b.g), "sub");
      expectClose(cpu::mul(a.c, b.c), gpu::mul(a.g, b.g), "mul");
      expectClose(cpu::div(a.c, b.c), gpu::div(a.g, b.g), "div");
      expectClose(cpu::pow(pa.c, b.c), gpu::pow(pa.g, b.g), "pow");
    }
}

TEST(CudaOps, CompareWhereCast) {
  for (cpu::DType dt :
       {cpu::DType::f32, cpu::DType::f64, cpu::DType::i32, cpu::DType::i64}) {
    Pair a = make({2, 3}, dt, {1, 2, 3, 4, 5, 6});
    Pair b = make({3}, dt, {2, 2, 5});
    for (int p = 0; p < 6; ++p)
      expectEqual(cpu::compare(static_cast<cpu::Compare>(p), a.c, b.c),
                  gpu::compare(static_cast<gpu::Compare>(p), a.g, b.g),
                  "compare");
  }
  Pair cond = make({2, 1, 3}, cpu::DType::i1, {1, 0, 1, 0, 0, 1});
  Pair a = random({4, 3}), b = random({2, 4, 1});
  expectEqual(cpu::where(cond.c, a.c, b.c), gpu::where(cond.g, a.g, b.g),
              "where");
  Pair mask = make({2, 2}, cpu::DType::i1, {1, 0, 0, 1});
  Pair ia = make({2, 2}, cpu::DType::i64, {1, 2, 3, 4});
  Pair ib = make({}, cpu::DType::i64, {-7});
  expectEqual(cpu::where(mask.c, ia.c, ib.c), gpu::where(mask.g, ia.g, ib.g),
              "where i64");
  Pair x = random({50}, cpu::DType::f32, -20, 20);
  for (cpu::DType to : {cpu::DType::f64, cpu::DType::i32, cpu::DType::i64,
                        cpu::DType::i1, cpu::DType::f32}) {
    cpu::Tensor c = cpu::cast(x.c, to);
    gpu::Tensor g = gpu::cast(x.g, toGpu(to));
    expectEqual(c, g, std::string("cast to ") + cpu::dtypeName(to));
    expectEqual(cpu::cast(c, cpu::DType::f32), gpu::cast(g, gpu::DType::f32),
                "cast back");
  }
}

TEST(CudaOps, DropoutMatchesBitForBit) {
  cpu::setBaseSeed(42);
  gpu::setBaseSeed(42);
  Pair x = random({33, 65});
  for (double ratio : {0.0, 0.1, 0.5, 1.0}) {
    auto c = cpu::dropout(x.c, ratio, 7, {}, {});
    auto g = gpu::dropout(x.g, ratio, 7, {}, {});
    expectEqual(std::get<1>(c), std::get<1>(g), "dropout mask");
    expectClose(std::get<0>(c), std::get<0>(g), "dropout output");
    // A piece of a larger tensor (as a plan's rank or micro-batch draws).
    c = cpu::dropout(x.c, ratio, 7, {40, 130}, {5, 65});
    g = gpu::dropout(x.g, ratio, 7, {40, 130}, {5, 65});
    expectEqual(std::get<1>(c), std::get<1>(g), "dropout piece mask");
  }
  EXPECT_EQ(cpu::dropoutCounter(), gpu::dropoutCounter());
}

TEST(CudaOps, Matmul) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{5, 7}, {7, 3}},
      {{2, 3, 5, 7}, {7, 4}},
      {{2, 1, 5, 7}, {3, 7, 4}},
      {{4, 6, 8}, {4, 8, 5}},
      {{2, 3, 4, 5}, {2, 1, 5, 6}},
      {{1, 64}, {64, 1}},
      {{3, 0}, {0, 2}},
      {{2, 2, 3, 9}, {2, 1, 9, 2}},
      {{130, 257}, {257, 67}}};
  for (cpu::DType dt : kFloats)
    for (auto &s : shapes) {
      Pair a = random(s.first, dt), b = random(s.second, dt);
      expectClose(cpu::matmul(a.c, b.c), gpu::matmul(a.g, b.g), "matmul");
    }
  gpu::setMatmulPrecision(gpu::MatmulPrecision::bf16);
  Pair a = random({3, 64, 96}), b = random({96, 80});
  expectClose(cpu::matmul(a.c, b.c), gpu::matmul(a.g, b.g), 1e-2,
              "matmul bf16");
  gpu::setMatmulPrecision(gpu::MatmulPrecision::tf32);
  expectClose(cpu::matmul(a.c, b.c), gpu::matmul(a.g, b.g), 1e-2,
              "matmul tf32");
  gpu::setMatmulPrecision(gpu::MatmulPrecision::fp32);
}

TEST(CudaOps, MatmulBiasEpilogues) {
  Pair a = random({4, 16, 64}), b = random({64, 48}), bias = random({48});
  cpu::Tensor ref = cpu::add(cpu::matmul(a.c, b.c), bias.c);
  expectClose(ref, gpu::matmul_bias(a.g, b.g, bias.g, false), "matmul+bias");
  // cuBLASLt's GELU epilogue is the tanh form, computed in its own way.
  expectClose(cpu::gelu(ref, true), gpu::matmul_bias(a.g, b.g, bias.g, true),
              1e-4, "matmul+bias+gelu");
}

TEST(CudaOps, SoftmaxAndGrads) {
  for (cpu::DType dt : kFloats)
    for (int64_t axis : {-1, 1, 0}) {
      Pair x = random({4, 9, 130}, dt, -5, 5), g = random({4, 9, 130}, dt);
      cpu::Tensor cs = cpu::softmax(x.c, axis);
      gpu::Tensor gs = gpu::softmax(x.g, axis);
      expectClose(cs, gs, "softmax");
      cpu::Tensor cl = cpu::log_softmax(x.c, axis);
      gpu::Tensor gl = gpu::log_softmax(x.g, axis);
      expectClose(cl, gl, "log_softmax");
      // The grads from the CPU's forward results, so that only the grad
      // kernels are compared.
      gpu::Tensor csOnGpu =
          gpu::fromValues(cs.shape(), toGpu(dt), cpu::toDoubles(cs));
      gpu::Tensor clOnGpu =
          gpu::fromValues(cl.shape(), toGpu(dt), cpu::toDoubles(cl));
      expectClose(cpu::softmax_grad(cs, g.c, axis),
                  gpu::softmax_grad(csOnGpu, g.g, axis), "softmax_grad");
      expectClose(cpu::log_softmax_grad(cl, g.c, axis),
                  gpu::log_softmax_grad(clOnGpu, g.g, axis),
                  "log_softmax_grad");
    }
}

TEST(CudaOps, LayerNormAndGrad) {
  for (cpu::DType dt : kFloats)
    for (int64_t axis : {-1, 1}) {
      std::vector<int64_t> shape = {3, 5, 768};
      std::vector<int64_t> wshape(shape.begin() + (axis < 0 ? 2 : 1),
                                  shape.end());
      Pair x = random(shape, dt), w = random(wshape, dt),
           b = random(wshape, dt), g = random(shape, dt);
      for (bool withBias : {true, false}) {
        auto c = cpu::layer_norm(x.c, w.c, withBias ? b.c : cpu::Tensor(), axis,
                                 1e-5);
        auto gr = gpu::layer_norm(x.g, w.g, withBias ? b.g : gpu::Tensor(),
                                  axis, 1e-5);
        expectClose(std::get<0>(c), std::get<0>(gr), "layer_norm y");
        expectClose(std::get<1>(c), std::get<1>(gr), "layer_norm mean");
        expectClose(std::get<2>(c), std::get<2>(gr), "layer_norm rstd");
      }
      auto c = cpu::layer_norm(x.c, w.c, b.c, axis, 1e-5);
      auto cg = cpu::layer_norm_grad(g.c, x.c, w.c, std::get<1>(c),
                                     std::get<2>(c), axis);
      gpu::Tensor mean = gpu::fromValues(std::get<1>(c).shape(), toGpu(dt),
                                         cpu::toDoubles(std::get<1>(c)));
      gpu::Tensor rstd = gpu::fromValues(std::get<2>(c).shape(), toGpu(dt),
                                         cpu::toDoubles(std::get<2>(c)));
      auto gg = gpu::layer_norm_grad(g.g, x.g, w.g, mean, rstd, axis);
      expectClose(std::get<0>(cg), std::get<0>(gg), "layer_norm_grad dx");
      expectClose(std::get<1>(cg), std::get<1>(gg), "layer_norm_grad dw");
      expectClose(std::get<2>(cg), std::get<2>(gg), "layer_norm_grad db");
    }
}

TEST(CudaOps, Reductions) {
  std::vector<std::vector<int64_t>> axesList = {
      {0}, {1}, {2}, {-1}, {0, 2}, {0, 1}, {1, 2}, {0, 1, 2}};
  for (cpu::DType dt : kFloats)
    for (auto &axes : axesList)
      for (bool keep : {false, true}) {
        Pair x = random({6, 70, 33}, dt);
        expectClose(cpu::reduce_sum(x.c, axes, keep),
                    gpu::reduce_sum(x.g, axes, keep), "reduce_sum");
        expectClose(cpu::reduce_mean(x.c, axes, keep),
                    gpu::reduce_mean(x.g, axes, keep), "reduce_mean");
        expectEqual(cpu::reduce_max(x.c, axes, keep),
                    gpu::reduce_max(x.g, axes, keep), "reduce_max");
      }
  // A bias gradient's shape: many rows, few columns.
  Pair big = random({4096, 96});
  expectClose(cpu::reduce_sum(big.c, {0}, false),
              gpu::reduce_sum(big.g, {0}, false), "reduce_sum rows");
}

TEST(CudaOps, Layout) {
  Pair x = random({2, 3, 4, 5});
  expectEqual(cpu::transpose(x.c, {0, 2, 1, 3}),
              gpu::transpose(x.g, {0, 2, 1, 3}), "transpose");
  expectEqual(cpu::transpose(x.c, {3, 2, 1, 0}),
              gpu::transpose(x.g, {3, 2, 1, 0}), "transpose");
  expectEqual(cpu::reshape(x.c, {6, 20}), gpu::reshape(x.g, {6, 20}),
              "reshape");
  Pair y = random({3, 1, 5});
  expectEqual(cpu::broadcast_to(y.c, {2, 3, 4, 5}),
              gpu::broadcast_to(y.g, {2, 3, 4, 5}), "broadcast_to");
  expectEqual(cpu::slice(x.c, {0, 1, 0, 1}, {2, 3, 4, 5}, {1, 1, 2, 3}),
              gpu::slice(x.g, {0, 1, 0, 1}, {2, 3, 4, 5}, {1, 1, 2, 3}),
              "slice");
  for (int64_t axis : {0, 2, -1}) {
    std::vector<int64_t> sizes = axis == 0   ? std::vector<int64_t>{1, 1}
                                 : axis == 2 ? std::vector<int64_t>{1, 0, 3}
                                             : std::vector<int64_t>{2, 3};
    auto cs = cpu::split(x.c, axis, sizes);
    auto gs = gpu::split(x.g, axis, sizes);
    ASSERT_EQ(cs.size(), gs.size());
    for (size_t i = 0; i < cs.size(); ++i)
      expectEqual(cs[i], gs[i], "split");
    expectEqual(cpu::concat(cs, axis), gpu::concat(gs, axis), "concat");
  }
}

TEST(CudaOps, GatherAndEmbeddingGrad) {
  for (cpu::DType it : {cpu::DType::i64, cpu::DType::i32}) {
    Pair table = random({50, 16});
    Pair idx = randomIndices({4, 9}, 50, it);
    expectEqual(cpu::gather(table.c, idx.c, 0), gpu::gather(table.g, idx.g, 0),
                "gather axis 0");
    Pair data = random({3, 7, 5});
    Pair idx1 = randomIndices({2, 4}, 7, it);
    expectEqual(cpu::gather(data.c, idx1.c, 1), gpu::gather(data.g, idx1.g, 1),
                "gather axis 1");
    // Few distinct rows: many atomics into one row.
    Pair rep = randomIndices({8, 32}, 3, it);
    Pair g = random({8, 32, 16});
    expectClose(cpu::embedding_grad(g.c, rep.c, {50, 16}),
                gpu::embedding_grad(g.g, rep.g, {50, 16}), "embedding_grad");
  }
  Pair table = random({5, 2});
  Pair bad = make({3}, cpu::DType::i64, {0, 5, 1});
  try {
    gpu::Tensor r = gpu::gather(table.g, bad.g, 0);
    gpu::synchronize();
    FAIL() << "no error for an out-of-range index";
  } catch (const gpu::Error &e) {
    EXPECT_NE(std::string(e.what()).find("gather: index 5 at position 1"),
              std::string::npos)
        << e.what();
  }
}

TEST(CudaOps, CrossEntropyAndGrad) {
  for (cpu::DType dt : kFloats)
    for (int r = 0; r < 3; ++r) {
      auto reduction = static_cast<cpu::Reduction>(r);
      Pair logits = random({37, 1000}, dt, -6, 6);
      std::vector<double> labels;
      for (int i = 0; i < 37; ++i)
        labels.push_back(i % 5 == 0 ? -100 : (i * 131) % 1000);
      Pair lab = make({37}, cpu::DType::i64, labels);
      cpu::Tensor c =
          cpu::softmax_cross_entropy(logits.c, lab.c, -100, reduction);
      gpu::Tensor g = gpu::softmax_cross_entropy(
          logits.g, lab.g, -100, static_cast<gpu::Reduction>(r));
      expectClose(c, g, "softmax_cross_entropy");
      Pair dy =
          reduction == cpu::Reduction::none ? random({37}, dt) : random({}, dt);
      expectClose(
          cpu::softmax_cross_entropy_grad(logits.c, lab.c, dy.c, -100,
                                          reduction),
          gpu::softmax_cross_entropy_grad(logits.g, lab.g, dy.g, -100,
                                          static_cast<gpu::Reduction>(r)),
          "softmax_cross_entropy_grad");
    }
}

TEST(CudaOps, Optimizers) {
  for (cpu::DType dt : kFloats) {
    Pair p = random({1000}, dt), g = random({1000}, dt);
    Pair lr = make({}, cpu::DType::f32, {0.01});
    Pair wd = make({}, cpu::DType::f32, {0.1});
    expectClose(cpu::sgd_update(p.c, g.c, lr.c, wd.c),
                gpu::sgd_update(p.g, g.g, lr.g, wd.g), "sgd_update");
    Pair m = make({1000}, dt, std::vector<double>(1000, 0.0));
    Pair v = m;
    Pair b1 = make({}, cpu::DType::f32, {0.9}),
         b2 = make({}, cpu::DType::f32, {0.999}),
         eps = make({}, cpu::DType::f32, {1e-8});
    cpu::Tensor cp = p.c, cm = m.c, cv = v.c;
    gpu::Tensor gp = p.g, gm = m.g, gv = v.g;
    for (int step = 1; step <= 5; ++step) {
      Pair t = make({}, cpu::DType::i64, {double(step)});
      Pair grad = random({1000}, dt);
      std::tie(cp, cm, cv) = cpu::adamw_update(cp, grad.c, cm, cv, t.c, lr.c,
                                               b1.c, b2.c, eps.c, wd.c);
      std::tie(gp, gm, gv) = gpu::adamw_update(gp, grad.g, gm, gv, t.g, lr.g,
                                               b1.g, b2.g, eps.g, wd.g);
    }
    expectClose(cp, gp, "adamw param");
    expectClose(cm, gm, "adamw m");
    expectClose(cv, gv, "adamw v");
  }
}

TEST(CudaOps, GlobalNormAndClipping) {
  Pair a = random({300, 7}), b = random({1000});
  cpu::Tensor sq = cpu::add(cpu::reduce_sum(cpu::mul(a.c, a.c), {0, 1}, false),
                            cpu::reduce_sum(cpu::mul(b.c, b.c), {0}, false));
  cpu::Tensor norm = cpu::sqrt(sq);
  gpu::Tensor gnorm;
  auto clipped = gpu::clip_by_global_norm({a.g, b.g}, 1.0, &gnorm);
  expectClose(norm, gnorm, "global_norm");
  double n = cpu::item(norm);
  cpu::Tensor scale =
      cpu::scalar(std::min(1.0, 1.0 / (n + 1e-6)), cpu::DType::f32);
  expectClose(cpu::mul(a.c, scale), clipped[0], "clip a");
  expectClose(cpu::mul(b.c, scale), clipped[1], "clip b");
}

TEST(CudaComm, SingleRankGroupsAreCopies) {
  Pair x = random({3, 4});
  expectEqual(x.c, gpu::all_reduce(x.g, {0}, gpu::ReduceKind::sum),
              "all_reduce");
  expectEqual(x.c, gpu::all_gather(x.g, {0}, 1), "all_gather");
  expectEqual(x.c, gpu::reduce_scatter(x.g, {0}, 0, gpu::ReduceKind::max),
              "reduce_scatter");
  expectEqual(x.c, gpu::broadcast(x.g, {0}, 0), "broadcast");
  EXPECT_THROW(gpu::all_reduce(x.g, {1}, gpu::ReduceKind::sum), gpu::Error);
}
