//===- CommunicatorTest.cpp - the Gloo communicator, ranks as threads -----===//
//
// 2 and 4 ranks as threads of this process over loopback: every operation
// and dtype, groups of a 2x2 mesh, FIFO order of asynchronous operations,
// the collective ABI over a real communicator, and the failures: a rank
// that never arrives, a rank that dies mid-collective, a broken
// communicator. No timed assertions: the timeouts are long where a test
// must not reach them.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/RunContext.h"
#include "runtime/src/collectives/GlooCommunicator.h"
#include "runtime/src/collectives/NcclCommunicator.h"
#include "runtime/src/cuda/CudaApi.h"
#include "runtime/src/pipeline/Executor.h"

#include "loom/common/DynamicLibrary.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <thread>

using namespace loom::runtime::collectives;
using loom::runtime::ActiveRun;
using loom::runtime::RunContext;

namespace {

/// A port nobody listens on now.
int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

using RankFn = std::function<void(int rank, Communicator &comm)>;

/// Runs `fn` on `n` ranks, one thread each, after their rendezvous.
void runRanks(int n, const RankFn &fn,
              std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  int port = freePort();
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      GlooOptions options;
      options.timeout = timeout;
      std::string error;
      auto comm =
          createGlooCommunicator(r, n, "127.0.0.1", port, options, error);
      ASSERT_TRUE(comm) << error;
      EXPECT_EQ(comm->rank(), r);
      EXPECT_EQ(comm->size(), n);
      fn(r, *comm);
    });
  for (auto &t : threads)
    t.join();
}

/// Values stored as `dtype` (small integers: exact in every dtype).
std::vector<char> encode(loom_dtype dtype, const std::vector<double> &v) {
  size_t elem = dtype == LOOM_DTYPE_F64 || dtype == LOOM_DTYPE_I64   ? 8
                : dtype == LOOM_DTYPE_F32 || dtype == LOOM_DTYPE_I32 ? 4
                : dtype == LOOM_DTYPE_I8                             ? 1
                                                                     : 2;
  std::vector<char> out(v.size() * elem);
  for (size_t i = 0; i < v.size(); ++i) {
    char *p = out.data() + i * elem;
    float f = static_cast<float>(v[i]);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    switch (dtype) {
    case LOOM_DTYPE_F32:
      std::memcpy(p, &f, 4);
      break;
    case LOOM_DTYPE_F64:
      std::memcpy(p, &v[i], 8);
      break;
    case LOOM_DTYPE_I64: {
      int64_t x = static_cast<int64_t>(v[i]);
      std::memcpy(p, &x, 8);
      break;
    }
    case LOOM_DTYPE_I32: {
      int32_t x = static_cast<int32_t>(v[i]);
      std::memcpy(p, &x, 4);
      break;
    }
    case LOOM_DTYPE_I8:
      *p = static_cast<int8_t>(v[i]);
      break;
    case LOOM_DTYPE_BF16: {
      uint16_t h = static_cast<uint16_t>(bits >> 16); // exact for these
      std::memcpy(p, &h, 2);
      break;
    }
    default: { // f16 of a small integer
      int e = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
      uint16_t h =
          f == 0 ? 0
                 : static_cast<uint16_t>(((bits >> 16) & 0x8000) | (e << 10) |
                                         ((bits >> 13) & 0x3ff));
      std::memcpy(p, &h, 2);
    }
    }
  }
  return out;
}

const loom_dtype kDtypes[] = {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16,
                              LOOM_DTYPE_F64, LOOM_DTYPE_I64, LOOM_DTYPE_I32,
                              LOOM_DTYPE_I8};

/// Rank r's value i: 1 or 2, so that sums and products stay exact.
double value(int r, size_t i) { return 1 + (r + i) % 2; }

void checkAllReduce(int n, size_t count) {
  runRanks(n, [n, count](int r, Communicator &comm) {
    for (loom_dtype dtype : kDtypes)
      for (int op = 0; op < 4; ++op) {
        std::vector<double> mine(count), want(count);
        for (size_t i = 0; i < count; ++i) {
          mine[i] = value(r, i);
          want[i] = value(0, i);
          for (int k = 1; k < n; ++k) {
            double x = value(k, i);
            want[i] = op == 0   ? want[i] + x
                      : op == 1 ? std::max(want[i], x)
                      : op == 2 ? std::min(want[i], x)
                                : want[i] * x;
          }
        }
        std::vector<char> in = encode(dtype, mine), out(in.size());
        std::string error = comm.allReduce(in.data(), out.data(), count, dtype,
                                           static_cast<ReduceOp>(op))
                                ->wait();
        ASSERT_EQ(error, "");
        EXPECT_EQ(out, encode(dtype, want))
            << loom_dtype_name(dtype) << " op " << op << " rank " << r;
        // In place.
        error = comm.allReduce(in.data(), in.data(), count, dtype,
                               static_cast<ReduceOp>(op))
                    ->wait();
        ASSERT_EQ(error, "");
        EXPECT_EQ(in, encode(dtype, want)) << loom_dtype_name(dtype);
      }
  });
}

TEST(GlooCommunicator, AllReduceEveryOpAndDtype2) { checkAllReduce(2, 1000); }

// orderedCollective's default (Gloo's): the plain operation, its handle
// both the issue's and the completion's; every kind through
// issueCollective, against the values each rank computes alone.
TEST(GlooCommunicator, OrderedCollectiveDefaultIsThePlainOperation) {
  runRanks(2, [](int r, Communicator &comm) {
    std::vector<float> in = {float(r + 1), float(10 * (r + 1)), 3, 4};
    std::vector<float> sum(4), gathered(8), scattered(2), root(4);
    struct Case {
      CollectiveCall::Kind kind;
      void *out;
      size_t count;
    } cases[] = {{CollectiveCall::AllReduce, sum.data(), 4},
                 {CollectiveCall::AllGather, gathered.data(), 4},
                 {CollectiveCall::ReduceScatter, scattered.data(), 2},
                 {CollectiveCall::Broadcast, root.data(), 4}};
    for (const Case &c : cases) {
      CollectiveCall call;
      call.kind = c.kind;
      call.in = in.data();
      call.out = c.out;
      call.count = c.count;
      call.dtype = LOOM_DTYPE_F32;
      call.root = 1;
      OrderedWork w = comm.orderedCollective(call, StreamOrder{});
      ASSERT_TRUE(w.issued && w.completed);
      EXPECT_EQ(w.issued, w.completed);
      EXPECT_EQ(w.completed->wait(), "") << "kind " << c.kind;
    }
    EXPECT_EQ(sum, (std::vector<float>{3, 30, 6, 8}));
    EXPECT_EQ(gathered, (std::vector<float>{1, 10, 3, 4, 2, 20, 3, 4}));
    EXPECT_EQ(scattered, r == 0 ? (std::vector<float>{3, 30})
                                : (std::vector<float>{6, 8}));
    EXPECT_EQ(root, (std::vector<float>{2, 20, 3, 4}));
  });
}
TEST(GlooCommunicator, AllReduceEveryOpAndDtype4) { checkAllReduce(4, 1000); }
// Past 1 MiB: Gloo's segmented ring instead of AllreduceRing.
TEST(GlooCommunicator, LargeAllReduce) { checkAllReduce(2, 300000); }

