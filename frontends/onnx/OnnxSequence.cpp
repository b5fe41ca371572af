//===- OnnxSequence.cpp - ONNX sequences as lists known at import ---------===//
//
// An ONNX sequence is a list of graph values whose length is known at
// import (ImportContext::sequences), each element an ordinary tensor value:
// SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceErase and
// SplitToSequence build lists; SequenceAt picks an element, SequenceLength
// is a known scalar, ConcatFromSequence concatenates the elements and
// SequenceMap imports its body once per element (importInline, as If and
// Loop import theirs). No graph op holds a sequence: any op not marked
// takesSequences in the op table that is given one is refused. A sequence
// graph input is N tensor inputs NAME.0 ... (N fixed per compile,
// ImportOptions::sequenceLengths), a sequence output N outputs.
//
// Optionals are known at import too (ImportContext::optionals): empty, or
// holding a tensor or a list. Optional builds one, OptionalHasElement is a
// known bool, OptionalGetElement the element (an error when empty).
//
// A position known at import picks list entries directly. A position known
// only at run time picks from the elements stacked along a new axis (so
// they must have one shape) with a gather. Negative positions count from
// the end; a run-time position out of range is clamped to the nearest
// valid one (ONNX makes it an error, which the graph cannot raise), while
// one known at import out of range is refused.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;
using graph::CompareDirection;

namespace {

using List = std::vector<Value>;

/// The list input `i` names; an error when it is a tensor.
FailureOr<List> listInput(ImportContext &c, int i) {
  if (!c.hasInput(i))
    return c.error("missing input " + Twine(i));
  auto it = c.sequences.find(c.node->input(i));
  if (it == c.sequences.end())
    return c.error("input " + Twine(i) + " ('" + c.node->input(i) +
                   "') must be a sequence, got a tensor");
  return it->second;
}

void setList(ImportContext &c, int i, List list) {
  if (i < c.node->output_size() && !c.node->output(i).empty())
    c.sequences[c.node->output(i)] = std::move(list);
}

/// Refuses `v` for `list` when its element type is not the elements' (an
/// ONNX sequence holds one element type).
LogicalResult checkElementType(ImportContext &c, const List &list, Value v,
                               const Twine &what) {
  if (list.empty() ||
      tensorOf(list.front()).getElementType() == tensorOf(v).getElementType())
    return success();
  return c.error(what + " has type " + str(v.getType()) +
                 ", the sequence holds elements of type " +
                 str(tensorOf(list.front()).getElementType()));
}

/// A position: known at import, or a rank-0 i64 value computed at run time.
struct Position {
  std::optional<int64_t> known;
  Value atRunTime;
};

/// Position input `i` (one int32 or int64).
FailureOr<Position> positionInput(ImportContext &c, int i) {
  if (auto k = c.knownInput(i)) {
    if (k->getNumElements() != 1 || !isa<IntegerType>(k->getElementType()))
      return c.error("the position must be one integer, got " +
                     str(k->getType()));
    return Position{(*k->value_begin<APInt>()).getSExtValue(), Value()};
  }
  Value p = c.input(i);
  if (!p)
    return failure();
  RankedTensorType t = tensorOf(p);
  if (!isa<IntegerType>(t.getElementType()) || !t.hasStaticShape() ||
      t.getNumElements() != 1)
    return c.error("the position must be one int32 or int64, got " + str(t));
  if (t.getRank() != 0)
    p = c.b.reshape(p, {});
  if (!t.getElementType().isInteger(64))
    p = c.b.cast(p, DType::i64);
  return Position{std::nullopt, p};
}

/// Known position `p` counted from the end when negative (`n` entries),
/// checked against [0, last].
FailureOr<int64_t> knownPosition(ImportContext &c, int64_t p, int64_t n,
                                 int64_t last) {
  int64_t at = p < 0 ? p + n : p;
  if (at < 0 || at > last)
    return c.error("position " + Twine(p) + " is out of range for a " +
                   "sequence of " + Twine(n) + " (accepted: " + Twine(-n) +
                   " to " + Twine(last) + ")");
  return at;
}

Value i64(ImportContext &c, int64_t v) {
  return c.b.scalar(static_cast<double>(v), DType::i64);
}

/// Run-time position `p` counted from the end when negative (`n`
/// entries), clamped into [0, last].
Value runTimePosition(ImportContext &c, Value p, int64_t n, int64_t last) {
  GraphBuilder &b = c.b;
  Value wrapped = b.where(b.compare(CompareDirection::lt, p, i64(c, 0)),
                          b.add(p, i64(c, n)), p);
  return b.min(b.max(wrapped, i64(c, 0)), i64(c, last));
}

/// `elems` stacked along a new axis 0, for picking one by a run-time
/// position: an error when their shapes may differ.
FailureOr<Value> stack(ImportContext &c, ArrayRef<Value> elems) {
  RankedTensorType first = tensorOf(elems.front());
  for (auto [k, e] : llvm::enumerate(elems)) {
    RankedTensorType t = tensorOf(e);
    bool same = t == first;
    for (int64_t d = 0; same && d < t.getRank(); ++d)
      same = !t.isDynamicDim(d) || sameDynamicDim(c, e, d, elems.front(), d);
    if (!same)
      return c.error("a position known only at run time needs sequence "
                     "elements of one shape (they are stacked and "
                     "gathered); element 0 is " +
                     str(first) + ", element " + Twine(k) + " is " + str(t) +
                     "; a position known at import takes any");
  }
  SmallVector<Value> parts;
  for (Value e : elems)
    parts.push_back(c.b.unsqueeze(e, {0}));
  return parts.size() == 1 ? parts.front() : c.b.concat(parts, 0);
}

/// Marks `out` known at import when `v` is a constant (a shape picked from
/// a sequence of constants still folds).
void keepKnown(ImportContext &c, StringRef out, Value v) {
  if (auto constant = v.getDefiningOp<graph::ConstantOp>())
    c.known[out] = constant.getValue();
}

} // namespace

