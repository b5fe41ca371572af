//===- Train.cpp - loom-run's training mode -------------------------------===//
//
// Opens the training data (Data.h: arrays or a token file, mapped, not
// read whole), checks it against the trainer's batch inputs, then runs
// micro-batches, logging, checkpointing and timing them.
//
//===----------------------------------------------------------------------===//

#include "tools/loom-run/Train.h"

#include "tools/loom-run/Data.h"
#include "tools/loom-run/Memory.h"
#include "tools/loom-run/Tensors.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <vector>

namespace loom::tools {

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "loom-run: error: %s\n", message.c_str());
  return 1;
}

/// The progress bar on stderr, drawn only on a terminal.
class Progress {
public:
  explicit Progress(int64_t first, int64_t last)
      : enabled_(isatty(STDERR_FILENO)), first_(first), last_(last) {}
  /// Redraws for optimizer step `step` (at most ten times a second).
  void show(int64_t step) {
    if (!enabled_)
      return;
    auto now = std::chrono::steady_clock::now();
    if (drawn_ && now - lastDraw_ < std::chrono::milliseconds(100))
      return;
    lastDraw_ = now;
    drawn_ = true;
    constexpr int kWidth = 30;
    double done = last_ > first_ ? double(step - first_) / (last_ - first_) : 1;
    int filled = static_cast<int>(done * kWidth);
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < kWidth)
      bar += '>' + std::string(static_cast<size_t>(kWidth - filled - 1), ' ');
    std::fprintf(stderr, "\r[%s] step %lld/%lld\033[K", bar.c_str(),
                 static_cast<long long>(step), static_cast<long long>(last_));
    std::fflush(stderr);
  }
  /// Erases the bar before other output.
  void clear() {
    if (!enabled_ || !drawn_)
      return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }

private:
  bool enabled_, drawn_ = false;
  int64_t first_, last_;
  std::chrono::steady_clock::time_point lastDraw_;
};

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

