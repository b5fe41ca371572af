//===- OnnxControlFlow.cpp - ONNX If, Loop and Scan -----------------------===//
//
// The subgraphs of If (`then_branch`, `else_branch`), Loop and Scan (`body`)
// are imported node by node (importNode, as the main graph) into the
// regions of graph.if and graph.loop. A body reads values of the enclosing
// graphs by name: the importer's value map stays visible while it is
// imported, and what the body used from outside becomes the op's captures
// afterwards (constants are cloned in instead), so the ops are isolated
// from above.
//
// An If whose condition is known at import is the branch it takes, in line.
// Types: an If's results join its branches' types (a dim the branches
// disagree on is dynamic). A Loop's carried value starts with its initial
// value's type; when the body yields another shape the body is imported
// again with the dims that differ made dynamic (shape inference of
// loop-carried values). A dim the body computes as dynamic is taken from
// the body's declared output shape where it has one (the lowering checks
// it when the code runs). A scan output's length is the trip count when it
// is known at import and the loop cannot stop early, else dynamic.
//
// Scan is a graph.loop over the sequence axis whose body first takes each
// scan input's slice at the iteration (reversed for a reverse direction);
// scan outputs stacked along another axis or in reverse are transposed or
// reversed after the loop. Scan-8's batch axis runs one loop per batch
// element. Sequences and optionals are known at import (OnnxSequence.cpp):
// an If whose branches return them is the branch taken when the condition
// is known at import, else their elements are the graph.if's results
// (the branches must give one structure); a Loop that carries them is
// unrolled at import (trip count and conditions known there); a Scan body
// that takes or returns one is refused.
//
// SequenceMap (OnnxSequence.cpp) imports its body in line once per element
// (importInline), as an If whose condition is known at import does.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;

