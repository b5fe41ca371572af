//===- CudaEmitter.cpp - kernel.fusion regions to CUDA C++ ----------------===//
//
// Each `kernel.fusion` region of a function (after --loom-fusion) becomes
// CUDA C++ kernels and cuBLASLt calls:
//
// * a "map" kernel computes each element of its outputs on its own, in a
//   grid-stride loop (4 elements per iteration with vector loads and
//   stores when the outputs are contiguous and a multiple of 4 long).
//   Every graph op is an expression evaluated at an index: elementwise ops
//   with NumPy broadcasting, data movement (reshape, transpose, slice,
//   concat, pad, gather, ...) as index arithmetic, and reductions, pooling,
//   softmax and norms as loops over the reduced elements;
// * a "row" kernel serves a reduction, softmax or layer norm whose
//   reduced dims include the last one: one block per row, its threads
//   striding over the row, combined with warp shuffles and shared memory
//   (online max/sum for softmax, Welford for layer norm), then the
//   region's outputs written in the same kernel;
// * a matmul is a cuBLASLt call (bias + ReLU / tanh-GELU as its epilogue
//   when that is all the region adds), followed by a map kernel for any
//   other epilogue.
//
// An op the emitter does not cover is an error naming the op and its
// location, never a kernel that computes something else.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/CudaEmitter.h"

#include "compiler/codegen/cuda/CudaPrelude.h"
#include "dialects/graph/GraphOps.h"
#include "dialects/graph/LocationString.h"
#include "dialects/kernel/KernelOps.h"
#include "passes/MemoryPlan/ArenaPlanner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace loom::graph;

