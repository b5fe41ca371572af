//===- OnnxQuantized.cpp - ONNX's quantization ops
//-------------------------===//
//
// QuantizeLinear and DequantizeLinear become graph.quantize and
// graph.dequantize (a per-axis 1-D scale and zero point reshaped to
// broadcast along their axis); DynamicQuantizeLinear computes its scale and
// zero point from the input's range and quantizes with them. The integer
// products (MatMulInteger, ConvInteger) and their quantized forms
// (QLinearMatMul, QLinearConv) subtract the zero points in a wider type and
// multiply exactly: matmuls in i32, convolutions as graph.conv_integer when
// each zero point is one value, else in f32 where every sum is exact there
// and f64 beyond (graph.conv computes in floats), then
// QLinear* rescale by a_scale * b_scale in f32 and quantize with the
// output's scale and zero point. Each checks its inputs' element types and
// names the one that is wrong; scales known at import must be positive
// and finite.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

bool isQuantInt(Type t) {
  return isa<IntegerType>(t) && !t.isInteger(1) &&
         t.getIntOrFloatBitWidth() <= 16;
}

/// Input `i` when present and of an accepted element type (`accept`, said
/// as `what` in the error); a null Value with no error when absent and
/// `optional`.
FailureOr<Value> checkedInput(ImportContext &c, int i, StringRef what,
                              function_ref<bool(Type)> accept,
                              bool optional = false) {
  if (!c.hasInput(i)) {
    if (optional)
      return Value();
    return c.error("input " + Twine(i) + " is missing");
  }
  Value v = c.input(i);
  if (!v)
    return failure();
  if (!accept(typeOf(v).getElementType()))
    return c.error("input " + Twine(i) + " (" + c.node->input(i) +
                   ") must hold " + what);
  return v;
}

/// A scale known at import (an initializer or a Constant) must be
/// positive and finite: zero, negative or NaN scales are refused naming
/// the input and the first bad value.
LogicalResult checkScaleValues(ImportContext &c, int i) {
  std::optional<DenseElementsAttr> known = c.knownInput(i);
  if (!known || !isa<FloatType>(known->getElementType()))
    return success();
  int64_t index = 0;
  for (const APFloat &v : known->getValues<APFloat>()) {
    double d = v.convertToDouble();
    if (!(d > 0) || std::isinf(d)) {
      char text[32];
      std::snprintf(text, sizeof(text), "%g", d);
      return c.error("the scale (" + c.node->input(i) + ") must be positive " +
                     "and finite; element " + Twine(index) + " is " + text);
    }
    ++index;
  }
  return success();
}

/// A scale or zero point shaped to broadcast against `x` along `axis`: a
/// scalar as it is (rank 0), a 1-D tensor of `x`'s size there as [n, 1,
/// ..., 1] (a 1-element one as a scalar). `what` names it in errors.
FailureOr<Value> alongAxis(ImportContext &c, Value param, Value x, int64_t axis,
                           StringRef what) {
  RankedTensorType pt = typeOf(param), xt = typeOf(x);
  if (pt.getRank() == 0)
    return param;
  if (pt.getRank() != 1)
    return c.error(what + " must be a scalar or 1-D");
  if (pt.getDimSize(0) == 1)
    return c.b.reshape(param, {});
  int64_t rank = xt.getRank();
  if (axis < -rank || axis >= rank)
    return c.error("axis " + Twine(axis) + " is out of range for a rank " +
                   Twine(rank) + " input");
  if (axis < 0)
    axis += rank;
  int64_t n = pt.getDimSize(0), xd = xt.getDimSize(axis);
  if (!ShapedType::isDynamic(n) && !ShapedType::isDynamic(xd) && n != xd)
    return c.error(what + " has " + Twine(n) + " values for axis " +
                   Twine(axis) + " of size " + Twine(xd));
  SmallVector<int64_t> shape(rank - axis, 1);
  shape[0] = n;
  return c.b.reshape(param, shape);
}

/// A zero point of element type `dtype` and the shape of `scale` (the
/// default when the input is absent; per axis, one zero per channel).
Value zerosLike(ImportContext &c, Value scale, DType dtype) {
  if (typeOf(scale).getRank() == 0)
    return c.b.scalar(0, dtype);
  return c.b.fillLike(scale, 0, dtype);
}

