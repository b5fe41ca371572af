//===- DynamicShapes.cpp - run-time shaped graph ops to linalg ------------===//
//
// graph.dynamic_* and graph.range: ops whose shape parameters are run-time
// tensors. The parameters are read with tensor.extract; an invalid one
// fails a cf.assert naming the op (LoweringUtils.h, "Run-time shape
// parameters") and the code goes on with sizes clamped to zero. A
// reduction or cumsum over run-time axes switches over every possible
// axis set with scf.index_switch. graph.nonzero's result size is the
// data's: counted first, then filled by a sequential loop.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace loom::graph;
using namespace loom::graph_to_linalg;

/// dynamic_reshape: ONNX Reshape with a run-time shape (0 copies the
/// input dim unless allowzero, one -1 is inferred), checked to keep the
/// element count.
static Value lowerDynamicReshape(OpBuilder &builder, DynamicReshapeOp o) {
  Location loc = o.getLoc();
  IndexBuilder ix{builder, loc};
  Value x = o.getX();
  SmallVector<Value> in = dimsOf(builder, loc, x),
                     dims = entries(builder, loc, o.getShape());
  Value ok = ix.yes(), inferred = ix.c(0), known = ix.c(1);
  Value minusOne = ix.c(-1);
  for (auto [i, d] : llvm::enumerate(dims)) {
    // 0 copies the input's dim (unless allowzero).
    if (!o.getAllowzero())
      d = ix.sel(ix.eq(d, ix.c(0)), i < in.size() ? in[i] : ix.c(0), d);
    ok = ix.both(ok, ix.le(minusOne, d));
    known = ix.mul(known, ix.sel(ix.eq(d, minusOne), ix.c(1), d));
    inferred = ix.add(inferred, ix.sel(ix.eq(d, minusOne), ix.c(1), ix.c(0)));
  }
  Value numel = product(ix, in);
  ok = ix.both(ok, ix.le(inferred, ix.c(1)));
  // The -1 dim: the element count over the others (0 when they are).
  Value safeKnown = ix.sel(ix.eq(known, ix.c(0)), ix.c(1), known);
  Value missing =
      ix.sel(ix.eq(known, ix.c(0)), ix.c(0), ix.div(numel, safeKnown));
  for (Value &d : dims)
    d = ix.sel(ix.eq(d, minusOne), missing, d);
  ok = ix.both(ok, ix.eq(product(ix, dims), numel));
  runtimeCheck(builder, o, ok,
               "the shape has a negative entry, more than one -1, or another "
               "element count than the input");
  return reshapeChecked(builder, loc, x, o.getType(), dims, ok);
}

/// dynamic_unsqueeze: size-1 dims inserted at run-time axes.
static Value lowerDynamicUnsqueeze(OpBuilder &builder, DynamicUnsqueezeOp o) {
  Location loc = o.getLoc();
  IndexBuilder ix{builder, loc};
  Value x = o.getX();
  SmallVector<Value> in = dimsOf(builder, loc, x);
  int64_t rank = o.getType().getRank();
  auto [axes, ok] = axesIn(ix, entries(builder, loc, o.getAxes()), ix.c(rank));
  runtimeCheck(builder, o, ok, "the axes are out of range or repeat one");
  SmallVector<Value> dims;
  Value before = ix.c(0); // axes before position p
  for (int64_t p = 0; p < rank; ++p) {
    Value isAxis = ix.no(ix.yes());
    for (Value a : axes)
      isAxis = ix.either(isAxis, ix.eq(a, ix.c(p)));
    dims.push_back(
        ix.sel(isAxis, ix.c(1), ix.pick(in, ix.sub(ix.c(p), before))));
    before = ix.add(before, ix.sel(isAxis, ix.c(1), ix.c(0)));
  }
  return reshapeChecked(builder, loc, x, o.getType(), dims, ok);
}