namespace loom::codegen::cuda {
namespace {

using Idx = SmallVector<std::string, 4>;

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
Type elemOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}
int64_t numel(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The C++ type a value computes in.
std::string computeType(Type t) {
  if (t.isF16() || t.isBF16() || t.isF32())
    return "float";
  if (t.isF64())
    return "double";
  if (t.isInteger(1))
    return "bool";
  if (t.isInteger(64))
    return "loom::i64";
  return "int";
}

/// The C++ type a value is stored in.
std::string storageType(Type t) {
  if (t.isF16())
    return "__half";
  if (t.isBF16())
    return "__nv_bfloat16";
  if (t.isF32())
    return "float";
  if (t.isF64())
    return "double";
  if (t.isInteger(1))
    return "bool";
  if (t.isInteger(8))
    return "signed char";
  if (t.isInteger(64))
    return "loom::i64";
  return "int";
}

int64_t storageBytes(Type t) {
  if (t.isInteger(1))
    return 1;
  return t.getIntOrFloatBitWidth() / 8;
}

bool supportedElement(Type t) {
  return t.isF16() || t.isBF16() || t.isF32() || t.isF64() || t.isInteger(1) ||
         t.isInteger(8) || t.isInteger(32) || t.isInteger(64);
}

/// A literal of `value` in compute type `t`.
std::string literal(double value, Type t) {
  std::string ct = computeType(t);
  if (ct == "bool")
    return value != 0 ? "true" : "false";
  if (ct == "int" || ct == "loom::i64") {
    if (value >= 9.2e18)
      return "9223372036854775807LL";
    if (value <= -9.2e18)
      return "(-9223372036854775807LL - 1)";
    return std::to_string(static_cast<long long>(value)) +
           (ct == "int" ? "" : "LL");
  }
  bool f32 = ct == "float";
  if (std::isnan(value))
    return f32 ? "__int_as_float(0x7fc00000)"
               : "__longlong_as_double(0x7ff8000000000000LL)";
  if (std::isinf(value)) {
    std::string inf = f32 ? "__int_as_float(0x7f800000)"
                          : "__longlong_as_double(0x7ff0000000000000LL)";
    return value < 0 ? "(-" + inf + ")" : inf;
  }
  char buf[64];
  if (f32)
    std::snprintf(buf, sizeof(buf), "%.9gf", static_cast<float>(value));
  else
    std::snprintf(buf, sizeof(buf), "%.17g", value);
  std::string s = buf;
  // "1f" is not a float literal: make it "1.f".
  if (s.find_first_of(".eEn") == std::string::npos) {
    if (f32)
      s.insert(s.size() - 1, ".");
    else
      s += ".0";
  }
  return s;
}

/// The value of element `i` of a constant as a double.
double elementAsDouble(ElementsAttr attr, int64_t i) {
  Type t = attr.getElementType();
  auto values = attr.getValues<Attribute>();
  Attribute a = values[i];
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValueAsDouble();
  if (auto n = dyn_cast<IntegerAttr>(a))
    return t.isInteger(1) ? (n.getValue().isZero() ? 0 : 1)
                          : static_cast<double>(n.getValue().getSExtValue());
  if (auto b = dyn_cast<BoolAttr>(a))
    return b.getValue() ? 1 : 0;
  return 0;
}

/// The multi-index of `idx` (the index of a value of shape `from`) in an
/// operand of shape `to` under NumPy broadcasting.
Idx broadcastIdx(const Idx &idx, ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  Idx out;
  size_t lead = from.size() - to.size();
  for (size_t k = 0; k < to.size(); ++k)
    out.push_back(to[k] == 1 ? "0" : idx[k + lead]);
  return out;
}

/// The row-major linear offset of `idx` in `shape`.
std::string linearize(const Idx &idx, ArrayRef<int64_t> shape) {
  std::string out;
  int64_t stride = 1;
  for (int64_t k = static_cast<int64_t>(shape.size()) - 1; k >= 0; --k) {
    if (shape[k] != 1 && idx[k] != "0") {
      std::string term =
          stride == 1 ? idx[k] : idx[k] + " * " + std::to_string(stride);
      out = out.empty() ? term : term + " + " + out;
    }
    stride *= shape[k];
  }
  return out.empty() ? "0" : out;
}

struct RegionEmitter;

/// The text of one kernel being built: its parameters, its body, and the
/// values it has computed (per scope, so that a value computed inside a
/// loop or branch is not used outside it).
class KernelText {
public:
  KernelText(RegionEmitter &region, std::string name)
      : region(region), name(std::move(name)) {}

  RegionEmitter &region;
  std::string name;
  std::string body;
  int depth = 1;
  int counter = 0;
  SmallVector<std::pair<std::string, int>> params; // (declaration, buffer)
  DenseMap<int, std::string> paramOfBuffer;
  SmallVector<std::map<std::string, std::string>> scopes{{}};
  /// Values the kernel computes some other way (a row statistic, a vector
  /// lane, the matmul result read back): called with the index.
  DenseMap<Value, std::function<FailureOr<std::string>(const Idx &)>> overrides;
  /// Set when an override could not serve the index it was asked for (a
  /// row kernel asked for another row's statistic).
  bool refused = false;
  /// In a vectorized loop: the index of the lane being computed.
  Idx laneIdx;

  void line(const Twine &text) {
    body.append(2 * depth, ' ');
    body += text.str();
    body += "\n";
  }
  void open(const Twine &text) {
    line(text + " {");
    ++depth;
    scopes.emplace_back();
  }
  void close(StringRef suffix = "") {
    --depth;
    scopes.pop_back();
    line("}" + suffix.str());
  }
  std::string fresh(StringRef prefix = "v") {
    return prefix.str() + std::to_string(counter++);
  }
  std::string let(StringRef type, const Twine &expr, StringRef prefix = "v") {
    std::string v = fresh(prefix);
    line(type + " " + v + " = " + expr + ";");
    return v;
  }
  /// The pointer parameter for buffer `buffer` of element type `t`.
  std::string param(int buffer, Type t, bool output) {
    auto it = paramOfBuffer.find(buffer);
    if (it != paramOfBuffer.end())
      return it->second;
    std::string p = (output ? "out" : "in") + std::to_string(params.size());
    std::string decl = (output ? "" : "const ") + storageType(t) + " *" +
                       (output ? "" : "__restrict__ ") + p;
    params.push_back({decl, buffer});
    paramOfBuffer[buffer] = p;
    return p;
  }
  /// Row-major div/mod of `flat` over `shape`: one index per dim ("0" for
  /// size-1 dims).
  Idx decompose(StringRef flat, ArrayRef<int64_t> shape, StringRef prefix) {
    Idx out(shape.size(), "0");
    int64_t stride = 1;
    for (int64_t k = static_cast<int64_t>(shape.size()) - 1; k >= 0; --k) {
      if (shape[k] != 1) {
        std::string e = flat.str();
        if (stride != 1)
          e = "(" + e + ") / " + std::to_string(stride);
        if (stride * shape[k] != numel(shape))
          e = "(" + e + ") % " + std::to_string(shape[k]);
        out[k] = let("loom::i64", e, prefix);
      }
      stride *= shape[k];
    }
    return out;
  }

  FailureOr<std::string> eval(Value v, const Idx &idx);

  std::string definition() const {
    std::string s = "LOOM_KERNEL void " + name + "(";
    for (size_t i = 0; i < params.size(); ++i)
      s += (i ? ", " : "") + params[i].first;
    return s + ") {\n" + body + "}\n";
  }

private:
  FailureOr<std::string> evalOp(Operation *op, Value v, const Idx &idx);
  FailureOr<std::string> evalReduceLoop(Operation *op, Value x,
                                        ArrayRef<int64_t> axes, bool keepdims,
                                        const Idx &idx, StringRef kind);
};

/// What a region's emission reads and writes.
struct RegionEmitter {
  kernel::FusionOp region;
  /// The buffer of each region operand and result.
  SmallVector<int> operandBuffers, resultBuffers;
  std::function<int(Type, ArrayRef<int64_t>, StringRef)> newScratch;
  Program &program;
  std::string &constants;
  int kernelCounter = 0;

  RegionEmitter(kernel::FusionOp region, Program &program,
                std::string &constants)
      : region(region), program(program), constants(constants) {}

  std::string description() {
    std::string s = region.getName().str() + " (" +
                    kernel::stringifyFusionKind(region.getKind()).str() + "):";
    for (Operation &op : region.getBody().front().without_terminator())
      s += " " + op.getName().getStringRef().drop_front(6).str();
    std::string loc = locationString(region.getLoc());
    if (!loc.empty())
      s += " @ " + loc;
    return s;
  }

  std::string kernelName() {
    std::string n = region.getName().str();
    if (kernelCounter > 0)
      n += "_" + std::to_string(kernelCounter);
    ++kernelCounter;
    return n;
  }

  int bufferOfArg(BlockArgument arg) {
    return operandBuffers[arg.getArgNumber()];
  }

  /// A small constant of the region as a __device__ array.
  std::string constantArray(graph::ConstantOp c) {
    auto it = constantNames.find(c);
    if (it != constantNames.end())
      return it->second;
    auto value = cast<ElementsAttr>(c.getValue());
    Type t = value.getElementType();
    std::string name =
        region.getName().str() + "_c" + std::to_string(constantNames.size());
    std::string text = "__device__ const " + storageType(t) + " " + name + "[" +
                       std::to_string(value.getNumElements()) + "] = {";
    for (int64_t i = 0; i < value.getNumElements(); ++i) {
      double d = elementAsDouble(value, i);
      std::string lit = literal(d, t);
      if (t.isF16())
        lit = "__half_raw{" +
              std::to_string(APFloat(static_cast<float>(d))
                                 .bitcastToAPInt()
                                 .getZExtValue()) +
              "}";
      if (t.isF16() || t.isBF16()) {
        // 16-bit storage: the exact bits of the attribute.
        auto f = cast<FloatAttr>(value.getValues<Attribute>()[i]);
        uint64_t bits = f.getValue().bitcastToAPInt().getZExtValue();
        lit = std::string(t.isF16() ? "__half_raw" : "__nv_bfloat16_raw") +
              "{" + std::to_string(bits) + "}";
      }
      text += (i ? ", " : "") + lit;
    }
    constants += text + "};\n";
    constantNames[c] = name;
    return name;
  }

  void addKernel(KernelText &k, int64_t grid, int64_t block,
                 StringRef what = "") {
    Kernel kernel;
    kernel.name = k.name;
    kernel.description = description();
    if (!what.empty())
      kernel.description += " [" + what.str() + "]";
    kernel.grid = std::max<int64_t>(1, grid);
    kernel.block = block;
    for (auto &p : k.params)
      kernel.args.push_back(p.second);
    program.source += "\n// " + kernel.description + "\n// launch: grid " +
                      std::to_string(kernel.grid) + ", block " +
                      std::to_string(block) + "\n" + k.definition();
    program.steps.push_back(
        {Step::Launch, static_cast<int>(program.kernels.size())});
    program.kernels.push_back(std::move(kernel));
  }

  LogicalResult emit();
  /// A map kernel computing `values` into `buffers`; `readBack` values are
  /// read from their buffer instead of computed.
  LogicalResult emitMap(ArrayRef<Value> values, ArrayRef<int> buffers,
                        const DenseMap<Value, int> &readBack);
  LogicalResult emitMap(ArrayRef<Value> values, ArrayRef<int> buffers) {
    return emitMap(values, buffers, DenseMap<Value, int>());
  }

private:
  DenseMap<Operation *, std::string> constantNames;
  FailureOr<bool> emitRows(Operation *root);
  LogicalResult emitMatmul(graph::MatmulOp matmul);
  LogicalResult emitScatter(graph::ScatterElementsOp scatter);
};

//===----------------------------------------------------------------------===//
// Evaluation of a value at an index
//===----------------------------------------------------------------------===//

FailureOr<std::string> KernelText::eval(Value v, const Idx &idx) {
  std::string key = llvm::formatv("{0}", v.getAsOpaquePointer()).str();
  for (const std::string &i : idx)
    key += "," + i;
  for (auto &scope : llvm::reverse(scopes)) {
    auto it = scope.find(key);
    if (it != scope.end())
      return it->second;
  }
  auto over = overrides.find(v);
  FailureOr<std::string> result = failure();
  if (over != overrides.end()) {
    result = over->second(idx);
  } else if (auto arg = dyn_cast<BlockArgument>(v)) {
    int buffer = region.bufferOfArg(arg);
    std::string p = param(buffer, elemOf(v), false);
    result = let(computeType(elemOf(v)),
                 "loom::ld(" + p + "[" + linearize(idx, shapeOf(v)) + "])");
  } else {
    result = evalOp(v.getDefiningOp(), v, idx);
  }
  if (failed(result))
    return failure();
  scopes.back()[key] = *result;
  return result;
}

/// A reduction of `x` over `axes` evaluated at `idx` (an index of the
/// result) as a loop: "sum", "mean", "max", "min", "prod".
FailureOr<std::string> KernelText::evalReduceLoop(Operation *op, Value x,
                                                  ArrayRef<int64_t> axes,
                                                  bool keepdims, const Idx &idx,
                                                  StringRef kind) {
  ArrayRef<int64_t> xs = shapeOf(x);
  Type t = elemOf(op->getResult(0));
  std::string ct = computeType(t);
  SmallVector<int64_t> reduced;
  for (int64_t a : axes)
    reduced.push_back(xs[a]);
  int64_t r = numel(reduced);
  std::string init = kind == "sum" || kind == "mean" ? literal(0, t)
                     : kind == "prod"                ? literal(1, t)
                     : kind == "max"                 ? literal(-INFINITY, t)
                                                     : literal(INFINITY, t);
  if (ct != "float" && ct != "double" && (kind == "max" || kind == "min"))
    init = kind == "max" ? literal(-9.3e18, t) : literal(9.3e18, t);
  if (ct == "int" && (kind == "max" || kind == "min"))
    init = kind == "max" ? "(-2147483647 - 1)" : "2147483647";
  std::string acc = let(ct, init, "acc");
  std::string rv = fresh("r");
  open("for (loom::i64 " + rv + " = 0; " + rv + " < " + std::to_string(r) +
       "; ++" + rv + ")");
  Idx ri = decompose(rv, reduced, "q");
  Idx xi;
  size_t kept = 0, red = 0;
  for (int64_t d = 0; d < static_cast<int64_t>(xs.size()); ++d) {
    if (llvm::is_contained(axes, d)) {
      xi.push_back(ri[red++]);
      if (keepdims)
        ++kept;
    } else {
      xi.push_back(xs[d] == 1 ? "0" : idx[kept++]);
    }
  }
  FailureOr<std::string> e = eval(x, xi);
  if (failed(e))
    return failure();
  if (kind == "sum" || kind == "mean")
    line(acc + " += " + *e + ";");
  else if (kind == "prod")
    line(acc + " *= " + *e + ";");
  else
    line(acc + " = loom::" + kind.str() + "_(" + acc + ", " + *e + ");");
  close();
  if (kind == "mean")
    line(acc + " /= " + literal(static_cast<double>(r), t) + ";");
  return acc;
}

/// The op's result rounded as its 16-bit type says.
std::string rounded(KernelText &k, Type t, const std::string &expr) {
  if (t.isF16())
    return k.let("float", "loom::rnd_f16(" + expr + ")");
  if (t.isBF16())
    return k.let("float", "loom::rnd_bf16(" + expr + ")");
  return k.let(computeType(t), expr);
}

FailureOr<std::string> KernelText::evalOp(Operation *op, Value v,
                                          const Idx &idx) {
  if (!op)
    return failure();
  Type rt = elemOf(v);
  std::string ct = computeType(rt);
  ArrayRef<int64_t> rs = shapeOf(v);
  auto at = [&](Value operand) -> FailureOr<std::string> {
    return eval(operand, broadcastIdx(idx, rs, shapeOf(operand)));
  };
  auto unsupported = [&](StringRef why = "") -> FailureOr<std::string> {
    InFlightDiagnostic d = op->emitError("CUDA codegen: ")
                           << op->getName() << " is not supported yet";
    if (!why.empty())
      d << " (" << why << ")";
    d << " [" << locationString(op->getLoc()) << "]";
    return failure();
  };
  auto unary = [&](StringRef fn) -> FailureOr<std::string> {
    FailureOr<std::string> x = at(op->getOperand(0));
    if (failed(x))
      return failure();
    return rounded(*this, rt, "loom::" + fn.str() + "(" + *x + ")");
  };
  auto binary = [&](StringRef format) -> FailureOr<std::string> {
    FailureOr<std::string> a = at(op->getOperand(0));
    if (failed(a))
      return failure();
    FailureOr<std::string> b = at(op->getOperand(1));
    if (failed(b))
      return failure();
    return rounded(*this, rt, llvm::formatv(format.data(), *a, *b).str());
  };

  // Constants (small ones are cloned into regions).
  if (auto c = dyn_cast<graph::ConstantOp>(op)) {
    auto value = cast<ElementsAttr>(c.getValue());
    if (value.isSplat())
      return literal(elementAsDouble(value, 0), rt);
    std::string array = region.constantArray(c);
    return let(ct, "loom::ld(" + array + "[" + linearize(idx, rs) + "])");
  }
  // Elementwise unary.
  if (isa<NegOp>(op)) {
    FailureOr<std::string> x = at(op->getOperand(0));
    if (failed(x))
      return failure();
    return rounded(*this, rt, "-" + *x);
  }
  if (isa<ReluOp>(op)) {
    FailureOr<std::string> x = at(op->getOperand(0));
    if (failed(x))
      return failure();
    return let(ct, *x + " > " + literal(0, rt) + " ? " + *x + " : " +
                       literal(0, rt));
  }
  if (auto g = dyn_cast<GeluOp>(op))
    return unary(g.getApproximate() == GeluApproximation::tanh ? "gelu_tanh_"
                                                               : "gelu_");
  StringRef fn = TypeSwitch<Operation *, StringRef>(op)
                     .Case([](AbsOp) { return "abs_"; })
                     .Case([](ExpOp) { return "exp_"; })
                     .Case([](LogOp) { return "log_"; })
                     .Case([](SqrtOp) { return "sqrt_"; })
                     .Case([](RsqrtOp) { return "rsqrt_"; })
                     .Case([](TanhOp) { return "tanh_"; })
                     .Case([](CosOp) { return "cos_"; })
                     .Case([](SinOp) { return "sin_"; })
                     .Case([](SigmoidOp) { return "sigmoid_"; })
                     .Case([](ErfOp) { return "erf_"; })
                     .Case([](FloorOp) { return "floor_"; })
                     .Case([](CeilOp) { return "ceil_"; })
                     .Case([](RoundOp) { return "round_"; })
                     .Default([](Operation *) { return ""; });
  if (!fn.empty())
    return unary(fn);
  if (auto clamp = dyn_cast<ClampOp>(op)) {
    FailureOr<std::string> x = at(clamp.getX());
    if (failed(x))
      return failure();
    std::string e = *x;
    if (auto lo = clamp.getMin())
      e = "loom::max_(" + e + ", (" + ct + ")" +
          literal(lo->convertToDouble(), rt) + ")";
    if (auto hi = clamp.getMax())
      e = "loom::min_(" + e + ", (" + ct + ")" +
          literal(hi->convertToDouble(), rt) + ")";
    return rounded(*this, rt, e);
  }
  if (auto dropout = dyn_cast<DropoutOp>(op)) {
    if (dropout.getTraining())
      return unsupported("a training dropout's mask");
    return at(dropout.getX());
  }
  if (auto cast = dyn_cast<CastOp>(op)) {
    FailureOr<std::string> x = at(cast.getX());
    if (failed(x))
      return failure();
    Type from = elemOf(cast.getX());
    if (rt.isInteger(1))
      return let("bool", *x + " != 0");
    if (from.isInteger(1))
      return let(ct, "(" + ct + ")(" + *x + " ? 1 : 0)");
    return rounded(*this, rt, "(" + ct + ")(" + *x + ")");
  }
  // Elementwise binary (NumPy broadcasting).
  StringRef format = TypeSwitch<Operation *, StringRef>(op)
                         .Case([](AddOp) { return "{0} + {1}"; })
                         .Case([](SubOp) { return "{0} - {1}"; })
                         .Case([](MulOp) { return "{0} * {1}"; })
                         .Case([](DivOp) { return "loom::div_({0}, {1})"; })
                         .Case([](PowOp) { return "loom::pow_({0}, {1})"; })
                         .Case([](MaxOp) { return "loom::max_({0}, {1})"; })
                         .Case([](MinOp) { return "loom::min_({0}, {1})"; })
                         .Case([](RemOp) { return "loom::rem_({0}, {1})"; })
                         .Case([](ModOp) { return "loom::mod_({0}, {1})"; })
                         .Default([](Operation *) { return ""; });
  if (!format.empty())
    return binary(format);
  if (auto cmp = dyn_cast<CompareOp>(op)) {
    FailureOr<std::string> a = at(cmp.getLhs());
    if (failed(a))
      return failure();
    FailureOr<std::string> b = at(cmp.getRhs());
    if (failed(b))
      return failure();
    StringRef rel;
    switch (cmp.getDirection()) {
    case CompareDirection::eq:
      rel = "==";
      break;
    case CompareDirection::ne:
      rel = "!=";
      break;
    case CompareDirection::lt:
      rel = "<";
      break;
    case CompareDirection::le:
      rel = "<=";
      break;
    case CompareDirection::gt:
      rel = ">";
      break;
    case CompareDirection::ge:
      rel = ">=";
      break;
    }
    return let("bool", *a + " " + rel + " " + *b);
  }
  if (auto where = dyn_cast<WhereOp>(op)) {
    FailureOr<std::string> c = at(where.getCond());
    if (failed(c))
      return failure();
    FailureOr<std::string> x = at(where.getX());
    if (failed(x))
      return failure();
    FailureOr<std::string> y = at(where.getY());
    if (failed(y))
      return failure();
    return let(ct, *c + " ? " + *x + " : " + *y);
  }
  if (auto b = dyn_cast<BroadcastToOp>(op))
    return at(b.getX());
  if (auto iota = dyn_cast<IotaOp>(op))
    return let(ct, "(" + ct + ")" + idx[iota.getAxis()]);
  if (auto fill = dyn_cast<FillLikeOp>(op)) {
    Attribute a = fill.getValue();
    double d = 0;
    if (auto f = dyn_cast<FloatAttr>(a))
      d = f.getValueAsDouble();
    else if (auto n = dyn_cast<IntegerAttr>(a))
      d = rt.isInteger(1) ? !n.getValue().isZero()
                          : static_cast<double>(n.getValue().getSExtValue());
    return literal(d, rt);
  }
  if (auto bn = dyn_cast<BatchNormOp>(op)) {
    Idx c{idx.size() > 1 ? idx[1] : "0"};
    FailureOr<std::string> x = at(bn.getX());
    FailureOr<std::string> s = eval(bn.getScale(), c);
    FailureOr<std::string> b = eval(bn.getBias(), c);
    FailureOr<std::string> m = eval(bn.getMean(), c);
    FailureOr<std::string> var = eval(bn.getVariance(), c);
    if (failed(x) || failed(s) || failed(b) || failed(m) || failed(var))
      return failure();
    return rounded(*this, rt,
                   "(" + *x + " - " + *m + ") / loom::sqrt_(" + *var + " + " +
                       literal(bn.getEpsilon().convertToDouble(), rt) + ") * " +
                       *s + " + " + *b);
  }
  // Data movement as index arithmetic.
  if (isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>(op)) {
    Value x = op->getOperand(0);
    ArrayRef<int64_t> xs = shapeOf(x);
    // Dims other than size-1 ones in the same order: map them directly.
    SmallVector<int64_t> a, b;
    for (int64_t d : rs)
      if (d != 1)
        a.push_back(d);
    for (int64_t d : xs)
      if (d != 1)
        b.push_back(d);
    if (a == b) {
      Idx big;
      for (size_t k = 0; k < rs.size(); ++k)
        if (rs[k] != 1)
          big.push_back(idx[k]);
      Idx xi;
      size_t j = 0;
      for (int64_t d : xs)
        xi.push_back(d == 1 ? "0" : big[j++]);
      return eval(x, xi);
    }
    std::string flat = let("loom::i64", linearize(idx, rs), "f");
    return eval(x, decompose(flat, xs, "u"));
  }
  if (auto t = dyn_cast<TransposeOp>(op)) {
    Idx xi(idx.size());
    for (auto [i, p] : llvm::enumerate(t.getPerm()))
      xi[p] = idx[i];
    return eval(t.getX(), xi);
  }
  if (auto s = dyn_cast<SliceOp>(op)) {
    ArrayRef<int64_t> xs = shapeOf(s.getX());
    Idx xi;
    for (size_t d = 0; d < xs.size(); ++d) {
      int64_t dim = xs[d], step = s.getSteps()[d], start = s.getStarts()[d];
      if (start < 0)
        start = start + dim;
      start = step > 0 ? std::clamp<int64_t>(start, 0, dim)
                       : std::clamp<int64_t>(start, 0, dim - 1);
      if (xs[d] == 1) {
        xi.push_back("0");
        continue;
      }
      std::string e = idx[d];
      if (step != 1)
        e = "(" + e + ") * " + std::to_string(step);
      if (start != 0)
        e = std::to_string(start) + " + " + e;
      xi.push_back(let("loom::i64", e, "s"));
    }
    return eval(s.getX(), xi);
  }
  if (auto c = dyn_cast<ConcatOp>(op)) {
    int64_t axis = c.getAxis();
    std::string out = fresh();
    line(ct + " " + out + ";");
    int64_t offset = 0;
    auto inputs = c.getInputs();
    for (auto [i, input] : llvm::enumerate(inputs)) {
      int64_t size = shapeOf(input)[axis];
      if (size == 0)
        continue;
      bool last = i + 1 == inputs.size();
      std::string cond = idx[axis] + " < " + std::to_string(offset + size);
      if (offset == 0)
        open("if (" + cond + ")");
      else if (!last)
        open("else if (" + cond + ")");
      else
        open("else");
      Idx xi = idx;
      if (offset != 0)
        xi[axis] =
            let("loom::i64", idx[axis] + " - " + std::to_string(offset), "k");
      FailureOr<std::string> e = eval(input, xi);
      if (failed(e))
        return failure();
      line(out + " = " + *e + ";");
      close();
      offset += size;
    }
    return out;
  }
  if (auto pad = dyn_cast<PadOp>(op)) {
    ArrayRef<int64_t> xs = shapeOf(pad.getX());
    ArrayRef<int64_t> pads = pad.getPads();
    size_t rank = xs.size();
    Idx xi;
    std::string inside;
    for (size_t d = 0; d < rank; ++d) {
      std::string j =
          pads[d]
              ? let("loom::i64", idx[d] + " - " + std::to_string(pads[d]), "p")
              : idx[d];
      std::string n = std::to_string(xs[d]);
      switch (pad.getMode()) {
      case PadMode::constant:
        if (pads[d] || pads[d + rank])
          inside += std::string(inside.empty() ? "" : " && ") + "0 <= " + j +
                    " && " + j + " < " + n;
        break;
      case PadMode::reflect:
        j = let("loom::i64", j + " < 0 ? -" + j + " : " + j, "p");
        j = let("loom::i64",
                j + " >= " + n + " ? 2 * (" + n + " - 1) - " + j + " : " + j,
                "p");
        break;
      case PadMode::edge:
        j = let("loom::i64",
                j + " < 0 ? 0 : (" + j + " >= " + n + " ? " + n +
                    " - 1 : " + j + ")",
                "p");
        break;
      }
      xi.push_back(xs[d] == 1 && pad.getMode() != PadMode::constant ? "0" : j);
    }
    if (inside.empty())
      return eval(pad.getX(), xi);
    std::string out =
        let(ct, literal(pad.getValue().convertToDouble(), rt), "v");
    open("if (" + inside + ")");
    FailureOr<std::string> e = eval(pad.getX(), xi);
    if (failed(e))
      return failure();
    line(out + " = " + *e + ";");
    close();
    return out;
  }
  if (auto g = dyn_cast<GatherOp>(op)) {
    int64_t axis = g.getAxis();
    ArrayRef<int64_t> is = shapeOf(g.getIndices());
    Idx ii(idx.begin() + axis, idx.begin() + axis + is.size());
    FailureOr<std::string> k = eval(g.getIndices(), ii);
    if (failed(k))
      return failure();
    Idx xi(idx.begin(), idx.begin() + axis);
    xi.push_back(let("loom::i64",
                     "loom::index_(" + *k + ", " +
                         std::to_string(shapeOf(g.getData())[axis]) + ")",
                     "k"));
    xi.append(idx.begin() + axis + is.size(), idx.end());
    return eval(g.getData(), xi);
  }
  if (auto e = dyn_cast<EmbeddingOp>(op)) {
    Idx ii(idx.begin(), idx.end() - 1);
    FailureOr<std::string> k = eval(e.getIds(), ii);
    if (failed(k))
      return failure();
    std::string row = let("loom::i64",
                          "loom::index_(" + *k + ", " +
                              std::to_string(shapeOf(e.getTable())[0]) + ")",
                          "k");
    return eval(e.getTable(), {row, idx.back()});
  }
  if (auto g = dyn_cast<GatherElementsOp>(op)) {
    FailureOr<std::string> k = eval(g.getIndices(), idx);
    if (failed(k))
      return failure();
    Idx xi = idx;
    int64_t axis = g.getAxis();
    ArrayRef<int64_t> ds = shapeOf(g.getData());
    xi[axis] =
        let("loom::i64",
            "loom::index_(" + *k + ", " + std::to_string(ds[axis]) + ")", "k");
    for (size_t d = 0; d < ds.size(); ++d)
      if (ds[d] == 1)
        xi[d] = "0";
    return eval(g.getData(), xi);
  }
  if (auto t = dyn_cast<TriluOp>(op)) {
    FailureOr<std::string> x = eval(t.getX(), idx);
    if (failed(x))
      return failure();
    std::string r = idx[idx.size() - 2], c = idx.back();
    std::string keep = "(" + c + " - " + r + (t.getUpper() ? " >= " : " <= ") +
                       std::to_string(t.getK()) + ")";
    return let(ct, keep + " ? " + *x + " : " + literal(0, rt));
  }
  // Reductions as loops (the row kernels serve the common case).
  auto reduceKind = TypeSwitch<Operation *, StringRef>(op)
                        .Case([](ReduceSumOp) { return "sum"; })
                        .Case([](ReduceMeanOp) { return "mean"; })
                        .Case([](ReduceMaxOp) { return "max"; })
                        .Case([](ReduceMinOp) { return "min"; })
                        .Case([](ReduceProdOp) { return "prod"; })
                        .Default([](Operation *) { return ""; });
  if (!reduceKind.empty()) {
    auto axes = cast<DenseI64ArrayAttr>(op->getAttr("axes")).asArrayRef();
    bool keepdims = op->hasAttr("keepdims");
    return evalReduceLoop(op, op->getOperand(0), axes, keepdims, idx,
                          reduceKind);
  }
  if (auto gap = dyn_cast<GlobalAvgPoolOp>(op)) {
    SmallVector<int64_t> axes;
    for (int64_t d = 2; d < static_cast<int64_t>(rs.size()); ++d)
      axes.push_back(d);
    return evalReduceLoop(op, gap.getX(), axes, true, idx, "mean");
  }
  if (isa<ArgMaxOp, ArgMinOp>(op)) {
    bool isMax = isa<ArgMaxOp>(op);
    Value x = op->getOperand(0);
    int64_t axis = cast<IntegerAttr>(op->getAttr("axis")).getInt();
    bool keepdims = op->hasAttr("keepdims");
    bool last = op->hasAttr("select_last_index");
    ArrayRef<int64_t> xs = shapeOf(x);
    Type xt = elemOf(x);
    std::string best = fresh("best"), at_ = fresh("arg");
    line(computeType(xt) + " " + best + " = " + literal(0, xt) + ";");
    line("loom::i64 " + at_ + " = 0;");
    std::string rv = fresh("r");
    open("for (loom::i64 " + rv + " = 0; " + rv + " < " +
         std::to_string(xs[axis]) + "; ++" + rv + ")");
    Idx xi;
    size_t kept = 0;
    for (int64_t d = 0; d < static_cast<int64_t>(xs.size()); ++d) {
      if (d == axis) {
        xi.push_back(xs[d] == 1 ? "0" : rv);
        if (keepdims)
          ++kept;
      } else {
        xi.push_back(xs[d] == 1 ? "0" : idx[kept++]);
      }
    }
    FailureOr<std::string> e = eval(x, xi);
    if (failed(e))
      return failure();
    std::string better =
        *e + (isMax ? " >" : " <") + (last ? "= " : " ") + best;
    line("if (" + rv + " == 0 || " + better + ") { " + best + " = " + *e +
         "; " + at_ + " = " + rv + "; }");
    close();
    return let(ct, "(" + ct + ")" + at_);
  }
  if (isa<SoftmaxOp, LogSoftmaxOp>(op)) {
    Value x = op->getOperand(0);
    int64_t axis = cast<IntegerAttr>(op->getAttr("axis")).getInt();
    int64_t n = rs[axis];
    std::string m = let(ct, literal(-INFINITY, rt), "m");
    std::string s = let(ct, literal(0, rt), "s");
    for (int pass = 0; pass < 2; ++pass) {
      std::string rv = fresh("r");
      open("for (loom::i64 " + rv + " = 0; " + rv + " < " + std::to_string(n) +
           "; ++" + rv + ")");
      Idx xi = idx;
      xi[axis] = n == 1 ? "0" : rv;
      FailureOr<std::string> e = eval(x, xi);
      if (failed(e))
        return failure();
      if (pass == 0)
        line(m + " = loom::max_(" + m + ", " + *e + ");");
      else
        line(s + " += loom::exp_(" + *e + " - " + m + ");");
      close();
    }
    FailureOr<std::string> e = eval(x, idx);
    if (failed(e))
      return failure();
    if (isa<SoftmaxOp>(op))
      return rounded(*this, rt, "loom::exp_(" + *e + " - " + m + ") / " + s);
    return rounded(*this, rt, *e + " - " + m + " - loom::log_(" + s + ")");
  }
  if (auto ln = dyn_cast<LayerNormOp>(op)) {
    int64_t axis = ln.getAxis();
    SmallVector<int64_t> inner(rs.begin() + axis, rs.end());
    int64_t n = numel(inner);
    std::string mean = let(ct, literal(0, rt), "mean");
    std::string var = let(ct, literal(0, rt), "var");
    for (int pass = 0; pass < 2; ++pass) {
      std::string rv = fresh("r");
      open("for (loom::i64 " + rv + " = 0; " + rv + " < " + std::to_string(n) +
           "; ++" + rv + ")");
      Idx ri = decompose(rv, inner, "q");
      Idx xi(idx.begin(), idx.begin() + axis);
      xi.append(ri.begin(), ri.end());
      FailureOr<std::string> e = eval(ln.getX(), xi);
      if (failed(e))
        return failure();
      if (pass == 0)
        line(mean + " += " + *e + ";");
      else
        line(var + " += (" + *e + " - " + mean + ") * (" + *e + " - " + mean +
             ");");
      close();
      if (pass == 0)
        line(mean + " /= " + literal(static_cast<double>(n), rt) + ";");
      else
        line(var + " /= " + literal(static_cast<double>(n), rt) + ";");
    }
    Idx ti(idx.begin() + axis, idx.end());
    FailureOr<std::string> x = eval(ln.getX(), idx);
    FailureOr<std::string> g = eval(ln.getScale(), ti);
    if (failed(x) || failed(g))
      return failure();
    std::string e = "(" + *x + " - " + mean + ") * loom::rsqrt_(" + var +
                    " + " + literal(ln.getEpsilon().convertToDouble(), rt) +
                    ") * " + *g;
    if (ln.getBias()) {
      FailureOr<std::string> b = eval(ln.getBias(), ti);
      if (failed(b))
        return failure();
      e += " + " + *b;
    }
    return rounded(*this, rt, e);
  }
  if (isa<MaxPoolOp, AvgPoolOp>(op)) {
    bool isMax = isa<MaxPoolOp>(op);
    Value x = op->getOperand(0);
    ArrayRef<int64_t> xs = shapeOf(x);
    auto kernel = cast<DenseI64ArrayAttr>(op->getAttr("kernel")).asArrayRef();
    auto strides = cast<DenseI64ArrayAttr>(op->getAttr("strides")).asArrayRef();
    auto padding = cast<DenseI64ArrayAttr>(op->getAttr("padding")).asArrayRef();
    SmallVector<int64_t> dil(kernel.size(), 1);
    if (auto d = op->getAttrOfType<DenseI64ArrayAttr>("dilations"))
      dil.assign(d.asArrayRef().begin(), d.asArrayRef().end());
    bool includePad = op->hasAttr("count_include_pad");
    size_t sp = kernel.size();
    std::string acc =
        let(ct, isMax ? literal(-INFINITY, rt) : literal(0, rt), "acc");
    if (ct != "float" && ct != "double" && isMax)
      acc = let(ct, literal(-9.3e18, rt), "acc");
    std::string count = let("loom::i64", "0", "cnt");
    std::string kv = fresh("w");
    open("for (loom::i64 " + kv + " = 0; " + kv + " < " +
         std::to_string(numel(kernel)) + "; ++" + kv + ")");
    Idx ki = decompose(kv, kernel, "kw");
    Idx xi(idx.begin(), idx.begin() + 2);
    std::string valid, padded;
    for (size_t d = 0; d < sp; ++d) {
      std::string pos = let("loom::i64",
                            idx[2 + d] + " * " + std::to_string(strides[d]) +
                                " - " + std::to_string(padding[d]) + " + " +
                                ki[d] + " * " + std::to_string(dil[d]),
                            "pos");
      std::string n = std::to_string(xs[2 + d]);
      valid += std::string(valid.empty() ? "" : " && ") + "0 <= " + pos +
               " && " + pos + " < " + n;
      padded += std::string(padded.empty() ? "" : " && ") + pos + " < " + n +
                " + " + std::to_string(padding[sp + d]);
      xi.push_back(pos);
    }
    if (!isMax && includePad)
      line("if (" + padded + ") ++" + count + ";");
    open("if (" + valid + ")");
    FailureOr<std::string> e = eval(x, xi);
    if (failed(e))
      return failure();
    if (isMax)
      line(acc + " = loom::max_(" + acc + ", " + *e + ");");
    else
      line(acc + " += " + *e + ";");
    if (!isMax && !includePad)
      line("++" + count + ";");
    close();
    close();
    if (isMax)
      return acc;
    return rounded(*this, rt,
                   acc + " / (" + ct + ")(" + count + " > 0 ? " + count +
                       " : 1)");
  }
  if (auto cs = dyn_cast<CumSumOp>(op)) {
    int64_t axis = cs.getAxis();
    int64_t n = rs[axis];
    std::string acc = let(ct, literal(0, rt), "acc");
    std::string rv = fresh("r");
    std::string lo = "0", hi = idx[axis] + (cs.getExclusive() ? "" : " + 1");
    if (cs.getReverse()) {
      lo = idx[axis] + (cs.getExclusive() ? " + 1" : "");
      hi = std::to_string(n);
    }
    open("for (loom::i64 " + rv + " = " + lo + "; " + rv + " < " + hi + "; ++" +
         rv + ")");
    Idx xi = idx;
    xi[axis] = rv;
    FailureOr<std::string> e = eval(cs.getX(), xi);
    if (failed(e))
      return failure();
    line(acc + " += " + *e + ";");
    close();
    return rounded(*this, rt, acc);
  }
  if (auto mse = dyn_cast<MseLossOp>(op)) {
    if (mse.getReduction() == Reduction::none) {
      FailureOr<std::string> p = eval(mse.getPred(), idx);
      FailureOr<std::string> t = eval(mse.getTarget(), idx);
      if (failed(p) || failed(t))
        return failure();
      return rounded(*this, rt,
                     "(" + *p + " - " + *t + ") * (" + *p + " - " + *t + ")");
    }
    ArrayRef<int64_t> ps = shapeOf(mse.getPred());
    std::string acc = let(ct, literal(0, rt), "acc");
    std::string rv = fresh("r");
    open("for (loom::i64 " + rv + " = 0; " + rv + " < " +
         std::to_string(numel(ps)) + "; ++" + rv + ")");
    Idx pi = decompose(rv, ps, "q");
    FailureOr<std::string> p = eval(mse.getPred(), pi);
    FailureOr<std::string> t = eval(mse.getTarget(), pi);
    if (failed(p) || failed(t))
      return failure();
    line(acc + " += (" + *p + " - " + *t + ") * (" + *p + " - " + *t + ");");
    close();
    if (mse.getReduction() == Reduction::mean)
      line(acc + " /= " + literal(static_cast<double>(numel(ps)), rt) + ";");
    return rounded(*this, rt, acc);
  }
  if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
    // Per row: logsumexp(logits) - logits[label]; ignored labels give 0
    // and leave the mean's count.
    ArrayRef<int64_t> ls = shapeOf(ce.getLogits());
    int64_t classes = ls.back();
    SmallVector<int64_t> rowShape(ls.begin(), ls.end() - 1);
    bool none = ce.getReduction() == Reduction::none;
    std::string acc = let(ct, literal(0, rt), "acc");
    std::string count = let(ct, literal(0, rt), "cnt");
    Idx row = idx;
    std::string rv;
    if (!none) {
      rv = fresh("row");
      open("for (loom::i64 " + rv + " = 0; " + rv + " < " +
           std::to_string(numel(rowShape)) + "; ++" + rv + ")");
      row = decompose(rv, rowShape, "q");
    }
    FailureOr<std::string> label = eval(ce.getLabels(), row);
    if (failed(label))
      return failure();
    std::string skip = "false";
    if (auto ignore = ce.getIgnoreIndex())
      skip = *label + " == " +
             literal(static_cast<double>(static_cast<int64_t>(*ignore)),
                     elemOf(ce.getLabels()));
    open("if (!(" + skip + "))");
    std::string m = let(ct, literal(-INFINITY, rt), "m");
    std::string s = let(ct, literal(0, rt), "s");
    for (int pass = 0; pass < 2; ++pass) {
      std::string cv = fresh("c");
      open("for (loom::i64 " + cv + " = 0; " + cv + " < " +
           std::to_string(classes) + "; ++" + cv + ")");
      Idx li = row;
      li.push_back(classes == 1 ? "0" : cv);
      FailureOr<std::string> e = eval(ce.getLogits(), li);
      if (failed(e))
        return failure();
      if (pass == 0)
        line(m + " = loom::max_(" + m + ", " + *e + ");");
      else
        line(s + " += loom::exp_(" + *e + " - " + m + ");");
      close();
    }
    Idx li = row;
    li.push_back(let(
        "loom::i64",
        "loom::index_(" + *label + ", " + std::to_string(classes) + ")", "k"));
    FailureOr<std::string> picked = eval(ce.getLogits(), li);
    if (failed(picked))
      return failure();
    line(acc + " += " + m + " + loom::log_(" + s + ") - " + *picked + ";");
    line(count + " += 1;");
    close();
    if (!none)
      close();
    if (ce.getReduction() == Reduction::mean)
      line(acc + " = " + count + " > 0 ? " + acc + " / " + count + " : " +
           literal(NAN, rt) + ";");
    return rounded(*this, rt, acc);
  }
  if (isa<MatmulOp>(op))
    return unsupported("a matmul is a cuBLASLt call and fuses into no "
                       "other kernel");
  if (isa<ConvOp>(op))
    return unsupported("convolution (im2col + cuBLASLt) is not emitted yet");
  if (op->getName().getStringRef().starts_with("graph.dynamic_") ||
      isa<RangeOp>(op))
    return unsupported("run-time shape parameters");
  return unsupported();
}

//===----------------------------------------------------------------------===//
// Kernels of a region
//===----------------------------------------------------------------------===//

/// Whether `v` is computed from `root`'s results (inside the region).
bool dependsOn(Value v, Operation *root) {
  SmallVector<Value> work{v};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !seen.insert(def).second)
      continue;
    if (def == root)
      return true;
    work.append(def->operand_begin(), def->operand_end());
  }
  return false;
}