/// The scale (input `si`, floats) and zero point (input `zi`, optional,
/// 8/16-bit integers or `zeroType` when absent) of a quantized tensor,
/// both shaped against `x` along `axis`.
FailureOr<std::pair<Value, Value>> scaleAndZero(ImportContext &c, Value x,
                                                int si, int zi, int64_t axis,
                                                DType zeroType,
                                                bool int32Zero = false) {
  auto scale =
      checkedInput(c, si, "floats", [](Type t) { return isa<FloatType>(t); });
  if (failed(scale) || failed(checkScaleValues(c, si)))
    return failure();
  auto zero = checkedInput(
      c, zi,
      int32Zero ? "integers of 8, 16 or 32 bits" : "8- or 16-bit integers",
      [&](Type t) { return isQuantInt(t) || (int32Zero && t.isInteger(32)); },
      /*optional=*/true);
  if (failed(zero))
    return failure();
  if (*zero && typeOf(*zero).getShape() != typeOf(*scale).getShape())
    return c.error("the zero point (" + c.node->input(zi) +
                   ") and the scale (" + c.node->input(si) +
                   ") have different shapes");
  Value z = *zero ? *zero : zerosLike(c, *scale, zeroType);
  auto s =
      alongAxis(c, *scale, x, axis, "the scale (" + c.node->input(si) + ")");
  if (failed(s))
    return failure();
  auto zz = alongAxis(c, z, x, axis, "the zero point");
  if (failed(zz))
    return failure();
  return std::make_pair(*s, *zz);
}

int64_t axisAttr(ImportContext &c) {
  return c.opset >= 13 ? c.attrInt("axis", 1) : 1;
}

/// `x - zero` in i32 (`zero` already shaped to broadcast).
Value minusZero(ImportContext &c, Value x, Value zero) {
  return c.b.sub(c.b.cast(x, DType::i32), c.b.cast(zero, DType::i32));
}

/// 8-bit integer input `xi` of an integer product and its zero point
/// (input `zi`, optional: null when absent), of one element type.
FailureOr<std::pair<Value, Value>> operandAndZero(ImportContext &c, int xi,
                                                  int zi) {
  auto x = checkedInput(c, xi, "8-bit integers",
                        [](Type t) { return t.isInteger(8); });
  if (failed(x))
    return failure();
  auto zero = checkedInput(
      c, zi, "8-bit integers", [](Type t) { return t.isInteger(8); },
      /*optional=*/true);
  if (failed(zero))
    return failure();
  if (*zero && typeOf(*zero).getElementType() != typeOf(*x).getElementType())
    return c.error("the zero point (" + c.node->input(zi) +
                   ") and its operand (" + c.node->input(xi) +
                   ") have different element types");
  return std::make_pair(*x, *zero);
}

/// An operand of an integer product: 8-bit integer input `xi` less its
/// zero point (input `zi`, optional; a scalar, or 1-D along `axis` of the
/// operand), in i32.
FailureOr<Value> shiftedOperand(ImportContext &c, int xi, int zi,
                                int64_t axis) {
  auto xz = operandAndZero(c, xi, zi);
  if (failed(xz))
    return failure();
  auto [x, zero] = *xz;
  if (!zero)
    return c.b.cast(x, DType::i32);
  auto z =
      alongAxis(c, zero, x, axis, "the zero point (" + c.node->input(zi) + ")");
  if (failed(z))
    return failure();
  return minusZero(c, x, *z);
}

/// The zero point (input `zi`, optional) of 8-bit input `xi` as a scalar
/// of its element type when it is one value: absent (0), rank 0, one
/// element, or a constant splat; a null Value when it varies (per row or
/// column).
FailureOr<Value> scalarZero(ImportContext &c, int xi, int zi) {
  auto xz = operandAndZero(c, xi, zi);
  if (failed(xz))
    return failure();
  auto [x, zero] = *xz;
  Type elem = typeOf(x).getElementType();
  DType dtype = *fromMlirType(elem);
  if (!zero)
    return c.b.scalar(0, dtype);
  RankedTensorType zt = typeOf(zero);
  if (zt.getRank() == 0)
    return zero;
  if (zt.hasStaticShape() && zt.getNumElements() == 1)
    return c.b.reshape(zero, {});
  std::optional<DenseElementsAttr> known = c.knownInput(zi);
  if (known && !known->empty() && llvm::all_equal(known->getValues<APInt>())) {
    APInt v = *known->getValues<APInt>().begin();
    return c.b.scalar(elem.isUnsignedInteger() ? double(v.getZExtValue())
                                               : double(v.getSExtValue()),
                      dtype);
  }
  return Value();
}

/// `(A - a_zero) @ (B - b_zero)` in i32 for 8-bit inputs `ai` and `bi` with
/// zero points `azi` and `bzi`: graph.matmul_integer (the integer GEMM)
/// when each zero point is one value, else the matmul of the operands
/// shifted in i32 (a's zero point per row, b's per column).
FailureOr<Value> integerProduct(ImportContext &c, int ai, int azi, int bi,
                                int bzi) {
  auto za = scalarZero(c, ai, azi);
  if (failed(za))
    return failure();
  auto zb = scalarZero(c, bi, bzi);
  if (failed(zb))
    return failure();
  if (*za && *zb)
    return c.b.matmulInteger(c.input(ai), c.input(bi), *za, *zb);
  auto a = shiftedOperand(c, ai, azi, -2);
  if (failed(a))
    return failure();
  auto b = shiftedOperand(c, bi, bzi, -1);
  if (failed(b))
    return failure();
  return c.b.matmul(*a, *b);
}

