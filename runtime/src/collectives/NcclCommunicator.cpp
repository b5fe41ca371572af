//===- NcclCommunicator.cpp - collectives between GPUs --------------------===//

#include "runtime/src/collectives/NcclCommunicator.h"

#include "runtime/src/collectives/Nccl.h"
#include "runtime/src/collectives/StoreCommunicator.h"
#include "runtime/src/collectives/TcpStore.h"
#include "runtime/src/cuda/CudaApi.h"

#include "loom/common/DynamicLibrary.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace loom::runtime::collectives {

namespace {

using Clock = std::chrono::steady_clock;
using cuda::CUdeviceptr;

// nccl.h's enums (stable across NCCL 2.x).
constexpr int kNcclInt8 = 0, kNcclInt32 = 2, kNcclInt64 = 4, kNcclFloat16 = 6,
              kNcclFloat32 = 7, kNcclFloat64 = 8, kNcclBfloat16 = 9;
constexpr int kNcclSum = 0, kNcclProd = 1, kNcclMax = 2, kNcclMin = 3;
constexpr int kNcclInProgress = nccl::kInProgress;
// cuda.h.
constexpr int kCudaErrorNotReady = 600;
constexpr int kPointerAttributeMemoryType =
    2;                                    // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr unsigned kMemoryTypeDevice = 2; // CU_MEMORYTYPE_DEVICE

int ncclType(loom_dtype dtype) {
  switch (dtype) {
  case LOOM_DTYPE_F32:
    return kNcclFloat32;
  case LOOM_DTYPE_F16:
    return kNcclFloat16;
  case LOOM_DTYPE_BF16:
    return kNcclBfloat16;
  case LOOM_DTYPE_F64:
    return kNcclFloat64;
  case LOOM_DTYPE_I64:
    return kNcclInt64;
  case LOOM_DTYPE_I32:
    return kNcclInt32;
  case LOOM_DTYPE_I8:
    return kNcclInt8;
  default:
    return -1;
  }
}

int ncclOp(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return kNcclSum;
  case ReduceOp::Max:
    return kNcclMax;
  case ReduceOp::Min:
    return kNcclMin;
  case ReduceOp::Prod:
    return kNcclProd;
  }
  return -1;
}

/// Staging offsets are multiples of this (NCCL and the copies like
/// aligned buffers).
constexpr size_t kStagingAlignment = 256;
constexpr size_t kNone = ~size_t(0);

class NcclCommunicator : public StoreCommunicator {
public:
  NcclCommunicator(int rank, int size, std::chrono::milliseconds timeout)
      : StoreCommunicator(rank, size, timeout) {}
  ~NcclCommunicator() override;

  bool init(const std::string &addr, int port, const NcclOptions &options,
            std::string &error);

  const char *backend() const override { return "nccl"; }

  WorkPtr allReduce(const void *in, void *out, size_t count, loom_dtype dtype,
                    ReduceOp op, const Group &group) override {
    return start(
        {CollectiveCall::AllReduce, in, out, count, dtype, op, 0, group});
  }
  WorkPtr allGather(const void *in, void *out, size_t count, loom_dtype dtype,
                    const Group &group) override {
    return start({CollectiveCall::AllGather, in, out, count, dtype,
                  ReduceOp::Sum, 0, group});
  }
  WorkPtr reduceScatter(const void *in, void *out, size_t count,
                        loom_dtype dtype, ReduceOp op,
                        const Group &group) override {
    return start(
        {CollectiveCall::ReduceScatter, in, out, count, dtype, op, 0, group});
  }
  WorkPtr broadcast(const void *in, void *out, size_t count, loom_dtype dtype,
                    int root, const Group &group) override {
    return start({CollectiveCall::Broadcast, in, out, count, dtype,
                  ReduceOp::Sum, root, group});
  }
  OrderedWork orderedCollective(const CollectiveCall &call,
                                const StreamOrder &order) override;
  WorkPtr send(const void *data, size_t count, loom_dtype dtype, int peer,
               uint32_t) override {
    return pointToPoint(true, const_cast<void *>(data), count, dtype, peer);
  }
  WorkPtr recv(void *data, size_t count, loom_dtype dtype, int peer,
               uint32_t) override {
    return pointToPoint(false, data, count, dtype, peer);
  }
  std::vector<WorkPtr>
  sendRecvGroup(const std::vector<Transfer> &transfers) override;
  WorkPtr barrier(const Group &group) override {
    // A one-element all-reduce of the group, on the device.
    return collective(
        "barrier", 1, LOOM_DTYPE_I32, nullptr, group, nullptr, 4, nullptr, 4,
        [=](nccl::Comm c, CUdeviceptr i, CUdeviceptr o, int, size_t) {
          return nccl_->ncclAllReduce(reinterpret_cast<void *>(i),
                                      reinterpret_cast<void *>(o), 1,
                                      kNcclInt32, kNcclSum, c, stream());
        });
  }
  void abort(const std::string &reason) override {
    breakWith("rank " + std::to_string(rank_) + " gave up", reason, true);
  }

private:
  /// Runs on the worker: issues NCCL calls on the stream for the group's
  /// communicator, the operands already on the device.
  using Issue = std::function<nccl::Result(nccl::Comm, CUdeviceptr in,
                                           CUdeviceptr out, int, size_t)>;
  /// One NCCL call of a task and its buffers: the caller's where they are
  /// device memory, else device scratch, filled from and read back to the
  /// caller's host memory through pinned host memory, so that every copy
  /// is asynchronous on the stream. `in` null with `inBytes`: scratch of
  /// no value (a barrier's).
  struct Part {
    const void *in = nullptr;
    size_t inBytes = 0;
    void *out = nullptr;
    size_t outBytes = 0;
    Issue issue;
  };
  struct Task {
    std::string name;
    Group group;
    /// More than one: issued as one ncclGroupStart/End (sendRecvGroup).
    std::vector<Part> parts;
    std::shared_ptr<PendingWork> work;
    /// Ordered on the device (orderedCollective): the stream waits for
    /// `waitFor` before the calls and records `record` after them; then
    /// `issued` completes and the task is in flight (InFlight) until
    /// `record` has completed. Its operands are device memory.
    cuda::CUevent waitFor = nullptr, record = nullptr;
    std::shared_ptr<PendingWork> issued;
  };
  /// A task ordered on the device, queued on the stream, whose `done`
  /// event the worker polls (settle).
  struct InFlight {
    std::string name;
    Group group;
    nccl::Comm comm = nullptr;
    cuda::CUevent done = nullptr;
    Clock::time_point deadline;
    std::shared_ptr<PendingWork> work;
  };
  /// Completes `t`'s handles (its issue's too) with `error`.
  static void finishTask(Task &t, const std::string &error) {
    if (t.issued)
      t.issued->complete(error);
    t.work->complete(error);
  }

