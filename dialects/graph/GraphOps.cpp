//===- GraphOps.cpp - graph op verifiers and result-type inference --------===//
//
// Result-type inference doubles as the shape verifier: each rule below is
// tagged (`matmul_c3`) and exercised by test/dialects/graph/invalid.mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphOps.h"
#include "mlir/IR/Matchers.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace loom::graph;

static constexpr int64_t kDyn = ShapedType::kDynamic;

namespace {
/// Collects the message of a failed rule; converts to failure().
struct Failure {
  std::optional<Location> loc;
  StringRef opName;
  LogicalResult operator()(const Twine &msg) const {
    return emitOptionalError(loc, "'", opName, "' op ", msg);
  }
};
} // namespace

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i)
      s += ", ";
    s += ShapedType::isDynamic(d) ? "?" : std::to_string(d);
  }
  return s + "]";
}

static std::string listStr(ArrayRef<int64_t> values) {
  std::string s = "[";
  for (auto [i, v] : llvm::enumerate(values)) {
    if (i)
      s += ", ";
    s += std::to_string(v);
  }
  return s + "]";
}

static std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? "?" : std::to_string(d);
}

static RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// True when two dims may be equal at run time.
static bool dimsCompatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// The more static of two compatible dims.
static int64_t mergeDims(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) ? b : a;
}

/// True when two shapes have the same rank and may be equal at run time.
static bool shapesCompatible(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  return a.size() == b.size() && llvm::all_of(llvm::zip(a, b), [](auto p) {
           return dimsCompatible(std::get<0>(p), std::get<1>(p));
         });
}

/// The more static of two compatible shapes, dim by dim.
static SmallVector<int64_t> mergeShapes(ArrayRef<int64_t> a,
                                        ArrayRef<int64_t> b) {
  SmallVector<int64_t> out;
  for (auto [x, y] : llvm::zip(a, b))
    out.push_back(mergeDims(x, y));
  return out;
}

/// Checks that `axes` is sorted, unique and within [0, rank).
static bool validAxes(ArrayRef<int64_t> axes, int64_t rank) {
  for (auto [i, a] : llvm::enumerate(axes)) {
    if (a < 0 || a >= rank)
      return false;
    if (i && axes[i - 1] >= a)
      return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Shared inference helpers
//===----------------------------------------------------------------------===//

bool loom::graph::broadcastShapes(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs,
                                  SmallVectorImpl<int64_t> &out,
                                  std::string *why) {
  size_t rank = std::max(lhs.size(), rhs.size());
  out.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i < lhs.size() ? lhs[lhs.size() - 1 - i] : 1;
    int64_t b = i < rhs.size() ? rhs[rhs.size() - 1 - i] : 1;
    int64_t &d = out[rank - 1 - i];
    if (a == 1) {
      d = b;
    } else if (b == 1) {
      d = a;
    } else if (dimsCompatible(a, b)) {
      d = mergeDims(a, b);
    } else {
      if (why)
        *why = "shapes " + shapeStr(lhs) + " and " + shapeStr(rhs) +
               " are not broadcast-compatible (" + std::to_string(a) + " vs " +
               std::to_string(b) + ")";
      return false;
    }
  }
  return true;
}

LogicalResult loom::graph::inferBroadcastResult(std::optional<Location> loc,
                                                StringRef opName,
                                                ValueRange operands,
                                                Type elementType,
                                                SmallVectorImpl<Type> &types) {
  Failure fail{loc, opName};
  SmallVector<int64_t> shape;
  for (Value v : operands) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t)
      return fail("operands must be ranked tensors");
    SmallVector<int64_t> next;
    std::string why;
    // bcast_c1: all operands broadcast together.
    if (!broadcastShapes(shape, t.getShape(), next, &why))
      return fail(why);
    shape = std::move(next);
  }
  if (!elementType)
    elementType = tensorOf(operands.front()).getElementType();
  types.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

LogicalResult loom::graph::inferReduceResult(std::optional<Location> loc,
                                             StringRef opName, Type input,
                                             ArrayRef<int64_t> axes,
                                             bool keepdims,
                                             SmallVectorImpl<Type> &types) {
  Failure fail{loc, opName};
  auto t = cast<RankedTensorType>(input);
  // reduce_c1: at least one axis.
  if (axes.empty())
    return fail("needs at least one axis to reduce");
  // reduce_c2: axes sorted, unique, in range.
  if (!validAxes(axes, t.getRank()))
    return fail("axes " + listStr(axes) +
                " must be sorted, unique and in [0, " + Twine(t.getRank()) +
                ")");
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(t.getShape())) {
    if (!llvm::is_contained(axes, (int64_t)i))
      shape.push_back(d);
    else if (keepdims)
      shape.push_back(1);
  }
  types.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult loom::graph::inferArgReduceResult(std::optional<Location> loc,
                                                StringRef opName, Type input,
                                                int64_t axis, bool keepdims,
                                                SmallVectorImpl<Type> &types) {
  auto t = cast<RankedTensorType>(input);
  // argreduce_c1: 0 <= axis < rank.
  if (axis < 0 || axis >= t.getRank())
    return Failure{loc, opName}("axis " + Twine(axis) +
                                " is out of range for rank " +
                                Twine(t.getRank()));
  // The shape of a reduction over {axis}, holding i64 indices.
  if (failed(inferReduceResult(loc, opName, input, {axis}, keepdims, types)))
    return failure();
  types.back() = cast<RankedTensorType>(types.back())
                     .clone(IntegerType::get(t.getContext(), 64));
  return success();
}

//===----------------------------------------------------------------------===//
// Constants and generators
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  // constant_c1: the value is a ranked tensor.
  auto type = dyn_cast<RankedTensorType>(adaptor.getValue().getType());
  if (!type)
    return Failure{loc, getOperationName()}("value must be a ranked tensor");
  types.push_back(type);
  return success();
}

LogicalResult IotaOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  ArrayRef<int64_t> shape = adaptor.getShape();
  // iota_c1: a static, non-negative shape.
  if (llvm::any_of(shape, [](int64_t d) { return d < 0; }))
    return fail("shape " + listStr(shape) + " must be static and non-negative");
  // iota_c2: the axis is a dim of the shape.
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= (int64_t)shape.size())
    return fail("axis " + Twine(axis) + " is out of range for rank " +
                Twine(shape.size()));
  types.push_back(RankedTensorType::get(shape, adaptor.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

LogicalResult ClampOp::verify() {
  // clamp_c1: at least one bound.
  if (!getMin() && !getMax())
    return emitOpError("needs a min or a max bound");
  // clamp_c2: min <= max.
  if (getMin() && getMax() &&
      getMin()->convertToDouble() > getMax()->convertToDouble())
    return emitOpError("min ")
           << getMin()->convertToDouble() << " is greater than max "
           << getMax()->convertToDouble();
  return success();
}

LogicalResult DropoutOp::verify() {
  // dropout_c1: 0 <= ratio < 1.
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError("ratio ") << ratio << " must be in [0, 1)";
  return success();
}

static bool isGraphElementType(Type t) {
  if (t.isF32() || t.isF16() || t.isBF16() || t.isF64() ||
      t.isSignlessInteger(1))
    return true;
  // i8 ... i64 and ui8 ... ui64 (GraphBase.td's Graph_Integers).
  auto i = dyn_cast<IntegerType>(t);
  return i && !i.isSigned() &&
         llvm::is_contained({8u, 16u, 32u, 64u}, i.getWidth());
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  // cast_c1: the target is a graph element type.
  Type to = adaptor.getTo();
  if (!isGraphElementType(to)) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << to;
    return Failure{loc, getOperationName()}("cannot cast to '" + os.str() +
                                            "': not a graph element type");
  }
  types.push_back(tensorOf(adaptor.getX()).clone(to));
  return success();
}

LogicalResult FillLikeOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  // fill_like_c1: the value's type is a graph element type.
  Type elem = cast<TypedAttr>(adaptor.getValue()).getType();
  if (!isGraphElementType(elem) ||
      !isa<FloatAttr, IntegerAttr>(adaptor.getValue()))
    return Failure{loc, getOperationName()}(
        "value must be a float or integer scalar of a graph element type");
  types.push_back(tensorOf(adaptor.getRef()).clone(elem));
  return success();
}

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferBroadcastResult(loc, getOperationName(), adaptor.getOperands(),
                              IntegerType::get(ctx, 1), types);
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  // where_c1: both branches share an element type.
  Type x = tensorOf(adaptor.getX()).getElementType();
  Type y = tensorOf(adaptor.getY()).getElementType();
  if (x != y)
    return Failure{loc,
                   getOperationName()}("branches have different element types");
  return inferBroadcastResult(loc, getOperationName(), adaptor.getOperands(), x,
                              types);
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

