//===- allreduce_bench.cpp - all-reduce bus bandwidth: Loom vs plain Gloo -===//
//
// One rank of the benchmark (bench/distributed/run.sh starts them under
// loom-launch). For each size it times, in alternating rounds, Loom's Gloo
// communicator (an asynchronous all-reduce queued to its worker and waited
// for, as the runtime's collective ABI does) and a plain Gloo loop of
// gloo::AllreduceRing<float> over a context of its own (FileStore
// rendezvous), both f32 sum, both over loopback TCP. Rank 0 prints, per
// size, the median time of the rounds and the bus bandwidth
// (bytes * 2 (n - 1) / n / time, as nccl-tests), and Loom / Gloo.
//
// usage: allreduce_bench STORE_DIR [--rounds R] [--sizes 1024,65536,...]
//
//===----------------------------------------------------------------------===//

#include "runtime/src/collectives/GlooCommunicator.h"

#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_one.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace loom::runtime::collectives;
using Clock = std::chrono::steady_clock;

static int envInt(const char *name) {
  const char *v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s STORE_DIR [--rounds R] [--sizes N,...]\n",
                 argv[0]);
    return 2;
  }
  std::string storeDir = argv[1];
  int rounds = 5;
  std::vector<size_t> sizes = {256, 4096, 65536, 1 << 20, 4 << 20};
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--sizes")) {
      sizes.clear();
      for (const char *p = argv[i + 1]; *p;) {
        sizes.push_back(std::strtoul(p, const_cast<char **>(&p), 10));
        if (*p == ',')
          ++p;
      }
    }
  }
  int rank = envInt("RANK"), size = envInt("WORLD_SIZE");
  const char *addr = std::getenv("MASTER_ADDR");
  int port = envInt("MASTER_PORT");
  if (rank < 0 || size < 2 || !addr || port < 1) {
    std::fprintf(stderr, "run under loom-launch --nproc N (N >= 2)\n");
    return 2;
  }

  // Loom's communicator.
  std::string error;
  auto comm = createGlooCommunicator(rank, size, addr, port, {}, error);
  if (!comm) {
    std::fprintf(stderr, "rank %d: %s\n", rank, error.c_str());
    return 1;
  }
  // Plain Gloo: its own context and pairs.
  std::shared_ptr<gloo::rendezvous::Context> ctx;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(storeDir);
    ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
    ctx->connectFullMesh(store, dev);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "rank %d: plain gloo: %s\n", rank, e.what());
    return 1;
  }

  if (rank == 0) {
    std::printf("all-reduce f32 sum, %d ranks over loopback, median of %d "
                "rounds\n",
                size, rounds);
    std::printf("%10s %6s %11s %11s %13s %13s %10s\n", "bytes", "iters",
                "loom ms", "gloo ms", "loom GB/s", "gloo GB/s", "loom/gloo");
  }
  for (size_t count : sizes) {
    size_t bytes = count * sizeof(float);
    int iters = static_cast<int>(
        std::clamp<size_t>((size_t(64) << 20) / std::max<size_t>(bytes, 1),
                           size_t(5), size_t(200)));
    std::vector<float> a(count, 1.0f), b(count, 1.0f);
    gloo::AllreduceRing<float> ring(ctx, {b.data()}, static_cast<int>(count));
    gloo::BarrierAllToOne ctxBarrier(ctx);
    std::vector<double> loomMs, glooMs;
    // One warm-up round each, then alternating timed rounds.
    for (int r = -1; r < rounds; ++r) {
      if (!comm->barrier()->wait().empty())
        return 1;
      Clock::time_point t0 = Clock::now();
      for (int k = 0; k < iters; ++k) {
        std::string e = comm->allReduce(a.data(), a.data(), count,
                                        LOOM_DTYPE_F32, ReduceOp::Sum)
                            ->wait();
        if (!e.empty()) {
          std::fprintf(stderr, "rank %d: %s\n", rank, e.c_str());
          return 1;
        }
      }
      double loom =
          std::chrono::duration<double, std::milli>(Clock::now() - t0).count() /
          iters;
      ctxBarrier.run();
      t0 = Clock::now();
      for (int k = 0; k < iters; ++k)
        ring.run();
      double gloo =
          std::chrono::duration<double, std::milli>(Clock::now() - t0).count() /
          iters;
      if (r >= 0) {
        loomMs.push_back(loom);
        glooMs.push_back(gloo);
      }
      // Keep the values small (sums of ones grow by n per iteration).
      std::fill(a.begin(), a.end(), 1.0f);
      std::fill(b.begin(), b.end(), 1.0f);
    }
    if (rank == 0) {
      double lm = median(loomMs), gm = median(glooMs);
      double factor = 2.0 * (size - 1) / size;
      double lbw = bytes * factor / (lm * 1e6),
             gbw = bytes * factor / (gm * 1e6);
      std::printf("%10zu %6d %11.4f %11.4f %13.3f %13.3f %10.2f\n", bytes,
                  iters, lm, gm, lbw, gbw, lbw / gbw);
      std::fflush(stdout);
    }
  }
  return 0;
}