  cuda::CUstream stream() const { return stream_; }

  /// Whether `p` is device memory of this process (no staging).
  bool onDevice(const void *p) const {
    if (!p)
      return false;
    unsigned type = 0;
    return cu_->cuPointerGetAttribute(&type, kPointerAttributeMemoryType,
                                      reinterpret_cast<CUdeviceptr>(p)) == 0 &&
           type == kMemoryTypeDevice;
  }

  /// One of the four collectives; with `order`, ordered on the device
  /// (orderedCollective), `issued` set to the handle of its issue.
  WorkPtr start(const CollectiveCall &c, const StreamOrder *order = nullptr,
                WorkPtr *issued = nullptr) {
    const size_t count = c.count,
                 bytes = count * collectiveElementSize(c.dtype);
    const loom_dtype dtype = c.dtype;
    const ReduceOp op = c.op;
    switch (c.kind) {
    case CollectiveCall::AllReduce:
      return collective(
          "all_reduce", count, dtype, &op, c.group, c.in, bytes, c.out, bytes,
          [=](nccl::Comm comm, CUdeviceptr i, CUdeviceptr o, int, size_t) {
            return nccl_->ncclAllReduce(
                reinterpret_cast<void *>(i), reinterpret_cast<void *>(o), count,
                ncclType(dtype), ncclOp(op), comm, stream());
          },
          order, issued);
    case CollectiveCall::AllGather:
      return collective(
          "all_gather", count, dtype, nullptr, c.group, c.in, bytes, c.out,
          members(c.group).size() * bytes,
          [=](nccl::Comm comm, CUdeviceptr i, CUdeviceptr o, int, size_t) {
            return nccl_->ncclAllGather(reinterpret_cast<void *>(i),
                                        reinterpret_cast<void *>(o), count,
                                        ncclType(dtype), comm, stream());
          },
          order, issued);
    case CollectiveCall::ReduceScatter:
      return collective(
          "reduce_scatter", count, dtype, &op, c.group, c.in,
          members(c.group).size() * bytes, c.out, bytes,
          [=](nccl::Comm comm, CUdeviceptr i, CUdeviceptr o, int, size_t) {
            return nccl_->ncclReduceScatter(
                reinterpret_cast<void *>(i), reinterpret_cast<void *>(o), count,
                ncclType(dtype), ncclOp(op), comm, stream());
          },
          order, issued);
    case CollectiveCall::Broadcast:
      break;
    }
    Group m = members(c.group);
    const int root = c.root;
    if (c.kind != CollectiveCall::Broadcast)
      return reject(describe("collective", count, dtype, c.group),
                    "unknown collective kind " +
                        std::to_string(static_cast<int>(c.kind)));
    if (root < 0 || static_cast<size_t>(root) >= m.size())
      return reject(describe("broadcast", count, dtype, c.group),
                    "root " + std::to_string(root) + " is not in the group");
    bool isRoot = m[static_cast<size_t>(root)] == rank_;
    return collective(
        "broadcast", count, dtype, nullptr, c.group, isRoot ? c.in : nullptr,
        isRoot ? bytes : 0, c.out, bytes,
        [=](nccl::Comm comm, CUdeviceptr i, CUdeviceptr o, int, size_t) {
          return nccl_->ncclBroadcast(reinterpret_cast<void *>(i ? i : o),
                                      reinterpret_cast<void *>(o), count,
                                      ncclType(dtype), root, comm, stream());
        },
        order, issued);
  }