TEST(GlooCommunicator, GatherScatterBroadcastBarrier) {
  for (int n : {2, 3, 4})
    runRanks(n, [n](int r, Communicator &comm) {
      for (loom_dtype dtype : kDtypes) {
        const size_t count = 5;
        std::vector<double> mine(count), gathered, reduced(count), chunk;
        for (size_t i = 0; i < count; ++i)
          mine[i] = r + 1;
        for (int k = 0; k < n; ++k)
          for (size_t i = 0; i < count; ++i)
            gathered.push_back(k + 1);
        std::vector<char> in = encode(dtype, mine),
                          out(in.size() * static_cast<size_t>(n));
        ASSERT_EQ(comm.allGather(in.data(), out.data(), count, dtype)->wait(),
                  "");
        EXPECT_EQ(out, encode(dtype, gathered)) << loom_dtype_name(dtype);

        // Reduce-scatter of [1..n*count] + r: chunk r of the sum.
        std::vector<double> whole, want;
        for (size_t i = 0; i < count * n; ++i)
          whole.push_back(i % 7);
        for (size_t i = 0; i < count; ++i)
          want.push_back(n * whole[r * count + i]);
        std::vector<char> wholeBytes = encode(dtype, whole), mineOut(in.size());
        ASSERT_EQ(comm.reduceScatter(wholeBytes.data(), mineOut.data(), count,
                                     dtype, ReduceOp::Sum)
                      ->wait(),
                  "");
        EXPECT_EQ(mineOut, encode(dtype, want)) << loom_dtype_name(dtype);

        // Broadcast from rank 1.
        std::vector<char> b(in.size());
        ASSERT_EQ(comm.broadcast(in.data(), b.data(), count, dtype, 1)->wait(),
                  "");
        EXPECT_EQ(b, encode(dtype, std::vector<double>(count, 2)));
      }
      EXPECT_EQ(comm.barrier()->wait(), "");
    });
}

TEST(GlooCommunicator, LargeReduceScatter) {
  for (int n : {2, 3})
    runRanks(n, [n](int r, Communicator &comm) {
      // The same reduce-scatter twice (the second reuses the ring), then
      // f16 and a max.
      const size_t count = 100003;
      std::vector<float> in(count * n), out(count);
      for (int round = 0; round < 2; ++round) {
        for (size_t i = 0; i < in.size(); ++i)
          in[i] = static_cast<float>((i + r + round) % 5);
        ASSERT_EQ(comm.reduceScatter(in.data(), out.data(), count,
                                     LOOM_DTYPE_F32, ReduceOp::Sum)
                      ->wait(),
                  "");
        for (size_t i = 0; i < count; i += 997) {
          size_t at = r * count + i;
          float want = 0;
          for (int k = 0; k < n; ++k)
            want += static_cast<float>((at + k + round) % 5);
          ASSERT_EQ(out[i], want) << "rank " << r << " element " << i;
        }
      }
      std::vector<double> whole, want;
      for (size_t i = 0; i < count * n; ++i)
        whole.push_back(static_cast<double>((i + r) % 3));
      for (size_t i = 0; i < count; ++i) {
        double m = 0;
        for (int k = 0; k < n; ++k)
          m = std::max(m, static_cast<double>((r * count + i + k) % 3));
        want.push_back(m);
      }
      std::vector<char> hin = encode(LOOM_DTYPE_F16, whole), hout(count * 2);
      ASSERT_EQ(comm.reduceScatter(hin.data(), hout.data(), count,
                                   LOOM_DTYPE_F16, ReduceOp::Max)
                    ->wait(),
                "");
      EXPECT_EQ(hout, encode(LOOM_DTYPE_F16, want));
    });
}

TEST(GlooCommunicator, SendRecvRing) {
  runRanks(4, [](int r, Communicator &comm) {
    int next = (r + 1) % 4, prev = (r + 3) % 4;
    std::vector<int64_t> out = {r, 10 * r}, in(2);
    // One worker per rank runs in order: even ranks send first.
    WorkPtr a, b;
    if (r % 2 == 0) {
      a = comm.send(out.data(), 2, LOOM_DTYPE_I64, next, 7);
      b = comm.recv(in.data(), 2, LOOM_DTYPE_I64, prev, 7);
    } else {
      b = comm.recv(in.data(), 2, LOOM_DTYPE_I64, prev, 7);
      a = comm.send(out.data(), 2, LOOM_DTYPE_I64, next, 7);
    }
    EXPECT_EQ(a->wait(), "");
    EXPECT_EQ(b->wait(), "");
    EXPECT_EQ(in, (std::vector<int64_t>{prev, 10 * prev}));
  });
}

TEST(GlooCommunicator, SendThenRecvBothWaysDoesNotDeadlock) {
  // The steady state of a 1F1B pipeline: each rank sends to the other,
  // then receives from it, several messages told apart by their tags,
  // posted before any is waited for.
  runRanks(2, [](int r, Communicator &comm) {
    int peer = 1 - r;
    const int n = 5;
    std::vector<std::vector<float>> out(n), in(n);
    std::vector<WorkPtr> sends, recvs;
    for (int k = 0; k < n; ++k) {
      // Large enough that a send cannot complete from a socket buffer.
      out[k].assign(100000 * (k + 1), static_cast<float>(10 * r + k));
      in[k].assign(out[k].size(), -1.0f);
      sends.push_back(comm.send(out[k].data(), out[k].size(), LOOM_DTYPE_F32,
                                peer, 100 + k));
    }
    // Received in the reverse order of the tags.
    for (int k = n; k-- > 0;)
      recvs.push_back(
          comm.recv(in[k].data(), in[k].size(), LOOM_DTYPE_F32, peer, 100 + k));
    for (auto &w : recvs)
      ASSERT_EQ(w->wait(), "");
    for (auto &w : sends)
      ASSERT_EQ(w->wait(), "");
    for (int k = 0; k < n; ++k) {
      EXPECT_EQ(in[k].front(), static_cast<float>(10 * peer + k));
      EXPECT_EQ(in[k].back(), static_cast<float>(10 * peer + k));
    }
    // A collective issued after the transfers still runs.
    float x = 1, sum = 0;
    ASSERT_EQ(
        comm.allReduce(&x, &sum, 1, LOOM_DTYPE_F32, ReduceOp::Sum)->wait(), "");
    EXPECT_EQ(sum, 2.0f);
  });
}

