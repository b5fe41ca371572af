//===- TrainingTest.cpp - training artifacts: contract, trainer, checkpoints =//
//
// Compiles a small training step in process (linear regression y = x . w,
// SGD, 2 micro-batches per optimizer step) and drives it through the C API
// (loom_trainer_*); checks the compiler's errors for steps that break the
// IR contract.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compile.h"
#include "compiler/InitAll.h"
#include "loom/common/Checkpoint.h"
#include "loom/runtime.hpp"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>

using namespace loom;

namespace {

/// The training step with `D` features. `horizon` adds a graph.total_steps
/// argument; `total` (when not empty) is the loom.training entry for it.
std::string stepIR(int d = 4, bool horizon = true,
                   const std::string &total = "") {
  std::string D = std::to_string(d);
  std::string ir = R"(
func.func @linreg(%x: tensor<?xDxf32> {graph.input = "x"},
    %y: tensor<?xf32> {graph.input = "y"},
    %step: tensor<i64> {graph.step}, HORIZON
    %w: tensor<Dxf32> {graph.state = "w", graph.state_kind = "param",
                       graph.initial_value = dense<0.25> : tensor<Dxf32>},
    %acc: tensor<Dxf32> {graph.state = "w/grad_accum", graph.state_kind = "grad_accum"})
    -> (tensor<f32> {graph.output = "loss"}, tensor<f32> {graph.output = "grad_norm"},
        tensor<f32> {graph.output = "lr"}, tensor<Dxf32> {graph.next_state = "w"},
        tensor<Dxf32> {graph.next_state = "w/grad_accum"})
    attributes {loom.training = {accumulate = 2 : i64, labels = "y", description = "test"TOTAL}} {
  %p = graph.matmul %x, %w : (tensor<?xDxf32>, tensor<Dxf32>) -> tensor<?xf32>
  %r = graph.sub %p, %y : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %r2 = graph.mul %r, %r : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %loss = graph.reduce_mean %r2 axes = [0] : (tensor<?xf32>) -> tensor<f32>
  %ones = graph.fill_like %r, 1.0 : f32 : (tensor<?xf32>) -> tensor<?xf32>
  %n = graph.reduce_sum %ones axes = [0] : (tensor<?xf32>) -> tensor<f32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %scale = graph.div %two, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %rx = graph.matmul %r, %x : (tensor<?xf32>, tensor<?xDxf32>) -> tensor<Dxf32>
  %g = graph.mul %rx, %scale : (tensor<Dxf32>, tensor<f32>) -> tensor<Dxf32>
  %sum = graph.add %acc, %g : (tensor<Dxf32>, tensor<Dxf32>) -> tensor<Dxf32>
  %sq = graph.mul %sum, %sum : (tensor<Dxf32>, tensor<Dxf32>) -> tensor<Dxf32>
  %sqsum = graph.reduce_sum %sq axes = [0] : (tensor<Dxf32>) -> tensor<f32>
  %norm = graph.sqrt %sqsum : tensor<f32>
  %lr = graph.constant dense<0.1> : tensor<f32>
  %c0 = graph.constant dense<0> : tensor<i64>
  %c1 = graph.constant dense<1> : tensor<i64>
  %c2 = graph.constant dense<2> : tensor<i64>
  %next = graph.add %step, %c1 : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %phase = graph.rem %next, %c2 : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %apply = graph.compare eq, %phase, %c0 : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %upd = graph.mul %sum, %lr : (tensor<Dxf32>, tensor<f32>) -> tensor<Dxf32>
  %stepped = graph.sub %w, %upd : (tensor<Dxf32>, tensor<Dxf32>) -> tensor<Dxf32>
  %w2 = graph.where %apply, %stepped, %w : (tensor<i1>, tensor<Dxf32>, tensor<Dxf32>) -> tensor<Dxf32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %acc2 = graph.where %apply, %zero, %sum : (tensor<i1>, tensor<f32>, tensor<Dxf32>) -> tensor<Dxf32>
  return %loss, %norm, %lr, %w2, %acc2 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<Dxf32>, tensor<Dxf32>
}
)";
  auto replace = [&](const std::string &from, const std::string &to) {
    for (size_t at = ir.find(from); at != std::string::npos;
         at = ir.find(from, at + to.size()))
      ir.replace(at, from.size(), to);
  };
  replace("HORIZON", horizon ? "%total: tensor<i64> {graph.total_steps}," : "");
  replace("TOTAL", total.empty() ? "" : ", " + total);
  replace("?xD", "?x" + D);
  replace("<Dx", "<" + D + "x");
  return ir;
}

