//===- Train.h - loom-run's training mode ---------------------------------===//
//
//   loom-run TRAIN.loom --data FILE.npz|FILE.npy --steps N --batch B
//            [--tokens uint16|uint32 [--seq S] [--seed N]] [--log-every K]
//            [--save CKPT] [--save-every K] [--resume CKPT] [--init W.npz]
//            [--total-steps H] [--skip-nonfinite] [--threads T]
//            [--warmup W] [--profile TRACE.json]
//
// Drives a training artifact through the runtime's trainer (loom_trainer_*):
// micro-batches cut from the data (Data.h: .npz/.npy arrays mapped in
// place, or windows of a raw token file), a log line per K optimizer steps,
// a progress bar on a terminal, checkpoints. Links the runtime only. As a
// rank of a data-parallel job (Distributed.h) it takes its rows of each
// global batch and only rank 0 writes checkpoints.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOMRUN_TRAIN_H
#define LOOM_TOOLS_LOOMRUN_TRAIN_H

#include "loom/runtime.h"
#include "tools/loom-run/Distributed.h"

#include <cstdint>
#include <string>

namespace loom::tools {

struct TrainOptions {
  /// The .npz file (one array per batch input, dim 0 the sample axis), a
  /// .npy file for a model with one batch input, or a raw token file.
  std::string data;
  /// "uint16" or "uint32": `data` is a token file of that element type
  /// (Data.h); `seq` tokens per sample (0: the model's), `seed` for the
  /// window positions.
  std::string tokens;
  int64_t seq = 0;
  uint64_t seed = 0;
  /// Optimizer steps in this run, and samples per micro-batch (the global
  /// batch: each data-parallel rank takes batch / data-ranks of them).
  int64_t steps = 0, batch = 0;
  /// A log line every `logEvery` optimizer steps (and at the last).
  int64_t logEvery = 10;
  /// Checkpoint written at the end (and every `saveEvery` steps), and one
  /// to start from.
  std::string save, resume;
  int64_t saveEvery = 0;
  /// Initial values of state tensors, by name (an .npz of, say, a PyTorch
  /// state_dict): loom_trainer_set_state before the first step.
  std::string init;
  /// The schedule horizon; 0: the checkpoint's on resume, else the
  /// artifact's, else the steps this run ends at.
  int64_t totalSteps = 0;
  /// Skip updates whose loss or gradient norm is not finite, instead of
  /// stopping.
  bool skipNonfinite = false;
  /// Optimizer steps left out of the step-time line (the first allocates
  /// the run's memory).
  int64_t warmup = 1;
  /// A Chrome trace of every step's run and kernels, when not empty.
  std::string profile;
  /// Print what the run holds by role, and the resident set (Memory.h).
  bool printMemory = false;
};

/// Trains `session` (a training artifact) as `options` say, as one rank of
/// `dist`. Returns the exit code; errors are printed ("loom-run: error:
/// ...").
int train(loom_session *session, const TrainOptions &options,
          const Distributed &dist);

} // namespace loom::tools

#endif // LOOM_TOOLS_LOOMRUN_TRAIN_H
