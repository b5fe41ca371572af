//===- OnnxIndexing.cpp - ONNX indexing and vision ops as graph ops -------===//
//
// Ops that pick, place or interpolate elements by index, written as gathers
// and scatters of the graph dialect with index arithmetic around them (so
// the CPU and CUDA code and the gradients come from those ops):
//  - GatherND / ScatterND: the index tuples become flat offsets into the
//    data with its leading dims merged; one gather / scatter_elements.
//  - ReverseSequence: a per-(time, batch) source index, gather_elements.
//  - MaxUnpool: a scatter into a zero tensor by the flat indices.
//  - MaxPool's Indices output: every window element gathered by a constant
//    index table, an arg max over the window, the table read at it.
//  - LRN: the squares' window sum as an average pool over channels.
//  - GridSample and RoiAlign: sample coordinates computed elementwise, the
//    neighbours read with gathers, weighted and summed.
// Shapes the index tables are built from must be static; a dynamic one is
// refused naming the op.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

#include <array>
#include <cmath>

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;
using graph::CompareDirection;

namespace {

int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

/// An i64 constant of `shape`.
Value indexConstant(ImportContext &c, ArrayRef<int64_t> values,
                    ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, IntegerType::get(&c.ctx, 64));
  return c.b.constant(DenseElementsAttr::get(type, values));
}

/// A float constant of `shape` with `like`'s element type.
Value floatConstant(ImportContext &c, Value like, ArrayRef<double> values,
                    ArrayRef<int64_t> shape) {
  if (!like)
    return {};
  return constantOf(c, values, shape, tensorOf(like).getElementType());
}

/// 1 where `cond` holds, else 0, in `like`'s element type.
Value select01(ImportContext &c, Value cond, Value like) {
  return c.b.where(cond, scalarLike(c, like, 1.0), scalarLike(c, like, 0.0));
}

