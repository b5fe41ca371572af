//===- GraphBuilder.cpp - build graph IR from C++ -------------------------===//

#include "frontends/builder/GraphBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace loom;
using namespace loom::graph;

Type loom::toMlirType(MLIRContext &ctx, DType dtype) {
  Builder b(&ctx);
  switch (dtype) {
  case DType::f32:
    return b.getF32Type();
  case DType::f16:
    return b.getF16Type();
  case DType::bf16:
    return b.getBF16Type();
  case DType::f64:
    return b.getF64Type();
  case DType::i1:
    return b.getI1Type();
  case DType::i8:
    return b.getI8Type();
  case DType::i16:
    return b.getI16Type();
  case DType::u8:
  case DType::u16:
  case DType::u32:
  case DType::u64: {
    unsigned width = dtype == DType::u8    ? 8
                     : dtype == DType::u16 ? 16
                     : dtype == DType::u32 ? 32
                                           : 64;
    return b.getIntegerType(width, /*isSigned=*/false);
  }
  case DType::i32:
    return b.getI32Type();
  case DType::i64:
    return b.getI64Type();
  }
  llvm_unreachable("unknown DType");
}

std::optional<DType> loom::fromMlirType(Type type) {
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i1,
                  DType::i8, DType::i16, DType::i32, DType::i64, DType::u8,
                  DType::u16, DType::u32, DType::u64})
    if (toMlirType(*type.getContext(), d) == type)
      return d;
  return std::nullopt;
}

namespace {
/// Keeps the first error diagnostic emitted while it is alive, with its
/// location, instead of printing it.
class FirstError {
public:
  explicit FirstError(MLIRContext &ctx)
      : handler(&ctx, [this](Diagnostic &diag) {
          if (diag.getSeverity() == DiagnosticSeverity::Error &&
              message.empty())
            message = diag.str();
          return success();
        }) {}
  std::string message;

private:
  ScopedDiagnosticHandler handler;
};
} // namespace

GraphBuilder::GraphBuilder(MLIRContext &ctx, StringRef funcName)
    : ctx_(ctx), builder_(&ctx), funcName_(funcName.str()) {
  ctx.getOrLoadDialect<GraphDialect>();
  ctx.getOrLoadDialect<func::FuncDialect>();
  Location loc = NameLoc::get(StringAttr::get(&ctx, funcName));
  module_ = ModuleOp::create(loc);
  builder_.setInsertionPointToEnd(module_->getBody());
  auto func = builder_.create<func::FuncOp>(loc, funcName,
                                            builder_.getFunctionType({}, {}));
  func_ = func;
  body_ = func.addEntryBlock();
  builder_.setInsertionPointToEnd(body_);
}

GraphBuilder::~GraphBuilder() = default;

void GraphBuilder::fail(const Twine &message) {
  if (error_.empty())
    error_ = message.str();
}

Location GraphBuilder::location(StringRef opName) {
  std::string path;
  for (const std::string &s : scopes_)
    path += s + "/";
  path += opName.str();
  return NameLoc::get(StringAttr::get(&ctx_, path));
}

GraphBuilder::Scope GraphBuilder::scope(StringRef name) {
  scopes_.push_back(name.str());
  return Scope(this);
}

GraphBuilder::Scope::~Scope() {
  if (builder)
    builder->scopes_.pop_back();
}

RankedTensorType GraphBuilder::tensorType(Value v, StringRef what) {
  if (!ok())
    return {};
  if (!v) {
    fail(what + ": operand is null (an earlier call failed?)");
    return {};
  }
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t)
    fail(what + ": operand is not a ranked tensor");
  return t;
}

int64_t GraphBuilder::normalizeAxis(int64_t axis, int64_t rank,
                                    StringRef what) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    fail(what + ": axis " + Twine(axis) + " is out of range for rank " +
         Twine(rank));
    return -1;
  }
  return a;
}

bool GraphBuilder::normalizeAxes(ArrayRef<int64_t> axes, int64_t rank,
                                 StringRef what,
                                 SmallVectorImpl<int64_t> &out) {
  out.clear();
  for (int64_t a : axes) {
    int64_t n = normalizeAxis(a, rank, what);
    if (n < 0)
      return false;
    out.push_back(n);
  }
  llvm::sort(out);
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    fail(what + ": repeated axis");
    return false;
  }
  return true;
}

template <typename OpTy>
Value GraphBuilder::build(ValueRange operands, ArrayRef<NamedAttribute> attrs) {
  Operation *op = buildOp<OpTy>(operands, attrs);
  return op ? op->getResult(0) : Value();
}

template <typename OpTy>
Operation *GraphBuilder::buildOp(ValueRange operands,
                                 ArrayRef<NamedAttribute> attrs) {
  StringRef name = OpTy::getOperationName();
  if (!ok())
    return nullptr;
  for (Value v : operands)
    if (!tensorType(v, name))
      return nullptr;
  Location loc = location(name.drop_front(strlen("graph.")));
  FirstError diag(ctx_);
  SmallVector<Type> types;
  DictionaryAttr dict = DictionaryAttr::get(&ctx_, attrs);
  auto where = [&] { return llvm::cast<NameLoc>(loc).getName().str(); };
  if (failed(OpTy::inferReturnTypes(&ctx_, loc, operands, dict,
                                    OpaqueProperties(nullptr), {}, types))) {
    fail(where() + ": " + diag.message);
    return nullptr;
  }
  OperationState state(loc, name);
  state.addOperands(operands);
  state.addAttributes(attrs);
  state.addTypes(types);
  Operation *op = builder_.create(state);
  if (failed(verify(op))) {
    fail(where() + ": " + diag.message);
    op->erase();
    return nullptr;
  }
  return op;
}