namespace {

/// The largest known trip count of a Loop with scan outputs (the CPU
/// lowering allocates that many rows before the loop).
constexpr int64_t kMaxScanTrips = int64_t(1) << 24;

/// The subgraph attribute `name` of the node, or null.
const onnx::GraphProto *graphAttr(ImportContext &c, StringRef name) {
  for (const auto &a : c.node->attribute())
    if (a.name() == name && a.has_g())
      return &a.g();
  return nullptr;
}

/// ONNX's kind of a non-tensor type, or "" for a tensor (or no type).
StringRef nonTensorKind(const onnx::TypeProto &t) {
  if (t.has_sequence_type())
    return "a sequence";
  if (t.has_optional_type())
    return "an optional";
  if (t.has_map_type())
    return "a map";
  return "";
}

/// Refuses a subgraph that takes or returns a sequence, optional or map.
LogicalResult checkTensorsOnly(ImportContext &c, const onnx::GraphProto &g,
                               StringRef what) {
  for (const auto *list : {&g.input(), &g.output()})
    for (const auto &v : *list) {
      StringRef kind = nonTensorKind(v.type());
      if (!kind.empty())
        return c.error(Twine(what) + "'s " +
                       (list == &g.input() ? "input" : "output") + " '" +
                       v.name() + "' is " + kind +
                       "; sequences and optionals are not tensors in Loom");
    }
  return success();
}

/// The importer's state around a subgraph: its values, names and the
/// insertion point are put back when the subgraph is done, so that nothing
/// defined in a region is seen outside it.
class SubgraphScope {
public:
  explicit SubgraphScope(ImportContext &c)
      : c(c), node(c.node), values(c.values), known(c.known),
        materialized(c.materialized), symbolic(c.symbolic),
        sequences(c.sequences), optionals(c.optionals),
        unknownAsked(c.unknownAsked), ip(c.b.opBuilder().saveInsertionPoint()) {
  }
  ~SubgraphScope() {
    c.node = node;
    c.values = std::move(values);
    c.known = std::move(known);
    c.materialized = std::move(materialized);
    c.symbolic = std::move(symbolic);
    c.sequences = std::move(sequences);
    c.optionals = std::move(optionals);
    c.unknownAsked = std::move(unknownAsked);
    c.b.opBuilder().restoreInsertionPoint(ip);
  }

private:
  ImportContext &c;
  const onnx::NodeProto *node;
  llvm::StringMap<Value> values;
  llvm::StringMap<ElementsAttr> known;
  llvm::DenseMap<Attribute, Value> materialized;
  llvm::StringMap<SymShape> symbolic;
  llvm::StringMap<std::vector<Value>> sequences;
  llvm::StringMap<OptionalValue> optionals;
  SmallVector<int, 4> unknownAsked;
  OpBuilder::InsertPoint ip;
};

/// Builds the values of a subgraph's inputs at the start of its block (the
/// block arguments, or slices of them).
using InputBuilder = function_ref<FailureOr<SmallVector<Value>>(Block &)>;

/// Imports subgraph `g` (`what`, for messages) into a new block of `region`
/// with arguments `argTypes`; `inputs` gives the values of g's inputs, or
/// `anyInputs` when set (a body imported in line, whose inputs may be
/// sequences and optionals). Ends the block with graph.yield of g's
/// outputs and returns them. With `structured`, an output may be a
/// sequence or optional: each output is appended to it, and the returned
/// values are their flattenAny.
FailureOr<SmallVector<Value>>
importBody(ImportContext &c, const onnx::GraphProto &g, StringRef what,
           Region &region, ArrayRef<Type> argTypes, InputBuilder inputs,
           const SmallVector<AnyValue> *anyInputs = nullptr,
           SmallVectorImpl<AnyValue> *structured = nullptr) {
  const onnx::NodeProto *owner = c.node;
  std::string ownerName = owner->name().empty()
                              ? "producing '" + owner->output(0) + "'"
                              : "'" + owner->name() + "'";
  SubgraphScope scope(c);
  Block *block = new Block();
  region.push_back(block);
  Location loc = c.nodeLoc();
  for (Type t : argTypes)
    block->addArgument(t, loc);
  OpBuilder &ob = c.b.opBuilder();
  ob.setInsertionPointToEnd(block);
  auto values = inputs(*block);
  if (failed(values))
    return failure();
  size_t given = anyInputs ? anyInputs->size() : values->size();
  if (static_cast<int>(given) != g.input_size())
    return c.error(Twine(what) + " takes " + Twine(g.input_size()) +
                   " inputs, expected " + Twine(given));
  // A body's names shadow the enclosing graphs'.
  for (int i = 0; i < g.input_size(); ++i) {
    AnyValue v;
    if (anyInputs)
      v = (*anyInputs)[i];
    else
      v.tensor = (*values)[i];
    defineAny(c, g.input(i).name(), v);
  }
  for (const auto &init : g.initializer()) {
    auto value = c.convertTensor(
        init, NameLoc::get(StringAttr::get(&c.ctx, init.name())));
    if (failed(value))
      return failure();
    c.values.erase(init.name());
    c.known[init.name()] = *value;
  }
  for (const auto &node : g.node()) {
    c.node = &node;
    StringRef domain = node.domain();
    const OpEntry *entry = domain.empty() || domain == "ai.onnx"
                               ? lookupOp("", node.op_type(), c.opset)
                               : nullptr;
    if (!entry)
      return c.error("unsupported ONNX op '" + node.op_type() + "' (" +
                     (domain.empty() ? StringRef("ai.onnx") : domain) +
                     ") in the " + what + " of " + owner->op_type() + " " +
                     ownerName);
    if (node.output_size() == 0)
      return c.error("the node lists no outputs (every ONNX op has one)");
    std::string reason = checkNodeSchema(node, c.opset);
    if (!reason.empty())
      return c.error(reason);
    if (failed(importNode(c, node, entry)))
      return failure();
  }
  SmallVector<Value> outputs;
  for (const auto &out : g.output()) {
    auto v = lookupAny(c, out.name());
    if (!v) {
      c.node = owner;
      return c.error(Twine(what) + "'s output '" + out.name() +
                     "' is never produced");
    }
    if (v->kind != AnyValue::Kind::Tensor && !structured) {
      c.node = owner;
      return c.error(
          Twine(what) + "'s output '" + out.name() + "' is " +
          (v->kind == AnyValue::Kind::Sequence ? "a sequence" : "an optional") +
          "; sequences and optionals are not tensors in Loom");
    }
    flattenAny(c, *v, outputs);
    if (structured)
      structured->push_back(*v);
  }
  ob.create<graph::YieldOp>(c.b.locationOf("yield"), outputs);
  return outputs;
}

/// Moves the ops of `region` (a subgraph imported by importBody) to the
/// builder's insertion point, without their graph.yield; returns the
/// values it yielded.
SmallVector<Value> inlineBody(ImportContext &c, Region &region) {
  Block &block = region.front();
  Operation *yield = block.getTerminator();
  SmallVector<Value> results(yield->getOperands());
  yield->erase();
  OpBuilder &ob = c.b.opBuilder();
  ob.getInsertionBlock()->getOperations().splice(ob.getInsertionPoint(),
                                                 block.getOperations());
  return results;
}

/// Whether `region` is `r` or nested in it. (Region::isAncestor would walk
/// past a detached region, which has no parent.)
bool within(Region *region, Region *r) {
  while (region) {
    if (region == r)
      return true;
    Operation *parent = region->getParentOp();
    region = parent ? parent->getParentRegion() : nullptr;
  }
  return false;
}

/// Makes `regions` (detached, of one op to be built) isolated from above:
/// a constant defined outside that they use is cloned into each; any other
/// value becomes a capture, an argument appended to each region's block.
/// Returns the captures, in order.
SmallVector<Value> isolate(ArrayRef<Region *> regions) {
  llvm::SetVector<Value> outside;
  for (Region *r : regions)
    r->walk([&](Operation *op) {
      for (Value v : op->getOperands())
        if (!within(v.getParentRegion(), r))
          outside.insert(v);
    });
  SmallVector<Value> captures;
  for (Value v : outside) {
    auto constant = v.getDefiningOp<graph::ConstantOp>();
    if (!constant)
      captures.push_back(v);
    for (Region *r : regions) {
      Block &block = r->front();
      Value inside;
      if (constant) {
        // Not OpBuilder::atBlockBegin: it takes the context from the
        // region's parent op, which a detached region has not.
        OpBuilder b(constant->getContext());
        b.setInsertionPointToStart(&block);
        inside = b.clone(*constant)->getResult(0);
      } else {
        inside = block.addArgument(v.getType(), v.getLoc());
      }
      v.replaceUsesWithIf(inside, [&](OpOperand &use) {
        return within(use.getOwner()->getParentRegion(), r);
      });
    }
  }
  return captures;
}

/// `v` as a rank-0 tensor (ONNX gives some scalars as one-element 1-D
/// tensors); null with an error when it holds more than one element.
Value asScalar(ImportContext &c, Value v, StringRef what) {
  if (!v)
    return v;
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() == 0)
    return v;
  if (!type.hasStaticShape() || type.getNumElements() != 1) {
    (void)c.error(Twine(what) + " must hold one element, got " +
                  Twine(type.getNumElements()) + " (" + Twine(type.getRank()) +
                  "-D)");
    return {};
  }
  return c.b.reshape(v, {});
}