LogicalResult loom::graph::checkQuantScale(std::optional<Location> loc,
                                           StringRef opName,
                                           RankedTensorType xt,
                                           RankedTensorType st,
                                           RankedTensorType zt) {
  Failure fail{loc, opName};
  if (st.getShape() != zt.getShape())
    return fail("scale and zero_point have different shapes");
  if (st.getRank() > xt.getRank())
    return fail("scale has a higher rank than x");
  int64_t channels = 0, lead = xt.getRank() - st.getRank();
  for (auto [i, d] : llvm::enumerate(st.getShape())) {
    if (d == 1)
      continue;
    ++channels;
    int64_t xd = xt.getDimSize(lead + i);
    if (d != xd && !ShapedType::isDynamic(d) && !ShapedType::isDynamic(xd))
      return fail("scale has " + Twine(d) + " channels where x has " +
                  Twine(xd));
  }
  if (channels > 1)
    return fail("scale must be a scalar or vary along one dim");
  return success();
}

/// The checks quantize and dequantize share: an integer zero point of the
/// scale's shape, which is a scalar or one channel dim of `x`.
static LogicalResult checkQuantParams(std::optional<Location> loc,
                                      StringRef opName, Value x, Value scale,
                                      Value zeroPoint) {
  Failure fail{loc, opName};
  auto st = tensorOf(scale), zt = tensorOf(zeroPoint), xt = tensorOf(x);
  Type z = zt.getElementType();
  if (!isa<IntegerType>(z) || z.isInteger(1) || z.getIntOrFloatBitWidth() > 32)
    return fail("zero_point must be an integer of 8 to 32 bits");
  return checkQuantScale(loc, opName, xt, st, zt);
}

LogicalResult QuantizeOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  if (failed(checkQuantParams(loc, getOperationName(), adaptor.getX(),
                              adaptor.getScale(), adaptor.getZeroPoint())))
    return failure();
  Type z = tensorOf(adaptor.getZeroPoint()).getElementType();
  if (z.getIntOrFloatBitWidth() > 16)
    return Failure{loc, getOperationName()}(
        "quantizes to 8- or 16-bit integers only");
  return inferBroadcastResult(loc, getOperationName(), adaptor.getOperands(), z,
                              types);
}

std::pair<double, double> QuantizeOp::getSaturationRange() {
  Type elem = tensorOf(getResult()).getElementType();
  unsigned w = elem.getIntOrFloatBitWidth();
  if (elem.isUnsignedInteger())
    return {0, std::ldexp(1, w) - 1};
  return {-std::ldexp(1, w - 1), std::ldexp(1, w - 1) - 1};
}

LogicalResult DequantizeOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  if (failed(checkQuantParams(loc, getOperationName(), adaptor.getX(),
                              adaptor.getScale(), adaptor.getZeroPoint())))
    return failure();
  if (tensorOf(adaptor.getX()).getElementType() !=
      tensorOf(adaptor.getZeroPoint()).getElementType())
    return Failure{loc, getOperationName()}(
        "x and zero_point have different element types");
  return inferBroadcastResult(loc, getOperationName(), adaptor.getOperands(),
                              tensorOf(adaptor.getScale()).getElementType(),
                              types);
}

//===----------------------------------------------------------------------===//
// Linear algebra, convolution, pooling
//===----------------------------------------------------------------------===//

FailureOr<MatmulShape> loom::graph::inferMatmulShape(ArrayRef<int64_t> lhsShape,
                                                     ArrayRef<int64_t> rhsShape,
                                                     bool transposeLhs,
                                                     bool transposeRhs,
                                                     std::string &why) {
  // matmul_c1: no scalars.
  if (lhsShape.empty() || rhsShape.empty()) {
    why = "operands must have rank 1 or more";
    return failure();
  }
  // matmul_c2: transpose flags need a matrix.
  if ((transposeLhs && lhsShape.size() == 1) ||
      (transposeRhs && rhsShape.size() == 1)) {
    why = "a transpose flag needs an operand of rank 2 or more";
    return failure();
  }
  MatmulShape shape;
  SmallVector<int64_t> lhs(lhsShape), rhs(rhsShape);
  shape.lhsVector = lhs.size() == 1;
  shape.rhsVector = rhs.size() == 1;
  if (shape.lhsVector)
    lhs.insert(lhs.begin(), 1);
  if (shape.rhsVector)
    rhs.push_back(1);
  if (transposeLhs)
    std::swap(lhs[lhs.size() - 1], lhs[lhs.size() - 2]);
  if (transposeRhs)
    std::swap(rhs[rhs.size() - 1], rhs[rhs.size() - 2]);
  shape.m = lhs[lhs.size() - 2];
  shape.k = lhs.back();
  int64_t k2 = rhs[rhs.size() - 2];
  shape.n = rhs.back();
  // matmul_c3: contracting dims agree.
  if (!dimsCompatible(shape.k, k2)) {
    why = ("contracting dimensions differ (" + Twine(shape.k) + " vs " +
           Twine(k2) + ")")
              .str();
    return failure();
  }
  // matmul_c4: batch dims broadcast.
  std::string batchWhy;
  if (!broadcastShapes(ArrayRef(lhs).drop_back(2), ArrayRef(rhs).drop_back(2),
                       shape.batch, &batchWhy)) {
    why = "batch dimensions: " + batchWhy;
    return failure();
  }
  shape.result = shape.batch;
  if (!shape.lhsVector)
    shape.result.push_back(shape.m);
  if (!shape.rhsVector)
    shape.result.push_back(shape.n);
  return shape;
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto lhsT = tensorOf(adaptor.getLhs()), rhsT = tensorOf(adaptor.getRhs());
  std::string why;
  FailureOr<MatmulShape> shape = inferMatmulShape(
      lhsT.getShape(), rhsT.getShape(), adaptor.getTransposeLhs(),
      adaptor.getTransposeRhs(), why);
  if (failed(shape))
    return Failure{loc, getOperationName()}(why);
  types.push_back(RankedTensorType::get(shape->result, lhsT.getElementType()));
  return success();
}

LogicalResult MatmulIntegerOp::inferReturnTypes(MLIRContext *ctx,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto lhsT = tensorOf(adaptor.getLhs()), rhsT = tensorOf(adaptor.getRhs());
  // matmul_integer_c1: 8-bit operands, scalar zero points of their types.
  for (auto [x, z, name] :
       {std::make_tuple(lhsT, tensorOf(adaptor.getLhsZero()), "lhs"),
        std::make_tuple(rhsT, tensorOf(adaptor.getRhsZero()), "rhs")}) {
    if (!x.getElementType().isInteger(8))
      return fail(Twine(name) + " must hold 8-bit integers");
    if (z.getElementType() != x.getElementType() || z.getRank() != 0)
      return fail(Twine(name) + "_zero must be a scalar of " + name +
                  "'s element type");
  }
  std::string why;
  FailureOr<MatmulShape> shape = inferMatmulShape(
      lhsT.getShape(), rhsT.getShape(), adaptor.getTransposeLhs(),
      adaptor.getTransposeRhs(), why);
  if (failed(shape))
    return fail(why);
  types.push_back(
      RankedTensorType::get(shape->result, IntegerType::get(ctx, 32)));
  return success();
}

