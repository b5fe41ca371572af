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
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;
namespace graph = loom::graph;

/// One step up: the operand dim that dynamic dim `dim` of `v` provably
/// equals, from the op's shape rule. Null when there is none (a graph
/// input, or a dim the op computes).
static std::pair<Value, int64_t> equalOperandDim(Value v, int64_t dim) {
  Operation *op = v.getDefiningOp();
  if (!op || op->getNumOperands() == 0)
    return {};
  auto rankOf = [](Value x) {
    return cast<RankedTensorType>(x.getType()).getRank();
  };
  // Broadcast batch dims: result dim `dim` of `outBatch` batch dims lines
  // up on the right with the first `rank - trailing` dims of each operand.
  // The first operand with that dim dynamic is the one it equals.
  auto firstAligned = [&](ValueRange operands, int64_t outBatch,
                          int64_t trailing) -> std::pair<Value, int64_t> {
    for (Value operand : operands) {
      int64_t batch = rankOf(operand) - trailing;
      int64_t d = dim - (outBatch - batch);
      if (d >= 0 && d < batch &&
          cast<RankedTensorType>(operand.getType()).isDynamicDim(d))
        return {operand, d};
    }
    return {};
  };
  int64_t rank = rankOf(v);
  // Same shape as operand 0.
  if (op->hasTrait<OpTrait::SameOperandsAndResultType>() ||
      isa<graph::CastOp, graph::SoftmaxOp, graph::LogSoftmaxOp,
          graph::LayerNormOp, graph::BatchNormOp, graph::FillLikeOp,
          graph::CumSumOp>(op))
    return {op->getOperand(0), dim};
  if (isa<graph::AddOp, graph::SubOp, graph::MulOp, graph::DivOp, graph::PowOp,
          graph::MaxOp, graph::MinOp, graph::CompareOp, graph::WhereOp>(op))
    return firstAligned(op->getOperands(), rank, /*trailing=*/0);
  if (auto t = dyn_cast<graph::TransposeOp>(op))
    return {t.getX(), t.getPerm()[dim]};
  if (auto r = dyn_cast<graph::ReshapeOp>(op)) {
    ArrayRef<int64_t> shape = r.getShape();
    if (shape[dim] == 0)
      return {r.getX(), dim};
    // The one inferred dim of a reshape that keeps every other dim
    // (`x.view(-1, x.size(-1))` of a 2-D x) equals the input's.
    auto in = cast<RankedTensorType>(r.getX().getType());
    if (shape[dim] != -1 || in.getRank() != rank)
      return {};
    for (int64_t j = 0; j < rank; ++j)
      if (j != dim && shape[j] != 0 &&
          (in.isDynamicDim(j) || shape[j] != in.getDimSize(j)))
        return {};
    return {r.getX(), dim};
  }
  if (auto e = dyn_cast<graph::EmbeddingOp>(op))
    return dim < rank - 1 ? std::make_pair(e.getIds(), dim)
                          : std::pair<Value, int64_t>{};
  if (auto m = dyn_cast<graph::MatmulOp>(op)) {
    // Result: batch dims, then M (absent for a 1-D lhs), then N (absent
    // for a 1-D rhs).
    int64_t lr = rankOf(m.getLhs()), rr = rankOf(m.getRhs());
    int64_t batch = rank - (lr > 1) - (rr > 1);
    if (dim < batch)
      return firstAligned({m.getLhs(), m.getRhs()}, batch, /*trailing=*/2);
    if (dim == batch && lr > 1)
      return {m.getLhs(), m.getTransposeLhs() ? lr - 1 : lr - 2};
    if (rr > 1)
      return {m.getRhs(), m.getTransposeRhs() ? rr - 2 : rr - 1};
    return {};
  }
  if (auto g = dyn_cast<graph::GatherOp>(op)) {
    int64_t axis = g.getAxis(), idxRank = rankOf(g.getIndices());
    if (dim < axis)
      return {g.getData(), dim};
    if (dim < axis + idxRank)
      return {g.getIndices(), dim - axis};
    return {g.getData(), dim - idxRank + 1};
  }
  if (auto u = dyn_cast<graph::UnsqueezeOp>(op)) {
    // Result dim `dim` is operand dim `dim` minus the axes inserted before.
    int64_t before =
        llvm::count_if(u.getAxes(), [&](int64_t a) { return a < dim; });
    return {u.getX(), dim - before};
  }
  if (auto sq = dyn_cast<graph::SqueezeOp>(op)) {
    int64_t d = dim;
    for (int64_t a : sq.getAxes())
      if (a <= d)
        ++d;
    return {sq.getX(), d};
  }
  if (auto sl = dyn_cast<graph::SliceOp>(op)) {
    // A dim sliced whole: start 0, step 1, end past any size.
    if (sl.getStarts()[dim] == 0 && sl.getSteps()[dim] == 1 &&
        sl.getEnds()[dim] == INT64_MAX)
      return {sl.getX(), dim};
    return {};
  }
  return {};
}