/// Block arguments of the region that `values` read.
SmallVector<BlockArgument> argsRead(ArrayRef<Value> values) {
  SmallVector<BlockArgument> args;
  SmallVector<Value> work(values.begin(), values.end());
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (!llvm::is_contained(args, arg))
        args.push_back(arg);
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def && seen.insert(def).second)
      work.append(def->operand_begin(), def->operand_end());
  }
  llvm::sort(args, [](BlockArgument a, BlockArgument b) {
    return a.getArgNumber() < b.getArgNumber();
  });
  return args;
}

constexpr int64_t kBlock = 256;
constexpr int64_t kMaxGrid = 4096;

int64_t gridFor(int64_t iterations, int64_t block) {
  return std::clamp<int64_t>((iterations + block - 1) / block, 1, kMaxGrid);
}

LogicalResult RegionEmitter::emitMap(ArrayRef<Value> values,
                                     ArrayRef<int> buffers,
                                     const DenseMap<Value, int> &readBack) {
  // Outputs of one shape share a grid-stride loop; shapes in order.
  SmallVector<SmallVector<int64_t>> shapes;
  for (Value v : values) {
    SmallVector<int64_t> s(shapeOf(v));
    if (!llvm::is_contained(shapes, s))
      shapes.push_back(s);
  }
  KernelText k(*this, kernelName());
  // Values computed elsewhere in this region and read back from a buffer.
  for (auto &[value, buffer] : readBack) {
    Value val = value;
    int buf = buffer;
    k.overrides[val] = [&k, val, buf](const Idx &idx) {
      std::string p = k.param(buf, elemOf(val), false);
      return FailureOr<std::string>(
          k.let(computeType(elemOf(val)),
                "loom::ld(" + p + "[" + linearize(idx, shapeOf(val)) + "])"));
    };
  }
  int64_t iterations = 0;
  for (const SmallVector<int64_t> &shape : shapes) {
    int64_t n = numel(shape);
    if (n == 0)
      continue;
    SmallVector<Value> group;
    SmallVector<int> groupBuffers;
    for (auto [v, b] : llvm::zip(values, buffers))
      if (ArrayRef<int64_t>(shapeOf(v)) == ArrayRef<int64_t>(shape)) {
        group.push_back(v);
        groupBuffers.push_back(b);
      }
    constexpr int kVec = 4;
    bool vectorize = n % kVec == 0 && n >= kVec;
    int64_t iters = vectorize ? n / kVec : n;
    iterations = std::max(iterations, iters);
    std::string stride = "(loom::i64)gridDim.x * blockDim.x";
    std::string loopVar = vectorize ? "j" : "i";
    k.open("for (loom::i64 " + loopVar +
           " = blockIdx.x * (loom::i64)blockDim.x + threadIdx.x; " + loopVar +
           " < " + std::to_string(iters) + "; " + loopVar + " += " + stride +
           ")");
    SmallVector<std::string> outVecs;
    SmallVector<Value> preloaded;
    if (vectorize) {
      // Inputs of the loop's shape, read whole: one vector load each.
      SmallVector<Value> reads;
      for (BlockArgument arg : argsRead(group))
        reads.push_back(arg);
      for (auto &entry : readBack)
        reads.push_back(entry.first);
      for (Value arg : reads) {
        if (ArrayRef<int64_t>(shapeOf(arg)) != ArrayRef<int64_t>(shape))
          continue;
        int buffer = isa<BlockArgument>(arg)
                         ? bufferOfArg(cast<BlockArgument>(arg))
                         : readBack.lookup(arg);
        Type t = elemOf(arg);
        std::string p = k.param(buffer, t, false);
        std::string vt =
            "loom::vec<" + storageType(t) + ", " + std::to_string(kVec) + ">";
        std::string name = k.let(vt,
                                 "*reinterpret_cast<const " + vt + " *>(" + p +
                                     " + " + std::to_string(kVec) + " * j)",
                                 "a");
        preloaded.push_back(arg);
        auto previous = k.overrides.lookup(arg);
        Type et = t;
        k.overrides[arg] = [&k, name, arg, et, previous,
                            buffer](const Idx &idx) -> FailureOr<std::string> {
          if (idx == k.laneIdx)
            return k.let(computeType(et), "loom::ld(" + name + ".v[l])");
          if (previous)
            return previous(idx);
          std::string p = k.param(buffer, et, false);
          return FailureOr<std::string>(
              k.let(computeType(et), "loom::ld(" + p + "[" +
                                         linearize(idx, shapeOf(arg)) + "])"));
        };
      }
      for (auto [v, b] : llvm::zip(group, groupBuffers)) {
        std::string vt = "loom::vec<" + storageType(elemOf(v)) + ", " +
                         std::to_string(kVec) + ">";
        std::string o = k.fresh("o");
        k.line(vt + " " + o + ";");
        outVecs.push_back(o);
      }
      k.line("#pragma unroll");
      k.open("for (int l = 0; l < " + std::to_string(kVec) + "; ++l)");
      k.line("loom::i64 i = " + std::to_string(kVec) + " * j + l;");
    }
    Idx idx = k.decompose("i", shape, "x");
    k.laneIdx = vectorize ? idx : Idx{"<none>"};
    for (auto [n, vb] : llvm::enumerate(llvm::zip(group, groupBuffers))) {
      auto [v, b] = vb;
      FailureOr<std::string> e = k.eval(v, idx);
      if (failed(e))
        return failure();
      if (vectorize) {
        k.line("loom::st(&" + outVecs[n] + ".v[l], " + *e + ");");
      } else {
        std::string p = k.param(b, elemOf(v), true);
        k.line("loom::st(" + p + " + i, " + *e + ");");
      }
    }
    if (vectorize) {
      k.close();
      for (auto [n, vb] : llvm::enumerate(llvm::zip(group, groupBuffers))) {
        auto [v, b] = vb;
        std::string p = k.param(b, elemOf(v), true);
        std::string vt = "loom::vec<" + storageType(elemOf(v)) + ", " +
                         std::to_string(kVec) + ">";
        k.line("*reinterpret_cast<" + vt + " *>(" + p + " + " +
               std::to_string(kVec) + " * j) = " + outVecs[n] + ";");
      }
    }
    for (Value arg : preloaded)
      k.overrides.erase(arg);
    k.close();
  }
  if (iterations == 0)
    return success(); // nothing to compute (empty tensors)
  addKernel(k, gridFor(iterations, kBlock), kBlock, "map");
  return success();
}