LogicalResult loom::onnx_import::sequenceEmpty(ImportContext &c) {
  if (c.hasAttr("dtype") && !convertDataType(c.attrInt("dtype", 1)))
    return c.error("dtype " + dataTypeName(c.attrInt("dtype", 1)) +
                   " is not supported");
  setList(c, 0, {});
  return success();
}

LogicalResult loom::onnx_import::sequenceConstruct(ImportContext &c) {
  List list;
  for (int i = 0; i < c.node->input_size(); ++i) {
    Value v = c.input(i);
    if (!v || failed(checkElementType(c, list, v, "input " + Twine(i))))
      return failure();
    list.push_back(v);
  }
  setList(c, 0, std::move(list));
  return success();
}

LogicalResult loom::onnx_import::sequenceInsert(ImportContext &c) {
  auto list = listInput(c, 0);
  if (failed(list))
    return failure();
  Value t = c.input(1);
  if (!t || failed(checkElementType(c, *list, t, "the inserted tensor")))
    return failure();
  int64_t n = list->size();
  if (!c.hasInput(2)) {
    list->push_back(t);
    setList(c, 0, std::move(*list));
    return success();
  }
  auto pos = positionInput(c, 2);
  if (failed(pos))
    return failure();
  if (pos->known) {
    auto at = knownPosition(c, *pos->known, n, n);
    if (failed(at))
      return failure();
    list->insert(list->begin() + *at, t);
    setList(c, 0, std::move(*list));
    return success();
  }
  // Element j of the result is old[j] before the position, the tensor at
  // it and old[j - 1] after it: rows of [old..., tensor].
  List all(*list);
  all.push_back(t);
  auto rows = stack(c, all);
  if (failed(rows))
    return failure();
  GraphBuilder &b = c.b;
  Value p = runTimePosition(c, pos->atRunTime, n, n);
  List out;
  for (int64_t j = 0; j <= n; ++j) {
    Value row =
        b.where(b.compare(CompareDirection::lt, i64(c, j), p), i64(c, j),
                b.where(b.compare(CompareDirection::eq, i64(c, j), p),
                        i64(c, n), i64(c, j - 1)));
    out.push_back(b.gather(*rows, row, 0));
  }
  setList(c, 0, std::move(out));
  return success();
}