Value GraphBuilder::argument(StringRef kind, StringRef name,
                             ArrayRef<int64_t> shape, DType dtype,
                             ArrayRef<std::string> dimNames,
                             ElementsAttr initialValue) {
  if (!ok())
    return {};
  if (finished_) {
    fail("builder already finished");
    return {};
  }
  if (name.empty() || !names_.insert(name).second) {
    fail(kind + " '" + name + "': names must be unique and non-empty");
    return {};
  }
  for (int64_t d : shape)
    if (d < 0 && d != kDyn) {
      fail(kind + " '" + name + "': dims must be >= 0 or loom::kDyn");
      return {};
    }
  if (!dimNames.empty() && dimNames.size() != shape.size()) {
    fail(kind + " '" + name + "': " + Twine(dimNames.size()) +
         " dim names for rank " + Twine(shape.size()));
    return {};
  }
  auto type = RankedTensorType::get(shape, toMlirType(ctx_, dtype));
  Value arg = body_->addArgument(type, location(name));
  SmallVector<NamedAttribute> attrs = {builder_.getNamedAttr(
      ("graph." + kind).str(), builder_.getStringAttr(name))};
  if (llvm::any_of(dimNames, [](const std::string &n) { return !n.empty(); })) {
    SmallVector<StringRef> names(dimNames.begin(), dimNames.end());
    attrs.push_back(builder_.getNamedAttr("graph.dim_names",
                                          builder_.getStrArrayAttr(names)));
  }
  if (initialValue)
    attrs.push_back(builder_.getNamedAttr("graph.initial_value", initialValue));
  argAttrs_.push_back(builder_.getDictionaryAttr(attrs));
  return arg;
}

Value GraphBuilder::param(StringRef name, ArrayRef<int64_t> shape,
                          DType dtype) {
  return argument("param", name, shape, dtype);
}

Value GraphBuilder::param(StringRef name, ElementsAttr initialValue) {
  if (!ok())
    return {};
  auto type = initialValue
                  ? dyn_cast<RankedTensorType>(initialValue.getShapedType())
                  : RankedTensorType();
  std::optional<DType> dtype =
      type ? fromMlirType(type.getElementType()) : std::nullopt;
  if (!dtype || !type.hasStaticShape()) {
    fail("param '" + name +
         "': the initial value must be a tensor of static shape and a "
         "graph element type");
    return {};
  }
  return argument("param", name, type.getShape(), *dtype, {}, initialValue);
}

StringRef GraphBuilder::argumentDimName(Value arg, int64_t dim) const {
  auto blockArg = dyn_cast<BlockArgument>(arg);
  if (!blockArg || blockArg.getOwner() != body_ ||
      blockArg.getArgNumber() >= argAttrs_.size())
    return "";
  auto names =
      argAttrs_[blockArg.getArgNumber()].getAs<ArrayAttr>("graph.dim_names");
  if (!names || dim < 0 || dim >= (int64_t)names.size())
    return "";
  auto name = dyn_cast<StringAttr>(names[dim]);
  return name ? name.getValue() : "";
}

Value GraphBuilder::input(StringRef name, ArrayRef<int64_t> shape, DType dtype,
                          ArrayRef<std::string> dimNames) {
  return argument("input", name, shape, dtype, dimNames);
}

void GraphBuilder::output(StringRef name, Value value) {
  if (!tensorType(value, ("output '" + name + "'").str()))
    return;
  for (DictionaryAttr attrs : resultAttrs_)
    if (attrs.getAs<StringAttr>("graph.output").getValue() == name)
      return fail("output '" + name + "': names must be unique");
  results_.push_back(value);
  resultAttrs_.push_back(builder_.getDictionaryAttr(
      builder_.getNamedAttr("graph.output", builder_.getStringAttr(name))));
}

FailureOr<OwningOpRef<ModuleOp>> GraphBuilder::finish() {
  if (finished_)
    fail("builder already finished");
  if (ok() && results_.empty())
    fail("function '" + funcName_ + "' has no outputs");
  finished_ = true;
  if (!ok())
    return failure();
  auto func = llvm::cast<func::FuncOp>(func_);
  builder_.setInsertionPointToEnd(body_);
  auto ret = builder_.create<func::ReturnOp>(location("return"), results_);
  // Arguments are recreated below; outputs that are arguments themselves
  // are followed through the return op, not through `results_`.
  results_.clear();

  // Canonical signature: parameters first, then inputs, each group in the
  // order declared (`forward(params, batch)`).
  SmallVector<unsigned> order;
  for (bool params : {true, false})
    for (auto [i, attrs] : llvm::enumerate(argAttrs_))
      if (bool(attrs.get("graph.param")) == params)
        order.push_back(i);
  auto *body = new Block();
  SmallVector<Attribute> argAttrs;
  for (unsigned i : order) {
    BlockArgument old = body_->getArgument(i);
    old.replaceAllUsesWith(body->addArgument(old.getType(), old.getLoc()));
    argAttrs.push_back(argAttrs_[i]);
  }
  body->getOperations().splice(body->end(), body_->getOperations());
  func.getBody().push_back(body);
  body_->erase();
  body_ = body;
  func.setFunctionType(builder_.getFunctionType(body_->getArgumentTypes(),
                                                ret.getOperandTypes()));
  func.setAllArgAttrs(argAttrs);
  func.setAllResultAttrs(resultAttrs_);
  FirstError diag(ctx_);
  if (failed(verify(*module_))) {
    fail("module does not verify: " + diag.message);
    return failure();
  }
  return std::move(module_);
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

Value GraphBuilder::constant(ArrayRef<float> values, ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, builder_.getF32Type());
  if (type.getNumElements() != (int64_t)values.size() && values.size() != 1) {
    fail("constant: " + Twine(values.size()) + " values for " +
         Twine(type.getNumElements()) + " elements");
    return {};
  }
  if (values.size() == 1)
    return constant(DenseElementsAttr::get(type, values.front()));
  return constant(DenseElementsAttr::get(type, values));
}