/// The declared shape of value info `info` (-1 for an unknown dim), or
/// nothing when it declares none.
std::optional<SmallVector<int64_t>>
declaredShape(const onnx::ValueInfoProto &info) {
  if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape())
    return std::nullopt;
  SmallVector<int64_t> shape;
  for (const auto &d : info.type().tensor_type().shape().dim())
    shape.push_back(d.has_dim_value() ? d.dim_value() : ShapedType::kDynamic);
  return shape;
}

/// `computed` with its dynamic dims taken from `declared` where that is
/// static (same rank only).
RankedTensorType refine(RankedTensorType computed,
                        std::optional<SmallVector<int64_t>> declared) {
  if (!declared || static_cast<int64_t>(declared->size()) != computed.getRank())
    return computed;
  SmallVector<int64_t> shape(computed.getShape());
  for (auto [s, d] : llvm::zip(shape, *declared))
    if (ShapedType::isDynamic(s))
      s = d;
  return computed.clone(shape);
}

/// The type both `a` and `b` fit: dims they disagree on dynamic. Null when
/// the element types or ranks differ.
RankedTensorType join(RankedTensorType a, RankedTensorType b) {
  if (a.getElementType() != b.getElementType() || a.getRank() != b.getRank())
    return {};
  SmallVector<int64_t> shape;
  for (auto [x, y] : llvm::zip(a.getShape(), b.getShape()))
    shape.push_back(x == y ? x : ShapedType::kDynamic);
  return a.clone(shape);
}

/// Whether `v` is the block argument `arg` or a constant true.
bool isTrueOr(Value v, Value arg) {
  if (v == arg)
    return true;
  auto constant = v.getDefiningOp<graph::ConstantOp>();
  if (!constant)
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  return dense && dense.isSplat() && dense.getSplatValue<bool>();
}

/// The results of a graph.loop: the carried values, then the scan stacks.
struct LoopResults {
  SmallVector<Value> carried, scans;
};

/// Builds a graph.loop of body `g` (`what`, for messages) with `inputs`
/// giving the values of g's inputs from the block (iteration, condition,
/// carried...). `staticTrips` is the number of iterations when known at
/// import and the loop cannot stop early through `cond`. `condOutput`: g
/// returns the next condition first (Loop); else (Scan) the condition
/// stays as it is.
FailureOr<LoopResults> buildLoop(
    ImportContext &c, const onnx::GraphProto &g, StringRef what,
    bool condOutput, Value tripCount, Value cond, ArrayRef<Value> inits,
    std::optional<int64_t> staticTrips,
    function_ref<FailureOr<SmallVector<Value>>(Block &, ArrayRef<Value> args)>
        inputs) {
  MLIRContext *ctx = &c.ctx;
  Type i64 = RankedTensorType::get({}, IntegerType::get(ctx, 64));
  Type i1 = RankedTensorType::get({}, IntegerType::get(ctx, 1));
  size_t numInits = inits.size();
  int first = condOutput ? 1 : 0;
  if (g.output_size() < static_cast<int>(first + numInits))
    return c.error(Twine(what) + " returns " + Twine(g.output_size()) +
                   " values, expected " +
                   (condOutput ? "the condition and " : "") + Twine(numInits) +
                   " loop-carried values first");
  SmallVector<RankedTensorType> carried;
  for (Value v : inits)
    carried.push_back(tensorOf(v));
  // Shape inference of the carried values: import, join what the body
  // yields with what it was given, and import again if that changed. Each
  // round makes a static dim dynamic, so the rounds end.
  for (;;) {
    auto region = std::make_unique<Region>();
    SmallVector<Type> argTypes = {i64, i1};
    llvm::append_range(argTypes, carried);
    auto outputs =
        importBody(c, g, what, *region, argTypes,
                   [&](Block &block) -> FailureOr<SmallVector<Value>> {
                     return inputs(block, SmallVector<Value>(block.args_begin(),
                                                             block.args_end()));
                   });
    if (failed(outputs))
      return failure();
    Block &block = region->front();
    Operation *yield = block.getTerminator();
    if (!condOutput) {
      yield->insertOperands(0, block.getArgument(1));
      outputs->insert(outputs->begin(), block.getArgument(1));
    }
    SmallVector<RankedTensorType> joined;
    for (size_t k = 0; k < numInits; ++k) {
      RankedTensorType yielded = tensorOf((*outputs)[1 + k]);
      yielded = refine(yielded, declaredShape(g.output(first + k)));
      RankedTensorType both = join(carried[k], yielded);
      if (!both)
        return c.error(Twine(what) + " yields " + str(yielded) +
                       " for loop-carried value " + Twine(k) + " of type " +
                       str(carried[k]) + " (another element type or rank)");
      joined.push_back(both);
    }
    if (joined != carried) {
      carried = joined;
      continue;
    }
    RankedTensorType condType = tensorOf((*outputs)[0]);
    if (condType.getElementType() != IntegerType::get(ctx, 1) ||
        !condType.hasStaticShape() || condType.getNumElements() != 1)
      return c.error(Twine(what) + "'s first output must be the condition, "
                                   "one boolean");
    if (condType.getRank() != 0) {
      OpBuilder &ob = c.b.opBuilder();
      auto ip = ob.saveInsertionPoint();
      ob.setInsertionPoint(yield);
      yield->setOperand(0, c.b.reshape((*outputs)[0], {}));
      ob.restoreInsertionPoint(ip);
    }
    bool neverStops = isTrueOr(yield->getOperand(0), block.getArgument(1));
    SmallVector<Type> resultTypes(carried.begin(), carried.end());
    for (size_t s = 1 + numInits; s < outputs->size(); ++s) {
      RankedTensorType value = refine(tensorOf((*outputs)[s]),
                                      declaredShape(g.output(s - 1 + first)));
      SmallVector<int64_t> shape = {
          staticTrips && neverStops ? *staticTrips : ShapedType::kDynamic};
      llvm::append_range(shape, value.getShape());
      resultTypes.push_back(value.clone(shape));
    }
    SmallVector<Value> captures = isolate({region.get()});
    auto loop = c.b.opBuilder().create<graph::LoopOp>(
        c.b.locationOf("loop"), resultTypes, tripCount, cond, inits, captures);
    loop.getBody().takeBody(*region);
    LoopResults results;
    for (size_t k = 0; k < numInits; ++k)
      results.carried.push_back(loop.getResult(k));
    for (unsigned s = numInits; s < loop.getNumResults(); ++s)
      results.scans.push_back(loop.getResult(s));
    return results;
  }
}

} // namespace