TEST(GlooCommunicator, TransfersBetweenSomeRanksKeepTheWorldsCollectives) {
  // A pipeline's middle ranks send and receive more than its ends: the
  // transfers must not count among the world's collectives, or the
  // ranks' next world collectives would not agree (a barrier hung).
  runRanks(3, [](int r, Communicator &comm) {
    float x = static_cast<float>(r);
    for (int k = 0; k < 3; ++k) {
      if (r == 0) {
        ASSERT_EQ(comm.send(&x, 1, LOOM_DTYPE_F32, 1, k)->wait(), "");
      }
      if (r == 1) {
        float got = -1;
        ASSERT_EQ(comm.recv(&got, 1, LOOM_DTYPE_F32, 0, k)->wait(), "");
        EXPECT_EQ(got, 0.0f);
      }
    }
    ASSERT_EQ(comm.barrier()->wait(), "");
    float sum = 0;
    ASSERT_EQ(
        comm.allReduce(&x, &sum, 1, LOOM_DTYPE_F32, ReduceOp::Sum)->wait(), "");
    EXPECT_EQ(sum, 3.0f);
  });
}

TEST(GlooCommunicator, AReceiveFromADeadRankFails) {
  runRanks(
      2,
      [](int r, Communicator &comm) {
        // Both connected first: a rank that drops out while the other is
        // still connecting fails its creation instead (which the
        // rendezvous tests cover).
        ASSERT_EQ(comm.barrier()->wait(), "");
        if (r == 1) {
          dropGlooCommunicatorForTesting(comm);
          return;
        }
        std::vector<float> in(1000);
        std::string error =
            comm.recv(in.data(), in.size(), LOOM_DTYPE_F32, 1, 3)->wait();
        EXPECT_NE(error.find("recv of 1000 f32 from rank 1"), std::string::npos)
            << error;
        EXPECT_FALSE(comm.error().empty());
      },
      std::chrono::seconds(20));
}

//===----------------------------------------------------------------------===//
// The pipeline's transfers (runtime/src/pipeline/Executor.h): one step's
// sends and receives as one group, matched by the signatures' indices.
//===----------------------------------------------------------------------===//

