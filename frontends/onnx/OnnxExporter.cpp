//===- OnnxExporter.cpp - graph IR to ONNX --------------------------------===//
//
// One `emit` case per graph op. Attributes that ONNX takes as inputs at
// opset 17 (shapes, axes of ReduceSum/Squeeze/Unsqueeze, slice bounds, pads,
// K) become int64 initializers. Ops without an ONNX op of their own are
// written as small subgraphs (rsqrt, gelu, mse_loss, fill_like).
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxExporter.h"

#include "dialects/graph/GraphOps.h"
#include "dialects/graph/TensorBytes.h"
#include "loom/common/FileIO.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/ADT/bit.h"

#include <cmath>
#include <deque>
#include <fstream>
#include <set>

#include <onnx/onnx_pb.h>

using namespace mlir;
using namespace loom::graph;
using loom::onnx_export::ExportOptions;

namespace {

/// The ONNX element type of a graph element type; 0 when none.
int onnxType(Type t) {
  if (t.isF32())
    return onnx::TensorProto::FLOAT;
  if (t.isF16())
    return onnx::TensorProto::FLOAT16;
  if (t.isBF16())
    return onnx::TensorProto::BFLOAT16;
  if (t.isF64())
    return onnx::TensorProto::DOUBLE;
  if (t.isSignlessInteger(1))
    return onnx::TensorProto::BOOL;
  if (t.isSignlessInteger(8))
    return onnx::TensorProto::INT8;
  if (t.isSignlessInteger(16))
    return onnx::TensorProto::INT16;
  if (t.isUnsignedInteger(8))
    return onnx::TensorProto::UINT8;
  if (t.isUnsignedInteger(16))
    return onnx::TensorProto::UINT16;
  if (t.isUnsignedInteger(32))
    return onnx::TensorProto::UINT32;
  if (t.isUnsignedInteger(64))
    return onnx::TensorProto::UINT64;
  if (t.isSignlessInteger(32))
    return onnx::TensorProto::INT32;
  if (t.isSignlessInteger(64))
    return onnx::TensorProto::INT64;
  return 0;
}

/// Type, shape and raw little-endian data of `value`.
void fillTensor(onnx::TensorProto &t, ElementsAttr value) {
  auto type = cast<RankedTensorType>(value.getType());
  t.set_data_type(onnxType(type.getElementType()));
  for (int64_t d : type.getShape())
    t.add_dims(d);
  // An unloaded dense_resource exports as an empty tensor, which the
  // checker then rejects.
  FailureOr<std::string> bytes = loom::graph::tensorBytes(value);
  if (succeeded(bytes))
    *t.mutable_raw_data() = std::move(*bytes);
}

class Exporter {
public:
  Exporter(onnx::GraphProto &g) : g(g), used(ownUsed), counter(ownCounter) {}

  LogicalResult run(func::FuncOp func);
  bool paramsAsInitializers = false;

private:
  /// The exporter of a subgraph (an If branch, a Loop body) of `parent`'s
  /// graph: names are unique over the whole model, as ONNX wants, and the
  /// subgraph reads the outer graph's constants by their names.
  Exporter(onnx::GraphProto &g, Exporter &parent)
      : g(g), used(parent.used), counter(parent.counter), parent(&parent),
        ctx(parent.ctx) {}

  onnx::GraphProto &g;
  DenseMap<Value, std::string> names;
  /// The random ops' state argument and the values taken from it.
  llvm::DenseSet<Value> rngValues;
  /// The initializer of each distinct constant value.
  DenseMap<Attribute, std::string> constants;
  llvm::StringSet<> ownUsed;
  int ownCounter = 0;
  llvm::StringSet<> &used;
  int &counter;
  Exporter *parent = nullptr;

  /// The initializer of `value` in this graph or an enclosing one.
  std::string *findConstant(Attribute value) {
    for (Exporter *e = this; e; e = e->parent)
      if (auto it = e->constants.find(value); it != e->constants.end())
        return &it->second;
    return nullptr;
  }

  std::string unique(StringRef base) {
    std::string n = base.str();
    while (!used.insert(n).second)
      n = (base + "_" + Twine(counter++)).str();
    return n;
  }
  std::string fresh() { return unique("t" + std::to_string(counter++)); }
  std::string name(Value v) {
    auto it = names.find(v);
    if (it != names.end())
      return it->second;
    return names[v] = fresh();
  }

  onnx::NodeProto *node(StringRef op, ArrayRef<std::string> inputs,
                        ArrayRef<std::string> outputs) {
    onnx::NodeProto *n = g.add_node();
    n->set_op_type(op.str());
    n->set_name(unique(op.str() + "_" + std::to_string(g.node_size())));
    for (const std::string &i : inputs)
      n->add_input(i);
    for (const std::string &o : outputs)
      n->add_output(o);
    return n;
  }
  /// A node with one fresh output; returns the output's name.
  std::string tmp(StringRef op, ArrayRef<std::string> inputs,
                  onnx::NodeProto **out = nullptr) {
    std::string r = fresh();
    onnx::NodeProto *n = node(op, inputs, {r});
    if (out)
      *out = n;
    return r;
  }
  static void setInt(onnx::NodeProto *n, StringRef key, int64_t v) {
    auto *a = n->add_attribute();
    a->set_name(key.str());
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void setFloat(onnx::NodeProto *n, StringRef key, double v) {
    auto *a = n->add_attribute();
    a->set_name(key.str());
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f((float)v);
  }
  static void setString(onnx::NodeProto *n, StringRef key, StringRef v) {
    auto *a = n->add_attribute();
    a->set_name(key.str());
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v.str());
  }
  static void setInts(onnx::NodeProto *n, StringRef key, ArrayRef<int64_t> v) {
    auto *a = n->add_attribute();
    a->set_name(key.str());
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v)
      a->add_ints(x);
  }

