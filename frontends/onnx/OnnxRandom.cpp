//===- OnnxRandom.cpp - ONNX's random ops
//----------------------------------===//
//
// RandomUniform, RandomNormal, their *Like forms, Bernoulli and Multinomial
// as the graph random ops (GraphOps.td, "Random ops"). Their state is the
// graph input `loom.rng_state` (i64 [2]: the run's seed and the run
// counter), made on the first random op of the graph; the runtime fills it
// on every run and hides it from the model's signature
// (docs/training.md, "Random ops"). An op with a `seed` attribute draws
// from that seed (its float's bits), one without from the run's seed and a
// stream number of its own (its place among the graph's random ops), so
// two unseeded ops differ. Random ops inside If, Loop and Scan bodies are
// refused.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/bit.h"

#include <cstdio>
#include <optional>

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;

namespace {

/// The key and counter scalars of the graph's rng state; null after an
/// error.
std::pair<Value, Value> rngState(ImportContext &c) {
  // Reserved names no ONNX value can have (they start with a NUL).
  static const std::string keyName = std::string(1, '\0') + "rng.key";
  static const std::string counterName = std::string(1, '\0') + "rng.counter";
  auto key = c.values.find(keyName);
  if (key != c.values.end())
    return {key->second, c.values.lookup(counterName)};
  Block *block = c.b.opBuilder().getInsertionBlock();
  if (!block || !isa_and_nonnull<func::FuncOp>(block->getParentOp())) {
    (void)c.error("random ops inside If, Loop and Scan bodies are not "
                  "supported (the run's random state is a graph input)");
    return {};
  }
  Value state = c.b.input("loom.rng_state", {2}, DType::i64);
  if (!state) {
    (void)c.error(c.b.error());
    return {};
  }
  Value k = c.b.reshape(c.b.slice(state, {0}, {1}, {0}, {1}), {});
  Value n = c.b.reshape(c.b.slice(state, {1}, {2}, {0}, {1}), {});
  c.values[keyName] = k;
  c.values[counterName] = n;
  return {k, n};
}

/// The seed attribute (its float's bits) and the stream number (how many
/// random ops the graph has before this one, so that an exported and
/// re-imported model numbers them alike) as attributes.
SmallVector<NamedAttribute> seedAttrs(ImportContext &c) {
  OpBuilder &b = c.b.opBuilder();
  SmallVector<NamedAttribute> attrs;
  if (c.hasAttr("seed"))
    attrs.push_back(b.getNamedAttr(
        "seed",
        b.getI64IntegerAttr(llvm::bit_cast<uint32_t>(c.attrFloat("seed", 0)))));
  int64_t stream = 0;
  for (Operation &op : *b.getInsertionBlock())
    stream += isa<graph::RandomUniformOp, graph::RandomNormalOp,
                  graph::BernoulliOp, graph::MultinomialOp>(op);
  attrs.push_back(b.getNamedAttr("stream", b.getI64IntegerAttr(stream)));
  return attrs;
}

/// The node's `dtype` attribute as a DType (default `dflt`), checked to be
/// one of `allowed` (`what` says which, for the message).
FailureOr<DType> dtypeAttr(ImportContext &c, int dflt, ArrayRef<DType> allowed,
                           StringRef what) {
  int onnxType = (int)c.attrInt("dtype", dflt);
  std::optional<DType> d = convertDataType(onnxType);
  if (!d || !llvm::is_contained(allowed, *d))
    return c.error("dtype " + dataTypeName(onnxType) +
                   " is not supported: " + what);
  return *d;
}

/// `v` as %g prints it.
std::string num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", v);
  return buffer;
}

constexpr DType kFloats[] = {DType::f32, DType::f16, DType::bf16, DType::f64};

/// The result shape of RandomUniform / RandomNormal (the `shape`
/// attribute) or of their *Like forms (the input's static shape).
FailureOr<SmallVector<int64_t>> resultShape(ImportContext &c, bool like) {
  if (like)
    return staticShape(c, c.input(0), c.node->op_type());
  if (!c.hasAttr("shape"))
    return c.error("the shape attribute is required");
  SmallVector<int64_t> shape = c.attrInts("shape");
  for (int64_t d : shape)
    if (d < 0)
      return c.error("shape has a negative dim " + Twine(d));
  return shape;
}

/// The default dtype of a *Like form: the input's ONNX type.
int likeDefault(ImportContext &c) {
  switch (dtypeOf(c.input(0))) {
  case DType::f16:
    return 10;
  case DType::bf16:
    return 16;
  case DType::f64:
    return 11;
  case DType::f32:
    return 1;
  default:
    return 0; // not a float: refused unless dtype says one
  }
}