/// Output size of one spatial dim of a window op, or kDyn.
static int64_t windowOutput(int64_t in, int64_t kernel, int64_t stride,
                            int64_t padBegin, int64_t padEnd, int64_t dilation,
                            bool ceilMode) {
  if (ShapedType::isDynamic(in) || ShapedType::isDynamic(kernel))
    return kDyn;
  int64_t span = in + padBegin + padEnd - dilation * (kernel - 1) - 1;
  if (span < 0)
    return -1;
  int64_t out = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  // As in PyTorch: the last window must start inside the input or the
  // begin padding.
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

/// Checks the window attributes shared by conv and pooling (`window_c*`).
static LogicalResult checkWindow(Failure fail, int64_t spatial,
                                 ArrayRef<int64_t> kernel,
                                 ArrayRef<int64_t> strides,
                                 ArrayRef<int64_t> padding,
                                 ArrayRef<int64_t> dilations) {
  // window_c1: one stride/dilation per spatial dim, two pads.
  if ((int64_t)strides.size() != spatial ||
      (int64_t)dilations.size() != spatial ||
      (int64_t)padding.size() != 2 * spatial ||
      (!kernel.empty() && (int64_t)kernel.size() != spatial))
    return fail("expects " + Twine(spatial) +
                " kernel/stride/dilation values and " + Twine(2 * spatial) +
                " padding values for " + Twine(spatial) + " spatial dims");
  // window_c2: strides, dilations and kernel sizes positive, pads >= 0.
  auto positive = [](int64_t v) { return v >= 1; };
  if (!llvm::all_of(strides, positive) || !llvm::all_of(dilations, positive) ||
      !llvm::all_of(kernel, positive) ||
      llvm::any_of(padding, [](int64_t p) { return p < 0; }))
    return fail("strides, dilations and kernel sizes must be positive and "
                "padding non-negative");
  return success();
}

/// Fills the spatial output dims of a window op (`window_c3`: non-empty).
static LogicalResult windowShape(Failure fail, ArrayRef<int64_t> in,
                                 ArrayRef<int64_t> kernel,
                                 ArrayRef<int64_t> strides,
                                 ArrayRef<int64_t> padding,
                                 ArrayRef<int64_t> dilations, bool ceilMode,
                                 SmallVectorImpl<int64_t> &out) {
  int64_t spatial = strides.size();
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t o = windowOutput(in[i], kernel[i], strides[i], padding[i],
                             padding[spatial + i], dilations[i], ceilMode);
    if (!ShapedType::isDynamic(o) && o <= 0)
      return fail("window of size " + Twine(kernel[i]) +
                  " does not fit spatial dim " + Twine(i) + " of size " +
                  Twine(in[i]) + " with its padding");
    out.push_back(o);
  }
  return success();
}

/// The result shape of a convolution of `in` by `w` [+ a bias of `bias`
/// elements]: conv_c1 ... conv_c4 and window_c*, shared by graph.conv and
/// graph.conv_integer.
static LogicalResult inferConvShape(Failure fail, RankedTensorType in,
                                    RankedTensorType w, RankedTensorType bias,
                                    ArrayRef<int64_t> strides,
                                    ArrayRef<int64_t> padding,
                                    ArrayRef<int64_t> dilations, int64_t groups,
                                    SmallVectorImpl<int64_t> &shape) {
  // conv_c1: 1-D, 2-D or 3-D convolution.
  if (in.getRank() < 3 || in.getRank() > 5)
    return fail("input must have rank 3 (1-D), 4 (2-D) or 5 (3-D), got " +
                Twine(in.getRank()));
  // conv_c2: filter rank equals input rank.
  if (w.getRank() != in.getRank())
    return fail("filter rank " + Twine(w.getRank()) +
                " differs from input rank " + Twine(in.getRank()));
  int64_t spatial = in.getRank() - 2;
  // The filter's static spatial dims are the kernel sizes (window_c2).
  SmallVector<int64_t> kernel;
  for (int64_t k : w.getShape().drop_front(2))
    kernel.push_back(ShapedType::isDynamic(k) ? 1 : k);
  if (failed(checkWindow(fail, spatial, kernel, strides, padding, dilations)))
    return failure();
  // conv_c3: groups divide the channels.
  int64_t c = in.getDimSize(1), o = w.getDimSize(0), cg = w.getDimSize(1);
  if (groups < 1)
    return fail("groups must be positive");
  if (!ShapedType::isDynamic(o) && o % groups != 0)
    return fail("output channels " + Twine(o) +
                " are not divisible by groups " + Twine(groups));
  if (!ShapedType::isDynamic(c) && !ShapedType::isDynamic(cg) &&
      c != cg * groups)
    return fail("input channels " + Twine(c) +
                " do not match filter channels " + Twine(cg) + " x groups " +
                Twine(groups));
  // conv_c4: bias is [O].
  if (bias && (bias.getRank() != 1 || !dimsCompatible(bias.getDimSize(0), o)))
    return fail("bias must have shape [" + dimStr(o) + "]");
  shape.assign({in.getDimSize(0), o});
  return windowShape(fail, in.getShape().drop_front(2),
                     w.getShape().drop_front(2), strides, padding, dilations,
                     /*ceilMode=*/false, shape);
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto in = tensorOf(adaptor.getInput());
  RankedTensorType bias;
  if (Value b = adaptor.getBias())
    bias = tensorOf(b);
  SmallVector<int64_t> shape;
  if (failed(inferConvShape(
          Failure{loc, getOperationName()}, in, tensorOf(adaptor.getFilter()),
          bias, adaptor.getStrides(), adaptor.getPadding(),
          adaptor.getDilations(), adaptor.getGroups(), shape)))
    return failure();
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult ConvIntegerOp::inferReturnTypes(MLIRContext *ctx,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto in = tensorOf(adaptor.getInput()), w = tensorOf(adaptor.getFilter());
  // conv_integer_c1: 8-bit operands, scalar zero points of their types.
  for (auto [x, z, name] :
       {std::make_tuple(in, tensorOf(adaptor.getInputZero()), "input"),
        std::make_tuple(w, tensorOf(adaptor.getFilterZero()), "filter")}) {
    if (!x.getElementType().isInteger(8))
      return fail(Twine(name) + " must hold 8-bit integers");
    if (z.getElementType() != x.getElementType() || z.getRank() != 0)
      return fail(Twine(name) + "_zero must be a scalar of " + name +
                  "'s element type");
  }
  // conv_integer_c2: graph.conv's shapes (conv_c1 ... conv_c3).
  SmallVector<int64_t> shape;
  if (failed(inferConvShape(fail, in, w, RankedTensorType(),
                            adaptor.getStrides(), adaptor.getPadding(),
                            adaptor.getDilations(), adaptor.getGroups(),
                            shape)))
    return failure();
  types.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 32)));
  return success();
}

/// Shared by max and average pooling.
static LogicalResult inferPool(Failure fail, RankedTensorType in,
                               ArrayRef<int64_t> kernel,
                               ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> padding,
                               ArrayRef<int64_t> dilations, bool ceilMode,
                               SmallVectorImpl<Type> &types) {
  // pool_c1: 1-D, 2-D or 3-D pooling.
  if (in.getRank() < 3 || in.getRank() > 5)
    return fail("input must have rank 3 (1-D), 4 (2-D) or 5 (3-D), got " +
                Twine(in.getRank()));
  int64_t spatial = in.getRank() - 2;
  // pool_c3: one kernel size per spatial dim.
  if (kernel.size() != (size_t)spatial)
    return fail("expects " + Twine(spatial) + " kernel sizes, got " +
                Twine(kernel.size()));
  if (failed(checkWindow(fail, spatial, kernel, strides, padding, dilations)))
    return failure();
  // pool_c2: a pad is smaller than the dilated window, so every window holds
  // at least one real element (ONNX sets no bound; PyTorch allows half).
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t window = (kernel[i] - 1) * dilations[i] + 1;
    if (padding[i] >= window || padding[spatial + i] >= window)
      return fail("padding of spatial dim " + Twine(i) +
                  " is not smaller than the dilated kernel size " +
                  Twine(window));
  }
  SmallVector<int64_t> shape(in.getShape().take_front(2));
  if (failed(windowShape(fail, in.getShape().drop_front(2), kernel, strides,
                         padding, dilations, ceilMode, shape)))
    return failure();
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferPool({loc, getOperationName()}, tensorOf(adaptor.getX()),
                   adaptor.getKernel(), adaptor.getStrides(),
                   adaptor.getPadding(), adaptor.getDilations(),
                   adaptor.getCeilMode(), types);
}

LogicalResult AvgPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto in = tensorOf(adaptor.getX());
  SmallVector<int64_t> dilations(std::max<int64_t>(in.getRank() - 2, 0), 1);
  return inferPool({loc, getOperationName()}, in, adaptor.getKernel(),
                   adaptor.getStrides(), adaptor.getPadding(), dilations,
                   adaptor.getCeilMode(), types);
}