  /// An initializer named after `base` holding `value`.
  std::string initializer(StringRef base, ElementsAttr value) {
    onnx::TensorProto *t = g.add_initializer();
    t->set_name(unique(base));
    fillTensor(*t, value);
    return t->name();
  }
  /// An int64 initializer (1-D, or rank 0 with `scalar`).
  std::string ints(ArrayRef<int64_t> values, bool scalar = false) {
    auto type = RankedTensorType::get(
        scalar ? ArrayRef<int64_t>{}
               : ArrayRef<int64_t>{(int64_t)values.size()},
        IntegerType::get(ctx, 64));
    return initializer("const", DenseElementsAttr::get(type, values));
  }
  /// A rank-0 initializer of element type `elem`.
  std::string scalar(double v, Type elem) {
    auto type = RankedTensorType::get({}, elem);
    Attribute a =
        isa<FloatType>(elem)
            ? (Attribute)FloatAttr::get(elem, v)
            : IntegerAttr::get(
                  elem, APInt(elem.getIntOrFloatBitWidth(), (int64_t)v, true));
    return initializer("const", DenseElementsAttr::get(type, a));
  }
  void setValueInfo(onnx::ValueInfoProto *info, StringRef n, Type t,
                    ArrayAttr dimNames);

  LogicalResult emit(Operation *op);
  /// The single block of `region` as the subgraph `out`: its first
  /// `numInputs` arguments are the subgraph's inputs, the others stand for
  /// `captures` (read from the outer graph by name); the values its
  /// graph.yield yields are the outputs, declared with `outputTypes` (the
  /// op's result types, which may be more static than the yielded values').
  LogicalResult subgraph(Region &region, unsigned numInputs,
                         ValueRange captures, StringRef graphName,
                         ArrayRef<Type> outputTypes, onnx::GraphProto &out);
  LogicalResult emitReduce(Operation *op, StringRef onnxOp, Value x,
                           ArrayRef<int64_t> axes, bool keepdims);

  MLIRContext *ctx = nullptr;
};

void Exporter::setValueInfo(onnx::ValueInfoProto *info, StringRef n, Type t,
                            ArrayAttr dimNames) {
  info->set_name(n.str());
  auto type = cast<RankedTensorType>(t);
  auto *tt = info->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnxType(type.getElementType()));
  auto *shape = tt->mutable_shape();
  for (auto [i, d] : llvm::enumerate(type.getShape())) {
    auto *dim = shape->add_dim();
    if (!ShapedType::isDynamic(d)) {
      dim->set_dim_value(d);
      continue;
    }
    if (dimNames && i < dimNames.size())
      if (auto s = dyn_cast<StringAttr>(dimNames[i]); s && !s.empty())
        dim->set_dim_param(s.str());
  }
}

LogicalResult Exporter::run(func::FuncOp func) {
  ctx = func.getContext();
  // Graph inputs: every argument, named by graph.input / graph.param.
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (paramsAsInitializers)
      if (auto param = func.getArgAttrOfType<StringAttr>(i, "graph.param"))
        if (auto init =
                func.getArgAttrOfType<ElementsAttr>(i, "graph.initial_value")) {
          names[arg] = initializer(param.getValue(), init);
          continue;
        }
    auto in = func.getArgAttrOfType<StringAttr>(i, "graph.input");
    // The random ops' state (OnnxRandom.cpp) is no ONNX input: the random
    // ops export to ONNX's, which keep their own generator.
    if (in && in.getValue() == "loom.rng_state") {
      rngValues.insert(arg);
      continue;
    }
    auto param = func.getArgAttrOfType<StringAttr>(i, "graph.param");
    std::string n = unique(in      ? in.str()
                           : param ? param.str()
                                   : "arg" + std::to_string(i));
    names[arg] = n;
    if (!isa<RankedTensorType>(arg.getType()) ||
        !onnxType(cast<RankedTensorType>(arg.getType()).getElementType()))
      return emitError(arg.getLoc())
             << "argument " << i << " has type " << arg.getType()
             << ", which has no ONNX form";
    setValueInfo(g.add_input(), n, arg.getType(),
                 func.getArgAttrOfType<ArrayAttr>(i, "graph.dim_names"));
  }
  // Outputs produced by an op take the output's name directly.
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<std::string> outNames;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto a = func.getResultAttrOfType<StringAttr>(i, "graph.output");
    std::string n = unique(a ? a.str() : "output" + std::to_string(i));
    outNames.push_back(n);
    if (v.getDefiningOp() && !names.count(v))
      names[v] = n;
  }
  for (Operation &op : func.getBody().front().without_terminator()) {
    // The rng state's key and counter (its slices and reshapes) are only
    // read by random ops, which export without them.
    if (isa<SliceOp, ReshapeOp>(op) && op.getNumOperands() == 1 &&
        rngValues.count(op.getOperand(0))) {
      rngValues.insert(op.getResult(0));
      continue;
    }
    if (failed(emit(&op)))
      return failure();
  }
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    if (names[v] != outNames[i])
      node("Identity", {name(v)}, {outNames[i]});
    setValueInfo(g.add_output(), outNames[i], v.getType(), nullptr);
  }
  return success();
}

LogicalResult Exporter::emitReduce(Operation *op, StringRef onnxOp, Value x,
                                   ArrayRef<int64_t> axes, bool keepdims) {
  std::string out = name(op->getResult(0));
  onnx::NodeProto *n;
  // Opset 17: ReduceSum takes axes as an input, the others as attribute.
  if (onnxOp == "ReduceSum") {
    n = node(onnxOp, {name(x), ints(axes)}, {out});
  } else {
    n = node(onnxOp, {name(x)}, {out});
    setInts(n, "axes", axes);
  }
  setInt(n, "keepdims", keepdims);
  return success();
}

LogicalResult Exporter::subgraph(Region &region, unsigned numInputs,
                                 ValueRange captures, StringRef graphName,
                                 ArrayRef<Type> outputTypes,
                                 onnx::GraphProto &out) {
  Exporter child(out, *this);
  child.paramsAsInitializers = paramsAsInitializers;
  out.set_name(unique(graphName));
  Block &block = region.front();
  for (BlockArgument arg : block.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (i >= numInputs) {
      child.names[arg] = name(captures[i - numInputs]);
      continue;
    }
    std::string n = child.fresh();
    child.names[arg] = n;
    setValueInfo(out.add_input(), n, arg.getType(), nullptr);
  }
  for (Operation &op : block.without_terminator())
    if (failed(child.emit(&op)))
      return failure();
  // Each output gets a name of its own: a yielded value may be an input
  // or an outer value, which a graph output cannot name.
  for (auto [v, type] : llvm::zip_equal(
           cast<YieldOp>(block.getTerminator()).getValues(), outputTypes)) {
    std::string o = child.fresh();
    child.node("Identity", {child.name(v)}, {o});
    setValueInfo(out.add_output(), o, type, nullptr);
  }
  return success();
}

