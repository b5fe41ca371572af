//===- Models.cpp - reference models built with the GraphBuilder ----------===//

#include "examples/models/Models.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <random>
#include <string>

using namespace loom;
using namespace loom::models;
using mlir::Value;

namespace {
/// How a parameter starts, by its role in the model.
enum class Init { normal, zeros, ones };

/// Declares a model's parameters. With a seed each one gets a
/// `graph.initial_value` by its role: N(0, 0.02) (GPT-2's), zeros or ones.
/// The values are drawn in declaration order from one std::mt19937 stream
/// through a Box-Muller transform (std::normal_distribution's algorithm
/// differs between standard libraries), so a seed gives the same model
/// everywhere.
class Params {
public:
  Params(GraphBuilder &b, std::optional<uint32_t> seed)
      : b(b), seed(seed), rng(seed.value_or(0)) {}

  Value operator()(const std::string &name, llvm::ArrayRef<int64_t> shape,
                   Init init) {
    if (!seed)
      return b.param(name, shape);
    auto type = mlir::RankedTensorType::get(
        shape, mlir::Float32Type::get(&b.context()));
    if (init != Init::normal)
      return b.param(name, mlir::DenseElementsAttr::get(
                               type, init == Init::ones ? 1.0f : 0.0f));
    std::vector<float> values(type.getNumElements());
    for (float &v : values)
      v = 0.02f * normal();
    return b.param(name, mlir::DenseElementsAttr::get(
                             type, llvm::ArrayRef<float>(values)));
  }

private:
  /// A standard normal sample.
  float normal() {
    if (spare) {
      float z = *spare;
      spare.reset();
      return z;
    }
    // u1 in (0, 1], u2 in [0, 1).
    double u1 = (rng() + 1.0) / 4294967296.0, u2 = rng() / 4294967296.0;
    double r = std::sqrt(-2.0 * std::log(u1)), phi = 2.0 * M_PI * u2;
    spare = (float)(r * std::sin(phi));
    return (float)(r * std::cos(phi));
  }

  GraphBuilder &b;
  std::optional<uint32_t> seed;
  std::mt19937 rng;
  std::optional<float> spare;
};
} // namespace

/// y = x @ W + b with W stored [in, out].
static Value linear(GraphBuilder &b, Params &params, const std::string &name,
                    Value x, int64_t in, int64_t out) {
  auto s = b.scope(name);
  Value w = params(name + ".weight", {in, out}, Init::normal);
  Value bias = params(name + ".bias", {out}, Init::zeros);
  return b.add(b.matmul(x, w), bias);
}

void loom::models::buildMLP(GraphBuilder &b, const MLPConfig &c) {
  Params params(b, std::nullopt);
  Value h = b.input("x", {c.batch, c.inputs});
  int64_t width = c.inputs;
  for (auto [i, next] : llvm::enumerate(c.hidden)) {
    h = b.relu(linear(b, params, "fc" + std::to_string(i), h, width, next));
    width = next;
  }
  Value logits = linear(b, params, "head", h, width, c.classes);
  b.output("logits", logits);
  if (c.withLoss) {
    Value labels = b.input("labels", {c.batch}, DType::i64);
    b.output("loss", b.crossEntropy(logits, labels));
  }
}

/// Pre-LN layer norm with affine parameters named `name`.weight/.bias.
static Value layerNorm(GraphBuilder &b, Params &params, const std::string &name,
                       Value x, int64_t width) {
  auto s = b.scope(name);
  // Separate statements: C++ leaves the order of argument evaluation open,
  // and the parameter order of the signature should not depend on it.
  Value weight = params(name + ".weight", {width}, Init::ones);
  Value bias = params(name + ".bias", {width}, Init::zeros);
  return b.layerNorm(x, weight, bias, /*axis=*/-1, 1e-5);
}

/// [B, T, C] -> [B, heads, T, C / heads].
static Value splitHeads(GraphBuilder &b, Value x, int64_t heads,
                        int64_t headDim) {
  return b.transpose(b.reshape(x, {0, 0, heads, headDim}), {0, 2, 1, 3});
}

static Value maybeDropout(GraphBuilder &b, Value x, double ratio,
                          int64_t seed) {
  return ratio > 0 ? b.dropout(x, ratio, /*training=*/true, seed) : x;
}

