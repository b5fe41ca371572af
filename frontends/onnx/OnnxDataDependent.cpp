//===- OnnxDataDependent.cpp - ops whose output size is the data's --------===//
//
// NonZero, Compress and Unique: their output sizes depend on the values,
// not the shapes. Each is composed around graph.nonzero (the coordinates
// of a boolean tensor's true elements, their count known at run time):
// NonZero is its transpose; Compress gathers with the compacted
// positions; Unique sorts (stable top_k, one pass per element of a slice
// for the lexicographic order along an axis), marks where a run of equal
// slices starts and ends, compacts both marks, and takes inverse indices
// from a cumsum of the starts; NonMaxSuppression computes every class's
// pairwise IoU in score order, runs the greedy suppression as a fixed
// point (a graph.loop that stops once a step changes nothing), and
// compacts the kept
// [batch, class, rank] triples. The input shapes must be static (but
// NonZero's); the CPU target runs them, the CUDA target refuses
// graph.nonzero by name.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;
using graph::CompareDirection;

/// A 1-D constant of one true.
static Value oneTrue(ImportContext &c) {
  auto type = RankedTensorType::get({1}, IntegerType::get(&c.ctx, 1));
  return c.b.constant(DenseElementsAttr::get(type, true));
}

/// The true positions of a 1-D mask, [count] of i64.
static Value positions(ImportContext &c, Value mask) {
  return c.b.squeeze(c.b.nonzero(mask), {1});
}

LogicalResult loom::onnx_import::nonZero(ImportContext &c) {
  Value x = c.input(0);
  Value mask = x;
  if (dtypeOf(x) != DType::i1)
    mask = c.b.compare(CompareDirection::ne, x, scalarLike(c, x, 0));
  // ONNX's layout: one row per dim, one column per true element.
  c.setOutput(0, c.b.transpose(c.b.nonzero(mask), {1, 0}));
  return success();
}

LogicalResult loom::onnx_import::compress(ImportContext &c) {
  Value x = c.input(0), cond = c.input(1);
  auto shape = staticShape(c, x, "Compress");
  if (failed(shape))
    return failure();
  auto condShape = staticShape(c, cond, "Compress's condition");
  if (failed(condShape))
    return failure();
  if (condShape->size() != 1)
    return c.error("the condition must be 1-D, got rank " +
                   Twine(condShape->size()));
  int64_t rank = shape->size(), axis = 0, length;
  Value data = x;
  if (c.hasAttr("axis")) {
    axis = c.attrInt("axis", 0);
    if (axis < -rank || axis >= rank)
      return c.error("axis " + Twine(axis) + " is out of range for rank " +
                     Twine(rank));
    if (axis < 0)
      axis += rank;
    length = (*shape)[axis];
  } else {
    length = 1;
    for (int64_t d : *shape)
      length *= d;
    data = c.b.reshape(x, {length});
  }
  // A shorter condition leaves the rest out; a longer one has no meaning.
  if ((*condShape)[0] > length)
    return c.error("the condition has " + Twine((*condShape)[0]) +
                   " entries for " + Twine(length) + " slices");
  c.setOutput(0, c.b.gather(data, positions(c, cond), axis));
  return success();
}