  WorkPtr collective(const char *what, size_t count, loom_dtype dtype,
                     const ReduceOp *op, const Group &group, const void *in,
                     size_t inBytes, void *out, size_t outBytes, Issue issue,
                     const StreamOrder *order = nullptr,
                     WorkPtr *issued = nullptr) {
    std::string name = describe(what, count, dtype, group);
    if (op)
      name += std::string(" (") + reduceOpName(*op) + ")";
    if (ncclType(dtype) < 0)
      return reject(name, "NCCL does not reduce this dtype");
    if (op && ncclOp(*op) < 0)
      return reject(name, "unknown reduction");
    Group m = members(group);
    if (std::find(m.begin(), m.end(), rank_) == m.end())
      return reject(name, "this rank is not in the group");
    Task t;
    t.name = std::move(name);
    t.group = std::move(m);
    t.parts.push_back({in, inBytes, out, outBytes, std::move(issue)});
    if (order) {
      t.waitFor = static_cast<cuda::CUevent>(order->ready);
      t.record = static_cast<cuda::CUevent>(order->done);
      t.issued = std::make_shared<PendingWork>();
      if (issued)
        *issued = t.issued;
    }
    return enqueue(std::move(t));
  }

  WorkPtr pointToPoint(bool sending, void *data, size_t count, loom_dtype dtype,
                       int peer) {
    std::string name =
        std::string(sending ? "send" : "recv") + " of " +
        std::to_string(count) + " " +
        (isCollectiveDtype(dtype) ? loom_dtype_name(dtype) : "?") +
        (sending ? " to" : " from") + " rank " + std::to_string(peer);
    if (peer < 0 || peer >= size_ || peer == rank_)
      return reject(name, "no such peer");
    if (ncclType(dtype) < 0)
      return reject(name, "NCCL does not carry this dtype");
    Task t;
    t.name = name;
    t.group = members({});
    t.parts.push_back(transferPart(sending, data, count, dtype, peer));
    return enqueue(std::move(t));
  }

  /// A send or receive as a part of a task (on the world communicator).
  Part transferPart(bool sending, void *data, size_t count, loom_dtype dtype,
                    int peer) {
    size_t bytes = count * collectiveElementSize(dtype);
    int type = ncclType(dtype);
    Part p;
    if (sending) {
      p.in = data;
      p.inBytes = bytes;
    } else {
      p.out = data;
      p.outBytes = bytes;
    }
    p.issue = [=](nccl::Comm c, CUdeviceptr i, CUdeviceptr o, int,
                  size_t) -> nccl::Result {
      return sending ? nccl_->ncclSend(reinterpret_cast<void *>(i), count, type,
                                       peer, c, stream())
                     : nccl_->ncclRecv(reinterpret_cast<void *>(o), count, type,
                                       peer, c, stream());
    };
    return p;
  }

  WorkPtr reject(const std::string &name, const std::string &why) {
    std::string message =
        name + " failed on rank " + std::to_string(rank_) + ": " + why;
    breakWith(name, why, false);
    return completedWork(message);
  }

  WorkPtr enqueue(Task t) {
    t.work = std::make_shared<PendingWork>();
    WorkPtr w = t.work;
    {
      std::lock_guard<std::mutex> lock(queueMutex_);
      if (!broken_.empty()) {
        finishTask(t, t.name + " failed on rank " + std::to_string(rank_) +
                          ": the communicator is broken by an earlier "
                          "failure: " +
                          broken_);
        return w;
      }
      queue_.push_back(std::move(t));
    }
    queueCv_.notify_one();
    return w;
  }

  void work();
  std::string run(Task &t);
  /// Completes the tasks in flight whose `done` event has completed (in
  /// issue order: one stream); on the first that failed (NCCL's
  /// asynchronous error, a CUDA error, a dead rank, the communicator
  /// broken, its deadline) breaks the communicator and fails them all.
  void settle();
  /// Fails every task in flight: `first` the first's error, the others'
  /// the broken communicator's.
  void failInFlight(const std::string &first);
  /// The NCCL communicator of `group`, made on first use; "" or why not.
  std::string commFor(const Group &group, nccl::Comm &out);
  /// Device scratch of at least `device` bytes and pinned host memory of
  /// at least `host` bytes, grown as needed; "" or why not.
  std::string staging(size_t device, size_t host);
  /// Polls, until `deadline`, for NCCL to have `comm`'s last call under
  /// way (its asynchronous state no longer ncclInProgress: a non-blocking
  /// communicator's calls and creation return before) and, with
  /// `streamToo`, for the stream to have run all queued on it. Fails on
  /// an NCCL error, a rank the store says died, the communicator broken
  /// from another thread, or the deadline. "" or why it failed.
  std::string poll(const std::string &what, const Group &group, nccl::Comm comm,
                   bool streamToo, Clock::time_point deadline);
  /// The members of `group` that have not said they began making the
  /// NCCL communicator under `key` (commFor's "arrived" keys).
  std::vector<int> notArrived(const std::string &key, const Group &group);
  std::string cudaError(const char *call, cuda::CUresult r) const {
    return std::string(call) + " failed: " + cuda::resultName(*cu_, r);
  }
  std::string ncclError(const char *call, nccl::Result r) const {
    return std::string(call) + " failed: " + nccl_->ncclGetErrorString(r) +
           " (" + std::to_string(r) + ")";
  }
  void breakWith(const std::string &name, const std::string &why,
                 bool abortComms);

