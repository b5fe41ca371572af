//===- CudaEmitElementwise.cpp - elementwise ops as CUDA expressions ------===//
//
// Constants, generators (iota, fill_like) and the elementwise unary and
// binary ops: each element is an expression of its operands' elements at
// the same index, with NumPy broadcasting, rounded to the result's 16-bit
// float type where it has one (the prelude's loom::rnd_f16 / rnd_bf16).
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/CudaEmitInternal.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace loom::graph;

namespace loom::codegen::cuda::detail {
namespace {

//===----------------------------------------------------------------------===//
// Constants and generators
//===----------------------------------------------------------------------===//

/// A splat constant is a literal; any other (small ones are cloned into
/// regions) a __device__ array read at the index.
FailureOr<std::string> emitConstant(KernelText &kernel, ConstantOp constant,
                                    Value result, const Idx &index) {
  Type resultType = elemOf(result);
  auto value = cast<ElementsAttr>(constant.getValue());
  if (value.isSplat())
    return literal(elementAsDouble(value, 0), resultType);
  std::string array = kernel.region.constantArray(constant);
  return kernel.let(computeType(resultType),
                    "loom::ld(" + array + "[" +
                        linearize(index, shapeOf(result)) + "])");
}

FailureOr<std::string> emitIota(KernelText &kernel, IotaOp iota, Value result,
                                const Idx &index) {
  std::string cxxType = computeType(elemOf(result));
  return kernel.let(cxxType, "(" + cxxType + ")" + index[iota.getAxis()]);
}

FailureOr<std::string> emitFillLike(KernelText &kernel, FillLikeOp fill,
                                    Value result, const Idx &index) {
  Type resultType = elemOf(result);
  Attribute fillValue = fill.getValue();
  double value = 0;
  if (auto floatAttr = dyn_cast<FloatAttr>(fillValue))
    value = floatAttr.getValueAsDouble();
  else if (auto intAttr = dyn_cast<IntegerAttr>(fillValue))
    value = resultType.isInteger(1)
                ? !intAttr.getValue().isZero()
                : static_cast<double>(intAttr.getValue().getSExtValue());
  return literal(value, resultType);
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

/// An op computed as the prelude's `loom::<function>(x)`.
ValueEmitter unaryCall(StringRef function) {
  return [function =
              function.str()](KernelText &kernel, Operation *op, Value result,
                              const Idx &index) -> FailureOr<std::string> {
    FailureOr<std::string> x =
        kernel.evalBroadcast(op->getOperand(0), result, index);
    if (failed(x))
      return failure();
    return rounded(kernel, elemOf(result),
                   "loom::" + function + "(" + *x + ")");
  };
}

FailureOr<std::string> emitNeg(KernelText &kernel, NegOp neg, Value result,
                               const Idx &index) {
  FailureOr<std::string> x = kernel.evalBroadcast(neg.getX(), result, index);
  if (failed(x))
    return failure();
  return rounded(kernel, elemOf(result), "-" + *x);
}

FailureOr<std::string> emitRelu(KernelText &kernel, ReluOp relu, Value result,
                                const Idx &index) {
  Type resultType = elemOf(result);
  FailureOr<std::string> x = kernel.evalBroadcast(relu.getX(), result, index);
  if (failed(x))
    return failure();
  // NaN stays NaN (as PyTorch and the CPU backend): only x < 0 is 0.
  return kernel.let(computeType(resultType),
                    *x + " < " + literal(0, resultType) + " ? " +
                        literal(0, resultType) + " : " + *x);
}

FailureOr<std::string> emitGelu(KernelText &kernel, GeluOp gelu, Value result,
                                const Idx &index) {
  return unaryCall(gelu.getApproximate() == GeluApproximation::tanh
                       ? "gelu_tanh_"
                       : "gelu_")(kernel, gelu, result, index);
}

FailureOr<std::string> emitClamp(KernelText &kernel, ClampOp clamp,
                                 Value result, const Idx &index) {
  Type resultType = elemOf(result);
  std::string cxxType = computeType(resultType);
  FailureOr<std::string> x = kernel.evalBroadcast(clamp.getX(), result, index);
  if (failed(x))
    return failure();
  std::string expr = *x;
  if (auto low = clamp.getMin())
    expr = "loom::max_(" + expr + ", (" + cxxType + ")" +
           literal(low->convertToDouble(), resultType) + ")";
  if (auto high = clamp.getMax())
    expr = "loom::min_(" + expr + ", (" + cxxType + ")" +
           literal(high->convertToDouble(), resultType) + ")";
  return rounded(kernel, resultType, expr);
}

/// Inference dropout is the identity; a training dropout needs its mask.
FailureOr<std::string> emitDropout(KernelText &kernel, DropoutOp dropout,
                                   Value result, const Idx &index) {
  if (dropout.getTraining())
    return emitUnsupported(dropout, "a training dropout's mask");
  return kernel.evalBroadcast(dropout.getX(), result, index);
}

FailureOr<std::string> emitCast(KernelText &kernel, CastOp castOp, Value result,
                                const Idx &index) {
  Type resultType = elemOf(result);
  std::string cxxType = computeType(resultType);
  FailureOr<std::string> x = kernel.evalBroadcast(castOp.getX(), result, index);
  if (failed(x))
    return failure();
  Type from = elemOf(castOp.getX());
  if (resultType.isInteger(1))
    return kernel.let("bool", *x + " != 0");
  if (from.isInteger(1))
    return kernel.let(cxxType, "(" + cxxType + ")(" + *x + " ? 1 : 0)");
  return rounded(kernel, resultType, "(" + cxxType + ")(" + *x + ")");
}

//===----------------------------------------------------------------------===//
// Binary and ternary
//===----------------------------------------------------------------------===//

/// An op computed as `format` with {0} and {1} its operands' elements.
ValueEmitter binaryFormat(StringRef format) {
  return
      [format = format.str()](KernelText &kernel, Operation *op, Value result,
                              const Idx &index) -> FailureOr<std::string> {
        FailureOr<std::string> lhs =
            kernel.evalBroadcast(op->getOperand(0), result, index);
        if (failed(lhs))
          return failure();
        FailureOr<std::string> rhs =
            kernel.evalBroadcast(op->getOperand(1), result, index);
        if (failed(rhs))
          return failure();
        return rounded(kernel, elemOf(result),
                       llvm::formatv(format.c_str(), *lhs, *rhs).str());
      };
}

/// The C++ operator of a comparison.
StringRef relation(CompareDirection direction) {
  switch (direction) {
  case CompareDirection::eq:
    return "==";
  case CompareDirection::ne:
    return "!=";
  case CompareDirection::lt:
    return "<";
  case CompareDirection::le:
    return "<=";
  case CompareDirection::gt:
    return ">";
  case CompareDirection::ge:
    return ">=";
  }
  return "";
}

FailureOr<std::string> emitCompare(KernelText &kernel, CompareOp compare,
                                   Value result, const Idx &index) {
  FailureOr<std::string> lhs =
      kernel.evalBroadcast(compare.getLhs(), result, index);
  if (failed(lhs))
    return failure();
  FailureOr<std::string> rhs =
      kernel.evalBroadcast(compare.getRhs(), result, index);
  if (failed(rhs))
    return failure();
  return kernel.let("bool",
                    *lhs + " " + relation(compare.getDirection()) + " " + *rhs);
}

/// The elements of every operand of `op` at `index`, broadcast to
/// `result`'s shape.
FailureOr<SmallVector<std::string>> evalOperands(KernelText &kernel,
                                                 Operation *op, Value result,
                                                 const Idx &index) {
  SmallVector<std::string> values;
  for (Value operand : op->getOperands()) {
    FailureOr<std::string> v = kernel.evalBroadcast(operand, result, index);
    if (failed(v))
      return failure();
    values.push_back(*v);
  }
  return values;
}

FailureOr<std::string> emitWhere(KernelText &kernel, WhereOp where,
                                 Value result, const Idx &index) {
  auto a = evalOperands(kernel, where, result, index);
  if (failed(a))
    return failure();
  return kernel.let(computeType(elemOf(result)),
                    (*a)[0] + " ? " + (*a)[1] + " : " + (*a)[2]);
}

/// saturate(rint(x / scale) + zero_point) in x's compute type (round half
/// to even), then converted to the integer result.
FailureOr<std::string> emitQuantize(KernelText &kernel, QuantizeOp quantize,
                                    Value result, const Idx &index) {
  auto a = evalOperands(kernel, quantize, result, index);
  if (failed(a))
    return failure();
  const std::string &x = (*a)[0], &scale = (*a)[1], &zero = (*a)[2];
  Type f = elemOf(quantize.getX()), elem = elemOf(result);
  std::string fType = computeType(f);
  auto [lo, hi] = quantize.getSaturationRange();
  std::string q = kernel.let(fType, "loom::round_(" + x + " / " + scale +
                                        ") + (" + fType + ")(" + zero + ")");
  q = kernel.let(fType, "loom::min_(loom::max_(" + q + ", " + literal(lo, f) +
                            "), " + literal(hi, f) + ")");
  std::string cxxType = computeType(elem);
  return kernel.let(cxxType, "(" + cxxType + ")(" + q + ")");
}

/// (x - zero_point) * scale, the difference exact in 64 bits.
FailureOr<std::string> emitDequantize(KernelText &kernel,
                                      DequantizeOp dequantize, Value result,
                                      const Idx &index) {
  auto a = evalOperands(kernel, dequantize, result, index);
  if (failed(a))
    return failure();
  std::string cxxType = computeType(elemOf(result));
  return rounded(kernel, elemOf(result),
                 "(" + cxxType + ")((loom::i64)" + (*a)[0] + " - (loom::i64)" +
                     (*a)[2] + ") * " + (*a)[1]);
}

/// (clamp(rint(x / scale) + z, qmin, qmax) - z) * scale with z the
/// rounded, clamped zero point, in x's compute type.
FailureOr<std::string> emitFakeQuantize(KernelText &kernel, FakeQuantizeOp fq,
                                        Value result, const Idx &index) {
  auto a = evalOperands(kernel, fq, result, index);
  if (failed(a))
    return failure();
  const std::string &x = (*a)[0], &scale = (*a)[1], &zero = (*a)[2];
  Type f = elemOf(result);
  std::string fType = computeType(f);
  std::string lo =
      "(" + fType + ")" + literal((double)(int64_t)fq.getQmin(), f);
  std::string hi =
      "(" + fType + ")" + literal((double)(int64_t)fq.getQmax(), f);
  auto clamp = [&](const std::string &v) {
    return "loom::min_(loom::max_(" + v + ", " + lo + "), " + hi + ")";
  };
  std::string z =
      kernel.let(fType, clamp("loom::round_((" + fType + ")" + zero + ")"));
  std::string q =
      kernel.let(fType, clamp("loom::round_((" + fType + ")" + x + " / (" +
                              fType + ")" + scale + ") + " + z));
  return rounded(kernel, f,
                 "(" + q + " - " + z + ") * (" + fType + ")" + scale);
}

} // namespace

void registerElementwiseEmitters(OpEmitterTable &table) {
  table.add(emitConstant);
  table.add(emitIota);
  table.add(emitFillLike);

  table.add(emitNeg);
  table.add(emitRelu);
  table.add(emitGelu);
  table.addValue<AbsOp>(unaryCall("abs_"));
  table.addValue<ExpOp>(unaryCall("exp_"));
  table.addValue<LogOp>(unaryCall("log_"));
  table.addValue<SqrtOp>(unaryCall("sqrt_"));
  table.addValue<RsqrtOp>(unaryCall("rsqrt_"));
  table.addValue<TanhOp>(unaryCall("tanh_"));
  table.addValue<CosOp>(unaryCall("cos_"));
  table.addValue<SinOp>(unaryCall("sin_"));
  table.addValue<AtanOp>(unaryCall("atan_"));
  table.addValue<SigmoidOp>(unaryCall("sigmoid_"));
  table.addValue<ErfOp>(unaryCall("erf_"));
  table.addValue<FloorOp>(unaryCall("floor_"));
  table.addValue<CeilOp>(unaryCall("ceil_"));
  table.addValue<RoundOp>(unaryCall("round_"));
  table.add(emitClamp);
  table.add(emitDropout);
  table.add(emitCast);

  table.addValue<AddOp>(binaryFormat("{0} + {1}"));
  table.addValue<SubOp>(binaryFormat("{0} - {1}"));
  table.addValue<MulOp>(binaryFormat("{0} * {1}"));
  table.addValue<DivOp>(binaryFormat("loom::div_({0}, {1})"));
  table.addValue<PowOp>(binaryFormat("loom::pow_({0}, {1})"));
  table.addValue<MaxOp>(binaryFormat("loom::max_({0}, {1})"));
  table.addValue<MinOp>(binaryFormat("loom::min_({0}, {1})"));
  table.addValue<RemOp>(binaryFormat("loom::rem_({0}, {1})"));
  table.addValue<ModOp>(binaryFormat("loom::mod_({0}, {1})"));
  table.addValue<BitAndOp>(binaryFormat("{0} & {1}"));
  table.addValue<BitOrOp>(binaryFormat("{0} | {1}"));
  table.addValue<BitXorOp>(binaryFormat("{0} ^ {1}"));
  table.addValue<BitNotOp>(unaryCall("bitnot_"));
  table.addValue<ShiftLeftOp>(binaryFormat("loom::shl_({0}, {1})"));
  table.addValue<ShiftRightOp>(binaryFormat("loom::shr_({0}, {1})"));
  table.add(emitCompare);
  table.add(emitWhere);
  table.add(emitQuantize);
  table.add(emitDequantize);
  table.add(emitFakeQuantize);
}

} // namespace loom::codegen::cuda::detail
