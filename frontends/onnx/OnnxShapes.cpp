//===- OnnxShapes.cpp - shape arithmetic at import ------------------------===//
//
// Exporters compute shapes at run time: Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape. With a dynamic batch dim the values are not constants,
// but they are known up to that dim. This file tracks such vectors
// (SymShape) through the small integer ops exporters use, so that Reshape
// and Expand can turn them into graph attributes (0 = copy a dim, -1 =
// infer one dim) without shape tensors.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;

std::optional<SymShape> ImportContext::symbolicInput(int i) const {
  if (!hasInput(i))
    return std::nullopt;
  auto it = symbolic.find(node->input(i));
  if (it != symbolic.end())
    return it->second;
  auto value = knownInput(i);
  if (!value || !isa<IntegerType>(value->getElementType()) ||
      value->getType().getRank() > 1)
    return std::nullopt;
  SymShape s;
  s.scalar = value->getType().getRank() == 0;
  for (const APInt &v : value->getValues<APInt>())
    s.dims.push_back({v.getSExtValue(), {}, -1, false});
  return s;
}

/// Stores `s` as the node's output: as a known tensor when every entry is
/// static, else as a symbolic vector.
static void setSymbolic(ImportContext &c, const SymShape &s) {
  if (llvm::all_of(s.dims, [](const SymDim &d) { return d.isStatic(); })) {
    SmallVector<int64_t> values;
    for (const SymDim &d : s.dims)
      values.push_back(d.value);
    auto type = RankedTensorType::get(
        s.scalar ? ArrayRef<int64_t>{}
                 : ArrayRef<int64_t>{(int64_t)values.size()},
        IntegerType::get(&c.ctx, 64));
    c.known[c.node->output(0)] = DenseElementsAttr::get(type, ArrayRef(values));
    return;
  }
  c.symbolic[c.node->output(0)] = s;
}

bool loom::onnx_import::foldShapeArithmetic(ImportContext &c) {
  StringRef op = c.node->op_type();
  if (op == "Shape") {
    if (!c.hasInput(0) || !c.values.count(c.node->input(0)))
      return false;
    Value x = c.values[c.node->input(0)];
    auto type = cast<RankedTensorType>(x.getType());
    if (type.hasStaticShape())
      return false; // the constant form handles it
    int64_t rank = type.getRank();
    int64_t start = c.attrInt("start", 0), end = c.attrInt("end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    SymShape s;
    for (int64_t i = start; i < end; ++i)
      s.dims.push_back(type.isDynamicDim(i)
                           ? SymDim{0, x, i, false}
                           : SymDim{type.getDimSize(i), {}, -1, false});
    setSymbolic(c, s);
    return true;
  }

  // The remaining ops fold when an input is symbolic, or when every input
  // is a known integer vector (exporters' shape arithmetic on constants).
  bool anySymbolic = false, allKnownInts = c.node->input_size() > 0;
  for (int i = 0; i < c.node->input_size(); ++i) {
    if (!c.hasInput(i))
      continue;
    anySymbolic |= c.symbolic.count(c.node->input(i)) > 0;
    allKnownInts &= c.symbolicInput(i).has_value();
  }
  if (!anySymbolic && !allKnownInts)
    return false;
  // Casts fold only between integer types: shape values stay int64.
  if (op == "Cast") {
    int64_t to = c.attrInt("to", 0);
    if (to != onnx::TensorProto::INT64 && to != onnx::TensorProto::INT32)
      return false;
  }

  if (op == "Gather") {
    auto data = c.symbolicInput(0);
    auto idx = c.knownInput(1);
    if (!data || data->scalar || !idx)
      return false;
    SymShape s;
    s.scalar = idx->getType().getRank() == 0;
    for (const APInt &v : idx->getValues<APInt>()) {
      int64_t i = v.getSExtValue();
      if (i < 0)
        i += data->dims.size();
      if (i < 0 || i >= (int64_t)data->dims.size())
        return false;
      s.dims.push_back(data->dims[i]);
    }
    setSymbolic(c, s);
    return true;
  }
  if (op == "Unsqueeze" || op == "Squeeze" || op == "Cast" ||
      op == "Identity") {
    auto x = c.symbolicInput(0);
    // Unsqueeze of a scalar and Squeeze of a one-element vector only: the
    // vectors tracked here have rank 0 or 1.
    if (!x || (op == "Unsqueeze" && !x->scalar) ||
        (op == "Squeeze" && (x->scalar || x->dims.size() != 1)))
      return false;
    SymShape s = *x;
    if (op == "Unsqueeze")
      s.scalar = false;
    else if (op == "Squeeze")
      s.scalar = true;
    setSymbolic(c, s);
    return true;
  }
  if (op == "Concat") {
    SymShape s;
    for (int i = 0; i < c.node->input_size(); ++i) {
      auto x = c.symbolicInput(i);
      if (!x || x->scalar)
        return false;
      llvm::append_range(s.dims, x->dims);
    }
    setSymbolic(c, s);
    return true;
  }
  if (op == "Slice" && c.opset >= 10) {
    auto x = c.symbolicInput(0);
    auto starts = c.knownInput(1), ends = c.knownInput(2);
    if (!x || x->scalar || !starts || !ends || c.hasInput(4))
      return false;
    int64_t n = x->dims.size();
    int64_t b = (*starts->value_begin<APInt>()).getSExtValue();
    int64_t e = (*ends->value_begin<APInt>()).getSExtValue();
    b = std::clamp<int64_t>(b < 0 ? b + n : b, 0, n);
    e = std::clamp<int64_t>(e < 0 ? e + n : e, 0, n);
    SymShape s;
    for (int64_t i = b; i < e; ++i)
      s.dims.push_back(x->dims[i]);
    setSymbolic(c, s);
    return true;
  }
  if (op == "Mul" || op == "Div" || op == "Add" || op == "Sub") {
    auto a = c.symbolicInput(0), b = c.symbolicInput(1);
    if (!a || !b || a->dims.size() != b->dims.size())
      return false;
    SymShape s;
    s.scalar = a->scalar && b->scalar;
    for (auto [x, y] : llvm::zip(a->dims, b->dims)) {
      if (!x.isStatic() || !y.isStatic()) {
        // A multiple of a dynamic dim: unknown, but still one dim.
        s.dims.push_back({0, {}, -1, /*unknown=*/true});
        continue;
      }
      if (op == "Div" && y.value == 0)
        return false;
      int64_t v = op == "Mul"   ? x.value * y.value
                  : op == "Add" ? x.value + y.value
                  : op == "Sub" ? x.value - y.value
                                : x.value / y.value;
      s.dims.push_back({v, {}, -1, false});
    }
    setSymbolic(c, s);
    return true;
  }
  return false;
}