  const nccl::Library *nccl_ = nullptr;
  const cuda::Driver *cu_ = nullptr;
  cuda::CUdevice device_ = 0;
  /// The GPU's ordinal (the local rank modulo the device count) and the
  /// device count, for orderedCollective's check and message.
  int ordinal_ = 0, deviceCount_ = 0, localRank_ = 0;
  cuda::CUcontext context_ = nullptr;
  cuda::CUstream stream_ = nullptr;
  /// cuStreamWaitEvent and cuEventQuery, looked up in the driver's library
  /// (not in CudaApi.h's table); null: orderedCollective takes the host's
  /// ordering (Communicator's default).
  cuda::CUresult (*streamWaitEvent_)(cuda::CUstream, cuda::CUevent,
                                     unsigned) = nullptr;
  cuda::CUresult (*eventQuery_)(cuda::CUevent) = nullptr;

  // The worker's.
  std::map<Group, nccl::Comm> comms_;
  std::map<Group, int> generation_;
  CUdeviceptr scratch_ = 0;
  size_t scratchBytes_ = 0;
  void *pinned_ = nullptr; ///< cuMemAllocHost
  size_t pinnedBytes_ = 0;

  std::deque<InFlight> inFlight_; ///< the worker's
  Clock::time_point nextDeathCheck_;
  std::deque<Task> queue_; ///< guarded by queueMutex_
  std::string broken_;     ///< guarded by queueMutex_
};

bool NcclCommunicator::init(const std::string &addr, int port,
                            const NcclOptions &options, std::string &error) {
  std::string at = where();
  nccl_ = nccl::load(error);
  if (!nccl_) {
    error = at + error;
    return false;
  }
  cu_ = cuda::driver(error);
  if (!cu_) {
    error = at + error;
    return false;
  }
  int count = 0;
  if (cuda::CUresult r = cu_->cuInit(0)) {
    error = at + cudaError("cuInit", r) + " (no CUDA device?)";
    return false;
  }
  if (cuda::CUresult r = cu_->cuDeviceGetCount(&count); r || count < 1) {
    error = at + "no CUDA device for NCCL" +
            (r ? " (" + cudaError("cuDeviceGetCount", r) + ")" : "");
    return false;
  }
  int local = options.localRank >= 0 ? options.localRank : rank_;
  localRank_ = local;
  deviceCount_ = count;
  ordinal_ = local % count;
  std::string missing;
  if (!dl::lookup(cu_->handle, "cuStreamWaitEvent", streamWaitEvent_,
                  "libcuda.so.1", missing) ||
      !dl::lookup(cu_->handle, "cuEventQuery", eventQuery_, "libcuda.so.1",
                  missing))
    streamWaitEvent_ = nullptr;
  if (cuda::CUresult r = cu_->cuDeviceGet(&device_, ordinal_)) {
    error = at + cudaError("cuDeviceGet", r);
    return false;
  }
  if (cuda::CUresult r = cu_->cuDevicePrimaryCtxRetain(&context_, device_)) {
    error = at + cudaError("cuDevicePrimaryCtxRetain", r);
    return false;
  }
  cu_->cuCtxSetCurrent(context_);
  if (cuda::CUresult r = cu_->cuStreamCreate(&stream_, 1 /*non-blocking*/)) {
    error = at + cudaError("cuStreamCreate", r);
    return false;
  }
  if (!meet(addr, port, error))
    return false;
  startWorker([this] { work(); });
  // The world's NCCL communicator, first on the worker like any group's.
  std::string worldError = barrier({})->wait();
  if (!worldError.empty()) {
    error = at + worldError;
    return false;
  }
  return true;
}

NcclCommunicator::~NcclCommunicator() {
  stopWorker();
  if (cu_ && context_)
    cu_->cuCtxSetCurrent(context_);
  bool broken = !error().empty();
  for (auto &[group, comm] : comms_) {
    if (!comm)
      continue;
    // A non-blocking communicator is finalized first (its pending work
    // flushed), polled for at most 5 s; aborted when that fails.
    bool finalized = !broken;
    if (finalized && nccl_->nonBlocking()) {
      nccl::Result r = nccl_->ncclCommFinalize(comm);
      finalized = (r == 0 || r == kNcclInProgress) &&
                  poll("closing", group, comm, false,
                       Clock::now() +
                           std::min(timeout_, std::chrono::milliseconds(5000)))
                      .empty();
    }
    finalized ? nccl_->ncclCommDestroy(comm) : nccl_->ncclCommAbort(comm);
  }
  if (scratch_)
    cu_->cuMemFree(scratch_);
  if (pinned_)
    cu_->cuMemFreeHost(pinned_);
  if (stream_)
    cu_->cuStreamDestroy(stream_);
  if (context_)
    cu_->cuDevicePrimaryCtxRelease(device_);
  if (store_)
    store_->close(!broken);
  if (server_)
    server_->drain(Clock::now() +
                   std::min(timeout_, std::chrono::milliseconds(5000)));
}

