//===- OnnxDecomposed.cpp - ONNX ops as small graphs of graph ops ---------===//
//
// Ops without a graph op of their own, written as a few graph ops each
// (so their gradients come from those ops' VJP rules): the hyperbolic
// functions, their inverses, Tan, Asin and Acos (through graph.atan);
// ThresholdedRelu and Shrink (compares and selects); IsInf and IsNaN; EyeLike
// (iotas compared); Hardmax (an arg max compared with an iota);
// DepthToSpace and SpaceToDepth (reshape, transpose, reshape). Shapes the
// iotas and reshapes are built from must be static; a dynamic one is
// refused naming the op.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;
using graph::CompareDirection;

DType loom::onnx_import::dtypeOf(Value v) {
  return fromMlirType(cast<RankedTensorType>(v.getType()).getElementType())
      .value_or(DType::f32);
}

std::string loom::onnx_import::str(Type t) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << t;
  return text;
}

RankedTensorType loom::onnx_import::tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

FailureOr<SmallVector<int64_t>>
loom::onnx_import::staticShape(ImportContext &c, Value x, const Twine &what) {
  if (!x)
    return failure();
  auto t = cast<RankedTensorType>(x.getType());
  if (!t.hasStaticShape())
    return c.error(what + " needs a static input shape");
  return SmallVector<int64_t>(t.getShape());
}

namespace {

/// A float-only elementwise op (ONNX's schema types these ops' input as
/// floats, which the importer's schema check does not check): `body` of
/// input 0, or an error naming the input when it holds integers.
LogicalResult floatUnary(ImportContext &c,
                         llvm::function_ref<Value(Value)> body) {
  Value x = c.input(0);
  if (!x)
    return failure();
  if (!isa<FloatType>(cast<RankedTensorType>(x.getType()).getElementType()))
    return c.error("input 0 must hold floats");
  c.setOutput(0, body(x));
  return success();
}

/// (exp(x) -+ exp(-x)) / 2: sinh and cosh.
Value halfExpSum(ImportContext &c, Value x, bool plus) {
  Value ep = c.b.exp(x), en = c.b.exp(c.b.neg(x));
  return c.b.mul(plus ? c.b.add(ep, en) : c.b.sub(ep, en),
                 scalarLike(c, x, 0.5));
}

} // namespace