LogicalResult loom::onnx_import::sequenceErase(ImportContext &c) {
  auto list = listInput(c, 0);
  if (failed(list))
    return failure();
  int64_t n = list->size();
  if (n == 0)
    return c.error("the sequence is empty: there is nothing to erase");
  if (!c.hasInput(1)) {
    list->pop_back();
    setList(c, 0, std::move(*list));
    return success();
  }
  auto pos = positionInput(c, 1);
  if (failed(pos))
    return failure();
  if (pos->known) {
    auto at = knownPosition(c, *pos->known, n, n - 1);
    if (failed(at))
      return failure();
    list->erase(list->begin() + *at);
    setList(c, 0, std::move(*list));
    return success();
  }
  if (n == 1) {
    setList(c, 0, {});
    return success();
  }
  // Element j of the result is old[j] before the position, old[j + 1]
  // from it on.
  auto rows = stack(c, *list);
  if (failed(rows))
    return failure();
  GraphBuilder &b = c.b;
  Value p = runTimePosition(c, pos->atRunTime, n, n - 1);
  List out;
  for (int64_t j = 0; j + 1 < n; ++j) {
    Value row = b.where(b.compare(CompareDirection::lt, i64(c, j), p),
                        i64(c, j), i64(c, j + 1));
    out.push_back(b.gather(*rows, row, 0));
  }
  setList(c, 0, std::move(out));
  return success();
}

LogicalResult loom::onnx_import::sequenceAt(ImportContext &c) {
  auto list = listInput(c, 0);
  if (failed(list))
    return failure();
  int64_t n = list->size();
  if (n == 0)
    return c.error("the sequence is empty: there is no element to take");
  auto pos = positionInput(c, 1);
  if (failed(pos))
    return failure();
  if (pos->known) {
    auto at = knownPosition(c, *pos->known, n, n - 1);
    if (failed(at))
      return failure();
    Value v = (*list)[*at];
    c.setOutput(0, v);
    keepKnown(c, c.node->output(0), v);
    return success();
  }
  auto rows = stack(c, *list);
  if (failed(rows))
    return failure();
  c.setOutput(
      0, c.b.gather(*rows, runTimePosition(c, pos->atRunTime, n, n - 1), 0));
  return success();
}

LogicalResult loom::onnx_import::sequenceLength(ImportContext &c) {
  auto list = listInput(c, 0);
  if (failed(list))
    return failure();
  auto type = RankedTensorType::get({}, IntegerType::get(&c.ctx, 64));
  c.known[c.node->output(0)] = DenseElementsAttr::get(
      type, APInt(64, static_cast<uint64_t>(list->size())));
  return success();
}

LogicalResult loom::onnx_import::splitToSequence(ImportContext &c) {
  Value x = c.input(0);
  if (!x)
    return failure();
  RankedTensorType type = tensorOf(x);
  int64_t rank = type.getRank();
  int64_t axis = c.attrInt("axis", 0);
  if (axis < -rank || axis >= rank)
    return c.error("axis " + Twine(axis) + " is out of range for rank " +
                   Twine(rank));
  if (axis < 0)
    axis += rank;
  int64_t keepdims = c.attrInt("keepdims", 1);
  if (keepdims != 0 && keepdims != 1)
    return c.error("keepdims = " + Twine(keepdims) + " is not 0 or 1");
  int64_t dim = type.getDimSize(axis);
  GraphBuilder &b = c.b;
  List list;
  if (c.hasInput(1) && !c.knownInput(1)) {
    // Sizes known only at run time: their count must be known (a 1-D
    // split of static length); part i is [start_i, start_i + split[i])
    // with start the exclusive cumsum of split.
    Value split = c.input(1);
    if (!split)
      return failure();
    RankedTensorType st = tensorOf(split);
    if (st.getRank() != 1 || st.isDynamicDim(0))
      return c.error("split is known only at run time and is not a 1-D "
                     "tensor of static length (" +
                     str(st) +
                     "), so the sequence's length is not known at import");
    auto one = [&](int64_t v) {
      auto t = RankedTensorType::get({1}, st.getElementType());
      return b.constant(
          DenseElementsAttr::get(t, IntegerAttr::get(st.getElementType(), v)));
    };
    Value starts = b.cumsum(split, 0, /*exclusive=*/true);
    Value axes = one(axis), steps = one(1);
    for (int64_t i = 0; i < st.getDimSize(0); ++i) {
      Value start = b.slice(starts, {i}, {i + 1});
      Value end = b.add(start, b.slice(split, {i}, {i + 1}));
      list.push_back(b.dynamicSlice(x, start, end, axes, steps));
    }
    setList(c, 0, std::move(list));
    return success();
  }
  SmallVector<int64_t> sizes;
  bool squeeze = false;
  if (c.hasInput(1)) {
    auto split = c.intsInput(1, "split");
    if (failed(split))
      return failure();
    if (llvm::any_of(*split, [](int64_t s) { return s < 0; }))
      return c.error("split holds a negative size");
    if (c.knownInput(1)->getType().getRank() == 0) {
      // One size: parts of that size, the last one smaller.
      int64_t size = split->front();
      if (size <= 0)
        return c.error("split = " + Twine(size) + " must be positive");
      if (ShapedType::isDynamic(dim))
        return c.error("a split into parts of " + Twine(size) +
                       " needs a static axis " + Twine(axis) + " (" +
                       str(type) + ")");
      for (int64_t start = 0; start < dim; start += size)
        sizes.push_back(std::min(size, dim - start));
    } else {
      sizes = *split;
      int64_t total = 0;
      for (int64_t s : sizes)
        total += s;
      if (!ShapedType::isDynamic(dim) && total != dim)
        return c.error("split sizes add up to " + Twine(total) + ", axis " +
                       Twine(axis) + " has " + Twine(dim));
    }
  } else {
    // No split: parts of one, without the axis unless keepdims.
    if (ShapedType::isDynamic(dim))
      return c.error("a split into parts of 1 needs a static axis " +
                     Twine(axis) + " (" + str(type) +
                     "): the sequence's length is its size");
    sizes.assign(dim, 1);
    squeeze = keepdims == 0;
  }
  int64_t start = 0;
  for (int64_t s : sizes) {
    Value part = b.slice(x, {start}, {start + s}, {axis});
    list.push_back(squeeze ? b.squeeze(part, {axis}) : part);
    start += s;
  }
  setList(c, 0, std::move(list));
  return success();
}