FailureOr<SmallVector<AnyValue>>
loom::onnx_import::importInlineAny(ImportContext &c, const onnx::GraphProto &g,
                                   StringRef what, ArrayRef<AnyValue> inputs) {
  Region region;
  SmallVector<AnyValue> given(inputs), structured;
  auto outputs = importBody(
      c, g, what, region, {},
      [](Block &) -> FailureOr<SmallVector<Value>> {
        return SmallVector<Value>();
      },
      &given, &structured);
  if (failed(outputs))
    return failure();
  SmallVector<Value> flat = inlineBody(c, region);
  // A tensor known at import stays known (a Loop unrolled at import
  // follows its condition and counters).
  SmallVector<AnyValue> results;
  size_t at = 0;
  for (const AnyValue &s : structured) {
    AnyValue v = unflattenAny(s, flat, at);
    if (s.kind == AnyValue::Kind::Tensor && !s.tensor && s.known) {
      v.tensor = Value();
      v.known = s.known;
    }
    results.push_back(v);
  }
  return results;
}

FailureOr<SmallVector<Value>>
loom::onnx_import::importInline(ImportContext &c, const onnx::GraphProto &g,
                                StringRef what, ArrayRef<Value> inputs) {
  if (failed(checkTensorsOnly(c, g, what)))
    return failure();
  Region region;
  auto outputs = importBody(c, g, what, region, {},
                            [&](Block &) -> FailureOr<SmallVector<Value>> {
                              return SmallVector<Value>(inputs);
                            });
  if (failed(outputs))
    return failure();
  return inlineBody(c, region);
}

//===----------------------------------------------------------------------===//
// If
//===----------------------------------------------------------------------===//

