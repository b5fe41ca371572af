//===- RuntimeTest.cpp - compile in process, run through runtime.hpp ------===//

#include "loom/runtime.hpp"
#include "compiler/Compile.h"
#include "compiler/InitAll.h"
#include "examples/models/Models.h"
#include "frontends/builder/GraphBuilder.h"
#include "loom/common/Artifact.h"

#include "mlir/IR/DialectRegistry.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <malloc.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <thread>

using namespace loom;

namespace {

/// Compiles y = relu(x @ w) (x: [batch, 3], w: [3, 2] inputs), or with
/// `negate` y = -(x @ w), to a temporary .loom file.
std::string compileDense(bool negate) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  GraphBuilder b(ctx, "dense");
  mlir::Value x = b.input("x", {kDyn, 3}, DType::f32, {"batch", ""});
  mlir::Value w = b.input("w", {3, 2});
  mlir::Value y = b.matmul(x, w);
  b.output("y", negate ? b.neg(y) : b.relu(y));
  auto module = b.finish();
  EXPECT_TRUE(succeeded(module)) << b.error();
  std::string bytes;
  EXPECT_TRUE(succeeded(compileToArtifact(**module, {}, bytes)));
  llvm::SmallString<128> path;
  EXPECT_FALSE(
      llvm::sys::fs::createTemporaryFile("runtime-test", "loom", path));
  std::ofstream(path.str().str(), std::ios::binary) << bytes;
  return path.str().str();
}

class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override { path_ = compileDense(false); }
  void TearDown() override { llvm::sys::fs::remove(path_); }
  std::string path_;
};

TEST_F(RuntimeTest, RunsAndReportsSignature) {
  Instance instance(1);
  ASSERT_TRUE(instance.status()) << instance.status().message();
  Session session;
  Status s = Session::load(instance, path_, session);
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(session.inputCount(), 2u);
  EXPECT_STREQ(session.input(0).name, "x");
  EXPECT_EQ(session.input(0).dims[0], -1);
  EXPECT_STREQ(session.input(0).dim_names[0], "batch");
  EXPECT_STREQ(session.output(0).name, "y");

  float xs[] = {1, 2, 3, -1, -2, -3};
  float ws[] = {1, -1, 0.5, 0, 0, 2};
  Tensor x = Tensor::wrap(LOOM_DTYPE_F32, {2, 3}, xs, sizeof(xs));
  Tensor w = Tensor::wrap(LOOM_DTYPE_F32, {3, 2}, ws, sizeof(ws));
  std::vector<Tensor> out;
  s = session.run({&x, &w}, out);
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 2}));
  // x @ w = [[2, 5], [-2, -5]], relu.
  const float *y = out[0].data<float>();
  EXPECT_FLOAT_EQ(y[0], 2);
  EXPECT_FLOAT_EQ(y[1], 5);
  EXPECT_FLOAT_EQ(y[2], 0);
  EXPECT_FLOAT_EQ(y[3], 0);
}

TEST_F(RuntimeTest, OneSessionManyThreads) {
  Instance instance;
  Session session;
  ASSERT_TRUE(Session::load(instance, path_, session));
  // Different batch sizes at once: each run has its own buffers.
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 50; ++iter) {
        int64_t batch = 1 + (t + iter) % 5;
        Tensor x = Tensor::zeros(LOOM_DTYPE_F32, {batch, 3});
        Tensor w = Tensor::zeros(LOOM_DTYPE_F32, {3, 2});
        for (int64_t i = 0; i < batch * 3; ++i)
          x.data<float>()[i] = static_cast<float>(t + 1);
        for (int i = 0; i < 6; ++i)
          w.data<float>()[i] = 1;
        std::vector<Tensor> out;
        if (!session.run({&x, &w}, out) ||
            out[0].shape() != std::vector<int64_t>{batch, 2}) {
          ++failures[t];
          continue;
        }
        for (int64_t i = 0; i < batch * 2; ++i)
          failures[t] += out[0].data<float>()[i] != 3.0f * (t + 1);
      }
    });
  for (auto &th : threads)
    th.join();
  for (int t = 0; t < 8; ++t)
    EXPECT_EQ(failures[t], 0) << "thread " << t;
}

