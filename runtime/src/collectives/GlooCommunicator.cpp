//===- GlooCommunicator.cpp - collectives between CPU processes -----------===//

#include "runtime/src/collectives/GlooCommunicator.h"

#include "loom/common/Artifact.h"
#include "loom/common/Float16.h"
#include "runtime/src/collectives/StoreCommunicator.h"
#include "runtime/src/collectives/TcpStore.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_ring.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

namespace loom::runtime::collectives {

namespace {

//===----------------------------------------------------------------------===//
// Reductions: c[i] = a[i] op b[i]; 16-bit floats through f32.
//===----------------------------------------------------------------------===//

using loom::runtime::bf16ToFloat;
using loom::runtime::f16ToFloat;
using loom::runtime::floatToBf16;
using loom::runtime::floatToF16;

template <typename T> T applyOp(ReduceOp op, T a, T b) {
  switch (op) {
  case ReduceOp::Sum:
    return a + b;
  case ReduceOp::Max:
    return a > b ? a : b;
  case ReduceOp::Min:
    return a < b ? a : b;
  case ReduceOp::Prod:
    return a * b;
  }
  return a;
}

/// x[i] = x[i] op y[i].
template <typename T, ReduceOp Op> void reduceInto(T *x, const T *y, size_t n) {
  for (size_t i = 0; i < n; ++i)
    x[i] = static_cast<T>(applyOp<T>(Op, x[i], y[i]));
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float), ReduceOp Op>
void reduceHalfInto(uint16_t *x, const uint16_t *y, size_t n) {
  for (size_t i = 0; i < n; ++i)
    x[i] = Store(applyOp<float>(Op, Load(x[i]), Load(y[i])));
}

template <typename T> using InPlaceFn = void (*)(T *, const T *, size_t);

template <typename T>
InPlaceFn<T> pick(ReduceOp op, InPlaceFn<T> sum, InPlaceFn<T> max,
                  InPlaceFn<T> min, InPlaceFn<T> prod) {
  InPlaceFn<T> fns[] = {sum, max, min, prod};
  return fns[static_cast<int>(op)];
}

template <typename T> InPlaceFn<T> plain(ReduceOp op) {
  return pick<T>(op, &reduceInto<T, ReduceOp::Sum>,
                 &reduceInto<T, ReduceOp::Max>, &reduceInto<T, ReduceOp::Min>,
                 &reduceInto<T, ReduceOp::Prod>);
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
InPlaceFn<uint16_t> half(ReduceOp op) {
  return pick<uint16_t>(op, &reduceHalfInto<Load, Store, ReduceOp::Sum>,
                        &reduceHalfInto<Load, Store, ReduceOp::Max>,
                        &reduceHalfInto<Load, Store, ReduceOp::Min>,
                        &reduceHalfInto<Load, Store, ReduceOp::Prod>);
}

/// Calls `f` with the in-place reduction of `op` over `dtype`, typed by its
/// storage (16-bit floats are uint16_t, reduced in f32).
template <typename F> void withReduction(loom_dtype dtype, ReduceOp op, F &&f) {
  switch (dtype) {
  case LOOM_DTYPE_F32:
    return f(plain<float>(op));
  case LOOM_DTYPE_F64:
    return f(plain<double>(op));
  case LOOM_DTYPE_I64:
    return f(plain<int64_t>(op));
  case LOOM_DTYPE_I32:
    return f(plain<int32_t>(op));
  case LOOM_DTYPE_F16:
    return f(half<f16ToFloat, floatToF16>(op));
  case LOOM_DTYPE_BF16:
    return f(half<bf16ToFloat, floatToBf16>(op));
  default:
    return f(plain<int8_t>(op));
  }
}

/// Below this size an all-reduce runs Gloo's AllreduceRing (low latency,
/// no pipelining) over a staging buffer; from it on Gloo's segmented ring
/// (gloo::allreduce, pipelined, ~1.5 ms more per call on loopback).
constexpr size_t kSmallAllReduceBytes = 1 << 20;
/// The staging buffers of the small path together stay under this; past
/// it every all-reduce takes the large path.
constexpr size_t kSmallAllReduceCache = 64 << 20;
/// The staging buffers of ring reduce-scatters together stay under this;
/// past it a reduce-scatter is an all-reduce of a scratch copy (twice the
/// traffic).
constexpr size_t kReduceScatterCache = 256 << 20;

/// gloo::AllreduceRing, which returns with its last notification to the
/// left neighbour possibly still queued: a rank that then closes its pairs
/// (the end of a job) would drop it, and the neighbour fail with
/// "Connection closed by peer". This one waits for it.
template <typename T> class AllreduceRing : public gloo::AllreduceRing<T> {
public:
  using gloo::AllreduceRing<T>::AllreduceRing;
  void run() override {
    gloo::AllreduceRing<T>::run();
    if (this->sendNotificationBuf_)
      this->sendNotificationBuf_->waitSend();
  }
};

/// A ring reduce-scatter over Gloo's fixed buffers, on the staging buffer
/// it owns (G chunks of `chunk` elements): G - 1 rounds, each sending one
/// chunk to the right and reducing the one from the left, so each rank
/// moves (G - 1) / G of the data once; afterwards chunk r of the staging
/// buffer is the reduction of every rank's chunk r. Flow control as
/// gloo::AllreduceRing: a rank writes into its right neighbour's inbox
/// only after that neighbour said it has consumed the previous one.
template <typename T> class RingReduceScatter : public gloo::Algorithm {
public:
  RingReduceScatter(const std::shared_ptr<gloo::Context> &ctx, size_t chunk,
                    InPlaceFn<T> fn)
      : gloo::Algorithm(ctx), chunk_(chunk), fn_(fn),
        data_(chunk * static_cast<size_t>(ctx->size)), inbox_(chunk),
        outbox_(chunk) {
    if (this->contextSize_ == 1 || chunk == 0)
      return;
    auto &left = this->getLeftPair();
    auto &right = this->getRightPair();
    auto slot = this->context_->nextSlot();
    size_t bytes = chunk * sizeof(T);
    sendData_ = right->createSendBuffer(slot, outbox_.data(), bytes);
    recvData_ = left->createRecvBuffer(slot, inbox_.data(), bytes);
    auto notification = this->context_->nextSlot();
    sendNotification_ =
        left->createSendBuffer(notification, &dummy_, sizeof(dummy_));
    recvNotification_ =
        right->createRecvBuffer(notification, &dummy_, sizeof(dummy_));
  }

  T *data() { return data_.data(); }

  void run() override {
    int g = this->contextSize_, r = this->contextRank_;
    if (g == 1 || chunk_ == 0)
      return;
    auto at = [&](int index) {
      return data_.data() + static_cast<size_t>(((index % g) + g) % g) * chunk_;
    };
    for (int round = 0; round < g - 1; ++round) {
      // The partial sum of chunk r - round - 1 goes right; the left's
      // partial sum of chunk r - round - 2 comes in and is added.
      std::memcpy(outbox_.data(), at(r - round - 1), chunk_ * sizeof(T));
      sendData_->send();
      recvData_->waitRecv();
      fn_(at(r - round - 2), inbox_.data(), chunk_);
      sendData_->waitSend();
      sendNotification_->send();
      recvNotification_->waitRecv();
    }
    sendNotification_->waitSend(); // sent before the pairs may close
  }

private:
  size_t chunk_;
  InPlaceFn<T> fn_;
  std::vector<T> data_, inbox_, outbox_;
  int dummy_ = 0;
  std::unique_ptr<gloo::transport::Buffer> sendData_, recvData_,
      sendNotification_, recvNotification_;
};

//===----------------------------------------------------------------------===//
// Work and the communicator
//===----------------------------------------------------------------------===//

/// Send and receive slots apart from the collectives' (which gloo builds
/// from small prefixes and the tag).
constexpr uint64_t kPointToPointSlot = 0x4c4f4f4d00000000ull;

class GlooCommunicator;

/// A send or receive: posted by the worker (`posted` completes then), done
/// when its buffer's transfer is (waited for in wait(), with the timeout).
class PointToPointWork : public Work {
public:
  PointToPointWork(GlooCommunicator *comm, std::string name, bool sending)
      : sending(sending), comm_(comm), name_(std::move(name)) {}
  std::string wait() override;

  const bool sending;
  WorkPtr posted;
  /// Set by the worker before `posted` completes; kept until the transfer
  /// is done (Gloo reads or writes the memory until then).
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer;

private:
  GlooCommunicator *comm_;
  std::string name_;
  std::mutex mutex_;
  bool done_ = false;
  std::string error_;
};

class GlooCommunicator : public StoreCommunicator {
public:
  GlooCommunicator(int rank, int size, std::chrono::milliseconds timeout)
      : StoreCommunicator(rank, size, timeout) {}
  ~GlooCommunicator() override;

  bool init(const std::string &addr, int port, const GlooOptions &options,
            std::string &error);

  const char *backend() const override { return "gloo"; }

  WorkPtr allReduce(const void *in, void *out, size_t count, loom_dtype dtype,
                    ReduceOp op, const Group &group) override {
    size_t bytes = count * collectiveElementSize(dtype);
    return reduction(
        "all_reduce", count, dtype, op, group,
        [=, group = members(group)](const std::shared_ptr<gloo::Context> &ctx,
                                    uint32_t tag) {
          if (in != out)
            std::memmove(out, in, bytes);
          allReduceInPlace(group, ctx, out, count, dtype, op, tag);
        });
  }

  WorkPtr allGather(const void *in, void *out, size_t count, loom_dtype dtype,
                    const Group &group) override {
    size_t bytes = count * collectiveElementSize(dtype);
    return enqueue(
        describe("all_gather", count, dtype, group), group, dtype,
        [=](const std::shared_ptr<gloo::Context> &ctx, uint32_t tag) {
          gloo::AllgatherOptions opts(ctx);
          opts.setInput<uint8_t>(static_cast<uint8_t *>(const_cast<void *>(in)),
                                 bytes);
          opts.setOutput<uint8_t>(static_cast<uint8_t *>(out),
                                  bytes * ctx->size);
          opts.setTag(tag);
          opts.setTimeout(timeout_);
          gloo::allgather(opts);
        },
        count == 0);
  }

  WorkPtr reduceScatter(const void *in, void *out, size_t count,
                        loom_dtype dtype, ReduceOp op,
                        const Group &group) override {
    size_t bytes = count * collectiveElementSize(dtype);
    return reduction(
        "reduce_scatter", count, dtype, op, group,
        [=, group = members(group)](const std::shared_ptr<gloo::Context> &ctx,
                                    uint32_t tag) {
          size_t whole = bytes * ctx->size;
          if (void *staging = reduceScatterStaging(group, count, dtype, op)) {
            // The ring on its staging buffer: this member's chunk.
            std::memcpy(staging, in, whole);
            reduceScatters_.at({group, dtype, op, count}).ring->run();
            std::memcpy(out, static_cast<char *>(staging) + bytes * ctx->rank,
                        bytes);
            return;
          }
          // Past the cache: the whole reduction on a scratch copy, then
          // this member's chunk (twice the traffic).
          std::vector<char> scratch(static_cast<const char *>(in),
                                    static_cast<const char *>(in) + whole);
          allReduceInPlace(group, ctx, scratch.data(), count * ctx->size, dtype,
                           op, tag);
          std::memcpy(out, scratch.data() + bytes * ctx->rank, bytes);
        });
  }

  WorkPtr broadcast(const void *in, void *out, size_t count, loom_dtype dtype,
                    int root, const Group &group) override {
    std::string name = describe("broadcast", count, dtype, group) +
                       " from group rank " + std::to_string(root);
    size_t bytes = count * collectiveElementSize(dtype);
    return enqueue(
        name, group, dtype,
        [=](const std::shared_ptr<gloo::Context> &ctx, uint32_t tag) {
          if (root < 0 || root >= ctx->size)
            throw gloo::InvalidOperationException("the root is not in the "
                                                  "group");
          if (ctx->rank == root && in != out)
            std::memmove(out, in, bytes);
          gloo::BroadcastOptions opts(ctx);
          opts.setOutput<uint8_t>(static_cast<uint8_t *>(out), bytes);
          opts.setRoot(root);
          opts.setTag(tag);
          opts.setTimeout(timeout_);
          gloo::broadcast(opts);
        },
        count == 0);
  }

  WorkPtr send(const void *data, size_t count, loom_dtype dtype, int peer,
               uint32_t tag) override {
    return pointToPoint(true, const_cast<void *>(data), count, dtype, peer,
                        tag);
  }
  WorkPtr recv(void *data, size_t count, loom_dtype dtype, int peer,
               uint32_t tag) override {
    return pointToPoint(false, data, count, dtype, peer, tag);
  }

  std::vector<WorkPtr>
  sendRecvGroup(const std::vector<Transfer> &transfers) override;

  WorkPtr barrier(const Group &group) override {
    return enqueue(
        "barrier over " + groupString(group, size_), group, LOOM_DTYPE_I8,
        [=](const std::shared_ptr<gloo::Context> &ctx, uint32_t tag) {
          gloo::BarrierOptions opts(ctx);
          opts.setTag(tag);
          opts.setTimeout(timeout_);
          gloo::barrier(opts);
        });
  }

  void abort(const std::string &reason) override {
    std::string message =
        "rank " + std::to_string(rank_) + " gave up: " + reason;
    if (!recordError(message))
      return;
    std::string ignored;
    if (store_)
      store_->trySet("loom/failure/" + std::to_string(rank_), message, ignored);
  }

  /// As a killed process: connections closed, no goodbye.
  void drop();

private:
  /// A small all-reduce's Gloo ring over its staging buffer, kept for the
  /// next all-reduce of the same group, dtype, reduction and count. Made
  /// and found in program order, so the same on every member (the key has
  /// no pointer: a buffer's address differs between ranks).
  struct SmallRing {
    std::vector<char> staging;
    void *stagingPtr = nullptr;      // a reduce-scatter's, inside `ring`
    std::shared_ptr<void> reduction; // gloo::ReductionFunction<T>
    std::unique_ptr<gloo::Algorithm> ring;
  };
  using SmallKey = std::tuple<Group, int, int, size_t>;

  /// An all-reduce of `count` elements in place on `data` over `ctx`, the
  /// context of `group`.
  void allReduceInPlace(const Group &group,
                        const std::shared_ptr<gloo::Context> &ctx, void *data,
                        size_t count, loom_dtype dtype, ReduceOp op,
                        uint32_t tag) {
    size_t bytes = count * collectiveElementSize(dtype);
    SmallKey key{group, static_cast<int>(dtype), static_cast<int>(op), count};
    auto it = smallRings_.find(key);
    if (it == smallRings_.end() && bytes < kSmallAllReduceBytes &&
        smallBytes_ + bytes <= kSmallAllReduceCache) {
      SmallRing ring;
      ring.staging.resize(bytes);
      withReduction(dtype, op, [&](auto fn) {
        makeRing(ring, context(group, true), count, fn);
      });
      smallBytes_ += bytes;
      it = smallRings_.emplace(std::move(key), std::move(ring)).first;
    }
    if (it != smallRings_.end()) {
      std::memcpy(it->second.staging.data(), data, bytes);
      it->second.ring->run();
      std::memcpy(data, it->second.staging.data(), bytes);
      return;
    }
    withReduction(dtype, op,
                  [&](auto fn) { largeAllReduce(ctx, data, count, fn, tag); });
  }

  template <typename T>
  static void makeRing(SmallRing &ring,
                       const std::shared_ptr<gloo::Context> &ctx, size_t count,
                       InPlaceFn<T> fn) {
    auto reduction =
        std::make_shared<gloo::ReductionFunction<T>>(gloo::CUSTOM, fn);
    ring.ring = std::make_unique<AllreduceRing<T>>(
        ctx, std::vector<T *>{reinterpret_cast<T *>(ring.staging.data())},
        static_cast<int>(count), reduction.get());
    ring.reduction = std::move(reduction);
  }

  /// Gloo's segmented ring, in place.
  template <typename T>
  void largeAllReduce(const std::shared_ptr<gloo::Context> &ctx, void *data,
                      size_t count, InPlaceFn<T> fn, uint32_t tag) {
    gloo::AllreduceOptions opts(ctx);
    opts.setOutput<T>(static_cast<T *>(data), count);
    // c = a op b; Gloo passes c == a (all four reductions commute).
    opts.setReduceFunction([fn](void *c, const void *a, const void *b,
                                size_t n) {
      T *out = static_cast<T *>(c);
      const T *x = static_cast<const T *>(a), *y = static_cast<const T *>(b);
      if (out == y)
        std::swap(x, y);
      else if (out != x)
        std::memcpy(out, x, n * sizeof(T));
      fn(out, y, n);
    });
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    gloo::allreduce(opts);
  }

  /// The staging buffer of the ring reduce-scatter of `count` elements per
  /// member of `group`, made on first use (in program order, the same on
  /// every member); null past kReduceScatterCache.
  void *reduceScatterStaging(const Group &group, size_t count, loom_dtype dtype,
                             ReduceOp op) {
    ReduceScatterKey key{group, dtype, op, count};
    auto it = reduceScatters_.find(key);
    if (it == reduceScatters_.end()) {
      size_t bytes = count * group.size() * collectiveElementSize(dtype);
      if (reduceScatterBytes_ + bytes > kReduceScatterCache)
        return nullptr;
      SmallRing ring;
      withReduction(dtype, op, [&](auto fn) {
        makeReduceScatter(ring, context(group, true), count, fn);
      });
      reduceScatterBytes_ += bytes;
      it = reduceScatters_.emplace(std::move(key), std::move(ring)).first;
    }
    return it->second.stagingPtr;
  }

  template <typename T>
  static void makeReduceScatter(SmallRing &ring,
                                const std::shared_ptr<gloo::Context> &ctx,
                                size_t count, InPlaceFn<T> fn) {
    auto rs = std::make_unique<RingReduceScatter<T>>(ctx, count, fn);
    ring.stagingPtr = rs->data();
    ring.ring = std::move(rs);
  }

  /// Every Gloo object of this rank, rings before the contexts they use.
  void closeAll() {
    // Every pair is closed first. Until then Gloo's event loop may deliver
    // a live peer's data into an algorithm's buffers, and gloo's
    // AllreduceRing frees its inbox before its buffer leaves the pair: a
    // rank whose ring failed (another rank died mid all-reduce) and was
    // destroyed with its pairs open could have the left neighbour's data
    // written into freed memory ("free(): corrupted unsorted chunks").
    // After close() the loop no longer touches the pair's buffers.
    for (auto *contexts : {&ringContexts_, &contexts_})
      for (auto &[group, ctx] : *contexts)
        for (int i = 0; ctx && i < ctx->size; ++i) {
          if (i == ctx->rank)
            continue;
          try {
            if (auto &pair = ctx->getPair(i))
              pair->close();
          } catch (const std::exception &) {
            // Not connected: nothing to close.
          }
        }
    reduceScatters_.clear();
    reduceScatterBytes_ = 0;
    smallRings_.clear();
    smallBytes_ = 0;
    ringContexts_.clear();
    contexts_.clear();
  }

  std::map<SmallKey, SmallRing> smallRings_;
  size_t smallBytes_ = 0;
  using ReduceScatterKey = std::tuple<Group, loom_dtype, ReduceOp, size_t>;
  std::map<ReduceScatterKey, SmallRing> reduceScatters_;
  size_t reduceScatterBytes_ = 0;

public:
private:
  using Body =
      std::function<void(const std::shared_ptr<gloo::Context> &, uint32_t)>;
  struct Task {
    std::string name;
    Group group;
    Body body;
    std::shared_ptr<PendingWork> work;
    /// Takes no tag of its group: a failure report, or a send or receive
    /// (only its peer issues the matching one, so the group's other ranks
    /// would count it differently and their later collectives' tags
    /// would disagree).
    bool untagged = false;
  };

  /// Enqueues a reduction `what`, or rejects an unknown `op`.
  WorkPtr reduction(const char *what, size_t count, loom_dtype dtype,
                    ReduceOp op, const Group &group, Body body) {
    std::string name =
        describe(what, count, dtype, group) + " (" + reduceOpName(op) + ")";
    if (static_cast<int>(op) < 0 || static_cast<int>(op) > 3)
      return reject(name, "unknown reduction");
    return enqueue(std::move(name), group, dtype, std::move(body), count == 0);
  }
  WorkPtr pointToPoint(bool sending, void *data, size_t count, loom_dtype dtype,
                       int peer, uint32_t tag);

public:
  /// A point-to-point transfer `name` failed with `what` while a caller
  /// waited for it: breaks the communicator (on the worker, which owns
  /// the contexts) and returns the error.
  std::string failFromWaiter(const std::string &name, const std::string &what);

private:
  /// Fails an operation before it runs (a bad argument): breaks the
  /// communicator, since the other ranks will wait for it.
  WorkPtr reject(const std::string &name, const std::string &why);
  /// Queues `body` as operation `name` over `group`; `empty`: it moves no
  /// data (a count of 0) and completes at once, after the checks.
  WorkPtr enqueue(std::string name, Group group, loom_dtype dtype, Body body,
                  bool empty = false, bool untagged = false);
  void work();
  /// The context of `group` (world ranks, sorted, holding this rank),
  /// made on first use; `forRings`: the group's second context, for the
  /// AllreduceRings of small all-reduces (Gloo's fixed buffers and its
  /// unbound buffers on the same pairs stall each other: a 4 MiB
  /// all-reduce took 3.7 s instead of 17 ms on 4 ranks).
  std::shared_ptr<gloo::Context> context(const Group &group,
                                         bool forRings = false);
  /// Records the failure of `name` and closes every pair, so that the
  /// ranks blocked on this one fail now rather than at their timeout.
  void breakWith(const std::string &name, const std::string &what);
  std::string brokenError() const {
    return "the communicator is broken by an earlier failure: " + error();
  }

  std::shared_ptr<gloo::transport::Device> device_;
  // The worker's: contexts per group (the world under its full list) and
  // the next tag of each.
  std::map<Group, std::shared_ptr<gloo::Context>> contexts_, ringContexts_;
  std::map<Group, uint32_t> tags_;
  std::deque<Task> queue_; ///< guarded by queueMutex_
};

bool GlooCommunicator::init(const std::string &addr, int port,
                            const GlooOptions &options, std::string &error) {
  if (!meet(addr, port, error))
    return false;
  // Gloo writes to its sockets with writev: a write to a dead peer's socket
  // would raise SIGPIPE, which kills a process by default. The threads
  // that write (Gloo's event loop, made with the device, and the worker)
  // start with SIGPIPE blocked, so such a write fails with EPIPE instead;
  // the caller's mask is left as it was.
  sigset_t sigpipe, callerMask;
  sigemptyset(&sigpipe);
  sigaddset(&sigpipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &sigpipe, &callerMask);
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname =
        options.hostname.empty() ? store_->localAddress() : options.hostname;
    device_ = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception &e) {
    pthread_sigmask(SIG_SETMASK, &callerMask, nullptr);
    error = where() + "cannot open a TCP device: " + e.what();
    return false;
  }
  startWorker([this] { work(); });
  pthread_sigmask(SIG_SETMASK, &callerMask, nullptr);
  // The world's pairs, first on the worker like any group's, then a
  // barrier over them: a rank's pairs may be connected (its peer's
  // connection accepted) while the peer is still finishing its side, and a
  // rank that returned from here and broke at once (a bad first call)
  // would reset that connection under it. So no rank returns before all
  // are connected, as NCCL's collective init does.
  Group world(size_);
  for (int r = 0; r < size_; ++r)
    world[r] = r;
  std::string worldError =
      enqueue("the connection of all " + std::to_string(size_) + " ranks",
              world, LOOM_DTYPE_I8,
              [this](const std::shared_ptr<gloo::Context> &ctx, uint32_t tag) {
                gloo::BarrierOptions opts(ctx);
                opts.setTag(tag);
                opts.setTimeout(timeout_);
                gloo::barrier(opts);
              })
          ->wait();
  if (!worldError.empty()) {
    error = where() + worldError;
    return false;
  }
  return true;
}

GlooCommunicator::~GlooCommunicator() {
  stopWorker();
  // No rank closes its pairs while another may still read from them: Gloo
  // can take a peer's close for a failure before it has read the last data
  // the peer sent. Each rank says it is closing and, unless broken (its
  // peers may be dead), waits until all have said so: at most 5 s (ranks
  // that end together meet in milliseconds; a rank that fails alone must
  // not keep the others, blocked on it, waiting for their timeout), and a
  // dead rank ends the wait at once.
  if (store_ && store_->open()) {
    std::string ignored;
    store_->trySet("loom/closing/" + std::to_string(rank_), "", ignored);
    if (error().empty()) {
      std::vector<std::string> keys;
      for (int r = 0; r < size_; ++r)
        keys.push_back("loom/closing/" + std::to_string(r));
      try {
        store_->wait(keys, std::min<std::chrono::milliseconds>(
                               timeout_, std::chrono::seconds(5)));
      } catch (const std::exception &) {
        // Closing anyway: nothing is left to fail.
      }
    }
  }
  closeAll();
  device_.reset();
  if (store_)
    store_->close(/*goodbye=*/true);
  // Rank 0 serves the store: it stays until the others have left (a
  // group some of them still make needs it), at most the timeout.
  if (server_)
    server_->drain(Clock::now() + timeout_);
}

void GlooCommunicator::drop() {
  stopWorker();
  recordError("rank " + std::to_string(rank_) + " was dropped (a test)");
  closeAll();
  if (store_)
    store_->close(/*goodbye=*/false);
}

WorkPtr GlooCommunicator::reject(const std::string &name,
                                 const std::string &why) {
  std::string message = name + " on rank " + std::to_string(rank_) + ": " + why;
  if (!recordError(message))
    return completedWork(brokenError());
  return completedWork(message);
}

WorkPtr GlooCommunicator::enqueue(std::string name, Group group,
                                  loom_dtype dtype, Body body, bool empty,
                                  bool untagged) {
  if (!error().empty())
    return completedWork(brokenError());
  group = members(group);
  bool sorted = std::is_sorted(group.begin(), group.end()) &&
                std::adjacent_find(group.begin(), group.end()) == group.end();
  if (!sorted || group.front() < 0 || group.back() >= size_ ||
      !std::binary_search(group.begin(), group.end(), rank_))
    return reject(name, "the group is not a sorted list of distinct ranks "
                        "below " +
                            std::to_string(size_) + " that holds this rank");
  if (!isCollectiveDtype(dtype))
    return reject(name, "collectives do not take dtype " +
                            std::to_string(static_cast<int>(dtype)));
  if (empty)
    return completedWork(""); // every member skips it alike
  auto work = std::make_shared<PendingWork>();
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    if (stop_)
      return completedWork(name + ": the communicator is closing");
    queue_.push_back(
        {std::move(name), std::move(group), std::move(body), work, untagged});
  }
  queueCv_.notify_one();
  return work;
}

/// "send of 4 f32 to rank 1 (tag 7)".
std::string transferName(bool sending, size_t count, loom_dtype dtype, int peer,
                         uint32_t tag) {
  return std::string(sending ? "send" : "recv") + " of " +
         std::to_string(count) + " " +
         (isCollectiveDtype(dtype) ? loom_dtype_name(dtype) : "?") +
         (sending ? " to rank " : " from rank ") + std::to_string(peer) +
         " (tag " + std::to_string(tag) + ")";
}

std::vector<WorkPtr>
GlooCommunicator::sendRecvGroup(const std::vector<Transfer> &transfers) {
  // Checked first: a bad transfer fails the whole group before any of it
  // is posted.
  std::vector<std::shared_ptr<PointToPointWork>> handles;
  std::vector<size_t> bytes;
  for (const Transfer &t : transfers) {
    std::string name = transferName(t.send, t.count, t.dtype, t.peer, t.tag);
    std::string why;
    if (t.peer < 0 || t.peer >= size_ || t.peer == rank_)
      why = "the peer is not another rank of the " + std::to_string(size_);
    else if (!isCollectiveDtype(t.dtype))
      why = "collectives do not take dtype " +
            std::to_string(static_cast<int>(t.dtype));
    if (!why.empty())
      return std::vector<WorkPtr>(transfers.size(), reject(name, why));
    handles.push_back(std::make_shared<PointToPointWork>(this, name, t.send));
    bytes.push_back(t.count * collectiveElementSize(t.dtype));
  }
  // One task posts every buffer (in list order: Gloo matches a slot's
  // messages in order), then each handle waits for its own transfer; no
  // transfer of the list waits for another.
  std::vector<Transfer> list = transfers;
  WorkPtr posted = enqueue(
      "a group of " + std::to_string(transfers.size()) + " sends and receives",
      {}, LOOM_DTYPE_I8,
      [list, handles, bytes](const std::shared_ptr<gloo::Context> &ctx,
                             uint32_t) {
        for (size_t i = 0; i < list.size(); ++i) {
          if (bytes[i] == 0)
            continue; // nothing to move: done once posted
          auto buffer = ctx->createUnboundBuffer(list[i].data, bytes[i]);
          if (list[i].send)
            buffer->send(list[i].peer, kPointToPointSlot | list[i].tag);
          else
            buffer->recv(list[i].peer, kPointToPointSlot | list[i].tag);
          handles[i]->buffer = std::move(buffer);
        }
      },
      transfers.empty(), /*untagged=*/true);
  std::vector<WorkPtr> works;
  for (auto &h : handles) {
    h->posted = posted;
    works.push_back(h);
  }
  return works;
}

WorkPtr GlooCommunicator::pointToPoint(bool sending, void *data, size_t count,
                                       loom_dtype dtype, int peer,
                                       uint32_t tag) {
  std::string name = transferName(sending, count, dtype, peer, tag);
  if (peer < 0 || peer >= size_ || peer == rank_)
    return reject(name, "the peer is not another rank of the " +
                            std::to_string(size_));
  size_t bytes = count * collectiveElementSize(dtype);
  // The worker only posts the buffer (in issue order: Gloo matches a
  // slot's messages in order); the handle waits for its completion, so
  // that a send does not hold up the queue until the peer receives it.
  auto transfer = std::make_shared<PointToPointWork>(this, name, sending);
  WorkPtr posted = enqueue(
      name, {}, dtype,
      [=](const std::shared_ptr<gloo::Context> &ctx, uint32_t) {
        auto buffer = ctx->createUnboundBuffer(data, bytes);
        if (sending)
          buffer->send(peer, kPointToPointSlot | tag);
        else
          buffer->recv(peer, kPointToPointSlot | tag);
        transfer->buffer = std::move(buffer);
      },
      count == 0, /*untagged=*/true);
  transfer->posted = std::move(posted);
  return transfer;
}

std::string PointToPointWork::wait() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (done_)
    return error_;
  done_ = true;
  error_ = posted->wait();
  if (!error_.empty() || !buffer)
    return error_; // failed to post, or nothing to move (count 0)
  try {
    if (sending)
      buffer->waitSend(comm_->timeout());
    else
      buffer->waitRecv(comm_->timeout());
  } catch (const std::exception &e) {
    error_ = comm_->failFromWaiter(name_, e.what());
  }
  buffer.reset();
  return error_;
}