/// A per-row (lhs, axis -2) or per-column (rhs, axis -1) scale of a
/// quantized matmul operand as a broadcastable f32 tensor.
FailureOr<Value> matmulScale(ImportContext &c, int si, Value operand,
                             int64_t axis) {
  auto s = checkedInput(c, si, "f32", [](Type t) { return t.isF32(); });
  if (failed(s) || failed(checkScaleValues(c, si)))
    return failure();
  return alongAxis(c, *s, operand, axis,
                   "the scale (" + c.node->input(si) + ")");
}

/// `y` (i32, [N, O, ...]) plus `bias` (i32 [O]; may be null) per channel.
Value withBias(ImportContext &c, Value y, Value bias) {
  if (!bias)
    return y;
  SmallVector<int64_t> shape(typeOf(y).getRank() - 1, 1);
  shape[0] = typeOf(bias).getDimSize(0);
  return c.b.add(y, c.b.reshape(bias, shape));
}

/// The convolution of zero-shifted 8-bit operands (in i32), exactly, as
/// i32, plus `bias` (i32, one per output channel; may be null). graph.conv
/// computes in floats: in f32 when every sum is exact there (at most 258
/// products of magnitude 255^2 per output), else in f64.
Value exactConv(ImportContext &c, Value x, Value w, Value bias) {
  RankedTensorType wt = typeOf(w);
  int64_t terms = 1;
  for (int64_t d : wt.getShape().drop_front())
    terms =
        ShapedType::isDynamic(d) || terms > (1 << 24) ? (1 << 25) : terms * d;
  DType f = terms * 65025 <= (int64_t(1) << 24) ? DType::f32 : DType::f64;
  Value y = convolution(c, c.b.cast(x, f), c.b.cast(w, f), Value());
  if (!y)
    return {};
  return withBias(c, c.b.cast(y, DType::i32), bias);
}

/// `conv(x - x_zero, w - w_zero)` as graph.conv_integer for 8-bit inputs
/// `xi` and `wi` with zero points `xzi` and `wzi` when each zero point is
/// one value (scalarZero); a null Value when one varies.
FailureOr<Value> integerConv(ImportContext &c, int xi, int xzi, int wi,
                             int wzi) {
  auto zx = scalarZero(c, xi, xzi);
  if (failed(zx))
    return failure();
  auto zw = scalarZero(c, wi, wzi);
  if (failed(zw))
    return failure();
  if (!*zx || !*zw)
    return Value();
  FailureOr<ConvWindow> window = convWindow(c, c.input(xi), c.input(wi));
  if (failed(window))
    return failure();
  Value y = c.b.convInteger(c.input(xi), c.input(wi), *zx, *zw, window->strides,
                            window->pads, window->dilations, window->groups);
  if (!y)
    return failure();
  return y;
}

/// The output of QLinearMatMul and QLinearConv: the i32 sums `acc`
/// rescaled by aScale * bScale in f32 and quantized with the scalar scale
/// and zero point of inputs 6 and 7.
LogicalResult requantize(ImportContext &c, Value acc, Value aScale,
                         Value bScale) {
  Value real = c.b.mul(c.b.cast(acc, DType::f32), c.b.mul(aScale, bScale));
  auto y = scaleAndZero(c, real, 6, 7, 1, DType::u8);
  if (failed(y))
    return failure();
  if (typeOf(y->first).getRank() != 0)
    return c.error("y_scale must be a scalar");
  c.setOutput(0, c.b.quantize(real, y->first, y->second));
  return success();
}

} // namespace