/// The row kernel of a reduction, softmax or layer norm whose reduced dims
/// include the last one: false when it does not apply (the map kernel
/// then computes the region).
FailureOr<bool> RegionEmitter::emitRows(Operation *root) {
  Value x = root->getOperand(0);
  ArrayRef<int64_t> xs = shapeOf(x);
  int64_t rank = xs.size();
  if (rank == 0)
    return false;
  SmallVector<int64_t> axes;
  StringRef kind;
  bool keepdims = true;
  if (auto ln = dyn_cast<LayerNormOp>(root)) {
    for (int64_t d = ln.getAxis(); d < rank; ++d)
      axes.push_back(d);
    kind = "norm";
  } else if (isa<SoftmaxOp, LogSoftmaxOp>(root)) {
    axes.push_back(cast<IntegerAttr>(root->getAttr("axis")).getInt());
    kind = isa<SoftmaxOp>(root) ? "softmax" : "log_softmax";
  } else {
    kind = TypeSwitch<Operation *, StringRef>(root)
               .Case([](ReduceSumOp) { return "sum"; })
               .Case([](ReduceMeanOp) { return "mean"; })
               .Case([](ReduceMaxOp) { return "max"; })
               .Case([](ReduceMinOp) { return "min"; })
               .Case([](ReduceProdOp) { return "prod"; })
               .Default([](Operation *) { return ""; });
    if (kind.empty())
      return false;
    auto a = cast<DenseI64ArrayAttr>(root->getAttr("axes")).asArrayRef();
    axes.assign(a.begin(), a.end());
    keepdims = root->hasAttr("keepdims");
  }
  if (!llvm::is_contained(axes, rank - 1))
    return false;
  SmallVector<int64_t> keptShape, redShape;
  for (int64_t d = 0; d < rank; ++d)
    (llvm::is_contained(axes, d) ? redShape : keptShape).push_back(xs[d]);
  int64_t rows = numel(keptShape), r = numel(redShape);
  if (r < 32 || rows == 0)
    return false;
  Type rt = elemOf(root->getResult(0));
  bool isFloat = isa<FloatType>(rt);
  if (!isFloat && (kind == "norm" || kind == "softmax"))
    return false;

  // The region's outputs: element outputs (x's shape), row outputs (the
  // reduction's shape) and outputs the root does not feed (a map kernel).
  auto yield = cast<kernel::YieldOp>(region.getBody().front().getTerminator());
  SmallVector<Value> elementOuts, rowOuts, otherOuts;
  SmallVector<int> elementBufs, rowBufs, otherBufs;
  ArrayRef<int64_t> rootShape = shapeOf(root->getResult(0));
  for (auto [v, b] : llvm::zip(yield.getOperands(), resultBuffers)) {
    if (ArrayRef<int64_t>(shapeOf(v)) == xs) {
      elementOuts.push_back(v);
      elementBufs.push_back(b);
    } else if (ArrayRef<int64_t>(shapeOf(v)) == rootShape) {
      rowOuts.push_back(v);
      rowBufs.push_back(b);
    } else if (!dependsOn(v, root)) {
      otherOuts.push_back(v);
      otherBufs.push_back(b);
    } else {
      return false;
    }
  }

  int64_t block = 32;
  while (block < r && block < kBlock)
    block *= 2;
  KernelText k(*this, kernelName());
  std::string ct = computeType(rt);
  std::string accType = kind == "softmax" || kind == "log_softmax"
                            ? "loom::maxsum"
                        : kind == "norm" ? "loom::welford"
                                         : ct;
  k.line("__shared__ " + accType + " sh[32];");
  k.open("for (loom::i64 row = blockIdx.x; row < " + std::to_string(rows) +
         "; row += gridDim.x)");
  Idx rowIdx = k.decompose("row", keptShape, "y");
  auto xIdx = [&](const Idx &ri) {
    Idx xi;
    size_t kept = 0, red = 0;
    for (int64_t d = 0; d < rank; ++d)
      xi.push_back(llvm::is_contained(axes, d) ? ri[red++] : rowIdx[kept++]);
    return xi;
  };
  std::string init, combine, identity;
  if (accType == "loom::maxsum") {
    init = identity = "loom::maxsum{" + literal(-INFINITY, rt) + ", 0.0f}";
    combine = "loom::combine_maxsum";
  } else if (accType == "loom::welford") {
    init = identity = "loom::welford{0.0f, 0.0f, 0.0f}";
    combine = "loom::combine_welford";
  } else {
    if (kind == "sum" || kind == "mean")
      init = literal(0, rt);
    else if (kind == "prod")
      init = literal(1, rt);
    else if (isFloat)
      init = literal(kind == "max" ? -INFINITY : INFINITY, rt);
    else if (ct == "int")
      init = kind == "max" ? "(-2147483647 - 1)" : "2147483647";
    else
      init = literal(kind == "max" ? -9.3e18 : 9.3e18, rt);
    identity = init;
    combine = kind == "sum" || kind == "mean" ? "loom::add_<" + ct + ">"
              : kind == "prod"                ? "loom::mul_<" + ct + ">"
                               : "loom::" + kind.str() + "_<" + ct + ">";
  }
  std::string acc = k.let(accType, init, "acc");
  k.open("for (loom::i64 r = threadIdx.x; r < " + std::to_string(r) +
         "; r += blockDim.x)");
  {
    Idx xi = xIdx(k.decompose("r", redShape, "z"));
    FailureOr<std::string> e = k.eval(x, xi);
    if (failed(e))
      return failure();
    if (accType == "loom::maxsum")
      k.line(acc + " = loom::combine_maxsum(" + acc + ", loom::maxsum{" + *e +
             ", 1.0f});");
    else if (accType == "loom::welford")
      k.line(acc + " = loom::combine_welford(" + acc +
             ", loom::welford{1.0f, " + *e + ", 0.0f});");
    else
      k.line(acc + " = " + combine + "(" + acc + ", " + *e + ");");
  }
  k.close();
  k.line(acc + " = loom::block_reduce(" + acc + ", [](" + accType + " a, " +
         accType + " b) { return " + combine + "(a, b); }, " + identity +
         ", sh);");

  // The root's value, per row or per element of the row.
  Idx current; // the x index of the element being written
  Idx rootRowIdx;
  if (kind != "norm" && kind != "softmax" && kind != "log_softmax") {
    size_t kept = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (llvm::is_contained(axes, d)) {
        if (keepdims)
          rootRowIdx.push_back("0");
      } else {
        rootRowIdx.push_back(rowIdx[kept++]);
      }
    }
    std::string stat = acc;
    if (kind == "mean")
      stat = k.let(ct, acc + " / " + literal(static_cast<double>(r), rt));
    stat = rounded(k, rt, stat);
    k.overrides[root->getResult(0)] =
        [&k, stat, rootRowIdx](const Idx &idx) -> FailureOr<std::string> {
      if (idx != rootRowIdx) {
        k.refused = true;
        return failure();
      }
      return stat;
    };
  } else if (kind == "norm") {
    auto ln = cast<LayerNormOp>(root);
    std::string mean = k.let("float", acc + ".mean", "mean");
    std::string rstd = k.let(
        "float",
        "loom::rsqrt_(" + acc + ".m2 / " + literal(static_cast<double>(r), rt) +
            " + " + literal(ln.getEpsilon().convertToDouble(), rt) + ")",
        "rstd");
    int64_t axis = ln.getAxis();
    k.overrides[root->getResult(0)] =
        [&k, &current, x, mean, rstd, ln, axis,
         rt](const Idx &idx) mutable -> FailureOr<std::string> {
      if (idx != current) {
        k.refused = true;
        return failure();
      }
      FailureOr<std::string> e = k.eval(x, idx);
      Idx ti(idx.begin() + axis, idx.end());
      FailureOr<std::string> g = k.eval(ln.getScale(), ti);
      if (failed(e) || failed(g))
        return failure();
      std::string y = "(" + *e + " - " + mean + ") * " + rstd + " * " + *g;
      if (ln.getBias()) {
        FailureOr<std::string> b = k.eval(ln.getBias(), ti);
        if (failed(b))
          return failure();
        y += " + " + *b;
      }
      return rounded(k, rt, y);
    };
  } else {
    bool log = kind == "log_softmax";
    std::string post =
        log ? k.let("float", acc + ".m + loom::log_(" + acc + ".s)", "lse")
            : k.let("float", "1.0f / " + acc + ".s", "inv");
    std::string m = acc + ".m";
    k.overrides[root->getResult(0)] =
        [&k, &current, x, post, m, log,
         rt](const Idx &idx) -> FailureOr<std::string> {
      if (idx != current) {
        k.refused = true;
        return failure();
      }
      FailureOr<std::string> e = k.eval(x, idx);
      if (failed(e))
        return failure();
      return rounded(k, rt,
                     log ? *e + " - " + post
                         : "loom::exp_(" + *e + " - " + m + ") * " + post);
    };
  }
  if (!rowOuts.empty()) {
    k.open("if (threadIdx.x == 0)");
    for (auto [v, b] : llvm::zip(rowOuts, rowBufs)) {
      FailureOr<std::string> e = k.eval(v, rootRowIdx);
      if (failed(e)) {
        if (k.refused)
          return false;
        return failure();
      }
      std::string p = k.param(b, elemOf(v), true);
      k.line("loom::st(" + p + " + " + linearize(rootRowIdx, rootShape) + ", " +
             *e + ");");
    }
    k.close();
  }
  if (!elementOuts.empty()) {
    k.open("for (loom::i64 r = threadIdx.x; r < " + std::to_string(r) +
           "; r += blockDim.x)");
    current = xIdx(k.decompose("r", redShape, "z"));
    for (auto [v, b] : llvm::zip(elementOuts, elementBufs)) {
      FailureOr<std::string> e = k.eval(v, current);
      if (failed(e)) {
        if (k.refused)
          return false;
        return failure();
      }
      std::string p = k.param(b, elemOf(v), true);
      k.line("loom::st(" + p + " + " + linearize(current, xs) + ", " + *e +
             ");");
    }
    k.close();
  }
  k.close();
  addKernel(k, std::min<int64_t>(rows, 65535), block, "rows");
  if (!otherOuts.empty() && failed(emitMap(otherOuts, otherBufs)))
    return failure();
  return true;
}