/// dynamic_squeeze: size-1 dims removed at run-time axes, checked to be 1.
static Value lowerDynamicSqueeze(OpBuilder &builder, DynamicSqueezeOp o) {
  Location loc = o.getLoc();
  IndexBuilder ix{builder, loc};
  Value x = o.getX();
  SmallVector<Value> in = dimsOf(builder, loc, x);
  int64_t rank = in.size(), outRank = o.getType().getRank();
  auto [axes, ok] = axesIn(ix, entries(builder, loc, o.getAxes()), ix.c(rank));
  for (Value a : axes)
    ok = ix.both(ok, ix.eq(ix.pick(in, a), ix.c(1)));
  runtimeCheck(builder, o, ok,
               "the axes are out of range, repeat one, or name a dim "
               "that is not 1");
  SmallVector<Value> dims(outRank, ix.c(0));
  Value before = ix.c(0);
  for (int64_t p = 0; p < rank; ++p) {
    Value isAxis = ix.no(ix.yes());
    for (Value a : axes)
      isAxis = ix.either(isAxis, ix.eq(a, ix.c(p)));
    Value q = ix.sub(ix.c(p), before); // p's position in the result
    for (int64_t j = 0; j < outRank; ++j)
      dims[j] =
          ix.sel(ix.both(ix.no(isAxis), ix.eq(q, ix.c(j))), in[p], dims[j]);
    before = ix.add(before, ix.sel(isAxis, ix.c(1), ix.c(0)));
  }
  return reshapeChecked(builder, loc, x, o.getType(), dims, ok);
}

/// dynamic_slice: ONNX Slice with run-time starts, ends, axes and steps,
/// as a generic reading x at first + i * step per dim.
static Value lowerDynamicSlice(OpBuilder &builder, DynamicSliceOp o) {
  Location loc = o.getLoc();
  IndexBuilder ix{builder, loc};
  Value x = o.getX();
  SmallVector<Value> in = dimsOf(builder, loc, x);
  int64_t rank = in.size();
  SmallVector<Value> starts = entries(builder, loc, o.getStarts()),
                     ends = entries(builder, loc, o.getEnds()),
                     steps = entries(builder, loc, o.getSteps());
  auto [axes, ok] = axesIn(ix, entries(builder, loc, o.getAxes()), ix.c(rank));
  for (Value st : steps)
    ok = ix.both(ok, ix.no(ix.eq(st, ix.c(0))));
  runtimeCheck(builder, o, ok,
               "the axes are out of range or repeat one, or a step is 0");
  SmallVector<Value> first, step, sizes;
  for (int64_t d = 0; d < rank; ++d) {
    Value n = in[d];
    // The bounds of dim d: the entry whose axis is d, else all of it.
    Value s = ix.c(0), e = n, k = ix.c(1);
    for (size_t j = 0; j < axes.size(); ++j) {
      Value mine = ix.eq(axes[j], ix.c(d));
      s = ix.sel(mine, starts[j], s);
      e = ix.sel(mine, ends[j], e);
      k = ix.sel(mine, steps[j], k);
    }
    k = ix.sel(ix.eq(k, ix.c(0)), ix.c(1), k);
    s = ix.fromEnd(s, n);
    e = ix.fromEnd(e, n);
    Value forward = ix.lt(ix.c(0), k);
    Value last = ix.sub(n, ix.c(1));
    // Forward: [s, e) clamped to [0, n]; backward: (e, s] clamped to
    // [-1, n - 1]. Length: (span - 1) / |k| + 1 when span > 0.
    Value sf = ix.clamp(s, ix.c(0), n), ef = ix.clamp(e, ix.c(0), n);
    Value sb = ix.clamp(s, ix.c(0), last), eb = ix.clamp(e, ix.c(-1), last);
    Value span = ix.sel(forward, ix.sub(ef, sf), ix.sub(sb, eb));
    Value absK = ix.sel(forward, k, ix.sub(ix.c(0), k));
    Value len =
        ix.sel(ix.lt(ix.c(0), span),
               ix.add(ix.div(ix.sub(span, ix.c(1)), absK), ix.c(1)), ix.c(0));
    first.push_back(ix.sel(forward, sf, sb));
    step.push_back(k);
    // A dim the (constant) axes do not list is static in the result type,
    // taken whole.
    if (o.getType().isDynamicDim(d))
      sizes.push_back(ix.sel(ok, len, ix.c(0)));
  }
  return tabulate(builder, loc, o.getType(), sizes,
                  [&](OpBuilder &b, Location l, ValueRange i) -> Value {
                    IndexBuilder bx{b, l};
                    SmallVector<Value> at;
                    for (int64_t d = 0; d < rank; ++d)
                      at.push_back(bx.add(first[d], bx.mul(i[d], step[d])));
                    return b.create<tensor::ExtractOp>(l, x, at);
                  });
}

