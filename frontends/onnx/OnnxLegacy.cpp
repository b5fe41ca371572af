//===- OnnxLegacy.cpp - old-opset forms of ONNX ops -----------------------===//
//
// The forms ONNX's early opsets (as PyTorch exported at opset 6) gave ops
// that the op table knows from a later version: the `broadcast` / `axis`
// attributes of Add, Sub, Mul, Div and Pow before opset 7; PRelu's
// per-channel slope before 7; Pad's `pads` / `paddings` attributes before 11;
// BatchNormalization's `is_test` and `spatial` before 9; the `value_*`
// attributes of Constant from 12. A form whose semantics equal its next
// form's (once attributes that only hint, such as `consumed_inputs`, are
// ignored) is converted by that form's converter. Also Celu and
// MeanVarianceNormalization, written as a few graph ops.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;
using graph::CompareDirection;

namespace {

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

bool used(ImportContext &c, int i) {
  return c.node->output_size() > i && !c.node->output(i).empty();
}

/// Operand `b` of a binary op before opset 7 made numpy-broadcastable
/// against `a`: without `broadcast` the shapes must be equal; with it, `b`'s
/// dims line up with `a`'s from `axis` on (its trailing dims when no axis is
/// given), so size-1 dims are appended to `b` to reach `a`'s last dim.
FailureOr<Value> legacyBroadcast(ImportContext &c, Value a, Value b) {
  auto at = cast<RankedTensorType>(a.getType());
  auto bt = cast<RankedTensorType>(b.getType());
  int64_t ra = at.getRank(), rb = bt.getRank();
  if (!c.attrInt("broadcast", 0)) {
    bool differ = ra != rb;
    for (int64_t i = 0; !differ && i < ra; ++i)
      differ = !at.isDynamicDim(i) && !bt.isDynamicDim(i) &&
               at.getDimSize(i) != bt.getDimSize(i);
    if (differ)
      return c.error("the input shapes differ and broadcast is 0 (before "
                     "opset 7 the shapes must then be equal)");
    return b;
  }
  if (rb > ra)
    return c.error("with broadcast = 1, input 1 (rank " + Twine(rb) +
                   ") must not have a higher rank than input 0 (rank " +
                   Twine(ra) + ")");
  if (!c.hasAttr("axis"))
    return b;
  int64_t axis = c.attrInt("axis", 0);
  if (axis < 0)
    axis += ra;
  if (axis < 0 || axis + rb > ra)
    return c.error("broadcast axis " + Twine(c.attrInt("axis", 0)) +
                   " does not fit a rank-" + Twine(rb) +
                   " input 1 into a rank-" + Twine(ra) + " input 0");
  SmallVector<int64_t> trailing;
  for (int64_t i = rb; i < ra - axis; ++i)
    trailing.push_back(i);
  return trailing.empty() ? b : c.b.unsqueeze(b, trailing);
}

/// The attribute of a Constant node holding its value (ONNX allows one).
const onnx::AttributeProto *constantAttr(ImportContext &c) {
  for (const onnx::AttributeProto &a : c.node->attribute())
    if (StringRef(a.name()).starts_with("value") || a.name() == "sparse_value")
      return &a;
  return nullptr;
}

} // namespace