void NcclCommunicator::work() {
  cu_->cuCtxSetCurrent(context_);
  for (int idle = 0;; idle = std::min(idle + 1, 100)) {
    Task t;
    bool have = false;
    {
      std::unique_lock<std::mutex> lock(queueMutex_);
      // With tasks in flight the worker polls their events between tasks,
      // backing off from 10 us to 1 ms while nothing happens (and drains
      // them before it stops).
      if (inFlight_.empty())
        queueCv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      else
        queueCv_.wait_for(
            lock, std::chrono::microseconds(std::min(10 * (1 + idle), 1000)),
            [&] { return !queue_.empty(); });
      if (!queue_.empty()) {
        t = std::move(queue_.front());
        queue_.pop_front();
        have = true;
      } else if (stop_ && inFlight_.empty()) {
        return;
      }
    }
    size_t before = inFlight_.size();
    settle();
    if (inFlight_.size() != before)
      idle = 0;
    if (!have)
      continue;
    idle = 0;
    std::string broken;
    {
      std::lock_guard<std::mutex> lock(queueMutex_);
      broken = broken_;
    }
    if (!broken.empty()) {
      finishTask(t, t.name + " failed on rank " + std::to_string(rank_) +
                        ": the communicator is broken by an earlier "
                        "failure: " +
                        broken);
      continue;
    }
    std::string why = run(t);
    if (!why.empty()) {
      breakWith(t.name, why, true);
      finishTask(t, t.name + " failed on rank " + std::to_string(rank_) + ": " +
                        why);
      failInFlight("");
      continue;
    }
    if (t.record) {
      // Queued on the stream with its event after it (run() completed
      // its issue): in flight until the event has completed.
      nccl::Comm comm = nullptr;
      commFor(t.group, comm);
      inFlight_.push_back({std::move(t.name), std::move(t.group), comm,
                           t.record, Clock::now() + timeout_,
                           std::move(t.work)});
      continue;
    }
    t.work->complete("");
    settle();
  }
}

void NcclCommunicator::settle() {
  while (!inFlight_.empty()) {
    InFlight &f = inFlight_.front();
    cuda::CUresult r = eventQuery_(f.done);
    if (r == 0) {
      f.work->complete("");
      inFlight_.pop_front();
      continue;
    }
    std::string why;
    nccl::Result async = 0;
    if (r != kCudaErrorNotReady) {
      why = cudaError("the stream", r);
    } else if (nccl::Result q = nccl_->ncclCommGetAsyncError(f.comm, &async)) {
      why = ncclError("ncclCommGetAsyncError", q);
    } else if (async != 0 && async != kNcclInProgress) {
      why = ncclError(f.name.c_str(), async);
    } else {
      {
        std::lock_guard<std::mutex> lock(queueMutex_);
        if (!broken_.empty())
          why = "aborted: " + broken_;
      }
      // A peer's process that ended without closing its communicator.
      if (why.empty() && Clock::now() >= nextDeathCheck_) {
        std::vector<int> dead;
        std::string ignored;
        if (store_->deadRanks(dead, ignored) && !dead.empty())
          why = rankList(dead) +
                " died (its process ended without closing its communicator)";
        nextDeathCheck_ = Clock::now() + std::chrono::milliseconds(100);
      }
      if (why.empty() && Clock::now() >= f.deadline)
        why = "timed out after " + secondsString(timeout_) + " waiting for " +
              groupString(f.group, size_) +
              ": a rank died, is stuck, or issued other collectives";
    }
    if (why.empty())
      return; // the first still runs, and so do those after it
    // Aborting the NCCL communicators ends the kernels still on the
    // stream, so the caller's stream, waiting for the events, goes on.
    breakWith(f.name, why, true);
    failInFlight(f.name + " failed on rank " + std::to_string(rank_) + ": " +
                 why);
    return;
  }
}

void NcclCommunicator::failInFlight(const std::string &first) {
  std::string broken;
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    broken = broken_;
  }
  for (size_t i = 0; i < inFlight_.size(); ++i) {
    InFlight &f = inFlight_[i];
    f.work->complete(i == 0 && !first.empty()
                         ? first
                         : f.name + " failed on rank " + std::to_string(rank_) +
                               ": the communicator is broken by an earlier "
                               "failure: " +
                               broken);
  }
  inFlight_.clear();
}

OrderedWork NcclCommunicator::orderedCollective(const CollectiveCall &call,
                                                const StreamOrder &order) {
  if (!streamWaitEvent_ || !order.ready || !order.done)
    return Communicator::orderedCollective(call, order);
  if (order.device != ordinal_) {
    // The events, the caller's stream and the buffers must be in this
    // communicator's context: the primary context of its GPU.
    const char *names[] = {"all_reduce", "all_gather", "reduce_scatter",
                           "broadcast"};
    WorkPtr failed = reject(
        describe(names[std::clamp(static_cast<int>(call.kind), 0, 3)],
                 call.count, call.dtype, call.group),
        "the CUDA program runs on GPU " + std::to_string(order.device) +
            " but this rank's NCCL communicator on GPU " +
            std::to_string(ordinal_) + " (local rank " +
            std::to_string(localRank_) + " modulo " +
            std::to_string(deviceCount_) +
            " GPUs): run each rank on the GPU of its local rank (loom-run "
            "does, unless --gpu says otherwise; "
            "loom_instance_options.device_ordinal)");
    return {failed, failed};
  }
  WorkPtr issued;
  WorkPtr work = start(call, &order, &issued);
  return {issued ? issued : work, work};
}

