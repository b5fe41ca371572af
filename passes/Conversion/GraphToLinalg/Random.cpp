//===- Random.cpp - the random ops on linalg ------------------------------===//
//
// graph.random_uniform, random_normal, bernoulli, multinomial and
// random_dropout, each one linalg.generic whose body computes its element's
// draw from a counter-based generator (docs/training.md, "Random ops"):
//
//   mix(z)    = SplitMix64's finalizer: z ^= z >> 30; z *= 0xBF58476D1CE4E5B9;
//               z ^= z >> 27; z *= 0x94D049BB133111EB; z ^= z >> 31
//   op key    = seed, or mix(key + (stream + 1) * G) for an unseeded op
//   base      = mix(op key ^ mix(counter + 0xD1B54A32D192ED03))
//   draw(n)   = mix(base + (n + 1) * G),   G = 0x9E3779B97F4A7C15
//
// (all u64, wrapping), n the element's row-major index (multinomial: b *
// sample_size + s). The CUDA emitter (CudaEmitRandom.cpp) and
// test/runtime/random_ops.py compute the same values.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace loom;
using namespace loom::graph;
using namespace loom::graph_to_linalg;

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;
constexpr uint64_t kCounterSalt = 0xD1B54A32D192ED03ull;

Value c64(OpBuilder &b, Location l, uint64_t v) {
  return b.create<arith::ConstantOp>(l, b.getI64IntegerAttr((int64_t)v));
}

/// SplitMix64's finalizer.
Value mix(OpBuilder &b, Location l, Value z) {
  for (auto [shift, mul] :
       {std::pair<uint64_t, uint64_t>{30, 0xBF58476D1CE4E5B9ull},
        {27, 0x94D049BB133111EBull},
        {31, 0}}) {
    z = b.create<arith::XOrIOp>(
        l, z, b.create<arith::ShRUIOp>(l, z, c64(b, l, shift)));
    if (mul)
      z = b.create<arith::MulIOp>(l, z, c64(b, l, mul));
  }
  return z;
}

/// The op's per-run base, computed once before its generic.
Value runBase(OpBuilder &b, Location l, Value key, Value counter,
              std::optional<int64_t> seed, int64_t stream) {
  Value opKey;
  if (seed) {
    opKey = c64(b, l, (uint64_t)*seed);
  } else {
    Value k = b.create<tensor::ExtractOp>(l, key, ValueRange{});
    opKey = mix(b, l,
                b.create<arith::AddIOp>(
                    l, k, c64(b, l, ((uint64_t)stream + 1) * kGolden)));
  }
  Value c = b.create<tensor::ExtractOp>(l, counter, ValueRange{});
  Value salted =
      mix(b, l, b.create<arith::AddIOp>(l, c, c64(b, l, kCounterSalt)));
  return mix(b, l, b.create<arith::XOrIOp>(l, opKey, salted));
}

/// draw(n) for an i64 index n.
Value draw(OpBuilder &b, Location l, Value base, Value n) {
  Value n1 = b.create<arith::AddIOp>(l, n, c64(b, l, 1));
  return mix(b, l,
             b.create<arith::AddIOp>(
                 l, base, b.create<arith::MulIOp>(l, n1, c64(b, l, kGolden))));
}

/// The row-major index of the generic's current element over `dims`.
Value flatIndex(OpBuilder &b, Location l, ArrayRef<Value> dims) {
  Value index = b.create<arith::ConstantIndexOp>(l, 0);
  for (auto [i, d] : llvm::enumerate(dims))
    index = b.create<arith::AddIOp>(l, b.create<arith::MulIOp>(l, index, d),
                                    b.create<linalg::IndexOp>(l, i));
  return b.create<arith::IndexCastOp>(l, b.getI64Type(), index);
}

/// The type the draws are turned into floats in: f64 for f64, else f32.
Type computeType(OpBuilder &b, Type elem) {
  return elem.isF64() ? (Type)b.getF64Type() : (Type)b.getF32Type();
}