/// The earliest dim that dynamic dim `dim` of `v` provably equals.
static std::pair<Value, int64_t> rootDim(const ImportContext &c, Value v,
                                         int64_t dim) {
  for (int steps = 0; steps < 10000; ++steps) {
    auto alias = c.dimAliases.find({v, dim});
    auto next =
        alias != c.dimAliases.end() ? alias->second : equalOperandDim(v, dim);
    if (!next.first)
      break;
    std::tie(v, dim) = next;
  }
  return {v, dim};
}

bool loom::onnx_import::sameDynamicDim(const ImportContext &c, Value a,
                                       int64_t da, Value b, int64_t db) {
  auto ra = rootDim(c, a, da), rb = rootDim(c, b, db);
  if (ra == rb)
    return true;
  // Two inputs' dims with one dim_param are equal (the runtime checks it).
  StringRef name = c.b.argumentDimName(ra.first, ra.second);
  return !name.empty() && name == c.b.argumentDimName(rb.first, rb.second);
}

std::optional<SymShape> ImportContext::symbolicInput(int i) const {
  if (!hasInput(i))
    return std::nullopt;
  auto it = symbolic.find(node->input(i));
  if (it != symbolic.end())
    return it->second;
  auto value = knownInput(i);
  // Shape values are short: a long known vector (a splat of millions of
  // elements costs nothing as an attribute) is data, not a shape, and is
  // not expanded element by element.
  constexpr int64_t kMaxShapeLength = 1024;
  // Booleans are not sizes (their true would read as -1).
  if (!value || !isa<IntegerType>(value->getElementType()) ||
      value->getElementType().isInteger(1) || value->getType().getRank() > 1 ||
      value->getType().getNumElements() > kMaxShapeLength)
    return std::nullopt;
  SymShape s;
  s.scalar = value->getType().getRank() == 0;
  for (const APInt &v : value->getValues<APInt>())
    s.dims.push_back({v.getSExtValue(), {}, -1, false});
  return s;
}

