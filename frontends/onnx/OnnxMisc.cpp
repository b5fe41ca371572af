//===- OnnxMisc.cpp - optimizers, OneHot, TfIdfVectorizer, tf_* Resize ---===//
//
// Small ops written as graph ops: the ai.onnx.preview.training optimizers
// Adam, Adagrad and Momentum (elementwise updates of each optimized tensor);
// OneHot whose depth is known only at run time (a run-time range compared
// with the indices); TfIdfVectorizer over integer sequences (shifted windows
// of the input compared with the pool's n-grams, matches summed); Resize
// with the coordinate modes tf_crop_and_resize and tf_half_pixel_for_nn
// (gathers at run-time coordinates, one axis at a time).
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

#include <onnx/defs/schema.h>

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;
using graph::CompareDirection;

namespace {

constexpr const char *kTrainingDomain = "ai.onnx.preview.training";

/// Checks a node of the training domain against libonnx's schema of its op
/// (the importer checks only ai.onnx nodes before converting): input and
/// output counts, attribute names and types, required attributes. Without
/// OpSchema::Verify, which throws.
LogicalResult checkTrainingSchema(ImportContext &c) {
  const onnx::NodeProto &node = *c.node;
  const std::string &op = node.op_type();
  auto range = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = range.find(kTrainingDomain);
  const onnx::OpSchema *schema =
      it == range.end() ? nullptr
                        : onnx::OpSchemaRegistry::Schema(op, it->second.second,
                                                         kTrainingDomain);
  if (!schema)
    return c.error("ONNX defines no op '" + op + "' in " + kTrainingDomain);
  std::string form = op + "-" + std::to_string(schema->SinceVersion());
  int inputs = node.input_size(), outputs = node.output_size();
  if (inputs < schema->min_input() || inputs > schema->max_input())
    return c.error("the node has " + Twine(inputs) + " inputs; " + form +
                   " takes " + Twine(schema->min_input()) + " to " +
                   Twine(schema->max_input()));
  if (outputs < schema->min_output() || outputs > schema->max_output())
    return c.error("the node has " + Twine(outputs) + " outputs; " + form +
                   " makes " + Twine(schema->min_output()) + " to " +
                   Twine(schema->max_output()));
  for (const onnx::AttributeProto &a : node.attribute()) {
    auto attr = schema->attributes().find(a.name());
    if (attr == schema->attributes().end())
      return c.error("attribute '" + a.name() + "' is not defined by " + form);
    if (a.type() != attr->second.type)
      return c.error(
          "attribute '" + a.name() + "' has type " +
          onnx::AttributeProto::AttributeType_Name(a.type()) + "; " + form +
          " defines it as " +
          onnx::AttributeProto::AttributeType_Name(attr->second.type));
  }
  for (const auto &[name, attr] : schema->attributes())
    if (attr.required && !c.hasAttr(name))
      return c.error(form + " requires attribute '" + name + "'");
  return success();
}

/// The optimizer's inputs R, T and `groups` lists of tensors (X..., G...,
/// ...), each list as long as the outputs' lists; the number of optimized
/// tensors in `count`. R and T must be scalars.
LogicalResult optimizerInputs(ImportContext &c, int groups, Value &r, Value &t,
                              int64_t &count) {
  if (failed(checkTrainingSchema(c)))
    return failure();
  int tensors = c.node->input_size() - 2;
  if (tensors <= 0 || tensors % groups != 0)
    return c.error("the inputs after R and T must be " + Twine(groups) +
                   " lists of one length, not " + Twine(tensors) + " tensors");
  count = tensors / groups;
  if (c.node->output_size() != (groups - 1) * count)
    return c.error("the node optimizes " + Twine(count) + " tensors and must " +
                   "have " + Twine((groups - 1) * count) + " outputs, not " +
                   Twine(c.node->output_size()));
  r = c.input(0);
  t = c.input(1);
  if (!r || !t)
    return failure();
  Value scalars[] = {r, t};
  for (auto [i, v] : llvm::enumerate(scalars)) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getNumElements() != 1 || type.getRank() > 1)
      return c.error("input " + Twine(i) + " (" + (i ? "T" : "R") +
                     ") must be a scalar");
    if (i == 0 && !isa<FloatType>(type.getElementType()))
      return c.error("input 0 (R) must hold floats");
  }
  r = c.b.reshape(r, {});
  t = c.b.reshape(t, {});
  return success();
}

