//===- GptTest.cpp - the example GPT, by hand, against PyTorch ------------===//
//
// The bundled tiny GPT (examples/gpt/tiny) written as the straight sequence
// of runtime calls an emitted program makes: forward, loss, backward
// through the grad ops, and the optimizer update. Checked against the
// PyTorch reference: the first-batch loss, every parameter's gradient
// (grads.safetensors) and the 10-step SGD and AdamW loss curves. This ties
// the ops' semantics (layouts, axes, broadcasting, ignore_index, AdamW's
// exact form) to the model's real use.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

using namespace tessera::rt;
using namespace tessera::rt::test;

namespace {

const std::string kExamples = TESSERA_RT_EXAMPLES_DIR;
constexpr int64_t L = 2, H = 2, W = 32, D = W / H, V = 84, B = 4, T = 32;

using Params = std::map<std::string, Tensor>;

std::string layer(int64_t i, const std::string &rest) {
  return "transformer.h." + std::to_string(i) + "." + rest;
}

/// x @ w^T + b for x [B, T, in], w [out, in].
Tensor linear(const Tensor &x, const Tensor &w, const Tensor &b) {
  return add(matmul(x, transpose(w, {1, 0})), b);
}

/// Gradients of linear: (dx, dw, db).
std::tuple<Tensor, Tensor, Tensor> linearGrad(const Tensor &dy, const Tensor &x,
                                              const Tensor &w) {
  int64_t out = w.dim(0), in = w.dim(1);
  Tensor dx = matmul(dy, w);
  Tensor dw = matmul(transpose(reshape(dy, {B * T, out}), {1, 0}),
                     reshape(x, {B * T, in}));
  return {dx, dw, reduce_sum(dy, {0, 1}, false)};
}

struct Saved { // activations one layer's backward needs
  Tensor x, h1, mean1, rstd1, q, kT, v, p, y, mid, h2, mean2, rstd2, f, g;
};

/// Loss and (if grads != nullptr) gradients of every parameter.
double forwardBackward(const Params &P, const Tensor &idx,
                       const Tensor &targets, Params *grads) {
  Tensor mask = Tensor({T, T}, DType::i1);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j)
      mask.data<uint8_t>()[i * T + j] = j > i;
  Tensor negInf = scalar(-INFINITY, DType::f32);
  Tensor scale = scalar(0.25, DType::f32); // 1 / sqrt(D)

  Tensor x = add(gather(P.at("transformer.wte.weight"), idx, 0),
                 P.at("transformer.wpe.weight"));
  std::vector<Saved> saved;
  for (int64_t l = 0; l < L; ++l) {
    Saved s;
    s.x = x;
    std::tie(s.h1, s.mean1, s.rstd1) =
        layer_norm(x, P.at(layer(l, "ln_1.weight")),
                   P.at(layer(l, "ln_1.bias")), -1, 1e-5);
    Tensor qkv = linear(s.h1, P.at(layer(l, "attn.c_attn.weight")),
                        P.at(layer(l, "attn.c_attn.bias")));
    std::vector<Tensor> parts = split(qkv, 2, {W, W, W});
    s.q = transpose(reshape(parts[0], {B, T, H, D}), {0, 2, 1, 3});
    s.kT = transpose(reshape(parts[1], {B, T, H, D}), {0, 2, 3, 1});
    s.v = transpose(reshape(parts[2], {B, T, H, D}), {0, 2, 1, 3});
    Tensor att = where(mask, negInf, mul(matmul(s.q, s.kT), scale));
    s.p = softmax(att, -1);
    s.y = reshape(transpose(matmul(s.p, s.v), {0, 2, 1, 3}), {B, T, W});
    x = add(x, linear(s.y, P.at(layer(l, "attn.c_proj.weight")),
                      P.at(layer(l, "attn.c_proj.bias"))));
    Tensor mid = x;
    std::tie(s.h2, s.mean2, s.rstd2) =
        layer_norm(x, P.at(layer(l, "ln_2.weight")),
                   P.at(layer(l, "ln_2.bias")), -1, 1e-5);
    s.f = linear(s.h2, P.at(layer(l, "mlp.c_fc.weight")),
                 P.at(layer(l, "mlp.c_fc.bias")));
    s.g = gelu(s.f, false);
    x = add(x, linear(s.g, P.at(layer(l, "mlp.c_proj.weight")),
                      P.at(layer(l, "mlp.c_proj.bias"))));
    s.mid = mid;
    saved.push_back(s);
  }
  auto [xf, meanF, rstdF] = layer_norm(x, P.at("transformer.ln_f.weight"),
                                       P.at("transformer.ln_f.bias"), -1, 1e-5);
  Tensor logits = matmul(xf, transpose(P.at("transformer.wte.weight"), {1, 0}));
  Tensor logits2d = reshape(logits, {B * T, V});
  Tensor labels = reshape(targets, {B * T});
  double loss =
      item(softmax_cross_entropy(logits2d, labels, -1, Reduction::mean));
  if (!grads)
    return loss;