std::string NcclCommunicator::staging(size_t device, size_t host) {
  // Grown to at least twice the old size, so that a growing sequence of
  // sizes reallocates rarely.
  if (scratchBytes_ < device) {
    if (scratch_)
      cu_->cuMemFree(scratch_);
    scratch_ = 0;
    size_t want = std::max(device, 2 * scratchBytes_);
    scratchBytes_ = 0;
    if (cuda::CUresult r = cu_->cuMemAlloc(&scratch_, want))
      return cudaError("cuMemAlloc", r) + " (" + std::to_string(want) +
             " bytes of device staging)";
    scratchBytes_ = want;
  }
  if (pinnedBytes_ < host) {
    if (pinned_)
      cu_->cuMemFreeHost(pinned_);
    pinned_ = nullptr;
    size_t want = std::max(host, 2 * pinnedBytes_);
    pinnedBytes_ = 0;
    if (cuda::CUresult r = cu_->cuMemAllocHost(&pinned_, want))
      return cudaError("cuMemAllocHost", r) + " (" + std::to_string(want) +
             " bytes of pinned host staging)";
    pinnedBytes_ = want;
  }
  return "";
}

std::vector<int> NcclCommunicator::notArrived(const std::string &key,
                                              const Group &group) {
  std::vector<int> missing;
  for (int r : group) {
    std::string value, ignored;
    bool found = false;
    if (store_->tryGet(key + "/arrived/" + std::to_string(r), value, found,
                       ignored) &&
        !found)
      missing.push_back(r);
  }
  return missing;
}

std::string NcclCommunicator::commFor(const Group &group, nccl::Comm &out) {
  auto it = comms_.find(group);
  if (it != comms_.end()) {
    out = it->second;
    return "";
  }
  // The group's id from its first member, through the store; every member
  // names the group alike (its sorted world ranks).
  std::string key = "loom/nccl";
  for (int r : group)
    key += "/" + std::to_string(r);
  key += "#" + std::to_string(generation_[group]++);
  nccl::UniqueId id;
  std::string error;
  if (group.front() == rank_) {
    if (nccl::Result r = nccl_->ncclGetUniqueId(&id))
      return ncclError("ncclGetUniqueId", r);
    if (!store_->trySet(key, std::string(id.internal, sizeof(id.internal)),
                        error))
      return error;
  } else {
    Clock::time_point deadline = Clock::now() + timeout_;
    for (int attempt = 0;; ++attempt) {
      std::string value;
      bool found = false;
      if (!store_->tryGet(key, value, found, error))
        return error;
      if (found && value.size() == sizeof(id.internal)) {
        std::memcpy(id.internal, value.data(), sizeof(id.internal));
        break;
      }
      if (Clock::now() >= deadline)
        return "rank " + std::to_string(group.front()) +
               " did not publish the NCCL id of " + groupString(group, size_) +
               " within " + secondsString(timeout_);
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::min(1 + attempt, 20)));
    }
  }
  int index = static_cast<int>(std::find(group.begin(), group.end(), rank_) -
                               group.begin());
  // Each member says it has begun, so that a timeout can name those that
  // never did.
  if (!store_->trySet(key + "/arrived/" + std::to_string(rank_), "", error))
    return error;
  Clock::time_point deadline = Clock::now() + timeout_;
  std::string what =
      "making the NCCL communicator of " + groupString(group, size_);
  nccl::Comm comm = nullptr;
  if (!nccl_->nonBlocking()) {
    // NCCL < 2.14 has only the blocking ncclCommInitRank, which returns
    // once every member has called it: wait here, with the timeout, until
    // all have said they are about to; past that point a member that dies
    // inside NCCL's own setup still blocks this one (docs/distributed.md).
    for (int attempt = 0;; ++attempt) {
      std::vector<int> missing = notArrived(key, group);
      if (missing.empty())
        break;
      std::vector<int> dead;
      std::string ignored;
      if (store_->deadRanks(dead, ignored) && !dead.empty())
        return what + ": " + rankList(dead) +
               " died (its process ended without closing its communicator)";
      if (Clock::now() >= deadline)
        return what + ": " + rankList(missing) + " never arrived within " +
               secondsString(timeout_);
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::min(1 + attempt, 20)));
    }
    if (nccl::Result r = nccl_->ncclCommInitRank(
            &comm, static_cast<int>(group.size()), id, index))
      return ncclError("ncclCommInitRank", r);
    comms_[group] = comm;
    out = comm;
    return "";
  }
  // Non-blocking: the call returns at once (ncclInProgress) and the
  // communicator is ready when its asynchronous state says so.
  nccl::Config config = nccl::configInitializer();
  config.blocking = 0;
  nccl::Result r = nccl_->ncclCommInitRankConfig(
      &comm, static_cast<int>(group.size()), id, index, &config);
  if (r != 0 && r != kNcclInProgress) {
    if (comm)
      nccl_->ncclCommAbort(comm);
    return ncclError("ncclCommInitRankConfig", r);
  }
  if (!comm)
    return "ncclCommInitRankConfig returned no communicator";
  std::string why = poll(what, group, comm, false, deadline);
  if (!why.empty()) {
    nccl_->ncclCommAbort(comm);
    std::vector<int> missing = notArrived(key, group);
    if (!missing.empty() && why.find("timed out") != std::string::npos)
      why = what + ": " + rankList(missing) + " never arrived within " +
            secondsString(timeout_);
    return why;
  }
  comms_[group] = comm;
  out = comm;
  return "";
}