/// Row-major strides of `dims`.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> dims) {
  SmallVector<int64_t> strides(dims.size(), 1);
  for (int64_t i = (int64_t)dims.size() - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

/// The flat offsets of the index tuples in the last dim of `indices` into
/// dims `dims` (negative entries count from the end): the sum of each
/// tuple's entries times the dims' strides. The result drops the last dim.
Value flatOffsets(ImportContext &c, Value indices, ArrayRef<int64_t> dims) {
  int64_t k = dims.size();
  Value idx = c.b.cast(indices, DType::i64);
  Value zero = c.b.scalar(0, DType::i64);
  Value negative = c.b.compare(CompareDirection::lt, idx, zero);
  idx = c.b.add(idx, c.b.where(negative, indexConstant(c, dims, {k}), zero));
  return c.b.reduceSum(c.b.mul(idx, indexConstant(c, stridesOf(dims), {k})),
                       {-1});
}

/// Reflects coordinates `x` into [twiceLow / 2, twiceHigh / 2], mirroring
/// at each end as often as needed.
Value reflect(ImportContext &c, Value x, double twiceLow, double twiceHigh) {
  if (twiceLow == twiceHigh)
    return c.b.mul(x, scalarLike(c, x, 0.0));
  double low = twiceLow / 2, span = (twiceHigh - twiceLow) / 2;
  Value in = c.b.abs(c.b.sub(x, scalarLike(c, x, low)));
  Value extra = c.b.rem(in, scalarLike(c, x, span));
  Value flips = c.b.floor(c.b.div(in, scalarLike(c, x, span)));
  Value even =
      c.b.compare(CompareDirection::eq, c.b.rem(flips, scalarLike(c, x, 2.0)),
                  scalarLike(c, x, 0.0));
  return c.b.where(even, c.b.add(extra, scalarLike(c, x, low)),
                   c.b.sub(scalarLike(c, x, span + low), extra));
}

enum class GridPadding { zeros, border, reflection };

/// A coordinate along a dim of `size` moved inside it as `padding` says
/// (zeros leaves it where it is).
Value padCoordinate(ImportContext &c, Value x, int64_t size,
                    GridPadding padding, bool alignCorners) {
  if (padding == GridPadding::zeros)
    return x;
  if (padding == GridPadding::reflection)
    x = alignCorners ? reflect(c, x, 0, 2.0 * (size - 1))
                     : reflect(c, x, -1, 2.0 * size - 1);
  return c.b.clamp(x, 0.0, double(size - 1));
}

/// Reads image planes at integral coordinates: `planes` is [N, C, H * W],
/// `ys` and `xs` are [N, P...] floats holding whole numbers. Returns the
/// values [N, C, P...] and a [N, 1, P...] mask, 1 where the coordinates
/// are inside the image (the values read there are at the clamped
/// position elsewhere).
std::pair<Value, Value> readPlanes(ImportContext &c, Value planes, Value ys,
                                   Value xs, int64_t h, int64_t w,
                                   ArrayRef<int64_t> outShape) {
  Value cy = c.b.clamp(ys, 0.0, double(h - 1));
  Value cx = c.b.clamp(xs, 0.0, double(w - 1));
  Value mask =
      c.b.mul(select01(c, c.b.compare(CompareDirection::eq, cy, ys), ys),
              select01(c, c.b.compare(CompareDirection::eq, cx, xs), xs));
  Value flat = c.b.cast(c.b.add(c.b.mul(cy, scalarLike(c, cy, double(w))), cx),
                        DType::i64);
  int64_t n = outShape[0], ch = outShape[1];
  int64_t points = product(outShape.drop_front(2));
  Value idx =
      c.b.broadcastTo(c.b.reshape(flat, {n, 1, points}), {n, ch, points});
  Value values = c.b.reshape(c.b.gatherElements(planes, idx, 2), outShape);
  return {values, c.b.unsqueeze(mask, {1})};
}

/// The cubic convolution weights (A = -0.75) of the 4 taps around a point
/// at fraction `t` past the second tap.
std::array<Value, 4> cubicWeights(ImportContext &c, Value t) {
  const double a = -0.75;
  auto near = [&](Value u) { // |u| <= 1
    Value p =
        c.b.sub(c.b.mul(u, scalarLike(c, u, a + 2)), scalarLike(c, u, a + 3));
    return c.b.add(c.b.mul(c.b.mul(p, u), u), scalarLike(c, u, 1.0));
  };
  auto far = [&](Value u) { // 1 < |u| < 2
    Value p = c.b.sub(c.b.mul(u, scalarLike(c, u, a)), scalarLike(c, u, 5 * a));
    p = c.b.add(c.b.mul(p, u), scalarLike(c, u, 8 * a));
    return c.b.sub(c.b.mul(p, u), scalarLike(c, u, 4 * a));
  };
  Value one = scalarLike(c, t, 1.0), two = scalarLike(c, t, 2.0);
  return {far(c.b.add(t, one)), near(t), near(c.b.sub(one, t)),
          far(c.b.sub(two, t))};
}

} // namespace

