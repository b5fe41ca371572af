//===- CudaEmitRandom.cpp - the random ops' values at an index ------------===//
//
// graph.random_uniform, random_normal, bernoulli, multinomial and
// random_dropout: each element's draw from the counter-based generator of
// passes/Conversion/GraphToLinalg/Random.cpp, written as the same u64
// arithmetic, so the CPU, the GPU and the CUDA simulator draw the same
// bits. The floats made from them match the CPU's exactly where the
// arithmetic is exact or correctly rounded (uniform: a 24-bit u times the
// span in double; Bernoulli's compare; Multinomial's search); a normal's
// log and cos are the device's (the host's libm on the simulator).
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/CudaEmitInternal.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace loom::graph;

namespace loom::codegen::cuda::detail {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;
constexpr uint64_t kCounterSalt = 0xD1B54A32D192ED03ull;

std::string u64Literal(uint64_t v) { return std::to_string(v) + "ULL"; }

/// A double as an exact hex literal.
std::string hexDouble(double v) {
  if (std::isinf(v))
    return v > 0 ? "(1.0/0.0)" : "(-1.0/0.0)";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%a", v);
  return buffer;
}

/// A float (v rounded to f32) as an exact hex literal.
std::string hexFloat(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%af", (double)(float)v);
  return buffer;
}

/// SplitMix64's finalizer of the u64 expression `z`.
std::string mix(KernelText &k, const std::string &z) {
  std::string a = k.let("loom::u64", z);
  std::string b = k.let("loom::u64", "(" + a + " ^ (" + a +
                                         " >> 30)) * 0xBF58476D1CE4E5B9ULL");
  std::string c = k.let("loom::u64", "(" + b + " ^ (" + b +
                                         " >> 27)) * 0x94D049BB133111EBULL");
  return k.let("loom::u64", c + " ^ (" + c + " >> 31)");
}

/// The op's per-run base from its key and counter operands.
FailureOr<std::string> runBase(KernelText &k, Value key, Value counter,
                               std::optional<uint64_t> seed, uint64_t stream) {
  std::string opKey;
  if (seed) {
    opKey = u64Literal(*seed);
  } else {
    FailureOr<std::string> kv = k.eval(key, Idx{});
    if (failed(kv))
      return failure();
    opKey = mix(k, "(loom::u64)" + *kv + " + " +
                       u64Literal((stream + 1) * kGolden));
  }
  FailureOr<std::string> cv = k.eval(counter, Idx{});
  if (failed(cv))
    return failure();
  std::string salted =
      mix(k, "(loom::u64)" + *cv + " + " + u64Literal(kCounterSalt));
  return mix(k, opKey + " ^ " + salted);
}

/// draw(n) for the integer expression `n`.
std::string draw(KernelText &k, const std::string &base, const std::string &n) {
  return mix(k, base + " + ((loom::u64)(" + n + ") + 1ULL) * " +
                    u64Literal(kGolden));
}

/// A uniform in [0, 1) from draw `z`: 53 bits as a double, else 24 bits
/// as a float (`asDouble`: the 24-bit value as a double).
std::string unit(KernelText &k, const std::string &z, bool f64,
                 bool asDouble = false) {
  if (f64)
    return k.let("double", "(double)(" + z + " >> 11) * 0x1p-53");
  if (asDouble)
    return k.let("double", "(double)(" + z + " >> 40) * 0x1p-24");
  return k.let("float", "(float)(" + z + " >> 40) * 0x1p-24f");
}

/// The result stored as `type` from the double or float expression `v`.
std::string toResult(KernelText &k, Type type, const std::string &v) {
  std::string cxx = computeType(type);
  return rounded(k, type, "(" + cxx + ")(" + v + ")");
}

FailureOr<std::string> emitUniform(KernelText &k, RandomUniformOp op,
                                   Value result, const Idx &index) {
  Type type = elemOf(result);
  FailureOr<std::string> base =
      runBase(k, op.getKey(), op.getCounter(), op.getSeed(), op.getStream());
  if (failed(base))
    return failure();
  std::string z = draw(k, *base, linearize(index, shapeOf(result)));
  std::string u = unit(k, z, type.isF64(), /*asDouble=*/true);
  double low = op.getLow().convertToDouble();
  double span = op.getHigh().convertToDouble() - low;
  return toResult(k, type,
                  hexDouble(low) + " + " + hexDouble(span) + " * " + u);
}

FailureOr<std::string> emitNormal(KernelText &k, RandomNormalOp op,
                                  Value result, const Idx &index) {
  Type type = elemOf(result);
  bool f64 = type.isF64();
  std::string ct = f64 ? "double" : "float";
  auto lit = [&](double v) { return f64 ? hexDouble(v) : hexFloat(v); };
  FailureOr<std::string> base =
      runBase(k, op.getKey(), op.getCounter(), op.getSeed(), op.getStream());
  if (failed(base))
    return failure();
  std::string z = draw(k, *base, linearize(index, shapeOf(result)));
  std::string u1 =
      k.let(ct, "(" + ct + ")((" + z + " >> 40) + 1ULL) * " + lit(0x1p-24));
  std::string u2 = k.let(ct, "(" + ct + ")((" + z +
                                 " >> 16) & 0xFFFFFFULL) * " + lit(0x1p-24));
  std::string r =
      k.let(ct, "loom::sqrt_(" + lit(-2.0) + " * loom::log_(" + u1 + "))");
  std::string t = k.let(ct, lit(2 * M_PI) + " * " + u2);
  std::string g = k.let(ct, r + " * loom::cos_(" + t + ")");
  return toResult(k, type,
                  lit(op.getMean().convertToDouble()) + " + " +
                      lit(op.getScale().convertToDouble()) + " * " + g);
}

FailureOr<std::string> emitBernoulli(KernelText &k, BernoulliOp op,
                                     Value result, const Idx &index) {
  Type type = elemOf(result);
  FailureOr<std::string> p = k.evalBroadcast(op.getProbs(), result, index);
  if (failed(p))
    return failure();
  FailureOr<std::string> base =
      runBase(k, op.getKey(), op.getCounter(), op.getSeed(), op.getStream());
  if (failed(base))
    return failure();
  std::string z = draw(k, *base, linearize(index, shapeOf(result)));
  std::string u = unit(k, z, elemOf(op.getProbs()).isF64());
  std::string hit = k.let("bool", u + " < " + *p);
  if (type.isInteger(1))
    return hit;
  std::string cxx = computeType(type);
  return k.let(cxx, "(" + cxx + ")(" + hit + " ? 1 : 0)");
}

FailureOr<std::string> emitRandomDropout(KernelText &k, RandomDropoutOp op,
                                         Value result, const Idx &index) {
  Type type = elemOf(result);
  FailureOr<std::string> x = k.evalBroadcast(op.getX(), result, index);
  if (failed(x))
    return failure();
  double ratio = op.getRatio().convertToDouble();
  if (ratio == 0)
    return *x;
  FailureOr<std::string> base =
      runBase(k, op.getKey(), op.getCounter(), op.getSeed(), 0);
  if (failed(base))
    return failure();
  std::string z = draw(k, *base, linearize(index, shapeOf(result)));
  auto threshold = (uint64_t)std::ceil(ratio * (1 << 24));
  std::string cxx = computeType(type);
  std::string scale =
      type.isF64() ? hexDouble(1 / (1 - ratio)) : hexFloat(1 / (1 - ratio));
  return rounded(k, type,
                 "(" + z + " >> 40) >= " + u64Literal(threshold) + " ? (" +
                     cxx + ")(" + *x + " * " + scale + ") : (" + cxx + ")0");
}

FailureOr<std::string> emitMultinomial(KernelText &k, MultinomialOp op,
                                       Value result, const Idx &index) {
  Type type = elemOf(result);
  int64_t classes = shapeOf(op.getLogits())[1];
  int64_t samples = (int64_t)op.getSampleSize();
  FailureOr<std::string> base =
      runBase(k, op.getKey(), op.getCounter(), op.getSeed(), op.getStream());
  if (failed(base))
    return failure();
  std::string row = index[0];
  std::string z = draw(k, *base,
                       "(loom::i64)(" + row + ") * " + std::to_string(samples) +
                           "LL + (loom::i64)(" + index[1] + ")");
  std::string u = unit(k, z, /*f64=*/true);
  std::string n = std::to_string(classes);
  std::string max = k.fresh("mx"), total = k.fresh("tot"), sum = k.fresh("cum"),
              chosen = k.fresh("pick"), j = k.fresh("j");
  k.line("double " + max + " = " + hexDouble(-INFINITY) + ";");
  k.line("double " + total + " = 0.0;");
  k.line("double " + sum + " = 0.0;");
  k.line("loom::i64 " + chosen + " = " + n + "LL;");
  auto logit = [&]() -> FailureOr<std::string> {
    FailureOr<std::string> v = k.eval(op.getLogits(), Idx{row, j});
    if (failed(v))
      return failure();
    return "(double)(" + *v + ")";
  };
  k.open("for (loom::i64 " + j + " = 0; " + j + " < " + n + "LL; ++" + j + ")");
  FailureOr<std::string> v = logit();
  if (failed(v))
    return failure();
  k.line(max + " = " + *v + " > " + max + " || " + *v + " != " + *v + " ? " +
         *v + " : " + max + ";");
  k.close();
  k.open("for (loom::i64 " + j + " = 0; " + j + " < " + n + "LL; ++" + j + ")");
  v = logit();
  if (failed(v))
    return failure();
  k.line(total + " += loom::exp_(" + *v + " - " + max + ");");
  k.close();
  std::string target = k.let("double", u + " * " + total);
  k.open("for (loom::i64 " + j + " = 0; " + j + " < " + n + "LL; ++" + j + ")");
  v = logit();
  if (failed(v))
    return failure();
  k.line(sum + " += loom::exp_(" + *v + " - " + max + ");");
  k.line("if (" + chosen + " == " + n + "LL && " + sum + " > " + target + ") " +
         chosen + " = " + j + ";");
  k.close();
  std::string cxx = computeType(type);
  return k.let(cxx, "(" + cxx + ")(" + chosen + " < " + n + "LL - 1 ? " +
                        chosen + " : " + n + "LL - 1)");
}

} // namespace

void registerRandomEmitters(OpEmitterTable &table) {
  table.add(emitUniform);
  table.add(emitNormal);
  table.add(emitBernoulli);
  table.add(emitRandomDropout);
  table.add(emitMultinomial);
}

} // namespace loom::codegen::cuda::detail