LogicalResult loom::onnx_import::ifOp(ImportContext &c) {
  const onnx::GraphProto *thenG = graphAttr(c, "then_branch");
  const onnx::GraphProto *elseG = graphAttr(c, "else_branch");
  if (!thenG || !elseG)
    return c.error("then_branch and else_branch must be graphs");
  Value cond = asScalar(c, c.input(0), "the condition");
  if (!cond)
    return failure();
  auto noInputs = [](Block &) -> FailureOr<SmallVector<Value>> {
    return SmallVector<Value>();
  };
  // The branches may return sequences and optionals (`thenS`, `elseS`):
  // the values are their elements, flattened.
  Region thenRegion, elseRegion;
  SmallVector<AnyValue> thenS, elseS;
  auto thenOut = importBody(c, *thenG, "then_branch", thenRegion, {}, noInputs,
                            nullptr, &thenS);
  if (failed(thenOut))
    return failure();
  auto elseOut = importBody(c, *elseG, "else_branch", elseRegion, {}, noInputs,
                            nullptr, &elseS);
  if (failed(elseOut))
    return failure();
  if (thenS.size() != elseS.size())
    return c.error("then_branch returns " + Twine(thenS.size()) +
                   " values, else_branch " + Twine(elseS.size()));
  if (static_cast<int>(thenS.size()) < c.node->output_size())
    return c.error("the node has " + Twine(c.node->output_size()) +
                   " outputs, the branches return " + Twine(thenS.size()));
  auto define = [&](ArrayRef<AnyValue> structure, ArrayRef<Value> flat) {
    size_t at = 0;
    for (auto [i, s] : llvm::enumerate(structure)) {
      AnyValue v = unflattenAny(s, flat, at);
      if (static_cast<int>(i) < c.node->output_size() &&
          !c.node->output(i).empty())
        defineAny(c, c.node->output(i), v);
    }
  };
  // A condition known at import (or computed from constants, as a Not):
  // the branch taken, in line.
  std::optional<bool> known;
  if (auto k = c.knownInput(0))
    known = *k->getValues<bool>().begin();
  else
    known = knownBool(cond);
  if (known) {
    bool then = *known;
    define(then ? thenS : elseS, inlineBody(c, then ? thenRegion : elseRegion));
    return success();
  }
  // Otherwise sequences and optionals must have one structure in both
  // branches: the graph.if then selects each element.
  for (auto [i, t, e] : llvm::enumerate(thenS, elseS)) {
    std::string differ = sameStructure(t, e);
    if (!differ.empty())
      return c.error("output " + Twine(i) + ": the branches return " + differ +
                     ", which a condition known only at run time cannot "
                     "choose between (sequences and optionals are known at "
                     "import in Loom); the condition must be known at import");
  }
  SmallVector<Type> types;
  for (auto [i, t, e] : llvm::enumerate(*thenOut, *elseOut)) {
    RankedTensorType both = join(tensorOf(t), tensorOf(e));
    if (!both)
      return c.error("output " + Twine(i) + ": then_branch returns " +
                     str(t.getType()) + ", else_branch " + str(e.getType()) +
                     " (another element type or rank)");
    types.push_back(both);
  }
  SmallVector<Value> captures = isolate({&thenRegion, &elseRegion});
  auto op = c.b.opBuilder().create<graph::IfOp>(c.b.locationOf("if"), types,
                                                cond, captures);
  op.getThenRegion().takeBody(thenRegion);
  op.getElseRegion().takeBody(elseRegion);
  define(thenS, SmallVector<Value>(op.getResults()));
  return success();
}

//===----------------------------------------------------------------------===//
// Loop
//===----------------------------------------------------------------------===//

namespace {

/// The most iterations a Loop unrolled at import may run.
constexpr int64_t kMaxUnrolledTrips = 4096;

/// A Loop that carries sequences or optionals, unrolled at import: its
/// trip count and conditions must be known at import, and the body is
/// imported in line once per iteration (the carried lists may grow).
LogicalResult unrollLoop(ImportContext &c, const onnx::GraphProto &body) {
  std::optional<int64_t> trips;
  std::optional<bool> cond = true;
  bool unknown = false;
  // What the error below is about: M and the condition only.
  c.unknownAsked.clear();
  if (c.hasInput(0)) {
    auto k = c.knownInput(0);
    if (k && (k->getNumElements() != 1 || !k->getElementType().isInteger(64)))
      return c.error("the trip count M must be one int64");
    if (k)
      trips = (*k->getValues<APInt>().begin()).getSExtValue();
    unknown |= !k;
  }
  if (c.hasInput(1)) {
    auto k = c.knownInput(1);
    if (k && (k->getNumElements() != 1 || !k->getElementType().isInteger(1)))
      return c.error("the condition must be one bool");
    cond =
        k ? std::optional<bool>(*k->getValues<bool>().begin()) : std::nullopt;
    unknown |= !k;
  }
  if (unknown)
    return c.error("a Loop that carries a sequence or an optional is "
                   "unrolled at import: its trip count M and condition must "
                   "be known at import");
  SmallVector<AnyValue> carried;
  for (int i = 2; i < c.node->input_size(); ++i) {
    auto v = c.hasInput(i) ? lookupAny(c, c.node->input(i)) : std::nullopt;
    if (!v)
      return c.error("loop-carried input " + Twine(i) + " is missing");
    carried.push_back(*v);
  }
  if (body.input_size() != static_cast<int>(2 + carried.size()))
    return c.error("the body takes " + Twine(body.input_size()) +
                   " inputs, expected the iteration, the condition and " +
                   Twine(carried.size()) + " loop-carried values");
  size_t numScans = 0;
  if (body.output_size() > static_cast<int>(1 + carried.size()))
    numScans = body.output_size() - 1 - carried.size();
  SmallVector<SmallVector<Value>> scans(numScans);
  auto scalarOf = [&](Type elem, Attribute v) {
    AnyValue a;
    a.known = ElementsAttr(
        DenseElementsAttr::get(RankedTensorType::get({}, elem), v));
    return a;
  };
  Type i64 = IntegerType::get(&c.ctx, 64), i1 = IntegerType::get(&c.ctx, 1);
  for (int64_t i = 0; (!trips || i < *trips) && *cond; ++i) {
    if (i >= kMaxUnrolledTrips)
      return c.error("the Loop carries a sequence or an optional and runs "
                     "more than " +
                     Twine(kMaxUnrolledTrips) +
                     " iterations, the most unrolled at import");
    // Nested unrolled Loops multiply: their nodes count against the
    // model's node limit.
    c.unrolledNodes += body.node_size();
    if (c.options.maxNodes > 0 && c.unrolledNodes > c.options.maxNodes)
      return c.error("unrolling the Loop imports more than " +
                     Twine(c.options.maxNodes) +
                     " nodes, the limit on a model's nodes (loomc "
                     "--max-nodes)");
    SmallVector<AnyValue> inputs = {scalarOf(i64, IntegerAttr::get(i64, i)),
                                    scalarOf(i1, BoolAttr::get(&c.ctx, *cond))};
    llvm::append_range(inputs, carried);
    auto outs = importInlineAny(c, body, "body", inputs);
    if (failed(outs))
      return failure();
    if (outs->size() < 1 + carried.size())
      return c.error("the body returns " + Twine(outs->size()) +
                     " values, expected the condition and " +
                     Twine(carried.size()) + " loop-carried values first");
    const AnyValue &next = (*outs)[0];
    if (next.kind != AnyValue::Kind::Tensor)
      return c.error("the body's first output must be the condition");
    if (next.known) {
      auto dense = dyn_cast<DenseElementsAttr>(*next.known);
      if (!dense || !dense.getElementType().isInteger(1) ||
          dense.getNumElements() != 1)
        return c.error("the body's first output must be the condition, one "
                       "bool");
      cond = *dense.getValues<bool>().begin();
    } else {
      cond = knownBool(next.tensor);
    }
    if (!cond)
      return c.error("the body's condition must be known at import: the "
                     "Loop carries a sequence or an optional and is unrolled "
                     "at import");
    for (size_t k = 0; k < carried.size(); ++k)
      carried[k] = (*outs)[1 + k];
    for (size_t s = 0; s < numScans; ++s) {
      const AnyValue &v = (*outs)[1 + carried.size() + s];
      if (v.kind != AnyValue::Kind::Tensor)
        return c.error("scan output " + Twine(s) +
                       " is a sequence or an optional; scan outputs are "
                       "tensors");
      SmallVector<Value> flat;
      flattenAny(c, v, flat);
      scans[s].push_back(c.b.unsqueeze(flat.front(), {0}));
    }
  }
  for (auto [k, v] : llvm::enumerate(carried))
    if (static_cast<int>(k) < c.node->output_size() &&
        !c.node->output(k).empty())
      defineAny(c, c.node->output(k), v);
  for (auto [s, rows] : llvm::enumerate(scans)) {
    if (rows.empty())
      return c.error("the Loop runs no iteration, so the type of scan "
                     "output " +
                     Twine(s) + " is not known");
    c.setOutput(carried.size() + s,
                rows.size() == 1 ? rows.front() : c.b.concat(rows, 0));
  }
  return success();
}

} // namespace