/// Runs `session` on x = [[1, 2, 3]], w = [[1, -1], [0.5, 0], [0, 2]]:
/// x @ w = [[2, 5]].
std::vector<float> runOnce(const Session &session) {
  float xs[] = {1, 2, 3};
  float ws[] = {1, -1, 0.5, 0, 0, 2};
  Tensor x = Tensor::wrap(LOOM_DTYPE_F32, {1, 3}, xs, sizeof(xs));
  Tensor w = Tensor::wrap(LOOM_DTYPE_F32, {3, 2}, ws, sizeof(ws));
  std::vector<Tensor> out;
  if (!session.run({&x, &w}, out))
    return {};
  return {out[0].data<float>()[0], out[0].data<float>()[1]};
}

TEST_F(RuntimeTest, SessionsKeepTheirOwnCode) {
  // Two models open at once, and a model loaded after another was
  // released: each session runs its own code (the loader must never hand
  // back another model's code for a reused name).
  std::string negPath = compileDense(true);
  Instance instance;
  {
    Session relu, neg;
    ASSERT_TRUE(Session::load(instance, path_, relu));
    ASSERT_TRUE(Session::load(instance, negPath, neg));
    EXPECT_EQ(runOnce(relu), (std::vector<float>{2, 5}));
    EXPECT_EQ(runOnce(neg), (std::vector<float>{-2, -5}));
  }
  for (int i = 0; i < 3; ++i) {
    Session a, b;
    ASSERT_TRUE(Session::load(instance, i % 2 ? negPath : path_, a));
    EXPECT_EQ(runOnce(a), i % 2 ? (std::vector<float>{-2, -5})
                                : (std::vector<float>{2, 5}));
    ASSERT_TRUE(Session::load(instance, i % 2 ? path_ : negPath, b));
    EXPECT_EQ(runOnce(b), i % 2 ? (std::vector<float>{2, 5})
                                : (std::vector<float>{-2, -5}));
  }
  llvm::sys::fs::remove(negPath);
}

/// A copy of the artifact at `path` compiled for a mesh of `shape`.
std::string withMesh(const std::string &path, std::vector<int64_t> shape) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  artifact::Artifact a;
  std::string error;
  EXPECT_TRUE(artifact::parse(bytes.data(), bytes.size(), a, error)) << error;
  for (int64_t s : shape) {
    a.mutable_mesh()->add_shape(s);
    a.mutable_mesh()->add_axes(a.mesh().axes_size() ? "tensor" : "data");
  }
  std::string body = a.SerializeAsString();
  std::string out = path + ".mesh.loom";
  std::ofstream(out, std::ios::binary) << artifact::header(body) << body;
  return out;
}

TEST_F(RuntimeTest, AMeshNeedsItsRanks) {
  Instance instance;
  Session session;
  std::string meshPath = withMesh(path_, {2, 2});
  ASSERT_TRUE(Session::load(instance, meshPath, session));
  int64_t shape[2];
  const char *axes[2];
  int32_t zero = -1;
  ASSERT_EQ(loom_session_mesh(session.get(), 2, shape, axes, &zero), 2u);
  EXPECT_EQ(shape[0], 2);
  EXPECT_STREQ(axes[1], "tensor");
  EXPECT_EQ(zero, 0);
  Tensor x = Tensor::zeros(LOOM_DTYPE_F32, {2, 3});
  Tensor w = Tensor::zeros(LOOM_DTYPE_F32, {3, 2});
  std::vector<Tensor> out;
  Status s = session.run({&x, &w}, out);
  EXPECT_EQ(s.code(), LOOM_UNAVAILABLE);
  EXPECT_EQ(s.message(), "this artifact runs on a mesh of 4 ranks (data=2, "
                         "tensor=2); start it under loom-launch (or torchrun, "
                         "mpirun, srun) with 4 ranks");
  // A communicator of another size does not attach.
  Communicator one;
  ASSERT_TRUE(Communicator::fromEnv(one));
  s = session.attach(one);
  EXPECT_EQ(s.code(), LOOM_INVALID_ARGUMENT);
  EXPECT_EQ(s.message(), "this artifact runs on a mesh of 4 ranks (data=2, "
                         "tensor=2), the communicator has 1 ranks");
  llvm::sys::fs::remove(meshPath);

  // A one-rank mesh runs with or without one.
  std::string onePath = withMesh(path_, {1});
  Session single;
  ASSERT_TRUE(Session::load(instance, onePath, single));
  ASSERT_TRUE(single.attach(one));
  EXPECT_TRUE(single.run({&x, &w}, out));
  llvm::sys::fs::remove(onePath);
}