LogicalResult loom::onnx_import::concatFromSequence(ImportContext &c) {
  auto list = listInput(c, 0);
  if (failed(list))
    return failure();
  if (list->empty())
    return c.error("the sequence is empty: there is nothing to concatenate");
  int64_t newAxis = c.attrInt("new_axis", 0);
  if (newAxis != 0 && newAxis != 1)
    return c.error("new_axis = " + Twine(newAxis) + " is not 0 or 1");
  int64_t rank = tensorOf(list->front()).getRank();
  for (auto [k, v] : llvm::enumerate(*list))
    if (tensorOf(v).getRank() != rank)
      return c.error("element " + Twine(k) + " is " + str(v.getType()) +
                     ", element 0 " + str(list->front().getType()) +
                     " (another rank)");
  // With new_axis the elements are stacked: one more dim to place.
  int64_t outRank = rank + newAxis;
  int64_t axis = c.attrInt("axis", 0);
  if (axis < -outRank || axis >= outRank)
    return c.error("axis " + Twine(axis) + " is out of range for rank " +
                   Twine(outRank));
  if (axis < 0)
    axis += outRank;
  SmallVector<Value> parts;
  for (Value v : *list)
    parts.push_back(newAxis ? c.b.unsqueeze(v, {axis}) : v);
  c.setOutput(0, parts.size() == 1 ? parts.front() : c.b.concat(parts, axis));
  return success();
}

LogicalResult loom::onnx_import::sequenceMap(ImportContext &c) {
  const onnx::GraphProto *body = nullptr;
  for (const auto &a : c.node->attribute())
    if (a.name() == "body" && a.has_g())
      body = &a.g();
  if (!body)
    return c.error("body must be a graph");
  // Each input: a list (one element per run of the body) or a tensor (the
  // same in every run).
  SmallVector<List> lists(c.node->input_size());
  SmallVector<Value> tensors(c.node->input_size());
  int64_t n = -1;
  for (int i = 0; i < c.node->input_size(); ++i) {
    if (!c.sequences.count(c.node->input(i))) {
      if (i == 0)
        return c.error("input 0 ('" + c.node->input(0) +
                       "') must be a sequence, got a tensor");
      if (!(tensors[i] = c.input(i)))
        return failure();
      continue;
    }
    lists[i] = c.sequences.lookup(c.node->input(i));
    int64_t length = lists[i].size();
    if (n >= 0 && length != n)
      return c.error("input " + Twine(i) + " is a sequence of " +
                     Twine(length) + ", input 0 one of " + Twine(n) +
                     " (the sequences must have one length)");
    n = length;
  }
  SmallVector<List> outs(c.node->output_size());
  for (int64_t k = 0; k < n; ++k) {
    SmallVector<Value> args;
    for (int i = 0; i < c.node->input_size(); ++i)
      args.push_back(tensors[i] ? tensors[i] : lists[i][k]);
    auto results = importInline(c, *body, "body", args);
    if (failed(results))
      return failure();
    if (static_cast<int>(results->size()) != c.node->output_size())
      return c.error("the body returns " + Twine(results->size()) +
                     " values for " + Twine(c.node->output_size()) +
                     " output sequences");
    for (auto [list, v] : llvm::zip(outs, *results)) {
      if (failed(checkElementType(c, list, v, "the body's output")))
        return failure();
      list.push_back(v);
    }
  }
  for (auto [i, list] : llvm::enumerate(outs))
    setList(c, i, std::move(list));
  return success();
}

