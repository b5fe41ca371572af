//===- ThreadPool.cpp - the CPU threads of the generated loops ------------===//

#include "runtime/src/ThreadPool.h"

#include "loom/common/CodegenAbi.h"

#include <omp.h>

#include <algorithm>

namespace loom::runtime {

static thread_local int current = 0;
int currentThreads() { return current; }
void setCurrentThreads(int threads) { current = threads; }

/// Work below this many elements per chunk stays on fewer threads.
static constexpr int64_t kMinChunkWork = 16 * 1024;

void parallelFor(ChunkFn fn, void *ctx, int64_t n, int64_t grain, int threads) {
  int64_t work = n * std::max<int64_t>(1, grain);
  int64_t chunks =
      std::min<int64_t>({static_cast<int64_t>(std::max(1, threads)), n,
                         std::max<int64_t>(1, work / kMinChunkWork)});
  if (chunks <= 1) {
    fn(ctx, 0, n);
    return;
  }
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int64_t c = 0; c < chunks; ++c)
    fn(ctx, n * c / chunks, n * (c + 1) / chunks);
}

} // namespace loom::runtime

extern "C" __attribute__((visibility("default"))) void
LOOM_ABI_RT_PARALLEL_FOR(loom::runtime::ChunkFn fn, void *ctx, int64_t n,
                         int64_t grain) {
  if (n <= 0)
    return;
  int threads = loom::runtime::currentThreads();
  if (threads <= 0)
    threads = omp_get_max_threads();
  loom::runtime::parallelFor(fn, ctx, n, grain, threads);
}