/// NCCL's point-to-point semantics over Gloo: no tags (a pair's messages
/// meet in issue order), and an operation completes before the next is
/// issued (NCCL runs them in order on one stream: a send ends once its
/// receive has the data, a group once all of it has).
class RendezvousCommunicator : public Communicator {
public:
  explicit RendezvousCommunicator(Communicator &inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  const char *backend() const override { return "rendezvous"; }
  WorkPtr allReduce(const void *in, void *out, size_t count, loom_dtype dtype,
                    ReduceOp op, const Group &group) override {
    return done(inner_.allReduce(in, out, count, dtype, op, group));
  }
  WorkPtr allGather(const void *in, void *out, size_t count, loom_dtype dtype,
                    const Group &group) override {
    return done(inner_.allGather(in, out, count, dtype, group));
  }
  WorkPtr reduceScatter(const void *in, void *out, size_t count,
                        loom_dtype dtype, ReduceOp op,
                        const Group &group) override {
    return done(inner_.reduceScatter(in, out, count, dtype, op, group));
  }
  WorkPtr broadcast(const void *in, void *out, size_t count, loom_dtype dtype,
                    int root, const Group &group) override {
    return done(inner_.broadcast(in, out, count, dtype, root, group));
  }
  WorkPtr send(const void *data, size_t count, loom_dtype dtype, int peer,
               uint32_t) override {
    return done(inner_.send(data, count, dtype, peer, 0));
  }
  WorkPtr recv(void *data, size_t count, loom_dtype dtype, int peer,
               uint32_t) override {
    return done(inner_.recv(data, count, dtype, peer, 0));
  }
  std::vector<WorkPtr>
  sendRecvGroup(const std::vector<Transfer> &transfers) override {
    std::vector<Transfer> untagged = transfers;
    for (Transfer &t : untagged)
      t.tag = 0;
    std::string first;
    for (const WorkPtr &w : inner_.sendRecvGroup(untagged))
      if (std::string e = w->wait(); !e.empty() && first.empty())
        first = e;
    return std::vector<WorkPtr>(transfers.size(), completedWork(first));
  }
  WorkPtr barrier(const Group &group) override {
    return done(inner_.barrier(group));
  }
  std::string error() const override { return inner_.error(); }
  void abort(const std::string &reason) override { inner_.abort(reason); }

private:
  static WorkPtr done(const WorkPtr &w) { return completedWork(w->wait()); }
  Communicator &inner_;
};

/// A signature of `names`, tensor I of `count(I)` f32 (the infos point
/// into `dims`, which must outlive them).
std::vector<loom_tensor_info>
signatureOf(const std::vector<std::string> &names,
            std::vector<std::vector<int64_t>> &dims) {
  std::vector<loom_tensor_info> list;
  dims.reserve(names.size());
  for (const std::string &n : names) {
    int index = std::atoi(n.substr(n.find(':') + 1).c_str());
    dims.push_back({index + 1, 2});
    list.push_back({n.c_str(), LOOM_DTYPE_F32, 2, dims.back().data(), nullptr});
  }
  return list;
}

/// What rank `r` of a two-stage pipeline sends and receives in one step of
/// 1F1B's steady state: rank 0 (stage 0) sends its 12 activations out:I
/// and receives their gradients; rank 1 (stage 1) sends its 12 input
/// gradients din:I and receives the activations as in:I: crossing sends.
/// The signatures list the names as a std::map would ("out:10" before
/// "out:2") or backwards; tensor I holds 2 * (I + 1) values that say
/// which it is. Checks that every tensor lands at its own name.
void exchangeTwelveEachWay(int r, Communicator &comm) {
  const int n = 12, micro = 3;
  std::vector<std::string> outs, ins, dins;
  for (int i = 0; i < n; ++i) {
    outs.push_back("out:" + std::to_string(i));
    ins.push_back("in:" + std::to_string(n - 1 - i));
    dins.push_back("din:" + std::to_string(i));
  }
  std::sort(outs.begin(), outs.end()); // out:0 out:1 out:10 out:11 out:2 ..
  std::sort(dins.begin(), dins.end());
  std::vector<std::vector<int64_t>> dims0, dims1, dims2;
  std::vector<loom_tensor_info> stage0Out = signatureOf(outs, dims0);
  std::vector<loom_tensor_info> stage1In = signatureOf(ins, dims1);
  std::vector<loom_tensor_info> stage1Din = signatureOf(dins, dims2);
  // Activation I is 1000 + 10 I + k, the gradient of I is -(10 I + k).
  auto value = [](bool gradient, int index, int k) {
    return gradient ? -(10.0f * index + k) : 1000 + 10.0f * index + k;
  };
  std::vector<std::shared_ptr<loom_tensor>> keep;
  auto tensorFor = [&](const loom_tensor_info &info, bool gradient, bool fill) {
    loom_tensor *t = nullptr;
    EXPECT_EQ(loom_tensor_create(info.dtype, info.rank, info.dims, &t),
              nullptr);
    keep.emplace_back(t, loom_tensor_release);
    float *data = static_cast<float *>(loom_tensor_data(t));
    int index = std::atoi(std::strchr(info.name, ':') + 1);
    for (size_t k = 0; k < loom_tensor_element_count(t); ++k)
      data[k] = fill ? value(gradient, index, static_cast<int>(k)) : -1e9f;
    return t;
  };
  using loom::pipeline::boundaryTensors;
  using loom::pipeline::StepMessage;
  std::vector<StepMessage> messages;
  std::map<std::string, loom_tensor *> received;
  bool first = r == 0;
  int peer = 1 - r;
  // Rank 0: its sends, then its receives; rank 1 the other way round.
  for (int half = 0; half < 2; ++half) {
    bool sending = (half == 0) == first;
    bool gradient = first ? !sending : sending;
    const auto &signature =
        first ? stage0Out : (gradient ? stage1Din : stage1In);
    for (const auto &b : boundaryTensors(signature, gradient, sending,
                                         gradient ? 0 : 1, micro)) {
      loom_tensor *t = tensorFor(*b.info, gradient, sending);
      std::string name = b.info->name;
      if (!sending)
        received[gradient ? "dout:" + name.substr(4) : name] = t;
      messages.push_back({sending, peer, b.tag, t, name});
    }
  }
  ASSERT_EQ(messages.size(), 2u * n);
  std::vector<WorkPtr> sends;
  ASSERT_EQ(loom::pipeline::exchangeStep(comm, messages, sends), "");
  ASSERT_EQ(sends.size(), static_cast<size_t>(n));
  for (const WorkPtr &w : sends)
    EXPECT_EQ(w->wait(), "");
  ASSERT_EQ(received.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    std::string name = (first ? "dout:" : "in:") + std::to_string(i);
    ASSERT_TRUE(received.count(name)) << name;
    const loom_tensor *t = received[name];
    ASSERT_EQ(loom_tensor_element_count(t), 2u * (i + 1)) << name;
    const float *data = static_cast<const float *>(loom_tensor_data_const(t));
    for (int k = 0; k < 2 * (i + 1); ++k)
      ASSERT_EQ(data[k], value(first, i, k)) << name << " element " << k;
  }
}

TEST(PipelineTransfers, TwelveTensorsCrossBothWaysInOneStepOverGloo) {
  runRanks(2,
           [](int r, Communicator &comm) { exchangeTwelveEachWay(r, comm); });
}

TEST(PipelineTransfers, TwelveTensorsCrossBothWaysWithNcclsPairing) {
  // No tags, and an operation ends before the next starts: what NCCL
  // does. Matching by the signatures' index order on both sides, in one
  // group, is all that pairs them right and keeps it from deadlocking.
  runRanks(2, [](int r, Communicator &comm) {
    RendezvousCommunicator nccl(comm);
    exchangeTwelveEachWay(r, nccl);
  });
}

TEST(PipelineTransfers, CrossingSendsOneAtATimeDeadlockWithNcclsSemantics) {
  // What the executor did before its steps became groups: each send
  // issued alone. With sends that end only when received (NCCL), two
  // ranks that send to each other first both wait until the timeout.
  runRanks(
      2,
      [](int r, Communicator &comm) {
        RendezvousCommunicator nccl(comm);
        // Large enough that a send cannot complete from socket buffers.
        std::vector<float> out(4 << 20, static_cast<float>(r)), in(4 << 20);
        std::string error =
            nccl.send(out.data(), out.size(), LOOM_DTYPE_F32, 1 - r, 0)->wait();
        EXPECT_NE(error, "");
      },
      std::chrono::seconds(2));
}

TEST(PipelineTransfers, EveryScheduleButInterleavedRunsOnRendezvousGroups) {
  using namespace loom::pipeline;
  for (const std::string &name : scheduleNames())
    for (int S : {2, 3, 4})
      for (int m : {1, 2, 4, 5, 8})
        for (int v : {1, 2}) {
          if (v == 2 && name != "interleaved")
            continue;
          std::string error;
          Schedule s = makeSchedule(name, S, m, v, error);
          if (!error.empty())
            continue; // a count the schedule does not take
          bool runs = groupedStepsRunOnRendezvous(s, error);
          if (name != "interleaved" || v == 1) {
            EXPECT_TRUE(runs)
                << name << " S=" << S << " m=" << m << ": " << error;
          } else if (S == 2 && m == 4) {
            // Interleaved sends run ahead of their receives: over NCCL
            // the executor refuses it, naming the stuck ranks.
            EXPECT_FALSE(runs);
            EXPECT_NE(error.find("rank 0 waits in the step of"),
                      std::string::npos)
                << error;
          } else if (S == 2 && m == 5) {
            // ... and with m not a multiple of S it sends in another order
            // than it receives, which tags sort out and NCCL would not.
            EXPECT_FALSE(runs);
            EXPECT_NE(error.find("in another order than the receiver"),
                      std::string::npos)
                << error;
          }
        }
}

TEST(GlooCommunicator, GroupsOfA2x2Mesh) {
  runRanks(4, [](int r, Communicator &comm) {
    // data = 2, tensor = 2: over tensor {0,1} {2,3}; over data {0,2} {1,3}.
    Group tensor, data;
    std::string error;
    ASSERT_TRUE(meshGroup({2, 2}, r, 0b10, tensor, error));
    ASSERT_TRUE(meshGroup({2, 2}, r, 0b01, data, error));
    for (int round = 0; round < 3; ++round) {
      float x = static_cast<float>(1 << r), t = 0, d = 0;
      WorkPtr wt =
          comm.allReduce(&x, &t, 1, LOOM_DTYPE_F32, ReduceOp::Sum, tensor);
      WorkPtr wd =
          comm.allReduce(&x, &d, 1, LOOM_DTYPE_F32, ReduceOp::Sum, data);
      ASSERT_EQ(wd->wait(), "");
      ASSERT_EQ(wt->wait(), "");
      EXPECT_EQ(t, r < 2 ? 3.0f : 12.0f) << "rank " << r;
      EXPECT_EQ(d, r % 2 == 0 ? 5.0f : 10.0f) << "rank " << r;
    }
  });
}

TEST(GlooCommunicator, AsynchronousOperationsRunInIssueOrder) {
  runRanks(2, [](int r, Communicator &comm) {
    const int n = 16;
    std::vector<std::vector<float>> bufs(n);
    std::vector<WorkPtr> works;
    for (int k = 0; k < n; ++k) {
      bufs[k].assign(1000 * (k + 1), static_cast<float>(k + r));
      works.push_back(comm.allReduce(bufs[k].data(), bufs[k].data(),
                                     bufs[k].size(), LOOM_DTYPE_F32,
                                     ReduceOp::Sum));
    }
    for (int k = n; k-- > 0;) {
      ASSERT_EQ(works[k]->wait(), "");
      EXPECT_EQ(bufs[k].front(), 2.0f * k + 1);
      EXPECT_EQ(bufs[k].back(), 2.0f * k + 1);
    }
  });
}

TEST(GlooCommunicator, CollectiveAbiOverAMesh) {
  runRanks(4, [](int r, Communicator &comm) {
    RunContext context;
    ActiveRun active(&context);
    RunCollectives &rc = context.collectives();
    rc.begin(&comm, {2, 2});
    auto desc = [](void *p, int64_t n) {
      return std::vector<int64_t>{reinterpret_cast<int64_t>(p),
                                  reinterpret_cast<int64_t>(p), 0, n, 1};
    };
    float x[2] = {static_cast<float>(r), 1}, sum[2], gathered[4], slice[1],
          scattered[1], root[2];
    auto dx = desc(x, 2), ds = desc(sum, 2), dg = desc(gathered, 4),
         dl = desc(slice, 1), dr = desc(scattered, 1), db = desc(root, 2);
    Unranked ux{1, dx.data()}, us{1, ds.data()}, ug{1, dg.data()},
        ul{1, dl.data()}, ur{1, dr.data()}, ub{1, db.data()};
    // all-reduce over data (axis 0), all-gather over tensor (axis 1),
    // reduce-scatter over tensor, broadcast from data rank 1, all-slice.
    int64_t h0 = rc.start(&ux, &us, 0, LOOM_DTYPE_F32, 0, 0b01);
    int64_t h1 = rc.start(&ux, &ug, 1, LOOM_DTYPE_F32, 0, 0b10);
    int64_t h2 = rc.start(&ux, &ur, 2, LOOM_DTYPE_F32, 0, 0b10);
    int64_t h3 = rc.start(&ux, &ub, 3, LOOM_DTYPE_F32, 1, 0b01);
    int64_t h4 = rc.start(&ux, &ul, 4, LOOM_DTYPE_F32, 0, 0b10);
    for (int64_t h : {h4, h3, h2, h1, h0}) {
      EXPECT_GE(h, 0);
      rc.wait(h);
    }
    ASSERT_EQ(rc.finish(), "");
    int partner = r ^ 2, neighbour = r ^ 1, t = r % 2;
    EXPECT_EQ(sum[0], static_cast<float>(r + partner));
    EXPECT_EQ(sum[1], 2.0f);
    int lo = r & ~1;
    EXPECT_EQ(gathered[0], static_cast<float>(lo));
    EXPECT_EQ(gathered[2], static_cast<float>(lo + 1));
    EXPECT_EQ(scattered[0], t == 0 ? static_cast<float>(r + neighbour) : 2.0f);
    EXPECT_EQ(root[0], static_cast<float>(2 + r % 2));
    EXPECT_EQ(slice[0], x[t]);
  });
}

TEST(GlooCommunicator, AFailedCollectiveFailsTheRun) {
  runRanks(2, [](int r, Communicator &comm) {
    ASSERT_EQ(comm.barrier()->wait(), "");
    if (r == 1) {
      dropGlooCommunicatorForTesting(comm);
      return;
    }
    RunContext context;
    ActiveRun active(&context);
    RunCollectives &rc = context.collectives();
    rc.begin(&comm, {2});
    float x[4] = {1, 2, 3, 4};
    std::vector<int64_t> d = {reinterpret_cast<int64_t>(x),
                              reinterpret_cast<int64_t>(x), 0, 4, 1};
    Unranked u{1, d.data()};
    int64_t h = rc.start(&u, &u, 0, LOOM_DTYPE_F32, 0, 1);
    EXPECT_GE(h, 0);
    rc.wait(h);
    // Later collectives of the run fail at once.
    EXPECT_EQ(rc.start(&u, &u, 0, LOOM_DTYPE_F32, 0, 1), -1);
    std::string failure = rc.finish();
    EXPECT_NE(failure.find("collective all_reduce #0 of the step: all_reduce "
                           "of 4 f32 over all 2 ranks (sum) failed on rank 0: "
                           "rank 1 died"),
              std::string::npos)
        << failure;
    // The next run fails at its first collective.
    rc.begin(&comm, {2});
    EXPECT_EQ(rc.start(&u, &u, 0, LOOM_DTYPE_F32, 0, 1), -1);
    EXPECT_NE(rc.finish().find("broken by an earlier failure"),
              std::string::npos);
  });
}

TEST(GlooCommunicator, RendezvousTimeoutNamesTheMissingRank) {
  int port = freePort();
  std::vector<std::thread> threads;
  std::vector<std::string> errors(2);
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      GlooOptions options;
      options.timeout = std::chrono::milliseconds(500);
      auto comm =
          createGlooCommunicator(r, 3, "127.0.0.1", port, options, errors[r]);
      EXPECT_FALSE(comm);
    });
  for (auto &t : threads)
    t.join();
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(errors[r].find("rank 2 never arrived"), std::string::npos)
        << errors[r];
}