TEST_F(RuntimeTest, BadInputsAreStatuses) {
  Instance instance;
  Session session;
  ASSERT_TRUE(Session::load(instance, path_, session));
  Tensor x = Tensor::zeros(LOOM_DTYPE_F32, {2, 4});
  Tensor w = Tensor::zeros(LOOM_DTYPE_F32, {3, 2});
  std::vector<Tensor> out;
  Status s = session.run({&x, &w}, out);
  EXPECT_EQ(s.code(), LOOM_SHAPE_MISMATCH);
  EXPECT_EQ(s.message(),
            "input 0 ('x') is f32[2, 4], the model expects f32[batch, 3]");
  s = session.run({&x}, out);
  EXPECT_EQ(s.code(), LOOM_INVALID_ARGUMENT);
  s = session.run({nullptr, &w}, out);
  EXPECT_EQ(s.code(), LOOM_INVALID_ARGUMENT);

  Status bad;
  Tensor t = Tensor::zeros(LOOM_DTYPE_F32, {-1}, &bad);
  EXPECT_FALSE(bad);
  EXPECT_EQ(t.get(), nullptr);
  // Sizes near the address space are refused, not wrapped around.
  for (int64_t huge : {int64_t(4611686018427387903), int64_t(1) << 61}) {
    Tensor h = Tensor::zeros(LOOM_DTYPE_F32, {huge}, &bad);
    EXPECT_EQ(bad.code(), LOOM_INVALID_ARGUMENT) << huge;
    EXPECT_EQ(h.get(), nullptr);
  }
  float small[2];
  Tensor v = Tensor::wrap(LOOM_DTYPE_F32, {4}, small, sizeof(small), &bad);
  EXPECT_EQ(bad.message(),
            "loom_tensor_wrap: shape [4] needs 16 bytes, the buffer has 8");

  // A corrupt artifact in memory: every truncation is refused cleanly.
  std::ifstream in(path_, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  for (size_t n : {size_t(0), size_t(5), size_t(12), bytes.size() / 2}) {
    loom_session *raw = nullptr;
    Status st(
        loom_session_create_from_memory(instance.get(), bytes.data(), n, &raw));
    EXPECT_EQ(st.code(), LOOM_BAD_ARTIFACT) << n << ": " << st.message();
    EXPECT_EQ(raw, nullptr);
  }
}

/// A run-time check that fails (a Reshape shape given as an input with
/// another element count) is a status; the same session then runs a good
/// shape.
TEST(RuntimeChecksTest, FailedCheckIsAStatusAndTheSessionGoesOn) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  GraphBuilder b(ctx, "reshape");
  mlir::Value x = b.input("x", {2, 3});
  mlir::Value shape = b.input("shape", {2}, DType::i64);
  b.output("y", b.dynamicReshape(x, shape));
  auto module = b.finish();
  ASSERT_TRUE(succeeded(module)) << b.error();
  std::string bytes;
  ASSERT_TRUE(succeeded(compileToArtifact(**module, {}, bytes)));

  Instance instance(1);
  Session session;
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("checks", "loom", path));
  std::ofstream(path.str().str(), std::ios::binary) << bytes;
  ASSERT_TRUE(Session::load(instance, path.str().str(), session));
  llvm::sys::fs::remove(path);

  float xs[] = {1, 2, 3, 4, 5, 6};
  Tensor xt = Tensor::wrap(LOOM_DTYPE_F32, {2, 3}, xs, sizeof(xs));
  int64_t bad[] = {4, 2}, good[] = {3, -1};
  Tensor badShape = Tensor::wrap(LOOM_DTYPE_I64, {2}, bad, sizeof(bad));
  Tensor goodShape = Tensor::wrap(LOOM_DTYPE_I64, {2}, good, sizeof(good));
  std::vector<Tensor> out;
  Status s = session.run({&xt, &badShape}, out);
  EXPECT_EQ(s.code(), LOOM_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("graph.dynamic_reshape"), std::string::npos)
      << s.message();
  for (const Tensor &t : out)
    EXPECT_EQ(t.get(), nullptr);
  s = session.run({&xt, &goodShape}, out);
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_FLOAT_EQ(out[0].data<float>()[5], 6);
}