StringRef stringifyCompare(CompareDirection d) {
  switch (d) {
  case CompareDirection::eq:
  case CompareDirection::ne:
    return "Equal";
  case CompareDirection::lt:
    return "Less";
  case CompareDirection::le:
    return "LessOrEqual";
  case CompareDirection::gt:
    return "Greater";
  case CompareDirection::ge:
    return "GreaterOrEqual";
  }
  return "";
}

StringRef lossReduction(Reduction r) {
  return r == Reduction::none ? "none" : r == Reduction::sum ? "sum" : "mean";
}

LogicalResult Exporter::emit(Operation *op) {
  auto in = [&](unsigned i) { return name(op->getOperand(i)); };
  auto out = [&](unsigned i = 0) { return name(op->getResult(i)); };
  auto elemOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  };
  // Resize's attributes, from resize or dynamic_resize.
  auto setResizeAttrs = [&](onnx::NodeProto *n, auto o) -> LogicalResult {
    setString(n, "mode", stringifyResizeMode(o.getMode()));
    setString(n, "coordinate_transformation_mode",
              stringifyCoordinateMode(o.getCoordinateMode()));
    setString(n, "nearest_mode", stringifyNearestMode(o.getNearestMode()));
    setFloat(n, "cubic_coeff_a", o.getCubicCoeffA().convertToDouble());
    setInt(n, "exclude_outside", o.getExcludeOutside());
    if (o.getCoordinateMode() == CoordinateMode::half_pixel_symmetric)
      return o->emitError("coordinate mode half_pixel_symmetric needs ONNX "
                          "opset 19");
    return success();
  };
  // Operand `i` as int64 (a Cast when it is i32).
  auto int64In = [&](unsigned i) {
    if (elemOf(op->getOperand(i)).isInteger(64))
      return in(i);
    onnx::NodeProto *cast;
    std::string r = tmp("Cast", {in(i)}, &cast);
    setInt(cast, "to", onnx::TensorProto::INT64);
    return r;
  };
  // ConstantOfShape's `value` attribute: one element of `value`.
  auto setFillValue = [&](onnx::NodeProto *n, Attribute value) {
    auto *a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    auto typed = cast<TypedAttr>(value);
    auto type = RankedTensorType::get({1}, typed.getType());
    fillTensor(*a->mutable_t(), DenseElementsAttr::get(type, typed));
  };
  // ONNX Runtime has no boolean Where: where on i1 (how And and Or import)
  // goes out as the logic it computes, Or(And(c, x), And(Not(c), y)), with
  // the constant-operand cases as one And or Or.
  if (auto where = dyn_cast<WhereOp>(op);
      where && elemOf(where.getResult()).isInteger(1)) {
    // v is a splat of `value` that does not widen the broadcast of a and b.
    auto dropsOut = [](Value v, bool value, Value a, Value b) {
      if (!(value ? matchPattern(v, m_One()) : matchPattern(v, m_Zero())))
        return false;
      auto t = cast<RankedTensorType>(v.getType());
      int64_t rank = std::max(cast<RankedTensorType>(a.getType()).getRank(),
                              cast<RankedTensorType>(b.getType()).getRank());
      return t.getRank() <= rank &&
             llvm::all_of(t.getShape(), [](int64_t d) { return d == 1; });
    };
    Value c = where.getCond(), x = where.getX(), y = where.getY();
    if (dropsOut(y, false, c, x)) {
      node("And", {in(0), in(1)}, {out()});
      return success();
    }
    if (dropsOut(x, true, c, y)) {
      node("Or", {in(0), in(2)}, {out()});
      return success();
    }
    std::string a = fresh(), notC = fresh(), b = fresh();
    node("And", {in(0), in(1)}, {a});
    node("Not", {in(0)}, {notC});
    node("And", {notC, in(2)}, {b});
    node("Or", {a, b}, {out()});
    return success();
  }
  // Same-named elementwise ops.
  StringRef simple =
      llvm::TypeSwitch<Operation *, StringRef>(op)
          .Case([](NegOp) { return "Neg"; })
          .Case([](AbsOp) { return "Abs"; })
          .Case([](ExpOp) { return "Exp"; })
          .Case([](LogOp) { return "Log"; })
          .Case([](SqrtOp) { return "Sqrt"; })
          .Case([](TanhOp) { return "Tanh"; })
          .Case([](CosOp) { return "Cos"; })
          .Case([](SinOp) { return "Sin"; })
          .Case([](AtanOp) { return "Atan"; })
          .Case([](SigmoidOp) { return "Sigmoid"; })
          .Case([](ReluOp) { return "Relu"; })
          .Case([](ErfOp) { return "Erf"; })
          .Case([](FloorOp) { return "Floor"; })
          .Case([](CeilOp) { return "Ceil"; })
          .Case([](RoundOp) { return "Round"; })
          .Case([](AddOp) { return "Add"; })
          .Case([](SubOp) { return "Sub"; })
          .Case([](MulOp) { return "Mul"; })
          .Case([](DivOp) { return "Div"; })
          .Case([](PowOp) { return "Pow"; })
          .Case([](MaxOp) { return "Max"; })
          .Case([](MinOp) { return "Min"; })
          .Case([](WhereOp) { return "Where"; })
          .Case([](GlobalAvgPoolOp) { return "GlobalAveragePool"; })
          .Default([](Operation *) { return ""; });
  if (!simple.empty()) {
    SmallVector<std::string> ins;
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      ins.push_back(in(i));
    node(simple, ins, {out()});
    return success();
  }
  // A matmul's two operands, each transposed (its last two dims) first
  // where its flag says so.
  auto matmulOperands = [&](auto o) {
    auto swapLast = [&](Value v, const std::string &nm) {
      int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
      if (rank < 2)
        return nm;
      SmallVector<int64_t> perm;
      for (int64_t i = 0; i < rank; ++i)
        perm.push_back(i);
      std::swap(perm[rank - 1], perm[rank - 2]);
      onnx::NodeProto *t;
      std::string r = tmp("Transpose", {nm}, &t);
      setInts(t, "perm", perm);
      return r;
    };
    return SmallVector<std::string>{
        o.getTransposeLhs() ? swapLast(o.getLhs(), in(0)) : in(0),
        o.getTransposeRhs() ? swapLast(o.getRhs(), in(1)) : in(1)};
  };
  onnx::NodeProto *n = nullptr;
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ConstantOp c) {
        // The initializer takes the output's name: no node needed.
        std::string base = "const";
        if (auto r = dyn_cast<DenseResourceElementsAttr>(c.getValue()))
          base = r.getRawHandle().getKey().str();
        std::string *outer = findConstant(c.getValue());
        std::string &init = outer ? *outer : constants[c.getValue()];
        if (init.empty())
          init = initializer(base, c.getValue());
        if (names.count(c.getResult()))
          node("Identity", {init}, {out()});
        else
          names[c.getResult()] = init;
        return success();
      })
      .Case([&](IotaOp o) {
        node("Identity", {initializer("iota", o.computeValue())}, {out()});
        return success();
      })
      .Case([&](FillLikeOp o) {
        std::string shape = tmp("Shape", {in(0)});
        setFillValue(node("ConstantOfShape", {shape}, {out()}), o.getValue());
        return success();
      })
      .Case([&](RsqrtOp) {
        node("Reciprocal", {tmp("Sqrt", {in(0)})}, {out()});
        return success();
      })
      .Case([&](GeluOp o) {
        Type elem = elemOf(o.getX());
        std::string x = in(0);
        std::string inner;
        if (o.getApproximate() == GeluApproximation::tanh) {
          // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
          std::string x3 = tmp("Mul", {x, tmp("Mul", {x, x})});
          std::string s =
              tmp("Add", {x, tmp("Mul", {x3, scalar(0.044715, elem)})});
          inner = tmp("Tanh",
                      {tmp("Mul", {s, scalar(std::sqrt(2.0 / M_PI), elem)})});
        } else {
          // 0.5 x (1 + erf(x / sqrt(2)))
          inner = tmp("Erf", {tmp("Div", {x, scalar(std::sqrt(2.0), elem)})});
        }
        std::string onePlus = tmp("Add", {inner, scalar(1.0, elem)});
        node("Mul", {tmp("Mul", {x, scalar(0.5, elem)}), onePlus}, {out()});
        return success();
      })
      .Case([&](ClampOp o) {
        Type elem = elemOf(o.getX());
        std::string lo = o.getMin()
                             ? scalar(o.getMin()->convertToDouble(), elem)
                             : std::string();
        std::string hi = o.getMax()
                             ? scalar(o.getMax()->convertToDouble(), elem)
                             : std::string();
        node("Clip", {in(0), lo, hi}, {out()});
        return success();
      })
      .Case([&](DropoutOp o) {
        if (!o.getTraining()) {
          node("Identity", {in(0)}, {out()});
          return success();
        }
        Type elem = elemOf(o.getX());
        n = node("Dropout",
                 {in(0), scalar(o.getRatio().convertToDouble(), elem),
                  scalar(1, IntegerType::get(ctx, 1))},
                 {out()});
        setInt(n, "seed", o.getSeed());
        return success();
      })
      // The random ops: ONNX's, with the seed (the float whose bits the
      // importer kept) when the op has one.
      .Case<RandomUniformOp, RandomNormalOp, BernoulliOp, MultinomialOp>(
          [&](auto o) -> LogicalResult {
            auto rt = cast<RankedTensorType>(o.getType());
            Operation *rop = o.getOperation();
            if (isa<RandomUniformOp, RandomNormalOp>(rop)) {
              bool normal = isa<RandomNormalOp>(rop);
              n = node(normal ? "RandomNormal" : "RandomUniform", {}, {out()});
              setInts(n, "shape", rt.getShape());
              setFloat(n, normal ? "mean" : "low",
                       rop->getAttrOfType<FloatAttr>(normal ? "mean" : "low")
                           .getValueAsDouble());
              setFloat(n, normal ? "scale" : "high",
                       rop->getAttrOfType<FloatAttr>(normal ? "scale" : "high")
                           .getValueAsDouble());
            } else if (auto m = dyn_cast<MultinomialOp>(rop)) {
              n = node("Multinomial", {in(0)}, {out()});
              setInt(n, "sample_size", (int64_t)m.getSampleSize());
            } else {
              n = node("Bernoulli", {in(0)}, {out()});
            }
            setInt(n, "dtype", onnxType(rt.getElementType()));
            if (auto seed = rop->getAttrOfType<IntegerAttr>("seed")) {
              uint64_t bits = seed.getValue().getZExtValue();
              setFloat(n, "seed",
                       bits >> 32
                           ? (double)(int64_t)bits
                           : (double)llvm::bit_cast<float>((uint32_t)bits));
            }
            return success();
          })
      .Case([&](RandomDropoutOp o) {
        Type elem = elemOf(o.getX());
        n = node("Dropout",
                 {in(0), scalar(o.getRatio().convertToDouble(), elem),
                  scalar(1, IntegerType::get(ctx, 1))},
                 {out()});
        setInt(n, "seed", o.getSeed());
        return success();
      })
      .Case<ShiftLeftOp, ShiftRightOp>([&](auto o) -> LogicalResult {
        if (!elemOf(o.getLhs()).isUnsignedInteger())
          return o->emitError("ONNX BitShift takes unsigned integers, not ")
                 << elemOf(o.getLhs());
        n = node("BitShift", {in(0), in(1)}, {out()});
        setString(n, "direction",
                  isa<ShiftLeftOp>(o.getOperation()) ? "LEFT" : "RIGHT");
        return success();
      })
      .Case<BitAndOp, BitOrOp, BitXorOp, BitNotOp>(
          [&](auto o) -> LogicalResult {
            return o->emitError("'")
                   << o->getName()
                   << "' needs ONNX opset 18 (BitwiseAnd, ...); the exporter "
                      "writes opset "
                   << loom::onnx_export::kExportOpset;
          })
      .Case<QuantizeOp, DequantizeOp>([&](auto o) {
        // A scale varying along one dim goes out 1-D with that dim as the
        // axis; a scalar as it is; an all-ones shape as a scalar.
        auto st = cast<RankedTensorType>(o.getScale().getType());
        int64_t xRank = cast<RankedTensorType>(o.getX().getType()).getRank();
        std::optional<int64_t> axis;
        for (auto [i, d] : llvm::enumerate(st.getShape()))
          if (d != 1)
            axis = xRank - st.getRank() + i;
        std::string scale = in(1), zero = in(2);
        if (st.getRank() != 0) {
          SmallVector<int64_t> shape;
          if (axis)
            shape.push_back(st.getDimSize(*axis - (xRank - st.getRank())));
          scale = tmp("Reshape", {scale, ints(shape)});
          zero = tmp("Reshape", {zero, ints(shape)});
        }
        n = node(isa<QuantizeOp>(o.getOperation()) ? "QuantizeLinear"
                                                   : "DequantizeLinear",
                 {in(0), scale, zero}, {out()});
        if (axis)
          setInt(n, "axis", *axis);
        return success();
      })
      .Case([&](CastOp o) {
        n = node("Cast", {in(0)}, {out()});
        setInt(n, "to", onnxType(o.getTo()));
        return success();
      })
      .Case([&](RemOp) {
        n = node("Mod", {in(0), in(1)}, {out()});
        setInt(n, "fmod", 1);
        return success();
      })
      .Case([&](ModOp o) {
        if (!isa<FloatType>(elemOf(o.getLhs()))) {
          node("Mod", {in(0), in(1)}, {out()});
          return success();
        }
        // Floats: a - b * floor(a / b).
        std::string q = tmp("Floor", {tmp("Div", {in(0), in(1)})});
        node("Sub", {in(0), tmp("Mul", {in(1), q})}, {out()});
        return success();
      })
      .Case([&](CompareOp o) {
        StringRef name = stringifyCompare(o.getDirection());
        if (o.getDirection() == CompareDirection::ne)
          node("Not", {tmp(name, {in(0), in(1)})}, {out()});
        else
          node(name, {in(0), in(1)}, {out()});
        return success();
      })
      .Case([&](MatmulOp o) {
        auto rank = [](Value v) {
          return cast<RankedTensorType>(v.getType()).getRank();
        };
        bool flags = o.getTransposeLhs() || o.getTransposeRhs();
        if (flags && rank(o.getLhs()) == 2 && rank(o.getRhs()) == 2) {
          n = node("Gemm", {in(0), in(1)}, {out()});
          setInt(n, "transA", o.getTransposeLhs());
          setInt(n, "transB", o.getTransposeRhs());
          return success();
        }
        node("MatMul", matmulOperands(o), {out()});
        return success();
      })
      .Case([&](MatmulIntegerOp o) {
        SmallVector<std::string> ins = matmulOperands(o);
        ins.append({in(2), in(3)});
        node("MatMulInteger", ins, {out()});
        return success();
      })
      .Case([&](ConvIntegerOp o) {
        n = node("ConvInteger", {in(0), in(1), in(2), in(3)}, {out()});
        setInts(n, "strides", o.getStrides());
        setInts(n, "pads", o.getPadding());
        setInts(n, "dilations", o.getDilations());
        setInt(n, "group", o.getGroups());
        return success();
      })
      .Case([&](ConvOp o) {
        SmallVector<std::string> ins = {in(0), in(1)};
        if (o.getBias())
          ins.push_back(name(o.getBias()));
        n = node("Conv", ins, {out()});
        setInts(n, "strides", o.getStrides());
        setInts(n, "pads", o.getPadding());
        setInts(n, "dilations", o.getDilations());
        setInt(n, "group", o.getGroups());
        return success();
      })
      .Case([&](MaxPoolOp o) {
        n = node("MaxPool", {in(0)}, {out()});
        setInts(n, "kernel_shape", o.getKernel());
        setInts(n, "strides", o.getStrides());
        setInts(n, "pads", o.getPadding());
        setInts(n, "dilations", o.getDilations());
        setInt(n, "ceil_mode", o.getCeilMode());
        return success();
      })
      .Case([&](AvgPoolOp o) {
        n = node("AveragePool", {in(0)}, {out()});
        setInts(n, "kernel_shape", o.getKernel());
        setInts(n, "strides", o.getStrides());
        setInts(n, "pads", o.getPadding());
        setInt(n, "ceil_mode", o.getCeilMode());
        setInt(n, "count_include_pad", o.getCountIncludePad());
        return success();
      })
      .Case([&](BatchNormOp o) {
        n = node("BatchNormalization", {in(0), in(1), in(2), in(3), in(4)},
                 {out()});
        setFloat(n, "epsilon", o.getEpsilon().convertToDouble());
        return success();
      })
      .Case([&](LayerNormOp o) {
        SmallVector<std::string> ins = {in(0), in(1)};
        if (o.getBias())
          ins.push_back(name(o.getBias()));
        n = node("LayerNormalization", ins, {out()});
        setInt(n, "axis", o.getAxis());
        setFloat(n, "epsilon", o.getEpsilon().convertToDouble());
        return success();
      })
      .Case([&](SoftmaxOp o) {
        n = node("Softmax", {in(0)}, {out()});
        setInt(n, "axis", o.getAxis());
        return success();
      })
      .Case([&](LogSoftmaxOp o) {
        n = node("LogSoftmax", {in(0)}, {out()});
        setInt(n, "axis", o.getAxis());
        return success();
      })
      .Case([&](ReduceSumOp o) {
        return emitReduce(op, "ReduceSum", o.getX(), o.getAxes(),
                          o.getKeepdims());
      })
      .Case([&](ReduceMeanOp o) {
        return emitReduce(op, "ReduceMean", o.getX(), o.getAxes(),
                          o.getKeepdims());
      })
      .Case([&](ReduceMaxOp o) {
        return emitReduce(op, "ReduceMax", o.getX(), o.getAxes(),
                          o.getKeepdims());
      })
      .Case([&](ReduceMinOp o) {
        return emitReduce(op, "ReduceMin", o.getX(), o.getAxes(),
                          o.getKeepdims());
      })
      .Case([&](ReduceProdOp o) {
        return emitReduce(op, "ReduceProd", o.getX(), o.getAxes(),
                          o.getKeepdims());
      })
      .Case<ArgMaxOp, ArgMinOp>([&](auto o) {
        n = node(isa<ArgMaxOp>(op) ? "ArgMax" : "ArgMin", {in(0)}, {out()});
        setInt(n, "axis", o.getAxis());
        setInt(n, "keepdims", o.getKeepdims());
        setInt(n, "select_last_index", o.getSelectLastIndex());
        return success();
      })
      .Case([&](CumSumOp o) {
        n = node("CumSum",
                 {in(0), ints({static_cast<int64_t>(o.getAxis())}, true)},
                 {out()});
        setInt(n, "exclusive", o.getExclusive());
        setInt(n, "reverse", o.getReverse());
        return success();
      })
      .Case<TopKOp, DynamicTopKOp>([&](auto o) {
        std::string k;
        if constexpr (std::is_same_v<decltype(o), TopKOp>)
          k = ints({static_cast<int64_t>(o.getK())});
        else
          k = int64In(1);
        n = node("TopK", {in(0), k}, {out(0), out(1)});
        setInt(n, "axis", o.getAxis());
        setInt(n, "largest", !o.getSmallest());
        setInt(n, "sorted", !o.getUnsorted());
        return success();
      })
      .Case([&](ReshapeOp o) {
        node("Reshape", {in(0), ints(o.getShape())}, {out()});
        return success();
      })
      .Case([&](TransposeOp o) {
        n = node("Transpose", {in(0)}, {out()});
        setInts(n, "perm", o.getPerm());
        return success();
      })
      .Case([&](BroadcastToOp o) {
        // Expand keeps the operand's dim where the shape says 1.
        SmallVector<int64_t> shape;
        for (int64_t d : o.getShape())
          shape.push_back(d == -1 ? 1 : d);
        node("Expand", {in(0), ints(shape)}, {out()});
        return success();
      })
      .Case([&](ConcatOp o) {
        SmallVector<std::string> ins;
        for (Value v : o.getInputs())
          ins.push_back(name(v));
        n = node("Concat", ins, {out()});
        setInt(n, "axis", o.getAxis());
        return success();
      })
      .Case([&](SliceOp o) {
        SmallVector<int64_t> axes;
        for (size_t i = 0; i < o.getStarts().size(); ++i)
          axes.push_back(i);
        node("Slice",
             {in(0), ints(o.getStarts()), ints(o.getEnds()), ints(axes),
              ints(o.getSteps())},
             {out()});
        return success();
      })
      .Case([&](GatherOp o) {
        n = node("Gather", {in(0), in(1)}, {out()});
        setInt(n, "axis", o.getAxis());
        return success();
      })
      .Case([&](GatherElementsOp o) {
        n = node("GatherElements", {in(0), in(1)}, {out()});
        setInt(n, "axis", o.getAxis());
        return success();
      })
      .Case([&](ScatterElementsOp o) -> LogicalResult {
        ScatterReduction r = o.getReduction();
        if (r == ScatterReduction::max || r == ScatterReduction::min)
          return op->emitError("reduction '")
                 << stringifyScatterReduction(r)
                 << "' of scatter_elements needs ONNX opset 18; the exporter "
                    "writes opset "
                 << loom::onnx_export::kExportOpset;
        n = node("ScatterElements", {in(0), in(1), in(2)}, {out()});
        setInt(n, "axis", o.getAxis());
        setString(n, "reduction", stringifyScatterReduction(r));
        return success();
      })
      .Case([&](TriluOp o) {
        n = node("Trilu", {in(0), ints({static_cast<int64_t>(o.getK())}, true)},
                 {out()});
        setInt(n, "upper", o.getUpper());
        return success();
      })
      .Case([&](DynamicResizeOp o) -> LogicalResult {
        bool bySizes = isa<IntegerType>(elemOf(o.getParam()));
        n = node("Resize",
                 {in(0), "", bySizes ? "" : in(1), bySizes ? in(1) : ""},
                 {out()});
        return setResizeAttrs(n, o);
      })
      .Case([&](ResizeOp o) -> LogicalResult {
        ArrayRef<int64_t> sizes = o.getSizes();
        std::string scalesIn, sizesIn;
        if (llvm::all_of(sizes, [](int64_t s) { return s < 0; })) {
          Builder b(ctx);
          auto t = RankedTensorType::get({(int64_t)o.getScales().size()},
                                         b.getF32Type());
          SmallVector<float> scales(o.getScales().begin(), o.getScales().end());
          scalesIn = initializer("scales",
                                 DenseElementsAttr::get(t, ArrayRef(scales)));
        } else {
          // ONNX takes scales or sizes: sizes from the result type.
          auto result = cast<RankedTensorType>(o.getType());
          if (!result.hasStaticShape())
            return op->emitError("resize mixes given sizes with a dynamic "
                                 "dim; ONNX Resize cannot express it");
          sizesIn = ints(result.getShape());
        }
        n = node("Resize", {in(0), "", scalesIn, sizesIn}, {out()});
        return setResizeAttrs(n, o);
      })
      .Case([&](SqueezeOp o) {
        node("Squeeze", {in(0), ints(o.getAxes())}, {out()});
        return success();
      })
      .Case([&](UnsqueezeOp o) {
        node("Unsqueeze", {in(0), ints(o.getAxes())}, {out()});
        return success();
      })
      .Case([&](FlattenOp o) {
        n = node("Flatten", {in(0)}, {out()});
        setInt(n, "axis", o.getAxis());
        return success();
      })
      .Case([&](PadOp o) {
        Type elem = elemOf(o.getX());
        SmallVector<std::string> ins = {in(0), ints(o.getPads())};
        if (o.getMode() == PadMode::constant)
          ins.push_back(scalar(o.getValue().convertToDouble(), elem));
        n = node("Pad", ins, {out()});
        setString(n, "mode", stringifyPadMode(o.getMode()));
        return success();
      })
      // Run-time shape parameters: the ONNX ops that take them as inputs
      // (which want int64 where our operand may be i32).
      .Case([&](DynamicReshapeOp o) {
        n = node("Reshape", {in(0), int64In(1)}, {out()});
        if (o.getAllowzero())
          setInt(n, "allowzero", 1);
        return success();
      })
      .Case([&](DynamicUnsqueezeOp) {
        node("Unsqueeze", {in(0), int64In(1)}, {out()});
        return success();
      })
      .Case([&](DynamicSqueezeOp) {
        node("Squeeze", {in(0), int64In(1)}, {out()});
        return success();
      })
      .Case([&](DynamicSliceOp) {
        node("Slice", {in(0), in(1), in(2), in(3), in(4)}, {out()});
        return success();
      })
      .Case([&](DynamicReduceSumOp o) {
        n = node("ReduceSum", {in(0), int64In(1)}, {out()});
        setInt(n, "keepdims", o.getKeepdims());
        if (o.getNoopWithEmptyAxes())
          setInt(n, "noop_with_empty_axes", 1);
        return success();
      })
      .Case([&](DynamicCumSumOp o) {
        n = node("CumSum", {in(0), in(1)}, {out()});
        setInt(n, "exclusive", o.getExclusive());
        setInt(n, "reverse", o.getReverse());
        return success();
      })
      .Case([&](DynamicFillOp o) {
        setFillValue(node("ConstantOfShape", {int64In(0)}, {out()}),
                     o.getValue());
        return success();
      })
      .Case([&](DynamicBroadcastOp) {
        node("Expand", {in(0), int64In(1)}, {out()});
        return success();
      })
      .Case([&](RangeOp) {
        node("Range", {in(0), in(1), in(2)}, {out()});
        return success();
      })
      .Case([&](DynamicTileOp) {
        node("Tile", {in(0), int64In(1)}, {out()});
        return success();
      })
      .Case([&](NonZeroOp) {
        // ONNX's NonZero is [rank, count], graph.nonzero's transpose.
        n = node("Transpose", {tmp("NonZero", {in(0)})}, {out()});
        setInts(n, "perm", {1, 0});
        return success();
      })
      .Case([&](DynamicPadOp o) {
        n = node("Pad", {in(0), int64In(1), in(2)}, {out()});
        setString(n, "mode", stringifyPadMode(o.getMode()));
        return success();
      })
      .Case([&](EmbeddingOp) {
        n = node("Gather", {in(0), in(1)}, {out()});
        setInt(n, "axis", 0);
        return success();
      })
      .Case([&](IfOp o) {
        SmallVector<std::string> outs;
        for (unsigned i = 0; i < o.getNumResults(); ++i)
          outs.push_back(out(i));
        n = node("If", {in(0)}, outs);
        for (auto [key, region] :
             {std::pair<StringRef, Region *>{"then_branch", &o.getThenRegion()},
              {"else_branch", &o.getElseRegion()}}) {
          auto *a = n->add_attribute();
          a->set_name(key.str());
          a->set_type(onnx::AttributeProto::GRAPH);
          if (failed(subgraph(*region, 0, o.getCaptures(), key,
                              llvm::to_vector(o.getResultTypes()),
                              *a->mutable_g())))
            return failure();
        }
        return success();
      })
      .Case([&](LoopOp o) {
        // Loop(M, cond, v_initial...): an absent trip count or condition
        // is an empty name.
        SmallVector<std::string> ins = {
            o.getTripCount() ? name(o.getTripCount()) : "",
            o.getCond() ? name(o.getCond()) : ""};
        for (Value v : o.getInits())
          ins.push_back(name(v));
        SmallVector<std::string> outs;
        for (unsigned i = 0; i < o.getNumResults(); ++i)
          outs.push_back(out(i));
        n = node("Loop", ins, outs);
        auto *a = n->add_attribute();
        a->set_name("body");
        a->set_type(onnx::AttributeProto::GRAPH);
        // The body's inputs: the iteration number, the condition and the
        // carried values; its outputs: the condition, the carried values
        // and the scan values, as graph.loop's.
        SmallVector<Type> types = {o.getBody().getArgument(1).getType()};
        for (auto [i, t] : llvm::enumerate(o.getResultTypes())) {
          auto r = cast<RankedTensorType>(t);
          types.push_back(i < o.getInits().size()
                              ? r
                              : RankedTensorType::get(r.getShape().drop_front(),
                                                      r.getElementType()));
        }
        return subgraph(o.getBody(), 2 + o.getInits().size(), o.getCaptures(),
                        "body", types, *a->mutable_g());
      })
      .Case([&](CrossEntropyOp o) {
        // ONNX wants classes at dim 1: [N, C, d...].
        std::string logits = in(0);
        int64_t rank =
            cast<RankedTensorType>(o.getLogits().getType()).getRank();
        if (rank > 2) {
          SmallVector<int64_t> perm = {0, rank - 1};
          for (int64_t i = 1; i < rank - 1; ++i)
            perm.push_back(i);
          onnx::NodeProto *t;
          logits = tmp("Transpose", {logits}, &t);
          setInts(t, "perm", perm);
        }
        n = node("SoftmaxCrossEntropyLoss", {logits, in(1)}, {out()});
        setString(n, "reduction", lossReduction(o.getReduction()));
        if (o.getIgnoreIndex())
          setInt(n, "ignore_index", *o.getIgnoreIndex());
        return success();
      })
      .Case([&](MseLossOp o) {
        std::string d = tmp("Sub", {in(0), in(1)});
        std::string sq = o.getReduction() == Reduction::none ? out() : fresh();
        node("Mul", {d, d}, {sq});
        if (o.getReduction() == Reduction::none)
          return success();
        int64_t rank = cast<RankedTensorType>(o.getPred().getType()).getRank();
        SmallVector<int64_t> axes;
        for (int64_t i = 0; i < rank; ++i)
          axes.push_back(i);
        if (o.getReduction() == Reduction::sum) {
          n = node("ReduceSum", {sq, ints(axes)}, {out()});
        } else {
          n = node("ReduceMean", {sq}, {out()});
          setInts(n, "axes", axes);
        }
        setInt(n, "keepdims", 0);
        return success();
      })
      .Default([&](Operation *op) {
        return op->emitError("op '") << op->getName() << "' has no ONNX export";
      });
}

} // namespace