Value GraphBuilder::constant(ElementsAttr value) {
  return build<ConstantOp>({}, {builder_.getNamedAttr("value", value)});
}

Value GraphBuilder::scalar(double value, DType dtype) {
  Type elem = toMlirType(ctx_, dtype);
  auto type = RankedTensorType::get({}, elem);
  if (auto f = dyn_cast<FloatType>(elem))
    return constant(
        DenseElementsAttr::get(type, builder_.getFloatAttr(f, value)));
  return constant(DenseElementsAttr::get(
      type, builder_.getIntegerAttr(elem, (int64_t)value)));
}

Value GraphBuilder::iota(ArrayRef<int64_t> shape, int64_t axis, DType dtype) {
  int64_t a = normalizeAxis(axis, shape.size(), "iota");
  if (a < 0)
    return {};
  return build<IotaOp>(
      {}, {builder_.getNamedAttr("shape", builder_.getDenseI64ArrayAttr(shape)),
           builder_.getNamedAttr("axis", builder_.getI64IntegerAttr(a)),
           builder_.getNamedAttr("element_type",
                                 TypeAttr::get(toMlirType(ctx_, dtype)))});
}

Value GraphBuilder::neg(Value x) { return build<NegOp>(x); }
Value GraphBuilder::abs(Value x) { return build<AbsOp>(x); }
Value GraphBuilder::exp(Value x) { return build<ExpOp>(x); }
Value GraphBuilder::log(Value x) { return build<LogOp>(x); }
Value GraphBuilder::sqrt(Value x) { return build<SqrtOp>(x); }
Value GraphBuilder::rsqrt(Value x) { return build<RsqrtOp>(x); }
Value GraphBuilder::tanh(Value x) { return build<TanhOp>(x); }
Value GraphBuilder::cos(Value x) { return build<CosOp>(x); }
Value GraphBuilder::sin(Value x) { return build<SinOp>(x); }
Value GraphBuilder::atan(Value x) { return build<AtanOp>(x); }
Value GraphBuilder::sigmoid(Value x) { return build<SigmoidOp>(x); }
Value GraphBuilder::relu(Value x) { return build<ReluOp>(x); }
Value GraphBuilder::erf(Value x) { return build<ErfOp>(x); }
Value GraphBuilder::floor(Value x) { return build<FloorOp>(x); }
Value GraphBuilder::ceil(Value x) { return build<CeilOp>(x); }
Value GraphBuilder::round(Value x) { return build<RoundOp>(x); }

Value GraphBuilder::gelu(Value x, bool tanhApproximation) {
  SmallVector<NamedAttribute> attrs;
  if (tanhApproximation)
    attrs.push_back(builder_.getNamedAttr(
        "approximate",
        GeluApproximationAttr::get(&ctx_, GeluApproximation::tanh)));
  return build<GeluOp>(x, attrs);
}

Value GraphBuilder::clamp(Value x, std::optional<double> min,
                          std::optional<double> max) {
  SmallVector<NamedAttribute> attrs;
  if (min)
    attrs.push_back(
        builder_.getNamedAttr("min", builder_.getF64FloatAttr(*min)));
  if (max)
    attrs.push_back(
        builder_.getNamedAttr("max", builder_.getF64FloatAttr(*max)));
  return build<ClampOp>(x, attrs);
}

Value GraphBuilder::dropout(Value x, double ratio, bool training,
                            int64_t seed) {
  SmallVector<NamedAttribute> attrs = {
      builder_.getNamedAttr("ratio", builder_.getF64FloatAttr(ratio)),
      builder_.getNamedAttr("seed", builder_.getI64IntegerAttr(seed))};
  if (training)
    attrs.push_back(builder_.getNamedAttr("training", builder_.getUnitAttr()));
  return build<DropoutOp>(x, attrs);
}

Value GraphBuilder::cast(Value x, DType to) {
  return build<CastOp>(
      x, {builder_.getNamedAttr("to", TypeAttr::get(toMlirType(ctx_, to)))});
}