  Params &G = *grads;
  Tensor dlogits = softmax_cross_entropy_grad(
      logits2d, labels, scalar(1, DType::f32), -1, Reduction::mean);
  Tensor dxf =
      matmul(reshape(dlogits, {B, T, V}), P.at("transformer.wte.weight"));
  Tensor dwteHead = matmul(transpose(dlogits, {1, 0}), reshape(xf, {B * T, W}));
  auto [dx, dlnw, dlnb] = layer_norm_grad(
      dxf, x, P.at("transformer.ln_f.weight"), meanF, rstdF, -1);
  G["transformer.ln_f.weight"] = dlnw;
  G["transformer.ln_f.bias"] = dlnb;
  // Layer l's Linear `name`: records the weight and bias gradients, returns
  // the input's.
  auto linear = [&](int64_t l, const char *name, const Tensor &dy,
                    const Tensor &in) {
    std::string prefix = layer(l, name);
    auto [din, dw, db] = linearGrad(dy, in, P.at(prefix + ".weight"));
    G[prefix + ".weight"] = dw;
    G[prefix + ".bias"] = db;
    return din;
  };
  // Layer l's LayerNorm `name` likewise.
  auto norm = [&](int64_t l, const char *name, const Tensor &dy,
                  const Tensor &in, const Tensor &mean, const Tensor &rstd) {
    std::string prefix = layer(l, name);
    auto [din, dw, db] =
        layer_norm_grad(dy, in, P.at(prefix + ".weight"), mean, rstd, -1);
    G[prefix + ".weight"] = dw;
    G[prefix + ".bias"] = db;
    return din;
  };
  for (int64_t l = L - 1; l >= 0; --l) {
    const Saved &s = saved[l];
    // MLP branch.
    Tensor dg = linear(l, "mlp.c_proj", dx, s.g);
    Tensor dh2 = linear(l, "mlp.c_fc", gelu_grad(s.f, dg, false), s.h2);
    dx = add(dx, norm(l, "ln_2", dh2, s.mid, s.mean2, s.rstd2));
    // Attention branch.
    Tensor dy = linear(l, "attn.c_proj", dx, s.y);
    Tensor dy4 = transpose(reshape(dy, {B, T, H, D}), {0, 2, 1, 3});
    Tensor dp = matmul(dy4, transpose(s.v, {0, 1, 3, 2}));
    Tensor dv4 = matmul(transpose(s.p, {0, 1, 3, 2}), dy4);
    Tensor datt = mul(softmax_grad(s.p, dp, -1), scale);
    Tensor dq4 = matmul(datt, transpose(s.kT, {0, 1, 3, 2}));
    Tensor dkT4 = matmul(transpose(s.q, {0, 1, 3, 2}), datt);
    Tensor dq = reshape(transpose(dq4, {0, 2, 1, 3}), {B, T, W});
    Tensor dk = reshape(transpose(dkT4, {0, 3, 1, 2}), {B, T, W});
    Tensor dv = reshape(transpose(dv4, {0, 2, 1, 3}), {B, T, W});
    Tensor dh1 = linear(l, "attn.c_attn", concat({dq, dk, dv}, 2), s.h1);
    dx = add(dx, norm(l, "ln_1", dh1, s.x, s.mean1, s.rstd1));
  }
  G["transformer.wpe.weight"] = reduce_sum(dx, {0}, false);
  G["transformer.wte.weight"] = add(dwteHead, embedding_grad(dx, idx, {V, W}));
  return loss;
}