namespace loom::onnx_import {

LogicalResult newerForm(ImportContext &c) {
  const OpEntry *own = lookupOp("", c.node->op_type(), c.opset);
  for (int64_t v = c.opset + 1; v <= kNewestOpset; ++v) {
    const OpEntry *next = lookupOp("", c.node->op_type(), v);
    if (next && next != own)
      return next->handler(c);
  }
  return c.error("no later form of " + c.node->op_type() +
                 " to convert this one with");
}

template <Value (GraphBuilder::*fn)(Value, Value)>
LogicalResult binaryV1(ImportContext &c) {
  Value a = c.input(0), b = c.input(1);
  if (!a || !b)
    return failure();
  FailureOr<Value> rhs = legacyBroadcast(c, a, b);
  if (failed(rhs))
    return failure();
  c.setOutput(0, (c.b.*fn)(a, *rhs));
  return success();
}

template LogicalResult binaryV1<&GraphBuilder::add>(ImportContext &);
template LogicalResult binaryV1<&GraphBuilder::sub>(ImportContext &);
template LogicalResult binaryV1<&GraphBuilder::mul>(ImportContext &);
template LogicalResult binaryV1<&GraphBuilder::div>(ImportContext &);
template LogicalResult binaryV1<&GraphBuilder::pow>(ImportContext &);

/// Constant from opset 12: `value` as before, or one of the `value_float(s)`
/// and `value_int(s)` attributes as an f32 or i64 scalar (vector).
LogicalResult constantForms(ImportContext &c) {
  const onnx::AttributeProto *a = constantAttr(c);
  if (!a)
    return c.error("Constant has no value attribute");
  StringRef name = a->name();
  if (name == "value")
    return lookupOp("", "Constant", 11)->handler(c);
  if (name == "sparse_value" || name == "value_string" ||
      name == "value_strings")
    return c.error(
        "the '" + name + "' form of Constant is not supported (Loom has no " +
        (name == "sparse_value" ? "sparse" : "string") + " tensors)");
  bool scalar = name == "value_float" || name == "value_int";
  bool isFloat = name.starts_with("value_float");
  if (!scalar && name != "value_floats" && name != "value_ints")
    return c.error("unknown Constant attribute '" + name + "'");
  SmallVector<int64_t> shape;
  if (!scalar)
    shape.push_back(isFloat ? a->floats_size() : a->ints_size());
  Builder builder(&c.ctx);
  DenseElementsAttr value;
  if (isFloat) {
    SmallVector<float> data =
        scalar ? SmallVector<float>{a->f()}
               : SmallVector<float>(a->floats().begin(), a->floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get(shape, builder.getF32Type()), ArrayRef(data));
  } else {
    SmallVector<int64_t> data =
        scalar ? SmallVector<int64_t>{a->i()}
               : SmallVector<int64_t>(a->ints().begin(), a->ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get(shape, builder.getI64Type()), ArrayRef(data));
  }
  c.known[c.node->output(0)] = value;
  return success();
}

/// Pad before opset 11: the pads (`paddings` at opset 1), mode and fill
/// value are attributes.
LogicalResult padV1(ImportContext &c) {
  Value x = c.input(0);
  if (!x)
    return failure();
  std::string mode = c.attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return c.error("unsupported pad mode '" + mode + "'");
  graph::PadMode m = mode == "reflect" ? graph::PadMode::reflect
                     : mode == "edge"  ? graph::PadMode::edge
                                       : graph::PadMode::constant;
  SmallVector<int64_t> pads =
      c.attrInts(c.hasAttr("paddings") ? "paddings" : "pads");
  if ((int64_t)pads.size() != 2 * rankOf(x))
    return c.error("pads has " + Twine(pads.size()) + " entries; a rank-" +
                   Twine(rankOf(x)) + " input needs " + Twine(2 * rankOf(x)));
  c.setOutput(0, c.b.pad(x, pads, m, c.attrFloat("value", 0.0f)));
  return success();
}

/// BatchNormalization before opset 9. Before 7, `is_test` = 0 means
/// training with only Y (not supported) and `is_test` = 1 has only Y; at 7
/// and 8, training is asking for the running statistics, as at 9. With
/// `spatial` = 0 the statistics are per activation ([C, D1, ...]), which
/// numpy broadcasting lines up with x's dims from 1 on.
LogicalResult batchNormV1(ImportContext &c) {
  bool stats = false;
  for (int i = 1; i < c.node->output_size(); ++i)
    stats |= used(c, i);
  if (c.opset < 7 && !c.attrInt("is_test", 0))
    return c.error("the training form of BatchNormalization (is_test = 0) "
                   "is not supported before opset 7; export the model in "
                   "inference mode");
  if (c.opset < 7 && stats)
    return c.error("with is_test = 1, BatchNormalization has only its Y "
                   "output");
  if (c.attrInt("spatial", 1))
    return newerForm(c);
  if (stats)
    return c.error("training BatchNormalization with spatial = 0 is not "
                   "supported");
  Value x = c.input(0), scale = c.input(1), bias = c.input(2),
        mean = c.input(3), var = c.input(4);
  if (!x || !scale || !bias || !mean || !var)
    return failure();
  if (rankOf(x) < 2)
    return c.error("BatchNormalization needs an [N, C, ...] input");
  double epsilon = c.attrFloat("epsilon", 1e-5f);
  Value inv = c.b.rsqrt(c.b.add(var, scalarLike(c, var, epsilon)));
  Value y = c.b.mul(c.b.sub(x, mean), c.b.mul(inv, scale));
  c.setOutput(0, c.b.add(y, bias));
  return success();
}

/// PRelu before opset 7: a rank-1 slope of more than one element holds
/// one value per channel (x's dim 1), not per last dim.
LogicalResult preluV1(ImportContext &c) {
  Value x = c.input(0), slope = c.input(1);
  if (!x || !slope)
    return failure();
  auto st = cast<RankedTensorType>(slope.getType());
  if (st.getRank() == 1 && st.getDimSize(0) != 1 && rankOf(x) > 2) {
    SmallVector<int64_t> trailing;
    for (int64_t i = 1; i < rankOf(x) - 1; ++i)
      trailing.push_back(i);
    slope = c.b.unsqueeze(slope, trailing);
  }
  Value neg = c.b.compare(CompareDirection::lt, x, scalarLike(c, x, 0.0));
  c.setOutput(0, c.b.where(neg, c.b.mul(x, slope), x));
  return success();
}

/// alpha * (exp(x / alpha) - 1) for x < 0, else x.
LogicalResult celu(ImportContext &c) {
  Value x = c.input(0);
  if (!x)
    return failure();
  if (!isa<FloatType>(cast<RankedTensorType>(x.getType()).getElementType()))
    return c.error("input 0 must hold floats");
  double alpha = c.attrFloat("alpha", 1.0f);
  if (alpha == 0)
    return c.error("alpha must not be 0");
  Value e = c.b.exp(c.b.div(x, scalarLike(c, x, alpha)));
  Value negPart =
      c.b.mul(c.b.sub(e, scalarLike(c, x, 1.0)), scalarLike(c, x, alpha));
  Value isNeg = c.b.compare(CompareDirection::lt, x, scalarLike(c, x, 0.0));
  c.setOutput(0, c.b.where(isNeg, negPart, x));
  return success();
}

/// (x - mean) / (sqrt(var) + 1e-9), the statistics over `axes` (default
/// [0, 2, 3]), as ONNX's function body of the op writes it.
LogicalResult meanVarianceNormalization(ImportContext &c) {
  Value x = c.input(0);
  if (!x)
    return failure();
  if (!isa<FloatType>(cast<RankedTensorType>(x.getType()).getElementType()))
    return c.error("input 0 must hold floats");
  SmallVector<int64_t> axes =
      c.hasAttr("axes") ? c.attrInts("axes") : SmallVector<int64_t>{0, 2, 3};
  for (int64_t axis : axes)
    if (axis < -rankOf(x) || axis >= rankOf(x))
      return c.error("axis " + Twine(axis) + " is out of range for rank " +
                     Twine(rankOf(x)));
  Value mean = c.b.reduceMean(x, axes, /*keepdims=*/true);
  Value centered = c.b.sub(x, mean);
  Value var = c.b.reduceMean(c.b.mul(centered, centered), axes, true);
  Value std = c.b.add(c.b.sqrt(var), scalarLike(c, var, 1e-9));
  c.setOutput(0, c.b.div(centered, std));
  return success();
}

} // namespace loom::onnx_import
