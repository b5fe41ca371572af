//===- NcclCommunicator.cpp - collectives between GPUs --------------------===//

#include "runtime/src/collectives/NcclCommunicator.h"

#include "runtime/src/collectives/Nccl.h"
#include "runtime/src/collectives/StoreCommunicator.h"
#include "runtime/src/collectives/TcpStore.h"
#include "runtime/src/cuda/CudaApi.h"

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
constexpr int kNcclInProgress = 7;
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

/// A buffer the operation reads or writes: device memory as it is, host
/// memory through a scratch buffer.
struct Operand {
  const void *host = nullptr; ///< null when the caller's buffer is device
  CUdeviceptr device = 0;
  size_t bytes = 0;
};

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
    size_t bytes = count * collectiveElementSize(dtype);
    return collective(
        "all_reduce", count, dtype, &op, group, in, bytes, out, bytes,
        [=](nccl::Comm c, CUdeviceptr i, CUdeviceptr o, int, size_t) {
          return nccl_->ncclAllReduce(reinterpret_cast<void *>(i),
                                      reinterpret_cast<void *>(o), count,
                                      ncclType(dtype), ncclOp(op), c, stream());
        });
  }
  WorkPtr allGather(const void *in, void *out, size_t count, loom_dtype dtype,
                    const Group &group) override {
    size_t bytes = count * collectiveElementSize(dtype);
    size_t g = members(group).size();
    return collective(
        "all_gather", count, dtype, nullptr, group, in, bytes, out, g * bytes,
        [=](nccl::Comm c, CUdeviceptr i, CUdeviceptr o, int, size_t) {
          return nccl_->ncclAllGather(reinterpret_cast<void *>(i),
                                      reinterpret_cast<void *>(o), count,
                                      ncclType(dtype), c, stream());
        });
  }
  WorkPtr reduceScatter(const void *in, void *out, size_t count,
                        loom_dtype dtype, ReduceOp op,
                        const Group &group) override {
    size_t bytes = count * collectiveElementSize(dtype);
    size_t g = members(group).size();
    return collective(
        "reduce_scatter", count, dtype, &op, group, in, g * bytes, out, bytes,
        [=](nccl::Comm c, CUdeviceptr i, CUdeviceptr o, int, size_t) {
          return nccl_->ncclReduceScatter(
              reinterpret_cast<void *>(i), reinterpret_cast<void *>(o), count,
              ncclType(dtype), ncclOp(op), c, stream());
        });
  }
  WorkPtr broadcast(const void *in, void *out, size_t count, loom_dtype dtype,
                    int root, const Group &group) override {
    Group m = members(group);
    if (root < 0 || static_cast<size_t>(root) >= m.size())
      return reject(describe("broadcast", count, dtype, group),
                    "root " + std::to_string(root) + " is not in the group");
    size_t bytes = count * collectiveElementSize(dtype);
    bool isRoot = m[static_cast<size_t>(root)] == rank_;
    return collective(
        "broadcast", count, dtype, nullptr, group, isRoot ? in : nullptr,
        isRoot ? bytes : 0, out, bytes,
        [=](nccl::Comm c, CUdeviceptr i, CUdeviceptr o, int, size_t) {
          return nccl_->ncclBroadcast(reinterpret_cast<void *>(i ? i : o),
                                      reinterpret_cast<void *>(o), count,
                                      ncclType(dtype), root, c, stream());
        });
  }
  WorkPtr send(const void *data, size_t count, loom_dtype dtype, int peer,
               uint32_t) override {
    return pointToPoint(true, const_cast<void *>(data), count, dtype, peer);
  }
  WorkPtr recv(void *data, size_t count, loom_dtype dtype, int peer,
               uint32_t) override {
    return pointToPoint(false, data, count, dtype, peer);
  }
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
  struct Task {
    std::string name;
    Group group;
    Operand in;
    void *out = nullptr; ///< the caller's output (host or device)
    size_t outBytes = 0;
    int peer = -1; ///< point to point: the peer; -1 for collectives
    Issue issue;
    std::shared_ptr<PendingWork> work;
  };

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

  WorkPtr collective(const char *what, size_t count, loom_dtype dtype,
                     const ReduceOp *op, const Group &group, const void *in,
                     size_t inBytes, void *out, size_t outBytes, Issue issue) {
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
    t.in.host = in;
    t.in.bytes = inBytes;
    t.out = out;
    t.outBytes = outBytes;
    t.issue = std::move(issue);
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
    size_t bytes = count * collectiveElementSize(dtype);
    Task t;
    t.name = name;
    t.group = members({});
    t.peer = peer;
    if (sending) {
      t.in.host = data;
      t.in.bytes = bytes;
    } else {
      t.out = data;
      t.outBytes = bytes;
    }
    int type = ncclType(dtype);
    t.issue = [=](nccl::Comm c, CUdeviceptr i, CUdeviceptr o, int,
                  size_t) -> nccl::Result {
      return sending ? nccl_->ncclSend(reinterpret_cast<void *>(i), count, type,
                                       peer, c, stream())
                     : nccl_->ncclRecv(reinterpret_cast<void *>(o), count, type,
                                       peer, c, stream());
    };
    return enqueue(std::move(t));
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
        t.work->complete(t.name + " failed on rank " + std::to_string(rank_) +
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
  /// The NCCL communicator of `group`, made on first use; "" or why not.
  std::string commFor(const Group &group, nccl::Comm &out);
  /// A device scratch buffer of at least `bytes` (slot 0: input, 1: output).
  std::string scratch(int slot, size_t bytes, CUdeviceptr &out);
  /// Waits for the stream, polling NCCL's asynchronous errors, until the
  /// timeout; "" or why it failed.
  std::string finish(const Task &t);
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
  cuda::CUcontext context_ = nullptr;
  cuda::CUstream stream_ = nullptr;

  // The worker's.
  std::map<Group, nccl::Comm> comms_;
  std::map<Group, int> generation_;
  CUdeviceptr scratch_[2] = {0, 0};
  size_t scratchBytes_[2] = {0, 0};

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
  if (cuda::CUresult r = cu_->cuDeviceGet(&device_, local % count)) {
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
  for (auto &[group, comm] : comms_)
    if (comm)
      broken ? nccl_->ncclCommAbort(comm) : nccl_->ncclCommDestroy(comm);
  for (CUdeviceptr p : scratch_)
    if (p)
      cu_->cuMemFree(p);
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
  while (true) {
    Task t;
    {
      std::unique_lock<std::mutex> lock(queueMutex_);
      queueCv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty())
        return;
      t = std::move(queue_.front());
      queue_.pop_front();
      if (!broken_.empty()) {
        t.work->complete(t.name + " failed on rank " + std::to_string(rank_) +
                         ": the communicator is broken by an earlier "
                         "failure: " +
                         broken_);
        continue;
      }
    }
    std::string why = run(t);
    if (!why.empty()) {
      breakWith(t.name, why, true);
      t.work->complete(t.name + " failed on rank " + std::to_string(rank_) +
                       ": " + why);
      continue;
    }
    t.work->complete("");
  }
}

std::string NcclCommunicator::scratch(int slot, size_t bytes,
                                      CUdeviceptr &out) {
  if (scratchBytes_[slot] < bytes) {
    if (scratch_[slot])
      cu_->cuMemFree(scratch_[slot]);
    scratch_[slot] = 0;
    scratchBytes_[slot] = 0;
    // Round up so that a growing sequence of sizes reallocates rarely.
    size_t want = std::max<size_t>(bytes, 2 * scratchBytes_[slot]);
    if (cuda::CUresult r = cu_->cuMemAlloc(&scratch_[slot], want))
      return cudaError("cuMemAlloc", r) + " (" + std::to_string(want) +
             " bytes of staging)";
    scratchBytes_[slot] = want;
  }
  out = scratch_[slot];
  return "";
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
  nccl::Comm comm = nullptr;
  if (nccl::Result r = nccl_->ncclCommInitRank(
          &comm, static_cast<int>(group.size()), id, index))
    return ncclError("ncclCommInitRank", r);
  comms_[group] = comm;
  out = comm;
  return "";
}

std::string NcclCommunicator::run(Task &t) {
  nccl::Comm comm = nullptr;
  if (std::string e = commFor(t.group, comm); !e.empty())
    return e;
  // Operands on the device: the caller's, or staging copies.
  CUdeviceptr in = 0, out = 0;
  if (t.in.bytes) {
    if (onDevice(t.in.host)) {
      in = reinterpret_cast<CUdeviceptr>(t.in.host);
    } else if (t.in.host) {
      if (std::string e = scratch(0, t.in.bytes, in); !e.empty())
        return e;
      if (cuda::CUresult r =
              cu_->cuMemcpyHtoDAsync(in, t.in.host, t.in.bytes, stream_))
        return cudaError("cuMemcpyHtoDAsync", r);
    } else if (std::string e = scratch(0, t.in.bytes, in); !e.empty()) {
      return e; // a barrier's operand: any device memory
    }
  }
  bool stagedOut = false;
  if (t.outBytes) {
    if (onDevice(t.out)) {
      out = reinterpret_cast<CUdeviceptr>(t.out);
    } else {
      if (std::string e = scratch(1, t.outBytes, out); !e.empty())
        return e;
      stagedOut = t.out != nullptr;
    }
  }
  if (nccl::Result r = t.issue(comm, in, out, t.peer, t.outBytes);
      r && r != kNcclInProgress)
    return ncclError(t.name.c_str(), r);
  if (stagedOut)
    if (cuda::CUresult r =
            cu_->cuMemcpyDtoHAsync(t.out, out, t.outBytes, stream_))
      return cudaError("cuMemcpyDtoHAsync", r);
  return finish(t);
}

std::string NcclCommunicator::finish(const Task &t) {
  Clock::time_point deadline = Clock::now() + timeout_;
  Clock::time_point nextDeathCheck = Clock::now();
  for (int attempt = 0;; ++attempt) {
    cuda::CUresult r = cu_->cuStreamQuery(stream_);
    if (r == 0)
      return "";
    if (r != kCudaErrorNotReady)
      return cudaError("the stream", r);
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
    for (auto &[group, comm] : comms_) {
      nccl::Result async = 0;
      if (nccl_->ncclCommGetAsyncError(comm, &async) == 0 && async &&
          async != kNcclInProgress)
        return ncclError("NCCL (asynchronous)", async);
    }
    if (Clock::now() >= deadline)
      return "timed out after " + secondsString(timeout_) + " waiting for " +
             groupString(t.group, size_) +
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