/// A matmul operand in a buffer: a region operand, or computed into
/// scratch by a map kernel.
static FailureOr<int> operandBuffer(RegionEmitter &r, Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return r.bufferOfArg(arg);
  int scratch = r.newScratch(elemOf(v), shapeOf(v), "operand");
  if (failed(r.emitMap({v}, {scratch})))
    return failure();
  return scratch;
}

LogicalResult RegionEmitter::emitMatmul(MatmulOp mm) {
  Type t = elemOf(mm.getResult());
  std::string et = t.isF32()    ? "f32"
                   : t.isF16()  ? "f16"
                   : t.isBF16() ? "bf16"
                   : t.isF64()  ? "f64"
                                : "";
  if (et.empty())
    return mm.emitError("CUDA codegen: graph.matmul of ")
           << t
           << " is not supported yet (cuBLASLt takes f32, f16, bf16, f64) ["
           << locationString(mm.getLoc()) << "]";
  ArrayRef<int64_t> ls = shapeOf(mm.getLhs()), rsh = shapeOf(mm.getRhs());
  Gemm g;
  g.elementType = et;
  g.transA = mm.getTransposeLhs() && ls.size() >= 2;
  g.transB = mm.getTransposeRhs() && rsh.size() >= 2;
  SmallVector<int64_t> batchL, batchR;
  if (ls.size() == 1) {
    g.m = 1;
    g.k = ls[0];
  } else {
    batchL.assign(ls.begin(), ls.end() - 2);
    g.m = g.transA ? ls.back() : ls[ls.size() - 2];
    g.k = g.transA ? ls[ls.size() - 2] : ls.back();
  }
  if (rsh.size() == 1) {
    g.n = 1;
  } else {
    batchR.assign(rsh.begin(), rsh.end() - 2);
    g.n = g.transB ? rsh[rsh.size() - 2] : rsh.back();
  }
  int64_t bl = numel(batchL), br = numel(batchR);
  auto strip = [](SmallVector<int64_t> s) {
    while (!s.empty() && s.front() == 1)
      s.erase(s.begin());
    return s;
  };
  if (br == 1 && !g.transA) {
    g.m *= bl;
  } else if (bl == br && strip(batchL) == strip(batchR)) {
    g.batch = bl;
    g.strideA = g.m * g.k;
    g.strideB = g.k * g.n;
  } else if (bl == 1) {
    g.batch = br;
    g.strideB = g.k * g.n;
  } else if (br == 1) {
    g.batch = bl;
    g.strideA = g.m * g.k;
  } else {
    return mm.emitError("CUDA codegen: graph.matmul with batch dims broadcast "
                        "on both sides is not supported yet [")
           << locationString(mm.getLoc()) << "]";
  }
  g.strideD = g.batch > 1 ? g.m * g.n : 0;
  FailureOr<int> a = operandBuffer(*this, mm.getLhs());
  if (failed(a))
    return failure();
  FailureOr<int> b = operandBuffer(*this, mm.getRhs());
  if (failed(b))
    return failure();
  g.a = *a;
  g.b = *b;

  // The epilogue: bias (+ relu or tanh-gelu) in cuBLASLt, or a map kernel.
  auto yield = cast<kernel::YieldOp>(region.getBody().front().getTerminator());
  SmallVector<Operation *> rest;
  for (Operation &op : region.getBody().front().without_terminator())
    if (&op != mm.getOperation() && !isa<graph::ConstantOp>(op))
      rest.push_back(&op);
  Value result = mm.getResult();
  Value last = result;
  bool fused = yield.getNumOperands() == 1 && rest.size() <= 2;
  if (fused && !rest.empty()) {
    auto add = dyn_cast<AddOp>(rest[0]);
    fused = add && result.hasOneUse() &&
            ArrayRef<int64_t>(shapeOf(add.getResult())) == shapeOf(result);
    if (fused) {
      Value bias = add.getLhs() == result ? add.getRhs() : add.getLhs();
      ArrayRef<int64_t> bs = shapeOf(bias);
      fused = isa<BlockArgument>(bias) && !bs.empty() && bs.back() == g.n &&
              numel(bs) == g.n && g.n > 1;
      if (fused)
        g.bias = bufferOfArg(cast<BlockArgument>(bias));
      last = add.getResult();
    }
    if (fused && rest.size() == 2) {
      Operation *act = rest[1];
      auto gelu = dyn_cast<GeluOp>(act);
      fused = act->getOperand(0) == last && last.hasOneUse() &&
              (isa<ReluOp>(act) ||
               (gelu && gelu.getApproximate() == GeluApproximation::tanh));
      g.activation = isa<ReluOp>(act) ? "relu" : "gelu";
      last = act->getResult(0);
    }
  }
  fused = fused && yield.getOperand(0) == last;
  g.name = region.getName().str() +
           (fused && !rest.empty() ? "_gemm_epilogue" : "_gemm");
  g.description = description();
  if (fused) {
    g.d = resultBuffers[0];
  } else {
    g.bias = -1;
    g.activation = "none";
    // The matmul's own buffer: its region result when yielded, else scratch.
    g.d = -1;
    for (auto [v, buf] : llvm::zip(yield.getOperands(), resultBuffers))
      if (v == result)
        g.d = buf;
    if (g.d < 0)
      g.d = newScratch(t, shapeOf(result), "matmul");
  }
  program.source += llvm::formatv(
      "\n// {0}\n// {1}: cuBLASLt matmul m={2} n={3} k={4} batch={5} "
      "trans_a={6} trans_b={7} {8}, epilogue {9}{10}\n",
      g.description, g.name, g.m, g.n, g.k, g.batch, g.transA, g.transB,
      g.elementType, g.bias >= 0 ? "bias+" : "", g.activation);
  program.steps.push_back({Step::Gemm, static_cast<int>(program.gemms.size())});
  program.gemms.push_back(g);
  if (fused)
    return success();
  SmallVector<Value> outs;
  SmallVector<int> bufs;
  for (auto [v, buf] : llvm::zip(yield.getOperands(), resultBuffers))
    if (v != result) {
      outs.push_back(v);
      bufs.push_back(buf);
    }
  if (outs.empty())
    return success();
  DenseMap<Value, int> readBack;
  readBack[result] = g.d;
  return emitMap(outs, bufs, readBack);
}