TEST(GlooCommunicator, NoRankZeroIsNamed) {
  GlooOptions options;
  options.timeout = std::chrono::milliseconds(300);
  std::string error;
  EXPECT_FALSE(
      createGlooCommunicator(1, 2, "127.0.0.1", freePort(), options, error));
  EXPECT_NE(error.find("rank 0 never arrived"), std::string::npos) << error;
}

TEST(GlooCommunicator, ADeadRankIsNamedAndBreaksTheCommunicator) {
  // The timeout is far away: the death is seen when the connections close.
  // Small all-reduces take Gloo's AllreduceRing, large ones its segmented
  // ring: both see it.
  for (size_t count : {100000, 400000})
    runRanks(3, [count](int r, Communicator &comm) {
      std::vector<float> x(count, 1.0f);
      // One all-reduce first: the death hits a running collective, not the
      // making of its channels.
      ASSERT_EQ(comm.allReduce(x.data(), x.data(), x.size(), LOOM_DTYPE_F32,
                               ReduceOp::Sum)
                    ->wait(),
                "");
      ASSERT_EQ(comm.barrier()->wait(), "");
      if (r == 2) {
        dropGlooCommunicatorForTesting(comm);
        return;
      }
      std::string error = comm.allReduce(x.data(), x.data(), x.size(),
                                         LOOM_DTYPE_F32, ReduceOp::Sum)
                              ->wait();
      EXPECT_NE(error.find("all_reduce of " + std::to_string(count) +
                           " f32 over all 3 ranks (sum) failed on rank " +
                           std::to_string(r) + ": rank 2 died"),
                std::string::npos)
          << error;
      // Broken from now on, at once.
      std::string later = comm.barrier()->wait();
      EXPECT_NE(later.find("broken by an earlier failure"), std::string::npos)
          << later;
      EXPECT_NE(comm.error(), "");
    });
}

