//===- Communicator.cpp - what every backend shares -----------------------===//

#include "runtime/src/collectives/Communicator.h"

#include "loom/common/Artifact.h"
#include "runtime/src/cuda/CudaApi.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace loom::runtime::collectives {

const char *reduceOpName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Max:
    return "max";
  case ReduceOp::Min:
    return "min";
  case ReduceOp::Prod:
    return "prod";
  }
  return "?";
}

bool isCollectiveDtype(loom_dtype dtype) {
  switch (dtype) {
  case LOOM_DTYPE_F32:
  case LOOM_DTYPE_F16:
  case LOOM_DTYPE_BF16:
  case LOOM_DTYPE_F64:
  case LOOM_DTYPE_I64:
  case LOOM_DTYPE_I32:
  case LOOM_DTYPE_I8:
    return true;
  default:
    return false;
  }
}

std::string PendingWork::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return done_; });
  return error_;
}

void PendingWork::complete(std::string error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::move(error);
    done_ = true;
  }
  cv_.notify_all();
}

Group groupMembers(const Group &group, int size) {
  if (!group.empty())
    return group;
  Group all(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r)
    all[static_cast<size_t>(r)] = r;
  return all;
}

std::string describeOperation(const char *what, size_t count, loom_dtype dtype,
                              const Group &group, int size) {
  return std::string(what) + " of " + std::to_string(count) + " " +
         (isCollectiveDtype(dtype) ? loom_dtype_name(dtype) : "?") + " over " +
         groupString(group, size);
}

size_t collectiveElementSize(loom_dtype dtype) {
  return isCollectiveDtype(dtype) ? loom_dtype_size(dtype) : 0;
}

std::string rankList(const std::vector<int> &ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

std::string secondsString(std::chrono::milliseconds t) {
  std::string s = std::to_string(t.count() / 1000.0);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.')
    s.pop_back();
  return s + " s";
}

std::string groupString(const Group &group, int worldSize) {
  if (group.empty() || static_cast<int>(group.size()) == worldSize)
    return "all " + std::to_string(worldSize) + " ranks";
  std::string s = group.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < group.size(); ++i)
    s += (i ? ", " : "") + std::to_string(group[i]);
  return s;
}

Work::~Work() = default;
Communicator::~Communicator() = default;

std::vector<WorkPtr>
Communicator::sendRecvGroup(const std::vector<Transfer> &transfers) {
  std::vector<WorkPtr> works;
  works.reserve(transfers.size());
  for (const Transfer &t : transfers)
    works.push_back(t.send ? send(t.data, t.count, t.dtype, t.peer, t.tag)
                           : recv(t.data, t.count, t.dtype, t.peer, t.tag));
  return works;
}

WorkPtr issueCollective(Communicator &comm, const CollectiveCall &call) {
  switch (call.kind) {
  case CollectiveCall::AllReduce:
    return comm.allReduce(call.in, call.out, call.count, call.dtype, call.op,
                          call.group);
  case CollectiveCall::AllGather:
    return comm.allGather(call.in, call.out, call.count, call.dtype,
                          call.group);
  case CollectiveCall::ReduceScatter:
    return comm.reduceScatter(call.in, call.out, call.count, call.dtype,
                              call.op, call.group);
  case CollectiveCall::Broadcast:
    return comm.broadcast(call.in, call.out, call.count, call.dtype, call.root,
                          call.group);
  }
  return completedWork("unknown collective kind " +
                       std::to_string(static_cast<int>(call.kind)));
}

OrderedWork Communicator::orderedCollective(const CollectiveCall &call,
                                            const StreamOrder &order) {
  // The host's ordering: the producers are waited for here, and the
  // operation's completion is its issue.
  if (order.ready) {
    std::string error;
    const cuda::Driver *cu = cuda::driver(error);
    if (cu)
      if (cuda::CUresult r =
              cu->cuEventSynchronize(static_cast<cuda::CUevent>(order.ready)))
        error = "the steps before it failed: " + cuda::resultName(*cu, r);
    if (!error.empty()) {
      WorkPtr failed = completedWork(error);
      return {failed, failed};
    }
  }
  WorkPtr work = issueCollective(*this, call);
  return {work, work};
}

namespace {
class DoneWork : public Work {
public:
  explicit DoneWork(std::string error) : error_(std::move(error)) {}
  std::string wait() override { return error_; }

private:
  std::string error_;
};
} // namespace

WorkPtr completedWork(std::string error) {
  return std::make_shared<DoneWork>(std::move(error));
}

