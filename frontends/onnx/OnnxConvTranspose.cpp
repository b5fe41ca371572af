//===- OnnxConvTranspose.cpp - ONNX ConvTranspose as matmul + col2im ------===//
//
// ConvTranspose scatters each input element, times the kernel, into the
// output: y[n, o, i * s + k * d - pad_begin] += x[n, c, i] w[c, o, k]. It is
// built from graph ops so that the CPU, the CUDA emitter and autodiff take it
// as it is: one (grouped) matmul gives every kernel tap's contribution,
// [N, G, K * O/G, P] for P input positions; a reshape + pad + reshape spreads
// the positions `stride` apart (zero insertion); then each tap is sliced out,
// padded to its offset in the output and summed (col2im). No multiply touches
// an inserted zero, unlike a stride-1 convolution of the zero-inserted input.
// Spatial dims, channels and the kernel must be static; the batch may be
// dynamic. Any number of spatial dims (1-D, 2-D, 3-D, ...) works the same.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;

namespace {

/// The largest stride, dilation, pad or output size taken, so that sizes
/// computed from them cannot overflow.
constexpr int64_t kMaxAttr = int64_t(1) << 31;

/// The sizes, strides and pads of one ConvTranspose node, checked.
struct Geometry {
  int64_t groups = 1, cin = 0, cg = 0, og = 0;
  SmallVector<int64_t> in, kernel, strides, dilations, outputPadding, out;
  /// Begin pads of each spatial dim, then end pads; negative ones (from an
  /// output_shape larger than the full result) add zeros.
  SmallVector<int64_t> pads;
  size_t spatial() const { return in.size(); }
  int64_t cout() const { return groups * og; }
};

/// `total` split into begin and end pads as the ONNX spec writes it, with
/// floor division (as the backend test data has it): SAME_UPPER puts an odd
/// pad at the end, NOTSET and SAME_LOWER at the beginning. A negative total
/// (an output_shape beyond the full result) adds zeros: floor division puts
/// the odd one at the end for NOTSET (test_convtranspose_output_shape).
std::pair<int64_t, int64_t> splitTotal(int64_t total, bool upper) {
  int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
  return upper ? std::make_pair(half, total - half)
               : std::make_pair(total - half, half);
}

/// Reads and checks the node's attributes against x [N, C, spatial...] and
/// w [C, O / group, kernel...].
FailureOr<Geometry> geometryOf(ImportContext &c, RankedTensorType xType,
                               RankedTensorType wType) {
  Geometry g;
  if (xType.getRank() < 3)
    return c.error("the input must have rank 3 or more ([N, C, spatial...]), "
                   "got rank " +
                   Twine(xType.getRank()));
  if (wType.getRank() != xType.getRank())
    return c.error("the weight's rank " + Twine(wType.getRank()) +
                   " differs from the input's " + Twine(xType.getRank()));
  if (!isa<FloatType>(xType.getElementType()))
    return c.error("the input must hold floats");
  if (xType.getElementType() != wType.getElementType())
    return c.error("the input and the weight differ in element type");
  for (int64_t d = 1; d < xType.getRank(); ++d)
    if (xType.isDynamicDim(d))
      return c.error("dim " + Twine(d) +
                     " of the input is dynamic; only the batch may be");
  if (!wType.hasStaticShape())
    return c.error("the weight's shape must be static");
  size_t spatial = xType.getRank() - 2;
  g.cin = xType.getDimSize(1);
  g.in.assign(xType.getShape().begin() + 2, xType.getShape().end());
  g.kernel.assign(wType.getShape().begin() + 2, wType.getShape().end());
  if (llvm::is_contained(g.in, 0) || llvm::is_contained(g.kernel, 0) ||
      g.cin == 0 || wType.getDimSize(1) == 0)
    return c.error("empty inputs and kernels are not supported");
  SmallVector<int64_t> kernelAttr = c.attrInts("kernel_shape");
  if (!kernelAttr.empty() && kernelAttr != g.kernel)
    return c.error("kernel_shape does not match the weight's spatial dims");

  g.groups = c.attrInt("group", 1);
  if (g.groups < 1)
    return c.error("group must be positive, not " + Twine(g.groups));
  if (g.cin % g.groups)
    return c.error("input channels " + Twine(g.cin) +
                   " are not divisible by group " + Twine(g.groups));
  if (wType.getDimSize(0) != g.cin)
    return c.error("the weight's dim 0 (" + Twine(wType.getDimSize(0)) +
                   ") must equal the input channels (" + Twine(g.cin) + ")");
  g.cg = g.cin / g.groups;
  g.og = wType.getDimSize(1);

  auto perSpatial = [&](StringRef name, int64_t fill, int64_t min,
                        SmallVectorImpl<int64_t> &values) -> LogicalResult {
    values = c.attrInts(name);
    if (values.empty())
      values.assign(spatial, fill);
    if (values.size() != spatial)
      return c.error(name + " has " + Twine(values.size()) + " values for " +
                     Twine(spatial) + " spatial dims");
    for (int64_t v : values)
      if (v < min || v > kMaxAttr)
        return c.error(name + " must be in [" + Twine(min) + ", " +
                       Twine(kMaxAttr) + "], not " + Twine(v));
    return success();
  };
  if (failed(perSpatial("strides", 1, 1, g.strides)) ||
      failed(perSpatial("dilations", 1, 1, g.dilations)) ||
      failed(perSpatial("output_padding", 0, 0, g.outputPadding)))
    return failure();

  // The result size before pads: stride * (in - 1) + output_padding +
  // dilated kernel.
  SmallVector<int64_t> full;
  for (size_t i = 0; i < spatial; ++i)
    full.push_back(g.strides[i] * (g.in[i] - 1) + g.outputPadding[i] +
                   (g.kernel[i] - 1) * g.dilations[i] + 1);

  std::string autoPad = c.attrString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    return c.error("unknown auto_pad '" + autoPad + "'");
  SmallVector<int64_t> outputShape = c.attrInts("output_shape");
  if (!outputShape.empty()) {
    // Spatial sizes, or (as some exporters write them) the whole shape.
    if (outputShape.size() == spatial + 2)
      outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
    if (outputShape.size() != spatial)
      return c.error("output_shape has " + Twine(outputShape.size()) +
                     " values for " + Twine(spatial) + " spatial dims");
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < spatial; ++i)
      outputShape.push_back(g.in[i] * g.strides[i]);
  }
  g.pads.assign(2 * spatial, 0);
  if (!outputShape.empty()) {
    for (size_t i = 0; i < spatial; ++i) {
      if (outputShape[i] < 1 || outputShape[i] > kMaxAttr)
        return c.error("output_shape must be in [1, " + Twine(kMaxAttr) + "]");
      auto [begin, end] =
          splitTotal(full[i] - outputShape[i], autoPad == "SAME_UPPER");
      g.pads[i] = begin;
      g.pads[spatial + i] = end;
    }
  } else if (autoPad == "NOTSET") {
    SmallVector<int64_t> pads = c.attrInts("pads");
    if (!pads.empty()) {
      if (pads.size() != 2 * spatial)
        return c.error("pads has " + Twine(pads.size()) + " values for " +
                       Twine(spatial) + " spatial dims (want " +
                       Twine(2 * spatial) + ")");
      if (llvm::any_of(pads, [](int64_t p) { return p < 0 || p > kMaxAttr; }))
        return c.error("pads must be in [0, " + Twine(kMaxAttr) + "]");
      g.pads = pads;
    }
  }
  for (size_t i = 0; i < spatial; ++i) {
    g.out.push_back(full[i] - g.pads[i] - g.pads[spatial + i]);
    if (g.out.back() < 1)
      return c.error("spatial dim " + Twine(i) + " of the output would be " +
                     Twine(g.out.back()) + " (pads larger than the result)");
  }
  return g;
}

