//===- Resize.cpp - graph.resize to linalg --------------------------------===//
//
// ONNX Resize (nearest, linear, cubic; every coordinate transformation
// mode) as one generic over the output that computes, in f64, exactly what
// the ONNX reference computes; dynamic_resize takes its scales or sizes
// from a run-time tensor.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <functional>

using namespace mlir;
using namespace loom::graph;
using namespace loom::graph_to_linalg;

namespace {

/// One resized dim of graph.resize: its index, input size, scale, and
/// the reference's output width (scale * in, not rounded) and size, all
/// but the first as f64 values.
struct ResizedDim {
  int64_t dim;
  Value in, inF, scale, width, outF;
};

/// A resized dim's output size (index) and scale (f64; null for out /
/// in).
struct ResizeSize {
  Value out, scale;
};

} // namespace

/// The input coordinate of output coordinate `x` (f64) along `r`, as in
/// ONNX's reference (onnx/backend/test/case/node/resize.py) and the
/// Resize spec for half_pixel_symmetric.
static Value resizeCoordinate(OpBuilder &b, Location l, CoordinateMode mode,
                              const ResizedDim &r, Value x) {
  Type f64 = b.getF64Type();
  auto c = [&](double v) { return scalarConst(b, l, f64, v); };
  auto isOne = [&](Value v) {
    return b.create<arith::CmpFOp>(l, arith::CmpFPredicate::OEQ, v, c(1));
  };
  auto halfPixel = [&]() -> Value {
    Value s = b.create<arith::DivFOp>(l, b.create<arith::AddFOp>(l, x, c(.5)),
                                      r.scale);
    return b.create<arith::SubFOp>(l, s, c(.5));
  };
  switch (mode) {
  case CoordinateMode::half_pixel:
    return halfPixel();
  case CoordinateMode::pytorch_half_pixel:
    return b.create<arith::SelectOp>(l, isOne(r.width), c(-.5), halfPixel());
  case CoordinateMode::align_corners: {
    Value v = b.create<arith::DivFOp>(
        l,
        b.create<arith::MulFOp>(l, x, b.create<arith::SubFOp>(l, r.inF, c(1))),
        b.create<arith::SubFOp>(l, r.width, c(1)));
    return b.create<arith::SelectOp>(l, isOne(r.width), c(0), v);
  }
  case CoordinateMode::asymmetric:
    return b.create<arith::DivFOp>(l, x, r.scale);
  case CoordinateMode::half_pixel_symmetric: {
    // offset + (x + 0.5) / scale - 0.5, offset = in / 2 * (1 - out /
    // width).
    Value adjustment = b.create<arith::DivFOp>(l, r.outF, r.width);
    Value offset =
        b.create<arith::MulFOp>(l, b.create<arith::DivFOp>(l, r.inF, c(2)),
                                b.create<arith::SubFOp>(l, c(1), adjustment));
    return b.create<arith::AddFOp>(l, offset, halfPixel());
  }
  }
  llvm_unreachable("unknown coordinate mode");
}