LogicalResult loom::onnx_import::unique(ImportContext &c) {
  Value x = c.input(0);
  auto shape = staticShape(c, x, "Unique");
  if (failed(shape))
    return failure();
  int64_t rank = shape->size(), axis = 0;
  bool hasAxis = c.hasAttr("axis");
  int64_t sorted = c.attrInt("sorted", 1);
  if (sorted != 0 && sorted != 1)
    return c.error("sorted must be 0 or 1, got " + Twine(sorted));
  // The input as [n, m]: n slices of m elements, compared whole.
  Value data = x, table;
  int64_t n = 1, m = 1;
  if (hasAxis) {
    axis = c.attrInt("axis", 0);
    if (axis < -rank || axis >= rank)
      return c.error("axis " + Twine(axis) + " is out of range for rank " +
                     Twine(rank));
    if (axis < 0)
      axis += rank;
    SmallVector<int64_t> perm = {axis};
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        perm.push_back(d);
    n = (*shape)[axis];
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        m *= (*shape)[d];
    table = c.b.reshape(c.b.transpose(x, perm), {n, m});
  } else {
    for (int64_t d : *shape)
      n *= d;
    data = c.b.reshape(x, {n});
    table = c.b.reshape(x, {n, 1});
  }
  if (n == 0)
    return c.error("the input has no elements along the axis");
  // A stable sort of the slices, lexicographic: stable sorts by each
  // element of a slice, the last first (top_k keeps equal keys in index
  // order).
  Value perm;
  for (int64_t col = m - 1; col >= 0; --col) {
    Value keys =
        c.b.reshape(c.b.slice(table, {0, col}, {n, col + 1}, {0, 1}), {n});
    if (perm)
      keys = c.b.gather(keys, perm, 0);
    Value order = c.b.topK(keys, n, 0, /*largest=*/false).second;
    perm = perm ? c.b.gather(perm, order, 0) : order;
  }
  Value rows = c.b.gather(table, perm, 0);
  // Where runs of equal slices start and end in the sorted order.
  Value mTrue = oneTrue(c);
  Value isStart = mTrue, isEnd = mTrue;
  if (n > 1) {
    Value differs = c.b.compare(CompareDirection::ne,
                                c.b.slice(rows, {1, 0}, {n, m}, {0, 1}),
                                c.b.slice(rows, {0, 0}, {n - 1, m}, {0, 1}));
    differs = c.b.compare(CompareDirection::gt,
                          c.b.reduceSum(c.b.cast(differs, DType::i64), {1}),
                          c.b.scalar(0, DType::i64));
    isStart = c.b.concat({mTrue, differs}, 0);
    isEnd = c.b.concat({differs, mTrue}, 0);
  }
  Value starts = positions(c, isStart), ends = positions(c, isEnd);
  Value counts = c.b.add(c.b.sub(ends, starts), c.b.scalar(1, DType::i64));
  // The stable sort puts each run's first occurrence first.
  Value first = c.b.gather(perm, starts, 0);
  // Each sorted position's run, then each input slice's (perm inverted).
  Value run = c.b.sub(c.b.cumsum(c.b.cast(isStart, DType::i64), 0),
                      c.b.scalar(1, DType::i64));
  Value unperm = c.b.topK(perm, n, 0, /*largest=*/false).second;
  Value inverse = c.b.gather(run, unperm, 0);
  if (!sorted) {
    // In order of first occurrence: the runs sorted by their first index.
    Value u =
        c.b.reduceSum(c.b.cast(isStart, DType::i64), {0}, /*keepdims=*/true);
    auto [firstSorted, byFirst] =
        c.b.dynamicTopK(first, u, 0, /*largest=*/false);
    Value place = c.b.dynamicTopK(byFirst, u, 0, /*largest=*/false).second;
    first = firstSorted;
    counts = c.b.gather(counts, byFirst, 0);
    inverse = c.b.gather(place, inverse, 0);
  }
  c.setOutput(0, c.b.gather(data, first, axis));
  c.setOutput(1, first);
  c.setOutput(2, inverse);
  c.setOutput(3, counts);
  return success();
}

/// Input `i` (a scalar or one entry) reshaped to [1, 1, 1], to broadcast
/// against [batch, class, box] tensors; null when the input is absent.
static Value broadcastScalar(ImportContext &c, int i, StringRef what,
                             LogicalResult &status) {
  if (!c.hasInput(i))
    return Value();
  Value v = c.input(i);
  auto t = cast<RankedTensorType>(v.getType());
  if (!t.hasStaticShape() || t.getNumElements() != 1) {
    status = c.error(what + " must hold one value, got " +
                     Twine(t.hasStaticShape() ? t.getNumElements() : -1) +
                     " values");
    return Value();
  }
  return c.b.reshape(v, {1, 1, 1});
}