LogicalResult loom::onnx_export::exportModel(ModuleOp module,
                                             onnx::ModelProto &model,
                                             const ExportOptions &options) {
  func::FuncOp func;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (!options.funcName.empty() && f.getSymName() != options.funcName)
      continue;
    if (func)
      return module.emitError("the module has several functions; name the "
                              "one to export");
    func = f;
  }
  if (!func)
    return module.emitError("no function ")
           << (options.funcName.empty() ? "" : "'" + options.funcName + "' ")
           << "to export";
  if (!func.getBody().hasOneBlock())
    return func.emitError("only single-block functions can be exported");
  model.set_ir_version(8);
  model.set_producer_name("loom");
  model.set_producer_version("0.1");
  auto *opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kExportOpset);
  onnx::GraphProto *g = model.mutable_graph();
  g->set_name(options.graphName);
  Exporter exporter(*g);
  exporter.paramsAsInitializers = options.paramsAsInitializers;
  return exporter.run(func);
}

std::string loom::onnx_export::replaceInitializers(
    const std::string &onnxBytes,
    std::map<std::string, InitializerValue> &values, onnx::ModelProto &model) {
  if (!model.ParseFromString(onnxBytes))
    return "the source model is not a valid ONNX protobuf";
  std::set<std::string> replaced;
  for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer()) {
    auto it = values.find(t.name());
    if (it == values.end())
      continue;
    InitializerValue &v = it->second;
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    if (t.data_type() != v.dataType || dims != v.dims)
      return "initializer '" + t.name() +
             "' has another dtype or shape than the trained value";
    std::string name = t.name();
    t.Clear();
    t.set_name(name);
    t.set_data_type(v.dataType);
    for (int64_t d : v.dims)
      t.add_dims(d);
    t.set_raw_data(std::move(v.rawData));
    replaced.insert(name);
  }
  for (const auto &[name, v] : values)
    if (!replaced.count(name))
      return "the model has no initializer '" + name + "' to write";
  std::string problem = checkModel(model);
  if (!problem.empty())
    return "the model fails onnx.checker: " + problem;
  return "";
}