std::string NcclCommunicator::run(Task &t) {
  nccl::Comm comm = nullptr;
  if (std::string e = commFor(t.group, comm); !e.empty())
    return e;
  Clock::time_point deadline = Clock::now() + timeout_;
  // Where each part's operands live: the caller's device memory, or
  // offsets into the device scratch and the pinned host staging.
  struct Place {
    CUdeviceptr in = 0, out = 0;
    size_t inDevice = kNone, inHost = kNone, outDevice = kNone, outHost = kNone;
  };
  auto aligned = [](size_t n) {
    return (n + kStagingAlignment - 1) / kStagingAlignment * kStagingAlignment;
  };
  std::vector<Place> places(t.parts.size());
  size_t deviceBytes = 0, hostBytes = 0;
  for (size_t i = 0; i < t.parts.size(); ++i) {
    const Part &p = t.parts[i];
    Place &at = places[i];
    if (p.inBytes) {
      if (onDevice(p.in)) {
        at.in = reinterpret_cast<CUdeviceptr>(p.in);
      } else {
        at.inDevice = deviceBytes;
        deviceBytes += aligned(p.inBytes);
        if (p.in) {
          at.inHost = hostBytes;
          hostBytes += aligned(p.inBytes);
        }
      }
    }
    if (p.outBytes) {
      if (onDevice(p.out)) {
        at.out = reinterpret_cast<CUdeviceptr>(p.out);
      } else {
        at.outDevice = deviceBytes;
        deviceBytes += aligned(p.outBytes);
        if (p.out) {
          at.outHost = hostBytes;
          hostBytes += aligned(p.outBytes);
        }
      }
    }
  }
  if (t.record && (deviceBytes || hostBytes))
    return "an operation ordered on the device takes device memory, and a "
           "buffer of it is host memory";
  if (std::string e = staging(deviceBytes, hostBytes); !e.empty())
    return e;
  char *pinned = static_cast<char *>(pinned_);
  // Inputs: into pinned memory here, then to the device on the stream.
  for (size_t i = 0; i < t.parts.size(); ++i) {
    const Part &p = t.parts[i];
    Place &at = places[i];
    if (at.inDevice != kNone)
      at.in = scratch_ + at.inDevice;
    if (at.outDevice != kNone)
      at.out = scratch_ + at.outDevice;
    if (at.inHost == kNone)
      continue;
    std::memcpy(pinned + at.inHost, p.in, p.inBytes);
    if (cuda::CUresult r = cu_->cuMemcpyHtoDAsync(at.in, pinned + at.inHost,
                                                  p.inBytes, stream_))
      return cudaError("cuMemcpyHtoDAsync", r);
  }
  // Ordered on the device: after the caller's producers, with no
  // staging (the host does not wait for them).
  if (t.record) {
    if (cuda::CUresult r = streamWaitEvent_(stream_, t.waitFor, 0))
      return cudaError("cuStreamWaitEvent", r);
  }
  // The calls: several (a step's sends and receives) as one group, so
  // that none waits for another to complete first.
  bool grouped = t.parts.size() > 1;
  if (grouped)
    if (nccl::Result r = nccl_->ncclGroupStart())
      return ncclError("ncclGroupStart", r);
  for (size_t i = 0; i < t.parts.size(); ++i)
    if (nccl::Result r = t.parts[i].issue(comm, places[i].in, places[i].out, 0,
                                          t.parts[i].outBytes);
        r && r != kNcclInProgress) {
      if (grouped)
        nccl_->ncclGroupEnd();
      return ncclError(t.name.c_str(), r);
    }
  if (grouped)
    if (nccl::Result r = nccl_->ncclGroupEnd(); r && r != kNcclInProgress)
      return ncclError("ncclGroupEnd", r);
  // A non-blocking communicator may still be queueing the kernels: the
  // copies back go on the stream after them, so wait for that first.
  if (std::string e = poll(t.name, t.group, comm, false, deadline); !e.empty())
    return e;
  if (t.record) {
    // The caller's stream waits for this event; the worker polls it.
    if (cuda::CUresult r = cu_->cuEventRecord(t.record, stream_))
      return cudaError("cuEventRecord", r);
    t.issued->complete("");
    return "";
  }
  // Outputs: device to pinned memory on the stream (asynchronous: the
  // host never blocks inside CUDA on an unfinished NCCL kernel) ...
  for (size_t i = 0; i < t.parts.size(); ++i)
    if (places[i].outHost != kNone)
      if (cuda::CUresult r =
              cu_->cuMemcpyDtoHAsync(pinned + places[i].outHost, places[i].out,
                                     t.parts[i].outBytes, stream_))
        return cudaError("cuMemcpyDtoHAsync", r);
  // ... read once the stream says everything has run.
  if (std::string e = poll(t.name, t.group, comm, true, deadline); !e.empty())
    return e;
  for (size_t i = 0; i < t.parts.size(); ++i)
    if (places[i].outHost != kNone)
      std::memcpy(t.parts[i].out, pinned + places[i].outHost,
                  t.parts[i].outBytes);
  return "";
}

