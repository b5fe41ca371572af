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

/// One send or receive of a grouped exchange (Communicator::sendRecvGroup).
struct Transfer {
  bool send = false;
  /// Read for a send, written for a receive; alive until its handle's
  /// wait() returns.
  void *data = nullptr;
  size_t count = 0;
  loom_dtype dtype = LOOM_DTYPE_I8;
  /// The other world rank.
  int peer = -1;
  /// Tells apart the messages between the same pair (Gloo). NCCL has no
  /// tags: it pairs a pair's messages by their order, so both sides must
  /// list them in the same order (the tags' order does).
  uint32_t tag = 0;
};

/// One collective of the kinds a program's mesh ops become (the CUDA
/// program's CudaCollective): what issueCollective and
/// Communicator::orderedCollective take.
struct CollectiveCall {
  enum Kind { AllReduce, AllGather, ReduceScatter, Broadcast };
  Kind kind = AllReduce;
  const void *in = nullptr;
  void *out = nullptr;
  /// As the method of the kind takes it: the elements of each member's
  /// `in` (all-reduce, all-gather, broadcast) or of `out` (reduce-scatter).
  size_t count = 0;
  loom_dtype dtype = LOOM_DTYPE_F32;
  /// All-reduce and reduce-scatter.
  ReduceOp op = ReduceOp::Sum;
  /// Broadcast: the root's index in the group.
  int root = 0;
  Group group;
};

/// How a caller on a CUDA stream orders a collective on the device
/// (Communicator::orderedCollective). Both events are the caller's, made
/// in the primary context of GPU `device`, where its stream and the
/// operation's buffers live too.
struct StreamOrder {
  /// The ordinal of the caller's GPU; the communicator refuses another
  /// than its own.
  int device = -1;
  /// A CUevent the caller recorded on its stream after the steps that
  /// write the input (and the last that read the output): the operation
  /// starts only after it, on the device.
  void *ready = nullptr;
  /// A CUevent the communicator records on its own stream after the
  /// operation: once `issued` has completed, the caller's
  /// cuStreamWaitEvent(stream, done) orders the consumers after the
  /// operation without the host waiting for it.
  void *done = nullptr;
};

/// The two handles of an operation ordered on the device.
struct OrderedWork {
  /// Completes once the operation is queued on the communicator's stream
  /// and `done` recorded after it (or once the operation has completed,
  /// where `done` is left as it is: the default); fails as the operation
  /// would.
  WorkPtr issued;
  /// Completes once the operation has run on the device, or fails naming
  /// it and the rank (a dead peer, NCCL's error, the timeout). The buffers
  /// must stay alive until it returns.
  WorkPtr completed;
};

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
  /// stream in issue order like its collectives (a blocking pair there:
  /// transfers that cross go through sendRecvGroup).
  virtual WorkPtr send(const void *data, size_t count, loom_dtype dtype,
                       int peer, uint32_t tag = 0) = 0;
  virtual WorkPtr recv(void *data, size_t count, loom_dtype dtype, int peer,
                       uint32_t tag = 0) = 0;
  virtual WorkPtr barrier(const Group &group = {}) = 0;
  /// The sends and receives of one step, issued together: no transfer of
  /// the list waits for another of it to complete first, so two ranks
  /// that each send to the other in one list cannot deadlock. One handle
  /// per transfer, in list order. NCCL runs the list as one group
  /// (ncclGroupStart/End): every handle completes when the whole group
  /// has; Gloo posts every buffer, then each handle waits for its own.
  /// The default issues send() and recv() in list order (right for a
  /// backend whose sends are only posted, as Gloo's are).
  virtual std::vector<WorkPtr>
  sendRecvGroup(const std::vector<Transfer> &transfers);
  /// `call` ordered against the caller's CUDA stream on the device (a
  /// backend whose operations run on a stream of the same GPU: NCCL): the
  /// communicator's stream waits for `order.ready` before the operation
  /// (cuStreamWaitEvent) and records `order.done` after it, so the host
  /// never waits for the producers nor for the operation; the caller
  /// waits for `issued` (only until the operation is queued), makes its
  /// stream wait for `done`, and waits for `completed` later (at the end
  /// of its run), which is where a failure surfaces. The buffers are
  /// device memory. The default is the host's ordering, as the plain
  /// methods give it: it waits on the host for `order.ready`
  /// (cuEventSynchronize, when set), issues `call` (issueCollective) and
  /// returns its handle as both; `done` is not recorded (a stream that
  /// waits for an event never recorded, or whose last recording has
  /// completed, does not wait).
  virtual OrderedWork orderedCollective(const CollectiveCall &call,
                                        const StreamOrder &order);

  /// The failure that broke the communicator; "" while it works.
  virtual std::string error() const = 0;
  /// Breaks the communicator on purpose (this rank is giving up:
  /// `reason`): the other ranks' operations that wait on it fail naming
  /// it once it is released, which then closes at once.
  virtual void abort(const std::string &reason) = 0;
};

/// Issues `call` through the method of its kind (allReduce, ...).
WorkPtr issueCollective(Communicator &comm, const CollectiveCall &call);

/// A communicator of one rank: every collective is a copy; send and recv
/// fail (there is no peer).
std::unique_ptr<Communicator> createSelfCommunicator();

} // namespace loom::runtime::collectives

#endif // LOOM_RUNTIME_COLLECTIVES_COMMUNICATOR_H
