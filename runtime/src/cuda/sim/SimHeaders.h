//===- SimHeaders.h - the host side of a generated CUDA source --*- C++ -*-===//
//
// The headers a generated CUDA source (compiler/codegen/cuda/CudaPrelude.h
// and the kernels after it) is compiled with as host C++ by the CUDA
// simulator (runtime/src/cuda/sim/SimCompiler.cpp): loom_sim.h, included
// first, runs each block's threads cooperatively on fibers (a context
// switch of a few instructions: __syncthreads and warp shuffles yield to
// the block's scheduler, which releases a barrier once every live thread
// of the block, or of the warp, waits at it); cuda_fp16.h and cuda_bf16.h
// give the 16-bit float types and their conversions (to nearest even).
// `__shared__` variables are function statics: blocks run one at a time.
// x86-64 only (the context switch); elsewhere the simulator refuses.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_SIM_SIMHEADERS_H
#define LOOM_RUNTIME_CUDA_SIM_SIMHEADERS_H

namespace loom::cuda::sim {

inline constexpr const char *kSimHeader =
    R"sim(// loom_sim.h: the host side of a generated CUDA source (loom-run --device
// cuda-sim). Each block's threads run cooperatively on fibers; barriers and
// warp shuffles switch between them.
#ifndef LOOM_SIM_H
#define LOOM_SIM_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <tuple>
#include <utility>

#define __device__
#define __global__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define LOOM_KERNEL extern "C"

struct uint3 { unsigned x = 0, y = 0, z = 0; };
struct dim3 { unsigned x = 1, y = 1, z = 1; };
inline uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
inline float __expf(float x) { return expf(x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }

namespace loom_sim {
enum State : unsigned char { Ready, AtBlock, AtWarp, Done };
struct Fiber { void *sp; State state; };
constexpr unsigned kMaxThreads = 1024;
constexpr size_t kStack = 64 * 1024, kPage = 4096;
struct Sched {
  void *mainSp = nullptr;
  Fiber fibers[kMaxThreads];
  unsigned cur = 0, threads = 0;
  bool fibered = false;
  char *stacks = nullptr;
  void (*body)(void *) = nullptr;
  void *ctx = nullptr;
  unsigned long long lanes[kMaxThreads][2];
  const char *kernel = "";
  char error[512] = {0};
};
inline Sched S;
inline void fail(const char *what) {
  if (S.error[0]) return;
  snprintf(S.error, sizeof(S.error), "kernel %s, block %u, thread %u: %s",
           S.kernel, blockIdx.x, threadIdx.x, what);
}
} // namespace loom_sim

// The context switch (x86-64 System V): callee-saved registers, MXCSR and
// the x87 control word on the old stack; *save = its top; then the new one.
extern "C" void loom_sim_switch(void **save, void *load);
asm(R"(
.text
.p2align 4
.hidden loom_sim_switch
.globl loom_sim_switch
.type loom_sim_switch,@function
loom_sim_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size loom_sim_switch, .-loom_sim_switch
)");

namespace loom_sim {
inline void yield(State s) {
  Fiber &f = S.fibers[S.cur];
  f.state = s;
  loom_sim_switch(&f.sp, S.mainSp);
}
[[noreturn]] inline void fiberEntry() {
  S.body(S.ctx);
  yield(Done);
  __builtin_unreachable();
}
inline void *initialFrame(unsigned t) {
  // Stack t: a guard page, then kStack bytes; its top holds the frame
  // loom_sim_switch pops: MXCSR/FPU word, six registers, the entry.
  char *top = S.stacks + (size_t)(t + 1) * (kStack + kPage);
  void **sp = (void **)top;
  *--sp = nullptr;                     // (alignment: entry sees rsp % 16 == 8)
  *--sp = (void *)&fiberEntry;         // ret address
  for (int i = 0; i < 6; ++i) *--sp = nullptr;
  unsigned words[2];
  __asm__ volatile("stmxcsr %0" : "=m"(words[0]));
  __asm__ volatile("fnstcw %0" : "=m"(words[1]));
  *--sp = nullptr;
  memcpy(sp, words, 8);
  return sp;
}
inline bool ensureStacks() {
  if (S.stacks) return true;
  size_t bytes = (size_t)kMaxThreads * (kStack + kPage);
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  S.stacks = (char *)p;
  for (unsigned t = 0; t < kMaxThreads; ++t)
    mprotect(S.stacks + (size_t)t * (kStack + kPage), kPage, PROT_NONE);
  return true;
}
inline void setThread(unsigned t) {
  threadIdx.x = t % blockDim.x;
  threadIdx.y = (t / blockDim.x) % blockDim.y;
  threadIdx.z = t / (blockDim.x * blockDim.y);
}
inline unsigned linear() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
// One block on fibers: run every ready thread to its next barrier, then
// release the barriers every live thread (of the warp, of the block) waits at.
inline void runBlockFibered() {
  unsigned n = S.threads;
  for (unsigned t = 0; t < n; ++t) { S.fibers[t].sp = initialFrame(t); S.fibers[t].state = Ready; }
  for (;;) {
    for (unsigned t = 0; t < n; ++t)
      if (S.fibers[t].state == Ready) {
        S.cur = t;
        setThread(t);
        loom_sim_switch(&S.mainSp, S.fibers[t].sp);
      }
    unsigned live = 0, atBlock = 0;
    bool released = false;
    for (unsigned w = 0; w < n; w += 32) {
      unsigned wl = 0, ww = 0, end = w + 32 < n ? w + 32 : n;
      for (unsigned t = w; t < end; ++t) {
        State s = S.fibers[t].state;
        wl += s != Done; ww += s == AtWarp; atBlock += s == AtBlock;
      }
      live += wl;
      if (wl && ww == wl) {
        for (unsigned t = w; t < end; ++t) S.fibers[t].state = Ready;
        released = true;
      }
    }
    if (!live) return;
    if (released) continue;
    if (atBlock == live) {
      for (unsigned t = 0; t < n; ++t) if (S.fibers[t].state == AtBlock) S.fibers[t].state = Ready;
      continue;
    }
    for (unsigned t = 0; t < n; ++t)
      if (S.fibers[t].state != Done) { setThread(t); break; }
    fail("deadlock: some threads wait at __syncthreads, others at a warp shuffle");
    return;
  }
}
template <class F> void trampoline(void *f) { (*(F *)f)(); }
template <class... A, size_t... I>
int launch(void (*k)(A...), void **params, const unsigned *grid, const unsigned *block,
           bool fibered, const char *name, std::index_sequence<I...>) {
  std::tuple<A...> args;
  ((memcpy(&std::get<I>(args), params[I], sizeof(A))), ...);
  auto body = [&] { k(std::get<I>(args)...); };
  S.error[0] = 0;
  S.kernel = name;
  S.fibered = fibered;
  gridDim = {grid[0], grid[1], grid[2]};
  blockDim = {block[0], block[1], block[2]};
  S.threads = block[0] * block[1] * block[2];
  if (S.threads == 0 || S.threads > kMaxThreads) { fail("block size out of range"); return 1; }
  if (fibered && !ensureStacks()) { fail("no memory for the fibers' stacks"); return 1; }
  S.body = &trampoline<decltype(body)>;
  S.ctx = &body;
  for (unsigned bz = 0; bz < grid[2]; ++bz)
    for (unsigned by = 0; by < grid[1]; ++by)
      for (unsigned bx = 0; bx < grid[0]; ++bx) {
        blockIdx = {bx, by, bz};
        if (fibered) {
          runBlockFibered();
        } else {
          for (unsigned t = 0; t < S.threads; ++t) { setThread(t); body(); }
        }
        if (S.error[0]) return 1;
      }
  return 0;
}
template <class... A>
int run(void (*k)(A...), void **p, const unsigned *g, const unsigned *b, bool fibered, const char *name) {
  return launch(k, p, g, b, fibered, name, std::index_sequence_for<A...>());
}
} // namespace loom_sim
extern "C" __attribute__((visibility("default"))) const char *loom_sim_error() { return loom_sim::S.error; }

inline void __syncthreads() {
  if (!loom_sim::S.fibered) { loom_sim::fail("__syncthreads in a kernel run without fibers"); return; }
  loom_sim::yield(loom_sim::AtBlock);
}
namespace loom_sim {
// A warp shuffle: every lane of the warp posts `v`, then reads lane
// `srcLane` of its warp.
template <class T> T exchange(T v, unsigned srcLane) {
  static_assert(sizeof(T) <= 16, "shuffle of at most 16 bytes");
  if (!S.fibered) { fail("a warp shuffle in a kernel run without fibers"); return v; }
  unsigned t = linear(), src = (t & ~31u) | (srcLane & 31u);
  memcpy(S.lanes[t], &v, sizeof(T));
  yield(AtWarp);
  T r = v;
  if (src < S.threads) memcpy(&r, S.lanes[src], sizeof(T));
  else fail("a warp shuffle reads a lane past the block's threads");
  yield(AtWarp);
  return r;
}
} // namespace loom_sim
template <class T> T __shfl_xor_sync(unsigned, T v, int mask, int = 32) {
  return loom_sim::exchange(v, (loom_sim::linear() & 31u) ^ (unsigned)mask);
}
template <class T> T __shfl_sync(unsigned, T v, int srcLane, int = 32) {
  return loom_sim::exchange(v, (unsigned)srcLane);
}
inline float atomicAdd(float *p, float v) { float o = *p; *p = o + v; return o; }
inline double atomicAdd(double *p, double v) { double o = *p; *p = o + v; return o; }
inline int atomicAdd(int *p, int v) { int o = *p; *p = o + v; return o; }
inline unsigned atomicAdd(unsigned *p, unsigned v) { unsigned o = *p; *p = o + v; return o; }
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) { unsigned long long o = *p; *p = o + v; return o; }
inline unsigned atomicCAS(unsigned *p, unsigned c, unsigned v) { unsigned o = *p; if (o == c) *p = v; return o; }
inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long c, unsigned long long v) { unsigned long long o = *p; if (o == c) *p = v; return o; }
#endif
)sim";

