//===- Models.h - reference models built with the GraphBuilder --*- C++ -*-===//
//
// An MLP classifier and a GPT-2-style decoder, written against the public
// GraphBuilder API as a user would. Both build `forward(params, batch)` with
// the loss as an extra output when `withLoss` is set.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_EXAMPLES_MODELS_MODELS_H
#define LOOM_EXAMPLES_MODELS_MODELS_H

#include "frontends/builder/GraphBuilder.h"

#include <optional>
#include <vector>

namespace loom::models {

struct MLPConfig {
  int64_t batch = kDyn; ///< kDyn: any batch size.
  int64_t inputs = 784;
  std::vector<int64_t> hidden = {256, 256};
  int64_t classes = 10;
  bool withLoss = true; ///< adds a `labels` input and a `loss` output.
};

/// x[batch, inputs] -> (Linear -> ReLU)* -> Linear -> logits[batch, classes],
/// and the mean cross-entropy against `labels[batch]` (i64).
void buildMLP(GraphBuilder &b, const MLPConfig &config);

struct GPT2Config {
  int64_t batch = kDyn; ///< kDyn: any batch size.
  int64_t seq = 64;     ///< context length (static: the causal mask is).
  int64_t vocab = 50257;
  int64_t embed = 768;
  int64_t heads = 12;
  int64_t layers = 12;
  double dropout = 0.0; ///< 0 builds no dropout ops.
  bool withLoss = true; ///< adds a `labels` input and a `loss` output.
  /// Set: every parameter gets a `graph.initial_value` drawn with this
  /// seed, as GPT-2 initializes (N(0, 0.02) for weight matrices and
  /// embeddings, zeros for biases, ones for layer-norm scales), so that
  /// `loomc train` can train the model from scratch.
  std::optional<uint32_t> initSeed;
};

/// GPT-2: token + position embeddings, `layers` pre-LN blocks of causal
/// multi-head self-attention and a tanh-GELU MLP, a final layer norm and an
/// LM head tied to the token embedding. Parameters are named as in the
/// Hugging Face checkpoint ("h.0.attn.c_attn.weight", ...), with weights
/// stored [in, out].
void buildGPT2(GraphBuilder &b, const GPT2Config &config);

/// Number of scalar parameters of the GPT-2 configuration.
int64_t gpt2ParameterCount(const GPT2Config &config);

} // namespace loom::models

#endif // LOOM_EXAMPLES_MODELS_MODELS_H