LogicalResult loom::onnx_import::loopOp(ImportContext &c) {
  const onnx::GraphProto *body = graphAttr(c, "body");
  if (!body)
    return c.error("body must be a graph");
  // Sequences and optionals, carried or in the body's signature: unrolled.
  bool structured = false;
  for (int i = 2; i < c.node->input_size(); ++i)
    structured |= c.sequences.count(c.node->input(i)) ||
                  c.optionals.count(c.node->input(i));
  for (const auto *list : {&body->input(), &body->output()})
    for (const auto &v : *list)
      structured |=
          v.type().has_sequence_type() || v.type().has_optional_type();
  if (structured)
    return unrollLoop(c, *body);
  if (failed(checkTensorsOnly(c, *body, "body")))
    return failure();
  Value tripCount, cond;
  std::optional<int64_t> staticTrips;
  if (c.hasInput(0)) {
    tripCount = asScalar(c, c.input(0), "the trip count M");
    if (!tripCount)
      return failure();
    if (!tensorOf(tripCount).getElementType().isInteger(64))
      return c.error("the trip count M must be int64");
    if (auto known = c.knownInput(0))
      staticTrips = std::max<int64_t>(
          0, (*known->getValues<APInt>().begin()).getSExtValue());
  }
  bool mayStop = false;
  if (c.hasInput(1)) {
    cond = asScalar(c, c.input(1), "the condition");
    if (!cond)
      return failure();
    auto known = c.knownInput(1);
    mayStop = !known || !*known->getValues<bool>().begin();
  }
  SmallVector<Value> inits;
  for (int i = 2; i < c.node->input_size(); ++i) {
    Value v = c.input(i);
    if (!v)
      return failure();
    inits.push_back(v);
  }
  if (body->input_size() != static_cast<int>(2 + inits.size()))
    return c.error("the body takes " + Twine(body->input_size()) +
                   " inputs, expected the iteration, the condition and " +
                   Twine(inits.size()) + " loop-carried values");
  // The CPU lowering sizes scan outputs by M before the loop: a while-loop
  // (no M, or INT64_MAX) with scan outputs is refused.
  bool scans = body->output_size() > static_cast<int>(1 + inits.size());
  if (scans && !tripCount)
    return c.error("a Loop with scan outputs needs the trip count M (it "
                   "sizes the outputs)");
  if (scans && staticTrips && *staticTrips > kMaxScanTrips)
    return c.error("a Loop with scan outputs and a trip count M of " +
                   Twine(*staticTrips) + " (over " + Twine(kMaxScanTrips) +
                   ") is not supported: M sizes the outputs");
  auto results = buildLoop(
      c, *body, "body", /*condOutput=*/true, tripCount, cond, inits,
      mayStop ? std::nullopt : staticTrips,
      [](Block &, ArrayRef<Value> args) -> FailureOr<SmallVector<Value>> {
        return SmallVector<Value>(args);
      });
  if (failed(results))
    return failure();
  int i = 0;
  for (Value v : results->carried)
    c.setOutput(i++, v);
  for (Value v : results->scans)
    c.setOutput(i++, v);
  return success();
}