Value GraphBuilder::add(Value l, Value r) { return build<AddOp>({l, r}); }
Value GraphBuilder::sub(Value l, Value r) { return build<SubOp>({l, r}); }
Value GraphBuilder::mul(Value l, Value r) { return build<MulOp>({l, r}); }
Value GraphBuilder::div(Value l, Value r) { return build<DivOp>({l, r}); }
Value GraphBuilder::pow(Value l, Value r) { return build<PowOp>({l, r}); }
Value GraphBuilder::max(Value l, Value r) { return build<MaxOp>({l, r}); }
Value GraphBuilder::min(Value l, Value r) { return build<MinOp>({l, r}); }
Value GraphBuilder::rem(Value l, Value r) { return build<RemOp>({l, r}); }
Value GraphBuilder::mod(Value l, Value r) { return build<ModOp>({l, r}); }
Value GraphBuilder::bitAnd(Value l, Value r) { return build<BitAndOp>({l, r}); }
Value GraphBuilder::bitOr(Value l, Value r) { return build<BitOrOp>({l, r}); }
Value GraphBuilder::bitXor(Value l, Value r) { return build<BitXorOp>({l, r}); }
Value GraphBuilder::bitNot(Value x) { return build<BitNotOp>(x); }
Value GraphBuilder::shiftLeft(Value l, Value r) {
  return build<ShiftLeftOp>({l, r});
}
Value GraphBuilder::shiftRight(Value l, Value r) {
  return build<ShiftRightOp>({l, r});
}

Value GraphBuilder::compare(CompareDirection direction, Value lhs, Value rhs) {
  return build<CompareOp>(
      {lhs, rhs}, {builder_.getNamedAttr("direction", CompareDirectionAttr::get(
                                                          &ctx_, direction))});
}

Value GraphBuilder::where(Value cond, Value x, Value y) {
  return build<WhereOp>({cond, x, y});
}

Value GraphBuilder::quantize(Value x, Value scale, Value zeroPoint) {
  return build<QuantizeOp>({x, scale, zeroPoint});
}

Value GraphBuilder::dequantize(Value x, Value scale, Value zeroPoint) {
  return build<DequantizeOp>({x, scale, zeroPoint});
}

Value GraphBuilder::matmulInteger(Value lhs, Value rhs, Value lhsZero,
                                  Value rhsZero) {
  return build<MatmulIntegerOp>({lhs, rhs, lhsZero, rhsZero});
}

Value GraphBuilder::matmul(Value lhs, Value rhs, bool transposeLhs,
                           bool transposeRhs) {
  SmallVector<NamedAttribute> attrs;
  if (transposeLhs)
    attrs.push_back(
        builder_.getNamedAttr("transpose_lhs", builder_.getUnitAttr()));
  if (transposeRhs)
    attrs.push_back(
        builder_.getNamedAttr("transpose_rhs", builder_.getUnitAttr()));
  return build<MatmulOp>({lhs, rhs}, attrs);
}

/// `values` or, when empty, `count` copies of `fill`.
static SmallVector<int64_t> orFill(ArrayRef<int64_t> values, int64_t count,
                                   int64_t fill) {
  if (!values.empty())
    return SmallVector<int64_t>(values);
  return SmallVector<int64_t>(std::max<int64_t>(count, 0), fill);
}

Value GraphBuilder::conv(Value input, Value filter, Value bias,
                         ArrayRef<int64_t> strides, ArrayRef<int64_t> padding,
                         ArrayRef<int64_t> dilations, int64_t groups) {
  auto in = tensorType(input, "conv");
  if (!in)
    return {};
  int64_t spatial = in.getRank() - 2;
  SmallVector<Value> operands = {input, filter};
  if (bias)
    operands.push_back(bias);
  return build<ConvOp>(
      operands,
      {builder_.getNamedAttr("strides", builder_.getDenseI64ArrayAttr(
                                            orFill(strides, spatial, 1))),
       builder_.getNamedAttr("padding", builder_.getDenseI64ArrayAttr(
                                            orFill(padding, 2 * spatial, 0))),
       builder_.getNamedAttr("dilations", builder_.getDenseI64ArrayAttr(
                                              orFill(dilations, spatial, 1))),
       builder_.getNamedAttr("groups", builder_.getI64IntegerAttr(groups))});
}

Value GraphBuilder::convInteger(Value input, Value filter, Value inputZero,
                                Value filterZero, ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> padding,
                                ArrayRef<int64_t> dilations, int64_t groups) {
  auto in = tensorType(input, "conv_integer");
  if (!in)
    return {};
  int64_t spatial = in.getRank() - 2;
  return build<ConvIntegerOp>(
      {input, filter, inputZero, filterZero},
      {builder_.getNamedAttr("strides", builder_.getDenseI64ArrayAttr(
                                            orFill(strides, spatial, 1))),
       builder_.getNamedAttr("padding", builder_.getDenseI64ArrayAttr(
                                            orFill(padding, 2 * spatial, 0))),
       builder_.getNamedAttr("dilations", builder_.getDenseI64ArrayAttr(
                                              orFill(dilations, spatial, 1))),
       builder_.getNamedAttr("groups", builder_.getI64IntegerAttr(groups))});
}