/// An scf.index_switch on `key` with one case per entry of `cases`, each
/// building its `type` result with `build(case)`; the default yields an
/// empty tensor (the run has failed a check by then).
static Value switchOn(OpBuilder &builder, Location loc, Value key,
                      ArrayRef<int64_t> cases, RankedTensorType type,
                      function_ref<Value(int64_t)> build) {
  auto sw = builder.create<scf::IndexSwitchOp>(loc, TypeRange{type}, key, cases,
                                               cases.size());
  OpBuilder::InsertionGuard guard(builder);
  for (auto [i, c] : llvm::enumerate(cases)) {
    builder.createBlock(&sw.getCaseRegions()[i]);
    Value v = build(c);
    if (v.getType() != type)
      v = builder.create<tensor::CastOp>(loc, type, v);
    builder.create<scf::YieldOp>(loc, v);
  }
  builder.createBlock(&sw.getDefaultRegion());
  SmallVector<Value> zeros(type.getNumDynamicDims(),
                           indexConst(builder, loc, 0));
  builder.create<scf::YieldOp>(loc, emptyOf(builder, loc, type, zeros));
  return sw.getResult(0);
}

/// dynamic_reduce_sum: a sum over run-time axes, one case per possible
/// axis set (at most 256) under an scf.index_switch on their bit mask.
static FailureOr<Value> lowerDynamicReduceSum(OpBuilder &builder,
                                              DynamicReduceSumOp o) {
  Location loc = o.getLoc();
  IndexBuilder ix{builder, loc};
  Value x = o.getX();
  RankedTensorType xt = tensorType(x), type = o.getType();
  int64_t rank = xt.getRank();
  bool keepdims = o.getKeepdims();
  // The static result type of reducing `axes`.
  auto reducedType = [&](ArrayRef<int64_t> axes) {
    SmallVector<int64_t> shape;
    for (int64_t d = 0; d < rank; ++d) {
      if (!llvm::is_contained(axes, d))
        shape.push_back(xt.getDimSize(d));
      else if (keepdims)
        shape.push_back(1);
    }
    return xt.clone(shape);
  };
  auto reduceOver = [&](ArrayRef<int64_t> axes) -> Value {
    if (axes.empty())
      return x;
    return reduce(builder, loc, ReduceKind::Sum, x, axes, keepdims,
                  reducedType(axes));
  };
  SmallVector<Value> raw = entries(builder, loc, o.getAxes());
  if (raw.empty()) {
    Value r = o.getNoopWithEmptyAxes() ? x : reduceOver(dimRange(0, rank));
    return builder.create<tensor::CastOp>(loc, type, r).getResult();
  }
  // Every set of k distinct axes, keyed by its bit mask.
  int64_t k = raw.size();
  SmallVector<int64_t> masks;
  for (int64_t m = 0; m < (int64_t(1) << rank); ++m)
    if (llvm::popcount(uint64_t(m)) == k)
      masks.push_back(m);
  if (masks.size() > 256)
    return o.emitError() << "run-time axes over rank " << rank
                         << " have too many possible sets to compile";
  auto [axes, ok] = axesIn(ix, raw, ix.c(rank));
  runtimeCheck(builder, o, ok, "the axes are out of range or repeat one");
  Value key = ix.c(0);
  for (Value a : axes)
    key = ix.add(key, builder.create<arith::ShLIOp>(loc, ix.c(1), a));
  return switchOn(builder, loc, key, masks, type, [&](int64_t m) {
    SmallVector<int64_t> set;
    for (int64_t d = 0; d < rank; ++d)
      if (m & (int64_t(1) << d))
        set.push_back(d);
    return reduceOver(set);
  });
}

