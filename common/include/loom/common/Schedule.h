//===- Schedule.h - pipeline schedules as data, and their verifier -*- C++
//-*-===//
//
// A pipeline schedule is data: for each rank, the list of what it does, in
// order: compute a micro-batch's forward (F), backward (B), or the two
// halves of a split backward (I: the input's gradient, which the previous
// stage waits for; W: the weights' gradient, which nobody waits for), and
// send or receive an activation or a gradient. The compiler emits it, the
// runtime runs it; both check it first (verify): every send has its
// receive, no rank waits on itself through a cycle of receives, every
// computation runs once and after what it needs, and each rank's peak of
// live activations fits the memory budget.
//
// Stages: with `virtualStages` v chunks per rank there are S * v stages;
// stage s runs on rank s % S (Megatron's interleaving: rank r holds chunks
// r, r + S, ...). Sends are asynchronous (posted, then completed by the
// receiver); a receive blocks until its send is posted.
//
// No MLIR here: the compiler and the runtime both link it (LoomPipeline).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMMON_SCHEDULE_H
#define LOOM_COMMON_SCHEDULE_H

#include <cstdint>
#include <string>
#include <vector>

namespace loom::pipeline {

/// One thing a rank does.
struct Action {
  enum class Type : uint8_t {
    Forward,        // F: the stage's forward of the micro-batch
    Backward,       // B: its whole backward
    BackwardInput,  // I: the gradient of the stage's input
    BackwardWeight, // W: the gradients of the stage's weights
    SendActivation, // the stage's output, to the next stage's rank
    RecvActivation, // the previous stage's output, for this stage
    SendGradient,   // the gradient of the stage's input, to the previous
    RecvGradient,   // the gradient of the stage's output, from the next
  };
  Type type;
  int microBatch = 0;
  /// The stage computed; for a send, the stage that sends; for a receive,
  /// the stage that receives.
  int stage = 0;
  /// Sends and receives: the other rank.
  int peer = -1;

  bool isCompute() const { return type <= Type::BackwardWeight; }
  /// "F3@1" (forward of micro-batch 3 at stage 1), "send act 3@1 -> rank 2".
  std::string str() const;
};

struct Schedule {
  std::string name; ///< "gpipe", "1f1b", "interleaved", "zb-h1"
  int ranks = 1;
  int virtualStages = 1;
  int microBatches = 1;
  /// What each rank does, in order.
  std::vector<std::vector<Action>> programs;

  int stages() const { return ranks * virtualStages; }
  int rankOf(int stage) const { return stage % ranks; }
  /// Whether the backward is split into I and W.
  bool splitBackward() const;
};

/// How long things take, in any unit (the simulation's and the cost
/// model's); B = I + W when the backward is split.
struct Costs {
  double forward = 1, backwardInput = 1, backwardWeight = 1;
  double transfer = 0; ///< a send's latency until its receive can complete
};

/// The schedules: "gpipe" (every forward, then every backward), "1f1b"
/// (PipeDream-flush: a warm-up of S - r - 1 forwards, then one forward and
/// one backward alternately), "interleaved" (1F1B over `virtualStages`
/// chunks per rank, Megatron's order), "zb-h1" (the backward split: the
/// input gradients as early as possible, the weight gradients in the
/// bubbles, at most S micro-batches holding activations per rank, 1F1B's
/// peak). Any micro-batch count m >= 1. Empty with `error` for a bad name
/// or count.
Schedule makeSchedule(const std::string &name, int ranks, int microBatches,
                      int virtualStages, std::string &error);

/// Every schedule name.
const std::vector<std::string> &scheduleNames();

/// What a verified schedule needs.
struct VerifyOptions {
  /// Bytes of live activations per micro-batch at each stage (empty: not
  /// checked), and the budget per rank (0: none).
  std::vector<int64_t> activationBytes;
  int64_t memoryBudget = 0;
};

/// What verify() learns on the way.
struct VerifyResult {
  /// Per rank: the most micro-batches whose activations are alive at once
  /// (from a forward until its backward, or until W when it is split), and
  /// the peak bytes (with activationBytes).
  std::vector<int> peakLive;
  std::vector<int64_t> peakBytes;
};

/// Checks `s`: every action names a real stage, micro-batch and the rank
/// of the stage; each computation runs exactly once, on its stage's rank,
/// after what it needs (F after the previous stage's F, B or I after the
/// next stage's and this stage's F, W after I); each send has a receive on
/// its peer and each receive a send; running it (sends posted, receives
/// blocking) never deadlocks; the memory fits. The first problem is an
/// error naming the rank, the step (the action's index in the rank's
/// program) and, for a deadlock, the ranks in the cycle.
bool verify(const Schedule &s, const VerifyOptions &options,
            VerifyResult &result, std::string &error);

/// A run of the schedule with `costs`: when each action starts and ends.
struct Timeline {
  /// Per rank, per action: start and end times.
  std::vector<std::vector<std::pair<double, double>>> times;
  double makespan = 0;
  /// 1 - (time computing) / (ranks * makespan).
  double bubble = 0;
};

/// Simulates a verified schedule (computations take their cost, a
/// receive ends `transfer` after its send ends).
Timeline simulate(const Schedule &s, const Costs &costs);

/// The bubble fraction of the schedule's analytic model for S ranks, m
/// micro-batches, v chunks, with F, I and W of equal cost: (S-1)/(m+S-1)
/// for gpipe and 1f1b, (S-1)/(v*m+S-1) for interleaved (when S divides
/// m), (S-1)/(3m+S-1) for zb-h1 (the ideal of its paper: a bubble of
/// F + I - W instead of F + I + W per stage; the list scheduler's lies
/// between that and 1F1B's).
double analyticBubble(const std::string &name, int ranks, int microBatches,
                      int virtualStages);

/// The timeline as text: one line per rank, one column per time unit of
/// the simulation (F, B, I, W and the micro-batch, '.' idle), and a
/// legend.
std::string drawTimeline(const Schedule &s, const Timeline &t);

} // namespace loom::pipeline

#endif // LOOM_COMMON_SCHEDULE_H