LogicalResult RegionEmitter::emitScatter(ScatterElementsOp sc) {
  // A copy of the data, then the updates (atomics for reductions).
  if (failed(emitMap({sc.getData()}, {resultBuffers[0]})))
    return failure();
  ArrayRef<int64_t> us = shapeOf(sc.getUpdates());
  ArrayRef<int64_t> ds = shapeOf(sc.getData());
  int64_t n = numel(us);
  if (n == 0)
    return success();
  Type t = elemOf(sc.getResult());
  auto red = sc.getReduction();
  if (red != ScatterReduction::none && red != ScatterReduction::add &&
      storageBytes(t) < 4)
    return sc.emitError("CUDA codegen: graph.scatter_elements with a ")
           << stringifyScatterReduction(red) << " reduction of " << t
           << " is not supported yet [" << locationString(sc.getLoc()) << "]";
  KernelText k(*this, kernelName());
  k.open("for (loom::i64 i = blockIdx.x * (loom::i64)blockDim.x + "
         "threadIdx.x; i < " +
         std::to_string(n) + "; i += (loom::i64)gridDim.x * blockDim.x)");
  Idx idx = k.decompose("i", us, "x");
  FailureOr<std::string> kk = k.eval(sc.getIndices(), idx);
  FailureOr<std::string> u = k.eval(sc.getUpdates(), idx);
  if (failed(kk) || failed(u))
    return failure();
  int64_t axis = sc.getAxis();
  Idx oi = idx;
  oi[axis] =
      k.let("loom::i64",
            "loom::index_(" + *kk + ", " + std::to_string(ds[axis]) + ")", "k");
  for (size_t d = 0; d < ds.size(); ++d)
    if (ds[d] == 1)
      oi[d] = "0";
  std::string p = k.param(resultBuffers[0], t, true);
  std::string at = p + " + " + linearize(oi, ds);
  std::string ct = computeType(t);
  switch (red) {
  case ScatterReduction::none:
    k.line("loom::st(" + at + ", " + *u + ");");
    break;
  case ScatterReduction::add:
    if (t.isInteger(8) || t.isInteger(1))
      return sc.emitError("CUDA codegen: scatter add of ")
             << t << " is not supported yet";
    k.line("loom::atomic_add(" + at + ", " + *u + ");");
    break;
  default: {
    std::string f = red == ScatterReduction::mul   ? "a * b"
                    : red == ScatterReduction::max ? "loom::max_(a, b)"
                                                   : "loom::min_(a, b)";
    k.line("loom::atomic_apply(" + at + ", " + *u + ", [](" + ct + " a, " + ct +
           " b) { return " + f + "; });");
  }
  }
  k.close();
  addKernel(k, gridFor(n, kBlock), kBlock, "scatter");
  return success();
}