struct Reference {
  nlohmann::json json;
  std::vector<std::pair<std::string, Tensor>> init;
  Reference() {
    std::ifstream in(kExamples + "/tiny/reference.json");
    json = nlohmann::json::parse(in);
    init = readSafetensors(kExamples + "/tiny/init.safetensors");
  }
  Params params() const { return Params(init.begin(), init.end()); }
};

double relDiff(double a, double b) { return std::fabs(a - b) / std::fabs(b); }

} // namespace

TEST(Gpt, FirstBatchLossAndGradientsMatchPyTorch) {
  Reference ref;
  TokenData data(kExamples + "/data/train.bin");
  auto [idx, targets] = data.batch(0, B, T);
  Params grads;
  double loss = forwardBackward(ref.params(), idx, targets, &grads);
  EXPECT_LT(relDiff(loss, ref.json["init_loss"].get<double>()), 1e-5) << loss;

  auto expected = readSafetensors(kExamples + "/tiny/grads.safetensors");
  ASSERT_EQ(expected.size(), 28u);
  double globalSq = 0;
  for (const auto &[name, g] : expected) {
    ASSERT_TRUE(grads.count(name)) << name;
    const Tensor &mine = grads.at(name);
    ASSERT_EQ(mine.shape(), g.shape()) << name;
    EXPECT_LT(normRelError(toDoubles(mine), toDoubles(g)), 1e-4) << name;
    for (double v : toDoubles(mine))
      globalSq += v * v;
  }
  EXPECT_LT(
      relDiff(std::sqrt(globalSq), ref.json["global_grad_norm"].get<double>()),
      1e-5);
}

TEST(Gpt, TenStepsOfSgdAndAdamWMatchPyTorchLosses) {
  Reference ref;
  TokenData data(kExamples + "/data/train.bin");
  auto f32 = [](double v) { return scalar(v, DType::f32); };
  for (const char *opt : {"sgd", "adamw"}) {
    const nlohmann::json &r = ref.json[opt];
    Params P = ref.params(), M, Vs;
    for (auto &[name, t] : P) {
      M[name] = zeros(t.shape(), DType::f32);
      Vs[name] = zeros(t.shape(), DType::f32);
    }
    std::vector<double> expected = r["losses"].get<std::vector<double>>();
    for (int64_t step = 0; step < 10; ++step) {
      auto [idx, targets] = data.batch(step, B, T);
      Params G;
      double loss = forwardBackward(P, idx, targets, &G);
      EXPECT_LT(relDiff(loss, expected[step]), 1e-4)
          << opt << " step " << step << ": " << loss;
      for (auto &[name, p] : P) {
        if (std::string(opt) == "sgd") {
          p = sgd_update(p, G.at(name), f32(r["lr"].get<double>()),
                         f32(r["weight_decay"].get<double>()));
        } else {
          std::tie(p, M[name], Vs[name]) = adamw_update(
              p, G.at(name), M[name], Vs[name], scalar(step + 1, DType::i64),
              f32(r["lr"].get<double>()), f32(r["betas"][0].get<double>()),
              f32(r["betas"][1].get<double>()), f32(r["eps"].get<double>()),
              f32(r["weight_decay"].get<double>()));
        }
      }
    }
    // Final weights: norms as recorded (c_attn.bias is excluded for AdamW:
    // its key part's gradient is rounding noise that AdamW amplifies).
    for (auto &[name, p] : P) {
      if (std::string(opt) == "adamw" &&
          name.find("c_attn.bias") != std::string::npos)
        continue;
      double sq = 0;
      for (double v : toDoubles(p))
        sq += v * v;
      double want = r["final_param_norms"][name].get<double>();
      EXPECT_LE(std::fabs(std::sqrt(sq) - want), 1e-4 * (want + 1e-3))
          << opt << " " << name;
    }
  }
}