std::string NcclCommunicator::poll(const std::string &what, const Group &group,
                                   nccl::Comm comm, bool streamToo,
                                   Clock::time_point deadline) {
  Clock::time_point nextDeathCheck = Clock::now();
  for (int attempt = 0;; ++attempt) {
    nccl::Result async = 0;
    if (nccl::Result r = nccl_->ncclCommGetAsyncError(comm, &async))
      return ncclError("ncclCommGetAsyncError", r);
    if (async != 0 && async != kNcclInProgress)
      return ncclError(what.c_str(), async);
    if (async == 0) {
      if (!streamToo)
        return "";
      cuda::CUresult r = cu_->cuStreamQuery(stream_);
      if (r == 0)
        return "";
      if (r != kCudaErrorNotReady)
        return cudaError("the stream", r);
    }
    {
      std::lock_guard<std::mutex> lock(queueMutex_);
      if (!broken_.empty())
        return "aborted: " + broken_;
    }
    // A peer's process that ended without closing its communicator: its
    // store connection closed, so the store names it.
    if (Clock::now() >= nextDeathCheck) {
      std::vector<int> dead;
      std::string ignored;
      if (store_->deadRanks(dead, ignored) && !dead.empty())
        return rankList(dead) +
               " died (its process ended without closing its communicator)";
      nextDeathCheck = Clock::now() + std::chrono::milliseconds(100);
    }
    if (Clock::now() >= deadline)
      return "timed out after " + secondsString(timeout_) + " waiting for " +
             groupString(group, size_) +
             ": a rank died, is stuck, or issued other collectives";
    std::this_thread::sleep_for(
        std::chrono::microseconds(std::min(10 * (1 + attempt), 1000)));
  }
}

void NcclCommunicator::breakWith(const std::string &name,
                                 const std::string &why, bool abortComms) {
  recordError(name + " failed on rank " + std::to_string(rank_) + ": " + why);
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    if (broken_.empty())
      broken_ = error();
  }
  std::string ignored;
  if (store_ && store_->open())
    store_->trySet("loom/failure/" + std::to_string(rank_), error(), ignored);
  // Aborting makes the NCCL kernels of the peers that wait on this rank
  // fail instead of spinning (the worker owns comms_ once it runs; abort()
  // from another thread only marks the communicator broken).
  if (abortComms && onWorker())
    for (auto &[group, comm] : comms_)
      if (comm) {
        nccl_->ncclCommAbort(comm);
        comm = nullptr;
      }
}

std::vector<WorkPtr>
NcclCommunicator::sendRecvGroup(const std::vector<Transfer> &transfers) {
  if (transfers.empty())
    return {};
  std::vector<int> peers;
  Task t;
  t.group = members({});
  for (size_t i = 0; i < transfers.size(); ++i) {
    const Transfer &x = transfers[i];
    std::string one =
        std::string(x.send ? "send" : "recv") + " of " +
        std::to_string(x.count) + " " +
        (isCollectiveDtype(x.dtype) ? loom_dtype_name(x.dtype) : "?") +
        (x.send ? " to" : " from") + " rank " + std::to_string(x.peer);
    if (std::find(peers.begin(), peers.end(), x.peer) == peers.end())
      peers.push_back(x.peer);
    // Inside a group a rank may send to itself (NCCL pairs the two).
    if (x.peer < 0 || x.peer >= size_)
      return std::vector<WorkPtr>(transfers.size(),
                                  reject(one, "no such peer"));
    if (ncclType(x.dtype) < 0)
      return std::vector<WorkPtr>(
          transfers.size(), reject(one, "NCCL does not carry this dtype"));
    if (x.count)
      t.parts.push_back(transferPart(x.send, x.data, x.count, x.dtype, x.peer));
  }
  std::sort(peers.begin(), peers.end());
  t.name = "a group of " + std::to_string(transfers.size()) +
           " sends and receives with " + rankList(peers);
  if (t.parts.empty())
    return std::vector<WorkPtr>(transfers.size(), completedWork(""));
  // The group completes as one: every handle is the group's.
  return std::vector<WorkPtr>(transfers.size(), enqueue(std::move(t)));
}

} // namespace

std::unique_ptr<Communicator>
createNcclCommunicator(int rank, int size, const std::string &addr, int port,
                       const NcclOptions &options, std::string &error) {
  if (!checkJob(rank, size, port, options.timeout, error))
    return nullptr;
  auto comm = std::make_unique<NcclCommunicator>(rank, size, options.timeout);
  if (!comm->init(addr, port, options, error))
    return nullptr;
  return comm;
}

bool ncclAvailable(std::string &why) {
  if (!nccl::load(why))
    return false;
  const cuda::Driver *cu = cuda::driver(why);
  if (!cu)
    return false;
  int count = 0;
  if (cuda::CUresult r = cu->cuInit(0)) {
    why = "cuInit failed: " + cuda::resultName(*cu, r) + " (no CUDA device?)";
    return false;
  }
  if (cu->cuDeviceGetCount(&count) != 0 || count < 1) {
    why = "no CUDA device";
    return false;
  }
  return true;
}

} // namespace loom::runtime::collectives