std::string loom::onnx_export::writeModel(onnx::ModelProto &model,
                                          const std::string &path,
                                          ExternalData external) {
  constexpr uint64_t kMaxMessage = (uint64_t(1) << 31) - 1;
  std::string error;
  uint64_t size = model.ByteSizeLong();
  if (size > kMaxMessage && external == ExternalData::Never)
    return "the model is " + std::to_string(size) +
           " bytes, over protobuf's 2 GiB limit: it needs external data "
           "(--external-data=auto or always), not never";
  if (size > kMaxMessage || external == ExternalData::Always) {
    // External data: the raw bytes move into one file beside the model.
    std::string dataPath = path + ".data";
    std::string location = dataPath.substr(dataPath.rfind('/') + 1);
    // One pass lays the file out: each tensor after zeros up to its
    // 4096-byte aligned offset (a deque keeps the moved bytes in place).
    static const char zeros[4096] = {};
    std::deque<std::string> moved;
    std::vector<std::string_view> pieces;
    uint64_t offset = 0;
    for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer()) {
      if (t.raw_data().size() < 1024)
        continue;
      if (uint64_t pad = (4096 - offset % 4096) % 4096) {
        pieces.emplace_back(zeros, pad);
        offset += pad;
      }
      moved.push_back(std::move(*t.mutable_raw_data()));
      t.clear_raw_data();
      t.set_data_location(onnx::TensorProto::EXTERNAL);
      for (auto [key, value] :
           {std::pair<const char *, std::string>{"location", location},
            {"offset", std::to_string(offset)},
            {"length", std::to_string(moved.back().size())}}) {
        onnx::StringStringEntryProto *e = t.add_external_data();
        e->set_key(key);
        e->set_value(value);
      }
      pieces.emplace_back(moved.back());
      offset += moved.back().size();
    }
    if (!pieces.empty() &&
        !loom::files::writeFileAtomically(dataPath, pieces, error))
      return error;
    if (model.ByteSizeLong() > kMaxMessage)
      return "the model is over 2 GiB even with its initializers' data in "
             "external data";
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return "cannot serialize the model";
  if (!loom::files::writeFileAtomically(path, bytes, error))
    return error;
  return "";
}