Value GraphBuilder::maxPool(Value x, ArrayRef<int64_t> kernel,
                            ArrayRef<int64_t> strides,
                            ArrayRef<int64_t> padding, bool ceilMode,
                            ArrayRef<int64_t> dilations) {
  auto in = tensorType(x, "max_pool");
  if (!in)
    return {};
  int64_t spatial = kernel.size();
  SmallVector<NamedAttribute> attrs = {
      builder_.getNamedAttr("kernel", builder_.getDenseI64ArrayAttr(kernel)),
      builder_.getNamedAttr("strides",
                            builder_.getDenseI64ArrayAttr(
                                strides.empty() ? kernel : ArrayRef(strides))),
      builder_.getNamedAttr("padding", builder_.getDenseI64ArrayAttr(
                                           orFill(padding, 2 * spatial, 0))),
      builder_.getNamedAttr("dilations", builder_.getDenseI64ArrayAttr(
                                             orFill(dilations, spatial, 1)))};
  if (ceilMode)
    attrs.push_back(builder_.getNamedAttr("ceil_mode", builder_.getUnitAttr()));
  return build<MaxPoolOp>(x, attrs);
}

Value GraphBuilder::avgPool(Value x, ArrayRef<int64_t> kernel,
                            ArrayRef<int64_t> strides,
                            ArrayRef<int64_t> padding, bool countIncludePad,
                            bool ceilMode) {
  int64_t spatial = kernel.size();
  SmallVector<NamedAttribute> attrs = {
      builder_.getNamedAttr("kernel", builder_.getDenseI64ArrayAttr(kernel)),
      builder_.getNamedAttr("strides",
                            builder_.getDenseI64ArrayAttr(
                                strides.empty() ? kernel : ArrayRef(strides))),
      builder_.getNamedAttr("padding", builder_.getDenseI64ArrayAttr(
                                           orFill(padding, 2 * spatial, 0)))};
  if (ceilMode)
    attrs.push_back(builder_.getNamedAttr("ceil_mode", builder_.getUnitAttr()));
  if (countIncludePad)
    attrs.push_back(
        builder_.getNamedAttr("count_include_pad", builder_.getUnitAttr()));
  return build<AvgPoolOp>(x, attrs);
}

Value GraphBuilder::globalAvgPool(Value x) { return build<GlobalAvgPoolOp>(x); }

Value GraphBuilder::batchNorm(Value x, Value scale, Value bias, Value mean,
                              Value variance, double epsilon) {
  return build<BatchNormOp>(
      {x, scale, bias, mean, variance},
      {builder_.getNamedAttr("epsilon", builder_.getF64FloatAttr(epsilon))});
}

Value GraphBuilder::layerNorm(Value x, Value scale, Value bias, int64_t axis,
                              double epsilon) {
  auto t = tensorType(x, "layer_norm");
  if (!t)
    return {};
  int64_t a = normalizeAxis(axis, t.getRank(), "layer_norm");
  if (a < 0)
    return {};
  SmallVector<Value> operands = {x, scale};
  if (bias)
    operands.push_back(bias);
  return build<LayerNormOp>(
      operands,
      {builder_.getNamedAttr("axis", builder_.getI64IntegerAttr(a)),
       builder_.getNamedAttr("epsilon", builder_.getF64FloatAttr(epsilon))});
}

Value GraphBuilder::softmax(Value x, int64_t axis) {
  auto t = tensorType(x, "softmax");
  int64_t a = t ? normalizeAxis(axis, t.getRank(), "softmax") : -1;
  if (a < 0)
    return {};
  return build<SoftmaxOp>(
      x, {builder_.getNamedAttr("axis", builder_.getI64IntegerAttr(a))});
}

Value GraphBuilder::logSoftmax(Value x, int64_t axis) {
  auto t = tensorType(x, "log_softmax");
  int64_t a = t ? normalizeAxis(axis, t.getRank(), "log_softmax") : -1;
  if (a < 0)
    return {};
  return build<LogSoftmaxOp>(
      x, {builder_.getNamedAttr("axis", builder_.getI64IntegerAttr(a))});
}

template <typename OpTy>
Value GraphBuilder::reduce(Value x, ArrayRef<int64_t> axes, bool keepdims) {
  StringRef name = OpTy::getOperationName();
  auto t = tensorType(x, name);
  SmallVector<int64_t> normalized;
  if (!t || !normalizeAxes(axes, t.getRank(), name, normalized))
    return {};
  SmallVector<NamedAttribute> attrs = {
      builder_.getNamedAttr("axes", builder_.getDenseI64ArrayAttr(normalized))};
  if (keepdims)
    attrs.push_back(builder_.getNamedAttr("keepdims", builder_.getUnitAttr()));
  return build<OpTy>(x, attrs);
}

Value GraphBuilder::reduceSum(Value x, ArrayRef<int64_t> axes, bool keepdims) {
  return reduce<ReduceSumOp>(x, axes, keepdims);
}
Value GraphBuilder::reduceMean(Value x, ArrayRef<int64_t> axes, bool keepdims) {
  return reduce<ReduceMeanOp>(x, axes, keepdims);
}
Value GraphBuilder::reduceMax(Value x, ArrayRef<int64_t> axes, bool keepdims) {
  return reduce<ReduceMaxOp>(x, axes, keepdims);
}
Value GraphBuilder::reduceMin(Value x, ArrayRef<int64_t> axes, bool keepdims) {
  return reduce<ReduceMinOp>(x, axes, keepdims);
}
Value GraphBuilder::reduceProd(Value x, ArrayRef<int64_t> axes, bool keepdims) {
  return reduce<ReduceProdOp>(x, axes, keepdims);
}