/// Input `i` of the node, which must hold floats.
Value floatInput(ImportContext &c, int i) {
  Value v = c.input(i);
  if (v &&
      !isa<FloatType>(cast<RankedTensorType>(v.getType()).getElementType())) {
    (void)c.error("input " + Twine(i) + " must hold floats");
    return {};
  }
  return v;
}

} // namespace

LogicalResult loom::onnx_import::adam(ImportContext &c) {
  Value r, t;
  int64_t n;
  if (failed(optimizerInputs(c, 4, r, t, n)))
    return failure();
  double alpha = c.attrFloat("alpha", 0.9f), beta = c.attrFloat("beta", 0.999f);
  // The schema's defaults (epsilon 1e-6, not the doc's 0).
  double epsilon = c.attrFloat("epsilon", 1e-6f);
  double norm = c.attrFloat("norm_coefficient", 0.0f);
  double normPost = c.attrFloat("norm_coefficient_post", 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    Value x = floatInput(c, 2 + i), g = floatInput(c, 2 + n + i),
          v = floatInput(c, 2 + 2 * n + i), h = floatInput(c, 2 + 3 * n + i);
    if (!x || !g || !v || !h)
      return failure();
    auto k = [&](double value) { return scalarLike(c, x, value); };
    DType dtype = dtypeOf(x);
    Value rate = c.b.cast(r, dtype), steps = c.b.cast(t, dtype);
    Value gReg = c.b.add(c.b.mul(k(norm), x), g);
    Value vNew = c.b.add(c.b.mul(k(alpha), v), c.b.mul(k(1 - alpha), gReg));
    Value hNew =
        c.b.add(c.b.mul(k(beta), h), c.b.mul(k(1 - beta), c.b.mul(gReg, gReg)));
    Value hSqrt = c.b.add(c.b.sqrt(hNew), k(epsilon));
    // Bias correction from the first step on (T > 0); R itself at T = 0.
    Value corrected =
        c.b.div(c.b.mul(rate, c.b.sqrt(c.b.sub(k(1), c.b.pow(k(beta), steps)))),
                c.b.sub(k(1), c.b.pow(k(alpha), steps)));
    Value positive = c.b.compare(CompareDirection::gt, steps, k(0));
    Value rAdjusted = c.b.where(positive, corrected, rate);
    Value xNew = c.b.sub(x, c.b.mul(rAdjusted, c.b.div(vNew, hSqrt)));
    c.setOutput(i, c.b.mul(k(1 - normPost), xNew));
    c.setOutput(n + i, vNew);
    c.setOutput(2 * n + i, hNew);
  }
  return success();
}

LogicalResult loom::onnx_import::adagrad(ImportContext &c) {
  Value r, t;
  int64_t n;
  if (failed(optimizerInputs(c, 3, r, t, n)))
    return failure();
  double decay = c.attrFloat("decay_factor", 0.0f);
  double epsilon = c.attrFloat("epsilon", 1e-6f);
  double norm = c.attrFloat("norm_coefficient", 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    Value x = floatInput(c, 2 + i), g = floatInput(c, 2 + n + i),
          h = floatInput(c, 2 + 2 * n + i);
    if (!x || !g || !h)
      return failure();
    auto k = [&](double value) { return scalarLike(c, x, value); };
    DType dtype = dtypeOf(x);
    Value rate = c.b.div(c.b.cast(r, dtype),
                         c.b.add(k(1), c.b.mul(c.b.cast(t, dtype), k(decay))));
    Value gReg = c.b.add(c.b.mul(k(norm), x), g);
    Value hNew = c.b.add(h, c.b.mul(gReg, gReg));
    Value hAdaptive = c.b.add(c.b.sqrt(hNew), k(epsilon));
    c.setOutput(i, c.b.sub(x, c.b.div(c.b.mul(rate, gReg), hAdaptive)));
    c.setOutput(n + i, hNew);
  }
  return success();
}