/// An MLP (x[batch, 32] -> 64 -> 64 -> 10, parameters as inputs) compiled
/// to a temporary .loom file: GEMMs through the libraries, fused
/// elementwise loops, a memory plan with an arena.
std::string compileMlp() {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  GraphBuilder b(ctx, "mlp");
  models::MLPConfig config;
  config.inputs = 32;
  config.hidden = {64, 64};
  config.withLoss = false;
  models::buildMLP(b, config);
  auto module = b.finish();
  EXPECT_TRUE(succeeded(module)) << b.error();
  std::string bytes;
  EXPECT_TRUE(succeeded(compileToArtifact(**module, {}, bytes)));
  llvm::SmallString<128> path;
  EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("mlp-test", "loom", path));
  std::ofstream(path.str().str(), std::ios::binary) << bytes;
  return path.str().str();
}

/// Inputs for `session` with dynamic dims set to `batch`, filled from a
/// generator seeded by `seed`: the same seed and batch give the same
/// tensors.
std::vector<Tensor> mlpInputs(const Session &session, int64_t batch,
                              uint32_t seed) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < session.inputCount(); ++i) {
    loom_tensor_info info = session.input(i);
    std::vector<int64_t> shape(info.dims, info.dims + info.rank);
    for (int64_t &d : shape)
      d = d < 0 ? batch : d;
    Tensor t = Tensor::zeros(info.dtype, shape);
    float *p = t.data<float>();
    uint32_t state = seed * 2654435761u + static_cast<uint32_t>(i);
    for (size_t k = 0; k < loom_tensor_element_count(t.get()); ++k) {
      state = state * 1664525u + 1013904223u;
      p[k] = static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

/// The output bytes of one run, or empty on failure.
std::string runBytes(const Session &session, const std::vector<Tensor> &in) {
  std::vector<const Tensor *> ptrs;
  for (const Tensor &t : in)
    ptrs.push_back(&t);
  std::vector<Tensor> out;
  if (!session.run(ptrs, out) || out.size() != 1)
    return {};
  return std::string(
      static_cast<const char *>(loom_tensor_data_const(out[0].get())),
      loom_tensor_size_bytes(out[0].get()));
}

class MlpRuntimeTest : public ::testing::Test {
protected:
  void SetUp() override { path_ = compileMlp(); }
  void TearDown() override { llvm::sys::fs::remove(path_); }
  std::string path_;
};

/// Eight threads run one session at once, each with its own inputs and
/// batch sizes; every result equals the single-threaded run's, bit for bit.
TEST_F(MlpRuntimeTest, EightThreadsMatchOneThread) {
  Instance instance(1);
  Session session;
  ASSERT_TRUE(Session::load(instance, path_, session));
  constexpr int kThreads = 8, kIters = 40;
  auto batchOf = [](int t, int iter) { return int64_t(1 + (t + iter) % 7); };
  // The reference: one thread, each (thread, batch) case once.
  std::vector<std::vector<std::string>> expected(kThreads,
                                                 std::vector<std::string>(8));
  for (int t = 0; t < kThreads; ++t)
    for (int64_t batch = 1; batch <= 7; ++batch) {
      expected[t][batch] =
          runBytes(session, mlpInputs(session, batch, 100 * t + batch));
      ASSERT_EQ(expected[t][batch].size(), size_t(batch * 10 * 4));
    }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < kIters; ++iter) {
        int64_t batch = batchOf(t, iter);
        std::string got =
            runBytes(session, mlpInputs(session, batch, 100 * t + batch));
        mismatches[t] += got != expected[t][batch];
      }
    });
  for (auto &th : threads)
    th.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  loom_session_memory m = session.memory();
  EXPECT_EQ(m.runs_in_flight, 0u);
  EXPECT_GE(m.run_contexts, 1u);
  EXPECT_LE(m.run_contexts, size_t(kThreads));
}