//===----------------------------------------------------------------------===//
// Values of any kind, optionals
//===----------------------------------------------------------------------===//

std::optional<AnyValue> loom::onnx_import::lookupAny(ImportContext &c,
                                                     StringRef name) {
  AnyValue v;
  if (auto it = c.values.find(name); it != c.values.end()) {
    v.tensor = it->second;
    return v;
  }
  if (auto it = c.known.find(name); it != c.known.end()) {
    v.known = it->second;
    return v;
  }
  if (auto it = c.sequences.find(name); it != c.sequences.end()) {
    v.kind = AnyValue::Kind::Sequence;
    v.list = it->second;
    return v;
  }
  if (auto it = c.optionals.find(name); it != c.optionals.end()) {
    v.kind = AnyValue::Kind::Optional;
    v.optional = it->second;
    return v;
  }
  // A shape vector with dynamic dims: computed at run time (once).
  if (auto it = c.symbolic.find(name);
      it != c.symbolic.end() && canMaterialize(it->second)) {
    auto scope = c.b.scope(name);
    v.tensor = materializeSymbolic(c, it->second);
    c.values[name] = v.tensor;
    return v;
  }
  return std::nullopt;
}

void loom::onnx_import::defineAny(ImportContext &c, StringRef name,
                                  const AnyValue &v) {
  c.values.erase(name);
  c.known.erase(name);
  c.symbolic.erase(name);
  c.sequences.erase(name);
  c.optionals.erase(name);
  switch (v.kind) {
  case AnyValue::Kind::Tensor:
    if (v.tensor)
      c.values[name] = v.tensor;
    else if (v.known)
      c.known[name] = *v.known;
    return;
  case AnyValue::Kind::Sequence:
    c.sequences[name] = v.list;
    return;
  case AnyValue::Kind::Optional:
    c.optionals[name] = v.optional;
    return;
  }
}

void loom::onnx_import::flattenAny(ImportContext &c, const AnyValue &v,
                                   SmallVectorImpl<Value> &out) {
  switch (v.kind) {
  case AnyValue::Kind::Tensor:
    out.push_back(v.tensor ? v.tensor : c.b.constant(*v.known));
    return;
  case AnyValue::Kind::Sequence:
    llvm::append_range(out, v.list);
    return;
  case AnyValue::Kind::Optional:
    if (!v.optional.present)
      return;
    if (v.optional.holdsSequence)
      llvm::append_range(out, v.optional.list);
    else
      out.push_back(v.optional.tensor);
    return;
  }
}

AnyValue loom::onnx_import::unflattenAny(const AnyValue &like,
                                         ArrayRef<Value> flat, size_t &at) {
  AnyValue v;
  v.kind = like.kind;
  v.optional.present = like.optional.present;
  v.optional.holdsSequence = like.optional.holdsSequence;
  switch (like.kind) {
  case AnyValue::Kind::Tensor:
    v.tensor = flat[at++];
    break;
  case AnyValue::Kind::Sequence:
    for (size_t k = 0; k < like.list.size(); ++k)
      v.list.push_back(flat[at++]);
    break;
  case AnyValue::Kind::Optional:
    if (!like.optional.present)
      break;
    if (!like.optional.holdsSequence) {
      v.optional.tensor = flat[at++];
      break;
    }
    for (size_t k = 0; k < like.optional.list.size(); ++k)
      v.optional.list.push_back(flat[at++]);
    break;
  }
  return v;
}

/// `v`'s kind, for messages.
static std::string describe(const AnyValue &v) {
  switch (v.kind) {
  case AnyValue::Kind::Tensor:
    return "a tensor";
  case AnyValue::Kind::Sequence:
    return "a sequence of " + std::to_string(v.list.size());
  case AnyValue::Kind::Optional:
    if (!v.optional.present)
      return v.optional.holdsSequence ? "an empty optional sequence"
                                      : "an empty optional tensor";
    return v.optional.holdsSequence ? "an optional holding a sequence of " +
                                          std::to_string(v.optional.list.size())
                                    : "an optional holding a tensor";
  }
  return "";
}