LogicalResult GlobalAvgPoolOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto in = tensorOf(adaptor.getX());
  // gap_c1: [N, C, spatial...].
  if (in.getRank() < 3)
    return Failure{loc, getOperationName()}(
        "input must have rank 3 or more ([N, C, spatial...])");
  SmallVector<int64_t> shape(in.getShape());
  std::fill(shape.begin() + 2, shape.end(), 1);
  types.push_back(in.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization and softmax
//===----------------------------------------------------------------------===//

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto x = tensorOf(adaptor.getX());
  // bn_c1: x is [N, C, ...].
  if (x.getRank() < 2)
    return fail("input must have rank 2 or more ([N, C, ...])");
  int64_t c = x.getDimSize(1);
  // bn_c2: statistics and affine parameters are [C].
  for (Value v : {adaptor.getScale(), adaptor.getBias(), adaptor.getMean(),
                  adaptor.getVariance()}) {
    auto t = tensorOf(v);
    if (t.getRank() != 1 || !dimsCompatible(t.getDimSize(0), c))
      return fail("scale, bias, mean and variance must have shape [" +
                  dimStr(c) + "], got " + shapeStr(t.getShape()));
  }
  types.push_back(x);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto x = tensorOf(adaptor.getX());
  int64_t axis = adaptor.getAxis();
  // ln_c1: 0 <= axis < rank.
  if (axis < 0 || axis >= x.getRank())
    return fail("axis " + Twine(axis) + " is out of range for rank " +
                Twine(x.getRank()));
  // ln_c2: scale and bias have the normalized shape.
  ArrayRef<int64_t> normalized = x.getShape().drop_front(axis);
  for (Value v : {adaptor.getScale(), adaptor.getBias()}) {
    if (!v)
      continue;
    auto t = tensorOf(v);
    if (!shapesCompatible(t.getShape(), normalized))
      return fail("scale and bias must have the normalized shape " +
                  shapeStr(normalized) + ", got " + shapeStr(t.getShape()));
  }
  types.push_back(x);
  return success();
}

static LogicalResult inferAxisPreserving(Failure fail, Value x, int64_t axis,
                                         SmallVectorImpl<Type> &types) {
  auto t = tensorOf(x);
  // softmax_c1: 0 <= axis < rank.
  if (axis < 0 || axis >= t.getRank())
    return fail("axis " + Twine(axis) + " is out of range for rank " +
                Twine(t.getRank()));
  types.push_back(t);
  return success();
}

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferAxisPreserving({loc, getOperationName()}, adaptor.getX(),
                             adaptor.getAxis(), types);
}

LogicalResult LogSoftmaxOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  return inferAxisPreserving({loc, getOperationName()}, adaptor.getX(),
                             adaptor.getAxis(), types);
}