/// Compiles `ir`; the artifact's bytes, or the diagnostics in `errors`.
bool compile(const std::string &ir, std::string &bytes, std::string &errors,
             const std::string &inferenceModule = "") {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    errors += d.str() + "\n";
    return mlir::success();
  });
  auto module = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
  if (!module)
    return false;
  CompileOptions options;
  options.inferenceModule = inferenceModule;
  return succeeded(compileToArtifact(*module, options, bytes));
}

/// A file name in a fresh temporary directory, removed with it.
class TempDir {
public:
  TempDir() {
    llvm::SmallString<128> dir;
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("training-test", dir));
    dir_ = dir.str().str();
  }
  ~TempDir() { llvm::sys::fs::remove_directories(dir_); }
  std::string path(const std::string &name) const { return dir_ + "/" + name; }
  /// The names of the files in the directory.
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir_, ec), end; it != end && !ec;
         it.increment(ec))
      names.push_back(llvm::sys::path::filename(it->path()).str());
    return names;
  }

private:
  std::string dir_;
};

class TrainerTest : public ::testing::Test {
protected:
  /// Compiles `ir` into the temporary directory and loads it.
  void load(const std::string &ir, Session &session,
            const std::string &name = "step.loom") {
    std::string bytes, errors;
    ASSERT_TRUE(compile(ir, bytes, errors)) << errors;
    std::ofstream(dir_.path(name), std::ios::binary) << bytes;
    Status s = Session::load(instance_, dir_.path(name), session);
    ASSERT_TRUE(s) << s.message();
  }

  /// Batch k of a fixed data set: x [4, 4] and y = x . (1, -1, 2, 0.5).
  void batch(int k, Tensor &x, Tensor &y) {
    x = Tensor::zeros(LOOM_DTYPE_F32, {4, 4});
    y = Tensor::zeros(LOOM_DTYPE_F32, {4});
    const float truth[] = {1, -1, 2, 0.5};
    for (int i = 0; i < 4; ++i) {
      float dot = 0;
      for (int j = 0; j < 4; ++j) {
        float v = std::sin(1.0f + 7 * k + 3 * i + j);
        x.data<float>()[i * 4 + j] = v;
        dot += v * truth[j];
      }
      y.data<float>()[i] = dot;
    }
  }

  /// Runs one micro-batch (batch k); the stats.
  loom_train_stats step(Trainer &trainer, int k) {
    Tensor x, y;
    batch(k, x, y);
    loom_train_stats stats = {};
    Status s = trainer.step({&x, &y}, &stats);
    EXPECT_TRUE(s) << s.message();
    return stats;
  }

  static std::vector<float> values(const loom_tensor *t) {
    const float *p = static_cast<const float *>(loom_tensor_data_const(t));
    return std::vector<float>(p, p + loom_tensor_element_count(t));
  }

  Instance instance_{1};
  TempDir dir_;
};