TEST(GlooCommunicator, AStuckRankTimesOut) {
  runRanks(
      2,
      [](int r, Communicator &comm) {
        if (r == 1) {
          // Alive, but never takes part; leaves after rank 0 failed.
          std::this_thread::sleep_for(std::chrono::milliseconds(800));
          return;
        }
        float x = 1;
        std::string error =
            comm.allReduce(&x, &x, 1, LOOM_DTYPE_F32, ReduceOp::Sum)->wait();
        EXPECT_NE(error.find("timed out after 0.4 s"), std::string::npos)
            << error;
      },
      std::chrono::milliseconds(400));
}

TEST(GlooCommunicator, EmptyOperationsComplete) {
  runRanks(2, [](int r, Communicator &comm) {
    float x = 0;
    EXPECT_EQ(comm.allReduce(&x, &x, 0, LOOM_DTYPE_F32, ReduceOp::Sum)->wait(),
              "");
    EXPECT_EQ(comm.allGather(&x, &x, 0, LOOM_DTYPE_F32)->wait(), "");
    EXPECT_EQ(
        comm.reduceScatter(&x, &x, 0, LOOM_DTYPE_F32, ReduceOp::Sum)->wait(),
        "");
    EXPECT_EQ(comm.broadcast(&x, &x, 0, LOOM_DTYPE_F32, 0)->wait(), "");
    EXPECT_EQ(comm.send(&x, 0, LOOM_DTYPE_F32, 1 - r)->wait(), "");
    x = static_cast<float>(r + 1);
    EXPECT_EQ(comm.allReduce(&x, &x, 1, LOOM_DTYPE_F32, ReduceOp::Sum)->wait(),
              "");
    EXPECT_EQ(x, 3.0f);
  });
}

TEST(GlooCommunicator, BadArgumentsAreStatuses) {
  runRanks(2, [](int r, Communicator &comm) {
    float x = 0;
    std::string error =
        comm.allReduce(&x, &x, 1, LOOM_DTYPE_F32, ReduceOp::Sum, {0, 5})
            ->wait();
    EXPECT_NE(error.find("the group is not a sorted list"), std::string::npos)
        << error;
    EXPECT_NE(comm.send(&x, 1, LOOM_DTYPE_F32, r, 0)->wait(), "");
  });
}

TEST(GlooCommunicator, AGroupWithABadTransferFailsWhole) {
  runRanks(2, [](int r, Communicator &comm) {
    float x = 1, y = 0;
    // Empty transfers complete at once; a peer outside the job fails
    // every handle of its group, naming it, and breaks the communicator.
    std::vector<WorkPtr> empty =
        comm.sendRecvGroup({{true, &x, 0, LOOM_DTYPE_F32, 1 - r, 1},
                            {false, &y, 0, LOOM_DTYPE_F32, 1 - r, 1}});
    ASSERT_EQ(empty.size(), 2u);
    for (const WorkPtr &w : empty)
      EXPECT_EQ(w->wait(), "");
    std::vector<WorkPtr> bad =
        comm.sendRecvGroup({{true, &x, 1, LOOM_DTYPE_F32, 1 - r, 2},
                            {false, &y, 1, LOOM_DTYPE_F32, 7, 2}});
    ASSERT_EQ(bad.size(), 2u);
    for (const WorkPtr &w : bad) {
      std::string error = w->wait();
      EXPECT_NE(error.find("recv of 1 f32 from rank 7 (tag 2)"),
                std::string::npos)
          << error;
      EXPECT_NE(error.find("not another rank"), std::string::npos) << error;
    }
    EXPECT_FALSE(comm.error().empty());
  });
}