LogicalResult SumSquaresOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  // sum_squares_c1: at least one operand.
  if (adaptor.getInputs().empty())
    return Failure{loc, getOperationName()}("needs at least one operand");
  types.push_back(RankedTensorType::get(
      {}, tensorOf(adaptor.getInputs().front()).getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// The shapes of an attention's q, k, v and mask checked; the batch dims,
/// S and Dv in `batch`, `s` and `dv`.
static LogicalResult checkAttention(Failure fail, Value q, Value k, Value v,
                                    Value mask, SmallVector<int64_t> &batch,
                                    int64_t &s, int64_t &dv) {
  auto qt = tensorOf(q), kt = tensorOf(k), vt = tensorOf(v);
  // attention_c1: q, k and v are float tensors of one type, rank >= 2.
  if (kt.getElementType() != qt.getElementType() ||
      vt.getElementType() != qt.getElementType())
    return fail("q, k and v must have one element type");
  if (qt.getRank() < 2 || kt.getRank() != qt.getRank() ||
      vt.getRank() != qt.getRank())
    return fail("q, k and v must have one rank of at least 2, got " +
                shapeStr(qt.getShape()) + ", " + shapeStr(kt.getShape()) +
                ", " + shapeStr(vt.getShape()));
  int64_t r = qt.getRank();
  // attention_c2: equal batch dims (no broadcasting); q and k share D,
  // k and v share T.
  for (int64_t i = 0; i + 2 < r; ++i) {
    if (!dimsCompatible(qt.getDimSize(i), kt.getDimSize(i)) ||
        !dimsCompatible(qt.getDimSize(i), vt.getDimSize(i)))
      return fail("q, k and v must have equal batch dims, got " +
                  shapeStr(qt.getShape()) + ", " + shapeStr(kt.getShape()) +
                  ", " + shapeStr(vt.getShape()));
    batch.push_back(mergeDims(mergeDims(qt.getDimSize(i), kt.getDimSize(i)),
                              vt.getDimSize(i)));
  }
  if (!dimsCompatible(qt.getDimSize(r - 1), kt.getDimSize(r - 1)))
    return fail("q " + shapeStr(qt.getShape()) + " and k " +
                shapeStr(kt.getShape()) + " must have one head size");
  if (!dimsCompatible(kt.getDimSize(r - 2), vt.getDimSize(r - 2)))
    return fail("k " + shapeStr(kt.getShape()) + " and v " +
                shapeStr(vt.getShape()) + " must have one key count");
  s = qt.getDimSize(r - 2);
  dv = vt.getDimSize(r - 1);
  // attention_c3: the mask is [S, T].
  if (mask) {
    int64_t t = mergeDims(kt.getDimSize(r - 2), vt.getDimSize(r - 2));
    if (!shapesCompatible(tensorOf(mask).getShape(), {s, t}))
      return fail("the mask must have shape " + shapeStr({s, t}) + ", got " +
                  shapeStr(tensorOf(mask).getShape()));
  }
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  SmallVector<int64_t> batch;
  int64_t s, dv;
  if (failed(checkAttention({loc, getOperationName()}, adaptor.getQ(),
                            adaptor.getK(), adaptor.getV(), adaptor.getMask(),
                            batch, s, dv)))
    return failure();
  SmallVector<int64_t> out(batch);
  out.append({s, dv});
  types.push_back(
      RankedTensorType::get(out, tensorOf(adaptor.getQ()).getElementType()));
  batch.push_back(s);
  types.push_back(RankedTensorType::get(batch, Float32Type::get(ctx)));
  return success();
}

LogicalResult AttentionGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  SmallVector<int64_t> batch;
  int64_t s, dv;
  if (failed(checkAttention(fail, adaptor.getQ(), adaptor.getK(),
                            adaptor.getV(), adaptor.getMask(), batch, s, dv)))
    return failure();
  // attention_grad_c1: out and dout have the attention's result shape and
  // type, lse its f32 [..., S].
  SmallVector<int64_t> out(batch);
  out.append({s, dv});
  Type elem = tensorOf(adaptor.getQ()).getElementType();
  for (Value x : {adaptor.getOut(), adaptor.getDout()})
    if (tensorOf(x).getElementType() != elem ||
        !shapesCompatible(tensorOf(x).getShape(), out))
      return fail("out and dout must be " + shapeStr(out) + " tensors of " +
                  "q's element type, got " + shapeStr(tensorOf(x).getShape()));
  batch.push_back(s);
  auto lse = tensorOf(adaptor.getLse());
  if (!lse.getElementType().isF32() || !shapesCompatible(lse.getShape(), batch))
    return fail("lse must be an f32 " + shapeStr(batch) + " tensor, got " +
                shapeStr(lse.getShape()));
  for (Value x : {adaptor.getQ(), adaptor.getK(), adaptor.getV()})
    types.push_back(x.getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Scans and selection
//===----------------------------------------------------------------------===//

LogicalResult CumSumOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  // cumsum_c1: 0 <= axis < rank.
  return inferAxisPreserving({loc, getOperationName()}, adaptor.getX(),
                             adaptor.getAxis(), types);
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *ctx,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto x = tensorOf(adaptor.getX());
  int64_t axis = adaptor.getAxis(), k = adaptor.getK();
  // top_k_c1: 0 <= axis < rank.
  if (axis < 0 || axis >= x.getRank())
    return fail("axis " + Twine(axis) + " is out of range for rank " +
                Twine(x.getRank()));
  // top_k_c2: k >= 0.
  if (k < 0)
    return fail("k " + Twine(k) + " is negative");
  // top_k_c3: k <= the axis dim.
  int64_t dim = x.getDimSize(axis);
  if (!ShapedType::isDynamic(dim) && k > dim)
    return fail("k " + Twine(k) + " exceeds dim " + Twine(axis) + " (" +
                Twine(dim) + ")");
  SmallVector<int64_t> shape(x.getShape());
  shape[axis] = k;
  types.push_back(x.clone(shape));
  types.push_back(x.clone(shape, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto data = tensorOf(adaptor.getData());
  auto idx = tensorOf(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  // gather_elements_c1: indices have the rank of data.
  if (idx.getRank() != data.getRank())
    return fail("indices have rank " + Twine(idx.getRank()) +
                " but data has rank " + Twine(data.getRank()));
  // gather_elements_c2: 0 <= axis < rank.
  if (axis < 0 || axis >= data.getRank())
    return fail("axis " + Twine(axis) + " is out of range for rank " +
                Twine(data.getRank()));
  // gather_elements_c3: off the axis, index dims do not exceed data dims.
  for (int64_t d = 0; d < data.getRank(); ++d) {
    int64_t i = idx.getDimSize(d), n = data.getDimSize(d);
    if (d != axis && !ShapedType::isDynamic(i) && !ShapedType::isDynamic(n) &&
        i > n)
      return fail("indices " + shapeStr(idx.getShape()) + " exceed data " +
                  shapeStr(data.getShape()) + " in dim " + Twine(d));
  }
  types.push_back(idx.clone(data.getElementType()));
  return success();
}

LogicalResult
ScatterElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto data = tensorOf(adaptor.getData());
  auto idx = tensorOf(adaptor.getIndices());
  auto upd = tensorOf(adaptor.getUpdates());
  int64_t axis = adaptor.getAxis();
  // scatter_elements_c1: one rank for all; indices and updates one shape.
  if (idx.getRank() != data.getRank() ||
      !shapesCompatible(idx.getShape(), upd.getShape()))
    return fail("indices " + shapeStr(idx.getShape()) + " and updates " +
                shapeStr(upd.getShape()) +
                " must have one shape, of the rank of data " +
                shapeStr(data.getShape()));
  // scatter_elements_c2: 0 <= axis < rank.
  if (axis < 0 || axis >= data.getRank())
    return fail("axis " + Twine(axis) + " is out of range for rank " +
                Twine(data.getRank()));
  // scatter_elements_c3: updates have data's element type.
  if (upd.getElementType() != data.getElementType())
    return fail("updates and data have different element types");
  types.push_back(data);
  return success();
}

LogicalResult TriluOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto x = tensorOf(adaptor.getX());
  // trilu_c1: rank >= 2.
  if (x.getRank() < 2)
    return Failure{loc, getOperationName()}("needs rank 2 or more, got " +
                                            Twine(x.getRank()));
  types.push_back(x);
  return success();
}

LogicalResult ResizeOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto x = tensorOf(adaptor.getX());
  ArrayRef<double> scales = adaptor.getScales();
  ArrayRef<int64_t> sizes = adaptor.getSizes();
  // resize_c1: one scale and one size per dim.
  if ((int64_t)scales.size() != x.getRank() ||
      (int64_t)sizes.size() != x.getRank())
    return fail("needs one scale and one size per dim of rank " +
                Twine(x.getRank()) + ", got " + Twine(scales.size()) +
                " scales and " + Twine(sizes.size()) + " sizes");
  SmallVector<int64_t> shape;
  for (auto [d, in] : llvm::enumerate(x.getShape())) {
    // resize_c2: a size is -1 or >= 0; a scale is >= 0, and > 0 when it
    // gives the size.
    if (sizes[d] < -1 || !(scales[d] >= 0) ||
        (sizes[d] == -1 && !(scales[d] > 0)))
      return fail("dim " + Twine(d) + " has size " + Twine(sizes[d]) +
                  " and scale " + std::to_string(scales[d]) +
                  ": needs a size >= 0, or size -1 and a scale > 0");
    if (sizes[d] >= 0)
      shape.push_back(sizes[d]);
    else if (ShapedType::isDynamic(in))
      shape.push_back(kDyn);
    else
      shape.push_back((int64_t)std::floor((double)in * scales[d]));
  }
  types.push_back(x.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto in = tensorOf(adaptor.getX());
  ArrayRef<int64_t> spec = adaptor.getShape();
  SmallVector<int64_t> out;
  int64_t inferred = -1;
  SmallVector<bool> copied(in.getRank(), false);
  for (auto [i, v] : llvm::enumerate(spec)) {
    if (v == 0) {
      // reshape_c1: a 0 copies an existing input dim.
      if ((int64_t)i >= in.getRank())
        return fail("shape entry 0 at position " + Twine(i) +
                    " has no input dim to copy (input rank " +
                    Twine(in.getRank()) + ")");
      copied[i] = true;
      out.push_back(in.getDimSize(i));
    } else if (v == -1) {
      // reshape_c2: at most one inferred dim.
      if (inferred >= 0)
        return fail("shape " + listStr(spec) + " has more than one -1");
      inferred = i;
      out.push_back(kDyn);
    } else if (v < -1) {
      // reshape_c3: entries are -1, 0 or positive.
      return fail("shape entry " + Twine(v) + " must be -1, 0 or positive");
    } else {
      out.push_back(v);
    }
  }
  // Element counts, leaving out dims copied at the same position (they
  // cancel, which lets a dynamic batch dim pass through).
  std::optional<int64_t> inCount = 1, outCount = 1;
  bool overflow = false;
  for (auto [i, d] : llvm::enumerate(in.getShape())) {
    if (copied[i])
      continue;
    if (ShapedType::isDynamic(d))
      inCount.reset();
    else if (inCount)
      overflow |= llvm::MulOverflow(*inCount, d, *inCount);
  }
  for (auto [i, d] : llvm::enumerate(out)) {
    if ((int64_t)i == inferred || (i < copied.size() && copied[i]))
      continue;
    overflow |= llvm::MulOverflow(*outCount, d, *outCount);
  }
  if (overflow)
    return fail("cannot reshape " + shapeStr(in.getShape()) + " to " +
                listStr(spec) + ": the element count overflows 64 bits");
  if (inferred >= 0) {
    if (inCount) {
      // reshape_c4: the inferred dim divides evenly.
      if (*outCount == 0 || *inCount % *outCount != 0)
        return fail("cannot reshape " + shapeStr(in.getShape()) + " to " +
                    listStr(spec) + ": " + Twine(*inCount) +
                    " elements do not divide into " + Twine(*outCount));
      out[inferred] = *inCount / *outCount;
    }
  } else if (inCount && *inCount != *outCount) {
    // reshape_c5: element counts agree.
    return fail("cannot reshape " + shapeStr(in.getShape()) + " to " +
                listStr(spec) + ": element counts differ (" + Twine(*inCount) +
                " vs " + Twine(*outCount) + ")");
  }
  types.push_back(in.clone(out));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto in = tensorOf(adaptor.getX());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  // transpose_c1: perm is a permutation of [0, rank).
  SmallVector<int64_t> sorted(perm);
  llvm::sort(sorted);
  bool isPerm = (int64_t)perm.size() == in.getRank();
  for (auto [i, v] : llvm::enumerate(sorted))
    isPerm &= v == (int64_t)i;
  if (!isPerm)
    return Failure{loc, getOperationName()}("perm " + listStr(perm) +
                                            " is not a permutation of [0, " +
                                            Twine(in.getRank()) + ")");
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(in.getDimSize(p));
  types.push_back(in.clone(shape));
  return success();
}

LogicalResult BroadcastToOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto in = tensorOf(adaptor.getX());
  ArrayRef<int64_t> target = adaptor.getShape();
  // bto_c1: the target has at least the operand's rank.
  if ((int64_t)target.size() < in.getRank())
    return fail("target shape " + listStr(target) + " has lower rank than " +
                shapeStr(in.getShape()));
  int64_t offset = target.size() - in.getRank();
  SmallVector<int64_t> shape;
  for (auto [i, t] : llvm::enumerate(target)) {
    int64_t src = (int64_t)i >= offset ? in.getDimSize(i - offset) : 1;
    if (t == -1) {
      // bto_c2: -1 keeps an operand dim, so it needs one.
      if ((int64_t)i < offset)
        return fail("-1 at position " + Twine(i) +
                    " has no operand dim to keep");
      shape.push_back(src);
      continue;
    }
    // bto_c3: each operand dim is 1 or equal to the target.
    if (t < 0 || (src != 1 && !dimsCompatible(src, t)))
      return fail("cannot broadcast " + shapeStr(in.getShape()) + " to " +
                  listStr(target));
    shape.push_back(t);
  }
  types.push_back(in.clone(shape));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  ValueRange inputs = adaptor.getInputs();
  // concat_c1: at least one input.
  if (inputs.empty())
    return fail("needs at least one input");
  auto first = tensorOf(inputs.front());
  int64_t axis = adaptor.getAxis();
  // concat_c2: 0 <= axis < rank.
  if (axis < 0 || axis >= first.getRank())
    return fail("axis " + Twine(axis) + " is out of range for rank " +
                Twine(first.getRank()));
  SmallVector<int64_t> shape(first.getShape());
  for (Value v : inputs.drop_front()) {
    auto t = tensorOf(v);
    // concat_c3: inputs have the same rank and agree off the axis.
    if (t.getRank() != first.getRank())
      return fail("inputs have different ranks");
    for (int64_t d = 0; d < t.getRank(); ++d) {
      if (d == axis) {
        shape[d] = ShapedType::isDynamic(shape[d]) ||
                           ShapedType::isDynamic(t.getDimSize(d))
                       ? kDyn
                       : shape[d] + t.getDimSize(d);
        continue;
      }
      if (!dimsCompatible(shape[d], t.getDimSize(d)))
        return fail("inputs differ in dim " + Twine(d) + " (" +
                    shapeStr(first.getShape()) + " vs " +
                    shapeStr(t.getShape()) + ")");
      shape[d] = mergeDims(shape[d], t.getDimSize(d));
    }
  }
  types.push_back(first.clone(shape));
  return success();
}

/// Length of an ONNX-style slice of a static dim. Written so that no
/// intermediate overflows for any int64 start, end and step.
static int64_t sliceLength(int64_t dim, int64_t start, int64_t end,
                           int64_t step) {
  if (dim == 0)
    return 0;
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return end > start ? (end - start - 1) / step + 1 : 0;
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  // Division by the negative step truncates toward zero.
  return start > end ? -((start - end - 1) / step) + 1 : 0;
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto in = tensorOf(adaptor.getX());
  ArrayRef<int64_t> starts = adaptor.getStarts(), ends = adaptor.getEnds(),
                    steps = adaptor.getSteps();
  // slice_c1: one start, end and step per dim.
  if ((int64_t)starts.size() != in.getRank() ||
      (int64_t)ends.size() != in.getRank() ||
      (int64_t)steps.size() != in.getRank())
    return fail("starts, ends and steps need " + Twine(in.getRank()) +
                " entries each");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    // slice_c2: steps are non-zero.
    if (steps[d] == 0)
      return fail("step of dim " + Twine(d) + " is zero");
    int64_t dim = in.getDimSize(d);
    shape.push_back(ShapedType::isDynamic(dim)
                        ? kDyn
                        : sliceLength(dim, starts[d], ends[d], steps[d]));
  }
  types.push_back(in.clone(shape));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto data = tensorOf(adaptor.getData());
  auto idx = tensorOf(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  // gather_c1: 0 <= axis < rank(data).
  if (axis < 0 || axis >= data.getRank())
    return Failure{loc, getOperationName()}("axis " + Twine(axis) +
                                            " is out of range for rank " +
                                            Twine(data.getRank()));
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, idx.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  types.push_back(data.clone(shape));
  return success();
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto in = tensorOf(adaptor.getX());
  ArrayRef<int64_t> axes = adaptor.getAxes();
  // squeeze_c1: axes sorted, unique, in range.
  if (!validAxes(axes, in.getRank()))
    return fail("axes " + listStr(axes) +
                " must be sorted, unique and in [0, " + Twine(in.getRank()) +
                ")");
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(in.getShape())) {
    if (!llvm::is_contained(axes, (int64_t)i)) {
      shape.push_back(d);
      continue;
    }
    // squeeze_c2: only size-1 dims are removed.
    if (!dimsCompatible(d, 1))
      return fail("cannot squeeze dim " + Twine(i) + " of size " + Twine(d));
  }
  types.push_back(in.clone(shape));
  return success();
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto in = tensorOf(adaptor.getX());
  ArrayRef<int64_t> axes = adaptor.getAxes();
  int64_t rank = in.getRank() + axes.size();
  // unsqueeze_c1: axes sorted, unique, positions in the result.
  if (axes.empty() || !validAxes(axes, rank))
    return Failure{loc, getOperationName()}(
        "axes " + listStr(axes) +
        " must be non-empty, sorted, unique and in [0, " + Twine(rank) + ")");
  SmallVector<int64_t> shape;
  auto it = in.getShape().begin();
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(llvm::is_contained(axes, i) ? 1 : *it++);
  types.push_back(in.clone(shape));
  return success();
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto in = tensorOf(adaptor.getX());
  int64_t axis = adaptor.getAxis();
  // flatten_c1: 0 <= axis <= rank.
  if (axis < 0 || axis > in.getRank())
    return Failure{loc, getOperationName()}("axis " + Twine(axis) +
                                            " is out of range [0, " +
                                            Twine(in.getRank()) + "]");
  auto product = [](ArrayRef<int64_t> dims) {
    int64_t p = 1;
    for (int64_t d : dims) {
      if (ShapedType::isDynamic(d))
        return kDyn;
      p *= d;
    }
    return p;
  };
  types.push_back(in.clone({product(in.getShape().take_front(axis)),
                            product(in.getShape().drop_front(axis))}));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto in = tensorOf(adaptor.getX());
  ArrayRef<int64_t> pads = adaptor.getPads();
  int64_t rank = in.getRank();
  // pad_c1: begin and end pads for every dim.
  if ((int64_t)pads.size() != 2 * rank)
    return fail("pads need " + Twine(2 * rank) + " entries, got " +
                Twine(pads.size()));
  // pad_c2: pads are non-negative.
  if (llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return fail("pads " + listStr(pads) + " must be non-negative");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = in.getDimSize(d);
    // pad_c3: reflect pads stay inside the dim.
    if (adaptor.getMode() == PadMode::reflect && !ShapedType::isDynamic(dim) &&
        (pads[d] >= dim || pads[rank + d] >= dim))
      return fail("reflect pads of dim " + Twine(d) +
                  " must be smaller than its size " + Twine(dim));
    shape.push_back(
        ShapedType::isDynamic(dim) ? kDyn : dim + pads[d] + pads[rank + d]);
  }
  types.push_back(in.clone(shape));
  return success();
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto table = tensorOf(adaptor.getTable());
  auto ids = tensorOf(adaptor.getIds());
  // emb_c1: the table is [vocab, dim].
  if (table.getRank() != 2)
    return Failure{loc, getOperationName()}(
        "table must have rank 2 ([vocab, dim]), got " +
        shapeStr(table.getShape()));
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getDimSize(1));
  types.push_back(table.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

static Type reducedLossType(RankedTensorType perElement, Reduction r) {
  if (r == Reduction::none)
    return perElement;
  return RankedTensorType::get({}, perElement.getElementType());
}

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto logits = tensorOf(adaptor.getLogits());
  auto labels = tensorOf(adaptor.getLabels());
  // ce_c1: logits have a class dim.
  if (logits.getRank() < 1)
    return fail("logits must have rank 1 or more ([..., classes])");
  // ce_c2: labels are logits' shape without the class dim.
  ArrayRef<int64_t> rows = logits.getShape().drop_back();
  if (!shapesCompatible(labels.getShape(), rows))
    return fail("labels shape " + shapeStr(labels.getShape()) +
                " must be the logits shape without its class dim " +
                shapeStr(rows));
  SmallVector<int64_t> shape = mergeShapes(labels.getShape(), rows);
  types.push_back(reducedLossType(logits.clone(shape), adaptor.getReduction()));
  return success();
}

LogicalResult MseLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto pred = tensorOf(adaptor.getPred());
  auto target = tensorOf(adaptor.getTarget());
  // mse_c1: pred and target have the same shape.
  if (!shapesCompatible(pred.getShape(), target.getShape()))
    return Failure{loc, getOperationName()}(
        "pred " + shapeStr(pred.getShape()) + " and target " +
        shapeStr(target.getShape()) + " differ in shape");
  SmallVector<int64_t> shape = mergeShapes(pred.getShape(), target.getShape());
  types.push_back(reducedLossType(pred.clone(shape), adaptor.getReduction()));
  return success();
}