template <bool like, bool normal> LogicalResult randomFill(ImportContext &c) {
  auto shape = resultShape(c, like);
  if (failed(shape))
    return failure();
  if (like && !c.hasAttr("dtype") && !likeDefault(c))
    return c.error(
        "the input is " + str(tensorOf(c.input(0)).getElementType()) +
        ": give a float dtype (" + c.node->op_type() + " makes float tensors)");
  auto dtype = dtypeAttr(c, like ? likeDefault(c) : 1, kFloats,
                         c.node->op_type() + " makes float tensors");
  if (failed(dtype))
    return failure();
  double a = c.attrFloat(normal ? "mean" : "low", 0.0f);
  double z = c.attrFloat(normal ? "scale" : "high", 1.0f);
  if (!normal && a > z)
    return c.error("low " + num(a) + " is greater than high " + num(z));
  if (normal && !(z >= 0))
    return c.error("scale " + num(z) + " must be >= 0");
  auto [key, counter] = rngState(c);
  if (!key)
    return failure();
  OpBuilder &b = c.b.opBuilder();
  SmallVector<NamedAttribute> attrs = seedAttrs(c);
  attrs.push_back(
      b.getNamedAttr(normal ? "mean" : "low", b.getF64FloatAttr(a)));
  attrs.push_back(
      b.getNamedAttr(normal ? "scale" : "high", b.getF64FloatAttr(z)));
  auto type = RankedTensorType::get(*shape, toMlirType(c.ctx, *dtype));
  Location loc = c.b.locationOf(normal ? "random_normal" : "random_uniform");
  Value v = normal ? b.create<graph::RandomNormalOp>(
                          loc, type, ValueRange{key, counter}, attrs)
                         .getResult()
                   : b.create<graph::RandomUniformOp>(
                          loc, type, ValueRange{key, counter}, attrs)
                         .getResult();
  c.setOutput(0, v);
  return success();
}

} // namespace

LogicalResult loom::onnx_import::randomUniform(ImportContext &c) {
  return randomFill<false, false>(c);
}
LogicalResult loom::onnx_import::randomUniformLike(ImportContext &c) {
  return randomFill<true, false>(c);
}
LogicalResult loom::onnx_import::randomNormal(ImportContext &c) {
  return randomFill<false, true>(c);
}
LogicalResult loom::onnx_import::randomNormalLike(ImportContext &c) {
  return randomFill<true, true>(c);
}

/// Bernoulli: input the probabilities (float), `dtype` the output's type
/// (default the input's; any, bool included).
LogicalResult loom::onnx_import::bernoulli(ImportContext &c) {
  Value p = c.input(0);
  if (!isFloat(p))
    return c.error("the probabilities must be floats, not " +
                   str(tensorOf(p).getElementType()));
  DType dflt = dtypeOf(p);
  int onnxType = (int)c.attrInt("dtype", 0);
  DType dtype = dflt;
  if (c.hasAttr("dtype")) {
    std::optional<DType> d = convertDataType(onnxType);
    if (!d)
      return c.error("dtype " + dataTypeName(onnxType) + " is not supported");
    dtype = *d;
  }
  auto [key, counter] = rngState(c);
  if (!key)
    return failure();
  OpBuilder &b = c.b.opBuilder();
  auto type = tensorOf(p).clone(toMlirType(c.ctx, dtype));
  c.setOutput(0, b.create<graph::BernoulliOp>(c.b.locationOf("bernoulli"), type,
                                              ValueRange{p, key, counter},
                                              seedAttrs(c)));
  return success();
}

/// Multinomial: [batch, classes] unnormalized log-probabilities,
/// `sample_size` draws per row, `dtype` int32 (default) or int64.
LogicalResult loom::onnx_import::multinomial(ImportContext &c) {
  Value x = c.input(0);
  RankedTensorType xt = tensorOf(x);
  if (!isFloat(x))
    return c.error("the input must be floats, not " + str(xt.getElementType()));
  if (xt.getRank() != 2 || xt.isDynamicDim(1))
    return c.error("the input must be [batch_size, class_size] with a static "
                   "class_size, not " +
                   str(xt));
  if (xt.getDimSize(1) < 1)
    return c.error("class_size must be >= 1");
  int64_t samples = c.attrInt("sample_size", 1);
  if (samples < 1)
    return c.error("sample_size " + Twine(samples) + " must be >= 1");
  auto dtype = dtypeAttr(c, 6, {DType::i32, DType::i64},
                         "Multinomial's output is int32 or int64");
  if (failed(dtype))
    return failure();
  auto [key, counter] = rngState(c);
  if (!key)
    return failure();
  OpBuilder &b = c.b.opBuilder();
  SmallVector<NamedAttribute> attrs = seedAttrs(c);
  attrs.push_back(b.getNamedAttr("sample_size", b.getI64IntegerAttr(samples)));
  auto type = RankedTensorType::get({xt.getDimSize(0), samples},
                                    toMlirType(c.ctx, *dtype));
  c.setOutput(
      0, b.create<graph::MultinomialOp>(c.b.locationOf("multinomial"), type,
                                        ValueRange{x, key, counter}, attrs));
  return success();
}