template <typename OpTy>
Value GraphBuilder::argReduce(Value x, int64_t axis, bool keepdims,
                              bool selectLastIndex) {
  StringRef name = OpTy::getOperationName();
  auto t = tensorType(x, name);
  int64_t a = t ? normalizeAxis(axis, t.getRank(), name) : -1;
  if (a < 0)
    return {};
  SmallVector<NamedAttribute> attrs = {
      builder_.getNamedAttr("axis", builder_.getI64IntegerAttr(a))};
  if (keepdims)
    attrs.push_back(builder_.getNamedAttr("keepdims", builder_.getUnitAttr()));
  if (selectLastIndex)
    attrs.push_back(
        builder_.getNamedAttr("select_last_index", builder_.getUnitAttr()));
  return build<OpTy>(x, attrs);
}

Value GraphBuilder::argMax(Value x, int64_t axis, bool keepdims,
                           bool selectLastIndex) {
  return argReduce<ArgMaxOp>(x, axis, keepdims, selectLastIndex);
}

Value GraphBuilder::argMin(Value x, int64_t axis, bool keepdims,
                           bool selectLastIndex) {
  return argReduce<ArgMinOp>(x, axis, keepdims, selectLastIndex);
}

Value GraphBuilder::fillLike(Value ref, double value, DType dtype) {
  Type elem = toMlirType(ctx_, dtype);
  Attribute v = isa<FloatType>(elem)
                    ? (Attribute)builder_.getFloatAttr(elem, value)
                    : builder_.getIntegerAttr(elem, (int64_t)value);
  return build<FillLikeOp>(ref, {builder_.getNamedAttr("value", v)});
}

Value GraphBuilder::cumsum(Value x, int64_t axis, bool exclusive,
                           bool reverse) {
  auto t = tensorType(x, "cumsum");
  int64_t a = t ? normalizeAxis(axis, t.getRank(), "cumsum") : -1;
  if (a < 0)
    return {};
  SmallVector<NamedAttribute> attrs = {
      builder_.getNamedAttr("axis", builder_.getI64IntegerAttr(a))};
  if (exclusive)
    attrs.push_back(builder_.getNamedAttr("exclusive", builder_.getUnitAttr()));
  if (reverse)
    attrs.push_back(builder_.getNamedAttr("reverse", builder_.getUnitAttr()));
  return build<CumSumOp>(x, attrs);
}

/// The attributes of top_k (with `k`) and dynamic_top_k (without).
static SmallVector<NamedAttribute> topKAttrs(Builder &b,
                                             std::optional<int64_t> k,
                                             int64_t axis, bool largest,
                                             bool sorted) {
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("axis", b.getI64IntegerAttr(axis))};
  if (k)
    attrs.push_back(b.getNamedAttr("k", b.getI64IntegerAttr(*k)));
  if (!largest)
    attrs.push_back(b.getNamedAttr("smallest", b.getUnitAttr()));
  if (!sorted)
    attrs.push_back(b.getNamedAttr("unsorted", b.getUnitAttr()));
  return attrs;
}

static std::pair<Value, Value> bothResults(Operation *op) {
  if (!op)
    return {};
  return {op->getResult(0), op->getResult(1)};
}

std::pair<Value, Value> GraphBuilder::topK(Value x, int64_t k, int64_t axis,
                                           bool largest, bool sorted) {
  auto t = tensorType(x, "top_k");
  int64_t a = t ? normalizeAxis(axis, t.getRank(), "top_k") : -1;
  if (a < 0)
    return {};
  return bothResults(
      buildOp<TopKOp>(x, topKAttrs(builder_, k, a, largest, sorted)));
}

std::pair<Value, Value> GraphBuilder::dynamicTopK(Value x, Value k,
                                                  int64_t axis, bool largest,
                                                  bool sorted) {
  auto t = tensorType(x, "dynamic_top_k");
  int64_t a = t ? normalizeAxis(axis, t.getRank(), "dynamic_top_k") : -1;
  if (a < 0)
    return {};
  return bothResults(buildOp<DynamicTopKOp>(
      {x, k}, topKAttrs(builder_, std::nullopt, a, largest, sorted)));
}

Value GraphBuilder::trilu(Value x, bool upper, int64_t k) {
  SmallVector<NamedAttribute> attrs = {
      builder_.getNamedAttr("k", builder_.getI64IntegerAttr(k))};
  if (upper)
    attrs.push_back(builder_.getNamedAttr("upper", builder_.getUnitAttr()));
  return build<TriluOp>(x, attrs);
}

/// The attributes resize and dynamic_resize share.
static SmallVector<NamedAttribute>
resizeAttrs(Builder &b, ResizeMode mode, CoordinateMode coordinates,
            NearestMode nearest, double cubicCoeffA, bool excludeOutside) {
  MLIRContext *ctx = b.getContext();
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("mode", ResizeModeAttr::get(ctx, mode)),
      b.getNamedAttr("coordinate_mode",
                     CoordinateModeAttr::get(ctx, coordinates)),
      b.getNamedAttr("nearest_mode", NearestModeAttr::get(ctx, nearest))};
  if (cubicCoeffA != -0.75)
    attrs.push_back(
        b.getNamedAttr("cubic_coeff_a", b.getF64FloatAttr(cubicCoeffA)));
  if (excludeOutside)
    attrs.push_back(b.getNamedAttr("exclude_outside", b.getUnitAttr()));
  return attrs;
}