//===----------------------------------------------------------------------===//
// Run-time shape parameters
//
// Ops that take shapes, axes, bounds or pads as tensor operands (ONNX's
// form). Their values are known only when the code runs, so these rules
// check what the types say: parameter tensors are 1-D (or a scalar, for an
// axis) of static length, and the lengths agree with the ranks.
//===----------------------------------------------------------------------===//

/// The static length of the 1-D parameter tensor `v` named `what`.
static FailureOr<int64_t> paramLength(Failure fail, Value v, StringRef what) {
  auto t = tensorOf(v);
  if (t.getRank() != 1)
    return fail(what + " must be a 1-D tensor, got rank " + Twine(t.getRank()));
  if (t.isDynamicDim(0))
    return fail(what + " must have a static length");
  return t.getDimSize(0);
}

/// Checks that `param` holds `perDim` entries per dim of `x`.
static LogicalResult checkPerDim(Failure fail, Value param, StringRef what,
                                 RankedTensorType x, int64_t perDim) {
  auto n = paramLength(fail, param, what);
  if (failed(n))
    return failure();
  if (*n != perDim * x.getRank())
    return fail(what + " has " + Twine(*n) + " entries for a tensor of rank " +
                Twine(x.getRank()) +
                (perDim == 1 ? "" : " (" + Twine(perDim) + " per dim)"));
  return success();
}

/// A tensor of `rank` dynamic dims like `x`.
static RankedTensorType dynamicLike(RankedTensorType x, int64_t rank) {
  return RankedTensorType::get(SmallVector<int64_t>(rank, kDyn),
                               x.getElementType());
}