/// A uniform in [0, 1) of `ct` from draw z: 24 bits (f32), 53 (f64).
Value unitFloat(OpBuilder &b, Location l, Value z, Type ct) {
  bool f64 = ct.isF64();
  Value bits = b.create<arith::ShRUIOp>(l, z, c64(b, l, f64 ? 11 : 40));
  Value f = b.create<arith::UIToFPOp>(l, ct, bits);
  return b.create<arith::MulFOp>(
      l, f, scalarConst(b, l, ct, f64 ? 0x1p-53 : 0x1p-24));
}

Value toElem(OpBuilder &b, Location l, Value v, Type elem) {
  if (v.getType() == elem)
    return v;
  return b.create<arith::TruncFOp>(l, elem, v);
}

/// A generic over the static `type` whose element is `fn(index n)`.
Value generate(OpBuilder &b, Location loc, RankedTensorType type,
               function_ref<Value(OpBuilder &, Location, Value)> fn) {
  Value init =
      b.create<tensor::EmptyOp>(loc, type.getShape(), type.getElementType());
  SmallVector<Value> dims;
  for (int64_t s : type.getShape())
    dims.push_back(b.create<arith::ConstantIndexOp>(loc, s));
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  return generic(b, loc, init, {}, {b.getMultiDimIdentityMap(type.getRank())},
                 iterators, [&](OpBuilder &nb, Location l, ValueRange) {
                   return fn(nb, l, flatIndex(nb, l, dims));
                 });
}

std::optional<int64_t> seedOf(std::optional<uint64_t> s) {
  if (!s)
    return std::nullopt;
  return (int64_t)*s;
}

Value lowerUniform(OpBuilder &b, RandomUniformOp o) {
  Location loc = o.getLoc();
  auto type = cast<RankedTensorType>(o.getType());
  Type elem = type.getElementType(), ct = computeType(b, elem);
  Type f64 = b.getF64Type();
  Value base = runBase(b, loc, o.getKey(), o.getCounter(), seedOf(o.getSeed()),
                       o.getStream());
  double low = o.getLow().convertToDouble();
  double span = o.getHigh().convertToDouble() - low;
  // In f64 whatever the type: a 24-bit u times the span is exact there, so
  // a backend that fuses the multiply-add (CUDA) rounds the same.
  return generate(b, loc, type, [&](OpBuilder &nb, Location l, Value n) {
    Value u = unitFloat(nb, l, draw(nb, l, base, n), ct);
    if (u.getType() != f64)
      u = nb.create<arith::ExtFOp>(l, f64, u);
    Value y = nb.create<arith::AddFOp>(
        l, scalarConst(nb, l, f64, low),
        nb.create<arith::MulFOp>(l, scalarConst(nb, l, f64, span), u));
    return toElem(nb, l, y, elem);
  });
}

Value lowerNormal(OpBuilder &b, RandomNormalOp o) {
  Location loc = o.getLoc();
  auto type = cast<RankedTensorType>(o.getType());
  Type elem = type.getElementType(), ct = computeType(b, elem);
  Value base = runBase(b, loc, o.getKey(), o.getCounter(), seedOf(o.getSeed()),
                       o.getStream());
  double mean = o.getMean().convertToDouble();
  double scale = o.getScale().convertToDouble();
  return generate(b, loc, type, [&](OpBuilder &nb, Location l, Value n) {
    Value z = draw(nb, l, base, n);
    // u1 in (0, 1] from the top 24 bits, u2 in [0, 1) from the next 24.
    Value hi = nb.create<arith::AddIOp>(
        l, nb.create<arith::ShRUIOp>(l, z, c64(nb, l, 40)), c64(nb, l, 1));
    Value lo = nb.create<arith::AndIOp>(
        l, nb.create<arith::ShRUIOp>(l, z, c64(nb, l, 16)),
        c64(nb, l, 0xFFFFFF));
    Value two24 = scalarConst(nb, l, ct, 0x1p-24);
    Value u1 = nb.create<arith::MulFOp>(
        l, nb.create<arith::UIToFPOp>(l, ct, hi), two24);
    Value u2 = nb.create<arith::MulFOp>(
        l, nb.create<arith::UIToFPOp>(l, ct, lo), two24);
    Value r = nb.create<math::SqrtOp>(
        l, nb.create<arith::MulFOp>(l, scalarConst(nb, l, ct, -2.0),
                                    nb.create<math::LogOp>(l, u1)));
    Value t = nb.create<arith::MulFOp>(l, scalarConst(nb, l, ct, 2 * M_PI), u2);
    Value g = nb.create<arith::MulFOp>(l, r, nb.create<math::CosOp>(l, t));
    Value y = nb.create<arith::AddFOp>(
        l, scalarConst(nb, l, ct, mean),
        nb.create<arith::MulFOp>(l, scalarConst(nb, l, ct, scale), g));
    return toElem(nb, l, y, elem);
  });
}