LogicalResult loom::onnx_import::momentum(ImportContext &c) {
  Value r, t;
  int64_t n;
  if (failed(optimizerInputs(c, 3, r, t, n)))
    return failure();
  std::string mode = c.attrString("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    return c.error("mode '" + mode +
                   "' is not supported (standard or nesterov)");
  double alpha = c.attrFloat("alpha", 0.0f), beta = c.attrFloat("beta", 0.0f);
  double norm = c.attrFloat("norm_coefficient", 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    Value x = floatInput(c, 2 + i), g = floatInput(c, 2 + n + i),
          v = floatInput(c, 2 + 2 * n + i);
    if (!x || !g || !v)
      return failure();
    auto k = [&](double value) { return scalarLike(c, x, value); };
    DType dtype = dtypeOf(x);
    Value rate = c.b.cast(r, dtype);
    // beta from the second step on; 1 at the first (T = 0).
    Value positive =
        c.b.compare(CompareDirection::gt, c.b.cast(t, dtype), k(0));
    Value betaAdjusted = c.b.where(positive, k(beta), k(1));
    Value gReg = c.b.add(c.b.mul(k(norm), x), g);
    Value vNew = c.b.add(c.b.mul(k(alpha), v), c.b.mul(betaAdjusted, gReg));
    Value step =
        mode == "nesterov" ? c.b.add(gReg, c.b.mul(k(alpha), vNew)) : vNew;
    c.setOutput(i, c.b.sub(x, c.b.mul(rate, step)));
    c.setOutput(n + i, vNew);
  }
  return success();
}

/// OneHot: with a depth known at import the classes are an iota (the new
/// axis static); with one known only at run time a run-time range (the new
/// axis dynamic).
LogicalResult loom::onnx_import::oneHotAnyDepth(ImportContext &c) {
  auto known = c.knownInput(1);
  Value indices = c.input(0);
  if (!indices)
    return failure();
  Value depth = c.input(1), values = c.input(2);
  if (!depth || !values)
    return failure();
  auto depthType = cast<RankedTensorType>(depth.getType());
  if (depthType.getRank() > 1 ||
      (depthType.hasStaticShape() && depthType.getNumElements() != 1))
    return c.error("OneHot's depth must be one value");
  auto valuesType = cast<RankedTensorType>(values.getType());
  if (valuesType.getRank() != 1 || valuesType.getDimSize(0) != 2)
    return c.error("OneHot's values must be [off_value, on_value]");
  int64_t rank = cast<RankedTensorType>(indices.getType()).getRank() + 1;
  int64_t axis = c.attrInt("axis", -1);
  if (axis < -rank || axis >= rank)
    return c.error("axis " + Twine(axis) + " is out of range for rank " +
                   Twine(rank));
  if (axis < 0)
    axis += rank;
  // A float depth counts its integer part, as ONNX's reference casts it.
  Value n = c.b.cast(c.b.reshape(depth, {}), DType::i64);
  Value zero = c.b.scalar(0, DType::i64), one = c.b.scalar(1, DType::i64);
  Value classes;
  if (known && known->getNumElements() == 1) {
    // A known depth with dynamic indices: the classes are a static iota.
    double depthValue =
        isa<FloatType>(known->getElementType())
            ? (*known->value_begin<APFloat>()).convertToDouble()
            : (double)(*known->value_begin<APInt>()).getSExtValue();
    if ((int64_t)depthValue < 1)
      return c.error("OneHot's depth must be at least 1, not " +
                     Twine((int64_t)depthValue));
    SmallVector<int64_t> classShape(rank, 1);
    classShape[axis] = (int64_t)depthValue;
    classes = c.b.iota(classShape, axis);
  } else {
    classes = c.b.range(zero, n, one);
    SmallVector<int64_t> around;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        around.push_back(d);
    if (!around.empty())
      classes = c.b.unsqueeze(classes, around);
  }
  // Indices in [-depth, depth) count from the end when negative; others
  // match no class (all off).
  Value idx = c.b.cast(indices, DType::i64);
  Value negative = c.b.compare(CompareDirection::lt, idx, zero);
  idx = c.b.where(negative, c.b.add(idx, n), idx);
  Value hit =
      c.b.compare(CompareDirection::eq, c.b.unsqueeze(idx, {axis}), classes);
  Value off = c.b.reshape(c.b.slice(values, {0}, {1}), {});
  Value on = c.b.reshape(c.b.slice(values, {1}, {2}), {});
  c.setOutput(0, c.b.where(hit, on, off));
  return success();
}

