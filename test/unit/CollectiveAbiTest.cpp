//===- CollectiveAbiTest.cpp - the generated code's collective calls ------===//
//
// The ABI of docs/distributed.md, called as the generated code calls it:
// through the symbols libloom_runtime.so exports, with unranked memref
// descriptors. Without a communicator every kind is a copy (G = 1); bad
// calls fail the run with a message, never crash.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/RunContext.h"
#include "runtime/src/collectives/Nccl.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdint>
#include <string>
#include <vector>

using loom::runtime::ActiveRun;
using loom::runtime::RunContext;
using loom::runtime::collectives::Group;
using loom::runtime::collectives::meshGroup;
using loom::runtime::collectives::Unranked;

namespace {

using StartFn = int64_t (*)(Unranked *, Unranked *, int64_t, int64_t, int64_t,
                            int64_t);
using WaitFn = void (*)(int64_t, Unranked *, Unranked *);

/// The exported symbols, looked up as the loaded code finds them.
template <typename Fn> Fn symbol(const std::string &name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name.c_str()));
}

/// A 1-D descriptor over `data`.
struct Desc1D {
  explicit Desc1D(void *data, int64_t n)
      : words{reinterpret_cast<int64_t>(data), reinterpret_cast<int64_t>(data),
              0, n, 1},
        unranked{1, words} {}
  int64_t words[5];
  Unranked unranked;
};

TEST(CollectiveAbi, EveryDtypeIsExported) {
  for (const char *t : {"f32", "f16", "bf16", "f64", "i64", "i32", "i8"}) {
    EXPECT_NE(symbol<StartFn>(std::string("_mlir_ciface_loom_rt_collective_"
                                          "start_") +
                              t),
              nullptr)
        << t;
    EXPECT_NE(symbol<WaitFn>(std::string("_mlir_ciface_loom_rt_collective_"
                                         "wait_") +
                             t),
              nullptr)
        << t;
  }
}

TEST(CollectiveAbi, OneRankEveryKindIsACopy) {
  auto start = symbol<StartFn>("_mlir_ciface_loom_rt_collective_start_f32");
  auto wait = symbol<WaitFn>("_mlir_ciface_loom_rt_collective_wait_f32");
  ASSERT_TRUE(start && wait);
  RunContext context;
  ActiveRun active(&context);
  context.collectives().begin(nullptr, {1, 1});
  for (int64_t kind = 0; kind < 5; ++kind) {
    std::vector<float> in = {1, 2, 3, 4}, out(4, 0);
    Desc1D i(in.data(), 4), o(out.data(), 4);
    int64_t h = start(&i.unranked, &o.unranked, kind, /*f32*/ 1, 0, 3);
    EXPECT_GE(h, 0) << kind;
    wait(h, &i.unranked, &o.unranked);
    EXPECT_EQ(out, in) << "kind " << kind;
  }
  EXPECT_EQ(context.collectives().finish(), "");
}

TEST(CollectiveAbi, InPlaceAndOtherDtypes) {
  auto start = symbol<StartFn>("_mlir_ciface_loom_rt_collective_start_i64");
  RunContext context;
  ActiveRun active(&context);
  context.collectives().begin(nullptr, {});
  std::vector<int64_t> buf = {5, 6, 7};
  Desc1D d(buf.data(), 3);
  EXPECT_GE(start(&d.unranked, &d.unranked, 0, /*i64*/ 7, 0, 0), 0);
  EXPECT_EQ(buf, (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(context.collectives().finish(), "");
}

TEST(CollectiveAbi, BadCallsFailTheRun) {
  auto start = symbol<StartFn>("_mlir_ciface_loom_rt_collective_start_f32");
  auto wait = symbol<WaitFn>("_mlir_ciface_loom_rt_collective_wait_f32");
  RunContext context;
  ActiveRun active(&context);
  std::vector<float> in(4), out(3);
  Desc1D i(in.data(), 4), o(out.data(), 3);
  struct Case {
    int64_t kind, dtype, op, axes;
    const char *message;
  } cases[] = {
      {0, 1, 0, 0, "do not fit a group of 1"},
      {7, 1, 0, 0, "unknown kind 7"},
      {0, 9, 0, 0, "unsupported dtype 9"},
      {2, 1, 5, 0, "unknown reduction 5"},
      {3, 1, 1, 0, "root 1 is not in a group of 1"},
  };
  for (const Case &c : cases) {
    context.collectives().begin(nullptr, {});
    EXPECT_EQ(start(&i.unranked, &o.unranked, c.kind, c.dtype, c.op, c.axes),
              -1);
    // Later collectives of a failed run fail at once.
    EXPECT_EQ(start(&i.unranked, &i.unranked, 0, 1, 0, 0), -1);
    wait(-1, &i.unranked, &o.unranked);
    std::string failure = context.collectives().finish();
    EXPECT_NE(failure.find(c.message), std::string::npos) << failure;
  }
  context.collectives().begin(nullptr, {});
  wait(3, &i.unranked, &o.unranked);
  EXPECT_NE(context.collectives().finish().find("unknown handle 3"),
            std::string::npos);
}

TEST(CollectiveAbi, AllSliceTakesTheRanksChunk) {
  // Outside a runtime run the code still works on a thread-local context.
  auto start = symbol<StartFn>("_mlir_ciface_loom_rt_collective_start_i8");
  std::vector<int8_t> in = {1, 2}, out(2);
  Desc1D i(in.data(), 2), o(out.data(), 2);
  EXPECT_GE(start(&i.unranked, &o.unranked, 4, /*i8*/ 3, 0, 0), 0);
  EXPECT_EQ(out, in);
  EXPECT_EQ(RunContext::current().collectives().finish(), "");
}

TEST(MeshGroup, RowMajorGroups) {
  Group g;
  std::string error;
  // data = 2, tensor = 2: rank 3 is at (1, 1).
  ASSERT_TRUE(meshGroup({2, 2}, 3, 0b10, g, error));
  EXPECT_EQ(g, (Group{2, 3}));
  ASSERT_TRUE(meshGroup({2, 2}, 3, 0b01, g, error));
  EXPECT_EQ(g, (Group{1, 3}));
  ASSERT_TRUE(meshGroup({2, 2}, 0, 0b01, g, error));
  EXPECT_EQ(g, (Group{0, 2}));
  ASSERT_TRUE(meshGroup({2, 2}, 1, 0b11, g, error));
  EXPECT_EQ(g, (Group{0, 1, 2, 3}));
  ASSERT_TRUE(meshGroup({2, 3}, 4, 0b00, g, error));
  EXPECT_EQ(g, (Group{4}));
  EXPECT_FALSE(meshGroup({2, 2}, 0, 0b100, g, error));
  EXPECT_NE(error.find("names an axis"), std::string::npos) << error;
  EXPECT_FALSE(meshGroup({2, 2}, 4, 0b1, g, error));
}

// NCCL loads where it is installed (no GPU needed), or says it is not
// there; never a link-time dependency.
TEST(Nccl, LoadsOrSaysNotAvailable) {
  std::string error;
  const loom::runtime::nccl::Library *nccl = loom::runtime::nccl::load(error);
  if (!nccl) {
    EXPECT_EQ(error.rfind("NCCL not available: ", 0), 0u) << error;
    return;
  }
  EXPECT_GE(nccl->version, 20000);
  EXPECT_STREQ(nccl->ncclGetErrorString(0), "no error");
  std::printf("NCCL %s\n",
              loom::runtime::nccl::versionString(nccl->version).c_str());
}

} // namespace