Value GraphBuilder::dynamicResize(Value x, Value param, ResizeMode mode,
                                  CoordinateMode coordinates,
                                  NearestMode nearest, double cubicCoeffA,
                                  bool excludeOutside) {
  return build<DynamicResizeOp>(
      {x, param}, resizeAttrs(builder_, mode, coordinates, nearest, cubicCoeffA,
                              excludeOutside));
}

Value GraphBuilder::resize(Value x, ArrayRef<double> scales,
                           ArrayRef<int64_t> sizes, ResizeMode mode,
                           CoordinateMode coordinates, NearestMode nearest,
                           double cubicCoeffA, bool excludeOutside) {
  SmallVector<NamedAttribute> attrs = resizeAttrs(
      builder_, mode, coordinates, nearest, cubicCoeffA, excludeOutside);
  attrs.append(
      {builder_.getNamedAttr("scales", builder_.getDenseF64ArrayAttr(scales)),
       builder_.getNamedAttr("sizes", builder_.getDenseI64ArrayAttr(sizes))});
  return build<ResizeOp>(x, attrs);
}

Value GraphBuilder::reshape(Value x, ArrayRef<int64_t> shape) {
  return build<ReshapeOp>(
      x,
      {builder_.getNamedAttr("shape", builder_.getDenseI64ArrayAttr(shape))});
}

Value GraphBuilder::transpose(Value x, ArrayRef<int64_t> perm) {
  return build<TransposeOp>(
      x, {builder_.getNamedAttr("perm", builder_.getDenseI64ArrayAttr(perm))});
}

Value GraphBuilder::broadcastTo(Value x, ArrayRef<int64_t> shape) {
  return build<BroadcastToOp>(
      x,
      {builder_.getNamedAttr("shape", builder_.getDenseI64ArrayAttr(shape))});
}

Value GraphBuilder::concat(ValueRange inputs, int64_t axis) {
  if (inputs.empty()) {
    fail("concat: needs at least one input");
    return {};
  }
  auto t = tensorType(inputs.front(), "concat");
  int64_t a = t ? normalizeAxis(axis, t.getRank(), "concat") : -1;
  if (a < 0)
    return {};
  return build<ConcatOp>(
      inputs, {builder_.getNamedAttr("axis", builder_.getI64IntegerAttr(a))});
}

Value GraphBuilder::slice(Value x, ArrayRef<int64_t> starts,
                          ArrayRef<int64_t> ends, ArrayRef<int64_t> axes,
                          ArrayRef<int64_t> steps) {
  auto t = tensorType(x, "slice");
  if (!t)
    return {};
  int64_t rank = t.getRank();
  SmallVector<int64_t> ax =
      axes.empty() ? orFill({}, starts.size(), 0) : SmallVector<int64_t>(axes);
  if (axes.empty())
    for (auto [i, a] : llvm::enumerate(ax))
      a = i;
  if (starts.size() != ax.size() || ends.size() != ax.size() ||
      (!steps.empty() && steps.size() != ax.size())) {
    fail("slice: starts, ends, axes and steps differ in length");
    return {};
  }
  // Dims not named in `axes` are taken whole.
  SmallVector<int64_t> s(rank, 0), e(rank, INT64_MAX), st(rank, 1);
  SmallVector<bool> seen(rank, false);
  for (auto [i, a] : llvm::enumerate(ax)) {
    int64_t n = normalizeAxis(a, rank, "slice");
    if (n < 0)
      return {};
    if (seen[n]) {
      fail("slice: axis " + Twine(a) + " appears twice");
      return {};
    }
    seen[n] = true;
    s[n] = starts[i];
    e[n] = ends[i];
    st[n] = steps.empty() ? 1 : steps[i];
  }
  return build<SliceOp>(
      x, {builder_.getNamedAttr("starts", builder_.getDenseI64ArrayAttr(s)),
          builder_.getNamedAttr("ends", builder_.getDenseI64ArrayAttr(e)),
          builder_.getNamedAttr("steps", builder_.getDenseI64ArrayAttr(st))});
}

Value GraphBuilder::gather(Value data, Value indices, int64_t axis) {
  auto t = tensorType(data, "gather");
  int64_t a = t ? normalizeAxis(axis, t.getRank(), "gather") : -1;
  if (a < 0)
    return {};
  return build<GatherOp>(
      {data, indices},
      {builder_.getNamedAttr("axis", builder_.getI64IntegerAttr(a))});
}

Value GraphBuilder::gatherElements(Value data, Value indices, int64_t axis) {
  auto t = tensorType(data, "gather_elements");
  int64_t a = t ? normalizeAxis(axis, t.getRank(), "gather_elements") : -1;
  if (a < 0)
    return {};
  return build<GatherElementsOp>(
      {data, indices},
      {builder_.getNamedAttr("axis", builder_.getI64IntegerAttr(a))});
}

Value GraphBuilder::scatterElements(Value data, Value indices, Value updates,
                                    int64_t axis, ScatterReduction reduction) {
  auto t = tensorType(data, "scatter_elements");
  int64_t a = t ? normalizeAxis(axis, t.getRank(), "scatter_elements") : -1;
  if (a < 0)
    return {};
  return build<ScatterElementsOp>(
      {data, indices, updates},
      {builder_.getNamedAttr("axis", builder_.getI64IntegerAttr(a)),
       builder_.getNamedAttr("reduction",
                             ScatterReductionAttr::get(&ctx_, reduction))});
}