TEST_F(TrainerTest, CreatesFromTheArtifact) {
  Session session;
  load(stepIR(4, true, "total_steps = 7 : i64"), session);
  EXPECT_EQ(loom_session_is_training(session.get()), 1);
  // The signature names the state by its state names.
  EXPECT_STREQ(session.input(2).name, "step");
  EXPECT_STREQ(session.input(3).name, "total_steps");
  EXPECT_STREQ(session.input(4).name, "w");
  EXPECT_STREQ(session.output(4).name, "w/grad_accum");

  Trainer trainer;
  Status s = Trainer::create(session, trainer);
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(trainer.batchInputCount(), 2u);
  EXPECT_STREQ(trainer.batchInput(0).name, "x");
  EXPECT_STREQ(trainer.batchInput(1).name, "y");
  EXPECT_EQ(trainer.labels(), "y");
  EXPECT_EQ(trainer.description(), "test");
  EXPECT_EQ(trainer.accumulate(), 2);
  EXPECT_EQ(trainer.totalSteps(), 7);
  EXPECT_EQ(trainer.microStep(), 0);
  ASSERT_EQ(trainer.stateCount(), 2u);
  const char *name = nullptr, *kind = nullptr;
  const loom_tensor *t = nullptr;
  ASSERT_EQ(loom_trainer_state(trainer.get(), 1, &name, &kind, &t), nullptr);
  EXPECT_STREQ(name, "w/grad_accum");
  EXPECT_STREQ(kind, "grad_accum");
  // Initial values from the IR, zeros where it has none.
  EXPECT_EQ(values(trainer.state("w")), (std::vector<float>(4, 0.25f)));
  EXPECT_EQ(values(t), (std::vector<float>(4, 0.0f)));
  EXPECT_EQ(trainer.state("nope"), nullptr);
  Status missing(loom_trainer_find_state(trainer.get(), "nope", &t));
  EXPECT_EQ(missing.code(), LOOM_NOT_FOUND);
  EXPECT_EQ(missing.message(), "the model has no state 'nope'");
}

TEST_F(TrainerTest, StateIsSetFromTheHost) {
  Session session;
  load(stepIR(4, true, "total_steps = 7 : i64"), session);
  Trainer trainer;
  Status s = Trainer::create(session, trainer);
  ASSERT_TRUE(s) << s.message();
  int64_t four[] = {4}, three[] = {3};
  loom_tensor *w = nullptr, *small = nullptr;
  ASSERT_EQ(loom_tensor_create(LOOM_DTYPE_F32, 1, four, &w), nullptr);
  ASSERT_EQ(loom_tensor_create(LOOM_DTYPE_F32, 1, three, &small), nullptr);
  float *wv = static_cast<float *>(loom_tensor_data(w));
  for (int i = 0; i < 4; ++i)
    wv[i] = 1.5f + i;
  Status set = trainer.setState("w", w);
  ASSERT_TRUE(set) << set.message();
  EXPECT_EQ(values(trainer.state("w")),
            (std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f}));
  wv[0] = -1; // copied, not borrowed
  EXPECT_EQ(values(trainer.state("w"))[0], 1.5f);
  Status wrong = trainer.setState("w", small);
  EXPECT_EQ(wrong.code(), LOOM_SHAPE_MISMATCH);
  EXPECT_EQ(wrong.message(), "state 'w' is f32[4], the value f32[3]");
  Status unknown = trainer.setState("nope", w);
  EXPECT_EQ(unknown.code(), LOOM_NOT_FOUND);
  loom_tensor_release(w);
  loom_tensor_release(small);
}

TEST_F(TrainerTest, InferenceArtifactIsNotTrainable) {
  std::string ir = R"(
func.func @add(%a: tensor<2xf32> {graph.input = "a"}) -> (tensor<2xf32> {graph.output = "b"}) {
  %0 = graph.add %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
})";
  Session session;
  load(ir, session);
  EXPECT_EQ(loom_session_is_training(session.get()), 0);
  Trainer trainer;
  Status s = Trainer::create(session, trainer);
  EXPECT_EQ(s.code(), LOOM_INVALID_ARGUMENT);
  EXPECT_EQ(s.message(), "the artifact of model 'add' is not a training "
                         "artifact (compile one with loomc train)");
  EXPECT_EQ(trainer.get(), nullptr);
}