std::string GlooCommunicator::failFromWaiter(const std::string &name,
                                             const std::string &what) {
  // breakWith closes the worker's contexts: it runs on the worker, as a
  // task that fails with `what` (unless the communicator broke already).
  if (!error().empty())
    return brokenError();
  auto work = std::make_shared<PendingWork>();
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    if (stop_)
      return name + " failed: " + what + " (the communicator is closing)";
    queue_.push_front({name, members({}),
                       [what](const std::shared_ptr<gloo::Context> &,
                              uint32_t) { throw std::runtime_error(what); },
                       work, /*untagged=*/true});
  }
  queueCv_.notify_one();
  work->wait();
  std::string broken = error();
  return broken.empty()
             ? name + " failed on rank " + std::to_string(rank_) + ": " + what
             : broken;
}

std::shared_ptr<gloo::Context> GlooCommunicator::context(const Group &group,
                                                         bool forRings) {
  auto &contexts = forRings ? ringContexts_ : contexts_;
  auto it = contexts.find(group);
  if (it != contexts.end())
    return it->second;
  int index = static_cast<int>(
      std::lower_bound(group.begin(), group.end(), rank_) - group.begin());
  auto ctx = std::make_shared<gloo::rendezvous::Context>(
      index, static_cast<int>(group.size()));
  ctx->setTimeout(timeout_);
  std::string key = forRings ? "loom/rings/" : "loom/group/";
  for (size_t i = 0; i < group.size(); ++i)
    key += (i ? "." : "") + std::to_string(group[i]);
  gloo::rendezvous::PrefixStore prefixed(key, *store_);
  ctx->connectFullMesh(prefixed, device_);
  contexts[group] = ctx;
  return ctx;
}