/// The draws of an op shaped like `x`, one per element, given to `fn` with
/// x's element: bernoulli and random_dropout.
Value mapDraws(OpBuilder &b, Location loc, Value x, Value base, Type elem,
               function_ref<Value(OpBuilder &, Location, Value, Value)> fn) {
  RankedTensorType xt = tensorType(x);
  SmallVector<Value> dims;
  for (int64_t i = 0; i < xt.getRank(); ++i)
    dims.push_back(dimOf(b, loc, x, i));
  return mapLike(b, loc, x, elem, {}, {},
                 [&](OpBuilder &nb, Location l, ValueRange a) {
                   Value z = draw(nb, l, base, flatIndex(nb, l, dims));
                   return fn(nb, l, a[0], z);
                 });
}

Value lowerBernoulli(OpBuilder &b, BernoulliOp o) {
  Location loc = o.getLoc();
  Type pElem = tensorType(o.getProbs()).getElementType();
  Type ct = computeType(b, pElem);
  Type elem = tensorType(o.getResult()).getElementType();
  Value base = runBase(b, loc, o.getKey(), o.getCounter(), seedOf(o.getSeed()),
                       o.getStream());
  return mapDraws(b, loc, o.getProbs(), base, elem,
                  [&](OpBuilder &nb, Location l, Value p, Value z) {
                    if (p.getType() != ct)
                      p = nb.create<arith::ExtFOp>(l, ct, p);
                    Value hit =
                        nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::OLT,
                                                 unitFloat(nb, l, z, ct), p);
                    return convertScalar(nb, l, hit, elem);
                  });
}

Value lowerRandomDropout(OpBuilder &b, RandomDropoutOp o) {
  Location loc = o.getLoc();
  Type elem = tensorType(o.getX()).getElementType();
  double ratio = o.getRatio().convertToDouble();
  if (ratio == 0)
    return o.getX();
  Value base =
      runBase(b, loc, o.getKey(), o.getCounter(), (int64_t)o.getSeed(), 0);
  auto threshold = (uint64_t)std::ceil(ratio * (1 << 24));
  Value scale = scalarConst(b, loc, elem, 1 / (1 - ratio));
  return mapDraws(
      b, loc, o.getX(), base, elem,
      [&](OpBuilder &nb, Location l, Value x, Value z) {
        Value bits = nb.create<arith::ShRUIOp>(l, z, c64(nb, l, 40));
        Value keep = nb.create<arith::CmpIOp>(l, arith::CmpIPredicate::uge,
                                              bits, c64(nb, l, threshold));
        return nb.create<arith::SelectOp>(l, keep,
                                          nb.create<arith::MulFOp>(l, x, scale),
                                          scalarConst(nb, l, elem, 0));
      });
}