/// dynamic_cum_sum: cumsum along a run-time axis, one case per axis.
static Value lowerDynamicCumSum(OpBuilder &builder, DynamicCumSumOp o) {
  Location loc = o.getLoc();
  IndexBuilder ix{builder, loc};
  RankedTensorType type = o.getType();
  int64_t rank = type.getRank();
  auto [axes, ok] = axesIn(ix, entries(builder, loc, o.getAxis()), ix.c(rank));
  runtimeCheck(builder, o, ok, "the axis is out of range");
  return switchOn(builder, loc, axes.front(), dimRange(0, rank), type,
                  [&](int64_t axis) {
                    return cumsumAlong(builder, loc, o.getX(), type, axis,
                                       o.getExclusive(), o.getReverse());
                  });
}

/// dynamic_fill: a fill of a run-time shape (negative sizes fail).
static Value lowerDynamicFill(OpBuilder &builder, DynamicFillOp o) {
  Location loc = o.getLoc();
  IndexBuilder ix{builder, loc};
  SmallVector<Value> dims = entries(builder, loc, o.getShape());
  Value ok = ix.yes();
  for (Value &d : dims) {
    ok = ix.both(ok, ix.le(ix.c(0), d));
    d = ix.max(d, ix.c(0));
  }
  runtimeCheck(builder, o, ok, "the shape has a negative entry");
  Value value =
      builder.create<arith::ConstantOp>(loc, cast<TypedAttr>(o.getValue()));
  return filled(builder, loc, o.getType(), dims, value);
}

/// dynamic_broadcast: x broadcast to a run-time shape (NumPy rules,
/// checked).
static Value lowerDynamicBroadcast(OpBuilder &builder, DynamicBroadcastOp o) {
  Location loc = o.getLoc();
  IndexBuilder ix{builder, loc};
  Value x = o.getX();
  RankedTensorType type = o.getType();
  SmallVector<Value> in = dimsOf(builder, loc, x),
                     shape = entries(builder, loc, o.getShape());
  int64_t rank = type.getRank(), xr = in.size(), n = shape.size();
  SmallVector<Value> dims, xOne;
  Value ok = ix.yes();
  for (int64_t p = 0; p < rank; ++p) {
    Value xd = p - (rank - xr) >= 0 ? in[p - (rank - xr)] : ix.c(1);
    Value sd = p - (rank - n) >= 0 ? shape[p - (rank - n)] : ix.c(1);
    Value one = ix.eq(xd, ix.c(1));
    ok = ix.both(ok,
                 ix.either(one, ix.either(ix.eq(sd, ix.c(1)), ix.eq(sd, xd))));
    ok = ix.both(ok, ix.le(ix.c(0), sd));
    dims.push_back(ix.sel(one, ix.max(sd, ix.c(0)), xd));
    if (p - (rank - xr) >= 0)
      xOne.push_back(one);
  }
  runtimeCheck(builder, o, ok, "the shape does not broadcast with the input");
  for (Value &d : dims)
    d = ix.sel(ok, d, ix.c(0));
  return tabulate(builder, loc, type, dynamicOnly(type, dims),
                  [&](OpBuilder &b, Location l, ValueRange i) -> Value {
                    IndexBuilder bx{b, l};
                    SmallVector<Value> at;
                    for (int64_t d = 0; d < xr; ++d)
                      at.push_back(bx.sel(xOne[d], bx.c(0), i[rank - xr + d]));
                    return b.create<tensor::ExtractOp>(l, x, at);
                  });
}