TEST_F(TrainerTest, StepsAccumulateAndAdoptTheState) {
  Session session;
  load(stepIR(), session);
  Trainer trainer;
  ASSERT_TRUE(Trainer::create(session, trainer));
  ASSERT_TRUE(trainer.setTotalSteps(10));
  std::vector<float> w0 = values(trainer.state("w"));
  double first = 0, last = 0;
  for (int k = 0; k < 40; ++k) {
    loom_train_stats stats = step(trainer, k % 4);
    EXPECT_EQ(stats.micro_step, k);
    EXPECT_EQ(stats.optimizer_step, k / 2);
    EXPECT_EQ(stats.applied, k % 2);
    EXPECT_EQ(stats.nonfinite, 0);
    EXPECT_FLOAT_EQ(stats.lr, 0.1f);
    EXPECT_EQ(trainer.microStep(), k + 1);
    // The parameters change only when an optimizer step completes.
    if (k == 0)
      EXPECT_EQ(values(trainer.state("w")), w0);
    if (k == 1)
      EXPECT_NE(values(trainer.state("w")), w0);
    if (k < 2)
      first += stats.loss / 2;
    if (k >= 38)
      last += stats.loss / 2;
  }
  EXPECT_LT(last, first / 10) << first << " -> " << last;
  // The first step by hand: w = 0.25, so the loss is mean((x . w - y)^2).
  Tensor x, y;
  batch(0, x, y);
  double loss = 0;
  for (int i = 0; i < 4; ++i) {
    double r = -y.data<float>()[i];
    for (int j = 0; j < 4; ++j)
      r += 0.25 * x.data<float>()[i * 4 + j];
    loss += r * r / 4;
  }
  Trainer fresh;
  ASSERT_TRUE(Trainer::create(session, fresh));
  ASSERT_TRUE(fresh.setTotalSteps(10));
  EXPECT_NEAR(step(fresh, 0).loss, loss, 1e-5 * loss);
}

TEST_F(TrainerTest, NonFiniteLeavesTheStateAndAdvances) {
  Session session;
  load(stepIR(), session);
  Trainer trainer;
  ASSERT_TRUE(Trainer::create(session, trainer));
  ASSERT_TRUE(trainer.setTotalSteps(10));
  step(trainer, 0);
  const loom_tensor *acc = trainer.state("w/grad_accum");
  std::vector<float> before = values(acc);
  Tensor x, y;
  batch(1, x, y);
  y.data<float>()[2] = NAN;
  loom_train_stats stats = {};
  Status s = trainer.step({&x, &y}, &stats);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(stats.nonfinite, 1);
  EXPECT_TRUE(std::isnan(stats.loss));
  EXPECT_EQ(stats.applied, 1);
  EXPECT_EQ(trainer.microStep(), 2);
  // The same tensor, the same values: the update was not adopted.
  EXPECT_EQ(trainer.state("w/grad_accum"), acc);
  EXPECT_EQ(values(acc), before);
  EXPECT_EQ(values(trainer.state("w")), std::vector<float>(4, 0.25f));
}