namespace loom::onnx_import {

/// GatherND: data [b..., g..., r...] and indices [b..., i..., k] with k
/// g-dims give [b..., i..., r...]. The batch and g dims of data merge into
/// one, which a gather reads at batch * |g| + the tuple's offset.
LogicalResult gatherND(ImportContext &c) {
  Value data = c.input(0), indices = c.input(1);
  auto dataShape = staticShape(c, data, "GatherND's data");
  auto idxShape = staticShape(c, indices, "GatherND's indices");
  if (failed(dataShape) || failed(idxShape))
    return failure();
  int64_t batch = c.attrInt("batch_dims", 0);
  int64_t r = dataShape->size(), q = idxShape->size();
  if (q < 1 || batch < 0 || batch >= std::min(r, q))
    return c.error("batch_dims " + Twine(batch) +
                   " must be below the ranks of data and indices");
  int64_t k = idxShape->back();
  if (k < 1 || batch + k > r)
    return c.error("index tuples of " + Twine(k) +
                   " entries do not fit data of rank " + Twine(r) +
                   " with batch_dims " + Twine(batch));
  for (int64_t i = 0; i < batch; ++i)
    if ((*dataShape)[i] != (*idxShape)[i])
      return c.error("batch dim " + Twine(i) + " of data (" +
                     Twine((*dataShape)[i]) + ") and indices (" +
                     Twine((*idxShape)[i]) + ") differ");
  ArrayRef<int64_t> dims(*dataShape);
  ArrayRef<int64_t> gDims = dims.slice(batch, k);
  int64_t gSize = product(gDims), bSize = product(dims.take_front(batch));
  Value offsets = flatOffsets(c, indices, gDims);
  if (batch > 0) {
    // The batch's first row: its flat batch number times |g|.
    SmallVector<int64_t> bShape(dims.take_front(batch));
    bShape.append(q - 1 - batch, 1);
    SmallVector<int64_t> base;
    for (int64_t i = 0; i < bSize; ++i)
      base.push_back(i * gSize);
    offsets = c.b.add(offsets, indexConstant(c, base, bShape));
  }
  SmallVector<int64_t> merged = {bSize * gSize};
  merged.append(dims.begin() + batch + k, dims.end());
  c.setOutput(0, c.b.gather(c.b.reshape(data, merged), offsets, 0));
  return success();
}

/// ScatterND: updates [i..., r...] written (or combined by `reduction`)
/// at the index tuples [i..., k] of data [g..., r...], as a
/// scatter_elements along the merged g dims of data seen as [|g|, |r|].
LogicalResult scatterND(ImportContext &c) {
  std::string r = c.attrString("reduction", "none");
  auto reduction = graph::symbolizeScatterReduction(r);
  if (!reduction)
    return c.error("unsupported reduction '" + r + "'");
  Value data = c.input(0), indices = c.input(1), updates = c.input(2);
  auto dataShape = staticShape(c, data, "ScatterND's data");
  auto idxShape = staticShape(c, indices, "ScatterND's indices");
  auto updShape = staticShape(c, updates, "ScatterND's updates");
  if (failed(dataShape) || failed(idxShape) || failed(updShape))
    return failure();
  ArrayRef<int64_t> dims(*dataShape), idx(*idxShape);
  if (idx.empty() || idx.back() < 1 || idx.back() > (int64_t)dims.size())
    return c.error("index tuples must have 1 to " + Twine(dims.size()) +
                   " entries");
  int64_t k = idx.back();
  SmallVector<int64_t> expected(idx.drop_back());
  expected.append(dims.begin() + k, dims.end());
  if (ArrayRef<int64_t>(expected) != ArrayRef<int64_t>(*updShape))
    return c.error("updates must have shape indices.shape[:-1] + "
                   "data.shape[k:]");
  int64_t rows = product(idx.drop_back()), rest = product(dims.drop_front(k));
  Value offsets =
      c.b.reshape(flatOffsets(c, indices, dims.take_front(k)), {rows, 1});
  offsets = c.b.broadcastTo(offsets, {rows, rest});
  Value flat = c.b.reshape(data, {product(dims.take_front(k)), rest});
  Value y = c.b.scatterElements(
      flat, offsets, c.b.reshape(updates, {rows, rest}), 0, *reduction);
  c.setOutput(0, c.b.reshape(y, dims));
  return success();
}

/// ReverseSequence: along the time axis, the first seq_lens[b] elements of
/// batch entry b reversed, the rest kept: a gather_elements by
/// t < len ? len - 1 - t : t.
LogicalResult reverseSequence(ImportContext &c) {
  Value x = c.input(0), lens = c.input(1);
  auto shape = staticShape(c, x, "ReverseSequence's input");
  if (failed(shape) || !lens)
    return failure();
  int64_t rank = shape->size();
  int64_t t = c.attrInt("time_axis", 0), b = c.attrInt("batch_axis", 1);
  if (rank < 2 || !((t == 0 && b == 1) || (t == 1 && b == 0)))
    return c.error("time_axis and batch_axis must be 0 and 1 (in either "
                   "order) of an input of rank 2 or more");
  SmallVector<int64_t> tb(rank, 1), bOnly(rank, 1);
  tb[t] = (*shape)[t];
  tb[b] = bOnly[b] = (*shape)[b];
  Value time = c.b.iota(tb, t);
  Value len = c.b.reshape(c.b.cast(lens, DType::i64), bOnly);
  Value reversed = c.b.sub(c.b.sub(len, c.b.scalar(1, DType::i64)), time);
  Value inside = c.b.compare(CompareDirection::lt, time, len);
  Value src = c.b.broadcastTo(c.b.where(inside, reversed, time), *shape);
  c.setOutput(0, c.b.gatherElements(x, src, t));
  return success();
}

/// MaxUnpool: X's values scattered to the flat output positions held in I
/// (as MaxPool's Indices output gives them), zeros elsewhere.
LogicalResult maxUnpool(ImportContext &c) {
  Value x = c.input(0), indices = c.input(1);
  auto shape = staticShape(c, x, "MaxUnpool's input");
  if (failed(shape) || !indices)
    return failure();
  SmallVector<int64_t> kernel = c.attrInts("kernel_shape");
  size_t spatial = kernel.size();
  if (shape->size() != spatial + 2)
    return c.error("expected a rank " + Twine(spatial + 2) + " input for " +
                   Twine(spatial) + " kernel sizes");
  SmallVector<int64_t> strides = c.attrInts("strides");
  SmallVector<int64_t> pads = c.attrInts("pads");
  if (strides.empty())
    strides.assign(spatial, 1);
  if (pads.empty())
    pads.assign(2 * spatial, 0);
  if (strides.size() != spatial || pads.size() != 2 * spatial)
    return c.error("strides and pads must have one and two entries per "
                   "spatial dim");
  SmallVector<int64_t> out = {(*shape)[0], (*shape)[1]};
  for (size_t i = 0; i < spatial; ++i)
    out.push_back(((*shape)[i + 2] - 1) * strides[i] - pads[i] -
                  pads[i + spatial] + kernel[i]);
  // As ONNX's reference: the indices address the inferred shape; a given
  // output_shape puts that result at its start, zeros after it.
  if (llvm::any_of(out, [](int64_t d) { return d < 1; }))
    return c.error("the unpooled shape has a dim below 1");
  int64_t count = product(*shape), rank = out.size();
  Value zeros = c.b.broadcastTo(scalarLike(c, x, 0.0), {product(out)});
  Value y =
      c.b.reshape(c.b.scatterElements(zeros, c.b.reshape(indices, {count}),
                                      c.b.reshape(x, {count}), 0),
                  out);
  if (c.hasInput(2) && !c.knownInput(2)) {
    Value given = c.input(2);
    if (!given)
      return failure();
    Value extra =
        c.b.sub(c.b.cast(given, DType::i64), indexConstant(c, out, {rank}));
    Value padding = c.b.concat(
        {indexConstant(c, SmallVector<int64_t>(rank, 0), {rank}), extra}, 0);
    y = c.b.dynamicPad(y, padding, scalarLike(c, x, 0.0));
  } else if (c.hasInput(2)) {
    auto given = c.intsInput(2, "output_shape of MaxUnpool");
    if (failed(given))
      return failure();
    if ((int64_t)given->size() != rank)
      return c.error("output_shape must have " + Twine(rank) + " entries");
    SmallVector<int64_t> padding(rank, 0);
    for (int64_t i = 0; i < rank; ++i) {
      if ((*given)[i] < out[i])
        return c.error("output_shape dim " + Twine(i) + " (" +
                       Twine((*given)[i]) + ") is below the unpooled size " +
                       Twine(out[i]));
      padding.push_back((*given)[i] - out[i]);
    }
    if (llvm::any_of(padding, [](int64_t p) { return p != 0; }))
      y = c.b.pad(y, padding);
  }
  c.setOutput(0, y);
  return success();
}

/// LRN: x / (bias + alpha / size * sum of squares over a window of `size`
/// channels) ^ beta; the window sum divided by size is an average pool
/// (with padding counted) of the squares seen as [N, 1, C, rest].
LogicalResult lrn(ImportContext &c) {
  Value x = c.input(0);
  auto shape = staticShape(c, x, "LRN's input");
  if (failed(shape))
    return failure();
  if (shape->size() < 3)
    return c.error("expected an input of rank 3 or more");
  if (!isFloat(x))
    return c.error("input 0 must hold floats");
  int64_t size = c.attrInt("size", 0);
  if (size < 1)
    return c.error("size must be positive");
  double alpha = c.attrFloat("alpha", 1e-4f), beta = c.attrFloat("beta", 0.75f);
  double bias = c.attrFloat("bias", 1.0f);
  int64_t n = (*shape)[0], ch = (*shape)[1];
  Value squares = c.b.reshape(
      c.b.mul(x, x), {n, 1, ch, product(ArrayRef(*shape).drop_front(2))});
  Value mean =
      c.b.avgPool(squares, {size, 1}, {1, 1}, {(size - 1) / 2, 0, size / 2, 0},
                  /*countIncludePad=*/true);
  Value scale =
      c.b.add(c.b.mul(c.b.reshape(mean, *shape), scalarLike(c, x, alpha)),
              scalarLike(c, x, bias));
  c.setOutput(0, c.b.div(x, c.b.pow(scale, scalarLike(c, x, beta))));
  return success();
}

Value maxPoolIndices(ImportContext &c, Value x, Value y,
                     ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                     ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                     bool columnMajor) {
  auto inShape = staticShape(c, x, "MaxPool's Indices output");
  if (failed(inShape) || !y)
    return {};
  auto outType = cast<RankedTensorType>(y.getType());
  if (!outType.hasStaticShape()) {
    (void)c.error("MaxPool's Indices output needs a static shape");
    return {};
  }
  size_t spatial = kernel.size();
  ArrayRef<int64_t> in = ArrayRef(*inShape).drop_front(2);
  ArrayRef<int64_t> out = outType.getShape().drop_front(2);
  int64_t windows = product(kernel), positions = product(out),
          plane = product(in);
  SmallVector<int64_t> inStrides = stridesOf(in);
  // Column-major (storage_order 1): the first spatial dim varies fastest.
  SmallVector<int64_t> reportStrides(spatial, 1);
  for (size_t i = 1; i < spatial; ++i)
    reportStrides[i] = reportStrides[i - 1] * in[i - 1];
  // For each window element w and output position p: the input element it
  // reads and the index to report. A padding position stands in for the
  // window's first element inside the input: it can win only where that
  // element wins too (it has the same value and index), so the first
  // maximum is the first one inside, as ONNX Runtime picks it, for any
  // element type and without a sentinel value.
  SmallVector<int64_t> read(windows * positions, 0),
      report(windows * positions, 0);
  SmallVector<int64_t> kStrides = stridesOf(kernel), oStrides = stridesOf(out);
  for (int64_t p = 0; p < positions; ++p) {
    SmallVector<bool> inside(windows, true);
    for (int64_t w = 0; w < windows; ++w) {
      int64_t flat = 0, rep = 0;
      for (size_t d = 0; d < spatial; ++d) {
        int64_t kd = w / kStrides[d] % kernel[d];
        int64_t od = p / oStrides[d] % out[d];
        int64_t pos = od * strides[d] - pads[d] + kd * dilations[d];
        inside[w] = inside[w] && pos >= 0 && pos < in[d];
        flat += pos * inStrides[d];
        rep += pos * (columnMajor ? reportStrides[d] : inStrides[d]);
      }
      read[w * positions + p] = flat;
      report[w * positions + p] = rep;
    }
    const bool *first = llvm::find(inside, true);
    int64_t stand = first == inside.end() ? -1 : first - inside.begin();
    for (int64_t w = 0; w < windows; ++w) {
      if (inside[w])
        continue;
      int64_t at = w * positions + p, from = stand * positions + p;
      read[at] = stand < 0 ? 0 : read[from];
      report[at] = stand < 0 ? 0 : report[from];
    }
  }
  int64_t n = (*inShape)[0], ch = (*inShape)[1];
  Value flatX = c.b.reshape(x, {n, ch, plane});
  Value candidates = c.b.reshape(
      c.b.gather(flatX, indexConstant(c, read, {windows * positions}), 2),
      {n, ch, windows, positions});
  Value best = c.b.argMax(candidates, 2, /*keepdims=*/true);
  Value table = c.b.broadcastTo(indexConstant(c, report, {windows, positions}),
                                {n, ch, windows, positions});
  Value idx = c.b.gatherElements(table, best, 2);
  SmallVector<int64_t> planeBase;
  for (int64_t i = 0; i < n * ch; ++i)
    planeBase.push_back(i * plane);
  idx = c.b.add(idx, indexConstant(c, planeBase, {n, ch, 1, 1}));
  return c.b.reshape(idx, outType.getShape());
}

/// GridSample (4-D): each output point reads X at the grid's normalized
/// (x, y), unnormalized by align_corners, moved inside by the padding mode
/// (or read as 0 outside with zeros), with nearest, bilinear (4 taps) or
/// bicubic (16 taps) weights.
LogicalResult gridSample(ImportContext &c) {
  Value x = c.input(0), grid = c.input(1);
  auto xShape = staticShape(c, x, "GridSample's input");
  auto gShape = staticShape(c, grid, "GridSample's grid");
  if (failed(xShape) || failed(gShape))
    return failure();
  if (xShape->size() != 4 || gShape->size() != 4 || (*gShape)[3] != 2 ||
      (*gShape)[0] != (*xShape)[0])
    return c.error("expected X [N, C, H, W] and grid [N, H_out, W_out, 2]");
  if (!isFloat(x) || !isFloat(grid))
    return c.error("X and grid must hold floats");
  std::string mode = c.attrString("mode", "bilinear");
  std::string pad = c.attrString("padding_mode", "zeros");
  bool align = c.attrInt("align_corners", 0);
  enum { nearest, linear, cubic } kind;
  if (mode == "nearest")
    kind = nearest;
  else if (mode == "bilinear" || mode == "linear")
    kind = linear;
  else if (mode == "bicubic" || mode == "cubic")
    kind = cubic;
  else
    return c.error("unsupported mode '" + mode + "'");
  GridPadding padding;
  if (pad == "zeros")
    padding = GridPadding::zeros;
  else if (pad == "border")
    padding = GridPadding::border;
  else if (pad == "reflection")
    padding = GridPadding::reflection;
  else
    return c.error("unsupported padding_mode '" + pad + "'");
  int64_t n = (*xShape)[0], ch = (*xShape)[1], h = (*xShape)[2],
          w = (*xShape)[3];
  SmallVector<int64_t> outShape = {n, ch, (*gShape)[1], (*gShape)[2]};
  if (dtypeOf(grid) != dtypeOf(x))
    grid = c.b.cast(grid, dtypeOf(x));
  auto coordinate = [&](int64_t i, int64_t size) {
    Value g = c.b.squeeze(c.b.slice(grid, {i}, {i + 1}, {3}), {3});
    double scale = align ? (size - 1) / 2.0 : size / 2.0;
    return c.b.add(c.b.mul(g, scalarLike(c, g, scale)),
                   scalarLike(c, g, (size - 1) / 2.0));
  };
  Value gx = coordinate(0, w), gy = coordinate(1, h);
  Value planes = c.b.reshape(x, {n, ch, h * w});
  Value sum;
  auto accumulate = [&](Value ys, Value xs, Value weight) {
    auto [values, mask] = readPlanes(c, planes, ys, xs, h, w, outShape);
    Value term = c.b.mul(values, c.b.mul(c.b.unsqueeze(weight, {1}), mask));
    sum = sum ? c.b.add(sum, term) : term;
  };
  if (kind != cubic) {
    gx = padCoordinate(c, gx, w, padding, align);
    gy = padCoordinate(c, gy, h, padding, align);
  }
  if (kind == nearest) {
    Value ones = c.b.mul(gx, scalarLike(c, gx, 0.0));
    ones = c.b.add(ones, scalarLike(c, gx, 1.0));
    accumulate(c.b.round(gy), c.b.round(gx), ones);
  } else if (kind == linear) {
    Value x0 = c.b.floor(gx), y0 = c.b.floor(gy);
    Value one = scalarLike(c, gx, 1.0);
    Value x1 = c.b.add(x0, one), y1 = c.b.add(y0, one);
    Value wx1 = c.b.sub(gx, x0), wy1 = c.b.sub(gy, y0);
    Value wx0 = c.b.sub(one, wx1), wy0 = c.b.sub(one, wy1);
    accumulate(y0, x0, c.b.mul(wy0, wx0));
    accumulate(y0, x1, c.b.mul(wy0, wx1));
    accumulate(y1, x0, c.b.mul(wy1, wx0));
    accumulate(y1, x1, c.b.mul(wy1, wx1));
  } else {
    Value x0 = c.b.floor(gx), y0 = c.b.floor(gy);
    std::array<Value, 4> wx = cubicWeights(c, c.b.sub(gx, x0));
    std::array<Value, 4> wy = cubicWeights(c, c.b.sub(gy, y0));
    for (int i = 0; i < 4; ++i) {
      Value yi = padCoordinate(c, c.b.add(y0, scalarLike(c, y0, i - 1.0)), h,
                               padding, align);
      for (int j = 0; j < 4; ++j) {
        Value xj = padCoordinate(c, c.b.add(x0, scalarLike(c, x0, j - 1.0)), w,
                                 padding, align);
        accumulate(yi, xj, c.b.mul(wy[i], wx[j]));
      }
    }
  }
  c.setOutput(0, sum);
  return success();
}

/// RoiAlign with a fixed sampling_ratio s: each output bin averages (or
/// takes the max of) s x s bilinear samples. Sample coordinates are
/// computed per roi ([R, H_out * s] rows, [R, W_out * s] columns) as ONNX
/// Runtime computes them; the 4 neighbours are read with gathers from X
/// seen as [N * H * W, C].
LogicalResult roiAlign(ImportContext &c) {
  Value x = c.input(0), rois = c.input(1), batchIdx = c.input(2);
  auto xShape = staticShape(c, x, "RoiAlign's input");
  if (failed(xShape) || !rois || !batchIdx)
    return failure();
  if (xShape->size() != 4)
    return c.error("expected X of shape [N, C, H, W]");
  if (!isFloat(x))
    return c.error("X must hold floats");
  auto roisType = cast<RankedTensorType>(rois.getType());
  if (roisType.getRank() != 2 || roisType.getDimSize(1) != 4)
    return c.error("expected rois of shape [num_rois, 4]");
  std::string mode = c.attrString("mode", "avg");
  if (mode != "avg" && mode != "max")
    return c.error("unsupported mode '" + mode + "'");
  std::string ctm =
      c.attrString("coordinate_transformation_mode",
                   c.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return c.error("unsupported coordinate_transformation_mode '" + ctm + "'");
  bool halfPixel = ctm == "half_pixel";
  int64_t outH = c.attrInt("output_height", 1),
          outW = c.attrInt("output_width", 1);
  int64_t ratio = c.attrInt("sampling_ratio", 0);
  double scale = c.attrFloat("spatial_scale", 1.0f);
  if (outH < 1 || outW < 1)
    return c.error("output_height and output_width must be positive");
  if (ratio <= 0)
    return c.error("sampling_ratio " + Twine(ratio) +
                   " (adaptive: samples per bin from each roi's size at run "
                   "time) is not supported; give a positive sampling_ratio");
  int64_t n = (*xShape)[0], ch = (*xShape)[1], h = (*xShape)[2],
          w = (*xShape)[3];
  if (dtypeOf(rois) != dtypeOf(x))
    rois = c.b.cast(rois, dtypeOf(x));
  double offset = halfPixel ? 0.5 : 0.0;
  auto edge = [&](int64_t i) { // [R, 1]
    Value e = c.b.slice(rois, {i}, {i + 1}, {1});
    return c.b.sub(c.b.mul(e, scalarLike(c, e, scale)),
                   scalarLike(c, e, offset));
  };
  // Sample coordinates along one dim: start + (bin + (i + 0.5) / s) * size
  // / bins for bin < bins, i < s, as [R, bins * s]; then ONNX Runtime's
  // rules: outside [-1, size] reads 0, below 0 is 0, at or past size - 1
  // reads the last row.
  struct Axis {
    Value low, high, lowWeight, highWeight, inside;
  };
  auto axis = [&](int64_t first, int64_t bins, int64_t size) {
    Value start = edge(first), extent = c.b.sub(edge(first + 2), start);
    if (!halfPixel)
      extent = c.b.max(extent, scalarLike(c, extent, 1.0));
    SmallVector<double> steps;
    for (int64_t b = 0; b < bins; ++b)
      for (int64_t i = 0; i < ratio; ++i)
        steps.push_back((b + (i + 0.5) / ratio) / bins);
    Value pos = c.b.add(
        start, c.b.mul(extent, floatConstant(c, x, steps, {bins * ratio})));
    // Samples outside [-1, size] (or NaN) read 0 at row 0.
    Value insideBool = c.b.where(
        c.b.compare(CompareDirection::ge, pos, scalarLike(c, pos, -1.0)),
        c.b.compare(CompareDirection::le, pos,
                    scalarLike(c, pos, double(size))),
        c.b.scalar(0, DType::i1));
    Value inside = select01(c, insideBool, pos);
    pos = c.b.where(insideBool, pos, scalarLike(c, pos, 0.0));
    pos = c.b.max(pos, scalarLike(c, pos, 0.0));
    Value low = c.b.floor(pos);
    Value last = scalarLike(c, pos, double(size - 1));
    Value atEnd = c.b.compare(CompareDirection::ge, low, last);
    low = c.b.where(atEnd, last, low);
    Value high = c.b.where(atEnd, last, c.b.add(low, scalarLike(c, low, 1.0)));
    pos = c.b.where(atEnd, last, pos);
    Value highWeight = c.b.sub(pos, low);
    Value lowWeight = c.b.sub(scalarLike(c, pos, 1.0), highWeight);
    return Axis{low, high, lowWeight, highWeight, inside};
  };
  Axis ys = axis(1, outH, h), xs = axis(0, outW, w);
  // [R, Hs, 1] and [R, 1, Ws] broadcast to [R, Hs, Ws].
  auto col = [&](Value v) { return c.b.unsqueeze(v, {2}); };
  auto row = [&](Value v) { return c.b.unsqueeze(v, {1}); };
  Value base = c.b.unsqueeze(c.b.mul(c.b.cast(batchIdx, DType::i64),
                                     c.b.scalar(double(h * w), DType::i64)),
                             {1, 2});
  Value pixels = c.b.reshape(c.b.transpose(x, {0, 2, 3, 1}), {n * h * w, ch});
  Value inside = c.b.mul(col(ys.inside), row(xs.inside));
  SmallVector<Value> terms;
  for (auto [yv, wy] :
       {std::pair(ys.low, ys.lowWeight), std::pair(ys.high, ys.highWeight)})
    for (auto [xv, wx] :
         {std::pair(xs.low, xs.lowWeight), std::pair(xs.high, xs.highWeight)}) {
      Value flat =
          c.b.add(c.b.mul(col(yv), scalarLike(c, yv, double(w))), row(xv));
      Value idx = c.b.add(c.b.cast(flat, DType::i64), base);
      Value weight = c.b.mul(c.b.mul(col(wy), row(wx)), inside);
      terms.push_back(
          c.b.mul(c.b.gather(pixels, idx, 0), c.b.unsqueeze(weight, {3})));
    }
  bool avg = mode == "avg";
  Value v = terms[0];
  for (Value t : ArrayRef(terms).drop_front())
    v = avg ? c.b.add(v, t) : c.b.max(v, t);
  // [R, H_out * s, W_out * s, C] -> [R, H_out, s, W_out, s, C] -> bins.
  v = c.b.reshape(v, {0, outH, ratio, outW, ratio, ch});
  v = avg ? c.b.reduceMean(v, {2, 4}) : c.b.reduceMax(v, {2, 4});
  c.setOutput(0, c.b.transpose(v, {0, 3, 1, 2}));
  return success();
}

} // namespace loom::onnx_import