/// range: start + i * delta for i < ceil((limit - start) / delta), from
/// run-time scalars (delta 0 or a non-finite count fails).
static Value lowerRange(OpBuilder &builder, RangeOp o) {
  Location loc = o.getLoc();
  IndexBuilder ix{builder, loc};
  Type elem = o.getType().getElementType();
  auto scalar = [&](Value t) -> Value {
    return builder.create<tensor::ExtractOp>(loc, t, ValueRange{});
  };
  Value start = scalar(o.getStart()), limit = scalar(o.getLimit()),
        delta = scalar(o.getDelta());
  Value zero = scalarConst(builder, loc, elem, 0), count, ok;
  if (isa<FloatType>(elem)) {
    ok = builder.create<arith::CmpFOp>(loc, arith::CmpFPredicate::ONE, delta,
                                       zero);
    Value q = builder.create<arith::DivFOp>(
        loc, builder.create<arith::SubFOp>(loc, limit, start), delta);
    q = builder.create<math::CeilOp>(loc, q);
    // NaN or huge counts become 0 with the failed check below.
    Value f64 = convertScalar(builder, loc, q, builder.getF64Type());
    Value finite = builder.create<arith::CmpFOp>(
        loc, arith::CmpFPredicate::OLT, f64,
        builder.create<arith::ConstantOp>(loc, builder.getF64FloatAttr(1e15)));
    ok = ix.both(ok, finite);
    f64 = builder.create<arith::SelectOp>(
        loc, finite, f64,
        builder.create<arith::ConstantOp>(loc, builder.getF64FloatAttr(0)));
    count = builder.create<arith::IndexCastOp>(
        loc, builder.getIndexType(),
        builder.create<arith::FPToSIOp>(loc, builder.getI64Type(), f64));
  } else {
    ok = builder.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, delta,
                                       zero);
    Value one = scalarConst(builder, loc, elem, 1);
    Value safe = builder.create<arith::SelectOp>(loc, ok, delta, one);
    // ceil((limit - start) / delta): the truncated quotient, one up when
    // the remainder is left and has delta's sign.
    Value span = builder.create<arith::SubIOp>(loc, limit, start);
    Value q = builder.create<arith::DivSIOp>(loc, span, safe);
    Value rem = builder.create<arith::RemSIOp>(loc, span, safe);
    auto negative = [&](Value v) -> Value {
      return builder.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, v,
                                           zero);
    };
    Value up = builder.create<arith::AndIOp>(
        loc,
        builder.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, rem, zero),
        builder.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                      negative(rem), negative(safe)));
    q = builder.create<arith::SelectOp>(
        loc, up, builder.create<arith::AddIOp>(loc, q, one), q);
    count = builder.create<arith::IndexCastOp>(loc, builder.getIndexType(), q);
  }
  runtimeCheck(builder, o, ok, "delta is 0, or the count is not finite");
  count = ix.sel(ok, ix.max(count, ix.c(0)), ix.c(0));
  return tabulate(builder, loc, o.getType(), {count},
                  [&](OpBuilder &b, Location l, ValueRange i) -> Value {
                    Value f =
                        b.create<arith::IndexCastOp>(l, b.getI64Type(), i[0]);
                    f = convertScalar(b, l, f, elem);
                    return addScalar(b, l, start, mulScalar(b, l, f, delta));
                  });
}

/// dynamic_tile: x repeated a run-time number of times per dim.
static Value lowerDynamicTile(OpBuilder &builder, DynamicTileOp o) {
  Location loc = o.getLoc();
  IndexBuilder ix{builder, loc};
  Value x = o.getX();
  SmallVector<Value> in = dimsOf(builder, loc, x),
                     reps = entries(builder, loc, o.getRepeats());
  Value ok = ix.yes();
  SmallVector<Value> dims;
  for (auto [n, r] : llvm::zip(in, reps)) {
    ok = ix.both(ok, ix.le(ix.c(0), r));
    dims.push_back(ix.mul(n, ix.max(r, ix.c(0))));
  }
  runtimeCheck(builder, o, ok, "a repeat count is negative");
  return tabulate(builder, loc, o.getType(), dims,
                  [&](OpBuilder &b, Location l, ValueRange i) -> Value {
                    SmallVector<Value> at;
                    for (auto [d, n] : llvm::enumerate(in))
                      at.push_back(b.create<arith::RemUIOp>(l, i[d], n));
                    return b.create<tensor::ExtractOp>(l, x, at);
                  });
}

