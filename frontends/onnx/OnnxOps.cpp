//===- OnnxOps.cpp - the table of supported ONNX ops ----------------------===//
//
// One handler per (op type, since-opset) whose semantics differ; a handler
// turns the current node into graph ops through the GraphBuilder. Values
// that ONNX passes as inputs but graph ops take as attributes (axes,
// shapes, pads) must be known at import.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;
using graph::CompareDirection;

Value loom::onnx_import::scalarLike(ImportContext &c, Value like, double v) {
  if (!like) // an op before failed: the builder holds why
    return {};
  Type elem = cast<RankedTensorType>(like.getType()).getElementType();
  return c.b.scalar(v, fromMlirType(elem).value_or(DType::f32));
}

Value loom::onnx_import::constantOf(ImportContext &c, ArrayRef<double> values,
                                    ArrayRef<int64_t> shape, Type elem) {
  auto type = RankedTensorType::get(shape, elem);
  if (auto f = dyn_cast<FloatType>(elem)) {
    SmallVector<APFloat> floats;
    for (double v : values) {
      APFloat a(v);
      bool lost;
      a.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      floats.push_back(a);
    }
    return c.b.constant(DenseElementsAttr::get(type, floats));
  }
  SmallVector<APInt> ints;
  for (double v : values)
    ints.push_back(APInt(elem.getIntOrFloatBitWidth(), (int64_t)v,
                         /*isSigned=*/true));
  return c.b.constant(DenseElementsAttr::get(type, ints));
}

bool loom::onnx_import::isFloat(Value v) {
  return isa<FloatType>(cast<RankedTensorType>(v.getType()).getElementType());
}

namespace {

using Unary = Value (GraphBuilder::*)(Value);
using Binary = Value (GraphBuilder::*)(Value, Value);

template <Unary fn> LogicalResult unary(ImportContext &c) {
  c.setOutput(0, (c.b.*fn)(c.input(0)));
  return success();
}

template <Binary fn> LogicalResult binary(ImportContext &c) {
  c.setOutput(0, (c.b.*fn)(c.input(0), c.input(1)));
  return success();
}

/// `fn` folded over all inputs, left to right.
template <Binary fn> Value foldInputs(ImportContext &c) {
  Value acc = c.input(0);
  for (int i = 1; i < c.node->input_size(); ++i)
    acc = (c.b.*fn)(acc, c.input(i));
  return acc;
}

/// Sum / Max / Min over any number of inputs.
template <Binary fn> LogicalResult variadic(ImportContext &c) {
  c.setOutput(0, foldInputs<fn>(c));
  return success();
}

LogicalResult mean(ImportContext &c) {
  Value sum = foldInputs<&GraphBuilder::add>(c);
  c.setOutput(0, c.b.div(sum, c.b.scalar(c.node->input_size())));
  return success();
}

template <CompareDirection dir> LogicalResult compare(ImportContext &c) {
  c.setOutput(0, c.b.compare(dir, c.input(0), c.input(1)));
  return success();
}

int64_t rankOf(Value v) {
  return v ? cast<RankedTensorType>(v.getType()).getRank() : 0;
}

/// Axes given as input `1` (newer opsets, optional) or as the `axes`
/// attribute (older opsets). Empty when absent.
FailureOr<SmallVector<int64_t>> axesOf(ImportContext &c, bool axesInput) {
  if (!axesInput)
    return c.attrInts("axes");
  if (!c.hasInput(1))
    return SmallVector<int64_t>();
  return c.intsInput(1, "axes");
}

/// The value of a one-element input known at import, as a double.
std::optional<double> knownScalar(ImportContext &c, int i) {
  auto v = c.knownInput(i);
  if (!v || v->getNumElements() != 1)
    return std::nullopt;
  if (isa<FloatType>(v->getElementType()))
    return (*v->value_begin<APFloat>()).convertToDouble();
  return (double)(*v->value_begin<APInt>()).getSExtValue();
}

/// True when input `i` is given and its value is known only at run time:
/// neither known at import nor a shape vector tracked symbolically at the
/// op's shape input (elsewhere it is computed at run time). Such
/// parameters (a Reshape shape, Unsqueeze axes, Slice bounds given as graph
/// inputs) go to the graph ops that take them as operands.
bool atRunTime(ImportContext &c, int i) {
  if (!c.hasInput(i))
    return false;
  const std::string &name = c.node->input(i);
  return !c.known.count(name) && (!c.symbolic.count(name) || i != c.shapeInput);
}

/// Identity; of a tensor known at import, the output is known too (so a
/// shape passed through Identity still folds).
LogicalResult identity(ImportContext &c) {
  if (c.hasInput(0)) {
    auto k = c.known.find(c.node->input(0));
    if (k != c.known.end() && !c.values.count(c.node->input(0))) {
      c.known[c.node->output(0)] = k->second;
      return success();
    }
  }
  c.setOutput(0, c.input(0));
  return success();
}

/// 1 / x; Reciprocal(Sqrt(x)) is rsqrt(x), which is also how the exporter
/// writes rsqrt.
LogicalResult reciprocal(ImportContext &c) {
  Value x = c.input(0);
  if (auto sqrt = x ? x.getDefiningOp<graph::SqrtOp>() : nullptr) {
    c.setOutput(0, c.b.rsqrt(sqrt.getX()));
    return success();
  }
  c.setOutput(0, c.b.div(scalarLike(c, x, 1.0), x));
  return success();
}

LogicalResult gelu(ImportContext &c) {
  std::string approx = c.attrString("approximate", "none");
  if (approx != "none" && approx != "tanh")
    return c.error("unsupported approximate '" + approx + "'");
  c.setOutput(0, c.b.gelu(c.input(0), approx == "tanh"));
  return success();
}

LogicalResult leakyRelu(ImportContext &c) {
  Value x = c.input(0);
  Value scaled = c.b.mul(x, scalarLike(c, x, c.attrFloat("alpha", 0.01f)));
  Value pos = c.b.compare(CompareDirection::ge, x, scalarLike(c, x, 0.0));
  c.setOutput(0, c.b.where(pos, x, scaled));
  return success();
}

LogicalResult constant(ImportContext &c) {
  const onnx::TensorProto *t = c.attrTensor("value");
  if (!t)
    return c.error("only the 'value' form of Constant is supported");
  auto attr = c.convertTensor(*t, c.nodeLoc());
  if (failed(attr))
    return failure();
  c.known[c.node->output(0)] = *attr;
  return success();
}

LogicalResult castOp(ImportContext &c) {
  int to = c.attrInt("to", 0);
  std::optional<DType> dtype = convertDataType(to);
  if (!dtype)
    return c.error("cannot cast to " + dataTypeName(to) +
                   ", which Loom does not support");
  c.setOutput(0, c.b.cast(c.input(0), *dtype));
  return success();
}

LogicalResult whereOp(ImportContext &c) {
  c.setOutput(0, c.b.where(c.input(0), c.input(1), c.input(2)));
  return success();
}

LogicalResult matmul(ImportContext &c) {
  c.setOutput(0, c.b.matmul(c.input(0), c.input(1)));
  return success();
}

LogicalResult gemm(ImportContext &c) {
  Value y = c.b.matmul(c.input(0), c.input(1), c.attrInt("transA", 0),
                       c.attrInt("transB", 0));
  float alpha = c.attrFloat("alpha", 1.0f), beta = c.attrFloat("beta", 1.0f);
  if (y && alpha != 1.0f)
    y = c.b.mul(y, scalarLike(c, y, alpha));
  if (c.hasInput(2)) {
    Value bias = c.input(2);
    if (bias && beta != 1.0f)
      bias = c.b.mul(bias, scalarLike(c, bias, beta));
    y = c.b.add(y, bias);
  }
  c.setOutput(0, y);
  return success();
}

/// The begin-then-end pads of a convolution or pooling window: the `pads`
/// attribute, zeros for auto_pad VALID, and for SAME_UPPER / SAME_LOWER the
/// pads that make each output size ceil(input / stride), computed from x's
/// spatial dims (which must then be static). `kernel`, `strides` and
/// `dilations` hold one value per spatial dim.
FailureOr<SmallVector<int64_t>> padsOf(ImportContext &c, Value x,
                                       ArrayRef<int64_t> kernel,
                                       ArrayRef<int64_t> strides,
                                       ArrayRef<int64_t> dilations) {
  std::string autoPad = c.attrString("auto_pad", "NOTSET");
  size_t spatial = kernel.size();
  if (autoPad == "NOTSET")
    return c.attrInts("pads");
  if (autoPad == "VALID")
    return SmallVector<int64_t>(2 * spatial, 0);
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return c.error("unknown auto_pad '" + autoPad + "'");
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  if ((size_t)type.getRank() != spatial + 2)
    return c.error("expected a rank " + std::to_string(spatial + 2) +
                   " input for " + std::to_string(spatial) + " kernel sizes");
  SmallVector<int64_t> pads(2 * spatial, 0);
  for (size_t i = 0; i < spatial; ++i) {
    int64_t in = type.getDimSize(i + 2);
    if (ShapedType::isDynamic(in))
      return c.error("auto_pad '" + autoPad +
                     "' needs static spatial dims; spatial dim " +
                     std::to_string(i) + " is dynamic");
    int64_t stride = i < strides.size() ? strides[i] : 1;
    int64_t dilation = i < dilations.size() ? dilations[i] : 1;
    if (stride < 1 || dilation < 1)
      return c.error("strides and dilations must be positive");
    int64_t out = (in + stride - 1) / stride;
    int64_t total = std::max<int64_t>(
        0, (out - 1) * stride + (kernel[i] - 1) * dilation + 1 - in);
    int64_t small = total / 2, big = total - small;
    pads[i] = autoPad == "SAME_UPPER" ? small : big;
    pads[spatial + i] = autoPad == "SAME_UPPER" ? big : small;
  }
  return pads;
}

/// One value per spatial dim from attribute `name`, `fill` when absent.
SmallVector<int64_t> perSpatial(ImportContext &c, StringRef name,
                                size_t spatial, int64_t fill) {
  SmallVector<int64_t> values = c.attrInts(name);
  if (values.empty())
    values.assign(spatial, fill);
  return values;
}

} // namespace

FailureOr<ConvWindow> loom::onnx_import::convWindow(ImportContext &c, Value x,
                                                    Value w) {
  if (!x || !w)
    return failure();
  auto wType = cast<RankedTensorType>(w.getType());
  SmallVector<int64_t> kernel = c.attrInts("kernel_shape");
  if (kernel.empty())
    kernel.assign(wType.getShape()
                      .drop_front(std::min<int64_t>(2, wType.getRank()))
                      .begin(),
                  wType.getShape().end());
  if (llvm::any_of(kernel, ShapedType::isDynamic))
    return c.error("the kernel size must be static");
  ConvWindow window;
  window.strides = perSpatial(c, "strides", kernel.size(), 1);
  window.dilations = perSpatial(c, "dilations", kernel.size(), 1);
  auto pads = padsOf(c, x, kernel, window.strides, window.dilations);
  if (failed(pads))
    return failure();
  window.pads = *pads;
  window.groups = c.attrInt("group", 1);
  return window;
}