TEST(RankEnvironment, Launchers) {
  const char *vars[] = {"RANK",
                        "WORLD_SIZE",
                        "LOCAL_RANK",
                        "MASTER_ADDR",
                        "MASTER_PORT",
                        "OMPI_COMM_WORLD_RANK",
                        "OMPI_COMM_WORLD_SIZE",
                        "OMPI_COMM_WORLD_LOCAL_RANK",
                        "SLURM_PROCID",
                        "SLURM_NTASKS",
                        "SLURM_LOCALID"};
  auto clear = [&] {
    for (const char *v : vars)
      unsetenv(v);
  };
  RankEnvironment env;
  bool found = true;
  std::string error;
  clear();
  ASSERT_TRUE(rankFromEnvironment(env, found, error));
  EXPECT_FALSE(found);

  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  EXPECT_FALSE(rankFromEnvironment(env, found, error));
  EXPECT_NE(error.find("needs MASTER_ADDR and MASTER_PORT"), std::string::npos)
      << error;
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29500", 1);
  setenv("LOCAL_RANK", "1", 1);
  ASSERT_TRUE(rankFromEnvironment(env, found, error)) << error;
  EXPECT_TRUE(found);
  EXPECT_EQ(env.rank, 1);
  EXPECT_EQ(env.size, 2);
  EXPECT_EQ(env.localRank, 1);
  EXPECT_EQ(env.masterPort, 29500);
  // Under torchrun's static rendezvous its agent's store holds
  // MASTER_PORT: ours takes the next port.
  setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1);
  ASSERT_TRUE(rankFromEnvironment(env, found, error)) << error;
  EXPECT_EQ(env.masterPort, 29501);
  setenv("TORCHELASTIC_USE_AGENT_STORE", "False", 1);
  ASSERT_TRUE(rankFromEnvironment(env, found, error)) << error;
  EXPECT_EQ(env.masterPort, 29500);
  unsetenv("TORCHELASTIC_USE_AGENT_STORE");

  setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  EXPECT_FALSE(rankFromEnvironment(env, found, error));
  EXPECT_NE(error.find("disagree"), std::string::npos) << error;

  clear();
  setenv("SLURM_PROCID", "3", 1);
  setenv("SLURM_NTASKS", "2", 1);
  EXPECT_FALSE(rankFromEnvironment(env, found, error));
  EXPECT_NE(error.find("SLURM_PROCID=3 is not below SLURM_NTASKS=2"),
            std::string::npos)
      << error;
  setenv("SLURM_PROCID", "x", 1);
  EXPECT_FALSE(rankFromEnvironment(env, found, error));
  EXPECT_NE(error.find("SLURM_PROCID='x' is not a rank number"),
            std::string::npos);
  clear();
  setenv("WORLD_SIZE", "2", 1);
  EXPECT_FALSE(rankFromEnvironment(env, found, error));
  EXPECT_NE(error.find("WORLD_SIZE is set but RANK is not"), std::string::npos);
  clear();
}

} // namespace