/// dynamic_pad: ONNX Pad with run-time pads and value (constant, reflect
/// or edge), as a generic over the result.
static Value lowerDynamicPad(OpBuilder &builder, DynamicPadOp o) {
  Location loc = o.getLoc();
  IndexBuilder ix{builder, loc};
  Value x = o.getX();
  SmallVector<Value> in = dimsOf(builder, loc, x),
                     pads = entries(builder, loc, o.getPads());
  int64_t rank = in.size();
  PadMode mode = o.getMode();
  Value ok = ix.yes();
  SmallVector<Value> dims;
  for (int64_t d = 0; d < rank; ++d) {
    Value size = ix.add(in[d], ix.add(pads[d], pads[rank + d]));
    ok = ix.both(ok, ix.le(ix.c(0), size));
    // Reflect and edge read the input: it must have elements (reflect:
    // more than the pads).
    Value empty = ix.eq(in[d], ix.c(0));
    if (mode != PadMode::constant)
      ok = ix.both(ok, ix.either(ix.no(empty), ix.eq(size, ix.c(0))));
    if (mode == PadMode::reflect)
      ok = ix.both(
          ok, ix.both(ix.lt(pads[d], in[d]), ix.lt(pads[rank + d], in[d])));
    dims.push_back(size);
  }
  runtimeCheck(builder, o, ok,
               "the pads make a negative size or, with reflect or edge, "
               "reach past the input");
  for (Value &d : dims)
    d = ix.sel(ok, d, ix.c(0));
  Value value =
      builder.create<tensor::ExtractOp>(loc, o.getValue(), ValueRange{});
  return tabulate(
      builder, loc, o.getType(), dims,
      [&](OpBuilder &b, Location l, ValueRange i) -> Value {
        IndexBuilder bx{b, l};
        SmallVector<Value> at;
        Value inside = bx.yes();
        for (int64_t d = 0; d < rank; ++d) {
          Value p = bx.sub(i[d], pads[d]), last = bx.sub(in[d], bx.c(1));
          if (mode == PadMode::constant) {
            inside =
                bx.both(inside, bx.both(bx.le(bx.c(0), p), bx.lt(p, in[d])));
          } else if (mode == PadMode::reflect) {
            // |p|, then mirrored at the last element: last - |last - p|.
            p = bx.max(p, bx.sub(bx.c(0), p));
            Value over = bx.sub(last, p);
            p = bx.sub(last, bx.max(over, bx.sub(bx.c(0), over)));
          }
          at.push_back(bx.clamp(p, bx.c(0), bx.max(last, bx.c(0))));
        }
        if (mode != PadMode::constant)
          return b.create<tensor::ExtractOp>(l, x, at);
        auto read = b.create<scf::IfOp>(
            l, inside,
            [&](OpBuilder &tb, Location tl) {
              tb.create<scf::YieldOp>(
                  tl, tb.create<tensor::ExtractOp>(tl, x, at).getResult());
            },
            [&](OpBuilder &eb, Location el) {
              eb.create<scf::YieldOp>(el, value);
            });
        return read.getResult(0);
      });
}

/// dynamic_top_k: k checked against the axis dim, clamped into it.
static SmallVector<Value> lowerDynamicTopK(OpBuilder &builder,
                                           DynamicTopKOp o) {
  Location loc = o.getLoc();
  IndexBuilder ix{builder, loc};
  Value k = entries(builder, loc, o.getK()).front();
  Value dim = dimOf(builder, loc, o.getX(), o.getAxis());
  Value ok = ix.both(ix.le(ix.c(0), k), ix.le(k, dim));
  runtimeCheck(builder, o, ok, "k is negative or larger than the axis dim");
  return topKWith(builder, loc, o.getX(), o.getValues().getType(),
                  o.getIndices().getType(), o.getAxis(), o.getSmallest(),
                  ix.sel(ok, k, ix.c(0)));
}