TEST_F(TrainerTest, BadCallsAreStatuses) {
  Session session;
  load(stepIR(), session);
  Trainer trainer;
  ASSERT_TRUE(Trainer::create(session, trainer));
  Tensor x, y;
  batch(0, x, y);
  // The artifact has a horizon input and no total_steps: it must be set.
  Status s = trainer.step({&x, &y});
  EXPECT_EQ(s.code(), LOOM_INVALID_ARGUMENT);
  EXPECT_EQ(s.message(), "the schedule horizon is not set (the artifact has "
                         "no total_steps; call loom_trainer_set_total_steps)");
  EXPECT_EQ(trainer.setTotalSteps(0).code(), LOOM_INVALID_ARGUMENT);
  ASSERT_TRUE(trainer.setTotalSteps(3));
  s = trainer.step({&x});
  EXPECT_EQ(s.code(), LOOM_INVALID_ARGUMENT);
  EXPECT_EQ(s.message(),
            "the training step takes 2 batch inputs, the call gave 1");
  Tensor wide = Tensor::zeros(LOOM_DTYPE_F32, {4, 5});
  s = trainer.step({&wide, &y});
  EXPECT_EQ(s.code(), LOOM_SHAPE_MISMATCH);
  EXPECT_EQ(s.message(),
            "input 0 ('x') is f32[4, 5], the model expects f32[?, 4]");
  EXPECT_EQ(trainer.microStep(), 0);
  EXPECT_EQ(Status(loom_trainer_step(nullptr, nullptr, 0, nullptr)).code(),
            LOOM_INVALID_ARGUMENT);
  s = Status(
      loom_trainer_step_profiled(trainer.get(), nullptr, 0, nullptr, nullptr));
  EXPECT_EQ(s.code(), LOOM_INVALID_ARGUMENT);
  EXPECT_EQ(s.message(), "loom_trainer_step_profiled: profile is null");
  loom_tensor_info info;
  EXPECT_EQ(
      Status(loom_trainer_batch_input_info(trainer.get(), 2, &info)).code(),
      LOOM_INVALID_ARGUMENT);
  // An artifact without a horizon input needs none.
  Session noHorizon;
  load(stepIR(4, false), noHorizon, "nohorizon.loom");
  Trainer other;
  ASSERT_TRUE(Trainer::create(noHorizon, other));
  EXPECT_TRUE(other.step({&x, &y}));
}

TEST_F(TrainerTest, CheckpointsRestoreTheRun) {
  Session session;
  load(stepIR(), session);
  Trainer a;
  ASSERT_TRUE(Trainer::create(session, a));
  ASSERT_TRUE(a.setTotalSteps(10));
  for (int k = 0; k < 3; ++k)
    step(a, k);
  std::string path = dir_.path("run.loomckpt");
  Status s = a.save(path);
  ASSERT_TRUE(s) << s.message();
  // Nothing but the checkpoint is left behind.
  EXPECT_EQ(dir_.files(),
            (std::vector<std::string>{"step.loom", "run.loomckpt"}));

  Trainer b;
  ASSERT_TRUE(Trainer::create(session, b));
  s = b.load(path);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(b.microStep(), 3);
  EXPECT_EQ(b.totalSteps(), 10);
  EXPECT_EQ(values(b.state("w")), values(a.state("w")));
  EXPECT_EQ(values(b.state("w/grad_accum")), values(a.state("w/grad_accum")));
  // Both go on alike, bit for bit (mid-accumulation included).
  for (int k = 3; k < 8; ++k) {
    loom_train_stats sa = step(a, k % 4), sb = step(b, k % 4);
    EXPECT_EQ(sa.loss, sb.loss) << k;
    EXPECT_EQ(sa.applied, sb.applied) << k;
  }
  EXPECT_EQ(values(b.state("w")), values(a.state("w")));

  // The tools' reader sees the same checkpoint.
  artifact::Checkpoint c;
  std::string error;
  ASSERT_TRUE(artifact::readCheckpoint(path, c, error)) << error;
  EXPECT_EQ(c.model_name(), "linreg");
  EXPECT_EQ(c.micro_step(), 3);
  EXPECT_EQ(c.total_steps(), 10);
  EXPECT_EQ(c.accumulate(), 2);
  auto state = artifact::stateByName(c);
  ASSERT_EQ(state.size(), 2u);
  const artifact::CheckpointTensor &w = *state.at("w");
  EXPECT_EQ(w.kind(), "param");
  EXPECT_EQ(w.dtype(), artifact::F32);
  EXPECT_EQ(std::vector<int64_t>(w.dims().begin(), w.dims().end()),
            std::vector<int64_t>{4});
  EXPECT_EQ(w.data().size(), 16u);
}

