//===- Communicator.h - collectives between the ranks of a job -*- C++ -*-===//
//
// One interface over the collective engines (Gloo between CPU processes;
// NCCL between GPUs). Every operation is asynchronous: it is queued on the
// communicator's worker and runs there in issue order (Gloo's calls block,
// and every rank of a group must run the group's operations in the same
// order), and returns a completion handle. Buffers must stay alive and
// untouched until the handle's wait() returns.
//
// Groups: an operation runs over the world ranks listed in `group` (sorted,
// holding rank(); empty means every rank). A group's channel is made the
// first time an operation names it, in the same program order on every
// member.
//
// Failures: an operation that fails (a rank that died, a timeout, a bad
// argument) breaks the communicator: its handle and every later call fail
// at once with a message naming the rank(s) and the operation. Nothing
// throws out of the interface, aborts or exits.
//
// Threading: issuing operations and waiting for them may happen on any
// thread, but one step at a time per communicator: the issue order is the
// order every rank must agree on.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_COLLECTIVES_COMMUNICATOR_H
#define LOOM_RUNTIME_COLLECTIVES_COMMUNICATOR_H

#include "loom/runtime.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace loom::runtime::collectives {

/// Reductions, numbered as the collective ABI's `op` (docs/distributed.md).
enum class ReduceOp : int { Sum = 0, Max = 1, Min = 2, Prod = 3 };

/// "sum", "max", "min", "prod"; "?" otherwise.
const char *reduceOpName(ReduceOp op);

/// Whether collectives take `dtype`: f32, f16, bf16, f64, i64, i32, i8.
bool isCollectiveDtype(loom_dtype dtype);
/// Bytes per element of a collective dtype; 0 for any other.
size_t collectiveElementSize(loom_dtype dtype);

/// World ranks, sorted; empty: every rank.
using Group = std::vector<int>;

/// "ranks 0, 2".
std::string groupString(const Group &group, int worldSize);
/// "rank 3", "ranks 1, 2".
std::string rankList(const std::vector<int> &ranks);
/// "2.5 s".
std::string secondsString(std::chrono::milliseconds t);

/// The completion handle of one operation.
class Work {
public:
  virtual ~Work();
  /// Blocks until the operation has completed; "" on success, otherwise
  /// why it failed.
  virtual std::string wait() = 0;
};
using WorkPtr = std::shared_ptr<Work>;

/// A handle that has already completed with `error` ("" for success).
WorkPtr completedWork(std::string error);

/// A handle an engine's worker completes.
class PendingWork : public Work {
public:
  std::string wait() override;
  /// Wakes the waiters with `error` ("" for success).
  void complete(std::string error);

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string error_;
};

/// `group`, or the `size` ranks of the world when it is empty.
Group groupMembers(const Group &group, int size);

/// "all_reduce of 4 f32 over ranks 0, 1" (`what` of `count` elements).
std::string describeOperation(const char *what, size_t count, loom_dtype dtype,
                              const Group &group, int size);

/// How long a collective or the rendezvous may wait for the other ranks:
/// LOOM_COLLECTIVE_TIMEOUT (seconds) when set to a positive number, else
/// `fallback`. Sets `error` when the variable is set but not a positive
/// number.
std::chrono::milliseconds timeoutFromEnv(std::chrono::milliseconds fallback,
                                         std::string &error);
/// The default timeout: 300 s.
inline constexpr std::chrono::milliseconds kDefaultTimeout{300000};

/// Where this process stands in its job, from the environment a launcher
/// sets: RANK, WORLD_SIZE, LOCAL_RANK (loom-launch, torchrun),
/// OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK (mpirun) or SLURM_PROCID,
/// SLURM_NTASKS, SLURM_LOCALID (srun); MASTER_ADDR and MASTER_PORT name
/// rank 0's rendezvous (MASTER_ADDR defaults to 127.0.0.1 on one node;
/// under torchrun's static rendezvous, TORCHELASTIC_USE_AGENT_STORE=True,
/// the port after MASTER_PORT, which torchrun's own store holds).
struct RankEnvironment {
  int rank = 0, size = 1, localRank = 0;
  std::string masterAddr;
  int masterPort = 0;
  /// "RANK/WORLD_SIZE", "OMPI_COMM_WORLD_*" or "SLURM_*".
  std::string source;
};

/// Reads the environment; false with `error` saying what is missing or
/// inconsistent. `found` is false when no launcher variable is set at all
/// (a single process).
bool rankFromEnvironment(RankEnvironment &env, bool &found, std::string &error);

class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "gloo", "nccl".
  virtual const char *backend() const = 0;

  /// `out` = the reduction of every member's `in` (`count` elements each).
  /// `in` may equal `out`.
  virtual WorkPtr allReduce(const void *in, void *out, size_t count,
                            loom_dtype dtype, ReduceOp op,
                            const Group &group = {}) = 0;
  /// `out` (G * `count` elements) = the members' `in`s (`count` each) in
  /// group order.
  virtual WorkPtr allGather(const void *in, void *out, size_t count,
                            loom_dtype dtype, const Group &group = {}) = 0;
  /// The reduction of the members' `in`s (G * `count` elements each), cut
  /// in G chunks of `count`: chunk g to the member at group index g.
  virtual WorkPtr reduceScatter(const void *in, void *out, size_t count,
                                loom_dtype dtype, ReduceOp op,
                                const Group &group = {}) = 0;
  /// `out` = `in` of the member at group index `root` (`in` is read on
  /// the root only).
  virtual WorkPtr broadcast(const void *in, void *out, size_t count,
                            loom_dtype dtype, int root,
                            const Group &group = {}) = 0;
  /// Point to point between world ranks; `tag` tells apart concurrent
  /// messages between the same pair. The worker only posts the transfer
  /// (in issue order); the handle's wait() waits for it to complete, so a
  /// send whose peer has not posted its receive yet does not hold up the
  /// operations issued after it (two ranks may each send to the other,
  /// then receive). That is Gloo; NCCL runs a send or receive on its
  /// stream in issue order like its collectives (a blocking pair there).
  virtual WorkPtr send(const void *data, size_t count, loom_dtype dtype,
                       int peer, uint32_t tag = 0) = 0;
  virtual WorkPtr recv(void *data, size_t count, loom_dtype dtype, int peer,
                       uint32_t tag = 0) = 0;
  virtual WorkPtr barrier(const Group &group = {}) = 0;

  /// The failure that broke the communicator; "" while it works.
  virtual std::string error() const = 0;
  /// Breaks the communicator on purpose (this rank is giving up:
  /// `reason`): the other ranks' operations that wait on it fail naming
  /// it once it is released, which then closes at once.
  virtual void abort(const std::string &reason) = 0;
};

/// A communicator of one rank: every collective is a copy; send and recv
/// fail (there is no peer).
std::unique_ptr<Communicator> createSelfCommunicator();

} // namespace loom::runtime::collectives

#endif // LOOM_RUNTIME_COLLECTIVES_COMMUNICATOR_H