static Value attention(GraphBuilder &b, Params &params, const std::string &name,
                       Value x, Value causal, const GPT2Config &c,
                       int64_t layer) {
  auto s = b.scope(name);
  int64_t C = c.embed, H = c.heads, D = c.embed / c.heads;
  Value qkv = linear(b, params, name + ".c_attn", x, C, 3 * C);
  Value q = splitHeads(b, b.slice(qkv, {0}, {C}, {2}), H, D);
  Value k = splitHeads(b, b.slice(qkv, {C}, {2 * C}, {2}), H, D);
  Value v = splitHeads(b, b.slice(qkv, {2 * C}, {3 * C}, {2}), H, D);
  // scores[B, H, T, T] = q k^T / sqrt(D), masked to the causal triangle.
  Value scores = b.matmul(q, k, false, /*transposeRhs=*/true);
  scores = b.mul(scores, b.scalar(1.0 / std::sqrt((double)D)));
  scores = b.where(causal, scores, b.scalar(-1e9));
  Value probs = maybeDropout(b, b.softmax(scores, -1), c.dropout, 2 * layer);
  Value y = b.transpose(b.matmul(probs, v), {0, 2, 1, 3}); // [B, T, H, D]
  y = linear(b, params, name + ".c_proj", b.reshape(y, {0, 0, C}), C, C);
  return maybeDropout(b, y, c.dropout, 2 * layer + 1);
}

static Value mlp(GraphBuilder &b, Params &params, const std::string &name,
                 Value x, const GPT2Config &c) {
  auto s = b.scope(name);
  Value h = b.gelu(linear(b, params, name + ".c_fc", x, c.embed, 4 * c.embed),
                   /*tanhApproximation=*/true);
  return linear(b, params, name + ".c_proj", h, 4 * c.embed, c.embed);
}

void loom::models::buildGPT2(GraphBuilder &b, const GPT2Config &c) {
  Params params(b, c.initSeed);
  Value wte = params("wte", {c.vocab, c.embed}, Init::normal);
  Value wpe = params("wpe", {c.seq, c.embed}, Init::normal);
  Value ids = b.input("input_ids", {c.batch, c.seq}, DType::i64);

  Value h;
  {
    auto s = b.scope("embed");
    Value positions = b.iota({1, c.seq}, /*axis=*/1, DType::i64);
    Value tokens = b.embedding(wte, ids);
    h = b.add(tokens, b.embedding(wpe, positions));
  }
  // causal[i, j] = (i >= j): a query attends to itself and the past.
  Value causal;
  {
    auto s = b.scope("causal_mask");
    Value rows = b.iota({c.seq, c.seq}, 0, DType::i64);
    Value cols = b.iota({c.seq, c.seq}, 1, DType::i64);
    causal = b.compare(graph::CompareDirection::ge, rows, cols);
  }
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string block = "h." + std::to_string(i);
    auto s = b.scope(block);
    Value a = layerNorm(b, params, block + ".ln_1", h, c.embed);
    h = b.add(h, attention(b, params, block + ".attn", a, causal, c, i));
    Value m = layerNorm(b, params, block + ".ln_2", h, c.embed);
    h = b.add(h, mlp(b, params, block + ".mlp", m, c));
  }
  h = layerNorm(b, params, "ln_f", h, c.embed);
  Value logits;
  {
    auto s = b.scope("lm_head");
    // Tied head: logits = h @ wte^T.
    logits = b.matmul(h, wte, false, /*transposeRhs=*/true);
  }
  b.output("logits", logits);
  if (c.withLoss) {
    Value labels = b.input("labels", {c.batch, c.seq}, DType::i64);
    b.output("loss", b.crossEntropy(logits, labels));
  }
}

int64_t loom::models::gpt2ParameterCount(const GPT2Config &c) {
  int64_t C = c.embed;
  int64_t block = 2 * (2 * C) +         // ln_1, ln_2
                  (C * 3 * C + 3 * C) + // c_attn
                  (C * C + C) +         // attn.c_proj
                  (C * 4 * C + 4 * C) + // c_fc
                  (4 * C * C + C);      // mlp.c_proj
  return c.vocab * C + c.seq * C + c.layers * block + 2 * C;
}
