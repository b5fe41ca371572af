//===- GraphBuilderTest.cpp - the C++ GraphBuilder ------------------------===//

#include "frontends/builder/GraphBuilder.h"
#include "examples/models/Models.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace loom;
using mlir::Value;

namespace {

std::vector<int64_t> shapeOf(Value v) {
  auto t = llvm::cast<mlir::RankedTensorType>(v.getType());
  return std::vector<int64_t>(t.getShape().begin(), t.getShape().end());
}

class GraphBuilderTest : public ::testing::Test {
protected:
  mlir::MLIRContext ctx;
};

TEST_F(GraphBuilderTest, BroadcastingInfersShapes) {
  GraphBuilder b(ctx, "f");
  Value x = b.input("x", {kDyn, 1, 8});
  Value y = b.input("y", {4, 1});
  Value z = b.add(x, y);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(shapeOf(z), (std::vector<int64_t>{kDyn, 4, 8}));
  Value m = b.compare(graph::CompareDirection::lt, x, b.scalar(0.5));
  EXPECT_TRUE(llvm::cast<mlir::RankedTensorType>(m.getType())
                  .getElementType()
                  .isInteger(1));
}

TEST_F(GraphBuilderTest, MatmulBatchAndVectorForms) {
  GraphBuilder b(ctx, "f");
  Value a = b.input("a", {2, 1, 5, 3});
  Value w = b.input("w", {7, 4, 3});
  EXPECT_EQ(shapeOf(b.matmul(a, w, false, true)),
            (std::vector<int64_t>{2, 7, 5, 4}));
  Value v = b.input("v", {3});
  EXPECT_EQ(shapeOf(b.matmul(a, v)), (std::vector<int64_t>{2, 1, 5}));
  Value m = b.input("m", {3, 6});
  EXPECT_EQ(shapeOf(b.matmul(v, m)), (std::vector<int64_t>{6}));
  ASSERT_TRUE(b.ok()) << b.error();
}

TEST_F(GraphBuilderTest, ConvAndPooling) {
  GraphBuilder b(ctx, "f");
  Value x = b.input("x", {kDyn, 3, 32, 32});
  Value w = b.param("w", {16, 3, 3, 3});
  Value bias = b.param("b", {16});
  Value y = b.conv(x, w, bias, {2, 2}, {1, 1, 1, 1});
  EXPECT_EQ(shapeOf(y), (std::vector<int64_t>{kDyn, 16, 16, 16}));
  EXPECT_EQ(shapeOf(b.maxPool(y, {3, 3}, {2, 2}, {1, 1, 1, 1})),
            (std::vector<int64_t>{kDyn, 16, 8, 8}));
  EXPECT_EQ(shapeOf(b.maxPool(y, {3, 3}, {2, 2}, {}, /*ceilMode=*/true)),
            (std::vector<int64_t>{kDyn, 16, 8, 8}));
  EXPECT_EQ(shapeOf(b.avgPool(y, {2, 2})),
            (std::vector<int64_t>{kDyn, 16, 8, 8}));
  EXPECT_EQ(shapeOf(b.globalAvgPool(y)),
            (std::vector<int64_t>{kDyn, 16, 1, 1}));
  Value dw = b.param("dw", {16, 1, 3, 3});
  EXPECT_EQ(shapeOf(b.conv(y, dw, {}, {}, {1, 1, 1, 1}, {}, /*groups=*/16)),
            (std::vector<int64_t>{kDyn, 16, 16, 16}));
  ASSERT_TRUE(b.ok()) << b.error();
}

TEST_F(GraphBuilderTest, ShapeOpsNormalizeNegativeAxes) {
  GraphBuilder b(ctx, "f");
  Value x = b.input("x", {kDyn, 16, 768});
  Value r = b.reshape(x, {0, 0, 12, -1});
  EXPECT_EQ(shapeOf(r), (std::vector<int64_t>{kDyn, 16, 12, 64}));
  EXPECT_EQ(shapeOf(b.reshape(x, {0, -1})),
            (std::vector<int64_t>{kDyn, 16 * 768}));
  EXPECT_EQ(shapeOf(b.transpose(r, {0, 2, 1, 3})),
            (std::vector<int64_t>{kDyn, 12, 16, 64}));
  EXPECT_EQ(shapeOf(b.reduceMean(x, {-1}, true)),
            (std::vector<int64_t>{kDyn, 16, 1}));
  EXPECT_EQ(shapeOf(b.reduceSum(x, {-1, 1})), (std::vector<int64_t>{kDyn}));
  EXPECT_EQ(shapeOf(b.softmax(x)), shapeOf(x));
  EXPECT_EQ(shapeOf(b.slice(x, {-4}, {INT64_MAX}, {-1})),
            (std::vector<int64_t>{kDyn, 16, 4}));
  EXPECT_EQ(shapeOf(b.slice(x, {15}, {-17}, {1}, {-2})),
            (std::vector<int64_t>{kDyn, 8, 768}));
  EXPECT_EQ(shapeOf(b.unsqueeze(x, {0, -1})),
            (std::vector<int64_t>{1, kDyn, 16, 768, 1}));
  EXPECT_EQ(shapeOf(b.squeeze(b.unsqueeze(x, {1}), {1})), shapeOf(x));
  EXPECT_EQ(shapeOf(b.flatten(x, 1)), (std::vector<int64_t>{kDyn, 16 * 768}));
  EXPECT_EQ(shapeOf(b.flatten(x, 0)), (std::vector<int64_t>{1, kDyn}));
  EXPECT_EQ(shapeOf(b.concat({x, x}, -1)),
            (std::vector<int64_t>{kDyn, 16, 1536}));
  EXPECT_EQ(shapeOf(b.pad(x, {0, 1, 2, 0, 3, 4})),
            (std::vector<int64_t>{kDyn, 20, 774}));
  EXPECT_EQ(shapeOf(b.broadcastTo(b.input("c", {1, 768}), {4, 16, 768})),
            (std::vector<int64_t>{4, 16, 768}));
  Value idx = b.input("idx", {2, 3}, DType::i64);
  EXPECT_EQ(shapeOf(b.gather(x, idx, -2)),
            (std::vector<int64_t>{kDyn, 2, 3, 768}));
  ASSERT_TRUE(b.ok()) << b.error();
}

TEST_F(GraphBuilderTest, LossesAndNorms) {
  GraphBuilder b(ctx, "f");
  Value logits = b.input("logits", {kDyn, 10});
  Value labels = b.input("labels", {kDyn}, DType::i64);
  EXPECT_EQ(shapeOf(b.crossEntropy(logits, labels)), std::vector<int64_t>{});
  EXPECT_EQ(
      shapeOf(b.crossEntropy(logits, labels, graph::Reduction::none, -100)),
      std::vector<int64_t>{kDyn});
  EXPECT_EQ(shapeOf(b.mseLoss(logits, logits, graph::Reduction::sum)),
            std::vector<int64_t>{});
  Value x = b.input("x", {2, 8, 4, 4});
  Value c = b.param("c", {8});
  EXPECT_EQ(shapeOf(b.batchNorm(x, c, c, c, c)), shapeOf(x));
  Value g = b.param("g", {4, 4});
  EXPECT_EQ(shapeOf(b.layerNorm(x, g, {}, 2)), shapeOf(x));
  ASSERT_TRUE(b.ok()) << b.error();
}

TEST_F(GraphBuilderTest, ArgReductions) {
  GraphBuilder b(ctx, "f");
  Value x = b.input("x", {kDyn, 8, 3});
  Value i = b.argMax(x, -2);
  EXPECT_EQ(shapeOf(i), (std::vector<int64_t>{kDyn, 3}));
  EXPECT_TRUE(llvm::cast<mlir::RankedTensorType>(i.getType())
                  .getElementType()
                  .isInteger(64));
  EXPECT_EQ(shapeOf(b.argMin(x, 0, /*keepdims=*/true)),
            (std::vector<int64_t>{1, 8, 3}));
  ASSERT_TRUE(b.ok()) << b.error();
}

TEST_F(GraphBuilderTest, ErrorNamesOpAndLocation) {
  GraphBuilder b(ctx, "f");
  Value a = b.input("a", {4, 3});
  Value w = b.param("w", {4, 5});
  Value y;
  {
    auto s = b.scope("block.0");
    y = b.matmul(a, w);
  }
  EXPECT_FALSE(y);
  EXPECT_FALSE(b.ok());
  EXPECT_NE(b.error().find("block.0/matmul"), std::string::npos) << b.error();
  EXPECT_NE(b.error().find("contracting dimensions differ (3 vs 4)"),
            std::string::npos)
      << b.error();
  // The first error sticks; later calls are no-ops.
  std::string first = b.error();
  EXPECT_FALSE(b.relu(a));
  EXPECT_EQ(b.error(), first);
  EXPECT_TRUE(failed(b.finish()));
}

TEST_F(GraphBuilderTest, ErrorOnBadBroadcast) {
  GraphBuilder b(ctx, "f");
  EXPECT_FALSE(b.add(b.input("a", {2, 3}), b.input("b", {4})));
  EXPECT_NE(b.error().find("not broadcast-compatible"), std::string::npos)
      << b.error();
}

TEST_F(GraphBuilderTest, ErrorOnElementType) {
  GraphBuilder b(ctx, "f");
  EXPECT_FALSE(b.exp(b.input("i", {3}, DType::i32)));
  EXPECT_NE(b.error().find("graph.exp"), std::string::npos) << b.error();
}

TEST_F(GraphBuilderTest, ErrorOnMixedElementTypes) {
  GraphBuilder b(ctx, "f");
  EXPECT_FALSE(b.add(b.input("a", {3}), b.input("b", {3}, DType::f16)));
  EXPECT_NE(b.error().find("same element type"), std::string::npos)
      << b.error();
}

TEST_F(GraphBuilderTest, ErrorOnAxisOutOfRange) {
  GraphBuilder b(ctx, "f");
  EXPECT_FALSE(b.softmax(b.input("x", {2, 3}), 2));
  EXPECT_NE(b.error().find("axis 2 is out of range for rank 2"),
            std::string::npos)
      << b.error();
}

TEST_F(GraphBuilderTest, ErrorOnBadReshape) {
  GraphBuilder b(ctx, "f");
  EXPECT_FALSE(b.reshape(b.input("x", {4, 6}), {5, -1}));
  EXPECT_NE(b.error().find("do not divide"), std::string::npos) << b.error();
}

TEST_F(GraphBuilderTest, ErrorOnVerifierRule) {
  GraphBuilder b(ctx, "f");
  EXPECT_FALSE(b.clamp(b.input("x", {3}), 2.0, 1.0));
  EXPECT_NE(b.error().find("min 2"), std::string::npos) << b.error();
}

TEST_F(GraphBuilderTest, ErrorOnNullOperand) {
  GraphBuilder b(ctx, "f");
  EXPECT_FALSE(b.relu(Value()));
  EXPECT_NE(b.error().find("null"), std::string::npos) << b.error();
}

TEST_F(GraphBuilderTest, ErrorOnDuplicateNames) {
  GraphBuilder b(ctx, "f");
  b.param("w", {3});
  EXPECT_FALSE(b.input("w", {3}));
  EXPECT_NE(b.error().find("unique"), std::string::npos) << b.error();
}

TEST_F(GraphBuilderTest, ErrorWithoutOutputs) {
  GraphBuilder b(ctx, "f");
  b.input("x", {3});
  EXPECT_TRUE(failed(b.finish()));
  EXPECT_NE(b.error().find("no outputs"), std::string::npos) << b.error();
}

TEST_F(GraphBuilderTest, SignatureHasParamsFirst) {
  GraphBuilder b(ctx, "forward");
  Value x = b.input("x", {kDyn, 4});
  Value w = b.param("w", {4, 2});
  Value y = b.input("y", {kDyn, 2});
  Value bias = b.param("b", {2});
  b.output("loss", b.mseLoss(b.add(b.matmul(x, w), bias), y));
  auto module = b.finish();
  ASSERT_TRUE(succeeded(module)) << b.error();
  auto func = llvm::cast<mlir::func::FuncOp>(&(*module)->getBody()->front());
  std::vector<std::string> names;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto attrs = func.getArgAttrDict(i);
    auto name = attrs.getAs<mlir::StringAttr>(
        attrs.get("graph.param") ? "graph.param" : "graph.input");
    names.push_back(name.str());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"w", "b", "x", "y"}));
  EXPECT_EQ(func.getResultAttrDict(0)
                .getAs<mlir::StringAttr>("graph.output")
                .getValue(),
            "loss");
}