namespace loom::onnx_import {

LogicalResult sinh(ImportContext &c) {
  return floatUnary(c, [&](Value x) { return halfExpSum(c, x, false); });
}

LogicalResult cosh(ImportContext &c) {
  return floatUnary(c, [&](Value x) { return halfExpSum(c, x, true); });
}

LogicalResult tan(ImportContext &c) {
  return floatUnary(c,
                    [&](Value x) { return c.b.div(c.b.sin(x), c.b.cos(x)); });
}

/// asinh(x) = log(x + sqrt(x^2 + 1)); acosh(x) = log(x + sqrt(x^2 - 1)).
template <bool cosh> LogicalResult inverseHyperbolic(ImportContext &c) {
  return floatUnary(c, [&](Value x) {
    Value root =
        c.b.sqrt(c.b.add(c.b.mul(x, x), scalarLike(c, x, cosh ? -1.0 : 1.0)));
    return c.b.log(c.b.add(x, root));
  });
}

/// atanh(x) = log((1 + x) / (1 - x)) / 2.
LogicalResult atanh(ImportContext &c) {
  return floatUnary(c, [&](Value x) {
    Value one = scalarLike(c, x, 1.0);
    return c.b.mul(c.b.log(c.b.div(c.b.add(one, x), c.b.sub(one, x))),
                   scalarLike(c, x, 0.5));
  });
}

/// asin(x) = atan(x / sqrt((1 - x)(1 + x))): +-1 gives +-pi/2 (the
/// division gives +-inf), |x| > 1 NaN (the root of a negative).
LogicalResult asin(ImportContext &c) {
  return floatUnary(c, [&](Value x) {
    Value one = scalarLike(c, x, 1.0);
    Value root = c.b.sqrt(c.b.mul(c.b.sub(one, x), c.b.add(one, x)));
    return c.b.atan(c.b.div(x, root));
  });
}

/// acos(x) = 2 atan(sqrt((1 - x) / (1 + x))): exact at 1 (0) and -1 (pi),
/// no cancellation near 1 (pi/2 - asin(x) would lose its digits there).
LogicalResult acos(ImportContext &c) {
  return floatUnary(c, [&](Value x) {
    Value one = scalarLike(c, x, 1.0);
    Value t = c.b.atan(c.b.sqrt(c.b.div(c.b.sub(one, x), c.b.add(one, x))));
    return c.b.mul(t, scalarLike(c, x, 2.0));
  });
}

/// x where x > alpha, else 0.
LogicalResult thresholdedRelu(ImportContext &c) {
  double alpha = c.attrFloat("alpha", 1.0f);
  return floatUnary(c, [&](Value x) {
    Value above = c.b.compare(CompareDirection::gt, x, scalarLike(c, x, alpha));
    return c.b.where(above, x, scalarLike(c, x, 0.0));
  });
}

/// x + bias where x < -lambd, x - bias where x > lambd, else 0 (floats
/// and integers alike).
LogicalResult shrink(ImportContext &c) {
  Value x = c.input(0);
  if (!x)
    return failure();
  double lambd = c.attrFloat("lambd", 0.5f), bias = c.attrFloat("bias", 0.0f);
  Value zero = scalarLike(c, x, 0.0), b = scalarLike(c, x, bias);
  Value low = c.b.compare(CompareDirection::lt, x, scalarLike(c, x, -lambd));
  Value high = c.b.compare(CompareDirection::gt, x, scalarLike(c, x, lambd));
  c.setOutput(
      0, c.b.where(low, c.b.add(x, b), c.b.where(high, c.b.sub(x, b), zero)));
  return success();
}

LogicalResult isInf(ImportContext &c) {
  bool negative = c.attrInt("detect_negative", 1),
       positive = c.attrInt("detect_positive", 1);
  return floatUnary(c, [&](Value x) {
    Value inf = scalarLike(c, x, INFINITY);
    if (negative && positive)
      return c.b.compare(CompareDirection::eq, c.b.abs(x), inf);
    if (positive)
      return c.b.compare(CompareDirection::eq, x, inf);
    if (negative)
      return c.b.compare(CompareDirection::eq, x, c.b.neg(inf));
    // Detects nothing: false everywhere (NaN compares false too).
    return c.b.compare(CompareDirection::lt, c.b.abs(x),
                       scalarLike(c, x, -1.0));
  });
}

LogicalResult isNaN(ImportContext &c) {
  return floatUnary(
      c, [&](Value x) { return c.b.compare(CompareDirection::ne, x, x); });
}

LogicalResult eyeLike(ImportContext &c) {
  Value x = c.input(0);
  auto shape = staticShape(c, x, "EyeLike");
  if (failed(shape))
    return failure();
  if (shape->size() != 2)
    return c.error("EyeLike takes a rank 2 input");
  DType dtype = dtypeOf(x);
  if (c.hasAttr("dtype")) {
    auto d = convertDataType(c.attrInt("dtype", 1));
    if (!d)
      return c.error("dtype " + dataTypeName(c.attrInt("dtype", 1)) +
                     " is not supported");
    dtype = *d;
  }
  int64_t k = c.attrInt("k", 0);
  Value rows = c.b.iota(*shape, 0), cols = c.b.iota(*shape, 1);
  Value diagonal = c.b.compare(CompareDirection::eq, c.b.sub(cols, rows),
                               c.b.scalar(k, DType::i64));
  c.setOutput(0, c.b.cast(diagonal, dtype));
  return success();
}

/// Hardmax: 1 at the first largest entry along the axis, 0 elsewhere.
/// Before opset 13 the input is seen as 2-D, [prod(dims < axis),
/// prod(dims >= axis)], and the row's largest entry is marked.
LogicalResult hardmax(ImportContext &c) {
  Value x = c.input(0);
  auto shape = staticShape(c, x, "Hardmax");
  if (failed(shape))
    return failure();
  int64_t rank = shape->size();
  bool coerced = c.opset < 13;
  int64_t axis = c.attrInt("axis", coerced ? 1 : -1);
  if (axis < -rank || axis >= rank + (coerced ? 1 : 0))
    return c.error("axis " + Twine(axis) + " is out of range for rank " +
                   Twine(rank));
  if (axis < 0)
    axis += rank;
  Value v = x;
  SmallVector<int64_t> work = *shape;
  if (coerced) {
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < rank; ++i)
      (i < axis ? outer : inner) *= (*shape)[i];
    work = {outer, inner};
    v = c.b.reshape(x, work);
    axis = 1;
  }
  Value best = c.b.argMax(v, axis, /*keepdims=*/true);
  Value hit = c.b.compare(CompareDirection::eq, c.b.iota(work, axis), best);
  Value y = c.b.cast(hit, dtypeOf(x));
  c.setOutput(0, coerced ? c.b.reshape(y, *shape) : y);
  return success();
}

/// DepthToSpace (DCR or CRD) and SpaceToDepth on NCHW.
template <bool toSpace> LogicalResult depthSpace(ImportContext &c) {
  Value x = c.input(0);
  auto shape = staticShape(c, x, toSpace ? "DepthToSpace" : "SpaceToDepth");
  if (failed(shape))
    return failure();
  int64_t b = c.attrInt("blocksize", 0);
  if (shape->size() != 4)
    return c.error("the input must be NCHW (rank 4)");
  if (b < 1)
    return c.error("blocksize must be at least 1, not " + Twine(b));
  int64_t n = (*shape)[0], ch = (*shape)[1], h = (*shape)[2], w = (*shape)[3];
  if (toSpace) {
    if (ch % (b * b))
      return c.error("channels (" + Twine(ch) + ") must be a multiple of " +
                     "blocksize^2 (" + Twine(b * b) + ")");
    int64_t cOut = ch / (b * b);
    bool crd = c.attrString("mode", "DCR") == "CRD";
    if (!crd && c.attrString("mode", "DCR") != "DCR")
      return c.error("mode must be DCR or CRD");
    Value t = crd ? c.b.transpose(c.b.reshape(x, {n, cOut, b, b, h, w}),
                                  {0, 1, 4, 2, 5, 3})
                  : c.b.transpose(c.b.reshape(x, {n, b, b, cOut, h, w}),
                                  {0, 3, 4, 1, 5, 2});
    c.setOutput(0, c.b.reshape(t, {n, cOut, h * b, w * b}));
    return success();
  }
  if (h % b || w % b)
    return c.error("height and width (" + Twine(h) + ", " + Twine(w) +
                   ") must be multiples of blocksize " + Twine(b));
  Value t = c.b.transpose(c.b.reshape(x, {n, ch, h / b, b, w / b, b}),
                          {0, 3, 5, 1, 2, 4});
  c.setOutput(0, c.b.reshape(t, {n, ch * b * b, h / b, w / b}));
  return success();
}

template LogicalResult inverseHyperbolic<false>(ImportContext &);
template LogicalResult inverseHyperbolic<true>(ImportContext &);
template LogicalResult depthSpace<false>(ImportContext &);
template LogicalResult depthSpace<true>(ImportContext &);

} // namespace loom::onnx_import