/// nonzero: the count of true elements (a sum reduction), then one
/// sequential pass over the mask in row-major order (an scf.for nest that
/// carries the result and its next row) writing each true element's
/// coordinates. The result's size is the count, known only here: its
/// buffer is dynamic (a run-time slot of the CPU memory plan).
static Value lowerNonZero(OpBuilder &builder, NonZeroOp o) {
  Location loc = o.getLoc();
  Value mask = o.getMask();
  RankedTensorType maskType = tensorType(mask), type = o.getType();
  int64_t rank = maskType.getRank();
  Type i64 = builder.getI64Type();
  Value ones = mapLike(builder, loc, mask, i64, {}, {},
                       [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                         return b.create<arith::ExtUIOp>(l, i64, a[0]);
                       });
  Value total = reduce(builder, loc, ReduceKind::Sum, ones, dimRange(0, rank),
                       false, RankedTensorType::get({}, i64));
  Value count = builder.create<arith::IndexCastOp>(
      loc, builder.getIndexType(),
      builder.create<tensor::ExtractOp>(loc, total, ValueRange{}));
  Value rows = emptyOf(builder, loc, type, {count});
  SmallVector<Value> lbs(rank, indexConst(builder, loc, 0)),
      steps(rank, indexConst(builder, loc, 1)),
      ubs = dimsOf(builder, loc, mask);
  scf::LoopNest nest = scf::buildLoopNest(
      builder, loc, lbs, ubs, steps,
      ValueRange{rows, indexConst(builder, loc, 0)},
      [&](OpBuilder &b, Location l, ValueRange ivs,
          ValueRange acc) -> scf::ValueVector {
        Value bit = b.create<tensor::ExtractOp>(l, mask, ivs);
        auto write = b.create<scf::IfOp>(
            l, bit,
            [&](OpBuilder &tb, Location tl) {
              IndexBuilder tx{tb, tl};
              Value r = acc[0];
              for (int64_t d = 0; d < rank; ++d) {
                Value coord = tb.create<arith::IndexCastOp>(
                    tl, type.getElementType(), ivs[d]);
                r = tb.create<tensor::InsertOp>(tl, coord, r,
                                                ValueRange{acc[1], tx.c(d)});
              }
              tb.create<scf::YieldOp>(tl,
                                      ValueRange{r, tx.add(acc[1], tx.c(1))});
            },
            [&](OpBuilder &eb, Location el) {
              eb.create<scf::YieldOp>(el, acc);
            });
        return {write.getResult(0), write.getResult(1)};
      });
  // (A scalar mask has no loop: the body runs once.)
  return nest.results[0];
}

void loom::populateGraphToLinalgDynamicShapePatterns(
    RewritePatternSet &patterns) {
  patterns.add<LowerOpPattern<DynamicReshapeOp, lowerDynamicReshape>,
               LowerOpPattern<DynamicUnsqueezeOp, lowerDynamicUnsqueeze>,
               LowerOpPattern<DynamicSqueezeOp, lowerDynamicSqueeze>,
               LowerOpPattern<DynamicSliceOp, lowerDynamicSlice>,
               LowerOpPattern<DynamicReduceSumOp, lowerDynamicReduceSum>,
               LowerOpPattern<DynamicCumSumOp, lowerDynamicCumSum>,
               LowerOpPattern<DynamicFillOp, lowerDynamicFill>,
               LowerOpPattern<DynamicBroadcastOp, lowerDynamicBroadcast>,
               LowerOpPattern<RangeOp, lowerRange>,
               LowerOpPattern<DynamicTileOp, lowerDynamicTile>,
               LowerOpPattern<DynamicPadOp, lowerDynamicPad>,
               LowerOpPattern<DynamicTopKOp, lowerDynamicTopK>,
               LowerOpPattern<NonZeroOp, lowerNonZero>>(patterns.getContext());
}