TEST_F(GraphBuilderTest, ParamWithInitialValue) {
  GraphBuilder b(ctx, "f");
  auto type = mlir::RankedTensorType::get({2, 3}, mlir::Float32Type::get(&ctx));
  auto init = mlir::DenseElementsAttr::get(type, 0.5f);
  Value w = b.param("w", init);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(w.getType(), type);
  b.output("y", b.relu(w));
  auto module = b.finish();
  ASSERT_TRUE(succeeded(module)) << b.error();
  auto func = llvm::cast<mlir::func::FuncOp>(&(*module)->getBody()->front());
  EXPECT_EQ(func.getArgAttr(0, "graph.initial_value"), init);
  EXPECT_TRUE(func.getArgAttr(0, "graph.param"));
}

TEST_F(GraphBuilderTest, ErrorOnParamWithoutStaticValue) {
  GraphBuilder b(ctx, "f");
  EXPECT_FALSE(b.param("w", mlir::ElementsAttr()));
  EXPECT_NE(b.error().find("param 'w': the initial value"), std::string::npos)
      << b.error();
}

TEST_F(GraphBuilderTest, InputReturnedAsOutput) {
  GraphBuilder b(ctx, "f");
  Value x = b.input("x", {2});
  Value w = b.param("w", {2});
  b.output("x_again", x);
  b.output("sum", b.add(x, w));
  auto module = b.finish();
  ASSERT_TRUE(succeeded(module)) << b.error();
  auto func = llvm::cast<mlir::func::FuncOp>(&(*module)->getBody()->front());
  EXPECT_EQ(func.getNumResults(), 2u);
  EXPECT_TRUE(mlir::succeeded(mlir::verify(module->get())));
}

