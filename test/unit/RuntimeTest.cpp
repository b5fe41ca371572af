//===- RuntimeTest.cpp - compile in process, run through runtime.hpp ------===//

#include "loom/runtime.hpp"
#include "compiler/Compile.h"
#include "compiler/InitAll.h"
#include "frontends/builder/GraphBuilder.h"
#include "runtime/src/Artifact.h"

#include "mlir/IR/DialectRegistry.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

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

} // namespace