LogicalResult DynamicReshapeOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  // dynamic_reshape_c1: the shape is 1-D of static length.
  auto n = paramLength({loc, getOperationName()}, adaptor.getShape(), "shape");
  if (failed(n))
    return failure();
  types.push_back(dynamicLike(tensorOf(adaptor.getX()), *n));
  return success();
}

LogicalResult
DynamicUnsqueezeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &types) {
  // dynamic_unsqueeze_c1: the axes are 1-D of static length.
  auto k = paramLength({loc, getOperationName()}, adaptor.getAxes(), "axes");
  if (failed(k))
    return failure();
  auto x = tensorOf(adaptor.getX());
  types.push_back(dynamicLike(x, x.getRank() + *k));
  return success();
}

LogicalResult DynamicSqueezeOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  // dynamic_squeeze_c1: the axes are 1-D of static length.
  auto k = paramLength(fail, adaptor.getAxes(), "axes");
  if (failed(k))
    return failure();
  auto x = tensorOf(adaptor.getX());
  // dynamic_squeeze_c2: no more axes than dims.
  if (*k > x.getRank())
    return fail(Twine(*k) + " axes for a tensor of rank " + Twine(x.getRank()));
  types.push_back(dynamicLike(x, x.getRank() - *k));
  return success();
}

LogicalResult DynamicSliceOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto x = tensorOf(adaptor.getX());
  // dynamic_slice_c1: starts, ends, axes and steps are 1-D of one static
  // length, at most the rank.
  auto k = paramLength(fail, adaptor.getStarts(), "starts");
  if (failed(k))
    return failure();
  for (auto [v, what] : {std::pair<Value, StringRef>{adaptor.getEnds(), "ends"},
                         {adaptor.getAxes(), "axes"},
                         {adaptor.getSteps(), "steps"}}) {
    auto n = paramLength(fail, v, what);
    if (failed(n))
      return failure();
    if (*n != *k)
      return fail(what + " has " + Twine(*n) + " entries but starts has " +
                  Twine(*k));
  }
  if (*k > x.getRank())
    return fail(Twine(*k) + " sliced axes for a tensor of rank " +
                Twine(x.getRank()));
  // With the axes a constant, the dims not listed are taken whole and keep
  // their sizes (`position_ids[:, :seq]` stays [1, ?]).
  RankedTensorType result = dynamicLike(x, x.getRank());
  DenseIntElementsAttr axes;
  if (matchPattern(adaptor.getAxes(), m_Constant(&axes))) {
    SmallVector<int64_t> shape(x.getShape());
    for (const APInt &a : axes.getValues<APInt>()) {
      int64_t axis = a.getSExtValue();
      if (axis < 0)
        axis += x.getRank();
      if (axis >= 0 && axis < x.getRank())
        shape[axis] = ShapedType::kDynamic;
    }
    result = RankedTensorType::get(shape, x.getElementType());
  }
  types.push_back(result);
  return success();
}

LogicalResult
DynamicReduceSumOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  // dynamic_reduce_sum_c1: the axes are 1-D of static length.
  auto k = paramLength(fail, adaptor.getAxes(), "axes");
  if (failed(k))
    return failure();
  auto x = tensorOf(adaptor.getX());
  // dynamic_reduce_sum_c2: no more axes than dims.
  if (*k > x.getRank())
    return fail(Twine(*k) + " axes for a tensor of rank " + Twine(x.getRank()));
  int64_t rank = x.getRank();
  if (!adaptor.getKeepdims())
    rank -= *k == 0 ? (adaptor.getNoopWithEmptyAxes() ? 0 : rank) : *k;
  types.push_back(dynamicLike(x, rank));
  return success();
}

LogicalResult DynamicCumSumOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  // dynamic_cumsum_c1: the axis is one integer (rank 0, or 1-D of one).
  auto axis = tensorOf(adaptor.getAxis());
  if (axis.getRank() > 1 || axis.getNumElements() != 1)
    return Failure{loc,
                   getOperationName()}("axis must hold exactly one integer");
  auto x = tensorOf(adaptor.getX());
  // dynamic_cumsum_c2: the operand is not a scalar.
  if (x.getRank() == 0)
    return Failure{loc, getOperationName()}("operand must have rank >= 1");
  types.push_back(x);
  return success();
}

LogicalResult DynamicFillOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  // dynamic_fill_c1: the shape is 1-D of static length.
  auto n = paramLength(fail, adaptor.getShape(), "shape");
  if (failed(n))
    return failure();
  // dynamic_fill_c2: the value is a float or integer scalar of a graph
  // element type.
  auto value = dyn_cast<TypedAttr>(adaptor.getValue());
  Type elem = value ? value.getType() : Type();
  if (!value || !isa<FloatAttr, IntegerAttr>(value) ||
      !isGraphElementType(elem))
    return fail(
        "value must be a float or integer scalar of a graph element type");
  types.push_back(RankedTensorType::get(SmallVector<int64_t>(*n, kDyn), elem));
  return success();
}

LogicalResult
DynamicBroadcastOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &types) {
  // dynamic_broadcast_c1: the shape is 1-D of static length.
  auto n = paramLength({loc, getOperationName()}, adaptor.getShape(), "shape");
  if (failed(n))
    return failure();
  auto x = tensorOf(adaptor.getX());
  int64_t rank = std::max<int64_t>(x.getRank(), *n);
  SmallVector<int64_t> shape(rank, kDyn);
  // Aligned on the right: a static x dim other than 1 is the result's.
  for (int64_t i = 0; i < x.getRank(); ++i) {
    int64_t d = x.getDimSize(i);
    if (!ShapedType::isDynamic(d) && d != 1)
      shape[rank - x.getRank() + i] = d;
  }
  types.push_back(x.clone(shape));
  return success();
}

LogicalResult RangeOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  // range_c1: start, limit and delta are scalars.
  for (Value v : adaptor.getOperands())
    if (tensorOf(v).getRank() != 0)
      return Failure{loc, getOperationName()}(
          "start, limit and delta must be scalars (rank 0)");
  types.push_back(tensorOf(adaptor.getStart()).clone({kDyn}));
  return success();
}

LogicalResult DynamicTileOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto x = tensorOf(adaptor.getX());
  // dynamic_tile_c1: one repeat per dim.
  if (failed(checkPerDim(fail, adaptor.getRepeats(), "repeats", x, 1)))
    return failure();
  types.push_back(dynamicLike(x, x.getRank()));
  return success();
}

LogicalResult DynamicPadOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto x = tensorOf(adaptor.getX());
  // dynamic_pad_c1: two pads per dim.
  if (failed(checkPerDim(fail, adaptor.getPads(), "pads", x, 2)))
    return failure();
  // dynamic_pad_c2: the value is a scalar of x's element type.
  auto value = tensorOf(adaptor.getValue());
  if (value.getRank() != 0 || value.getElementType() != x.getElementType())
    return fail("value must be a scalar of the operand's element type");
  types.push_back(dynamicLike(x, x.getRank()));
  return success();
}

