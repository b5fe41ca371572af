//===- VjpTest.cpp - every VJP rule against central finite differences ----===//
//
// For each differentiable graph op: a function `loss = sum(op(x...) * w)`
// in f64 (w a fixed random tensor, so every output element counts) is
// differentiated by the autodiff pass (wrt every float input), compiled
// for the CPU and run; each gradient element is compared with the central
// difference (f(x + h) - f(x - h)) / 2h of the same compiled loss. Shapes
// are drawn at random per case (seeded), broadcasting included.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compile.h"
#include "compiler/InitAll.h"
#include "frontends/builder/GraphBuilder.h"
#include "loom/runtime.hpp"
#include "passes/Autodiff/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <random>

using namespace loom;
using mlir::Value;
using Shape = std::vector<int64_t>;

namespace {

/// How a float input's values are drawn.
enum class Domain { any, positive };

struct FloatInput {
  Shape shape;
  Domain domain = Domain::any;
};

struct Case {
  std::string name;
  std::vector<FloatInput> inputs;
  /// Builds the op on the inputs; returns the value the loss weighs.
  std::function<Value(GraphBuilder &, std::vector<Value> &)> build;
};

int64_t count(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// The context of the case being built (constants need it).
mlir::MLIRContext *gCtx = nullptr;

/// An i64 constant.
Value ints(GraphBuilder &b, const Shape &shape, std::vector<int64_t> values) {
  auto type =
      mlir::RankedTensorType::get(shape, mlir::IntegerType::get(gCtx, 64));
  return b.constant(
      mlir::DenseElementsAttr::get(type, llvm::ArrayRef<int64_t>(values)));
}

/// An f64 constant of values drawn from `rng`.
Value randomConst(GraphBuilder &b, const Shape &shape, std::mt19937 &rng,
                  double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(count(shape));
  for (double &x : v)
    x = dist(rng);
  auto type = mlir::RankedTensorType::get(shape, mlir::Float64Type::get(gCtx));
  return b.constant(
      mlir::DenseElementsAttr::get(type, llvm::ArrayRef<double>(v)));
}

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class VjpTest : public ::testing::TestWithParam<Case> {};

TEST_P(VjpTest, MatchesFiniteDifferences) {
  const Case &c = GetParam();
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  gCtx = &ctx;

  GraphBuilder b(ctx, "f");
  std::vector<Value> xs;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    xs.push_back(
        b.input("x" + std::to_string(i), c.inputs[i].shape, DType::f64));
  std::mt19937 rng(std::hash<std::string>()(c.name) & 0xffff);
  Value y = c.build(b, xs);
  ASSERT_TRUE(b.ok()) << b.error();
  auto yType = llvm::cast<mlir::RankedTensorType>(y.getType());
  Shape yShape(yType.getShape());
  Value weighted = b.mul(y, randomConst(b, yShape, rng, 0.5, 1.5));
  std::vector<int64_t> all;
  for (int64_t i = 0; i < (int64_t)yShape.size(); ++i)
    all.push_back(i);
  b.output("loss", all.empty() ? weighted : b.reduceSum(weighted, all));
  auto module = b.finish();
  ASSERT_TRUE(succeeded(module)) << b.error();

  mlir::PassManager pm(&ctx);
  AutodiffPassOptions autodiff;
  autodiff.wrt = "all";
  pm.addPass(createAutodiffPass(autodiff));
  ASSERT_TRUE(succeeded(pm.run(**module)));
  CompileOptions options;
  options.funcName = "f_grad";
  std::string bytes;
  ASSERT_TRUE(succeeded(compileToArtifact(**module, options, bytes)));

  Instance instance(1);
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("vjp", "loom", path));
  std::ofstream(path.str().str(), std::ios::binary) << bytes;
  Session session;
  Status s = Session::load(instance, path.str().str(), session);
  llvm::sys::fs::remove(path);
  ASSERT_TRUE(s) << s.message();

  // Inputs drawn at random in their domain.
  std::vector<std::vector<double>> values;
  for (const FloatInput &in : c.inputs) {
    std::uniform_real_distribution<double> dist(
        in.domain == Domain::positive ? 0.5 : -2.0, 2.0);
    std::vector<double> v(count(in.shape));
    for (double &x : v)
      x = dist(rng);
    values.push_back(v);
  }
  auto run = [&](std::vector<Tensor> &out) {
    std::vector<Tensor> ts;
    for (size_t i = 0; i < values.size(); ++i)
      ts.push_back(Tensor::wrap(LOOM_DTYPE_F64, c.inputs[i].shape,
                                values[i].data(),
                                values[i].size() * sizeof(double)));
    std::vector<const Tensor *> ptrs;
    for (Tensor &t : ts)
      ptrs.push_back(&t);
    Status st = session.run(ptrs, out);
    EXPECT_TRUE(st) << st.message();
    return bool(st);
  };
  std::vector<Tensor> analytic;
  ASSERT_TRUE(run(analytic));
  ASSERT_EQ(analytic.size(), 1 + c.inputs.size());

  for (size_t i = 0; i < values.size(); ++i) {
    const double *g = analytic[1 + i].data<double>();
    for (size_t k = 0; k < values[i].size(); ++k) {
      double x0 = values[i][k];
      double h = 1e-6 * std::max(1.0, std::fabs(x0));
      std::vector<Tensor> out;
      values[i][k] = x0 + h;
      ASSERT_TRUE(run(out));
      double up = out[0].data<double>()[0];
      values[i][k] = x0 - h;
      ASSERT_TRUE(run(out));
      double down = out[0].data<double>()[0];
      values[i][k] = x0;
      double fd = (up - down) / (2 * h);
      EXPECT_NEAR(g[k], fd, 1e-6 + 1e-5 * std::fabs(fd))
          << c.name << ": d loss / d x" << i << "[" << k << "]";
    }
  }
}

//===----------------------------------------------------------------------===//
// The cases
//===----------------------------------------------------------------------===//

using Builder = std::function<Value(GraphBuilder &, std::vector<Value> &)>;

/// A random shape of rank 1..3, dims 1..4, and a shape broadcast against
/// it: some leading dims dropped, some dims set to 1.
std::pair<Shape, Shape> broadcastPair(std::mt19937 &rng) {
  std::uniform_int_distribution<int> rank(1, 3), dim(2, 4), coin(0, 2);
  Shape a;
  for (int i = rank(rng); i > 0; --i)
    a.push_back(dim(rng));
  Shape bShape(
      a.begin() + std::uniform_int_distribution<int>(0, (int)a.size() - 1)(rng),
      a.end());
  for (int64_t &d : bShape)
    if (coin(rng) == 0)
      d = 1;
  if (coin(rng) == 0)
    std::swap(a, bShape);
  return {a, bShape};
}

void unary(std::vector<Case> &cases, const std::string &name,
           std::function<Value(GraphBuilder &, Value)> f,
           Domain domain = Domain::any) {
  cases.push_back({name, {{{3, 4}, domain}}, [f](GraphBuilder &b, auto &x) {
                     return f(b, x[0]);
                   }});
}

void binary(std::vector<Case> &cases, const std::string &name,
            std::function<Value(GraphBuilder &, Value, Value)> f,
            Domain lhs = Domain::any, Domain rhs = Domain::any) {
  std::mt19937 rng(std::hash<std::string>()(name) & 0xffff);
  for (int draw = 0; draw < 2; ++draw) {
    auto [a, bs] = broadcastPair(rng);
    cases.push_back(
        {name + "_" + std::to_string(draw),
         {{a, lhs}, {bs, rhs}},
         [f](GraphBuilder &b, auto &x) { return f(b, x[0], x[1]); }});
  }
  cases.push_back({name + "_scalar",
                   {{{2, 3}, lhs}, {{}, rhs}},
                   [f](GraphBuilder &b, auto &x) { return f(b, x[0], x[1]); }});
}

std::vector<Case> allCases() {
  using graph::CompareDirection;
  std::vector<Case> c;
  auto pos = Domain::positive;
  // Elementwise unary.
  unary(c, "neg", [](auto &b, Value x) { return b.neg(x); });
  unary(c, "abs", [](auto &b, Value x) { return b.abs(x); });
  unary(c, "exp", [](auto &b, Value x) { return b.exp(x); });
  unary(
      c, "log", [](auto &b, Value x) { return b.log(x); }, pos);
  unary(
      c, "sqrt", [](auto &b, Value x) { return b.sqrt(x); }, pos);
  unary(
      c, "rsqrt", [](auto &b, Value x) { return b.rsqrt(x); }, pos);
  unary(c, "tanh", [](auto &b, Value x) { return b.tanh(x); });
  unary(c, "cos", [](auto &b, Value x) { return b.cos(x); });
  unary(c, "sin", [](auto &b, Value x) { return b.sin(x); });
  unary(c, "atan", [](auto &b, Value x) { return b.atan(x); });
  unary(c, "sigmoid", [](auto &b, Value x) { return b.sigmoid(x); });
  unary(c, "relu", [](auto &b, Value x) { return b.relu(x); });
  unary(c, "erf", [](auto &b, Value x) { return b.erf(x); });
  unary(c, "floor", [](auto &b, Value x) { return b.floor(x); });
  unary(c, "ceil", [](auto &b, Value x) { return b.ceil(x); });
  unary(c, "round", [](auto &b, Value x) { return b.round(x); });
  unary(c, "gelu", [](auto &b, Value x) { return b.gelu(x); });
  unary(c, "gelu_tanh", [](auto &b, Value x) { return b.gelu(x, true); });
  unary(c, "clamp", [](auto &b, Value x) { return b.clamp(x, -0.7, 1.1); });
  unary(c, "clamp_min",
        [](auto &b, Value x) { return b.clamp(x, 0.3, std::nullopt); });
  unary(c, "dropout_inference",
        [](auto &b, Value x) { return b.dropout(x, 0.5, false); });
  // Training dropout: x times a fixed mask, whose VJP rebuilds the mask.
  unary(c, "dropout_training",
        [](auto &b, Value x) { return b.dropout(x, 0.5, true, 7); });
  // Elementwise binary, broadcasting.
  binary(c, "add", [](auto &b, Value x, Value y) { return b.add(x, y); });
  binary(c, "sub", [](auto &b, Value x, Value y) { return b.sub(x, y); });
  binary(c, "mul", [](auto &b, Value x, Value y) { return b.mul(x, y); });
  binary(
      c, "div", [](auto &b, Value x, Value y) { return b.div(x, y); },
      Domain::any, pos);
  binary(
      c, "pow", [](auto &b, Value x, Value y) { return b.pow(x, y); }, pos);
  binary(c, "max", [](auto &b, Value x, Value y) { return b.max(x, y); });
  binary(c, "min", [](auto &b, Value x, Value y) { return b.min(x, y); });
  binary(
      c, "rem", [](auto &b, Value x, Value y) { return b.rem(x, y); },
      Domain::any, pos);
  binary(
      c, "mod", [](auto &b, Value x, Value y) { return b.mod(x, y); },
      Domain::any, pos);
  c.push_back({"where", {{{2, 3}}, {{3}}}, [](GraphBuilder &b, auto &x) {
                 Value cond = b.compare(CompareDirection::gt,
                                        b.iota({2, 3}, 1, DType::f64),
                                        b.scalar(0.5, DType::f64));
                 return b.where(cond, x[0], x[1]);
               }});
  // Matmul: plain, batched with broadcasting, transposed, vectors.
  auto mm = [&](const std::string &n, Shape a, Shape bs, bool ta = false,
                bool tb = false) {
    c.push_back(
        {"matmul_" + n, {{a}, {bs}}, [ta, tb](GraphBuilder &b, auto &x) {
           return b.matmul(x[0], x[1], ta, tb);
         }});
  };
  mm("2d", {3, 4}, {4, 2});
  mm("batched", {2, 3, 4}, {4, 5});
  mm("broadcast", {2, 1, 3, 4}, {3, 4, 2});
  mm("transposed", {2, 4, 3}, {5, 4}, true, true);
  mm("transpose_rhs", {3, 4}, {2, 4}, false, true);
  mm("vector_lhs", {4}, {2, 4, 3});
  mm("vector_rhs", {2, 3, 4}, {4});
  // Normalization and softmax.
  c.push_back(
      {"layer_norm", {{{2, 3, 4}}, {{4}}, {{4}}}, [](GraphBuilder &b, auto &x) {
         return b.layerNorm(x[0], x[1], x[2], -1);
       }});
  c.push_back({"layer_norm_axis1_nobias",
               {{{2, 3, 2}}, {{3, 2}}},
               [](GraphBuilder &b, auto &x) {
                 return b.layerNorm(x[0], x[1], Value(), 1);
               }});
  c.push_back({"batch_norm",
               {{{2, 3, 2, 2}}, {{3}}, {{3}}},
               [](GraphBuilder &b, auto &x) {
                 std::mt19937 rng(7);
                 return b.batchNorm(x[0], x[1], x[2],
                                    randomConst(b, {3}, rng, -1, 1),
                                    randomConst(b, {3}, rng, 0.5, 2));
               }});
  c.push_back({"softmax", {{{3, 5}}}, [](GraphBuilder &b, auto &x) {
                 return b.softmax(x[0], -1);
               }});
  c.push_back({"softmax_axis0", {{{3, 2, 2}}}, [](GraphBuilder &b, auto &x) {
                 return b.softmax(x[0], 0);
               }});
  c.push_back({"log_softmax", {{{3, 5}}}, [](GraphBuilder &b, auto &x) {
                 return b.logSoftmax(x[0], 1);
               }});
  // Convolution and pooling.
  auto conv = [&](const std::string &n, Shape x, Shape w, bool bias,
                  std::vector<int64_t> strides, std::vector<int64_t> pads,
                  std::vector<int64_t> dil, int64_t groups) {
    std::vector<FloatInput> in{{x}, {w}};
    if (bias)
      in.push_back({{w[0]}});
    c.push_back({"conv_" + n, in, [=](GraphBuilder &b, auto &v) {
                   return b.conv(v[0], v[1], bias ? v[2] : Value(), strides,
                                 pads, dil, groups);
                 }});
  };
  conv("3x3", {2, 2, 5, 5}, {3, 2, 3, 3}, true, {}, {}, {}, 1);
  conv("stride_pad", {1, 2, 6, 5}, {2, 2, 3, 2}, false, {2, 2}, {1, 0, 1, 1},
       {}, 1);
  conv("dilated", {1, 1, 7, 7}, {2, 1, 2, 3}, true, {1, 2}, {0, 1, 0, 1},
       {2, 1}, 1);
  conv("groups", {1, 4, 4, 4}, {6, 2, 2, 2}, true, {}, {}, {}, 2);
  conv("1d", {2, 3, 8}, {2, 3, 3}, true, {2}, {1, 1}, {}, 1);
  conv("3d_groups", {1, 4, 4, 5, 3}, {4, 2, 2, 3, 2}, true, {2, 1, 1},
       {1, 0, 1, 0, 1, 1}, {1, 2, 1}, 2);
  conv("3d", {2, 2, 5, 4, 3}, {3, 2, 2, 2, 2}, false, {1, 2, 1},
       {0, 1, 1, 1, 0, 0}, {2, 1, 1}, 1);
  c.push_back({"max_pool", {{{1, 2, 4, 6}}}, [](GraphBuilder &b, auto &x) {
                 return b.maxPool(x[0], {2, 2}, {2, 2});
               }});
  c.push_back(
      {"max_pool_overlap_pad", {{{1, 2, 5, 5}}}, [](GraphBuilder &b, auto &x) {
         return b.maxPool(x[0], {3, 3}, {1, 1}, {1, 1, 1, 1});
       }});
  c.push_back({"max_pool_ceil", {{{1, 1, 5, 5}}}, [](GraphBuilder &b, auto &x) {
                 return b.maxPool(x[0], {2, 2}, {2, 2}, {}, true);
               }});
  c.push_back({"avg_pool", {{{1, 2, 4, 6}}}, [](GraphBuilder &b, auto &x) {
                 return b.avgPool(x[0], {2, 3}, {2, 3});
               }});
  c.push_back({"avg_pool_pad", {{{1, 2, 5, 5}}}, [](GraphBuilder &b, auto &x) {
                 return b.avgPool(x[0], {3, 3}, {2, 2}, {1, 1, 1, 1});
               }});
  c.push_back(
      {"avg_pool_pad_counted", {{{1, 1, 5, 5}}}, [](GraphBuilder &b, auto &x) {
         return b.avgPool(x[0], {3, 3}, {2, 2}, {1, 1, 1, 1}, true);
       }});
  c.push_back({"avg_pool_ceil", {{{1, 1, 5, 5}}}, [](GraphBuilder &b, auto &x) {
                 return b.avgPool(x[0], {2, 2}, {2, 2}, {}, false, true);
               }});
  c.push_back({"global_avg_pool",
               {{{2, 3, 2, 3}}},
               [](GraphBuilder &b, auto &x) { return b.globalAvgPool(x[0]); }});
  // Reductions and scans.
  c.push_back({"reduce_sum", {{{2, 3, 4}}}, [](GraphBuilder &b, auto &x) {
                 return b.reduceSum(x[0], {0, 2});
               }});
  c.push_back({"reduce_mean_keep", {{{2, 3, 4}}}, [](GraphBuilder &b, auto &x) {
                 return b.reduceMean(x[0], {1}, true);
               }});
  c.push_back({"reduce_max", {{{3, 4}}}, [](GraphBuilder &b, auto &x) {
                 return b.reduceMax(x[0], {1});
               }});
  c.push_back({"reduce_min_keep", {{{3, 4}}}, [](GraphBuilder &b, auto &x) {
                 return b.reduceMin(x[0], {0}, true);
               }});
  c.push_back({"cumsum", {{{3, 4}}}, [](GraphBuilder &b, auto &x) {
                 return b.cumsum(x[0], 1);
               }});
  c.push_back(
      {"cumsum_exclusive_reverse", {{{3, 4}}}, [](GraphBuilder &b, auto &x) {
         return b.cumsum(x[0], 0, true, true);
       }});
  // Shape and data movement.
  c.push_back({"reshape", {{{2, 6}}}, [](GraphBuilder &b, auto &x) {
                 return b.reshape(x[0], {3, 4});
               }});
  c.push_back({"flatten", {{{2, 3, 2}}}, [](GraphBuilder &b, auto &x) {
                 return b.flatten(x[0], 1);
               }});
  c.push_back({"squeeze", {{{2, 1, 3}}}, [](GraphBuilder &b, auto &x) {
                 return b.squeeze(x[0], {1});
               }});
  c.push_back({"unsqueeze", {{{2, 3}}}, [](GraphBuilder &b, auto &x) {
                 return b.unsqueeze(x[0], {0, 2});
               }});
  c.push_back({"transpose", {{{2, 3, 4}}}, [](GraphBuilder &b, auto &x) {
                 return b.transpose(x[0], {2, 0, 1});
               }});
  c.push_back({"broadcast_to", {{{3, 1}}}, [](GraphBuilder &b, auto &x) {
                 return b.broadcastTo(x[0], {2, 3, 4});
               }});
  c.push_back(
      {"concat", {{{2, 1}}, {{2, 3}}, {{2, 2}}}, [](GraphBuilder &b, auto &x) {
         return b.concat({x[0], x[1], x[2]}, 1);
       }});
  c.push_back({"slice", {{{4, 5}}}, [](GraphBuilder &b, auto &x) {
                 return b.slice(x[0], {1, 0}, {3, 4});
               }});
  c.push_back({"slice_steps", {{{5, 6}}}, [](GraphBuilder &b, auto &x) {
                 return b.slice(x[0], {0, -1}, {5, 0}, {0, 1}, {2, -2});
               }});
  c.push_back(
      {"pad", {{{2, 3}}}, [](GraphBuilder &b, auto &x) {
         return b.pad(x[0], {1, 0, 0, 2}, graph::PadMode::constant, 0.5);
       }});
  c.push_back({"trilu", {{{3, 4}}}, [](GraphBuilder &b, auto &x) {
                 return b.trilu(x[0], false, 1);
               }});
  c.push_back({"gather", {{{3, 4}}}, [](GraphBuilder &b, auto &x) {
                 return b.gather(x[0], ints(b, {2, 3}, {0, 3, -1, 3, 1, 0}), 1);
               }});
  c.push_back({"embedding", {{{5, 3}}}, [](GraphBuilder &b, auto &x) {
                 return b.embedding(x[0], ints(b, {2, 3}, {4, 0, 4, 1, 1, 2}));
               }});
  c.push_back({"gather_elements", {{{3, 4}}}, [](GraphBuilder &b, auto &x) {
                 return b.gatherElements(
                     x[0], ints(b, {2, 4}, {0, 2, 1, 2, 2, 2, -1, 0}), 0);
               }});
  c.push_back(
      {"scatter_elements", {{{3, 4}}, {{1, 4}}}, [](GraphBuilder &b, auto &x) {
         return b.scatterElements(x[0], ints(b, {1, 4}, {2, 0, 1, 2}), x[1], 0);
       }});
  c.push_back({"scatter_elements_add",
               {{{3, 4}}, {{2, 4}}},
               [](GraphBuilder &b, auto &x) {
                 return b.scatterElements(
                     x[0], ints(b, {2, 4}, {2, 0, 1, 2, 2, 1, 1, 0}), x[1], 0,
                     graph::ScatterReduction::add);
               }});
  c.push_back({"top_k", {{{3, 5}}}, [](GraphBuilder &b, auto &x) {
                 return b.topK(x[0], 2, 1).first;
               }});
  // Losses.
  c.push_back({"cross_entropy_mean_ignore",
               {{{2, 3, 4}}},
               [](GraphBuilder &b, auto &x) {
                 return b.crossEntropy(x[0],
                                       ints(b, {2, 3}, {0, 3, -100, 2, 1, 1}),
                                       graph::Reduction::mean, -100);
               }});
  c.push_back({"cross_entropy_sum", {{{3, 4}}}, [](GraphBuilder &b, auto &x) {
                 return b.crossEntropy(x[0], ints(b, {3}, {3, 0, 2}),
                                       graph::Reduction::sum);
               }});
  c.push_back({"cross_entropy_none", {{{3, 4}}}, [](GraphBuilder &b, auto &x) {
                 return b.crossEntropy(x[0], ints(b, {3}, {1, 0, 2}),
                                       graph::Reduction::none);
               }});
  c.push_back({"mse_loss_mean",
               {{{3, 4}}, {{3, 4}}},
               [](GraphBuilder &b, auto &x) { return b.mseLoss(x[0], x[1]); }});
  c.push_back(
      {"mse_loss_none", {{{3, 4}}, {{3, 4}}}, [](GraphBuilder &b, auto &x) {
         return b.mseLoss(x[0], x[1], graph::Reduction::none);
       }});
  return c;
}

INSTANTIATE_TEST_SUITE_P(Rules, VjpTest, ::testing::ValuesIn(allCases()),
                         [](const auto &info) { return info.param.name; });

} // namespace