TEST_F(GraphBuilderTest, MLPExampleVerifies) {
  GraphBuilder b(ctx, "forward");
  models::MLPConfig config;
  config.hidden = {64, 32};
  models::buildMLP(b, config);
  auto module = b.finish();
  ASSERT_TRUE(succeeded(module)) << b.error();
  auto func = llvm::cast<mlir::func::FuncOp>(&(*module)->getBody()->front());
  // 3 layers x (weight, bias), then x and labels.
  EXPECT_EQ(func.getNumArguments(), 8u);
  EXPECT_EQ(func.getNumResults(), 2u);
  int matmuls = 0;
  func.walk([&](graph::MatmulOp) { ++matmuls; });
  EXPECT_EQ(matmuls, 3);
}

TEST_F(GraphBuilderTest, GPT2ExampleVerifies) {
  GraphBuilder b(ctx, "forward");
  models::GPT2Config config;
  config.layers = 2;
  config.embed = 64;
  config.heads = 4;
  config.vocab = 100;
  config.seq = 16;
  config.dropout = 0.1;
  models::buildGPT2(b, config);
  auto module = b.finish();
  ASSERT_TRUE(succeeded(module)) << b.error();
  auto func = llvm::cast<mlir::func::FuncOp>(&(*module)->getBody()->front());
  int64_t params = 0;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (func.getArgAttr(i, "graph.param"))
      params +=
          llvm::cast<mlir::RankedTensorType>(func.getArgument(i).getType())
              .getNumElements();
  EXPECT_EQ(params, models::gpt2ParameterCount(config));
  int layerNorms = 0, softmaxes = 0, dropouts = 0;
  func.walk([&](mlir::Operation *op) {
    layerNorms += llvm::isa<graph::LayerNormOp>(op);
    softmaxes += llvm::isa<graph::SoftmaxOp>(op);
    dropouts += llvm::isa<graph::DropoutOp>(op);
  });
  EXPECT_EQ(layerNorms, 2 * 2 + 1);
  EXPECT_EQ(softmaxes, 2);
  EXPECT_EQ(dropouts, 4);
  auto logits = llvm::cast<mlir::RankedTensorType>(func.getResultTypes()[0]);
  EXPECT_EQ(logits.getShape(), (llvm::ArrayRef<int64_t>{kDyn, 16, 100}));
}