TEST_F(TrainerTest, ForeignCheckpointsAreRefused) {
  Session session, wide;
  load(stepIR(), session);
  load(stepIR(5), wide, "wide.loom");
  Trainer a, b;
  ASSERT_TRUE(Trainer::create(session, a));
  ASSERT_TRUE(Trainer::create(wide, b));
  std::string path = dir_.path("wide.loomckpt");
  ASSERT_TRUE(b.save(path));
  ASSERT_TRUE(a.setTotalSteps(4));
  step(a, 0);
  Status s = a.load(path);
  EXPECT_EQ(s.code(), LOOM_SHAPE_MISMATCH);
  EXPECT_EQ(s.message(), path + ": the checkpoint (of model 'linreg') has "
                                "state 'w' as f32[5], this model ('linreg') "
                                "as f32[4]");
  // The trainer is unchanged.
  EXPECT_EQ(a.microStep(), 1);
  EXPECT_EQ(a.totalSteps(), 4);

  // Corrupt and truncated files, and a save where no file can be made.
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  bytes[bytes.size() - 3] ^= 1;
  std::ofstream(dir_.path("bad.loomckpt"), std::ios::binary) << bytes;
  s = a.load(dir_.path("bad.loomckpt"));
  EXPECT_EQ(s.code(), LOOM_BAD_ARTIFACT);
  // The last bytes are a tensor's (the data section): the message names it.
  EXPECT_NE(s.message().find("checkpoint state '"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("is corrupt (checksum mismatch)"),
            std::string::npos)
      << s.message();
  std::ofstream(dir_.path("short.loomckpt"), std::ios::binary)
      << bytes.substr(0, 20);
  s = a.load(dir_.path("short.loomckpt"));
  EXPECT_EQ(s.code(), LOOM_BAD_ARTIFACT);
  EXPECT_NE(s.message().find("checkpoint is truncated"), std::string::npos)
      << s.message();
  s = a.load(dir_.path("missing.loomckpt"));
  EXPECT_EQ(s.code(), LOOM_NOT_FOUND);
  s = a.save(dir_.path("no/such/dir/x.loomckpt"));
  EXPECT_EQ(s.code(), LOOM_NOT_FOUND);
  EXPECT_NE(s.message().find("cannot create"), std::string::npos)
      << s.message();
  EXPECT_EQ(a.microStep(), 1);
}

TEST(TrainingContractTest, TheArtifactDescribesTheStep) {
  std::string bytes, errors;
  ASSERT_TRUE(compile(stepIR(4, true, "total_steps = 100 : i64"), bytes, errors,
                      "inference bytecode"))
      << errors;
  artifact::Artifact a;
  artifact::DataSection section;
  std::string error;
  ASSERT_TRUE(
      artifact::parse(bytes.data(), bytes.size(), a, error, {}, &section))
      << error;
  ASSERT_TRUE(a.has_training());
  const artifact::Training &t = a.training();
  EXPECT_EQ(t.accumulate(), 2);
  EXPECT_EQ(t.total_steps(), 100);
  EXPECT_EQ(t.step_input(), 2);
  EXPECT_EQ(t.total_steps_input(), 3);
  EXPECT_EQ(t.loss_output(), 0);
  EXPECT_EQ(t.grad_norm_output(), 1);
  EXPECT_EQ(t.lr_output(), 2);
  EXPECT_EQ(t.labels(), "y");
  EXPECT_EQ(t.description(), "test");
  EXPECT_EQ(t.inference_module(), "inference bytecode");
  ASSERT_EQ(t.state_size(), 2);
  EXPECT_EQ(t.state(0).name(), "w");
  EXPECT_EQ(t.state(0).kind(), "param");
  EXPECT_EQ(t.state(0).input(), 4);
  EXPECT_EQ(t.state(0).output(), 3);
  // The initial value lies in the data section; the zero one is not
  // stored.
  float init[4];
  std::string_view w0 = artifact::initialData(section, t.state(0));
  ASSERT_EQ(w0.size(), sizeof(init));
  std::memcpy(init, w0.data(), sizeof(init));
  EXPECT_EQ(init[3], 0.25f);
  EXPECT_FALSE(t.state(1).has_initial_segment());
  EXPECT_TRUE(artifact::initialData(section, t.state(1)).empty());
  EXPECT_EQ(t.state(1).output(), 4);
  // An inference function keeps no Training, and takes no inference module.
  std::string ir = R"(
func.func @f(%a: tensor<2xf32> {graph.input = "a"}) -> (tensor<2xf32> {graph.output = "b"}) {
  %0 = graph.add %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
})";
  ASSERT_TRUE(compile(ir, bytes, errors)) << errors;
  ASSERT_TRUE(artifact::parse(bytes.data(), bytes.size(), a, error)) << error;
  EXPECT_FALSE(a.has_training());
  errors.clear();
  EXPECT_FALSE(compile(ir, bytes, errors, "bytecode"));
  EXPECT_NE(errors.find("an inference module was given, but 'f' is not a "
                        "training step (no loom.training)"),
            std::string::npos)
      << errors;
}