std::string loom::onnx_import::sameStructure(const AnyValue &a,
                                             const AnyValue &b) {
  std::string da = describe(a), db = describe(b);
  return da == db ? "" : da + " and " + db;
}

std::optional<bool> loom::onnx_import::knownBool(Value v) {
  if (!v)
    return std::nullopt;
  if (auto constant = v.getDefiningOp<graph::ConstantOp>()) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!dense || !dense.getElementType().isInteger(1) ||
        dense.getNumElements() != 1)
      return std::nullopt;
    return *dense.getValues<bool>().begin();
  }
  // Not(x) is x == false (notOp).
  if (auto cmp = v.getDefiningOp<graph::CompareOp>()) {
    auto lhs = knownBool(cmp.getLhs()), rhs = knownBool(cmp.getRhs());
    if (!lhs || !rhs)
      return std::nullopt;
    if (cmp.getDirection() == CompareDirection::eq)
      return *lhs == *rhs;
    if (cmp.getDirection() == CompareDirection::ne)
      return *lhs != *rhs;
  }
  return std::nullopt;
}

namespace {

/// Input `i` of any kind; an error naming it when it has no value.
FailureOr<AnyValue> anyInput(ImportContext &c, int i) {
  if (!c.hasInput(i))
    return c.error("missing input " + Twine(i));
  auto v = lookupAny(c, c.node->input(i));
  if (!v)
    return c.error("input " + Twine(i) + " ('" + c.node->input(i) +
                   "') is not produced by any node, input or initializer");
  return *v;
}

void setKnownBool(ImportContext &c, bool value) {
  auto type = RankedTensorType::get({}, IntegerType::get(&c.ctx, 1));
  c.known[c.node->output(0)] = DenseElementsAttr::get(type, value);
  c.values.erase(c.node->output(0));
}

} // namespace

LogicalResult loom::onnx_import::optionalOp(ImportContext &c) {
  AnyValue out;
  out.kind = AnyValue::Kind::Optional;
  if (c.hasInput(0)) {
    auto in = anyInput(c, 0);
    if (failed(in))
      return failure();
    if (in->kind == AnyValue::Kind::Optional)
      return c.error("input 0 ('" + c.node->input(0) +
                     "') is an optional: an optional of an optional is not "
                     "supported");
    out.optional.present = true;
    if (in->kind == AnyValue::Kind::Sequence) {
      out.optional.holdsSequence = true;
      out.optional.list = in->list;
    } else {
      Value v = c.input(0);
      if (!v)
        return failure();
      out.optional.tensor = v;
    }
    defineAny(c, c.node->output(0), out);
    return success();
  }
  // Empty: the type attribute says of what.
  const onnx::TypeProto *type = nullptr;
  for (const auto &a : c.node->attribute())
    if (a.name() == "type" && a.has_tp())
      type = &a.tp();
  if (!type)
    return c.error("an Optional without input needs its type attribute");
  if (type->has_sequence_type())
    out.optional.holdsSequence = true;
  else if (!type->has_tensor_type())
    return c.error("an empty Optional of a type other than a tensor or a "
                   "sequence is not supported");
  defineAny(c, c.node->output(0), out);
  return success();
}

LogicalResult loom::onnx_import::optionalHasElement(ImportContext &c) {
  // Opset 18 takes no input (false) or a tensor or sequence (true) too.
  if (!c.hasInput(0)) {
    setKnownBool(c, false);
    return success();
  }
  auto in = anyInput(c, 0);
  if (failed(in))
    return failure();
  setKnownBool(c, in->kind != AnyValue::Kind::Optional || in->optional.present);
  return success();
}

LogicalResult loom::onnx_import::optionalGetElement(ImportContext &c) {
  auto in = anyInput(c, 0);
  if (failed(in))
    return failure();
  AnyValue out = *in;
  if (in->kind == AnyValue::Kind::Optional) {
    if (!in->optional.present)
      return c.error("input 0 ('" + c.node->input(0) +
                     "') is an empty optional: there is no element to get");
    out = AnyValue();
    if (in->optional.holdsSequence) {
      out.kind = AnyValue::Kind::Sequence;
      out.list = in->optional.list;
    } else {
      out.tensor = in->optional.tensor;
    }
  }
  defineAny(c, c.node->output(0), out);
  return success();
}

LogicalResult loom::onnx_import::identityAny(ImportContext &c) {
  auto in = anyInput(c, 0);
  if (failed(in))
    return failure();
  defineAny(c, c.node->output(0), *in);
  return success();
}