int train(loom_session *session, const TrainOptions &o,
          const Distributed &dist) {
  if (o.steps < 1 || o.batch < 1)
    return fail("training needs --steps N and --batch B (both at least 1)");
  if (o.batch % dist.dataRanks)
    return fail("--batch " + std::to_string(o.batch) +
                " is the global batch: it must divide by the " +
                std::to_string(dist.dataRanks) + " data-parallel ranks (" +
                dist.mesh + ")");
  // This rank's rows of each global micro-batch.
  int64_t local = o.batch / dist.dataRanks;
  int64_t offset = dist.dataIndex * local;
  loom_trainer *raw = nullptr;
  if (loom_status s = loom_trainer_create(session, &raw))
    return fail(takeMessage(s));
  std::unique_ptr<loom_trainer, void (*)(loom_trainer *)> trainer(
      raw, loom_trainer_release);

  TrainData data;
  DataOptions dataOptions{o.data, o.tokens, o.seq, o.seed, o.batch};
  std::string error;
  if (!data.open(trainer.get(), dataOptions, local, offset, dist, error))
    return fail(error);
  int64_t tokensPerBatch = data.tokensPerBatch();

  if (!o.resume.empty())
    if (loom_status s = loom_trainer_load(trainer.get(), o.resume.c_str()))
      return fail(takeMessage(s));
  if (!o.init.empty()) {
    // Every array of the file names a state tensor; each is set.
    std::vector<std::pair<std::string, loom_tensor *>> arrays;
    if (!readNpz(o.init, arrays, error))
      return fail("--init " + error);
    std::string failed;
    for (auto &[name, t] : arrays) {
      if (failed.empty())
        if (loom_status s =
                loom_trainer_set_state(trainer.get(), name.c_str(), t))
          failed = "--init " + o.init + ": " + takeMessage(s);
      loom_tensor_release(t);
    }
    if (!failed.empty())
      return fail(failed);
    std::printf("initialized %zu state tensors from %s\n", arrays.size(),
                o.init.c_str());
  }
  int64_t accumulate = loom_trainer_accumulate(trainer.get());
  int64_t micro = loom_trainer_micro_step(trainer.get());
  int64_t firstStep = micro / accumulate;
  int64_t lastStep = firstStep + o.steps;
  if (lastStep > std::numeric_limits<int64_t>::max() / accumulate)
    return fail("--steps " + std::to_string(o.steps) + " is too many");
  int64_t horizon = o.totalSteps ? o.totalSteps
                    : loom_trainer_total_steps(trainer.get())
                        ? loom_trainer_total_steps(trainer.get())
                        : lastStep;
  if (loom_status s = loom_trainer_set_total_steps(trainer.get(), horizon))
    return fail(takeMessage(s));
  if (!o.resume.empty())
    std::printf("resumed from %s at step %lld (micro-batch %lld)\n",
                o.resume.c_str(), static_cast<long long>(firstStep),
                static_cast<long long>(micro));

  const std::vector<const loom_tensor *> &batch = data.inputs();
  Progress progress(firstStep, lastStep);
  // Every rank saves: loom_trainer_save is collective with a communicator
  // (rank 0 writes replicated state, every rank its shards, and none goes
  // on before the checkpoint is complete).
  auto save = [&]() {
    if (loom_status s = loom_trainer_save(trainer.get(), o.save.c_str())) {
      progress.clear();
      return fail("--save " + o.save + ": " + takeMessage(s));
    }
    return 0;
  };

  std::unique_ptr<loom_profile, void (*)(loom_profile *)> profile(
      nullptr, loom_profile_release);
  if (!o.profile.empty()) {
    loom_profile *p = nullptr;
    if (loom_status s = loom_profile_create(&p))
      return fail(takeMessage(s));
    profile.reset(p);
  }

  Clock::time_point start = Clock::now(), logStart = start, stepStart = start;
  double lossSum = 0;
  int64_t lossCount = 0, samples = 0, skipped = 0;
  int64_t endMicro = lastStep * accumulate, firstMicro = micro;
  // Each optimizer step's time: its micro-batches (cutting the batch and
  // running the step), not the log lines or checkpoints between steps.
  std::vector<double> stepMs;
  for (; micro < endMicro; ++micro) {
    if (micro % accumulate == 0)
      stepStart = Clock::now();
    data.fill(micro);
    loom_train_stats stats;
    int64_t step = micro / accumulate + 1; // 1-based, as printed
    std::string at = "step " + std::to_string(step);
    if (accumulate > 1)
      at += " (micro-batch " + std::to_string(micro % accumulate + 1) + " of " +
            std::to_string(accumulate) + ")";
    if (loom_status s = profile ? loom_trainer_step_profiled(
                                      trainer.get(), batch.data(), batch.size(),
                                      &stats, profile.get())
                                : loom_trainer_step(trainer.get(), batch.data(),
                                                    batch.size(), &stats)) {
      progress.clear();
      return fail(at + ": " + takeMessage(s));
    }
    samples += o.batch;
    if (stats.nonfinite && stats.loss_scale > 0) {
      // Dynamic loss scaling: the step skipped its update and lowered its
      // scale itself; expected now and then.
      progress.clear();
      std::fprintf(stderr,
                   "loom-run: %s: gradients overflowed at loss scale %g: "
                   "the update is skipped and the scale lowered\n",
                   at.c_str(), stats.loss_scale);
      ++skipped;
      if (std::isfinite(stats.loss)) {
        lossSum += stats.loss;
        ++lossCount;
      }
    } else if (stats.nonfinite) {
      progress.clear();
      char what[128];
      std::snprintf(what, sizeof(what), "the loss is %g (gradient norm %g)",
                    stats.loss, stats.grad_norm);
      if (!o.skipNonfinite)
        return fail(at + ": " + what +
                    "; stopping (--skip-nonfinite skips such updates)");
      std::fprintf(stderr, "loom-run: warning: %s: %s: the update is skipped\n",
                   at.c_str(), what);
      ++skipped;
    } else {
      lossSum += stats.loss;
      ++lossCount;
    }
    if (!stats.applied) {
      progress.show(step - 1);
      continue;
    }
    stepMs.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - stepStart)
            .count());
    if (step % o.logEvery == 0 || step == lastStep) {
      progress.clear();
      double seconds = std::max(secondsSince(logStart), 1e-9);
      std::printf("step %lld/%lld  loss %.6g  lr %.6g  grad_norm %.6g  "
                  "samples/s %.1f",
                  static_cast<long long>(step),
                  static_cast<long long>(lastStep),
                  lossCount ? lossSum / lossCount : NAN, stats.lr,
                  stats.grad_norm, samples / seconds);
      if (stats.loss_scale > 0)
        std::printf("  loss_scale %g", stats.loss_scale);
      if (tokensPerBatch)
        std::printf("  tokens/s %.0f",
                    samples / o.batch * tokensPerBatch / seconds);
      std::printf("\n");
      std::fflush(stdout);
      lossSum = 0;
      lossCount = samples = 0;
      logStart = Clock::now();
    }
    if (!o.save.empty() && o.saveEvery && step % o.saveEvery == 0 &&
        step != lastStep)
      if (int rc = save())
        return rc;
    progress.show(step);
  }
  progress.clear();
  if (!o.save.empty())
    if (int rc = save())
      return rc;
  std::printf("trained %lld steps (%lld micro-batches of %lld samples) in "
              "%.3g s",
              static_cast<long long>(lastStep - firstStep),
              static_cast<long long>(endMicro - firstMicro),
              static_cast<long long>(o.batch), secondsSince(start));
  if (skipped)
    std::printf("; %lld updates skipped (not finite)",
                static_cast<long long>(skipped));
  if (!o.save.empty())
    std::printf("; saved %s", o.save.c_str());
  std::printf("\n");
  // The steady state: the steps after the first `warmup` (the first run
  // allocates its memory).
  size_t warmup = static_cast<size_t>(o.warmup);
  if (stepMs.size() > warmup) {
    std::vector<double> ms(stepMs.begin() + warmup, stepMs.end());
    double sum = 0;
    for (double m : ms)
      sum += m;
    std::sort(ms.begin(), ms.end());
    std::printf("per step: min %.3f ms, median %.3f ms, mean %.3f ms (%zu "
                "steps after %zu warm-up)\n",
                ms.front(), ms[ms.size() / 2], sum / ms.size(), ms.size(),
                warmup);
  }
  if (o.printMemory) {
    size_t bytes = 0;
    for (const loom_tensor *t : batch)
      bytes += loom_tensor_size_bytes(t);
    std::string problem = printMemory(session, trainer.get(), bytes);
    if (!problem.empty())
      return fail(problem);
  }
  if (profile) {
    if (loom_status s =
            loom_profile_write_chrome_trace(profile.get(), o.profile.c_str()))
      return fail(takeMessage(s));
    std::fprintf(stderr, "loom-run: wrote %zu events to %s\n",
                 loom_profile_event_count(profile.get()), o.profile.c_str());
  }
  return 0;
}

} // namespace loom::tools