LogicalResult RegionEmitter::emit() {
  Block &body = region.getBody().front();
  auto yield = cast<kernel::YieldOp>(body.getTerminator());
  for (Operation &op : body.without_terminator()) {
    for (Value v : op.getResults()) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (!t || !t.hasStaticShape() || !supportedElement(t.getElementType()))
        return op.emitError("CUDA codegen: ")
               << op.getName() << " has type " << v.getType()
               << "; the CUDA target takes static shapes of f32, f16, bf16, "
                  "f64, i1, i8, i32 and i64 ["
               << locationString(op.getLoc()) << "]";
    }
    if (auto mm = dyn_cast<MatmulOp>(op))
      return emitMatmul(mm);
    if (auto sc = dyn_cast<ScatterElementsOp>(op))
      return emitScatter(sc);
  }
  for (Operation &op : body.without_terminator()) {
    if (!isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp,
             SoftmaxOp, LogSoftmaxOp, LayerNormOp>(op))
      continue;
    FailureOr<bool> rows = emitRows(&op);
    if (failed(rows))
      return failure();
    if (*rows)
      return success();
    // Fall back to the map kernel, named as if the row kernel never was.
    kernelCounter = 0;
    break;
  }
  SmallVector<Value> values(yield.getOperands());
  return emitMap(values, resultBuffers);
}