/// TfIdfVectorizer over int32/int64 sequences. The pool holds the n-grams
/// of each length n in turn (ngram_counts[n-1] is where they start); the
/// j-th n-gram of the pool counts into output column ngram_indexes[j]. For
/// each n in [min_gram_length, max_gram_length] and each skip s in
/// [0, max_skip_count] (0 only for unigrams), the windows x[p + k(s+1)],
/// k < n, are compared with every pool n-gram and the matches summed.
LogicalResult loom::onnx_import::tfIdfVectorizer(ImportContext &c) {
  if (c.hasAttr("pool_strings"))
    return c.error("pool_strings (string n-grams) is not supported; only "
                   "pool_int64s over int32/int64 input");
  if (!c.hasAttr("pool_int64s"))
    return c.error("TfIdfVectorizer needs pool_int64s");
  Value x = c.input(0);
  if (!x)
    return failure();
  auto xType = cast<RankedTensorType>(x.getType());
  if (!xType.getElementType().isInteger(32) &&
      !xType.getElementType().isInteger(64))
    return c.error("input 0 must hold int32 or int64 (string input is not "
                   "supported)");
  auto shape = staticShape(c, x, "TfIdfVectorizer");
  if (failed(shape))
    return failure();
  if (shape->empty() || shape->size() > 2)
    return c.error("input 0 must have rank 1 or 2, not " +
                   Twine(shape->size()));
  std::string mode = c.attrString("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    return c.error("mode '" + mode + "' is not one of TF, IDF, TFIDF");
  int64_t minLength = c.attrInt("min_gram_length", 0);
  int64_t maxLength = c.attrInt("max_gram_length", 0);
  int64_t maxSkip = c.attrInt("max_skip_count", 0);
  SmallVector<int64_t> pool = c.attrInts("pool_int64s");
  SmallVector<int64_t> counts = c.attrInts("ngram_counts");
  SmallVector<int64_t> indexes = c.attrInts("ngram_indexes");
  SmallVector<float> weights;
  for (const onnx::AttributeProto &a : c.node->attribute())
    if (a.name() == "weights")
      weights.assign(a.floats().begin(), a.floats().end());
  if (minLength < 1 || maxLength < minLength)
    return c.error("min_gram_length " + Twine(minLength) +
                   " and max_gram_length " + Twine(maxLength) +
                   " must satisfy 1 <= min <= max");
  if (maxSkip < 0)
    return c.error("max_skip_count must not be negative");
  if ((int64_t)counts.size() < maxLength)
    return c.error("ngram_counts has " + Twine(counts.size()) +
                   " entries; max_gram_length " + Twine(maxLength) +
                   " needs one per length");
  // The pool's n-grams of length n + 1 are pool[counts[n], next start).
  int64_t numGrams = 0;
  for (size_t n = 0; n < counts.size(); ++n) {
    int64_t start = counts[n];
    int64_t end = n + 1 < counts.size() ? counts[n + 1] : (int64_t)pool.size();
    if (start < 0 || end < start || end > (int64_t)pool.size() ||
        (end - start) % (int64_t)(n + 1) != 0)
      return c.error("ngram_counts entry " + Twine(n) + " (" + Twine(start) +
                     ") does not split the pool into " + Twine(n + 1) +
                     "-grams");
    numGrams += (end - start) / (int64_t)(n + 1);
  }
  if ((int64_t)indexes.size() != numGrams)
    return c.error("ngram_indexes has " + Twine(indexes.size()) +
                   " entries; the pool holds " + Twine(numGrams) + " n-grams");
  if (!weights.empty() && (int64_t)weights.size() != numGrams)
    return c.error("weights has " + Twine(weights.size()) +
                   " entries; the pool holds " + Twine(numGrams) + " n-grams");
  int64_t columns = 0;
  for (int64_t index : indexes) {
    if (index < 0)
      return c.error("ngram_indexes holds a negative index " + Twine(index));
    columns = std::max(columns, index + 1);
  }
  bool batched = shape->size() == 2;
  int64_t batch = batched ? (*shape)[0] : 1, length = shape->back();
  Value seq = c.b.cast(batched ? x : c.b.reshape(x, {1, length}), DType::i64);
  // counts[b, j]: the matches of pool n-gram j, every n-gram in one list.
  SmallVector<Value> perLength;
  for (int64_t n = 1; n <= (int64_t)counts.size(); ++n) {
    int64_t start = counts[n - 1];
    int64_t grams =
        (n < (int64_t)counts.size() ? counts[n] : pool.size()) - start;
    grams /= n;
    if (grams == 0)
      continue;
    Value total;
    if (n >= minLength && n <= maxLength) {
      for (int64_t skip = 0; skip <= (n == 1 ? 0 : maxSkip); ++skip) {
        int64_t windows = length - (n - 1) * (skip + 1);
        if (windows <= 0)
          break;
        Value match;
        for (int64_t k = 0; k < n; ++k) {
          int64_t offset = k * (skip + 1);
          SmallVector<int64_t> column;
          for (int64_t j = 0; j < grams; ++j)
            column.push_back(pool[start + j * n + k]);
          auto columnType =
              RankedTensorType::get({grams}, c.b.opBuilder().getI64Type());
          Value poolColumn = c.b.constant(
              DenseElementsAttr::get(columnType, ArrayRef(column)));
          Value window = c.b.unsqueeze(
              c.b.slice(seq, {0, offset}, {batch, offset + windows}), {2});
          Value eq =
              c.b.cast(c.b.compare(CompareDirection::eq, window, poolColumn),
                       DType::f32);
          match = match ? c.b.mul(match, eq) : eq;
        }
        Value sum = c.b.reduceSum(match, {1});
        total = total ? c.b.add(total, sum) : sum;
      }
    }
    if (!total)
      total =
          c.b.constant(SmallVector<float>(batch * grams, 0.0f), {batch, grams});
    perLength.push_back(total);
  }
  // A zero column last, gathered for the output columns no n-gram maps to.
  perLength.push_back(
      c.b.constant(SmallVector<float>(batch, 0.0f), {batch, 1}));
  Value all = c.b.concat(perLength, 1);
  if (mode != "TF") {
    Value present = c.b.cast(
        c.b.compare(CompareDirection::gt, all, c.b.scalar(0, DType::f32)),
        DType::f32);
    SmallVector<float> w(numGrams + 1, 1.0f);
    for (auto [j, weight] : llvm::enumerate(weights))
      w[j] = weight;
    w.back() = 0;
    Value wv = c.b.constant(w, {numGrams + 1});
    all = c.b.mul(mode == "IDF" ? present : all, wv);
  }
  SmallVector<int64_t> source(columns, numGrams);
  for (auto [j, index] : llvm::enumerate(indexes))
    source[index] = j;
  auto sourceType =
      RankedTensorType::get({columns}, c.b.opBuilder().getI64Type());
  Value y = c.b.gather(
      all, c.b.constant(DenseElementsAttr::get(sourceType, ArrayRef(source))),
      1);
  c.setOutput(0, batched ? y : c.b.reshape(y, {columns}));
  return success();
}

/// Resize with coordinate_transformation_mode tf_crop_and_resize or
/// tf_half_pixel_for_nn, one axis at a time: the output coordinates are a
/// run-time range (sizes, scales and roi may be known only at run time),
/// mapped to input coordinates and gathered (nearest) or interpolated
/// between two gathers (linear). Crop coordinates outside the input take
/// extrapolation_value. The input's shape must be static.
LogicalResult loom::onnx_import::resizeTf(ImportContext &c) {
  Value x = c.input(0);
  auto shape = staticShape(c, x, "Resize with a tf_* coordinate mode");
  if (failed(shape))
    return failure();
  if (!isa<FloatType>(cast<RankedTensorType>(x.getType()).getElementType()))
    return c.error("Resize with a tf_* coordinate mode needs float input");
  std::string coord = c.attrString("coordinate_transformation_mode", "");
  std::string mode = c.attrString("mode", "nearest");
  std::string nearest = c.attrString("nearest_mode", "round_prefer_floor");
  bool crop = coord == "tf_crop_and_resize";
  if (mode != "nearest" && mode != "linear")
    return c.error("mode '" + mode +
                   "' is not supported with coordinate mode '" + coord +
                   "' (nearest or linear)");
  if (!crop && mode != "nearest")
    return c.error("coordinate mode 'tf_half_pixel_for_nn' is for mode "
                   "'nearest', not '" +
                   mode + "'");
  if (nearest != "round_prefer_floor" && nearest != "round_prefer_ceil" &&
      nearest != "floor" && nearest != "ceil")
    return c.error("unknown nearest_mode '" + nearest + "'");
  if (c.hasAttr("axes") ||
      c.attrString("keep_aspect_ratio_policy", "stretch") != "stretch" ||
      c.attrInt("antialias", 0))
    return c.error("Resize with coordinate mode '" + coord +
                   "' takes no axes, keep_aspect_ratio_policy or antialias");
  int64_t rank = shape->size();
  bool bySizes = c.hasInput(3);
  if (bySizes ==
      (c.hasInput(2) &&
       cast<RankedTensorType>(c.input(2).getType()).getNumElements() != 0))
    return c.error("Resize needs exactly one of scales and sizes");
  Value given = c.input(bySizes ? 3 : 2);
  Value roi = crop ? c.input(1) : Value();
  if (!given || (crop && !roi))
    return failure();
  auto givenType = cast<RankedTensorType>(given.getType());
  if (givenType.getRank() != 1 ||
      (!givenType.isDynamicDim(0) && givenType.getDimSize(0) != rank))
    return c.error("Resize's " + Twine(bySizes ? "sizes" : "scales") +
                   " must have one entry per input dim (" + Twine(rank) + ")");
  if (crop) {
    auto roiType = cast<RankedTensorType>(roi.getType());
    if (roiType.getRank() != 1 ||
        (!roiType.isDynamicDim(0) && roiType.getDimSize(0) != 2 * rank))
      return c.error("Resize's roi must hold 2 * rank (" + Twine(2 * rank) +
                     ") values for tf_crop_and_resize");
    roi = c.b.cast(roi, DType::f32);
  }
  GraphBuilder &b = c.b;
  auto f = [&](double v) { return b.scalar(v, DType::f32); };
  auto entry = [&](Value v, int64_t i) {
    return b.reshape(b.slice(v, {i}, {i + 1}), {});
  };
  // Sizes or scales known at import give a static output (and no range).
  SmallVector<int64_t> knownLengths;
  if (auto known = c.knownInput(bySizes ? 3 : 2);
      known && known->getNumElements() == rank) {
    int64_t d = 0;
    if (bySizes)
      for (const APInt &v : known->getValues<APInt>())
        knownLengths.push_back(v.getSExtValue());
    else
      for (const APFloat &v : known->getValues<APFloat>())
        knownLengths.push_back(
            (int64_t)std::floor(v.convertToDouble() * (*shape)[d++]));
    for (int64_t length : knownLengths)
      if (length < 1)
        return c.error("Resize's output dims must be at least 1, not " +
                       Twine(length));
  }
  Value y = b.cast(x, DType::f32), outside;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t length = (*shape)[d];
    Value outLength, scale;
    if (bySizes) {
      outLength = b.cast(entry(given, d), DType::i64);
      scale = b.div(b.cast(outLength, DType::f32), f(length));
    } else {
      scale = b.cast(entry(given, d), DType::f32);
      outLength = b.cast(b.floor(b.mul(scale, f(length))), DType::i64);
    }
    if (!knownLengths.empty())
      outLength = b.scalar(knownLengths[d], DType::i64);
    Value o = knownLengths.empty()
                  ? b.cast(b.range(b.scalar(0, DType::i64), outLength,
                                   b.scalar(1, DType::i64)),
                           DType::f32)
                  : b.iota({knownLengths[d]}, 0, DType::f32);
    Value coordinate;
    if (crop) {
      Value start = entry(roi, d), end = entry(roi, rank + d);
      Value span = f(length - 1);
      Value outF = b.cast(outLength, DType::f32);
      Value stepped = b.add(
          b.mul(start, span),
          b.div(b.mul(o, b.mul(b.sub(end, start), span)), b.sub(outF, f(1))));
      Value middle = b.mul(b.mul(f(0.5), b.add(start, end)), span);
      Value several =
          b.compare(CompareDirection::gt, outLength, b.scalar(1, DType::i64));
      coordinate = b.where(several, stepped, middle);
      Value out = b.add(
          b.cast(b.compare(CompareDirection::lt, coordinate, f(0)), DType::f32),
          b.cast(b.compare(CompareDirection::gt, coordinate, f(length - 1)),
                 DType::f32));
      SmallVector<int64_t> others;
      for (int64_t e = 0; e < rank; ++e)
        if (e != d)
          others.push_back(e);
      if (!others.empty())
        out = b.unsqueeze(out, others);
      outside = outside ? b.add(outside, out) : out;
    } else {
      coordinate = b.div(b.add(o, f(0.5)), scale);
    }
    auto clampIndex = [&](Value v) {
      return b.cast(b.clamp(v, 0.0, (double)(length - 1)), DType::i64);
    };
    if (mode == "nearest") {
      Value rounded =
          nearest == "round_prefer_floor"  ? b.ceil(b.sub(coordinate, f(0.5)))
          : nearest == "round_prefer_ceil" ? b.floor(b.add(coordinate, f(0.5)))
          : nearest == "floor"             ? b.floor(coordinate)
                                           : b.ceil(coordinate);
      y = b.gather(y, clampIndex(rounded), d);
      continue;
    }
    Value clamped = b.clamp(coordinate, 0.0, (double)(length - 1));
    Value low = b.floor(clamped);
    Value weight = b.sub(clamped, low);
    Value high = b.add(low, f(1));
    Value a = b.gather(y, clampIndex(low), d);
    Value z = b.gather(y, clampIndex(high), d);
    SmallVector<int64_t> others;
    for (int64_t e = 0; e < rank; ++e)
      if (e != d)
        others.push_back(e);
    if (!others.empty())
      weight = b.unsqueeze(weight, others);
    y = b.add(a, b.mul(b.sub(z, a), weight));
  }
  if (outside)
    y = b.where(b.compare(CompareDirection::gt, outside, f(0)),
                f(c.attrFloat("extrapolation_value", 0.0f)), y);
  c.setOutput(0, b.cast(y, dtypeOf(x)));
  return success();
}