/// x [N, C, S...] with `strides[i] - 1` zeros after each element of spatial
/// dim i: [N, C, S * strides...].
Value insertZeros(ImportContext &c, Value x, ArrayRef<int64_t> strides) {
  if (llvm::all_of(strides, [](int64_t s) { return s == 1; }))
    return x;
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> split{0, t.getDimSize(1)}, merged{0, t.getDimSize(1)};
  SmallVector<int64_t> begin(2 + 2 * strides.size(), 0), end = begin;
  for (auto [i, s] : llvm::enumerate(strides)) {
    int64_t size = t.getDimSize(2 + i);
    split.append({size, 1});
    end[2 + 2 * i + 1] = s - 1;
    merged.push_back(size * s);
  }
  SmallVector<int64_t> pads(begin);
  pads.append(end);
  return c.b.reshape(c.b.pad(c.b.reshape(x, split), pads), merged);
}

} // namespace

namespace loom::onnx_import {

LogicalResult convTranspose(ImportContext &c) {
  Value x = c.input(0), w = c.input(1);
  Value bias = c.hasInput(2) ? c.input(2) : Value();
  if (!x || !w || (c.hasInput(2) && !bias))
    return failure();
  auto xType = dyn_cast<RankedTensorType>(x.getType());
  auto wType = dyn_cast<RankedTensorType>(w.getType());
  if (!xType || !wType)
    return c.error("the input and the weight must be tensors");
  auto geometry = geometryOf(c, xType, wType);
  if (failed(geometry))
    return failure();
  const Geometry &g = *geometry;
  size_t spatial = g.spatial();
  int64_t taps = 1, positions = 1;
  for (size_t i = 0; i < spatial; ++i) {
    taps *= g.kernel[i];
    positions *= g.in[i];
  }
  if (bias) {
    auto bType = dyn_cast<RankedTensorType>(bias.getType());
    if (!bType || bType.getRank() != 1 || bType.getDimSize(0) != g.cout() ||
        bType.getElementType() != xType.getElementType())
      return c.error("the bias must have shape [" + Twine(g.cout()) +
                     "] and the input's element type");
  }

  // Every tap's contribution, [N, G, K * O/G, P]: w as [K * O/G, C] times
  // x as [N, C, P]; with groups, w as [G, K * O/G, C/G] times x as
  // [G, C/G, N * P] (batch dims that only one side broadcasts, which
  // cuBLASLt's strided batches can express).
  Value wt =
      c.b.transpose(c.b.reshape(w, {g.groups, g.cg, g.og, taps}), {0, 3, 2, 1});
  Value cols;
  if (g.groups == 1) {
    cols = c.b.matmul(c.b.reshape(wt, {taps * g.og, g.cg}),
                      c.b.reshape(x, {0, g.cin, positions}));
  } else {
    Value xg = c.b.transpose(c.b.reshape(x, {0, g.groups, g.cg, positions}),
                             {1, 2, 0, 3});
    cols = c.b.matmul(c.b.reshape(wt, {g.groups, taps * g.og, g.cg}),
                      c.b.reshape(xg, {g.groups, g.cg, -1}));
    cols =
        c.b.transpose(c.b.reshape(cols, {g.groups, taps * g.og, -1, positions}),
                      {2, 0, 1, 3});
  }

  // The positions spread `stride` apart: [N, G, K, O/G, Z...].
  SmallVector<int64_t> flat{0, g.groups * taps * g.og};
  flat.append(g.in);
  Value spread = insertZeros(c, c.b.reshape(cols, flat), g.strides);
  SmallVector<int64_t> byTap{0, g.groups, taps, g.og}, zeros;
  for (size_t i = 0; i < spatial; ++i)
    zeros.push_back(g.in[i] * g.strides[i]);
  byTap.append(zeros);
  spread = c.b.reshape(spread, byTap);

  // col2im: tap k's values land at z + k * dilation - pad_begin.
  Value y;
  SmallVector<int64_t> tap(spatial, 0);
  for (int64_t t = 0; t < taps; ++t) {
    for (int64_t i = spatial - 1, rest = t; i >= 0; --i) {
      tap[i] = rest % g.kernel[i];
      rest /= g.kernel[i];
    }
    SmallVector<int64_t> starts{0, 0, t, 0},
        ends{INT64_MAX, INT64_MAX, t + 1, INT64_MAX};
    SmallVector<int64_t> padBegin{0, 0}, padEnd{0, 0};
    bool empty = false;
    for (size_t i = 0; i < spatial; ++i) {
      int64_t shift = tap[i] * g.dilations[i] - g.pads[i];
      int64_t used = g.strides[i] * (g.in[i] - 1) + 1;
      int64_t lo = std::max<int64_t>(0, shift);
      int64_t hi = std::min<int64_t>(g.out[i], shift + used);
      empty |= lo >= hi;
      starts.push_back(lo - shift);
      ends.push_back(hi - shift);
      padBegin.push_back(lo);
      padEnd.push_back(g.out[i] - hi);
    }
    if (empty)
      continue;
    SmallVector<int64_t> shape{0, g.cout()};
    for (size_t i = 0; i < spatial; ++i)
      shape.push_back(ends[4 + i] - starts[4 + i]);
    Value part = c.b.reshape(c.b.slice(spread, starts, ends), shape);
    padBegin.append(padEnd);
    part = c.b.pad(part, padBegin);
    y = y ? c.b.add(y, part) : part;
  }
  if (!y) {
    // The output lies in output_padding's zeros: zeros of the output's
    // shape, from one element per image and channel.
    SmallVector<int64_t> starts(4 + spatial, 0), ends(4 + spatial, INT64_MAX);
    SmallVector<int64_t> one{0, g.cout()}, pads(2 * (2 + spatial), 0);
    ends[2] = 1;
    for (size_t i = 0; i < spatial; ++i) {
      ends[4 + i] = 1;
      one.push_back(1);
      pads[2 + spatial + 2 + i] = g.out[i] - 1;
    }
    Value part = c.b.reshape(c.b.slice(spread, starts, ends), one);
    auto dtype = fromMlirType(xType.getElementType());
    if (!dtype)
      return c.error("unsupported element type");
    y = c.b.pad(c.b.fillLike(part, 0.0, *dtype), pads);
  }
  if (bias) {
    SmallVector<int64_t> biasShape(spatial + 1, 1);
    biasShape[0] = g.cout();
    y = c.b.add(y, c.b.reshape(bias, biasShape));
  }
  c.setOutput(0, y);
  return success();
}

} // namespace loom::onnx_import