/// The resize of `x` to `type`, each dim's output size and scale given
/// by `sizeOf(dim, inputSize, inputSizeAsF64)` (nullopt: not resized).
static Value resizeWith(
    OpBuilder &builder, Location loc, Value x, RankedTensorType type,
    ResizeMode mode, CoordinateMode coordMode, NearestMode nearestMode,
    double a, bool excludeOutside,
    function_ref<std::optional<ResizeSize>(int64_t, Value, Value)> sizeOf) {
  Type elem = type.getElementType(), f64 = builder.getF64Type();
  int64_t rank = type.getRank();
  auto toF64 = [&](OpBuilder &b, Location l, Value index) -> Value {
    return b.create<arith::SIToFPOp>(
        l, f64, b.create<arith::IndexCastOp>(l, b.getI64Type(), index));
  };
  SmallVector<Value> outSizes;
  SmallVector<ResizedDim> resized;
  for (int64_t d = 0; d < rank; ++d) {
    Value in = dimOf(builder, loc, x, d), inF = toF64(builder, loc, in);
    std::optional<ResizeSize> size = sizeOf(d, in, inF);
    if (!size) {
      if (type.isDynamicDim(d))
        outSizes.push_back(in);
      continue;
    }
    if (type.isDynamicDim(d))
      outSizes.push_back(size->out);
    Value outF = toF64(builder, loc, size->out);
    Value scale =
        size->scale ? size->scale
                    : builder.create<arith::DivFOp>(loc, outF, inF).getResult();
    Value width = builder.create<arith::MulFOp>(loc, scale, inF);
    resized.push_back({d, in, inF, scale, width, outF});
  }
  // Per resized dim, its taps: clamped index and weight (none for
  // nearest).
  using Taps = SmallVector<std::pair<Value, Value>>;
  auto tapsOf = [&](OpBuilder &b, Location l, const ResizedDim &r,
                    Value i) -> Taps {
    auto c = [&](double v) { return scalarConst(b, l, f64, v); };
    Value xo = resizeCoordinate(b, l, coordMode, r, toF64(b, l, i));
    Value last = b.create<arith::SubIOp>(l, r.in, indexConst(b, l, 1));
    auto clamped = [&](Value f) -> Value {
      Value idx = b.create<arith::IndexCastOp>(
          l, b.getIndexType(), b.create<arith::FPToSIOp>(l, b.getI64Type(), f));
      return b.create<arith::MinSIOp>(
          l, b.create<arith::MaxSIOp>(l, idx, indexConst(b, l, 0)), last);
    };
    Value base = b.create<math::FloorOp>(l, xo);
    Value ratio = b.create<arith::SubFOp>(l, xo, base);
    if (mode == ResizeMode::nearest) {
      Value f;
      switch (nearestMode) {
      case NearestMode::floor:
        f = base;
        break;
      case NearestMode::ceil:
        f = b.create<math::CeilOp>(l, xo);
        break;
      case NearestMode::round_prefer_floor:
      case NearestMode::round_prefer_ceil: {
        Value up = b.create<arith::CmpFOp>(
            l,
            nearestMode == NearestMode::round_prefer_floor
                ? arith::CmpFPredicate::OGT
                : arith::CmpFPredicate::OGE,
            ratio, c(.5));
        f = b.create<arith::AddFOp>(
            l, base, b.create<arith::SelectOp>(l, up, c(1), c(0)).getResult());
        break;
      }
      }
      return {{clamped(f), Value()}};
    }
    // A whole x: base x - 1 and ratio 1, as the reference.
    Value whole =
        b.create<arith::CmpFOp>(l, arith::CmpFPredicate::OEQ, ratio, c(0));
    base = b.create<arith::SelectOp>(
        l, whole, b.create<arith::SubFOp>(l, base, c(1)), base);
    Value t = b.create<arith::SelectOp>(l, whole, c(1), ratio);
    auto add = [&](Value p, Value q) -> Value {
      return b.create<arith::AddFOp>(l, p, q);
    };
    auto mul = [&](Value p, Value q) -> Value {
      return b.create<arith::MulFOp>(l, p, q);
    };
    auto sub = [&](Value p, Value q) -> Value {
      return b.create<arith::SubFOp>(l, p, q);
    };
    SmallVector<Value> weights;
    int64_t first;
    if (mode == ResizeMode::linear) {
      weights = {sub(c(1), t), t};
      first = 0;
    } else {
      // The reference's cubic_coeffs: the kernel at distances 1 + t, t,
      // 1 - t and 2 - t.
      Value s = sub(c(1), t);
      auto far = [&](Value u) { // 1 < |d| < 2, u = d
        Value v = add(mul(sub(mul(c(a), u), c(5 * a)), u), c(8 * a));
        return sub(mul(v, u), c(4 * a));
      };
      auto near = [&](Value u) { // |d| <= 1
        Value v = sub(mul(c(a + 2), u), c(a + 3));
        return add(mul(mul(v, u), u), c(1));
      };
      weights = {far(add(t, c(1))), near(t), near(s), far(add(s, c(1)))};
      first = -1;
    }
    Taps taps;
    Value sum;
    for (auto [k, w] : llvm::enumerate(weights)) {
      Value f = add(base, c(first + (int64_t)k));
      if (excludeOutside) {
        Value inside = b.create<arith::AndIOp>(
            l, b.create<arith::CmpFOp>(l, arith::CmpFPredicate::OGE, f, c(0)),
            b.create<arith::CmpFOp>(l, arith::CmpFPredicate::OLT, f, r.inF));
        w = b.create<arith::SelectOp>(l, inside, w, c(0));
        sum = sum ? add(sum, w) : w;
      }
      taps.push_back({clamped(f), w});
    }
    if (excludeOutside)
      for (auto &tap : taps)
        tap.second = b.create<arith::DivFOp>(l, tap.second, sum);
    return taps;
  };
  return tabulate(
      builder, loc, type, outSizes,
      [&](OpBuilder &b, Location l, ValueRange i) -> Value {
        SmallVector<Taps> taps;
        for (const ResizedDim &r : resized)
          taps.push_back(tapsOf(b, l, r, i[r.dim]));
        SmallVector<Value> at(i);
        // The value interpolated over resized dims [level, ...) at `at`.
        std::function<Value(size_t)> over = [&](size_t level) -> Value {
          if (level == resized.size()) {
            Value v = b.create<tensor::ExtractOp>(l, x, at);
            return mode == ResizeMode::nearest ? v
                                               : convertScalar(b, l, v, f64);
          }
          Value acc;
          for (auto [index, weight] : taps[level]) {
            at[resized[level].dim] = index;
            Value v = over(level + 1);
            if (!weight)
              return v;
            v = b.create<arith::MulFOp>(l, weight, v);
            acc = acc ? b.create<arith::AddFOp>(l, acc, v) : v;
          }
          return acc;
        };
        Value v = over(0);
        return mode == ResizeMode::nearest ? v : convertScalar(b, l, v, elem);
      });
}