namespace {

TEST(CommunicatorCApi, CreateBarrierRelease) {
  for (const char *v : {"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                        "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS"})
    unsetenv(v);
  loom_communicator *one = nullptr;
  ASSERT_EQ(loom_communicator_create_from_env(nullptr, &one), nullptr);
  EXPECT_EQ(loom_communicator_size(one), 1);
  EXPECT_EQ(loom_communicator_rank(one), 0);
  EXPECT_EQ(loom_communicator_barrier(one), nullptr);
  loom_communicator_release(one);

  loom_status s = loom_communicator_create(2, 2, "127.0.0.1", 1, nullptr, &one);
  EXPECT_EQ(loom_status_get_code(s), LOOM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(loom_status_message(s)).find("not below the size 2"),
            std::string::npos);
  loom_status_free(s);
  loom_communicator_options options;
  loom_communicator_options_initialize(&options);
  options.timeout_seconds = -1;
  s = loom_communicator_create(0, 2, "127.0.0.1", 1, &options, &one);
  EXPECT_EQ(loom_status_get_code(s), LOOM_INVALID_ARGUMENT);
  loom_status_free(s);

  int port = freePort();
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([r, port] {
      loom_communicator *comm = nullptr;
      loom_status s =
          loom_communicator_create(r, 2, "127.0.0.1", port, nullptr, &comm);
      ASSERT_EQ(s, nullptr) << loom_status_message(s);
      EXPECT_EQ(loom_communicator_rank(comm), r);
      EXPECT_EQ(loom_communicator_barrier(comm), nullptr);
      loom_communicator_release(comm);
    });
  for (auto &t : threads)
    t.join();
}

} // namespace

//===----------------------------------------------------------------------===//
// NCCL: one rank (the lent GPU machines have one GPU); skipped without NCCL,
// a CUDA driver and a device. Host buffers are staged through the device.
//===----------------------------------------------------------------------===//

TEST(NcclCommunicator, OneRankCollectivesOnTheGpu) {
  std::string why;
  if (!ncclAvailable(why))
    GTEST_SKIP() << why;
  NcclOptions options;
  options.timeout = std::chrono::milliseconds(30000);
  std::string error;
  std::unique_ptr<Communicator> comm =
      createNcclCommunicator(0, 1, "127.0.0.1", 0, options, error);
  ASSERT_TRUE(comm) << error;
  EXPECT_STREQ(comm->backend(), "nccl");
  std::vector<float> in = {1.5f, -2.0f, 3.25f}, out(3, 0.0f);
  EXPECT_EQ(
      comm->allReduce(in.data(), out.data(), 3, LOOM_DTYPE_F32, ReduceOp::Sum)
          ->wait(),
      "");
  EXPECT_EQ(out, in);
  std::vector<int64_t> gathered(2, 0), one = {42, 7};
  EXPECT_EQ(
      comm->allGather(one.data(), gathered.data(), 2, LOOM_DTYPE_I64)->wait(),
      "");
  EXPECT_EQ(gathered, one);
  std::vector<double> scattered(4, 0.0), whole = {1, 2, 3, 4};
  EXPECT_EQ(comm->reduceScatter(whole.data(), scattered.data(), 4,
                                LOOM_DTYPE_F64, ReduceOp::Max)
                ->wait(),
            "");
  EXPECT_EQ(scattered, whole);
  std::vector<float> b(3, 0.0f);
  EXPECT_EQ(comm->broadcast(in.data(), b.data(), 3, LOOM_DTYPE_F32, 0)->wait(),
            "");
  EXPECT_EQ(b, in);
  EXPECT_EQ(comm->barrier()->wait(), "");
  // A step's sends and receives as one group (ncclGroupStart/End): one
  // rank sends to itself, which NCCL pairs only inside a group. More than
  // ten tensors of different sizes, each received at its own place (a
  // pair's messages meet in issue order), the last one empty.
  {
    const int n = 12;
    std::vector<std::vector<float>> sent(n), got(n);
    std::vector<Transfer> transfers;
    for (int i = 0; i < n; ++i) {
      size_t count = i == n - 1 ? 0 : static_cast<size_t>(1000 * (i + 1));
      sent[i].assign(count, static_cast<float>(i + 1));
      got[i].assign(count, -1.0f);
      transfers.push_back(
          {true, sent[i].data(), count, LOOM_DTYPE_F32, 0, uint32_t(i)});
    }
    for (int i = 0; i < n; ++i)
      transfers.push_back({false, got[i].data(), got[i].size(), LOOM_DTYPE_F32,
                           0, uint32_t(i)});
    std::vector<WorkPtr> works = comm->sendRecvGroup(transfers);
    ASSERT_EQ(works.size(), transfers.size());
    for (const WorkPtr &w : works)
      EXPECT_EQ(w->wait(), "");
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(got[i], sent[i]) << "tensor " << i;
  }
  // Ordered on the device (orderedCollective): a stream of this GPU's
  // primary context writes the input and records `ready`; NCCL's stream
  // waits for it, runs the all-reduce and records `done`, which the
  // stream waits for before it reads the output back. The host waits only
  // for the issue, then for the completion at the end. The input is large
  // and written on the stream right before, so a missing wait would read
  // the zeros the buffer held before.
  {
    using namespace loom::cuda;
    std::string e;
    const Driver *cu = driver(e);
    ASSERT_TRUE(cu) << e;
    CUresult (*waitEvent)(CUstream, CUevent, unsigned) = nullptr;
    ASSERT_TRUE(loom::dl::lookup(cu->handle, "cuStreamWaitEvent", waitEvent,
                                 "libcuda.so.1", e))
        << e;
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    ASSERT_EQ(cu->cuDeviceGet(&dev, 0), 0);
    ASSERT_EQ(cu->cuDevicePrimaryCtxRetain(&ctx, dev), 0);
    ASSERT_EQ(cu->cuCtxSetCurrent(ctx), 0);
    const size_t n = 8 << 20; // 32 MiB of f32
    CUstream stream = nullptr;
    CUevent ready = nullptr, done = nullptr;
    CUdeviceptr din = 0, dout = 0;
    void *host = nullptr;
    ASSERT_EQ(cu->cuStreamCreate(&stream, api::kStreamNonBlocking), 0);
    ASSERT_EQ(cu->cuEventCreate(&ready, api::kEventDefault), 0);
    ASSERT_EQ(cu->cuEventCreate(&done, api::kEventDefault), 0);
    ASSERT_EQ(cu->cuMemAlloc(&din, n * 4), 0);
    ASSERT_EQ(cu->cuMemAlloc(&dout, n * 4), 0);
    ASSERT_EQ(cu->cuMemAllocHost(&host, n * 4), 0);
    float *h = static_cast<float *>(host);
    ASSERT_EQ(cu->cuMemsetD8Async(din, 0, n * 4, stream), 0);
    ASSERT_EQ(cu->cuMemsetD8Async(dout, 0xff, n * 4, stream), 0);
    ASSERT_EQ(cu->cuStreamSynchronize(stream), 0);
    for (size_t i = 0; i < n; ++i)
      h[i] = static_cast<float>(i % 1000) + 0.5f;
    ASSERT_EQ(cu->cuMemcpyHtoDAsync(din, host, n * 4, stream), 0);
    ASSERT_EQ(cu->cuEventRecord(ready, stream), 0);
    CollectiveCall call;
    call.kind = CollectiveCall::AllReduce;
    call.in = reinterpret_cast<const void *>(din);
    call.out = reinterpret_cast<void *>(dout);
    call.count = n;
    call.dtype = LOOM_DTYPE_F32;
    OrderedWork w = comm->orderedCollective(call, {0, ready, done});
    ASSERT_EQ(w.issued->wait(), "");
    EXPECT_NE(w.issued, w.completed); // issued, not necessarily complete
    ASSERT_EQ(waitEvent(stream, done, 0), 0);
    ASSERT_EQ(cu->cuMemcpyDtoHAsync(host, dout, n * 4, stream), 0);
    ASSERT_EQ(cu->cuStreamSynchronize(stream), 0);
    EXPECT_EQ(w.completed->wait(), "");
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i)
      wrong += h[i] != static_cast<float>(i % 1000) + 0.5f;
    EXPECT_EQ(wrong, 0u);
    // Another GPU than the communicator's is refused, naming both.
    OrderedWork other = comm->orderedCollective(call, {7, ready, done});
    std::string refused = other.issued->wait();
    EXPECT_NE(refused.find("the CUDA program runs on GPU 7 but this rank's "
                           "NCCL communicator on GPU 0"),
              std::string::npos)
        << refused;
    EXPECT_EQ(other.completed->wait(), refused);
    cu->cuMemFreeHost(host);
    cu->cuMemFree(din);
    cu->cuMemFree(dout);
    cu->cuEventDestroy(ready);
    cu->cuEventDestroy(done);
    cu->cuStreamDestroy(stream);
    cu->cuDevicePrimaryCtxRelease(dev);
  }
  // A bad argument breaks it, and says what and where.
  std::string bad =
      comm->broadcast(in.data(), b.data(), 3, LOOM_DTYPE_F32, 5)->wait();
  EXPECT_NE(bad.find("root 5 is not in the group"), std::string::npos) << bad;
  EXPECT_NE(comm->barrier()->wait().find("broken"), std::string::npos);
}

TEST(NcclCommunicator, WithoutAGpuTheStatusSaysWhatIsMissing) {
  std::string why;
  if (ncclAvailable(why))
    GTEST_SKIP() << "NCCL and a GPU are here";
  loom_communicator_options options;
  loom_communicator_options_initialize(&options);
  options.backend = "nccl";
  loom_communicator *comm = nullptr;
  loom_status s =
      loom_communicator_create(0, 1, "127.0.0.1", 0, &options, &comm);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(loom_status_get_code(s), LOOM_UNAVAILABLE);
  std::string message = loom_status_message(s);
  EXPECT_TRUE(message.find("NCCL not available") != std::string::npos ||
              message.find("CUDA") != std::string::npos)
      << message;
  loom_status_free(s);
  EXPECT_EQ(comm, nullptr);
}

TEST(Communicator, UnknownBackendIsABadArgument) {
  loom_communicator_options options;
  loom_communicator_options_initialize(&options);
  options.backend = "mpi";
  loom_communicator *comm = nullptr;
  loom_status s =
      loom_communicator_create(0, 1, "127.0.0.1", 0, &options, &comm);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(loom_status_get_code(s), LOOM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(loom_status_message(s)).find("'gloo' or 'nccl'"),
            std::string::npos);
  loom_status_free(s);
}