/// Sample (b, s): u (53 bits) times the sum of exp(logit - max) over the
/// classes, then the first class whose running sum exceeds it (the last
/// class should rounding leave none).
Value lowerMultinomial(OpBuilder &b, MultinomialOp o) {
  Location loc = o.getLoc();
  Value logits = o.getLogits();
  RankedTensorType lt = tensorType(logits);
  auto type = cast<RankedTensorType>(o.getType());
  Type elem = type.getElementType(), f64 = b.getF64Type();
  int64_t classes = lt.getDimSize(1), samples = o.getSampleSize();
  Value base = runBase(b, loc, o.getKey(), o.getCounter(), seedOf(o.getSeed()),
                       o.getStream());
  Value init = b.create<tensor::EmptyOp>(loc, type.getShape(), elem,
                                         dynamicDimsOf(b, loc, logits));
  SmallVector<utils::IteratorType> iterators(2, utils::IteratorType::parallel);
  return generic(
      b, loc, init, {}, {b.getMultiDimIdentityMap(2)}, iterators,
      [&](OpBuilder &nb, Location l, ValueRange) -> Value {
        Value row = nb.create<linalg::IndexOp>(l, 0);
        Value s = nb.create<linalg::IndexOp>(l, 1);
        Value n = nb.create<arith::AddIOp>(
            l,
            nb.create<arith::MulIOp>(
                l, row, nb.create<arith::ConstantIndexOp>(l, samples)),
            s);
        Value u = unitFloat(
            nb, l,
            draw(nb, l, base,
                 nb.create<arith::IndexCastOp>(l, nb.getI64Type(), n)),
            f64);
        Value zero = nb.create<arith::ConstantIndexOp>(l, 0);
        Value one = nb.create<arith::ConstantIndexOp>(l, 1);
        Value count = nb.create<arith::ConstantIndexOp>(l, classes);
        auto logitAt = [&](OpBuilder &ob, Location ol, Value j) -> Value {
          Value v =
              ob.create<tensor::ExtractOp>(ol, logits, ValueRange{row, j});
          return v.getType() == f64 ? v : ob.create<arith::ExtFOp>(ol, f64, v);
        };
        auto loop =
            [&](Value initial,
                function_ref<Value(OpBuilder &, Location, Value, Value)> step) {
              return nb
                  .create<scf::ForOp>(
                      l, zero, count, one, ValueRange{initial},
                      [&](OpBuilder &ob, Location ol, Value j, ValueRange acc) {
                        ob.create<scf::YieldOp>(ol, step(ob, ol, j, acc[0]));
                      })
                  .getResult(0);
            };
        Value max = loop(scalarConst(nb, l, f64, -INFINITY),
                         [&](OpBuilder &ob, Location ol, Value j, Value acc) {
                           return ob.create<arith::MaximumFOp>(
                               ol, acc, logitAt(ob, ol, j));
                         });
        auto weight = [&](OpBuilder &ob, Location ol, Value j) -> Value {
          return ob.create<math::ExpOp>(
              ol, ob.create<arith::SubFOp>(ol, logitAt(ob, ol, j), max));
        };
        Value total =
            loop(scalarConst(nb, l, f64, 0),
                 [&](OpBuilder &ob, Location ol, Value j, Value acc) {
                   return ob.create<arith::AddFOp>(ol, acc, weight(ob, ol, j));
                 });
        Value target = nb.create<arith::MulFOp>(l, u, total);
        // (running sum, chosen class or `count` while none).
        auto scan = nb.create<scf::ForOp>(
            l, zero, count, one, ValueRange{scalarConst(nb, l, f64, 0), count},
            [&](OpBuilder &ob, Location ol, Value j, ValueRange acc) {
              Value sum =
                  ob.create<arith::AddFOp>(ol, acc[0], weight(ob, ol, j));
              Value none = ob.create<arith::CmpIOp>(
                  ol, arith::CmpIPredicate::eq, acc[1], count);
              Value past = ob.create<arith::CmpFOp>(
                  ol, arith::CmpFPredicate::OGT, sum, target);
              Value take = ob.create<arith::AndIOp>(ol, none, past);
              Value chosen = ob.create<arith::SelectOp>(ol, take, j, acc[1]);
              ob.create<scf::YieldOp>(ol, ValueRange{sum, chosen});
            });
        Value chosen = scan.getResult(1);
        Value last = nb.create<arith::ConstantIndexOp>(l, classes - 1);
        chosen = nb.create<arith::MinUIOp>(l, chosen, last);
        return nb.create<arith::IndexCastOp>(l, elem, chosen);
      });
}

} // namespace

void loom::populateGraphToLinalgRandomPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerOpPattern<RandomUniformOp, lowerUniform>,
               LowerOpPattern<RandomNormalOp, lowerNormal>,
               LowerOpPattern<BernoulliOp, lowerBernoulli>,
               LowerOpPattern<MultinomialOp, lowerMultinomial>,
               LowerOpPattern<RandomDropoutOp, lowerRandomDropout>>(
      patterns.getContext());
}