LogicalResult DynamicTopKOp::inferReturnTypes(MLIRContext *ctx,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto x = tensorOf(adaptor.getX());
  int64_t axis = adaptor.getAxis();
  // dynamic_top_k_c1: 0 <= axis < rank.
  if (axis < 0 || axis >= x.getRank())
    return fail("axis " + Twine(axis) + " is out of range for rank " +
                Twine(x.getRank()));
  // dynamic_top_k_c2: k is one integer.
  auto k = tensorOf(adaptor.getK());
  if (k.getRank() > 1 || k.getNumElements() != 1)
    return fail("k must hold exactly one integer");
  SmallVector<int64_t> shape(x.getShape());
  shape[axis] = kDyn;
  types.push_back(x.clone(shape));
  types.push_back(x.clone(shape, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult DynamicResizeOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  Failure fail{loc, getOperationName()};
  auto x = tensorOf(adaptor.getX());
  // dynamic_resize_c1: one scale or size per dim.
  if (failed(
          checkPerDim(fail, adaptor.getParam(), "the scales or sizes", x, 1)))
    return failure();
  // dynamic_resize_c2: sizes are i64, scales a float type.
  Type elem = tensorOf(adaptor.getParam()).getElementType();
  if (isa<IntegerType>(elem) && !elem.isSignlessInteger(64))
    return fail("sizes must be i64");
  types.push_back(dynamicLike(x, x.getRank()));
  return success();
}

LogicalResult NonZeroOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  // One row of coordinates per true element; the count is the data's.
  int64_t rank = tensorOf(adaptor.getMask()).getRank();
  types.push_back(
      RankedTensorType::get({kDyn, rank}, IntegerType::get(ctx, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// Custom assembly
//===----------------------------------------------------------------------===//

/// `[a, b, ...]` over the full int64 range. (The generic dense-array syntax
/// of MLIR 19 rejects large negative entries such as INT64_MIN, which ONNX
/// slices use as a sentinel.)
static ParseResult parseI64List(OpAsmParser &parser, DenseI64ArrayAttr &attr) {
  SmallVector<int64_t> values;
  // Parsed as an APInt: OpAsmParser::parseInteger<int64_t> of MLIR 19 also
  // rejects negative values of more than about 56 bits.
  if (parser.parseCommaSeparatedList(
          OpAsmParser::Delimiter::Square, [&]() -> ParseResult {
            SMLoc loc = parser.getCurrentLocation();
            APInt value;
            OptionalParseResult parsed = parser.parseOptionalInteger(value);
            if (!parsed.has_value())
              return parser.emitError(loc, "expected an integer");
            if (failed(*parsed))
              return failure();
            if (value.getSignificantBits() > 64)
              return parser.emitError(loc, "integer does not fit in int64");
            values.push_back(value.sextOrTrunc(64).getSExtValue());
            return success();
          }))
    return failure();
  attr = DenseI64ArrayAttr::get(parser.getContext(), values);
  return success();
}

static void printI64List(OpAsmPrinter &p, Operation *, DenseI64ArrayAttr attr) {
  p << '[';
  llvm::interleaveComma(attr.asArrayRef(), p);
  p << ']';
}

//===----------------------------------------------------------------------===//
// Control flow: graph.if, graph.loop, graph.yield
//===----------------------------------------------------------------------===//

/// Whether a value of type `from` may stand for one of type `to`: the same
/// element type and rank, each dim equal or dynamic on one side.
static bool castCompatible(Type from, Type to) {
  auto a = dyn_cast<RankedTensorType>(from);
  auto b = dyn_cast<RankedTensorType>(to);
  if (!a || !b || a.getElementType() != b.getElementType() ||
      a.getRank() != b.getRank())
    return false;
  for (auto [x, y] : llvm::zip(a.getShape(), b.getShape()))
    if (x != y && !ShapedType::isDynamic(x) && !ShapedType::isDynamic(y))
      return false;
  return true;
}

/// Whether `t` is a rank-0 tensor of `element`.
static bool isScalarOf(Type t, Type element) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && r.getRank() == 0 && r.getElementType() == element;
}

/// The graph.yield ending `block`, or null (then the verifier says so).
static YieldOp yieldOf(Block &block) {
  return block.empty() ? YieldOp() : dyn_cast<YieldOp>(block.back());
}

/// The region's block takes exactly the captures' types (`tag`).
static LogicalResult verifyCaptureArgs(Operation *op, Region &region,
                                       unsigned first, ValueRange captures,
                                       StringRef what, StringRef tag) {
  Block &block = region.front();
  for (auto [i, capture] : llvm::enumerate(captures)) {
    Type arg = block.getArgument(first + i).getType();
    if (arg != capture.getType())
      return op->emitOpError()
             << what << " argument " << first + i << " has type " << arg
             << ", but capture " << i << " is " << capture.getType() << " ("
             << tag << ")";
  }
  return success();
}

LogicalResult IfOp::verify() {
  // if_c1: the condition is one boolean.
  if (getCond().getType().getRank() != 0)
    return emitOpError("condition must be a rank-0 tensor<i1>, got ")
           << getCond().getType() << " (if_c1)";
  for (auto [name, region] :
       {std::pair<StringRef, Region *>{"then", &getThenRegion()},
        {"else", &getElseRegion()}}) {
    Block &block = region->front();
    // if_c2: each region takes one argument per capture.
    if (block.getNumArguments() != getCaptures().size())
      return emitOpError() << name << " region takes "
                           << block.getNumArguments()
                           << " arguments, but there are "
                           << getCaptures().size() << " captures (if_c2)";
    if (failed(verifyCaptureArgs(*this, *region, 0, getCaptures(),
                                 name.str() + " region", "if_c2")))
      return failure();
    // if_c3: each yields one value per result, cast-compatible with it.
    YieldOp yield = yieldOf(block);
    if (!yield)
      return emitOpError() << name << " region must end with graph.yield";
    if (yield.getValues().size() != getNumResults())
      return emitOpError() << name << " region yields "
                           << yield.getValues().size() << " values for "
                           << getNumResults() << " results (if_c3)";
    for (auto [i, v, r] : llvm::enumerate(yield.getValues(), getResultTypes()))
      if (!castCompatible(v.getType(), r))
        return emitOpError()
               << name << " region yields " << v.getType() << " for result "
               << i << " of type " << r << " (if_c3)";
  }
  return success();
}

LogicalResult LoopOp::verify() {
  MLIRContext *ctx = getContext();
  Type i64 = IntegerType::get(ctx, 64), i1 = IntegerType::get(ctx, 1);
  // loop_c1: the bound is one i64, the condition one boolean.
  if (getTripCount() && !isScalarOf(getTripCount().getType(), i64))
    return emitOpError("trip count must be a rank-0 tensor<i64>, got ")
           << getTripCount().getType() << " (loop_c1)";
  if (getCond() && !isScalarOf(getCond().getType(), i1))
    return emitOpError("condition must be a rank-0 tensor<i1>, got ")
           << getCond().getType() << " (loop_c1)";
  Block &body = getBody().front();
  unsigned numInits = getInits().size();
  // loop_c2: the body takes (iteration, condition, carried..., captures...).
  if (body.getNumArguments() != 2 + numInits + getCaptures().size())
    return emitOpError() << "body takes " << body.getNumArguments()
                         << " arguments, expected 2 + " << numInits
                         << " carried + " << getCaptures().size()
                         << " captures (loop_c2)";
  if (!isScalarOf(body.getArgument(0).getType(), i64) ||
      !isScalarOf(body.getArgument(1).getType(), i1))
    return emitOpError("body's first two arguments must be tensor<i64> (the "
                       "iteration) and tensor<i1> (the condition) (loop_c2)");
  // loop_c3: each initial value fits its carried argument.
  for (auto [k, init] : llvm::enumerate(getInits())) {
    Type arg = body.getArgument(2 + k).getType();
    if (!castCompatible(init.getType(), arg))
      return emitOpError() << "initial value " << k << " of type "
                           << init.getType() << " does not fit its carried "
                           << "argument of type " << arg << " (loop_c3)";
  }
  if (failed(verifyCaptureArgs(*this, getBody(), 2 + numInits, getCaptures(),
                               "body", "loop_c2")))
    return failure();
  // loop_c4: the body yields (condition, carried..., scans...).
  YieldOp yield = yieldOf(body);
  if (!yield)
    return emitOpError("body must end with graph.yield");
  ValueRange yields = yield.getValues();
  if (yields.size() < 1 + numInits)
    return emitOpError() << "body yields " << yields.size()
                         << " values, expected the condition and " << numInits
                         << " carried values first (loop_c4)";
  if (!isScalarOf(yields[0].getType(), i1))
    return emitOpError("body must yield the next condition (tensor<i1>) "
                       "first, got ")
           << yields[0].getType() << " (loop_c4)";
  for (unsigned k = 0; k < numInits; ++k) {
    Type arg = body.getArgument(2 + k).getType();
    if (!castCompatible(yields[1 + k].getType(), arg))
      return emitOpError() << "body yields " << yields[1 + k].getType()
                           << " for carried value " << k << " of type " << arg
                           << " (loop_c4)";
  }
  // loop_c5: results are the carried values, then one stack per scan value.
  unsigned numScans = yields.size() - 1 - numInits;
  if (getNumResults() != numInits + numScans)
    return emitOpError() << "has " << getNumResults() << " results, expected "
                         << numInits << " carried + " << numScans
                         << " scan values (loop_c5)";
  for (unsigned k = 0; k < numInits; ++k)
    if (getResult(k).getType() != body.getArgument(2 + k).getType())
      return emitOpError() << "result " << k << " has type "
                           << getResult(k).getType()
                           << ", but its carried argument is "
                           << body.getArgument(2 + k).getType() << " (loop_c5)";
  for (unsigned s = 0; s < numScans; ++s) {
    auto value = cast<RankedTensorType>(yields[1 + numInits + s].getType());
    auto stacked = cast<RankedTensorType>(getResult(numInits + s).getType());
    auto perIteration =
        stacked.getRank() == 0
            ? Type()
            : RankedTensorType::get(stacked.getShape().drop_front(),
                                    stacked.getElementType());
    if (!perIteration || !castCompatible(value, perIteration))
      return emitOpError() << "scan result " << s << " of type " << stacked
                           << " does not stack the yielded " << value
                           << " along a leading dim (loop_c5)";
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.cpp.inc"