/// With a cap of 3, eight threads never hold more than 3 run contexts, each
/// at most the plan's bytes at the largest batch run; and runs of sizes
/// already seen allocate nothing more.
TEST_F(MlpRuntimeTest, ScratchMemoryIsBoundedAndDoesNotGrow) {
  Instance instance(1);
  // One context's bytes at the largest batch (5).
  Session probe;
  ASSERT_TRUE(Session::load(instance, path_, probe));
  ASSERT_FALSE(runBytes(probe, mlpInputs(probe, 5, 0)).empty());
  size_t perContext = probe.memory().scratch_bytes;
  ASSERT_GT(perContext, 0u);

  Session session;
  ASSERT_TRUE(Session::load(instance, path_, session));
  ASSERT_TRUE(session.setMaxConcurrentRuns(3));
  std::atomic<size_t> maxInFlight{0}, failures{0};
  for (int round = 0; round < 5; ++round) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        for (int iter = 0; iter < 10; ++iter) {
          if (runBytes(session, mlpInputs(session, 1 + (t + iter) % 5, t))
                  .empty())
            ++failures;
          size_t now = session.memory().runs_in_flight;
          size_t seen = maxInFlight.load();
          while (now > seen && !maxInFlight.compare_exchange_weak(seen, now))
            ;
        }
      });
    for (auto &th : threads)
      th.join();
  }
  loom_session_memory m = session.memory();
  EXPECT_EQ(failures.load(), 0u);
  EXPECT_LE(maxInFlight.load(), 3u);
  EXPECT_GE(m.run_contexts, 1u);
  EXPECT_LE(m.run_contexts, 3u);
  EXPECT_EQ(m.max_concurrent_runs, 3u);
  EXPECT_EQ(m.runs_in_flight, 0u);
  EXPECT_LE(m.scratch_bytes, m.run_contexts * perContext);

  // Lowering the cap frees the contexts past it.
  ASSERT_TRUE(session.setMaxConcurrentRuns(1));
  EXPECT_EQ(session.memory().run_contexts, 1u);
  // Sizes already seen: nothing more is allocated, however many runs.
  for (int64_t batch = 1; batch <= 5; ++batch)
    ASSERT_FALSE(runBytes(session, mlpInputs(session, batch, 0)).empty());
  size_t steady = session.memory().scratch_bytes;
  EXPECT_LE(steady, perContext);
  for (int cycle = 0; cycle < 20; ++cycle)
    for (int64_t batch = 1; batch <= 5; ++batch)
      ASSERT_FALSE(runBytes(session, mlpInputs(session, batch, 0)).empty());
  EXPECT_EQ(session.memory().scratch_bytes, steady);
}

/// Failing runs (a wrong shape, a missing input) and successful ones,
/// repeated, leave the heap where it was: error paths free what they made.
TEST_F(MlpRuntimeTest, ErrorPathsLeakNothing) {
  Instance instance(1);
  Session session;
  ASSERT_TRUE(Session::load(instance, path_, session));
  std::vector<Tensor> good = mlpInputs(session, 4, 1);
  std::vector<Tensor> bad = mlpInputs(session, 4, 1);
  bad[0] = Tensor::zeros(LOOM_DTYPE_F32, {4, 31});
  auto work = [&] {
    for (int i = 0; i < 50; ++i) {
      EXPECT_FALSE(runBytes(session, good).empty());
      EXPECT_TRUE(runBytes(session, bad).empty());
      std::vector<Tensor> out;
      EXPECT_FALSE(session.run({&good[0]}, out));
      loom_session *none = nullptr;
      Status s(loom_session_create_from_memory(instance.get(), "LOOMARTF", 8,
                                               &none));
      EXPECT_EQ(s.code(), LOOM_BAD_ARTIFACT);
    }
  };
  work();
  size_t before = mallinfo2().uordblks;
  for (int r = 0; r < 10; ++r)
    work();
  size_t after = mallinfo2().uordblks;
  // 500 rounds of each path: a leak of even a status per failure would
  // show as tens of kilobytes.
  EXPECT_LT(after, before + 8192) << before << " -> " << after;
}

} // namespace