/// The runtime checks a training artifact's roles before it trusts them
/// (an artifact from a faulty compiler, say): each bad Training message is
/// refused with what is wrong.
TEST(TrainingContractTest, TheRuntimeChecksTheRoles) {
  std::string bytes, errors;
  ASSERT_TRUE(compile(stepIR(), bytes, errors)) << errors;
  artifact::Artifact good;
  artifact::DataSection section;
  std::string error;
  ASSERT_TRUE(
      artifact::parse(bytes.data(), bytes.size(), good, error, {}, &section));
  // Inline (a version 2 message): each case's file is the message alone.
  for (artifact::TrainingState &s : *good.mutable_training()->mutable_state()) {
    s.set_initial(std::string(artifact::initialData(section, s)));
    s.clear_initial_segment();
  }
  struct Case {
    std::function<void(artifact::Training &)> mutate;
    const char *error;
  };
  std::vector<Case> cases = {
      {[](artifact::Training &t) { t.set_accumulate(0); },
       "training: accumulate is 0, it must be at least 1"},
      {[](artifact::Training &t) { t.mutable_state(0)->set_output(9); },
       "training: state 'w''s next value is output 9, out of range (5)"},
      {[](artifact::Training &t) { t.set_grad_norm_output(0); },
       "training: the gradient norm uses output 0, which another role uses "
       "too"},
      {[](artifact::Training &t) {
         t.set_loss_output(3);
         t.mutable_state(0)->set_output(0);
       },
       "training: the loss ('w') is f32 of rank 1, not a f32 scalar"},
      {[](artifact::Training &t) { t.set_step_input(0); },
       "training: the step counter ('x') is f32 of rank 2, not a i64 scalar"},
      {[](artifact::Training &t) {
         t.mutable_state(0)->set_initial(std::string(3, '\0'));
       },
       "training: state 'w''s initial value holds 3 bytes, its dims need 16"},
      {[](artifact::Training &t) { t.mutable_state(1)->set_name("w"); },
       "training: state 'w' appears twice"},
      {[](artifact::Training &t) { t.set_labels("w"); },
       "training: the labels 'w' are not a batch input"},
      {[](artifact::Training &t) { t.set_state_in_place(true); },
       "training: state 'w' has a next value output, but the state is "
       "updated in place"},
      {[](artifact::Training &t) { t.mutable_state(0)->set_output(-1); },
       "training: state 'w' has no next value output"},
  };
  for (const Case &c : cases) {
    artifact::Artifact bad = good;
    c.mutate(*bad.mutable_training());
    std::string body = bad.SerializeAsString();
    std::string file = artifact::header(body) + body;
    artifact::Artifact out;
    EXPECT_FALSE(artifact::parse(file.data(), file.size(), out, error))
        << c.error;
    EXPECT_EQ(error, c.error);
  }
}

/// A step that breaks the contract: one text substitution of the good step
/// and the error it must give.
struct Broken {
  const char *name, *from, *to, *error;
};