/// ONNX Resize as one generic over the output, exactly as the ONNX
/// reference (onnx/backend/test/case/node/resize.py) computes it, in
/// f64: per resized dim the input coordinate x, then nearest: x rounded
/// by nearest_mode; linear / cubic: the taps base + t (t in [0, 2) or
/// [-1, 3)) with base = floor(x), or x - 1 when x is whole (the
/// reference's ratio 1), weighted by the linear or cubic (cubic_coeff_a)
/// coefficients of x - base, outside taps dropped and the rest
/// renormalized with exclude_outside. Taps read the input at clamped
/// indices (the reference's edge padding) with tensor.extract, the
/// combinations of every resized dim's taps summed innermost dim first.
/// Dims with scale 1 and their own size are plain indices.
static Value lowerResize(OpBuilder &builder, ResizeOp o) {
  Location loc = o.getLoc();
  Value x = o.getX();
  RankedTensorType xt = tensorType(x), type = o.getType();
  Type f64 = builder.getF64Type();
  ArrayRef<double> scales = o.getScales();
  ArrayRef<int64_t> sizes = o.getSizes();
  return resizeWith(
      builder, loc, x, type, o.getMode(), o.getCoordinateMode(),
      o.getNearestMode(), o.getCubicCoeffA().convertToDouble(),
      o.getExcludeOutside(),
      [&](int64_t d, Value in, Value inF) -> std::optional<ResizeSize> {
        if (scales[d] == 1 && (sizes[d] < 0 || sizes[d] == xt.getDimSize(d)))
          return std::nullopt; // not resized
        Value out;
        if (!type.isDynamicDim(d)) {
          out = indexConst(builder, loc, type.getDimSize(d));
        } else {
          // floor(in * scale); a dynamic output dim has no size.
          Value f = builder.create<math::FloorOp>(
              loc, builder.create<arith::MulFOp>(
                       loc, inF, scalarConst(builder, loc, f64, scales[d])));
          out = builder.create<arith::IndexCastOp>(
              loc, builder.getIndexType(),
              builder.create<arith::FPToSIOp>(loc, builder.getI64Type(), f));
        }
        Value scale =
            scales[d] > 0 ? scalarConst(builder, loc, f64, scales[d]) : Value();
        return ResizeSize{out, scale};
      });
}

/// graph.dynamic_resize: every dim resized by the run-time scales (a
/// float operand) or sizes (an integer one).
static Value lowerDynamicResize(OpBuilder &builder, DynamicResizeOp o) {
  Location loc = o.getLoc();
  IndexBuilder ix{builder, loc};
  Type f64 = builder.getF64Type();
  Value param = o.getParam();
  bool bySizes = isa<IntegerType>(tensorType(param).getElementType());
  int64_t rank = o.getType().getRank();
  SmallVector<Value> sizes, scales;
  Value ok = ix.yes();
  for (int64_t d = 0; d < rank; ++d) {
    Value v = builder.create<tensor::ExtractOp>(
        loc, param, ValueRange{indexConst(builder, loc, d)});
    if (bySizes) {
      Value n =
          builder.create<arith::IndexCastOp>(loc, builder.getIndexType(), v);
      ok = ix.both(ok, ix.le(ix.c(0), n));
      sizes.push_back(n);
      continue;
    }
    v = convertScalar(builder, loc, v, f64);
    // A positive, finite scale whose output size fits.
    Value in = dimOf(builder, loc, o.getX(), d);
    Value inF = builder.create<arith::SIToFPOp>(
        loc, f64,
        builder.create<arith::IndexCastOp>(loc, builder.getI64Type(), in));
    Value f = builder.create<math::FloorOp>(
        loc, builder.create<arith::MulFOp>(loc, inF, v));
    Value good = builder.create<arith::AndIOp>(
        loc,
        builder.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT, v,
                                      scalarConst(builder, loc, f64, 0)),
        builder.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, f,
                                      scalarConst(builder, loc, f64, 1e15)));
    ok = ix.both(ok, good);
    f = builder.create<arith::SelectOp>(loc, good, f,
                                        scalarConst(builder, loc, f64, 0));
    sizes.push_back(builder.create<arith::IndexCastOp>(
        loc, builder.getIndexType(),
        builder.create<arith::FPToSIOp>(loc, builder.getI64Type(), f)));
    scales.push_back(v);
  }
  runtimeCheck(builder, o, ok,
               bySizes ? "a size is negative"
                       : "a scale is not positive, or too large");
  return resizeWith(builder, loc, o.getX(), o.getType(), o.getMode(),
                    o.getCoordinateMode(), o.getNearestMode(),
                    o.getCubicCoeffA().convertToDouble(), o.getExcludeOutside(),
                    [&](int64_t d, Value, Value) -> std::optional<ResizeSize> {
                      return ResizeSize{ix.sel(ok, sizes[d], ix.c(0)),
                                        bySizes ? Value() : scales[d]};
                    });
}

void loom::populateGraphToLinalgResizePatterns(RewritePatternSet &patterns) {
  patterns.add<LowerOpPattern<ResizeOp, lowerResize>,
               LowerOpPattern<DynamicResizeOp, lowerDynamicResize>>(
      patterns.getContext());
}