void loom::onnx_import::setSymbolicOutput(ImportContext &c, const SymShape &s) {
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
  // Equal and Where on small known integer vectors (PyTorch's Expand
  // export builds its target shape this way).
  if (op == "Equal" || op == "Where") {
    SmallVector<DenseElementsAttr> in;
    for (int i = 0; i < c.node->input_size(); ++i) {
      auto v = c.knownInput(i);
      if (!v || v->getType().getRank() > 1 ||
          !isa<IntegerType>(v->getElementType()))
        return false;
      in.push_back(*v);
    }
    int64_t n = 1;
    for (DenseElementsAttr a : in)
      n = std::max<int64_t>(n, a.getNumElements());
    for (DenseElementsAttr a : in)
      if (a.getNumElements() != n && a.getNumElements() != 1)
        return false;
    auto at = [&](DenseElementsAttr a, int64_t i) {
      auto values = a.getValues<APInt>();
      return values[a.getNumElements() == 1 ? 0 : i].getSExtValue();
    };
    bool scalar = llvm::all_of(
        in, [](DenseElementsAttr a) { return a.getType().getRank() == 0; });
    SmallVector<int64_t> shape;
    if (!scalar)
      shape.push_back(n);
    if (op == "Equal") {
      SmallVector<bool> out;
      for (int64_t i = 0; i < n; ++i)
        out.push_back(at(in[0], i) == at(in[1], i));
      c.known[c.node->output(0)] = DenseElementsAttr::get(
          RankedTensorType::get(shape, IntegerType::get(&c.ctx, 1)),
          ArrayRef(out));
      return true;
    }
    SmallVector<int64_t> out;
    for (int64_t i = 0; i < n; ++i)
      out.push_back(at(in[0], i) ? at(in[1], i) : at(in[2], i));
    c.known[c.node->output(0)] = DenseElementsAttr::get(
        RankedTensorType::get(shape, IntegerType::get(&c.ctx, 64)),
        ArrayRef(out));
    return true;
  }

  // PyTorch's Expand export on a vector with dynamic dims: Reshape of the
  // vector to [-1], its Shape, Equal to a vector of -1s and a Where. A
  // dynamic dim is never negative, so it differs from any negative value.
  if (op == "Equal" || op == "Where" || op == "Shape" || op == "Reshape") {
    auto sym = [&](int i) -> std::optional<SymShape> {
      return c.symbolic.count(c.node->input(i)) ? c.symbolicInput(i)
                                                : std::nullopt;
    };
    if (op == "Shape" || op == "Reshape") {
      auto x = sym(0);
      if (!x || x->scalar)
        return false;
      if (op == "Shape") {
        SymShape s;
        s.dims.push_back({(int64_t)x->dims.size(), {}, -1, false});
        setSymbolicOutput(c, s);
        return true;
      }
      auto target = c.knownInput(1);
      if (!target || target->getNumElements() != 1)
        return false;
      int64_t n = (*target->value_begin<APInt>()).getSExtValue();
      if (n != -1 && n != (int64_t)x->dims.size())
        return false;
      setSymbolicOutput(c, *x);
      return true;
    }
    if (op == "Equal") {
      auto a = sym(0);
      auto b = c.knownInput(1);
      if (!a || a->scalar || !b || b->getType().getRank() != 1 ||
          b->getNumElements() != (int64_t)a->dims.size() ||
          !isa<IntegerType>(b->getElementType()))
        return false;
      SmallVector<bool> out;
      for (auto [d, v] : llvm::zip(a->dims, b->getValues<APInt>())) {
        int64_t w = v.getSExtValue();
        if (d.isStatic())
          out.push_back(d.value == w);
        else if (w < 0)
          out.push_back(false);
        else
          return false;
      }
      c.known[c.node->output(0)] = DenseElementsAttr::get(
          RankedTensorType::get({(int64_t)out.size()},
                                IntegerType::get(&c.ctx, 1)),
          ArrayRef(out));
      return true;
    }
    // Where(known condition, x, y), x or y symbolic, the other known.
    auto cond = c.knownInput(0);
    auto x = c.symbolicInput(1), y = c.symbolicInput(2);
    if (!cond || !x || !y || x->scalar || y->scalar ||
        cond->getType().getRank() != 1 || x->dims.size() != y->dims.size() ||
        cond->getNumElements() != (int64_t)x->dims.size())
      return false;
    SymShape s;
    for (auto [i, pick] : llvm::enumerate(cond->getValues<bool>()))
      s.dims.push_back(pick ? x->dims[i] : y->dims[i]);
    setSymbolicOutput(c, s);
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
    setSymbolicOutput(c, s);
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
    setSymbolicOutput(c, s);
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
    setSymbolicOutput(c, s);
    return true;
  }
  if (op == "Slice" && c.opset >= 10) {
    auto x = c.symbolicInput(0);
    auto starts = c.knownInput(1), ends = c.knownInput(2);
    if (!x || x->scalar || !starts || !ends || c.hasInput(4) ||
        starts->getNumElements() != 1 || ends->getNumElements() != 1 ||
        !isa<IntegerType>(starts->getElementType()) ||
        !isa<IntegerType>(ends->getElementType()))
      return false;
    // The vector's one axis: axes, when given, must say so.
    if (c.hasInput(3)) {
      auto axes = c.knownInput(3);
      if (!axes || axes->getNumElements() != 1 ||
          !isa<IntegerType>(axes->getElementType()))
        return false;
      int64_t axis = (*axes->value_begin<APInt>()).getSExtValue();
      if (axis != 0 && axis != -1)
        return false;
    }
    int64_t n = x->dims.size();
    int64_t b = (*starts->value_begin<APInt>()).getSExtValue();
    int64_t e = (*ends->value_begin<APInt>()).getSExtValue();
    b = std::clamp<int64_t>(b < 0 ? b + n : b, 0, n);
    e = std::clamp<int64_t>(e < 0 ? e + n : e, 0, n);
    SymShape s;
    for (int64_t i = b; i < e; ++i)
      s.dims.push_back(x->dims[i]);
    setSymbolicOutput(c, s);
    return true;
  }
  if (op == "Neg") {
    // LayerNormalization's function body negates its axis to count the
    // reduced axes.
    auto x = c.symbolicInput(0);
    if (!x)
      return false;
    SymShape s = *x;
    for (SymDim &d : s.dims) {
      if (!d.isStatic() || d.value == INT64_MIN)
        return false;
      d.value = -d.value;
    }
    setSymbolicOutput(c, s);
    return true;
  }
  if (op == "Mul" || op == "Div" || op == "Add" || op == "Sub") {
    auto a = c.symbolicInput(0), b = c.symbolicInput(1);
    if (!a || !b)
      return false;
    // A one-element side broadcasts against the other.
    size_t n = std::max(a->dims.size(), b->dims.size());
    for (SymShape *side : {&*a, &*b}) {
      if (side->dims.size() == n)
        continue;
      if (side->dims.size() != 1)
        return false;
      side->dims.assign(n, side->dims.front());
    }
    SymShape s;
    s.scalar = a->scalar && b->scalar;
    for (auto [x, y] : llvm::zip(a->dims, b->dims)) {
      // A dynamic dim minus itself (GPT-2's `key_length - query_length`).
      if (op == "Sub" && !x.unknown && !y.unknown && x.source && y.source &&
          sameDynamicDim(c, x.source, x.dim, y.source, y.dim)) {
        s.dims.push_back({0, {}, -1, false});
        continue;
      }
      if (!x.isStatic() || !y.isStatic()) {
        // A multiple of a dynamic dim: unknown, but still one dim.
        s.dims.push_back({0, {}, -1, /*unknown=*/true});
        continue;
      }
      if (op == "Div" &&
          (y.value == 0 || (y.value == -1 && x.value == INT64_MIN)))
        return false;
      // Overflowing 64 bits is not a shape: leave the node to the converter.
      int64_t v = 0;
      if (op == "Div")
        v = x.value / y.value;
      else if (op == "Mul"   ? llvm::MulOverflow(x.value, y.value, v)
               : op == "Add" ? llvm::AddOverflow(x.value, y.value, v)
                             : llvm::SubOverflow(x.value, y.value, v))
        return false;
      s.dims.push_back({v, {}, -1, false});
    }
    setSymbolicOutput(c, s);
    return true;
  }
  return false;
}