/// The initial values of a GPT-2 model built with `seed`, by name.
std::map<std::string, std::vector<float>>
gpt2InitialValues(mlir::MLIRContext &ctx, models::GPT2Config config,
                  uint32_t seed) {
  GraphBuilder b(ctx, "forward");
  config.initSeed = seed;
  models::buildGPT2(b, config);
  auto module = b.finish();
  EXPECT_TRUE(succeeded(module)) << b.error();
  std::map<std::string, std::vector<float>> values;
  if (failed(module))
    return values;
  auto func = llvm::cast<mlir::func::FuncOp>(&(*module)->getBody()->front());
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto name = func.getArgAttrOfType<mlir::StringAttr>(i, "graph.param");
    if (!name)
      continue;
    auto init = func.getArgAttrOfType<mlir::DenseElementsAttr>(
        i, "graph.initial_value");
    EXPECT_TRUE(init) << name.str() << " has no initial value";
    if (init)
      values[name.str()].assign(init.value_begin<float>(),
                                init.value_end<float>());
  }
  return values;
}

TEST_F(GraphBuilderTest, GPT2InitializesEveryParameterByRole) {
  models::GPT2Config config;
  config.layers = 2;
  config.embed = 32;
  config.heads = 2;
  config.vocab = 64;
  config.seq = 8;
  auto values = gpt2InitialValues(ctx, config, 7);
  EXPECT_EQ(values.size(), 2u + 12u * 2 + 2u);
  int64_t count = 0;
  for (auto &[name, v] : values) {
    count += v.size();
    llvm::StringRef n(name);
    if (n.ends_with(".bias")) {
      EXPECT_TRUE(llvm::all_of(v, [](float x) { return x == 0; })) << name;
    } else if (n.contains(".ln_") || n.starts_with("ln_f")) {
      EXPECT_TRUE(llvm::all_of(v, [](float x) { return x == 1; })) << name;
    } else {
      // N(0, 0.02): the sample's mean and deviation.
      double sum = 0, squares = 0;
      for (float x : v) {
        sum += x;
        squares += (double)x * x;
      }
      double mean = sum / v.size();
      double stddev = std::sqrt(squares / v.size() - mean * mean);
      EXPECT_NEAR(mean, 0.0, 0.004) << name;
      EXPECT_NEAR(stddev, 0.02, 0.003) << name;
    }
  }
  EXPECT_EQ(count, models::gpt2ParameterCount(config));
  // The seed decides the values.
  EXPECT_EQ(gpt2InitialValues(ctx, config, 7), values);
  EXPECT_NE(gpt2InitialValues(ctx, config, 8)["wte"], values["wte"]);
}

} // namespace