//===----------------------------------------------------------------------===//
// Scan
//===----------------------------------------------------------------------===//

namespace {

/// One Scan without a batch axis: `states` carried, `scans` sliced along
/// `inputAxes` (reversed where `inputReverse`); returns the final states
/// and the scan outputs stacked along `outputAxes` (reversed where
/// `outputReverse`).
FailureOr<SmallVector<Value>>
scanLoop(ImportContext &c, const onnx::GraphProto &body, ArrayRef<Value> states,
         ArrayRef<Value> scans, ArrayRef<int64_t> inputAxes,
         ArrayRef<bool> inputReverse, ArrayRef<int64_t> outputAxes,
         ArrayRef<bool> outputReverse) {
  GraphBuilder &b = c.b;
  int64_t length = -1;
  for (auto [x, axis] : llvm::zip(scans, inputAxes)) {
    int64_t n = tensorOf(x).getDimSize(axis);
    if (ShapedType::isDynamic(n))
      return c.error("scan input of type " + str(x.getType()) +
                     " has a dynamic sequence axis; Scan takes a static "
                     "sequence length");
    if (length >= 0 && n != length)
      return c.error("scan inputs have sequence lengths " + Twine(length) +
                     " and " + Twine(n));
    length = n;
  }
  if (length < 0)
    return c.error("Scan needs at least one scan input");
  Value tripCount = b.scalar(length, DType::i64);
  auto results = buildLoop(
      c, body, "body", /*condOutput=*/false, tripCount, Value(), states, length,
      [&](Block &block, ArrayRef<Value> args) -> FailureOr<SmallVector<Value>> {
        // The body's inputs: the states, then each scan input's slice.
        SmallVector<Value> inputs(args.begin() + 2, args.end());
        Value reversed;
        for (auto [x, axis, reverse] :
             llvm::zip(scans, inputAxes, inputReverse)) {
          if (reverse && !reversed)
            reversed = b.sub(b.scalar(length - 1, DType::i64), args[0]);
          inputs.push_back(b.gather(x, reverse ? reversed : args[0], axis));
        }
        if (!b.ok())
          return c.error(b.error());
        return inputs;
      });
  if (failed(results))
    return failure();
  if (results->scans.size() != outputAxes.size())
    return c.error("the body returns " + Twine(results->scans.size()) +
                   " scan outputs, the node's attributes describe " +
                   Twine(outputAxes.size()));
  SmallVector<Value> out(results->carried);
  for (auto [y, outputAxis, reverse] :
       llvm::zip(results->scans, outputAxes, outputReverse)) {
    int64_t rank = tensorOf(y).getRank();
    int64_t axis = outputAxis < 0 ? outputAxis + rank : outputAxis;
    if (axis < 0 || axis >= rank)
      return c.error("scan_output_axes entry " + Twine(outputAxis) +
                     " is out of range for a stacked output of rank " +
                     Twine(rank));
    if (reverse)
      y = b.slice(y, {-1}, {std::numeric_limits<int64_t>::min()}, {0}, {-1});
    if (axis != 0) {
      // The stacking dim moves to `axis`.
      SmallVector<int64_t> perm;
      for (int64_t d = 1; d < rank; ++d) {
        if (d - 1 == axis)
          perm.push_back(0);
        perm.push_back(d);
      }
      if (axis == rank - 1)
        perm.push_back(0);
      y = b.transpose(y, perm);
    }
    out.push_back(y);
  }
  if (!b.ok())
    return c.error(b.error());
  return out;
}

/// Axes (normalized against the ranks `ranks`) and directions of Scan's
/// inputs or outputs: attributes `axesName` and `directionsName`, default 0.
/// A rank of -1 (unknown yet) leaves the axis as given.
LogicalResult axesAndDirections(ImportContext &c, StringRef axesName,
                                StringRef directionsName,
                                ArrayRef<int64_t> ranks,
                                SmallVectorImpl<int64_t> &axes,
                                SmallVectorImpl<bool> &reverse) {
  SmallVector<int64_t> a = c.attrInts(axesName);
  SmallVector<int64_t> d = c.attrInts(directionsName);
  if ((!a.empty() && a.size() != ranks.size()) ||
      (!d.empty() && d.size() != ranks.size()))
    return c.error(Twine(axesName) + " and " + directionsName +
                   " must have one entry per scan value (" +
                   Twine(ranks.size()) + ")");
  for (size_t i = 0; i < ranks.size(); ++i) {
    int64_t axis = a.empty() ? 0 : a[i];
    if (ranks[i] >= 0 && (axis < -ranks[i] || axis >= ranks[i]))
      return c.error(Twine(axesName) + "[" + Twine(i) + "] = " + Twine(axis) +
                     " is out of range for rank " + Twine(ranks[i]));
    axes.push_back(axis < 0 && ranks[i] >= 0 ? axis + ranks[i] : axis);
    int64_t dir = d.empty() ? 0 : d[i];
    if (dir != 0 && dir != 1)
      return c.error(Twine(directionsName) + "[" + Twine(i) + "] = " +
                     Twine(dir) + " is not 0 (forward) or 1 (reverse)");
    reverse.push_back(dir == 1);
  }
  return success();
}

} // namespace