inline constexpr const char *kFp16Header = R"sim(#ifndef LOOM_SIM_FP16_H
#define LOOM_SIM_FP16_H
#include <string.h>
struct __half_raw { unsigned short x; };
struct __half {
  unsigned short x;
  __half() = default;
  constexpr __half(__half_raw r) : x(r.x) {}
};
// Conversions through the host compiler's _Float16 (to nearest even).
inline float __half2float(__half h) { _Float16 f; memcpy(&f, &h.x, 2); return (float)f; }
inline __half __float2half_rn(float v) { _Float16 f = (_Float16)v; __half h; memcpy(&h.x, &f, 2); return h; }
inline __half atomicAdd(__half *p, __half v) { __half o = *p; *p = __float2half_rn(__half2float(o) + __half2float(v)); return o; }
#endif
)sim";

inline constexpr const char *kBf16Header = R"sim(#ifndef LOOM_SIM_BF16_H
#define LOOM_SIM_BF16_H
#include <string.h>
struct __nv_bfloat16_raw { unsigned short x; };
struct __nv_bfloat16 {
  unsigned short x;
  __nv_bfloat16() = default;
  constexpr __nv_bfloat16(__nv_bfloat16_raw r) : x(r.x) {}
};
inline float __bfloat162float(__nv_bfloat16 h) { unsigned b = (unsigned)h.x << 16; float f; memcpy(&f, &b, 4); return f; }
inline __nv_bfloat16 __float2bfloat16_rn(float v) {
  unsigned b; memcpy(&b, &v, 4);
  __nv_bfloat16 h;
  if ((b & 0x7fffffffu) > 0x7f800000u) h.x = (unsigned short)((b >> 16) | 0x40u); // NaN stays NaN
  else h.x = (unsigned short)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
  return h;
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16 *p, __nv_bfloat16 v) { __nv_bfloat16 o = *p; *p = __float2bfloat16_rn(__bfloat162float(o) + __bfloat162float(v)); return o; }
#endif
)sim";

} // namespace loom::cuda::sim

#endif // LOOM_RUNTIME_CUDA_SIM_SIMHEADERS_H