namespace loom::onnx_import {

LogicalResult quantizeLinear(ImportContext &c) {
  auto x =
      checkedInput(c, 0, "floats", [](Type t) { return isa<FloatType>(t); });
  if (failed(x))
    return failure();
  auto params = scaleAndZero(c, *x, 1, 2, axisAttr(c), DType::u8);
  if (failed(params))
    return failure();
  if (typeOf(params->first).getElementType() != typeOf(*x).getElementType())
    return c.error("the scale and x have different element types");
  c.setOutput(0, c.b.quantize(*x, params->first, params->second));
  return success();
}

LogicalResult dequantizeLinear(ImportContext &c) {
  auto x = checkedInput(c, 0, "integers of 8, 16 or 32 bits", [](Type t) {
    return isQuantInt(t) || t.isInteger(32);
  });
  if (failed(x))
    return failure();
  DType xType = *fromMlirType(typeOf(*x).getElementType());
  auto params = scaleAndZero(c, *x, 1, 2, axisAttr(c), xType,
                             /*int32Zero=*/true);
  if (failed(params))
    return failure();
  if (typeOf(params->second).getElementType() != typeOf(*x).getElementType())
    return c.error("the zero point and x have different element types");
  c.setOutput(0, c.b.dequantize(*x, params->first, params->second));
  return success();
}

/// ONNX's DynamicQuantizeLinear: the range [min(0, min x), max(0, max x)]
/// mapped onto [0, 255]: scale = (hi - lo) / 255, zero point =
/// saturate(round(-lo / scale)), y = quantize(x, scale, zero point).
LogicalResult dynamicQuantizeLinear(ImportContext &c) {
  auto x = checkedInput(c, 0, "f32", [](Type t) { return t.isF32(); });
  if (failed(x))
    return failure();
  SmallVector<int64_t> all;
  for (int64_t i = 0; i < typeOf(*x).getRank(); ++i)
    all.push_back(i);
  Value zero = c.b.scalar(0);
  Value lo = c.b.min(c.b.reduceMin(*x, all), zero);
  Value hi = c.b.max(c.b.reduceMax(*x, all), zero);
  Value scale = c.b.div(c.b.sub(hi, lo), c.b.scalar(255));
  Value zp = c.b.cast(
      c.b.clamp(c.b.round(c.b.div(c.b.neg(lo), scale)), 0.0, 255.0), DType::u8);
  c.setOutput(0, c.b.quantize(*x, scale, zp));
  c.setOutput(1, scale);
  c.setOutput(2, zp);
  return success();
}

/// (A - a_zero_point) @ (B - b_zero_point) in i32; a's zero point may be
/// per row, b's per column.
LogicalResult matMulInteger(ImportContext &c) {
  auto y = integerProduct(c, 0, 2, 1, 3);
  if (failed(y))
    return failure();
  c.setOutput(0, *y);
  return success();
}

/// The i32 product of the zero-shifted operands rescaled by
/// a_scale * b_scale and quantized with y's scale and zero point.
LogicalResult qLinearMatMul(ImportContext &c) {
  auto y = integerProduct(c, 0, 2, 3, 5);
  if (failed(y))
    return failure();
  auto aScale = matmulScale(c, 1, c.input(0), -2);
  if (failed(aScale))
    return failure();
  auto bScale = matmulScale(c, 4, c.input(3), -1);
  if (failed(bScale))
    return failure();
  return requantize(c, *y, *aScale, *bScale);
}

/// ConvInteger: graph.conv_integer (the int8 convolution) when each zero
/// point is one value, else the zero-shifted operands convolved exactly
/// (exactConv), as i32. The padding is the shifted zero, as ONNX pads with
/// the zero point.
LogicalResult convInteger(ImportContext &c) {
  auto y = integerConv(c, 0, 2, 1, 3);
  if (failed(y))
    return failure();
  if (*y) {
    c.setOutput(0, *y);
    return success();
  }
  auto x = shiftedOperand(c, 0, 2, 1);
  if (failed(x))
    return failure();
  auto w = shiftedOperand(c, 1, 3, 0);
  if (failed(w))
    return failure();
  Value exact = exactConv(c, *x, *w, Value());
  if (!exact)
    return failure();
  c.setOutput(0, exact);
  return success();
}

/// QLinearConv: ConvInteger's exact sums plus the i32 bias (added in
/// i32), rescaled by x_scale * w_scale (w's per output channel) and
/// quantized.
LogicalResult qLinearConv(ImportContext &c) {
  auto x = shiftedOperand(c, 0, 2, 1);
  if (failed(x))
    return failure();
  auto w = shiftedOperand(c, 3, 5, 0);
  if (failed(w))
    return failure();
  auto bias = checkedInput(
      c, 8, "i32", [](Type t) { return t.isInteger(32); }, /*optional=*/true);
  if (failed(bias))
    return failure();
  if (*bias && typeOf(*bias).getRank() != 1)
    return c.error("the bias (" + c.node->input(8) + ") must be 1-D");
  auto integer = integerConv(c, 0, 2, 3, 5);
  if (failed(integer))
    return failure();
  Value y =
      *integer ? withBias(c, *integer, *bias) : exactConv(c, *x, *w, *bias);
  if (!y)
    return failure();
  auto xScale = matmulScale(c, 1, *x, 1);
  if (failed(xScale))
    return failure();
  // w's scale is per output channel: dim 1 of the result.
  auto wScale = matmulScale(c, 4, y, 1);
  if (failed(wScale))
    return failure();
  if (typeOf(*xScale).getRank() != 0)
    return c.error("x_scale must be a scalar");
  return requantize(c, y, *xScale, *wScale);
}

} // namespace loom::onnx_import