/// The greedy suppression as a fixed point over [batch, class, rank]
/// (1 kept, 0 not): a rank is kept when it is `valid` and no kept rank
/// before it `suppresses` it ([batch, class, r, s], 1 where r suppresses
/// s). Step k settles rank k, so a graph.loop of at most n - 1 steps,
/// stopping once a step changes nothing, reaches it.
static Value greedyKeep(ImportContext &c, Value suppresses, Value valid,
                        int64_t n) {
  if (n < 2)
    return valid;
  OpBuilder &ob = c.b.opBuilder();
  Location loc = c.b.locationOf("suppress");
  auto loop = ob.create<graph::LoopOp>(
      loc, TypeRange{valid.getType()}, c.b.scalar(n - 1, DType::i64), Value(),
      ValueRange{valid}, ValueRange{suppresses, valid});
  Block *body = new Block();
  loop.getBody().push_back(body);
  auto i64 = RankedTensorType::get({}, IntegerType::get(&c.ctx, 64));
  auto i1 = RankedTensorType::get({}, IntegerType::get(&c.ctx, 1));
  for (Type t : {Type(i64), Type(i1), valid.getType(), suppresses.getType(),
                 valid.getType()})
    body->addArgument(t, loc);
  OpBuilder::InsertionGuard guard(ob);
  ob.setInsertionPointToEnd(body);
  Value keep = body->getArgument(2), by = body->getArgument(3),
        ok = body->getArgument(4);
  Value hit = c.b.reduceMax(c.b.mul(by, c.b.unsqueeze(keep, {3})), {2});
  Value next = c.b.mul(ok, c.b.sub(c.b.fillLike(hit, 1.0, DType::f32), hit));
  Value changed = c.b.compare(
      CompareDirection::gt,
      c.b.reduceMax(c.b.abs(c.b.sub(next, keep)), {0, 1, 2}), c.b.scalar(0.5));
  ob.create<graph::YieldOp>(loc, ValueRange{changed, next});
  return loop.getResult(0);
}

