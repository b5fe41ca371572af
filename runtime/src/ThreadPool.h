//===- ThreadPool.h - the CPU threads of the generated loops --------------===//
//
// The generated code runs each loop nest with a parallel outer loop through
// loom_rt_parallel_for(fn, ctx, n, grain): [0, n) is split into chunks run
// on OpenMP's threads -- the same threads oneDNN's GEMMs use, so the two
// never compete for cores (a separate pool lost time to OpenMP's threads
// spinning after each GEMM). Small loops stay on the calling thread.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_THREADPOOL_H
#define LOOM_RUNTIME_THREADPOOL_H

#include <cstdint>

namespace loom::runtime {

using ChunkFn = void (*)(void *ctx, int64_t lo, int64_t hi);

/// Runs fn over [0, n) on up to `threads` threads; `grain` is the work per
/// index, to keep small loops on fewer threads.
void parallelFor(ChunkFn fn, void *ctx, int64_t n, int64_t grain, int threads);

/// The thread count of the run on this thread (0: not in a run).
int currentThreads();
void setCurrentThreads(int threads);

} // namespace loom::runtime

#endif // LOOM_RUNTIME_THREADPOOL_H