namespace {
class SelfCommunicator : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char *backend() const override { return "self"; }
  WorkPtr allReduce(const void *in, void *out, size_t count, loom_dtype dtype,
                    ReduceOp, const Group &group) override {
    return copy(in, out, count, dtype, group);
  }
  WorkPtr allGather(const void *in, void *out, size_t count, loom_dtype dtype,
                    const Group &group) override {
    return copy(in, out, count, dtype, group);
  }
  WorkPtr reduceScatter(const void *in, void *out, size_t count,
                        loom_dtype dtype, ReduceOp,
                        const Group &group) override {
    return copy(in, out, count, dtype, group);
  }
  WorkPtr broadcast(const void *in, void *out, size_t count, loom_dtype dtype,
                    int root, const Group &group) override {
    if (root != 0)
      return completedWork("broadcast: root " + std::to_string(root) +
                           " is not in a group of 1");
    return copy(in, out, count, dtype, group);
  }
  WorkPtr send(const void *, size_t, loom_dtype, int peer, uint32_t) override {
    return completedWork("send to rank " + std::to_string(peer) +
                         ": a communicator of one rank has no peer");
  }
  WorkPtr recv(void *, size_t, loom_dtype, int peer, uint32_t) override {
    return completedWork("recv from rank " + std::to_string(peer) +
                         ": a communicator of one rank has no peer");
  }
  WorkPtr barrier(const Group &) override { return completedWork(""); }
  std::string error() const override { return ""; }
  void abort(const std::string &) override {}

private:
  static WorkPtr copy(const void *in, void *out, size_t count, loom_dtype dtype,
                      const Group &group) {
    if (!isCollectiveDtype(dtype))
      return completedWork("collectives do not take dtype " +
                           std::to_string(static_cast<int>(dtype)));
    if (!group.empty() && group != Group{0})
      return completedWork("the group is not rank 0");
    if (count && in != out)
      std::memmove(out, in, count * artifact::dtypeSize(dtype));
    return completedWork("");
  }
};
} // namespace

std::unique_ptr<Communicator> createSelfCommunicator() {
  return std::make_unique<SelfCommunicator>();
}

std::chrono::milliseconds timeoutFromEnv(std::chrono::milliseconds fallback,
                                         std::string &error) {
  const char *v = std::getenv("LOOM_COLLECTIVE_TIMEOUT");
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  errno = 0;
  double seconds = std::strtod(v, &end);
  if (errno || *end || !(seconds > 0) || seconds > 1e7) {
    error = std::string("LOOM_COLLECTIVE_TIMEOUT='") + v +
            "' is not a positive number of seconds";
    return fallback;
  }
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

namespace {
/// The integer value of `name`; false with `error` when set but not one.
bool intVar(const char *name, int &value, bool &set, std::string &error) {
  const char *v = std::getenv(name);
  set = v && *v;
  if (!set)
    return true;
  char *end = nullptr;
  errno = 0;
  long n = std::strtol(v, &end, 10);
  if (errno || *end || n < 0 || n > 1 << 24) {
    error = std::string(name) + "='" + v + "' is not a rank number";
    return false;
  }
  value = static_cast<int>(n);
  return true;
}
} // namespace

bool rankFromEnvironment(RankEnvironment &env, bool &found,
                         std::string &error) {
  struct Scheme {
    const char *rank, *size, *local, *source;
  } schemes[] = {
      {"RANK", "WORLD_SIZE", "LOCAL_RANK", "RANK/WORLD_SIZE"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
       "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_*"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_*"},
  };
  found = false;
  for (const Scheme &s : schemes) {
    RankEnvironment e;
    bool hasRank, hasSize, hasLocal;
    if (!intVar(s.rank, e.rank, hasRank, error) ||
        !intVar(s.size, e.size, hasSize, error) ||
        !intVar(s.local, e.localRank, hasLocal, error))
      return false;
    if (!hasRank && !hasSize)
      continue;
    if (hasRank != hasSize) {
      error = std::string(hasRank ? s.rank : s.size) + " is set but " +
              (hasRank ? s.size : s.rank) + " is not";
      return false;
    }
    if (e.size < 1 || e.rank >= e.size) {
      error = std::string(s.rank) + "=" + std::to_string(e.rank) +
              " is not below " + s.size + "=" + std::to_string(e.size);
      return false;
    }
    if (found) {
      // Two launchers' variables: they must agree.
      if (e.rank != env.rank || e.size != env.size) {
        error = std::string("the launchers' variables disagree: ") +
                env.source + " says rank " + std::to_string(env.rank) + " of " +
                std::to_string(env.size) + ", " + s.source + " says rank " +
                std::to_string(e.rank) + " of " + std::to_string(e.size);
        return false;
      }
      continue;
    }
    if (!hasLocal)
      e.localRank = e.size == 1 ? 0 : -1;
    e.source = s.source;
    env = e;
    found = true;
  }
  if (!found)
    return true;
  const char *addr = std::getenv("MASTER_ADDR");
  const char *port = std::getenv("MASTER_PORT");
  env.masterAddr = addr && *addr ? addr : "";
  bool hasPort = false;
  if (!intVar("MASTER_PORT", env.masterPort, hasPort, error))
    return false;
  if (env.size == 1)
    return true;
  if (!hasPort || env.masterAddr.empty()) {
    error = std::string("rank ") + std::to_string(env.rank) + " of " +
            std::to_string(env.size) + " (from " + env.source +
            ") needs MASTER_ADDR and MASTER_PORT, the address of rank 0's "
            "rendezvous" +
            (port ? "" : " (MASTER_PORT is not set)") +
            (addr ? "" : " (MASTER_ADDR is not set)") +
            "; loom-launch and torchrun set them";
    return false;
  }
  // Under torchrun's static rendezvous its agent's own store (PyTorch's
  // TCPStore) holds MASTER_PORT for the whole job and the workers are told
  // to use it (TORCHELASTIC_USE_AGENT_STORE=True); ours, which speaks
  // another protocol, serves on the next port. (torchrun --standalone and
  // --rdzv-backend c10d hand the workers a free MASTER_PORT.)
  if (const char *agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
      agent && std::string(agent) == "True")
    env.masterPort += 1;
  if (env.masterPort < 1 || env.masterPort > 65535) {
    error =
        "MASTER_PORT=" + std::to_string(env.masterPort) + " is not a TCP port";
    return false;
  }
  return true;
}

} // namespace loom::runtime::collectives
