//===- Data.h - loom-run's training data, streamed -------------*- C++ -*-===//
//
// Where training micro-batches come from, without reading the data whole:
//
// - an .npz archive (or one .npy for a model with one batch input): one
//   array per batch input, dim 0 the sample axis, mapped in place
//   (loom/common/TensorFiles.h mapNpz). Micro-batch k holds samples
//   (k * B + i) mod count, i < B, so the stream continues where a
//   checkpoint left it and a file of exactly one batch trains on it every
//   step.
// - a raw token file (`--tokens uint16|uint32`, little endian, the format
//   nanoGPT's prepare scripts write) for language-model pretraining: sample
//   s is the window of seq + 1 tokens at a position drawn from (seed, s),
//   the model's input the first seq and its labels the last seq (shifted
//   by one). The model has exactly two batch inputs: the labels
//   (loom_trainer_labels) and the token ids, both [B, seq] integers.
//
// Each data-parallel rank fills its own rows of every global micro-batch.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOMRUN_DATA_H
#define LOOM_TOOLS_LOOMRUN_DATA_H

#include "loom/common/TensorFiles.h"
#include "loom/runtime.h"
#include "tools/loom-run/Distributed.h"
#include "tools/loom-run/Tensors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::tools {

struct DataOptions {
  /// The .npz/.npy file, or a raw token file when `tokens` is set.
  std::string path;
  /// "" (arrays), "uint16" or "uint32": the token file's element type.
  std::string tokens;
  /// Tokens per sample (the window is one longer); 0: the model's own
  /// sequence length, when its input has a static dim 1.
  int64_t seq = 0;
  /// Seeds the window positions of a token file.
  uint64_t seed = 0;
  /// The global batch.
  int64_t batch = 0;
};

class TrainData {
public:
  /// Opens `o.path` for `trainer`'s batch inputs, to fill this rank's
  /// `local` rows (from row `offset`) of each global batch. False with
  /// `error` naming the file and what does not fit the model.
  bool open(loom_trainer *trainer, const DataOptions &o, int64_t local,
            int64_t offset, const Distributed &dist, std::string &error);

  /// Fills the batch tensors with this rank's rows of micro-batch `micro`.
  void fill(int64_t micro);

  /// The batch tensors, in the trainer's batch input order.
  const std::vector<const loom_tensor *> &inputs() const { return inputs_; }

  /// Label elements per global micro-batch when the labels have a
  /// sequence axis (for tokens/s), else 0.
  int64_t tokensPerBatch() const { return tokensPerBatch_; }

private:
  bool openArrays(const std::vector<loom_tensor_info> &infos,
                  const std::vector<std::string> &names, const DataOptions &o,
                  std::string &error);
  bool openTokens(loom_trainer *trainer,
                  const std::vector<loom_tensor_info> &infos,
                  const std::vector<std::string> &names, const DataOptions &o,
                  std::string &error);

  struct Feed {
    std::string name;
    files::MappedTensor source; // [count, ...] (arrays)
    TensorPtr batch;            // [local, ...]
    size_t rowBytes = 0;
  };
  std::vector<Feed> feeds_;
  std::vector<const loom_tensor *> inputs_;
  int64_t batch_ = 0, local_ = 0, offset_ = 0, count_ = 0;
  int64_t tokensPerBatch_ = 0;
  // A token file: its tokens, their size, the window length and seed, and
  // which feed takes the ids and which the labels.
  files::MappedFile tokenFile_;
  int tokenBytes_ = 0;
  uint64_t tokenCount_ = 0, seed_ = 0;
  int64_t seq_ = 0;
  int idsFeed_ = -1, labelsFeed_ = -1;
};

} // namespace loom::tools

#endif // LOOM_TOOLS_LOOMRUN_DATA_H