Value GraphBuilder::squeeze(Value x, ArrayRef<int64_t> axes) {
  auto t = tensorType(x, "squeeze");
  SmallVector<int64_t> normalized;
  if (!t || !normalizeAxes(axes, t.getRank(), "squeeze", normalized))
    return {};
  return build<SqueezeOp>(
      x, {builder_.getNamedAttr("axes",
                                builder_.getDenseI64ArrayAttr(normalized))});
}

Value GraphBuilder::unsqueeze(Value x, ArrayRef<int64_t> axes) {
  auto t = tensorType(x, "unsqueeze");
  SmallVector<int64_t> normalized;
  if (!t ||
      !normalizeAxes(axes, t.getRank() + axes.size(), "unsqueeze", normalized))
    return {};
  return build<UnsqueezeOp>(
      x, {builder_.getNamedAttr("axes",
                                builder_.getDenseI64ArrayAttr(normalized))});
}

Value GraphBuilder::flatten(Value x, int64_t axis) {
  auto t = tensorType(x, "flatten");
  if (!t)
    return {};
  // Flatten's axis may equal the rank (everything in the first dim).
  int64_t a = axis < 0 ? axis + t.getRank() : axis;
  return build<FlattenOp>(
      x, {builder_.getNamedAttr("axis", builder_.getI64IntegerAttr(a))});
}

Value GraphBuilder::pad(Value x, ArrayRef<int64_t> pads, PadMode mode,
                        double value) {
  return build<PadOp>(
      x, {builder_.getNamedAttr("pads", builder_.getDenseI64ArrayAttr(pads)),
          builder_.getNamedAttr("mode", PadModeAttr::get(&ctx_, mode)),
          builder_.getNamedAttr("value", builder_.getF64FloatAttr(value))});
}

Value GraphBuilder::embedding(Value table, Value ids) {
  return build<EmbeddingOp>({table, ids});
}

Value GraphBuilder::dynamicReshape(Value x, Value shape, bool allowzero) {
  SmallVector<NamedAttribute> attrs;
  if (allowzero)
    attrs.push_back(builder_.getNamedAttr("allowzero", builder_.getUnitAttr()));
  return build<DynamicReshapeOp>({x, shape}, attrs);
}

Value GraphBuilder::dynamicUnsqueeze(Value x, Value axes) {
  return build<DynamicUnsqueezeOp>({x, axes});
}

Value GraphBuilder::dynamicSqueeze(Value x, Value axes) {
  return build<DynamicSqueezeOp>({x, axes});
}

Value GraphBuilder::dynamicSlice(Value x, Value starts, Value ends, Value axes,
                                 Value steps) {
  return build<DynamicSliceOp>({x, starts, ends, axes, steps});
}

Value GraphBuilder::dynamicReduceSum(Value x, Value axes, bool keepdims,
                                     bool noopWithEmptyAxes) {
  SmallVector<NamedAttribute> attrs;
  if (keepdims)
    attrs.push_back(builder_.getNamedAttr("keepdims", builder_.getUnitAttr()));
  if (noopWithEmptyAxes)
    attrs.push_back(
        builder_.getNamedAttr("noop_with_empty_axes", builder_.getUnitAttr()));
  return build<DynamicReduceSumOp>({x, axes}, attrs);
}

Value GraphBuilder::dynamicCumSum(Value x, Value axis, bool exclusive,
                                  bool reverse) {
  SmallVector<NamedAttribute> attrs;
  if (exclusive)
    attrs.push_back(builder_.getNamedAttr("exclusive", builder_.getUnitAttr()));
  if (reverse)
    attrs.push_back(builder_.getNamedAttr("reverse", builder_.getUnitAttr()));
  return build<DynamicCumSumOp>({x, axis}, attrs);
}

Value GraphBuilder::dynamicFill(Value shape, TypedAttr value) {
  return build<DynamicFillOp>({shape}, {builder_.getNamedAttr("value", value)});
}

Value GraphBuilder::dynamicBroadcast(Value x, Value shape) {
  return build<DynamicBroadcastOp>({x, shape});
}

Value GraphBuilder::range(Value start, Value limit, Value delta) {
  return build<RangeOp>({start, limit, delta});
}

Value GraphBuilder::nonzero(Value mask) { return build<NonZeroOp>({mask}); }

Value GraphBuilder::dynamicTile(Value x, Value repeats) {
  return build<DynamicTileOp>({x, repeats});
}

Value GraphBuilder::dynamicPad(Value x, Value pads, Value value, PadMode mode) {
  return build<DynamicPadOp>(
      {x, pads, value},
      {builder_.getNamedAttr("mode", PadModeAttr::get(&ctx_, mode))});
}

Value GraphBuilder::crossEntropy(Value logits, Value labels,
                                 Reduction reduction,
                                 std::optional<int64_t> ignoreIndex) {
  SmallVector<NamedAttribute> attrs = {
      builder_.getNamedAttr("reduction", ReductionAttr::get(&ctx_, reduction))};
  if (ignoreIndex)
    attrs.push_back(builder_.getNamedAttr(
        "ignore_index", builder_.getI64IntegerAttr(*ignoreIndex)));
  return build<CrossEntropyOp>({logits, labels}, attrs);
}

Value GraphBuilder::mseLoss(Value pred, Value target, Reduction reduction) {
  return build<MseLossOp>(
      {pred, target}, {builder_.getNamedAttr(
                          "reduction", ReductionAttr::get(&ctx_, reduction))});
}