void GlooCommunicator::work() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(queueMutex_);
      queueCv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty())
        return;
      if (stop_) {
        // Released with operations queued: they never ran.
        for (Task &t : queue_)
          t.work->complete(t.name + ": the communicator was released first");
        queue_.clear();
        return;
      }
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    if (!error().empty()) {
      task.work->complete(brokenError());
      continue;
    }
    try {
      std::shared_ptr<gloo::Context> ctx = context(task.group);
      uint32_t tag = task.untagged ? 0 : tags_[task.group]++;
      task.body(ctx, tag);
      task.work->complete("");
    } catch (const std::exception &e) {
      breakWith(task.name, e.what());
      task.work->complete(error());
    }
  }
}

void GlooCommunicator::breakWith(const std::string &name,
                                 const std::string &what) {
  std::string how = what;
  // Gloo's messages start with the source location: keep what it says.
  if (size_t cut = how.find("] ");
      how.rfind("[", 0) == 0 && cut != std::string::npos)
    how = how.substr(cut + 2);
  std::string lower = how;
  for (char &c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // "Timed out waiting ..." (unbound buffers), "Read timeout ..." (pairs).
  bool timedOut = lower.find("timed out") != std::string::npos ||
                  lower.find("timeout") != std::string::npos;
  // The store knows which ranks died; it may hear of a death a moment
  // after this rank's pairs did.
  std::vector<int> dead;
  std::string storeError;
  bool storeAlive = true;
  for (int i = 0; i < 50; ++i) {
    if (!store_ || !store_->deadRanks(dead, storeError)) {
      storeAlive = false;
      break;
    }
    if (!dead.empty() || timedOut)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string message =
      name + " failed on rank " + std::to_string(rank_) + ": ";
  if (!dead.empty()) {
    message += rankList(dead) +
               " died (its process ended without closing its communicator)";
  } else if (!storeAlive && rank_ != 0) {
    message += storeError; // "lost the rendezvous store of rank 0 ..."
  } else if (timedOut) {
    message += "timed out after " + secondsString(timeout_) +
               "; no rank died, so a rank of the group is stuck or issued "
               "other collectives";
  } else {
    // Another rank may have failed first and closed its pairs.
    std::string first;
    for (int r = 0; r < size_ && storeAlive && first.empty(); ++r) {
      bool found = false;
      std::string value, ignored;
      if (r != rank_ &&
          store_->tryGet("loom/failure/" + std::to_string(r), value, found,
                         ignored) &&
          found)
        first = value.rfind("rank ", 0) == 0
                    ? value // "rank 0 gave up: ..."
                    : "rank " + std::to_string(r) + " failed first: " + value;
    }
    message += first.empty() ? how : first;
  }
  if (message.find(how) == std::string::npos)
    message += " [gloo: " + how + "]";
  recordError(message);
  std::string ignored;
  if (storeAlive)
    store_->trySet("loom/failure/" + std::to_string(rank_), message, ignored);
  closeAll();
}

} // namespace

std::unique_ptr<Communicator>
createGlooCommunicator(int rank, int size, const std::string &addr, int port,
                       const GlooOptions &options, std::string &error) {
  if (!checkJob(rank, size, port, options.timeout, error))
    return nullptr;
  auto comm = std::make_unique<GlooCommunicator>(rank, size, options.timeout);
  try {
    if (!comm->init(addr, port, options, error))
      return nullptr;
  } catch (const std::exception &e) {
    error = "rank " + std::to_string(rank) + ": " + e.what();
    return nullptr;
  }
  return comm;
}

void dropGlooCommunicatorForTesting(Communicator &comm) {
  if (auto *gloo = dynamic_cast<GlooCommunicator *>(&comm))
    gloo->drop();
}

} // namespace loom::runtime::collectives