std::string loom::onnx_export::dropInitializerData(
    const std::string &onnxBytes, const std::set<std::string> &names,
    const std::function<std::optional<std::string_view>(const std::string &)>
        &dataOf,
    std::string &out) {
  onnx::ModelProto model;
  if (!model.ParseFromString(onnxBytes))
    return "the source model is not a valid ONNX protobuf";
  for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer()) {
    if (!names.count(t.name())) {
      // Data the importer moved into the IR (one copy of each weight in
      // the compiler) comes back for a tensor that is not a parameter.
      if (t.has_raw_data() || t.data_location() != onnx::TensorProto::DEFAULT)
        continue;
      std::optional<std::string_view> moved = dataOf(t.name());
      if (moved)
        t.set_raw_data(moved->data(), moved->size());
      continue;
    }
    t.clear_raw_data();
    t.clear_float_data();
    t.clear_double_data();
    t.clear_int32_data();
    t.clear_int64_data();
    t.clear_uint64_data();
    t.clear_external_data();
    t.clear_data_location();
  }
  if (!model.SerializeToString(&out))
    return "cannot serialize the model (over 2 GiB?)";
  return "";
}

LogicalResult loom::onnx_export::exportFile(ModuleOp module, StringRef path,
                                            const ExportOptions &options) {
  onnx::ModelProto model;
  if (failed(exportModel(module, model, options)))
    return failure();
  std::string problem = checkModel(model);
  if (!problem.empty())
    return module.emitError("the exported model fails onnx.checker: ")
           << problem;
  // Atomically (temporary file, fsync, rename): a crash leaves the old
  // file or the whole new one.
  problem = writeModel(model, path.str(), options.externalData);
  if (!problem.empty())
    return module.emitError(problem);
  return success();
}