//===----------------------------------------------------------------------===//
// The program of a function
//===----------------------------------------------------------------------===//

std::string elementName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

/// Whether the region only reshapes its one operand (a view: no kernel).
bool isView(kernel::FusionOp region) {
  Block &body = region.getBody().front();
  if (region.getNumOperands() != 1 || region.getNumResults() != 1)
    return false;
  Value v = body.getTerminator()->getOperand(0);
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>(def))
      return false;
    v = def->getOperand(0);
  }
  return v == body.getArgument(0);
}

} // namespace

/// Wraps each constant that is used outside a region (a function result,
/// such as a constant learning rate) in a region of its own, which a map
/// kernel writes into its buffer.
static void wrapConstants(func::FuncOp func) {
  unsigned counter = 0;
  for (auto c : llvm::make_early_inc_range(func.getOps<graph::ConstantOp>())) {
    if (c.use_empty())
      continue;
    OpBuilder b(c);
    MLIRContext *ctx = c.getContext();
    auto region = b.create<kernel::FusionOp>(
        c.getLoc(), TypeRange{c.getType()},
        b.getStringAttr("constant_" + std::to_string(counter++)),
        kernel::FusionKindAttr::get(ctx, kernel::FusionKind::other),
        ValueRange{});
    Block *body = new Block();
    region.getBody().push_back(body);
    c.getResult().replaceAllUsesWith(region.getResult(0));
    b.setInsertionPointToStart(body);
    auto yield = b.create<kernel::YieldOp>(c.getLoc(), c.getResult());
    c->moveBefore(yield);
  }
}

FailureOr<Program> emitCudaProgram(func::FuncOp func, unsigned numInputs) {
  wrapConstants(func);
  Program program;
  std::string constants, kernels;
  DenseMap<Value, int> bufferOf;
  // Live ranges of the arena buffers: region positions.
  struct Range {
    int64_t first = 0, last = 0;
  };
  DenseMap<int, Range> ranges;
  auto addBuffer = [&](Buffer b) {
    program.buffers.push_back(std::move(b));
    return static_cast<int>(program.buffers.size() - 1);
  };
  auto bufferFor = [&](Type type, StringRef name) {
    auto t = cast<RankedTensorType>(type);
    Buffer b;
    b.elementType = elementName(t.getElementType());
    b.shape.assign(t.getShape().begin(), t.getShape().end());
    b.bytes = numel(t.getShape()) * storageBytes(t.getElementType());
    b.name = name.str();
    return b;
  };
  for (BlockArgument arg : func.getArguments()) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (!t || !t.hasStaticShape() || !supportedElement(t.getElementType()))
      return func.emitError("CUDA codegen: argument ")
             << arg.getArgNumber() << " has type " << arg.getType()
             << "; the CUDA target takes static shapes of f32, f16, bf16, "
                "f64, i1, i8, i32 and i64 (give dynamic dims a size)";
    Buffer b = bufferFor(t, "arg" + std::to_string(arg.getArgNumber()));
    bool input = arg.getArgNumber() < numInputs;
    b.kind = input ? Buffer::Input : Buffer::Weight;
    b.index = input ? arg.getArgNumber() : arg.getArgNumber() - numInputs;
    bufferOf[arg] = addBuffer(std::move(b));
  }
  int64_t position = 0;
  Block &block = func.getBody().front();
  for (Operation &op : block) {
    if (isa<func::ReturnOp>(op)) {
      for (Value v : op.getOperands()) {
        int b = bufferOf.lookup(v);
        program.outputs.push_back(b);
        if (ranges.count(b))
          ranges[b].last = std::numeric_limits<int32_t>::max();
      }
      continue;
    }
    auto region = dyn_cast<kernel::FusionOp>(op);
    if (!region) {
      if (op.use_empty() && isa<graph::ConstantOp>(op))
        continue;
      if (op.getName().getDialectNamespace() == "mesh")
        return op.emitError("CUDA codegen: ")
               << op.getName()
               << ": collectives are not supported on the CUDA target yet "
                  "(data and tensor parallel training runs on the CPU "
                  "target, over Gloo) ["
               << locationString(op.getLoc()) << "]";
      return op.emitError("CUDA codegen: ")
             << op.getName() << " outside a kernel.fusion region ["
             << locationString(op.getLoc()) << "]";
    }
    ++position;
    for (Value v : region.getInputs()) {
      if (!bufferOf.count(v))
        return region.emitError("CUDA codegen: operand of ")
               << region.getName()
               << " is not a buffer (a large constant the compiler did not "
                  "move into the weights?)";
      int b = bufferOf[v];
      if (ranges.count(b))
        ranges[b].last = std::max(ranges[b].last, position);
    }
    if (isView(region)) {
      bufferOf[region.getResult(0)] = bufferOf[region.getInputs()[0]];
      continue;
    }
    RegionEmitter emitter(region, program, kernels);
    for (Value v : region.getInputs())
      emitter.operandBuffers.push_back(bufferOf[v]);
    for (OpResult r : region.getResults()) {
      int b = addBuffer(
          bufferFor(r.getType(), region.getName().str() + "#" +
                                     std::to_string(r.getResultNumber())));
      ranges[b] = {position, position};
      bufferOf[r] = b;
      emitter.resultBuffers.push_back(b);
    }
    emitter.newScratch = [&, position](Type t, ArrayRef<int64_t> shape,
                                       StringRef what) {
      int b = addBuffer(bufferFor(RankedTensorType::get(shape, t),
                                  region.getName().str() + " " + what.str()));
      ranges[b] = {position, position};
      return b;
    };
    std::string before = program.source;
    program.source.clear();
    // Each region's text (its constants, then its kernels) starts with a
    // marker, so that tools can split the source between regions.
    kernels += ::loom::cuda::kRegionMarker + region.getName().str() + "\n";
    if (failed(emitter.emit()))
      return failure();
    kernels += program.source;
    program.source = before;
  }
  // The static memory plan: offsets in one arena.
  std::vector<memplan::LiveBuffer> live;
  std::vector<int> ids;
  for (auto &[id, range] : ranges) {
    ids.push_back(id);
  }
  llvm::sort(ids);
  for (int id : ids)
    live.push_back(
        {ranges[id].first, ranges[id].last,
         memplan::alignUp(std::max<int64_t>(program.buffers[id].bytes, 1),
                          kBufferAlignment)});
  memplan::ArenaPlan plan = memplan::planArena(live);
  for (auto [id, offset] : llvm::zip(ids, plan.offsets)) {
    program.buffers[id].kind = Buffer::Arena;
    program.buffers[id].offset = offset;
  }
  program.arenaBytes = plan.peak;
  program.source = std::string(kPrelude) + constants + kernels;
  return program;
}

} // namespace loom::codegen::cuda