Value loom::onnx_import::convolution(ImportContext &c, Value x, Value w,
                                     Value bias) {
  FailureOr<ConvWindow> window = convWindow(c, x, w);
  if (failed(window))
    return {};
  return c.b.conv(x, w, bias, window->strides, window->pads, window->dilations,
                  window->groups);
}

namespace {

LogicalResult conv(ImportContext &c) {
  Value bias = c.hasInput(2) ? c.input(2) : Value();
  if (c.hasInput(2) && !bias)
    return failure();
  Value y = convolution(c, c.input(0), c.input(1), bias);
  if (!y)
    return failure();
  c.setOutput(0, y);
  return success();
}

LogicalResult maxPool(ImportContext &c) {
  Value x = c.input(0);
  SmallVector<int64_t> kernel = c.attrInts("kernel_shape");
  SmallVector<int64_t> strides = perSpatial(c, "strides", kernel.size(), 1);
  SmallVector<int64_t> dilations = perSpatial(c, "dilations", kernel.size(), 1);
  auto pads = padsOf(c, x, kernel, strides, dilations);
  if (failed(pads))
    return failure();
  Value y = c.b.maxPool(x, kernel, strides, *pads, c.attrInt("ceil_mode", 0),
                        dilations);
  c.setOutput(0, y);
  if (c.node->output_size() > 1 && !c.node->output(1).empty()) {
    if (pads->empty())
      pads->assign(2 * kernel.size(), 0);
    if (pads->size() != 2 * kernel.size() || strides.size() != kernel.size() ||
        dilations.size() != kernel.size())
      return c.error("strides, dilations and pads must have one (pads: two) "
                     "entries per spatial dim");
    Value indices = maxPoolIndices(c, x, y, kernel, strides, *pads, dilations,
                                   c.attrInt("storage_order", 0));
    if (!indices)
      return failure();
    c.setOutput(1, indices);
  }
  return success();
}

LogicalResult avgPool(ImportContext &c) {
  Value x = c.input(0);
  SmallVector<int64_t> kernel = c.attrInts("kernel_shape");
  SmallVector<int64_t> strides = perSpatial(c, "strides", kernel.size(), 1);
  if (llvm::any_of(c.attrInts("dilations"), [](int64_t d) { return d != 1; }))
    return c.error("dilated AveragePool is not supported");
  auto pads = padsOf(c, x, kernel, strides, {});
  if (failed(pads))
    return failure();
  c.setOutput(0, c.b.avgPool(x, kernel, strides, *pads,
                             c.attrInt("count_include_pad", 0),
                             c.attrInt("ceil_mode", 0)));
  return success();
}

LogicalResult globalAvgPool(ImportContext &c) {
  c.setOutput(0, c.b.globalAvgPool(c.input(0)));
  return success();
}

/// BatchNormalization. In training mode (opset 14+) the batch statistics
/// over all dims but the channel normalize x, and the running statistics
/// come out as input * momentum + batch * (1 - momentum) (before opset 14,
/// asking for those outputs means training), the batch
/// variance being the population variance (as in the ONNX reference).
LogicalResult batchNorm(ImportContext &c) {
  double epsilon = c.attrFloat("epsilon", 1e-5f);
  // Before opset 14, asking for the running statistics means training.
  auto used = [&](int i) {
    return c.node->output_size() > i && !c.node->output(i).empty();
  };
  if (used(3) || used(4))
    return c.error("the saved_mean and saved_var outputs of "
                   "BatchNormalization are not supported");
  bool training =
      c.attrInt("training_mode", 0) || (c.opset < 14 && (used(1) || used(2)));
  if (!training) {
    c.setOutput(0, c.b.batchNorm(c.input(0), c.input(1), c.input(2), c.input(3),
                                 c.input(4), epsilon));
    return success();
  }
  Value x = c.input(0), scale = c.input(1), bias = c.input(2),
        runMean = c.input(3), runVar = c.input(4);
  if (!x || !scale || !bias || !runMean || !runVar)
    return failure();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  if (rank < 2)
    return c.error("BatchNormalization needs an [N, C, ...] input");
  SmallVector<int64_t> axes = {0}, channelShape = {-1};
  for (int64_t i = 2; i < rank; ++i) {
    axes.push_back(i);
    channelShape.push_back(1);
  }
  // [C] -> [C, 1, ...], which broadcasts against [N, C, spatial...].
  auto perChannel = [&](Value v) { return c.b.reshape(v, channelShape); };
  Value mean = c.b.reduceMean(x, axes, /*keepdims=*/true);
  Value centered = c.b.sub(x, mean);
  Value var = c.b.reduceMean(c.b.mul(centered, centered), axes, true);
  if (!var)
    return failure();
  Value y =
      c.b.mul(centered, c.b.rsqrt(c.b.add(var, scalarLike(c, var, epsilon))));
  y = c.b.add(c.b.mul(y, perChannel(scale)), perChannel(bias));
  c.setOutput(0, y);
  double momentum = c.attrFloat("momentum", 0.9f);
  auto running = [&](Value old, Value batch) {
    Value flat = c.b.reshape(batch, SmallVector<int64_t>{-1});
    return c.b.add(c.b.mul(old, scalarLike(c, old, momentum)),
                   c.b.mul(flat, scalarLike(c, flat, 1 - momentum)));
  };
  if (used(1))
    c.setOutput(1, running(runMean, mean));
  if (used(2))
    c.setOutput(2, running(runVar, var));
  return success();
}

/// LayerNormalization; when the Mean or InvStdDev output is used, the
/// normalization is spelled out so that they exist: mean and 1 / sqrt(var +
/// epsilon) over the axes from `axis` on, kept as size-1 dims.
LogicalResult layerNorm(ImportContext &c) {
  Value x = c.input(0), scale = c.input(1);
  Value bias = c.hasInput(2) ? c.input(2) : Value();
  int64_t axis = c.attrInt("axis", -1);
  double epsilon = c.attrFloat("epsilon", 1e-5f);
  bool stats = false;
  for (int i = 1; i < c.node->output_size(); ++i)
    stats |= !c.node->output(i).empty();
  if (!stats) {
    c.setOutput(0, c.b.layerNorm(x, scale, bias, axis, epsilon));
    return success();
  }
  if (!x || !scale)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  if (axis < -rank || axis >= rank)
    return c.error("axis " + std::to_string(axis) +
                   " is out of range for rank " + std::to_string(rank));
  if (axis < 0)
    axis += rank;
  // stash_type 1 (the default) computes the statistics in f32.
  std::optional<DType> dtype = fromMlirType(type.getElementType());
  bool widen = c.attrInt("stash_type", 1) == 1 && dtype &&
               (*dtype == DType::f16 || *dtype == DType::bf16);
  Value xs = widen ? c.b.cast(x, DType::f32) : x;
  SmallVector<int64_t> axes;
  for (int64_t i = axis; i < rank; ++i)
    axes.push_back(i);
  Value mean = c.b.reduceMean(xs, axes, /*keepdims=*/true);
  Value centered = c.b.sub(xs, mean);
  Value var = c.b.reduceMean(c.b.mul(centered, centered), axes, true);
  if (!var)
    return failure();
  Value invStd = c.b.rsqrt(c.b.add(var, scalarLike(c, var, epsilon)));
  Value y = c.b.mul(centered, invStd);
  if (widen)
    y = c.b.cast(y, *dtype);
  y = c.b.mul(y, scale);
  if (bias)
    y = c.b.add(y, bias);
  c.setOutput(0, y);
  c.setOutput(1, mean);
  c.setOutput(2, invStd);
  return success();
}

/// Softmax before opset 13 normalizes the 2-D view [prod(<axis), prod(>=axis)].
template <bool log> LogicalResult softmaxV1(ImportContext &c) {
  Value x = c.input(0);
  int64_t axis = c.attrInt("axis", 1);
  Value flat = c.b.flatten(x, axis);
  Value y = log ? c.b.logSoftmax(flat, 1) : c.b.softmax(flat, 1);
  if (!x)
    return failure();
  // Back to x's shape: its static dims, and -1 for at most one dynamic dim.
  auto type = cast<RankedTensorType>(x.getType());
  if (llvm::count_if(type.getShape(), ShapedType::isDynamic) > 1)
    return c.error("opset < 13 softmax of more than one dynamic dim");
  SmallVector<int64_t> shape;
  for (int64_t d : type.getShape())
    shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
  c.setOutput(0, c.b.reshape(y, shape));
  return success();
}

template <bool log> LogicalResult softmaxV13(ImportContext &c) {
  Value x = c.input(0);
  int64_t axis = c.attrInt("axis", -1);
  c.setOutput(0, log ? c.b.logSoftmax(x, axis) : c.b.softmax(x, axis));
  return success();
}

enum class ReduceKind { Sum, Mean, Max, Min, Prod };

/// Reductions; `axesInput` selects the opset form (input vs attribute).
template <ReduceKind kind, bool axesInput>
LogicalResult reduce(ImportContext &c) {
  Value x = c.input(0);
  if (axesInput && atRunTime(c, 1)) {
    if (kind != ReduceKind::Sum)
      return c.error("axes known only at run time are supported for "
                     "ReduceSum only");
    if (rankOf(x) == 0) {
      c.setOutput(0, x);
      return success();
    }
    c.setOutput(0, c.b.dynamicReduceSum(x, c.input(1), c.attrInt("keepdims", 1),
                                        c.attrInt("noop_with_empty_axes", 0)));
    return success();
  }
  auto knownAxes = axesOf(c, axesInput);
  if (failed(knownAxes))
    return failure();
  SmallVector<int64_t> axes = *knownAxes;
  bool keepdims = c.attrInt("keepdims", 1);
  if (axes.empty()) {
    if (axesInput && c.attrInt("noop_with_empty_axes", 0)) {
      c.setOutput(0, x);
      return success();
    }
    for (int64_t i = 0; i < rankOf(x); ++i)
      axes.push_back(i);
  }
  if (rankOf(x) == 0) {
    c.setOutput(0, x);
    return success();
  }
  Value y;
  switch (kind) {
  case ReduceKind::Sum:
    y = c.b.reduceSum(x, axes, keepdims);
    break;
  case ReduceKind::Mean:
    y = c.b.reduceMean(x, axes, keepdims);
    break;
  case ReduceKind::Max:
    y = c.b.reduceMax(x, axes, keepdims);
    break;
  case ReduceKind::Min:
    y = c.b.reduceMin(x, axes, keepdims);
    break;
  case ReduceKind::Prod:
    y = c.b.reduceProd(x, axes, keepdims);
    break;
  }
  c.setOutput(0, y);
  return success();
}

/// A Reshape target from a symbolic shape vector: a dynamic entry that is
/// the input's own dim at the same position becomes 0 (copy); other
/// non-static entries become -1, counted in `inferred`.
SmallVector<int64_t> reshapeTarget(ImportContext &c, Value x, const SymShape &s,
                                   int &inferred) {
  SmallVector<int64_t> out;
  inferred = 0;
  for (auto [i, d] : llvm::enumerate(s.dims)) {
    if (d.isStatic()) {
      out.push_back(d.value);
      inferred += d.value == -1; // already an inferred dim
    } else if (d.source && sameDynamicDim(c, d.source, d.dim, x, i)) {
      out.push_back(0);
    } else {
      out.push_back(-1);
      ++inferred;
    }
  }
  return out;
}

template <bool isMax> LogicalResult argReduce(ImportContext &c) {
  Value x = c.input(0);
  int64_t axis = c.attrInt("axis", 0);
  bool keepdims = c.attrInt("keepdims", 1);
  bool last = c.attrInt("select_last_index", 0);
  c.setOutput(0, isMax ? c.b.argMax(x, axis, keepdims, last)
                       : c.b.argMin(x, axis, keepdims, last));
  return success();
}

LogicalResult reshape(ImportContext &c) {
  Value x = c.input(0);
  if (atRunTime(c, 1)) {
    c.setOutput(0,
                c.b.dynamicReshape(x, c.input(1), c.attrInt("allowzero", 0)));
    return success();
  }
  if (auto sym = c.symbolicInput(1); sym && x && !c.knownInput(1)) {
    int inferred = 0;
    SmallVector<int64_t> target = reshapeTarget(c, x, *sym, inferred);
    if (inferred <= 1) {
      c.setOutput(0, c.b.reshape(x, target));
      return success();
    }
    // Dims of another tensor (`x.view(-1, n)` restored with
    // `y.view(size_out)`): the shape is computed at run time, and each of
    // the result's dims is known to equal the dim it was given.
    if (!canMaterialize(*sym))
      return c.error("the target shape has " + Twine(inferred) +
                     " dims that are neither static, nor the input's own "
                     "dim, nor inferable, nor a dim of another tensor; Loom "
                     "needs shapes known up to one dim");
    Value y = c.b.dynamicReshape(x, materializeSymbolic(c, *sym),
                                 c.attrInt("allowzero", 0));
    if (!y)
      return failure();
    for (auto [i, d] : llvm::enumerate(sym->dims))
      if (!d.isStatic())
        c.dimAliases[{y, (int64_t)i}] = {d.source, d.dim};
    c.setOutput(0, y);
    return success();
  }
  auto shape = c.intsInput(1, "the shape input of Reshape");
  if (failed(shape))
    return failure();
  if (c.attrInt("allowzero", 0) && llvm::is_contained(*shape, 0))
    return c.error("Reshape with allowzero=1 and a 0 in the shape is not "
                   "supported");
  c.setOutput(0, c.b.reshape(c.input(0), *shape));
  return success();
}

LogicalResult transpose(ImportContext &c) {
  Value x = c.input(0);
  SmallVector<int64_t> perm = c.attrInts("perm");
  if (perm.empty())
    for (int64_t i = rankOf(x) - 1; i >= 0; --i)
      perm.push_back(i);
  c.setOutput(0, c.b.transpose(x, perm));
  return success();
}

LogicalResult flatten(ImportContext &c) {
  c.setOutput(0, c.b.flatten(c.input(0), c.attrInt("axis", 1)));
  return success();
}

LogicalResult concat(ImportContext &c) {
  SmallVector<Value> inputs;
  for (int i = 0; i < c.node->input_size(); ++i)
    inputs.push_back(c.input(i));
  c.setOutput(0, c.b.concat(inputs, c.attrInt("axis", 0)));
  return success();
}

template <bool axesInput> LogicalResult squeeze(ImportContext &c) {
  Value x = c.input(0);
  if (axesInput && atRunTime(c, 1)) {
    c.setOutput(0, c.b.dynamicSqueeze(x, c.input(1)));
    return success();
  }
  auto knownAxes = axesOf(c, axesInput);
  if (failed(knownAxes))
    return failure();
  SmallVector<int64_t> axes = *knownAxes;
  if (axes.empty() && x) {
    auto type = cast<RankedTensorType>(x.getType());
    for (auto [i, d] : llvm::enumerate(type.getShape())) {
      if (ShapedType::isDynamic(d))
        return c.error("Squeeze without axes of a dynamic dim");
      if (d == 1)
        axes.push_back(i);
    }
    if (axes.empty()) {
      c.setOutput(0, x);
      return success();
    }
  }
  c.setOutput(0, c.b.squeeze(x, axes));
  return success();
}

template <bool axesInput> LogicalResult unsqueeze(ImportContext &c) {
  if (axesInput && atRunTime(c, 1)) {
    c.setOutput(0, c.b.dynamicUnsqueeze(c.input(0), c.input(1)));
    return success();
  }
  auto axes = axesOf(c, axesInput);
  if (failed(axes))
    return failure();
  c.setOutput(0, c.b.unsqueeze(c.input(0), *axes));
  return success();
}

LogicalResult sliceV1(ImportContext &c) {
  c.setOutput(0, c.b.slice(c.input(0), c.attrInts("starts"), c.attrInts("ends"),
                           c.attrInts("axes")));
  return success();
}

/// Slice with bounds known only at run time; absent axes are [0, k) and
/// absent steps 1.
LogicalResult dynamicSlice(ImportContext &c) {
  Value x = c.input(0), starts = c.input(1), ends = c.input(2);
  if (!x || !starts || !ends)
    return failure();
  auto startsType = cast<RankedTensorType>(starts.getType());
  if (startsType.getRank() != 1)
    return c.error("the starts of Slice must be a 1-D tensor, not rank " +
                   Twine(startsType.getRank()));
  int64_t k = startsType.getDimSize(0);
  if (ShapedType::isDynamic(k))
    return c.error("the starts of Slice must have a static length");
  auto i64s = [&](ArrayRef<int64_t> values) {
    auto type = RankedTensorType::get({(int64_t)values.size()},
                                      IntegerType::get(&c.ctx, 64));
    return c.b.constant(DenseElementsAttr::get(type, values));
  };
  SmallVector<int64_t> iota, ones(k, 1);
  for (int64_t i = 0; i < k; ++i)
    iota.push_back(i);
  Value axes = c.hasInput(3) ? c.input(3) : i64s(iota);
  Value steps = c.hasInput(4) ? c.input(4) : i64s(ones);
  c.setOutput(0, c.b.dynamicSlice(x, starts, ends, axes, steps));
  return success();
}

LogicalResult sliceV10(ImportContext &c) {
  if (atRunTime(c, 1) || atRunTime(c, 2) || atRunTime(c, 3) || atRunTime(c, 4))
    return dynamicSlice(c);
  auto starts = c.intsInput(1, "starts");
  auto ends = c.intsInput(2, "ends");
  if (failed(starts) || failed(ends))
    return failure();
  SmallVector<int64_t> axes, steps;
  if (c.hasInput(3)) {
    auto known = c.intsInput(3, "axes");
    if (failed(known))
      return failure();
    axes = *known;
  }
  if (c.hasInput(4)) {
    auto known = c.intsInput(4, "steps");
    if (failed(known))
      return failure();
    steps = *known;
  }
  c.setOutput(0, c.b.slice(c.input(0), *starts, *ends, axes, steps));
  return success();
}

LogicalResult gather(ImportContext &c) {
  c.setOutput(0, c.b.gather(c.input(0), c.input(1), c.attrInt("axis", 0)));
  return success();
}

LogicalResult clipV6(ImportContext &c) {
  c.setOutput(0, c.b.clamp(c.input(0), c.attrFloat("min", -3.4028234e38f),
                           c.attrFloat("max", 3.4028234e38f)));
  return success();
}

/// Clip from opset 11: bounds known at import become a clamp, run-time
/// bounds a max / min with the scalar bound.
LogicalResult clipV11(ImportContext &c) {
  Value x = c.input(0);
  std::optional<double> bounds[2];
  Value dynamicBounds[2];
  for (int i = 1; i <= 2; ++i) {
    if (!c.hasInput(i))
      continue;
    bounds[i - 1] = knownScalar(c, i);
    if (!bounds[i - 1])
      dynamicBounds[i - 1] = c.input(i);
  }
  if (bounds[0] || bounds[1])
    x = c.b.clamp(x, bounds[0], bounds[1]);
  if (dynamicBounds[0])
    x = c.b.max(x, dynamicBounds[0]);
  if (dynamicBounds[1])
    x = c.b.min(x, dynamicBounds[1]);
  c.setOutput(0, x);
  return success();
}

/// Dropout: the identity at inference, graph.dropout in training mode (its
/// training_mode input and then its ratio known at import). The mask is dropout
/// applied to ones with the same seed (graph.dropout's mask is a pure
/// function of seed and index), non-zero where an element was kept.
LogicalResult dropout(ImportContext &c) {
  bool training = false;
  if (c.hasInput(2)) {
    auto known = c.knownInput(2);
    if (!known)
      return c.error("the training_mode of Dropout must be known at import");
    training = known->getSplatValue<bool>();
  }
  double ratio = 0.5;
  if (training && c.hasInput(1)) {
    std::optional<double> known = knownScalar(c, 1);
    if (!known)
      return c.error("the ratio of Dropout must be a scalar known at import");
    ratio = *known;
  } else if (c.opset < 12) {
    ratio = c.attrFloat("ratio", 0.5f);
  }
  if (ratio < 0 || ratio >= 1)
    return c.error("the ratio of Dropout must be in [0, 1)");
  Value x = c.input(0);
  training &= ratio > 0;
  int64_t seed = c.attrInt("seed", 0);
  c.setOutput(0, training ? c.b.dropout(x, ratio, true, seed) : x);
  if (c.node->output_size() > 1 && !c.node->output(1).empty()) {
    if (!x)
      return failure();
    Value mask;
    if (training) {
      Value kept = c.b.dropout(
          c.b.fillLike(x, 1.0,
                       fromMlirType(getElementTypeOrSelf(x.getType()))
                           .value_or(DType::f32)),
          ratio, true, seed);
      mask = c.b.compare(CompareDirection::ne, kept, scalarLike(c, kept, 0));
    } else {
      mask = c.b.fillLike(x, 1, DType::i1);
    }
    c.setOutput(1, mask);
  }
  return success();
}

/// Shape of a tensor, known at import up to its dynamic dims.
LogicalResult shape(ImportContext &c) {
  Value x = c.input(0);
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  int64_t start = c.attrInt("start", 0), end = c.attrInt("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  // Known when every dim is static, else known up to the dynamic dims.
  SymShape s;
  for (int64_t i = start; i < end; ++i)
    s.dims.push_back(type.isDynamicDim(i)
                         ? SymDim{0, x, i, false}
                         : SymDim{type.getDimSize(i), {}, -1, false});
  setSymbolicOutput(c, s);
  return success();
}

/// A tensor of the symbolic shape `s` filled with `value`. Its dynamic dims
/// must be dims of one tensor, in increasing order (as `Shape` makes them):
/// a fill_like of that tensor, cut to size 1 and squeezed on its other
/// dims, then unsqueezed and broadcast to `s`.
FailureOr<Value> fillSymbolic(ImportContext &c, const SymShape &s, double value,
                              DType dtype) {
  Value src;
  SmallVector<int64_t> used;
  for (const SymDim &d : s.dims) {
    if (d.isStatic())
      continue;
    if (d.unknown || !d.source)
      return c.error("a shape entry is not known at import");
    if (src && d.source != src)
      return c.error("a shape whose dynamic dims come from several tensors "
                     "is not supported");
    if (!used.empty() && d.dim <= used.back())
      return c.error("a shape that reorders or repeats dynamic dims is not "
                     "supported");
    src = d.source;
    used.push_back(d.dim);
  }
  Value z = c.b.fillLike(src, value, dtype);
  // The shape of `src` itself (the common ConstantOfShape(Shape(x))).
  auto srcType = cast<RankedTensorType>(src.getType());
  if ((int64_t)s.dims.size() == srcType.getRank() &&
      llvm::all_of(llvm::enumerate(s.dims), [&](auto e) {
        const SymDim &d = e.value();
        return d.isStatic() ? d.value == srcType.getDimSize(e.index())
                            : d.dim == (int64_t)e.index();
      }))
    return z;
  SmallVector<int64_t> starts, ends, axes;
  for (int64_t i = 0; i < rankOf(src); ++i)
    if (!llvm::is_contained(used, i)) {
      starts.push_back(0);
      ends.push_back(1);
      axes.push_back(i);
    }
  if (!axes.empty())
    z = c.b.squeeze(c.b.slice(z, starts, ends, axes), axes);
  SmallVector<int64_t> staticPos, target;
  for (auto [i, d] : llvm::enumerate(s.dims)) {
    if (d.isStatic())
      staticPos.push_back(i);
    target.push_back(d.isStatic() ? d.value : -1);
  }
  if (!staticPos.empty())
    z = c.b.unsqueeze(z, staticPos);
  return c.b.broadcastTo(z, target);
}

LogicalResult expand(ImportContext &c) {
  Value x = c.input(0);
  if (!x)
    return failure();
  if (atRunTime(c, 1)) {
    c.setOutput(0, c.b.dynamicBroadcast(x, c.input(1)));
    return success();
  }
  FailureOr<SmallVector<int64_t>> shape = failure();
  if (auto sym = c.symbolicInput(1); sym && !c.knownInput(1)) {
    // A dynamic entry keeps x's dim at that (right-aligned) position when
    // it is that very dim; anything else cannot be expressed.
    auto type = cast<RankedTensorType>(x.getType());
    int64_t offset = (int64_t)sym->dims.size() - type.getRank();
    SmallVector<int64_t> values;
    for (auto [i, d] : llvm::enumerate(sym->dims)) {
      if (d.isStatic()) {
        values.push_back(d.value);
        continue;
      }
      int64_t xi = (int64_t)i - offset;
      if (d.source && xi >= 0 && sameDynamicDim(c, d.source, d.dim, x, xi)) {
        values.push_back(1); // 1 keeps x's dim below
        continue;
      }
      // Another tensor's dim: broadcast x against a fill of the shape
      // (where(true, x, x) takes x's values at the broadcast shape).
      auto mask = fillSymbolic(c, *sym, 1, DType::i1);
      if (failed(mask))
        return failure();
      c.setOutput(0, c.b.where(*mask, x, x));
      return success();
    }
    shape = values;
  } else {
    shape = c.intsInput(1, "the shape input of Expand");
  }
  if (failed(shape))
    return failure();
  // Expand broadcasts both ways: the target is broadcast(x.shape, shape),
  // where a 1 in `shape` keeps x's dim (-1 keeps it, also when dynamic).
  auto type = cast<RankedTensorType>(x.getType());
  size_t rank = std::max<size_t>(shape->size(), type.getRank());
  SmallVector<int64_t> target(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t s = i < shape->size() ? (*shape)[shape->size() - 1 - i] : 1;
    bool hasDim = i < (size_t)type.getRank();
    target[rank - 1 - i] = s == 1 && hasDim ? -1 : s;
  }
  c.setOutput(0, c.b.broadcastTo(x, target));
  return success();
}

LogicalResult pad(ImportContext &c) {
  std::string mode = c.attrString("mode", "constant");
  graph::PadMode m = mode == "reflect" ? graph::PadMode::reflect
                     : mode == "edge"  ? graph::PadMode::edge
                                       : graph::PadMode::constant;
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return c.error("unsupported pad mode '" + mode + "'");
  if (c.hasInput(3))
    return c.error("the axes input of Pad is not supported");
  if (atRunTime(c, 1) || atRunTime(c, 2)) {
    Value x = c.input(0);
    if (!x)
      return failure();
    Value value = c.hasInput(2) ? c.input(2) : scalarLike(c, x, 0);
    if (value && cast<RankedTensorType>(value.getType()).getRank() != 0)
      value = c.b.reshape(value, {});
    c.setOutput(0, c.b.dynamicPad(x, c.input(1), value, m));
    return success();
  }
  auto pads = c.intsInput(1, "pads");
  if (failed(pads))
    return failure();
  double value = 0.0;
  if (c.hasInput(2)) {
    std::optional<double> v = knownScalar(c, 2);
    if (!v)
      return c.error("the constant_value of Pad must be a scalar known at "
                     "import");
    value = *v;
  }
  c.setOutput(0, c.b.pad(c.input(0), *pads, m, value));
  return success();
}

//===----------------------------------------------------------------------===//
// Ops decomposed into graph ops
//===----------------------------------------------------------------------===//

/// Not(x) = (x == false); Not(Equal(a, b)) is (a != b), which is also
/// how the exporter writes `ne`.
LogicalResult notOp(ImportContext &c) {
  Value x = c.input(0);
  if (auto eq = x ? x.getDefiningOp<graph::CompareOp>() : nullptr;
      eq && eq.getDirection() == CompareDirection::eq) {
    c.setOutput(0, c.b.compare(CompareDirection::ne, eq.getLhs(), eq.getRhs()));
    return success();
  }
  c.setOutput(0,
              c.b.compare(CompareDirection::eq, x, c.b.scalar(0, DType::i1)));
  return success();
}

LogicalResult andOp(ImportContext &c) {
  c.setOutput(0, c.b.where(c.input(0), c.input(1), c.b.scalar(0, DType::i1)));
  return success();
}

LogicalResult orOp(ImportContext &c) {
  c.setOutput(0, c.b.where(c.input(0), c.b.scalar(1, DType::i1), c.input(1)));
  return success();
}

LogicalResult xorOp(ImportContext &c) {
  c.setOutput(0, c.b.compare(CompareDirection::ne, c.input(0), c.input(1)));
  return success();
}

LogicalResult castLike(ImportContext &c) {
  Value x = c.input(0), like = c.input(1);
  if (!x || !like)
    return failure();
  std::optional<DType> to =
      fromMlirType(cast<RankedTensorType>(like.getType()).getElementType());
  if (!to)
    return c.error("unsupported target element type");
  c.setOutput(0, c.b.cast(x, *to));
  return success();
}

/// where(x < 0, slope * x, x)
LogicalResult prelu(ImportContext &c) {
  Value x = c.input(0), slope = c.input(1);
  Value neg = c.b.compare(CompareDirection::lt, x, scalarLike(c, x, 0.0));
  c.setOutput(0, c.b.where(neg, c.b.mul(x, slope), x));
  return success();
}

/// alpha * (exp(x) - 1) for x < 0, else x; Selu scales both sides.
template <bool selu> LogicalResult elu(ImportContext &c) {
  Value x = c.input(0);
  double alpha = c.attrFloat("alpha", selu ? 1.67326319217681884765625f : 1.0f);
  double gamma = selu ? c.attrFloat("gamma", 1.05070102214813232421875f) : 1.0;
  Value negPart = c.b.mul(c.b.sub(c.b.exp(x), scalarLike(c, x, 1.0)),
                          scalarLike(c, x, alpha));
  Value isNeg = c.b.compare(CompareDirection::lt, x, scalarLike(c, x, 0.0));
  Value y = c.b.where(isNeg, negPart, x);
  if (selu)
    y = c.b.mul(y, scalarLike(c, x, gamma));
  c.setOutput(0, y);
  return success();
}

/// max(0, min(1, alpha * x + beta)); HardSwish is x * HardSigmoid(x) with
/// alpha = 1/6, beta = 0.5.
template <bool swish> LogicalResult hardSigmoid(ImportContext &c) {
  Value x = c.input(0);
  double alpha = swish ? 1.0 / 6.0 : c.attrFloat("alpha", 0.2f);
  double beta = swish ? 0.5 : c.attrFloat("beta", 0.5f);
  Value y =
      c.b.add(c.b.mul(x, scalarLike(c, x, alpha)), scalarLike(c, x, beta));
  y = c.b.clamp(y, 0.0, 1.0);
  c.setOutput(0, swish ? c.b.mul(x, y) : y);
  return success();
}

/// log(1 + exp(x)), computed as max(x, 0) + log(1 + exp(-|x|)).
LogicalResult softplus(ImportContext &c) {
  Value x = c.input(0);
  Value t =
      c.b.log(c.b.add(scalarLike(c, x, 1.0), c.b.exp(c.b.neg(c.b.abs(x)))));
  c.setOutput(0, c.b.add(c.b.relu(x), t));
  return success();
}

/// x / (1 + |x|)
LogicalResult softsign(ImportContext &c) {
  Value x = c.input(0);
  c.setOutput(0, c.b.div(x, c.b.add(scalarLike(c, x, 1.0), c.b.abs(x))));
  return success();
}

/// (x > 0) - (x < 0), in x's element type.
LogicalResult sign(ImportContext &c) {
  Value x = c.input(0);
  Value zero = scalarLike(c, x, 0.0);
  Value pos = c.b.where(c.b.compare(CompareDirection::gt, x, zero),
                        scalarLike(c, x, 1.0), zero);
  Value neg = c.b.where(c.b.compare(CompareDirection::lt, x, zero),
                        scalarLike(c, x, 1.0), zero);
  c.setOutput(0, c.b.sub(pos, neg));
  return success();
}

/// ReduceL1/L2/SumSquare/LogSum/LogSumExp as a sum of a transformed input.
enum class SumKind { L1, L2, SumSquare, LogSum, LogSumExp };
template <SumKind kind, bool axesInput>
LogicalResult reduceSumOf(ImportContext &c) {
  Value x = c.input(0);
  if (!x)
    return failure();
  auto knownAxes = axesOf(c, axesInput);
  if (failed(knownAxes))
    return failure();
  SmallVector<int64_t> axes = *knownAxes;
  if (axes.empty())
    for (int64_t i = 0; i < rankOf(x); ++i)
      axes.push_back(i);
  bool keepdims = c.attrInt("keepdims", 1);
  Value y;
  switch (kind) {
  case SumKind::L1:
    y = c.b.reduceSum(c.b.abs(x), axes, keepdims);
    break;
  case SumKind::L2:
    y = c.b.sqrt(c.b.reduceSum(c.b.mul(x, x), axes, keepdims));
    break;
  case SumKind::SumSquare:
    y = c.b.reduceSum(c.b.mul(x, x), axes, keepdims);
    break;
  case SumKind::LogSum:
    y = c.b.log(c.b.reduceSum(x, axes, keepdims));
    break;
  case SumKind::LogSumExp: {
    // max + log(sum(exp(x - max))), stable for large inputs.
    Value m = c.b.reduceMax(x, axes, /*keepdims=*/true);
    Value s = c.b.reduceSum(c.b.exp(c.b.sub(x, m)), axes, /*keepdims=*/true);
    y = c.b.add(c.b.log(s), m);
    if (!keepdims)
      y = c.b.squeeze(y, axes);
    break;
  }
  }
  c.setOutput(0, y);
  return success();
}

LogicalResult globalMaxPool(ImportContext &c) {
  Value x = c.input(0);
  SmallVector<int64_t> axes;
  for (int64_t i = 2; i < rankOf(x); ++i)
    axes.push_back(i);
  if (axes.empty())
    return c.error("input must have rank 3 or more ([N, C, spatial...])");
  c.setOutput(0, c.b.reduceMax(x, axes, /*keepdims=*/true));
  return success();
}

/// (x - mean) / sqrt(var + eps) over the spatial dims, then scale and bias
/// per channel.
LogicalResult instanceNorm(ImportContext &c) {
  Value x = c.input(0), scale = c.input(1), bias = c.input(2);
  int64_t rank = rankOf(x);
  if (rank < 3)
    return c.error("input must have rank 3 or more ([N, C, spatial...])");
  SmallVector<int64_t> axes;
  for (int64_t i = 2; i < rank; ++i)
    axes.push_back(i);
  Value mean = c.b.reduceMean(x, axes, true);
  Value centered = c.b.sub(x, mean);
  Value var = c.b.reduceMean(c.b.mul(centered, centered), axes, true);
  Value eps = scalarLike(c, x, c.attrFloat("epsilon", 1e-5f));
  Value y = c.b.mul(centered, c.b.rsqrt(c.b.add(var, eps)));
  // [C] -> [C, 1, ...] to broadcast over the spatial dims.
  SmallVector<int64_t> unsq;
  for (int64_t i = 1; i < rank - 1; ++i)
    unsq.push_back(i);
  y = c.b.mul(y, c.b.unsqueeze(scale, unsq));
  c.setOutput(0, c.b.add(y, c.b.unsqueeze(bias, unsq)));
  return success();
}

/// Size of a static tensor, known at import.
LogicalResult size(ImportContext &c) {
  Value x = c.input(0);
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  if (!type.hasStaticShape())
    return c.error("Size of a tensor with dynamic dims cannot be folded at "
                   "import");
  auto attrType = RankedTensorType::get({}, Builder(&c.ctx).getI64Type());
  c.known[c.node->output(0)] =
      DenseElementsAttr::get(attrType, type.getNumElements());
  return success();
}

/// A tensor of the given shape filled with the `value` attribute's scalar:
/// a known tensor when the shape is, else a fill of the symbolic shape.
LogicalResult constantOfShape(ImportContext &c) {
  Builder b(&c.ctx);
  Attribute scalar = b.getF32FloatAttr(0.0f);
  Type elem = b.getF32Type();
  if (const onnx::TensorProto *t = c.attrTensor("value")) {
    auto value = c.convertTensor(*t, c.nodeLoc());
    if (failed(value))
      return failure();
    auto dense = dyn_cast<DenseElementsAttr>(*value);
    if (!dense || dense.getNumElements() != 1)
      return c.error("the value of ConstantOfShape must hold one element");
    elem = dense.getElementType();
    scalar = *dense.value_begin<Attribute>();
  }
  if (atRunTime(c, 0)) {
    c.setOutput(0, c.b.dynamicFill(c.input(0), cast<TypedAttr>(scalar)));
    return success();
  }
  if (auto sym = c.symbolicInput(0); sym && !c.knownInput(0)) {
    double v = 0;
    if (auto f = dyn_cast<FloatAttr>(scalar))
      v = f.getValueAsDouble();
    else
      v = (double)cast<IntegerAttr>(scalar).getValue().getSExtValue();
    auto filled = fillSymbolic(c, *sym, v, *fromMlirType(elem));
    if (failed(filled))
      return failure();
    c.setOutput(0, *filled);
    return success();
  }
  auto shape = c.intsInput(0, "the shape input of ConstantOfShape");
  if (failed(shape))
    return failure();
  auto type = RankedTensorType::get(*shape, elem);
  c.known[c.node->output(0)] = DenseElementsAttr::get(type, scalar);
  return success();
}

/// Range: with start, limit and delta known at import and a short result,
/// a known tensor; else graph.range.
LogicalResult range(ImportContext &c) {
  auto atRunTimeRange = [&]() {
    c.setOutput(0, c.b.range(c.input(0), c.input(1), c.input(2)));
    return success();
  };
  // range(0, a dynamic dim, 1), as `torch.arange(x.size(1))` exports: an
  // iota along that dim, which shape rules then know to equal it.
  if (auto limit = c.symbolicInput(1);
      limit && limit->scalar && limit->dims.size() == 1 &&
      limit->dims[0].source && !limit->dims[0].unknown) {
    auto start = knownScalar(c, 0), delta = knownScalar(c, 2);
    if (start && delta && *start == 0 && *delta == 1) {
      Value x = limit->dims[0].source;
      int64_t dim = limit->dims[0].dim;
      int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
      SmallVector<int64_t> starts(rank, 0), ends(rank, 1), others;
      ends[dim] = INT64_MAX;
      for (int64_t d = 0; d < rank; ++d)
        if (d != dim)
          others.push_back(d);
      auto dtype = fromMlirType(c.knownInput(0)->getElementType());
      if (!dtype)
        return c.error("Range of an unsupported element type");
      Value ones = c.b.fillLike(c.b.slice(x, starts, ends), 1, *dtype);
      Value iota = c.b.cumsum(ones, dim, /*exclusive=*/true);
      c.setOutput(0, others.empty() ? iota : c.b.squeeze(iota, others));
      return success();
    }
  }
  if (atRunTime(c, 0) || atRunTime(c, 1) || atRunTime(c, 2))
    return atRunTimeRange();
  std::optional<double> v[3];
  for (int i = 0; i < 3; ++i) {
    v[i] = knownScalar(c, i);
    if (!v[i])
      return c.error("Range inputs must be scalars known at import");
  }
  Type elem = c.knownInput(0)->getElementType();
  double start = *v[0], limit = *v[1], delta = *v[2];
  if (delta == 0)
    return c.error("Range delta is zero");
  // Folded element by element only when short (positions, shape
  // arithmetic): a long one is computed at run time, where the run's
  // memory limits apply (billions of elements took minutes to fold).
  constexpr double kMaxFoldedElements = 1 << 16;
  double count = std::ceil((limit - start) / delta);
  if (!(count <= kMaxFoldedElements))
    return atRunTimeRange();
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
  auto type = RankedTensorType::get({n}, elem);
  SmallVector<Attribute> values;
  Builder b(&c.ctx);
  for (int64_t i = 0; i < n; ++i) {
    double x = start + i * delta;
    values.push_back(isa<FloatType>(elem) ? (Attribute)b.getFloatAttr(elem, x)
                                          : b.getIntegerAttr(elem, (int64_t)x));
  }
  c.known[c.node->output(0)] = DenseElementsAttr::get(type, values);
  return success();
}

/// Split into slices along an axis: sizes from the `split` input or
/// attribute, or equal parts (the last one smaller, opset 18).
template <bool splitInput> LogicalResult split(ImportContext &c) {
  Value x = c.input(0);
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  int64_t axis = c.attrInt("axis", 0);
  if (axis < 0)
    axis += type.getRank();
  if (axis < 0 || axis >= type.getRank())
    return c.error("axis out of range");
  SmallVector<int64_t> sizes;
  if (splitInput && atRunTime(c, 1)) {
    // Run-time sizes: part i is the slice [start_i, start_i + split[i])
    // with start = the exclusive cumsum of split.
    Value split = c.input(1);
    if (!split)
      return failure();
    auto st = cast<RankedTensorType>(split.getType());
    if (st.getRank() != 1 || st.getDimSize(0) != c.node->output_size())
      return c.error("Split has " + Twine(c.node->output_size()) +
                     " outputs but its split input is not 1-D of that length");
    Value starts = c.b.cumsum(split, 0, /*exclusive=*/true);
    auto one = [&](int64_t v) {
      auto t = RankedTensorType::get({1}, st.getElementType());
      return c.b.constant(
          DenseElementsAttr::get(t, IntegerAttr::get(st.getElementType(), v)));
    };
    Value axes = one(axis), steps = one(1);
    for (int64_t i = 0; i < c.node->output_size(); ++i) {
      Value start = c.b.slice(starts, {i}, {i + 1});
      Value end = c.b.add(start, c.b.slice(split, {i}, {i + 1}));
      c.setOutput(i, c.b.dynamicSlice(x, start, end, axes, steps));
    }
    return success();
  }
  if (splitInput && c.hasInput(1)) {
    auto known = c.intsInput(1, "split");
    if (failed(known))
      return failure();
    sizes = *known;
  } else if (!splitInput) {
    sizes = c.attrInts("split");
  }
  int64_t parts = c.node->output_size();
  if (sizes.empty()) {
    int64_t dim = type.getDimSize(axis);
    if (ShapedType::isDynamic(dim))
      return c.error("equal Split of a dynamic dim");
    int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
  }
  if ((int64_t)sizes.size() != parts)
    return c.error("Split has " + Twine(parts) + " outputs but " +
                   Twine(sizes.size()) + " sizes");
  int64_t start = 0;
  for (int64_t i = 0; i < parts; ++i) {
    c.setOutput(i, c.b.slice(x, {start}, {start + sizes[i]}, {axis}));
    start += sizes[i];
  }
  return success();
}

/// Tile with known repeats: unsqueeze a 1 before each dim, broadcast it to
/// the repeat count, and merge the pairs.
LogicalResult tile(ImportContext &c) {
  Value x = c.input(0);
  if (x && (atRunTime(c, 1) ||
            !cast<RankedTensorType>(x.getType()).hasStaticShape())) {
    c.setOutput(0, c.b.dynamicTile(x, c.input(1)));
    return success();
  }
  auto repeats = c.intsInput(1, "repeats");
  if (!x || failed(repeats))
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  if ((int64_t)repeats->size() != rank)
    return c.error("repeats has " + Twine(repeats->size()) +
                   " entries for rank " + Twine(rank));
  SmallVector<int64_t> axes, target, merged;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t n = 0;
    if ((*repeats)[i] < 0 ||
        llvm::MulOverflow((*repeats)[i], type.getDimSize(i), n))
      return c.error("repeats[" + Twine(i) + "] = " + Twine((*repeats)[i]) +
                     " is negative or overflows the dim of size " +
                     Twine(type.getDimSize(i)));
    axes.push_back(2 * i);
    target.push_back((*repeats)[i]);
    target.push_back(type.getDimSize(i));
    merged.push_back(n);
  }
  Value y = c.b.broadcastTo(c.b.unsqueeze(x, axes), target);
  c.setOutput(0, c.b.reshape(y, merged));
  return success();
}

//===----------------------------------------------------------------------===//
// Rounding, scans, selection, element-wise indexing, resampling
//===----------------------------------------------------------------------===//

/// Mod: `fmod = 1` is the truncated remainder (required for floats), else
/// the floored modulo of integers.
LogicalResult modOp(ImportContext &c) {
  Value a = c.input(0), b = c.input(1);
  if (!a || !b)
    return failure();
  bool fmod = c.attrInt("fmod", 0);
  if (!fmod && isa<FloatType>(getElementTypeOrSelf(a.getType())))
    return c.error("Mod of floats needs fmod = 1");
  c.setOutput(0, fmod ? c.b.rem(a, b) : c.b.mod(a, b));
  return success();
}

/// Whether inputs 0 .. n-1 hold integers (not booleans); an error naming
/// the first that does not.
LogicalResult integerInputs(ImportContext &c, int n) {
  for (int i = 0; i < n; ++i) {
    Value v = c.input(i);
    if (!v)
      return failure();
    Type t = getElementTypeOrSelf(v.getType());
    if (!isa<IntegerType>(t) || t.isInteger(1))
      return c.error("input " + Twine(i) + " (" + c.node->input(i) +
                     ") must hold integers");
  }
  return success();
}

/// BitShift: direction LEFT or RIGHT (logical on ONNX's unsigned types).
LogicalResult bitShift(ImportContext &c) {
  if (failed(integerInputs(c, 2)))
    return failure();
  std::string direction = c.attrString("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    return c.error("direction must be LEFT or RIGHT, not '" + direction + "'");
  c.setOutput(0, direction == "LEFT" ? c.b.shiftLeft(c.input(0), c.input(1))
                                     : c.b.shiftRight(c.input(0), c.input(1)));
  return success();
}

template <Binary fn> LogicalResult bitwise(ImportContext &c) {
  if (failed(integerInputs(c, 2)))
    return failure();
  c.setOutput(0, (c.b.*fn)(c.input(0), c.input(1)));
  return success();
}

LogicalResult bitwiseNot(ImportContext &c) {
  if (failed(integerInputs(c, 1)))
    return failure();
  c.setOutput(0, c.b.bitNot(c.input(0)));
  return success();
}

/// The axis input of CumSum (a scalar known at import).
LogicalResult cumsum(ImportContext &c) {
  if (atRunTime(c, 1)) {
    c.setOutput(0, c.b.dynamicCumSum(c.input(0), c.input(1),
                                     c.attrInt("exclusive", 0),
                                     c.attrInt("reverse", 0)));
    return success();
  }
  auto axis = c.intsInput(1, "the axis of CumSum");
  if (failed(axis))
    return failure();
  if (axis->size() != 1)
    return c.error("the axis of CumSum must hold one value");
  c.setOutput(0,
              c.b.cumsum(c.input(0), axis->front(), c.attrInt("exclusive", 0),
                         c.attrInt("reverse", 0)));
  return success();
}

/// TopK: k is an attribute before opset 10, then an input known at import.
template <bool kInput> LogicalResult topK(ImportContext &c) {
  if (kInput && atRunTime(c, 1)) {
    auto [values, indices] =
        c.b.dynamicTopK(c.input(0), c.input(1), c.attrInt("axis", -1),
                        c.attrInt("largest", 1), c.attrInt("sorted", 1));
    c.setOutput(0, values);
    c.setOutput(1, indices);
    return success();
  }
  int64_t k = c.attrInt("k", -1);
  if (kInput) {
    auto known = c.intsInput(1, "K of TopK");
    if (failed(known))
      return failure();
    if (known->size() != 1)
      return c.error("K of TopK must hold one value");
    k = known->front();
  }
  auto [values, indices] =
      c.b.topK(c.input(0), k, c.attrInt("axis", -1), c.attrInt("largest", 1),
               c.attrInt("sorted", 1));
  c.setOutput(0, values);
  c.setOutput(1, indices);
  return success();
}

/// Trilu: k known at import is the op's attribute; a run-time k becomes the
/// mask (col - row >= k for the upper part, <= k for the lower) over the
/// last two dims.
LogicalResult trilu(ImportContext &c) {
  bool upper = c.attrInt("upper", 1);
  if (!c.hasInput(1) || c.knownInput(1)) {
    int64_t k = 0;
    if (c.hasInput(1)) {
      auto known = c.intsInput(1, "k of Trilu");
      if (failed(known))
        return failure();
      if (known->size() != 1)
        return c.error("k of Trilu must hold one value");
      k = known->front();
    }
    c.setOutput(0, c.b.trilu(c.input(0), upper, k));
    return success();
  }
  Value x = c.input(0), k = c.input(1);
  if (!x || !k)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  auto kType = cast<RankedTensorType>(k.getType());
  if (type.getRank() < 2)
    return c.error("Trilu needs a rank 2 or higher input");
  if (kType.getNumElements() != 1)
    return c.error("k of Trilu must hold one value");
  int64_t rows = type.getDimSize(type.getRank() - 2),
          cols = type.getDimSize(type.getRank() - 1);
  if (ShapedType::isDynamic(rows) || ShapedType::isDynamic(cols))
    return c.error("a Trilu with a run-time k needs static matrix dims");
  Value kScalar =
      kType.getRank() == 0 ? k : c.b.reshape(k, SmallVector<int64_t>{});
  Value diag = c.b.sub(c.b.iota({1, cols}, 1, DType::i64),
                       c.b.iota({rows, 1}, 0, DType::i64));
  if (!kType.getElementType().isInteger(64))
    kScalar = c.b.cast(kScalar, DType::i64);
  Value keep = c.b.compare(upper ? CompareDirection::ge : CompareDirection::le,
                           diag, kScalar);
  Value zero = c.b.fillLike(x, 0, *fromMlirType(type.getElementType()));
  c.setOutput(0, c.b.where(keep, x, zero));
  return success();
}

/// Pow (ONNX allows mixed types; the result has the base's type): a float
/// base raises to the exponent converted to its type; an integer base is
/// raised in f64, exact while the result fits f64's 53-bit mantissa, and
/// converted back.
LogicalResult powOp(ImportContext &c) {
  Value x = c.input(0), y = c.input(1);
  if (!x || !y)
    return failure();
  std::optional<DType> xt = fromMlirType(getElementTypeOrSelf(x.getType()));
  std::optional<DType> yt = fromMlirType(getElementTypeOrSelf(y.getType()));
  if (!xt || !yt)
    return failure();
  if (isa<FloatType>(getElementTypeOrSelf(x.getType()))) {
    c.setOutput(0, c.b.pow(x, *yt == *xt ? y : c.b.cast(y, *xt)));
    return success();
  }
  Value r = c.b.pow(c.b.cast(x, DType::f64),
                    *yt == DType::f64 ? y : c.b.cast(y, DType::f64));
  c.setOutput(0, c.b.cast(r, *xt));
  return success();
}

LogicalResult gatherElements(ImportContext &c) {
  c.setOutput(0,
              c.b.gatherElements(c.input(0), c.input(1), c.attrInt("axis", 0)));
  return success();
}

/// ScatterElements (and the deprecated Scatter, which has no reduction).
LogicalResult scatterElements(ImportContext &c) {
  std::string r = c.attrString("reduction", "none");
  auto reduction = graph::symbolizeScatterReduction(r);
  if (!reduction)
    return c.error("unsupported reduction '" + r + "'");
  c.setOutput(0, c.b.scatterElements(c.input(0), c.input(1), c.input(2),
                                     c.attrInt("axis", 0), *reduction));
  return success();
}

/// A float tensor known at import, as doubles; empty when absent or empty.
FailureOr<SmallVector<double>> floatsInput(ImportContext &c, int i,
                                           StringRef what) {
  SmallVector<double> out;
  if (!c.hasInput(i))
    return out;
  auto v = c.knownInput(i);
  if (!v || !isa<FloatType>(v->getElementType()))
    return c.error(what + " must be a float tensor known at import");
  for (const APFloat &f : v->getValues<APFloat>())
    out.push_back(f.convertToDouble());
  return out;
}

/// Resize (opsets 10-19) and Upsample: scales or sizes known at import.
/// `version` selects the inputs and defaults of the opset.
template <int version> LogicalResult resize(ImportContext &c) {
  Value x = c.input(0);
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  // Opset 10 and Upsample: (X, scales); asymmetric coordinates, floor.
  bool old = version <= 10;
  std::string mode = c.attrString("mode", "nearest");
  std::string coord =
      old ? "asymmetric"
          : c.attrString("coordinate_transformation_mode", "half_pixel");
  std::string nearest =
      old ? "floor" : c.attrString("nearest_mode", "round_prefer_floor");
  // The tf_* coordinate modes as gathers (OnnxMisc.cpp).
  if (coord == "tf_crop_and_resize" || coord == "tf_half_pixel_for_nn")
    return resizeTf(c);
  if (c.attrInt("antialias", 0))
    return c.error("antialias is not supported");
  auto m = graph::symbolizeResizeMode(mode == "bilinear" ? "linear" : mode);
  auto cm = graph::symbolizeCoordinateMode(coord);
  auto nm = graph::symbolizeNearestMode(nearest);
  if (!m || !cm || !nm)
    return c.error("unsupported mode '" + mode + "', coordinate mode '" +
                   coord + "' or nearest mode '" + nearest + "'");
  // Scales or sizes known only at run time.
  int scalesAt = old ? 1 : 2;
  bool sizesAtRunTime = !old && atRunTime(c, 3);
  if (sizesAtRunTime || atRunTime(c, scalesAt)) {
    if (!c.attrInts("axes").empty() ||
        c.attrString("keep_aspect_ratio_policy", "stretch") != "stretch")
      return c.error("Resize with run-time scales or sizes takes neither axes "
                     "nor a keep_aspect_ratio_policy");
    c.setOutput(0, c.b.dynamicResize(x, c.input(sizesAtRunTime ? 3 : scalesAt),
                                     *m, *cm, *nm,
                                     c.attrFloat("cubic_coeff_a", -0.75f),
                                     c.attrInt("exclude_outside", 0)));
    return success();
  }
  auto scales = floatsInput(c, scalesAt, "the scales of Resize");
  if (failed(scales))
    return failure();
  SmallVector<int64_t> sizes;
  if (!old && c.hasInput(3)) {
    auto known = c.intsInput(3, "the sizes of Resize");
    if (failed(known))
      return failure();
    sizes = *known;
  }
  if (scales->empty() == sizes.empty())
    return c.error("Resize needs exactly one of scales and sizes");
  // Opset 18: scales or sizes may cover only `axes`.
  SmallVector<int64_t> axes = c.attrInts("axes");
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  size_t given = scales->empty() ? sizes.size() : scales->size();
  if (given != axes.size())
    return c.error("Resize has " + Twine(given) + " scales or sizes for " +
                   Twine(axes.size()) + " axes");
  SmallVector<double> allScales(rank, 1.0);
  SmallVector<int64_t> allSizes(rank, -1);
  for (auto [i, a] : llvm::enumerate(axes)) {
    if (a < 0)
      a += rank;
    if (a < 0 || a >= rank)
      return c.error("Resize axis out of range");
    if (!scales->empty()) {
      allScales[a] = (*scales)[i];
      continue;
    }
    allSizes[a] = sizes[i];
  }
  if (!sizes.empty()) {
    // keep_aspect_ratio_policy (opset 18) scales every axis alike.
    std::string policy = c.attrString("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch") {
      double s = policy == "not_larger" ? 1e300 : 0;
      for (int64_t a : axes) {
        if (type.isDynamicDim(a))
          return c.error("keep_aspect_ratio_policy needs static dims");
        double r = (double)allSizes[a] / type.getDimSize(a);
        s = policy == "not_larger" ? std::min(s, r) : std::max(s, r);
      }
      for (int64_t a : axes)
        allSizes[a] = (int64_t)std::round(s * type.getDimSize(a));
    }
    for (int64_t a : axes)
      allScales[a] =
          type.isDynamicDim(a) ? 0.0 : (double)allSizes[a] / type.getDimSize(a);
  }
  c.setOutput(0, c.b.resize(x, allScales, allSizes, *m, *cm, *nm,
                            c.attrFloat("cubic_coeff_a", -0.75f),
                            c.attrInt("exclude_outside", 0)));
  return success();
}

/// NegativeLogLikelihoodLoss on log-probabilities `input` [N, C, d...]:
/// -input[n, target[n, d...], d...] times the class weight, with
/// `ignore_index` targets weighing 0; `mean` divides by the total weight.
Value nllLoss(ImportContext &c, Value input, Value target, Value weight,
              graph::Reduction reduction, std::optional<int64_t> ignore) {
  GraphBuilder &b = c.b;
  Value valid;
  if (ignore) {
    Value ii = scalarLike(c, target, (double)*ignore);
    valid = b.compare(CompareDirection::ne, target, ii);
    target = b.where(valid, target, scalarLike(c, target, 0));
  }
  Value picked = b.gatherElements(input, b.unsqueeze(target, {1}), 1);
  Value loss = b.neg(b.squeeze(picked, {1}));
  Value w;
  if (weight)
    w = b.gather(weight, target, 0);
  if (valid)
    w = w ? b.where(valid, w, scalarLike(c, w, 0))
          : b.cast(valid, *fromMlirType(getElementTypeOrSelf(loss.getType())));
  if (w)
    loss = b.mul(loss, w);
  if (reduction == graph::Reduction::none)
    return loss;
  SmallVector<int64_t> all;
  for (int64_t i = 0; i < rankOf(loss); ++i)
    all.push_back(i);
  Value sum = b.reduceSum(loss, all);
  if (reduction == graph::Reduction::sum)
    return sum;
  return w ? b.div(sum, b.reduceSum(w, all)) : b.reduceMean(loss, all);
}

FailureOr<graph::Reduction> lossReduction(ImportContext &c) {
  std::string r = c.attrString("reduction", "mean");
  auto reduction = graph::symbolizeReduction(r);
  if (!reduction)
    return c.error("unsupported reduction '" + r + "'");
  return *reduction;
}

std::optional<int64_t> ignoreIndex(ImportContext &c) {
  if (!c.hasAttr("ignore_index"))
    return std::nullopt;
  return c.attrInt("ignore_index", 0);
}

LogicalResult nllLossOp(ImportContext &c) {
  auto reduction = lossReduction(c);
  if (failed(reduction))
    return failure();
  Value input = c.input(0), target = c.input(1);
  Value weight = c.hasInput(2) ? c.input(2) : Value();
  if (!input || !target)
    return failure();
  if (rankOf(input) < 2)
    return c.error("input must have rank 2 or more ([N, C, ...])");
  c.setOutput(0, nllLoss(c, input, target, weight, *reduction, ignoreIndex(c)));
  return success();
}

/// SoftmaxCrossEntropyLoss: the fused graph.cross_entropy (classes moved
/// last) when there are no class weights and no log_prob output; else the
/// NLL of log_softmax over dim 1.
LogicalResult softmaxCrossEntropy(ImportContext &c) {
  auto reduction = lossReduction(c);
  if (failed(reduction))
    return failure();
  Value scores = c.input(0), labels = c.input(1);
  if (!scores || !labels)
    return failure();
  int64_t rank = rankOf(scores);
  if (rank < 2)
    return c.error("scores must have rank 2 or more ([N, C, ...])");
  bool wantLogProb = c.node->output_size() > 1 && !c.node->output(1).empty();
  if (c.hasInput(2) || wantLogProb) {
    Value logProb = c.b.logSoftmax(scores, 1);
    Value weight = c.hasInput(2) ? c.input(2) : Value();
    c.setOutput(
        0, nllLoss(c, logProb, labels, weight, *reduction, ignoreIndex(c)));
    if (wantLogProb)
      c.setOutput(1, logProb);
    return success();
  }
  if (rank > 2) {
    SmallVector<int64_t> perm = {0};
    for (int64_t i = 2; i < rank; ++i)
      perm.push_back(i);
    perm.push_back(1);
    scores = c.b.transpose(scores, perm);
  }
  c.setOutput(0, c.b.crossEntropy(scores, labels, *reduction, ignoreIndex(c)));
  return success();
}

} // namespace

static const OpEntry kOps[] = {
    // Elementwise.
    {"", "Add", 7, binary<&GraphBuilder::add>},
    {"", "Sub", 7, binary<&GraphBuilder::sub>},
    {"", "Mul", 7, binary<&GraphBuilder::mul>},
    {"", "Div", 7, binary<&GraphBuilder::div>},
    {"", "Pow", 7, powOp},
    {"", "Max", 8, variadic<&GraphBuilder::max>},
    {"", "Min", 8, variadic<&GraphBuilder::min>},
    {"", "Sum", 8, variadic<&GraphBuilder::add>},
    {"", "Mean", 8, mean},
    {"", "Neg", 6, unary<&GraphBuilder::neg>},
    {"", "Abs", 6, unary<&GraphBuilder::abs>},
    {"", "Exp", 6, unary<&GraphBuilder::exp>},
    {"", "Log", 6, unary<&GraphBuilder::log>},
    {"", "Sqrt", 6, unary<&GraphBuilder::sqrt>},
    {"", "Reciprocal", 6, reciprocal},
    {"", "Tanh", 6, unary<&GraphBuilder::tanh>},
    {"", "Cos", 7, unary<&GraphBuilder::cos>},
    {"", "Sin", 7, unary<&GraphBuilder::sin>},
    {"", "Sigmoid", 6, unary<&GraphBuilder::sigmoid>},
    {"", "Relu", 6, unary<&GraphBuilder::relu>},
    {"", "LeakyRelu", 6, leakyRelu},
    {"", "Erf", 9, unary<&GraphBuilder::erf>},
    {"", "Gelu", 20, gelu},
    {"", "Clip", 6, clipV6},
    {"", "Clip", 11, clipV11},
    {"", "Cast", 6, castOp},
    {"", "Where", 9, whereOp},
    {"", "Equal", 7, compare<CompareDirection::eq>},
    {"", "Less", 7, compare<CompareDirection::lt>},
    {"", "LessOrEqual", 12, compare<CompareDirection::le>},
    {"", "Greater", 7, compare<CompareDirection::gt>},
    {"", "GreaterOrEqual", 12, compare<CompareDirection::ge>},
    {"", "Identity", 1, identity},
    {"", "Dropout", 7, dropout},
    // Random ops (OnnxRandom.cpp).
    {"", "RandomUniform", 1, randomUniform},
    {"", "RandomUniformLike", 1, randomUniformLike},
    {"", "RandomNormal", 1, randomNormal},
    {"", "RandomNormalLike", 1, randomNormalLike},
    {"", "Bernoulli", 15, bernoulli},
    {"", "Multinomial", 7, multinomial},
    {"", "Constant", 9, constant},
    // Linear algebra, convolution, pooling, normalization.
    {"", "MatMul", 9, matmul},
    {"", "Gemm", 7, gemm},
    {"", "Conv", 1, conv},
    {"", "MaxPool", 8, maxPool},
    {"", "AveragePool", 7, avgPool},
    {"", "GlobalAveragePool", 1, globalAvgPool},
    {"", "BatchNormalization", 9, batchNorm},
    {"", "LayerNormalization", 17, layerNorm},
    {"", "Softmax", 1, softmaxV1<false>},
    {"", "Softmax", 13, softmaxV13<false>},
    {"", "LogSoftmax", 1, softmaxV1<true>},
    {"", "LogSoftmax", 13, softmaxV13<true>},
    // Reductions: axes moved from attribute to input (Sum at 13, others 18).
    {"", "ReduceSum", 1, reduce<ReduceKind::Sum, false>},
    {"", "ReduceSum", 13, reduce<ReduceKind::Sum, true>},
    {"", "ReduceMean", 1, reduce<ReduceKind::Mean, false>},
    {"", "ReduceMean", 18, reduce<ReduceKind::Mean, true>},
    {"", "ReduceMax", 1, reduce<ReduceKind::Max, false>},
    {"", "ReduceMax", 18, reduce<ReduceKind::Max, true>},
    {"", "ReduceMin", 1, reduce<ReduceKind::Min, false>},
    {"", "ReduceMin", 18, reduce<ReduceKind::Min, true>},
    {"", "ReduceProd", 1, reduce<ReduceKind::Prod, false>},
    {"", "ReduceProd", 18, reduce<ReduceKind::Prod, true>},
    {"", "ArgMax", 1, argReduce<true>},
    {"", "ArgMin", 1, argReduce<false>},
    // Shapes.
    {"", "Reshape", 5, reshape, /*shapeInput=*/1},
    {"", "Transpose", 1, transpose},
    {"", "Flatten", 1, flatten},
    {"", "Concat", 4, concat},
    {"", "Squeeze", 1, squeeze<false>},
    {"", "Squeeze", 13, squeeze<true>},
    {"", "Unsqueeze", 1, unsqueeze<false>},
    {"", "Unsqueeze", 13, unsqueeze<true>},
    {"", "Slice", 1, sliceV1},
    {"", "Slice", 10, sliceV10},
    {"", "Gather", 1, gather},
    {"", "Shape", 1, shape},
    {"", "Expand", 8, expand, /*shapeInput=*/1},
    {"", "Pad", 11, pad},
    // Decomposed into graph ops.
    {"", "Not", 1, notOp},
    {"", "And", 7, andOp},
    {"", "Or", 7, orOp},
    {"", "Xor", 7, xorOp},
    {"", "CastLike", 15, castLike},
    {"", "PRelu", 9, prelu},
    {"", "Elu", 6, elu<false>},
    {"", "Selu", 6, elu<true>},
    {"", "HardSigmoid", 6, hardSigmoid<false>},
    {"", "HardSwish", 14, hardSigmoid<true>},
    {"", "Softplus", 1, softplus},
    {"", "Softsign", 1, softsign},
    {"", "Sign", 9, sign},
    {"", "ReduceL1", 1, reduceSumOf<SumKind::L1, false>},
    {"", "ReduceL1", 18, reduceSumOf<SumKind::L1, true>},
    {"", "ReduceL2", 1, reduceSumOf<SumKind::L2, false>},
    {"", "ReduceL2", 18, reduceSumOf<SumKind::L2, true>},
    {"", "ReduceSumSquare", 1, reduceSumOf<SumKind::SumSquare, false>},
    {"", "ReduceSumSquare", 18, reduceSumOf<SumKind::SumSquare, true>},
    {"", "ReduceLogSum", 1, reduceSumOf<SumKind::LogSum, false>},
    {"", "ReduceLogSum", 18, reduceSumOf<SumKind::LogSum, true>},
    {"", "ReduceLogSumExp", 1, reduceSumOf<SumKind::LogSumExp, false>},
    {"", "ReduceLogSumExp", 18, reduceSumOf<SumKind::LogSumExp, true>},
    {"", "GlobalMaxPool", 1, globalMaxPool},
    {"", "InstanceNormalization", 6, instanceNorm},
    {"", "Size", 1, size},
    {"", "ConstantOfShape", 9, constantOfShape, /*shapeInput=*/0},
    {"", "Range", 11, range},
    {"", "Split", 2, split<false>},
    {"", "Split", 13, split<true>},
    {"", "Tile", 6, tile},
    {"", "SoftmaxCrossEntropyLoss", 12, softmaxCrossEntropy},
    {"", "NegativeLogLikelihoodLoss", 12, nllLossOp},
    {"", "Floor", 6, unary<&GraphBuilder::floor>},
    {"", "Ceil", 6, unary<&GraphBuilder::ceil>},
    {"", "Round", 11, unary<&GraphBuilder::round>},
    {"", "Mod", 10, modOp},
    {"", "BitShift", 11, bitShift},
    {"", "BitwiseAnd", 18, bitwise<&GraphBuilder::bitAnd>},
    {"", "BitwiseOr", 18, bitwise<&GraphBuilder::bitOr>},
    {"", "BitwiseXor", 18, bitwise<&GraphBuilder::bitXor>},
    {"", "BitwiseNot", 18, bitwiseNot},
    {"", "CumSum", 11, cumsum},
    {"", "TopK", 1, topK<false>},
    {"", "TopK", 10, topK<true>},
    {"", "Trilu", 14, trilu},
    {"", "GatherElements", 11, gatherElements},
    {"", "Scatter", 9, scatterElements},
    {"", "ScatterElements", 11, scatterElements},
    {"", "Upsample", 9, resize<9>},
    {"", "Resize", 10, resize<10>},
    {"", "Resize", 11, resize<11>},
    {"", "Einsum", 12, einsum},
    {"", "Sinh", 9, sinh},
    {"", "Cosh", 9, cosh},
    {"", "Tan", 7, tan},
    {"", "Asinh", 9, inverseHyperbolic<false>},
    {"", "Acosh", 9, inverseHyperbolic<true>},
    {"", "Atanh", 9, atanh},
    {"", "Atan", 7, unary<&GraphBuilder::atan>},
    {"", "Asin", 7, asin},
    {"", "Acos", 7, acos},
    {"", "ThresholdedRelu", 10, thresholdedRelu},
    {"", "Shrink", 9, shrink},
    {"", "IsInf", 10, isInf},
    {"", "IsNaN", 9, isNaN},
    {"", "IsNaN", 13, isNaN},
    {"", "EyeLike", 9, eyeLike},
    {"", "OneHot", 9, oneHotAnyDepth},
    {"", "OneHot", 11, oneHotAnyDepth},
    {"", "Hardmax", 1, hardmax},
    {"", "Hardmax", 11, hardmax},
    {"", "Hardmax", 13, hardmax},
    {"", "QuantizeLinear", 10, quantizeLinear},
    {"", "QuantizeLinear", 13, quantizeLinear},
    {"", "QuantizeLinear", 19, quantizeLinear},
    {"", "DequantizeLinear", 10, dequantizeLinear},
    {"", "DequantizeLinear", 13, dequantizeLinear},
    {"", "DequantizeLinear", 19, dequantizeLinear},
    {"", "DynamicQuantizeLinear", 11, dynamicQuantizeLinear},
    {"", "MatMulInteger", 10, matMulInteger},
    {"", "QLinearMatMul", 10, qLinearMatMul},
    {"", "ConvInteger", 10, convInteger},
    {"", "QLinearConv", 10, qLinearConv},
    {"", "DepthToSpace", 1, depthSpace<true>},
    {"", "DepthToSpace", 11, depthSpace<true>},
    {"", "DepthToSpace", 13, depthSpace<true>},
    {"", "SpaceToDepth", 1, depthSpace<false>},
    {"", "SpaceToDepth", 13, depthSpace<false>},
    {"", "LSTM", 7, lstm},
    {"", "LSTM", 14, lstm},
    {"", "GRU", 7, gru},
    {"", "GRU", 14, gru},
    {"", "RNN", 7, rnn},
    {"", "RNN", 14, rnn},
    {"", "GatherND", 11, gatherND},
    {"", "ScatterND", 11, scatterND},
    {"", "ReverseSequence", 10, reverseSequence},
    {"", "MaxUnpool", 9, maxUnpool},
    {"", "LRN", 1, lrn},
    {"", "GridSample", 16, gridSample},
    {"", "RoiAlign", 10, roiAlign},
    {"", "HannWindow", 17, hannWindow},
    {"", "HammingWindow", 17, hammingWindow},
    {"", "BlackmanWindow", 17, blackmanWindow},
    {"", "DFT", 17, dft<17>},
    {"", "DFT", 20, dft<20>},
    {"", "STFT", 17, stft},
    {"", "MelWeightMatrix", 17, melWeightMatrix},
    {"", "Det", 11, det},
    {"", "ConvTranspose", 1, convTranspose},
    {"", "ConvTranspose", 11, convTranspose},
    // Old-opset forms (OnnxLegacy.cpp).
    {"", "Add", 1, binaryV1<&GraphBuilder::add>},
    {"", "Sub", 1, binaryV1<&GraphBuilder::sub>},
    {"", "Mul", 1, binaryV1<&GraphBuilder::mul>},
    {"", "Div", 1, binaryV1<&GraphBuilder::div>},
    {"", "Pow", 1, binaryV1<&GraphBuilder::pow>},
    {"", "Sum", 1, newerForm},
    {"", "Max", 1, newerForm},
    {"", "Min", 1, newerForm},
    {"", "Mean", 1, newerForm},
    {"", "Gemm", 1, newerForm},
    {"", "MatMul", 1, newerForm},
    {"", "Constant", 1, newerForm},
    {"", "Constant", 12, constantForms},
    {"", "MaxPool", 1, newerForm},
    {"", "AveragePool", 1, newerForm},
    {"", "PRelu", 1, preluV1},
    {"", "PRelu", 7, newerForm},
    {"", "Pad", 1, padV1},
    {"", "BatchNormalization", 1, batchNormV1},
    {"", "Celu", 12, celu},
    {"", "MeanVarianceNormalization", 9, meanVarianceNormalization},
    // Control flow (OnnxControlFlow.cpp).
    {"", "If", 1, ifOp},
    {"", "Loop", 1, loopOp},
    {"", "Scan", 8, scanOp},
    {"", "Scan", 9, scanOp},
    // Sequences as lists known at import (OnnxSequence.cpp).
    {"", "SequenceEmpty", 11, sequenceEmpty},
    {"", "SequenceConstruct", 11, sequenceConstruct},
    {"", "SequenceInsert", 11, sequenceInsert, -1, /*takesSequences=*/true},
    {"", "SequenceErase", 11, sequenceErase, -1, /*takesSequences=*/true},
    {"", "SequenceAt", 11, sequenceAt, -1, /*takesSequences=*/true},
    {"", "SequenceLength", 11, sequenceLength, -1, /*takesSequences=*/true},
    {"", "SplitToSequence", 11, splitToSequence},
    {"", "ConcatFromSequence", 11, concatFromSequence, -1,
     /*takesSequences=*/true},
    {"", "SequenceMap", 17, sequenceMap, -1, /*takesSequences=*/true},
    // Optionals known at import; Identity and Loop of sequences and
    // optionals (OnnxSequence.cpp, OnnxControlFlow.cpp).
    {"", "Optional", 15, optionalOp, -1, /*takesSequences=*/true},
    {"", "OptionalHasElement", 15, optionalHasElement, -1,
     /*takesSequences=*/true},
    {"", "OptionalGetElement", 15, optionalGetElement, -1,
     /*takesSequences=*/true},
    {"", "Identity", 14, identityAny, -1, /*takesSequences=*/true},
    {"", "Loop", 13, loopOp, -1, /*takesSequences=*/true},
    // Training optimizers, TfIdfVectorizer (OnnxMisc.cpp).
    {"ai.onnx.preview.training", "Adam", 1, adam},
    {"ai.onnx.preview.training", "Adagrad", 1, adagrad},
    {"ai.onnx.preview.training", "Momentum", 1, momentum},
    {"", "TfIdfVectorizer", 9, tfIdfVectorizer},
    // Output sizes the data's, around graph.nonzero (OnnxDataDependent.cpp).
    {"", "NonZero", 9, nonZero},
    {"", "NonZero", 13, nonZero},
    {"", "Compress", 9, compress},
    {"", "Compress", 11, compress},
    {"", "Unique", 11, unique},
    {"", "NonMaxSuppression", 10, nonMaxSuppression},
    {"", "NonMaxSuppression", 11, nonMaxSuppression},
};

const OpEntry *loom::onnx_import::lookupOp(StringRef domain, StringRef opType,
                                           int64_t opset) {
  const OpEntry *best = nullptr;
  for (const OpEntry &e : kOps)
    if (domain == e.domain && opType == e.opType && e.sinceVersion <= opset &&
        (!best || e.sinceVersion > best->sinceVersion))
      best = &e;
  return best;
}
