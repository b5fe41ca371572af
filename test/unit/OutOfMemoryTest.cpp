//===- OutOfMemoryTest.cpp - out of memory is a status, never an abort ----===//
//
// A run whose code asks for a scratch buffer that cannot be allocated
// returns to the runtime (RunContext::call) instead of aborting; a tensor
// too large to allocate is LOOM_OUT_OF_MEMORY; the preallocated status that
// stands in when even a status cannot be allocated survives being freed.
// The sizes asked for (2^61 bytes) are past any address space, so the
// allocations fail on every machine without a hook.
//
//===----------------------------------------------------------------------===//

#include "loom/common/CodegenAbi.h"
#include "loom/runtime.h"
#include "runtime/src/RunContext.h"
#include "runtime/src/Session.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

using loom::runtime::RunContext;

namespace {

/// MLIR's descriptor of a memref<?xi8>, as loom_rt_slot fills it.
struct Bytes1D {
  void *allocated, *aligned;
  int64_t offset, size, stride;
};

constexpr int64_t kHuge = int64_t(1) << 61;

} // namespace

extern "C" void LOOM_ABI_CIFACE(LOOM_ABI_RT_SLOT)(Bytes1D *result, int64_t slot,
                                                  int64_t bytes);

namespace {

/// A stand-in for generated code: asks for slot 1 of args[0] bytes, then
/// writes through it (never reached when the slot cannot be allocated).
void entry(void **args) {
  int64_t bytes = *static_cast<int64_t *>(args[0]);
  Bytes1D buffer;
  LOOM_ABI_CIFACE(LOOM_ABI_RT_SLOT)(&buffer, 1, bytes);
  static_cast<char *>(buffer.aligned)[bytes - 1] = 1;
  *static_cast<bool *>(args[1]) = true;
}

TEST(OutOfMemoryTest, ScratchSlotReturnsToTheRun) {
  RunContext context;
  int64_t bytes = kHuge;
  bool finished = false;
  void *args[] = {&bytes, &finished};
  EXPECT_FALSE(context.call(entry, args));
  EXPECT_FALSE(finished);
  std::string message = context.takeOutOfMemory();
  EXPECT_NE(message.find("out of memory"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(kHuge) + " bytes"), std::string::npos)
      << message;

  // The context stays usable: the next run of a size that fits finishes.
  bytes = 4096;
  EXPECT_TRUE(context.call(entry, args));
  EXPECT_TRUE(finished);
  EXPECT_EQ(context.takeOutOfMemory(), "");
  EXPECT_GE(context.bytes(), 4096u);
}

// A caller's own OpenMP region around the run (each thread running its
// own) does not stop the way back: only a region the code opened inside
// the run does (its team would wait for the thread that left).
TEST(OutOfMemoryTest, ScratchSlotReturnsInsideTheCallersParallelRegion) {
  int threads = 0, returned = 0;
#pragma omp parallel num_threads(2) reduction(+ : threads, returned)
  {
    RunContext context;
    int64_t bytes = kHuge;
    bool finished = false;
    void *args[] = {&bytes, &finished};
    threads = 1;
    returned = !context.call(entry, args) && !finished;
  }
  EXPECT_GE(threads, 1);
  EXPECT_EQ(returned, threads);
}

TEST(OutOfMemoryTest, HugeTensorIsOutOfMemory) {
  int64_t shape[] = {kHuge / 4};
  loom_tensor *t = nullptr;
  loom_status s = loom_tensor_create(LOOM_DTYPE_F32, 1, shape, &t);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(loom_status_get_code(s), LOOM_OUT_OF_MEMORY);
  EXPECT_NE(std::string(loom_status_message(s)).find("out of memory"),
            std::string::npos)
      << loom_status_message(s);
  EXPECT_EQ(t, nullptr);
  loom_status_free(s);
}

TEST(OutOfMemoryTest, PreallocatedStatusSurvivesFree) {
  loom_status s = loom::runtime::outOfMemoryStatus();
  ASSERT_NE(s, nullptr); // never reads as success
  EXPECT_EQ(loom_status_get_code(s), LOOM_OUT_OF_MEMORY);
  EXPECT_NE(std::string(loom_status_message(s)).find("out of memory"),
            std::string::npos);
  // Freed (by every caller that got it), it stays as it was.
  loom_status_free(s);
  loom_status_free(s);
  EXPECT_EQ(loom_status_get_code(loom::runtime::outOfMemoryStatus()),
            LOOM_OUT_OF_MEMORY);
  // A prefix is not written into the shared object.
  EXPECT_EQ(loom::runtime::prefixStatus(s, "model.loom: "), s);
  EXPECT_EQ(std::string(loom_status_message(s)).find("model.loom"),
            std::string::npos);
}

TEST(OutOfMemoryTest, MadeStatusCarriesCodeAndMessage) {
  loom_status s =
      loom::runtime::makeStatus(LOOM_OUT_OF_MEMORY, "out of memory: x");
  EXPECT_EQ(loom_status_get_code(s), LOOM_OUT_OF_MEMORY);
  EXPECT_STREQ(loom_status_message(s), "out of memory: x");
  s = loom::runtime::prefixStatus(s, "p: ");
  EXPECT_STREQ(loom_status_message(s), "p: out of memory: x");
  loom_status_free(s);
}

} // namespace