class TrainingContractErrors : public ::testing::TestWithParam<Broken> {};

TEST_P(TrainingContractErrors, AreClearErrors) {
  const Broken &b = GetParam();
  std::string ir = stepIR();
  size_t at = ir.find(b.from);
  ASSERT_NE(at, std::string::npos) << b.from;
  ir.replace(at, std::string(b.from).size(), b.to);
  std::string bytes, errors;
  EXPECT_FALSE(compile(ir, bytes, errors));
  EXPECT_NE(errors.find(b.error), std::string::npos)
      << "expected: " << b.error << "\ngot: " << errors;
}

INSTANTIATE_TEST_SUITE_P(
    Training, TrainingContractErrors,
    ::testing::Values(
        Broken{"NoStep", "{graph.step}", "{graph.input = \"s\"}",
               "training step 'linreg': no argument is the micro-step "
               "counter (graph.step)"},
        Broken{"HorizonType", "%total: tensor<i64>", "%total: tensor<i32>",
               "argument 3 ('total_steps') has graph.total_steps, so it must "
               "be a tensor<i64> scalar, not 'tensor<i32>'"},
        Broken{"NoRole", "{graph.input = \"x\"}", "",
               "argument 0 ('input_0') must have exactly one of "
               "graph.input, graph.step, graph.total_steps, graph.state (it "
               "has 0)"},
        Broken{"InputNotAString", "{graph.input = \"y\"}",
               "{graph.input = 1 : i64}",
               "argument 1 ('input_1') graph.input must be a non-empty "
               "string"},
        Broken{"NoKind", ", graph.state_kind = \"param\"", "",
               "argument 4 ('w') has no graph.state_kind"},
        Broken{"InitialType", "dense<0.25> : tensor<4xf32>",
               "dense<0.25> : tensor<3xf32>",
               "argument 4 ('w') graph.initial_value must be elements of "
               "type 'tensor<4xf32>'"},
        Broken{"NoNext", "{graph.next_state = \"w/grad_accum\"}",
               "{graph.output = \"acc\"}",
               "state 'w/grad_accum' has no next value (a result with "
               "graph.next_state = \"w/grad_accum\")"},
        Broken{"TwoNext", "{graph.next_state = \"w/grad_accum\"}",
               "{graph.next_state = \"w\"}",
               "result 4 ('w') is a second next value of state 'w'"},
        Broken{"NextOfNothing", "{graph.next_state = \"w\"}",
               "{graph.next_state = \"v\"}",
               "result 3 ('v') is the next value of 'v', which is no state "
               "argument"},
        Broken{"NoLoss", "{graph.output = \"loss\"}", "{graph.output = \"l\"}",
               "no result is the 'loss' output (graph.output = \"loss\")"},
        Broken{"NeitherOutput", "{graph.output = \"lr\"}", "",
               "result 2 ('output_2') must have exactly one of graph.output "
               "and graph.next_state"},
        Broken{"Accumulate", "accumulate = 2 : i64", "accumulate = 0 : i64",
               "loom.training.accumulate must be an integer from 1 to "
               "2147483647, not 0 : i64"},
        Broken{"UnknownEntry", "labels = \"y\"", "labels = \"y\", lr = 1.0",
               "loom.training has an unknown entry 'lr' (known: accumulate, "
               "total_steps, description, labels)"},
        Broken{"Labels", "labels = \"y\"", "labels = \"z\"",
               "the labels 'z' are not a batch input (graph.input)"},
        Broken{"NotADict", "loom.training = {", "loom.training = 1, other = {",
               "loom.training must be a dictionary, not 1 : i64"},
        Broken{"NoTrainingAttr", "loom.training = {", "other = {",
               "argument 2 has graph.step, but the function has no "
               "loom.training attribute"}),
    [](const ::testing::TestParamInfo<Broken> &info) {
      return std::string(info.param.name);
    });

} // namespace