Value loom::onnx_import::dimSize(ImportContext &c, Value x, int64_t dim) {
  // Only the shape of `x` is read: a slice one element wide on every other
  // dim, filled with ones and summed.
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> starts(rank, 0), ends(rank, 1);
  ends[dim] = INT64_MAX;
  Value line = c.b.slice(x, starts, ends);
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  return c.b.reduceSum(c.b.fillLike(line, 1, DType::i64), axes);
}

bool loom::onnx_import::canMaterialize(const SymShape &s) {
  return llvm::all_of(s.dims, [](const SymDim &d) {
    return d.isStatic() || (!d.unknown && d.source);
  });
}

Value loom::onnx_import::materializeSymbolic(ImportContext &c,
                                             const SymShape &s) {
  SmallVector<Value> parts;
  SmallVector<int64_t> run;
  auto flush = [&] {
    if (run.empty())
      return;
    auto type = RankedTensorType::get({(int64_t)run.size()},
                                      IntegerType::get(&c.ctx, 64));
    parts.push_back(c.b.constant(DenseElementsAttr::get(type, ArrayRef(run))));
    run.clear();
  };
  for (const SymDim &d : s.dims) {
    if (d.isStatic()) {
      run.push_back(d.value);
      continue;
    }
    flush();
    parts.push_back(c.b.reshape(dimSize(c, d.source, d.dim), {1}));
  }
  flush();
  Value v = parts.size() == 1 ? parts.front() : c.b.concat(parts, 0);
  return s.scalar ? c.b.reshape(v, {}) : v;
}