LogicalResult loom::onnx_import::nonMaxSuppression(ImportContext &c) {
  Value boxes = c.input(0), scores = c.input(1);
  auto boxShape = staticShape(c, boxes, "NonMaxSuppression's boxes");
  auto scoreShape = staticShape(c, scores, "NonMaxSuppression's scores");
  if (failed(boxShape) || failed(scoreShape))
    return failure();
  if (boxShape->size() != 3 || (*boxShape)[2] != 4 || scoreShape->size() != 3)
    return c.error("boxes must be [batch, boxes, 4] and scores [batch, "
                   "classes, boxes]");
  int64_t batch = (*boxShape)[0], n = (*boxShape)[1],
          classes = (*scoreShape)[1];
  if ((*scoreShape)[0] != batch || (*scoreShape)[2] != n)
    return c.error("scores must be [batch, classes, boxes] of the boxes' "
                   "batch and box counts");
  int64_t centerPoint = c.attrInt("center_point_box", 0);
  if (centerPoint != 0 && centerPoint != 1)
    return c.error("center_point_box must be 0 or 1, got " +
                   Twine(centerPoint));
  LogicalResult status = success();
  Value maxOut = broadcastScalar(c, 2, "max_output_boxes_per_class", status);
  Value iouLimit = broadcastScalar(c, 3, "iou_threshold", status);
  Value scoreLimit = broadcastScalar(c, 4, "score_threshold", status);
  if (failed(status))
    return failure();
  DType dtype = dtypeOf(boxes);
  // Without max_output_boxes_per_class no box is selected.
  if (!maxOut)
    maxOut = c.b.reshape(c.b.scalar(0, DType::i64), {1, 1, 1});
  if (!iouLimit)
    iouLimit = c.b.reshape(scalarLike(c, boxes, 0), {1, 1, 1});
  iouLimit = c.b.cast(iouLimit, dtype);

  // Each class's boxes by score, highest first (equal scores in index
  // order), and their corners in that order: [batch, class, rank].
  auto [sortedScores, order] = c.b.topK(scores, n, 2);
  auto coord = [&](int64_t k) {
    Value v = c.b.slice(boxes, {0, 0, k}, {batch, n, k + 1}, {0, 1, 2});
    v = c.b.broadcastTo(c.b.reshape(v, {batch, 1, n}), {batch, classes, n});
    return c.b.gatherElements(v, order, 2);
  };
  Value a = coord(0), b = coord(1), p = coord(2), q = coord(3);
  Value ymin, ymax, xmin, xmax;
  if (centerPoint) {
    // [x_center, y_center, width, height].
    Value half = scalarLike(c, boxes, 0.5);
    xmin = c.b.sub(a, c.b.mul(p, half));
    xmax = c.b.add(a, c.b.mul(p, half));
    ymin = c.b.sub(b, c.b.mul(q, half));
    ymax = c.b.add(b, c.b.mul(q, half));
  } else {
    // [y1, x1, y2, x2], either corner first.
    ymin = c.b.min(a, p);
    ymax = c.b.max(a, p);
    xmin = c.b.min(b, q);
    xmax = c.b.max(b, q);
  }
  // Pairwise IoU over [batch, class, rank r, rank s].
  auto rows = [&](Value v) { return c.b.unsqueeze(v, {3}); };
  auto cols = [&](Value v) { return c.b.unsqueeze(v, {2}); };
  Value zero = scalarLike(c, boxes, 0);
  auto overlap = [&](Value lo, Value hi) {
    return c.b.max(
        c.b.sub(c.b.min(rows(hi), cols(hi)), c.b.max(rows(lo), cols(lo))),
        zero);
  };
  Value inter = c.b.mul(overlap(xmin, xmax), overlap(ymin, ymax));
  Value area = c.b.mul(c.b.sub(xmax, xmin), c.b.sub(ymax, ymin));
  Value unionArea = c.b.sub(c.b.add(rows(area), cols(area)), inter);
  Value iou = c.b.where(c.b.compare(CompareDirection::gt, unionArea, zero),
                        c.b.div(inter, unionArea), zero);
  // r suppresses s when r ranks higher, r is kept and their IoU is over
  // the threshold.
  Value earlier = c.b.compare(CompareDirection::lt, c.b.iota({n, n}, 0),
                              c.b.iota({n, n}, 1));
  Value suppresses =
      c.b.cast(c.b.where(earlier,
                         c.b.compare(CompareDirection::gt, iou,
                                     c.b.reshape(iouLimit, {1, 1, 1, 1})),
                         c.b.compare(CompareDirection::ne, earlier, earlier)),
               DType::f32);
  Value valid = c.b.fillLike(sortedScores, 1.0, DType::f32);
  if (scoreLimit)
    valid = c.b.cast(c.b.compare(CompareDirection::gt, sortedScores,
                                 c.b.cast(scoreLimit, dtypeOf(scores))),
                     DType::f32);
  Value keep = greedyKeep(c, suppresses, valid, n);
  // At most max_output_boxes_per_class per class, by rank.
  Value kept = c.b.compare(CompareDirection::gt, keep, c.b.scalar(0.5));
  Value taken = c.b.cumsum(c.b.cast(kept, DType::i64), 2);
  Value selected = c.b.where(
      kept,
      c.b.compare(CompareDirection::le, taken, c.b.cast(maxOut, DType::i64)),
      kept);
  // [batch, class, rank] of each selected box, in ONNX's order (batch,
  // class, then score); the rank becomes the box's index.
  Value at = c.b.nonzero(selected);
  Value flat = c.b.reduceSum(
      c.b.mul(at, c.b.constant(DenseElementsAttr::get(
                      RankedTensorType::get({3}, IntegerType::get(&c.ctx, 64)),
                      ArrayRef<int64_t>{classes * n, n, 1}))),
      {1}, /*keepdims=*/true);
  Value box = c.b.gather(c.b.reshape(order, {batch * classes * n}),
                         c.b.squeeze(flat, {1}), 0);
  c.setOutput(
      0,
      c.b.concat({c.b.slice(at, {0}, {2}, {1}), c.b.unsqueeze(box, {1})}, 1));
  return success();
}