LogicalResult loom::onnx_import::scanOp(ImportContext &c) {
  const onnx::GraphProto *body = graphAttr(c, "body");
  if (!body)
    return c.error("body must be a graph");
  if (failed(checkTensorsOnly(c, *body, "body")))
    return failure();
  GraphBuilder &b = c.b;
  bool batched = c.opset < 9;
  // Scan-8 takes sequence_lens first (all sequences full when empty).
  int first = batched ? 1 : 0;
  if (batched && c.hasInput(0))
    return c.error("sequence_lens is not supported (sequences of different "
                   "lengths); leave it empty");
  int64_t numScans = c.attrInt("num_scan_inputs", 0);
  int64_t numInputs = c.node->input_size() - first;
  if (numScans < 1 || numScans > numInputs)
    return c.error("num_scan_inputs = " + Twine(numScans) + " for " +
                   Twine(numInputs) + " inputs");
  SmallVector<Value> states, scans;
  for (int i = first; i < c.node->input_size(); ++i) {
    Value v = c.input(i);
    if (!v)
      return failure();
    (i - first < numInputs - numScans ? states : scans).push_back(v);
  }
  int64_t numOutputs = body->output_size() - states.size();
  if (numOutputs < 0 ||
      body->input_size() != static_cast<int>(states.size() + scans.size()))
    return c.error("the body takes " + Twine(body->input_size()) +
                   " inputs and returns " + Twine(body->output_size()) +
                   " values for " + Twine(states.size()) + " states and " +
                   Twine(scans.size()) + " scan inputs");

  // Per batch element (Scan-8), the ranks without the batch axis.
  int64_t drop = batched ? 1 : 0;
  SmallVector<int64_t> inRanks, outRanks;
  for (Value x : scans)
    inRanks.push_back(tensorOf(x).getRank() - drop);
  // An output's rank is known here only where the body declares it (-1:
  // checked against the stacked result).
  for (int64_t s = 0; s < numOutputs; ++s) {
    auto shape = declaredShape(body->output(states.size() + s));
    outRanks.push_back(shape ? static_cast<int64_t>(shape->size()) + 1 : -1);
  }
  SmallVector<int64_t> inAxes, outAxes;
  SmallVector<bool> inReverse, outReverse;
  if (batched) {
    if (failed(
            axesAndDirections(c, "", "directions", inRanks, inAxes, inReverse)))
      return failure();
    outAxes.assign(numOutputs, 0);
    outReverse.assign(numOutputs, false);
  } else if (failed(axesAndDirections(c, "scan_input_axes",
                                      "scan_input_directions", inRanks, inAxes,
                                      inReverse)) ||
             failed(axesAndDirections(c, "scan_output_axes",
                                      "scan_output_directions", outRanks,
                                      outAxes, outReverse))) {
    return failure();
  }
  for (int64_t r : inRanks)
    if (r < 1)
      return c.error("a scan input must have a sequence axis");

  if (!batched) {
    auto out = scanLoop(c, *body, states, scans, inAxes, inReverse, outAxes,
                        outReverse);
    if (failed(out))
      return failure();
    for (auto [i, v] : llvm::enumerate(*out))
      c.setOutput(i, v);
    return success();
  }
  // Scan-8: one loop per batch element, the results stacked again.
  int64_t batch = -1;
  for (Value v : llvm::concat<Value>(states, scans)) {
    int64_t n = tensorOf(v).getRank() ? tensorOf(v).getDimSize(0) : -1;
    if (n < 0 || (batch >= 0 && n != batch))
      return c.error("Scan-8 takes a static batch axis of one size in every "
                     "input");
    batch = n;
  }
  SmallVector<SmallVector<Value>> perOutput;
  for (int64_t n = 0; n < batch; ++n) {
    Value index = b.scalar(n, DType::i64);
    SmallVector<Value> s, x;
    for (Value v : states)
      s.push_back(b.gather(v, index, 0));
    for (Value v : scans)
      x.push_back(b.gather(v, index, 0));
    if (!b.ok())
      return c.error(b.error());
    auto out = scanLoop(c, *body, s, x, inAxes, inReverse, outAxes, outReverse);
    if (failed(out))
      return failure();
    perOutput.resize(out->size());
    for (auto [i, v] : llvm::enumerate(*out))
      perOutput[i].push_back(b.unsqueeze(v, {0}));
  }
  for (auto [i, parts] : llvm::enumerate(perOutput))
    c.setOutput(i, parts.size() == 1 ? parts[0] : b.concat(parts, 0));
  if (!b.ok())
    return c.error(b.error());
  return success();
}
