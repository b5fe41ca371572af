//===- OnnxSignal.cpp - ONNX signal ops and Det as graph ops --------------===//
//
// The signal processing ops, written as graph ops:
//  - HannWindow, HammingWindow, BlackmanWindow: cosine sums of
//    2 pi n / N, a constant when the size is known at import, else over a
//    run-time range;
//  - DFT: matmuls with cos / sin matrices of the transform's length (known
//    at import);
//  - STFT: frames gathered from the signal, windowed, then the DFT; the
//    frame step and length may be known only at run time (a range of frame
//    starts, DFT matrices built from ranges);
//  - MelWeightMatrix: triangular filters from the ONNX formula, a constant
//    when every input is known, else computed over run-time ranges.
// And Det, as Gaussian elimination with partial pivoting unrolled over the
// static matrix size (row swaps are gathers).
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

#include <cmath>

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;
using graph::CompareDirection;

namespace {

constexpr double kPi = 3.14159265358979323846;

/// A constant of `shape` and element type `dtype` from doubles.
Value doubleConstant(ImportContext &c, ArrayRef<double> values,
                     ArrayRef<int64_t> shape, DType dtype) {
  return constantOf(c, values, shape, toMlirType(c.ctx, dtype));
}

/// The element type named by attribute `name` (an ONNX data type), `dflt`
/// when absent; an error when graph IR lacks it.
FailureOr<DType> dtypeAttr(ImportContext &c, StringRef name, int dflt) {
  int64_t t = c.attrInt(name, dflt);
  auto dtype = convertDataType(t);
  if (!dtype)
    return c.error(name + " " + dataTypeName(t) + " is not supported");
  return *dtype;
}

/// A scalar integer input known at import, when it is.
FailureOr<std::optional<int64_t>> knownScalar(ImportContext &c, int i,
                                              StringRef what) {
  if (!c.hasInput(i) || !c.knownInput(i))
    return std::optional<int64_t>();
  auto v = c.intsInput(i, what);
  if (failed(v))
    return failure();
  if (v->size() != 1)
    return c.error(what + " must hold one value");
  return std::optional<int64_t>(v->front());
}

/// Input `i` as an i64 scalar (rank 0) of the graph.
Value i64Scalar(ImportContext &c, int i) {
  Value v = c.input(i);
  if (!v)
    return {};
  if (cast<RankedTensorType>(v.getType()).getRank() != 0)
    v = c.b.reshape(v, {});
  return c.b.cast(v, DType::i64);
}

/// The generalized cosine window a0 - a1 cos(t) + a2 cos(2t), t = 2 pi n /
/// N, n < size, N = size (periodic) or size - 1.
LogicalResult cosineWindow(ImportContext &c, double a0, double a1, double a2) {
  auto dtype = dtypeAttr(c, "output_datatype", 1);
  if (failed(dtype))
    return failure();
  bool periodic = c.attrInt("periodic", 1);
  auto size = knownScalar(c, 0, "size of the window");
  if (failed(size))
    return failure();
  if (*size) {
    int64_t n = **size;
    if (n < 0)
      return c.error("the window size is negative");
    double denom = periodic ? n : n - 1;
    SmallVector<double> w;
    for (int64_t i = 0; i < n; ++i) {
      double t = 2 * kPi * i / denom;
      w.push_back(a0 - a1 * std::cos(t) + a2 * std::cos(2 * t));
    }
    c.setOutput(0, doubleConstant(c, w, {n}, *dtype));
    return success();
  }
  Value n = i64Scalar(c, 0);
  if (!n)
    return failure();
  GraphBuilder &b = c.b;
  Value i = b.cast(b.range(b.scalar(0, DType::i64), n, b.scalar(1, DType::i64)),
                   DType::f32);
  Value denom = b.cast(n, DType::f32);
  if (!periodic)
    denom = b.sub(denom, b.scalar(1.0));
  Value t = b.div(b.mul(i, b.scalar(2 * kPi)), denom);
  Value w = b.sub(b.scalar(a0), b.mul(b.cos(t), b.scalar(a1)));
  if (a2 != 0)
    w = b.add(w, b.mul(b.cos(b.add(t, t)), b.scalar(a2)));
  c.setOutput(0, *dtype == DType::f32 ? w : b.cast(w, *dtype));
  return success();
}

/// The cos and sin matrices [length, bins] of a DFT of `length` points
/// (angle 2 pi n k / length), in `dtype`.
std::pair<Value, Value> dftMatrices(ImportContext &c, int64_t length,
                                    int64_t bins, DType dtype) {
  SmallVector<double> cosines, sines;
  for (int64_t n = 0; n < length; ++n)
    for (int64_t k = 0; k < bins; ++k) {
      double t = 2 * kPi * double((n * k) % length) / length;
      cosines.push_back(std::cos(t));
      sines.push_back(std::sin(t));
    }
  return {doubleConstant(c, cosines, {length, bins}, dtype),
          doubleConstant(c, sines, {length, bins}, dtype)};
}

/// The same from a run-time length (an i64 scalar): [?, ?] matrices.
std::pair<Value, Value> dftMatrices(ImportContext &c, Value length, Value bins,
                                    DType dtype) {
  GraphBuilder &b = c.b;
  Value zero = b.scalar(0, DType::i64), one = b.scalar(1, DType::i64);
  Value n = b.unsqueeze(b.range(zero, length, one), {1});
  Value k = b.unsqueeze(b.range(zero, bins, one), {0});
  Value nk = b.cast(b.mod(b.mul(n, k), length), DType::f64);
  Value t = b.div(b.mul(nk, b.scalar(2 * kPi, DType::f64)),
                  b.cast(length, DType::f64));
  return {b.cast(b.cos(t), dtype), b.cast(b.sin(t), dtype)};
}

/// The DFT of [..., length] signals given by real parts `re` and
/// imaginary parts `im` (null for real signals) with matrices `cosM`,
/// `sinM` [length, bins]: [..., bins, 2]. The inverse divides by `scale`
/// (the length; a scalar of the element type).
Value dftLastAxis(ImportContext &c, Value re, Value im, Value cosM, Value sinM,
                  bool inverse, Value scale) {
  GraphBuilder &b = c.b;
  // Forward: (a + ib)(cos - i sin); inverse: (a + ib)(cos + i sin) / L.
  Value outRe = b.matmul(re, cosM), outIm = b.matmul(re, sinM);
  outIm = inverse ? outIm : b.neg(outIm);
  if (im) {
    Value imCos = b.matmul(im, cosM), imSin = b.matmul(im, sinM);
    outRe = inverse ? b.sub(outRe, imSin) : b.add(outRe, imSin);
    outIm = b.add(outIm, imCos);
  }
  if (inverse) {
    outRe = b.div(outRe, scale);
    outIm = b.div(outIm, scale);
  }
  return b.concat({b.unsqueeze(outRe, {-1}), b.unsqueeze(outIm, {-1})}, -1);
}

/// The real and imaginary parts of [..., 1 | 2] as [...] (null imaginary
/// part for a real signal).
std::pair<Value, Value> complexParts(ImportContext &c, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t last = type.getRank() - 1;
  Value re = c.b.squeeze(c.b.slice(x, {0}, {1}, {last}), {last});
  if (type.getDimSize(last) == 1)
    return {re, Value()};
  return {re, c.b.squeeze(c.b.slice(x, {1}, {2}, {last}), {last})};
}

/// Checks that x is a float tensor of rank >= `minRank` whose last dim is
/// 1 or 2.
LogicalResult checkSignal(ImportContext &c, Value x, int64_t minRank) {
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  if (!isFloat(x))
    return c.error("the signal must hold floats");
  if (type.getRank() < minRank || (type.getDimSize(type.getRank() - 1) != 1 &&
                                   type.getDimSize(type.getRank() - 1) != 2))
    return c.error("the signal must have rank " + Twine(minRank) +
                   " or more and a last dim of 1 (real) or 2 (complex)");
  return success();
}

} // namespace

namespace loom::onnx_import {

LogicalResult hannWindow(ImportContext &c) {
  return cosineWindow(c, 0.5, 0.5, 0);
}

LogicalResult hammingWindow(ImportContext &c) {
  return cosineWindow(c, 25.0 / 46, 21.0 / 46, 0);
}

LogicalResult blackmanWindow(ImportContext &c) {
  return cosineWindow(c, 0.42, 0.5, 0.08);
}

/// DFT along one axis (an attribute at opset 17, an input from 20) of a
/// signal whose length there, or dft_length, is known at import.
template <int version> LogicalResult dft(ImportContext &c) {
  Value x = c.input(0);
  if (failed(checkSignal(c, x, 2)))
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  int64_t axis = c.attrInt("axis", 1);
  if (version >= 20) {
    axis = -2;
    auto given = knownScalar(c, 2, "axis of DFT");
    if (failed(given))
      return failure();
    if (c.hasInput(2) && !*given)
      return c.error("the axis must be known at import");
    if (*given)
      axis = **given;
  }
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank - 1)
    return c.error("axis " + Twine(axis) + " is out of range for a signal " +
                   "of rank " + Twine(rank));
  bool inverse = c.attrInt("inverse", 0), onesided = c.attrInt("onesided", 0);
  if (inverse && onesided)
    return c.error("an inverse one-sided DFT is not supported");
  int64_t n = type.getDimSize(axis), length = n;
  auto given = knownScalar(c, 1, "dft_length");
  if (failed(given))
    return failure();
  if (c.hasInput(1) && !*given)
    return c.error("dft_length must be known at import");
  if (*given)
    length = **given;
  if (ShapedType::isDynamic(length) || length < 1)
    return c.error("the transform's length must be known at import and "
                   "positive");
  // The axis moved next to the last: [..., n, 1 | 2].
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank - 1; ++i)
    if (i != axis)
      perm.push_back(i);
  perm.append({axis, rank - 1});
  Value v = c.b.transpose(x, perm);
  if (length < n)
    v = c.b.slice(v, {0}, {length}, {rank - 2});
  if (length > n) {
    if (ShapedType::isDynamic(n))
      return c.error("padding to dft_length needs a static signal length");
    SmallVector<int64_t> pads(2 * rank, 0);
    pads[rank + rank - 2] = length - n;
    v = c.b.pad(v, pads);
  }
  auto [re, im] = complexParts(c, v);
  int64_t bins = onesided ? length / 2 + 1 : length;
  auto [cosM, sinM] = dftMatrices(c, length, bins, dtypeOf(x));
  Value y = dftLastAxis(c, re, im, cosM, sinM, inverse,
                        scalarLike(c, x, double(length)));
  SmallVector<int64_t> back(rank);
  for (int64_t i = 0; i < rank; ++i)
    back[perm[i]] = i;
  c.setOutput(0, c.b.transpose(y, back));
  return success();
}

template LogicalResult dft<17>(ImportContext &c);
template LogicalResult dft<20>(ImportContext &c);

/// STFT of signal [batch, T, 1 | 2]: frames of frame_length starting every
/// frame_step, times the window, DFT'd: [batch, frames, bins, 2].
LogicalResult stft(ImportContext &c) {
  Value signal = c.input(0);
  if (failed(checkSignal(c, signal, 3)))
    return failure();
  auto type = cast<RankedTensorType>(signal.getType());
  if (type.getRank() != 3)
    return c.error("the signal must have shape [batch, length, 1 | 2]");
  int64_t total = type.getDimSize(1);
  if (ShapedType::isDynamic(total))
    return c.error("the signal length must be static");
  bool onesided = c.attrInt("onesided", 1);
  GraphBuilder &b = c.b;
  DType dtype = dtypeOf(signal);
  Value window = c.hasInput(2) ? c.input(2) : Value();
  if (c.hasInput(2) && !window)
    return failure();
  auto step = knownScalar(c, 1, "frame_step");
  auto frameLength = knownScalar(c, 3, "frame_length");
  if (failed(step) || failed(frameLength))
    return failure();
  // The frame length: known at import (frame_length, or the window's
  // static size) or at run time (frame_length).
  std::optional<int64_t> length = *frameLength;
  if (window) {
    auto wType = cast<RankedTensorType>(window.getType());
    if (wType.getRank() != 1)
      return c.error("the window must be 1-D");
    if (length && !wType.isDynamicDim(0) && wType.getDimSize(0) != *length)
      return c.error("the window has " + Twine(wType.getDimSize(0)) +
                     " values for frames of " + Twine(*length));
    if (!length && !wType.isDynamicDim(0))
      length = wType.getDimSize(0);
  }
  if (!length && !c.hasInput(3))
    return c.error("a window or frame_length is needed");
  if (length && (*length < 1 || *length > total))
    return c.error("the frame length " + Twine(*length) +
                   " must be in [1, signal length]");
  if (*step && **step < 1)
    return c.error("frame_step must be positive");
  Value zero = b.scalar(0, DType::i64), one = b.scalar(1, DType::i64);
  Value lengthValue =
      length ? b.scalar(double(*length), DType::i64) : i64Scalar(c, 3);
  // Frame starts, then [frames, length] sample indices.
  Value starts, offsets;
  if (*step && length) {
    int64_t frames = (total - *length) / **step + 1;
    starts =
        b.mul(b.iota({frames, 1}, 0), b.scalar(double(**step), DType::i64));
  } else {
    Value stepValue =
        *step ? b.scalar(double(**step), DType::i64) : i64Scalar(c, 1);
    Value frames =
        b.add(b.div(b.sub(b.scalar(double(total), DType::i64), lengthValue),
                    stepValue),
              one);
    starts = b.unsqueeze(b.mul(b.range(zero, frames, one), stepValue), {1});
  }
  offsets = length ? b.iota({1, *length}, 1)
                   : b.unsqueeze(b.range(zero, lengthValue, one), {0});
  Value frames = b.gather(signal, b.add(starts, offsets), 1);
  // [batch, frames, length, 1 | 2], windowed.
  if (window)
    frames = b.mul(frames, b.unsqueeze(b.cast(window, dtype), {1}));
  auto [re, im] = complexParts(c, frames);
  Value cosM, sinM;
  if (length) {
    std::tie(cosM, sinM) =
        dftMatrices(c, *length, onesided ? *length / 2 + 1 : *length, dtype);
  } else {
    Value bins = onesided
                     ? b.add(b.div(lengthValue, b.scalar(2, DType::i64)), one)
                     : lengthValue;
    std::tie(cosM, sinM) = dftMatrices(c, lengthValue, bins, dtype);
  }
  c.setOutput(0, dftLastAxis(c, re, im, cosM, sinM, false, Value()));
  return success();
}

/// MelWeightMatrix [dft_length / 2 + 1, num_mel_bins]: triangular filters
/// between mel-spaced edges, as ONNX defines them (the mel range divided in
/// num_mel_bins + 2 steps, as ONNX's reference does).
LogicalResult melWeightMatrix(ImportContext &c) {
  auto dtype = dtypeAttr(c, "output_datatype", 1);
  if (failed(dtype))
    return failure();
  auto bins = knownScalar(c, 0, "num_mel_bins");
  auto dftLength = knownScalar(c, 1, "dft_length");
  auto rate = knownScalar(c, 2, "sample_rate");
  if (failed(bins) || failed(dftLength) || failed(rate))
    return failure();
  auto knownFloat = [&](int i) -> std::optional<double> {
    auto v = c.knownInput(i);
    if (!v || v->getNumElements() != 1 || !isa<FloatType>(v->getElementType()))
      return std::nullopt;
    return (*v->getValues<APFloat>().begin()).convertToDouble();
  };
  std::optional<double> lower = knownFloat(3), upper = knownFloat(4);
  auto toMel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  if (*bins && *dftLength && *rate && lower && upper) {
    int64_t m = **bins, d = **dftLength, sr = **rate;
    if (m < 1 || d < 1 || sr < 1)
      return c.error("num_mel_bins, dft_length and sample_rate must be "
                     "positive");
    int64_t spectrum = d / 2 + 1;
    double lowMel = toMel(*lower), step = (toMel(*upper) - lowMel) / (m + 2);
    SmallVector<int64_t> edge;
    for (int64_t i = 0; i < m + 2; ++i) {
      double hz = 700 * (std::pow(10.0, (i * step + lowMel) / 2595) - 1);
      edge.push_back((int64_t)std::floor((d + 1) * hz / sr));
    }
    SmallVector<double> out(spectrum * m, 0.0);
    auto at = [&](int64_t j, int64_t i) -> double * {
      return j >= 0 && j < spectrum ? &out[j * m + i] : nullptr;
    };
    for (int64_t i = 0; i < m; ++i) {
      int64_t lo = edge[i], mid = edge[i + 1], hi = edge[i + 2];
      if (mid == lo) {
        if (double *p = at(mid, i))
          *p = 1;
      } else {
        for (int64_t j = lo; j <= mid; ++j)
          if (double *p = at(j, i))
            *p = double(j - lo) / double(mid - lo);
      }
      for (int64_t j = mid; j < hi; ++j)
        if (double *p = at(j, i))
          *p = double(hi - j) / double(hi - mid);
    }
    c.setOutput(0, doubleConstant(c, out, {spectrum, m}, *dtype));
    return success();
  }
  // At run time, in f64 as the ONNX formula computes.
  GraphBuilder &b = c.b;
  Value m = i64Scalar(c, 0), d = i64Scalar(c, 1), sr = i64Scalar(c, 2);
  Value lo = c.input(3), hi = c.input(4);
  if (!m || !d || !sr || !lo || !hi)
    return failure();
  auto f64 = [&](double v) { return b.scalar(v, DType::f64); };
  auto mel = [&](Value hz) {
    hz = b.cast(b.reshape(hz, {}), DType::f64);
    return b.mul(b.log(b.add(f64(1), b.div(hz, f64(700)))),
                 f64(2595 / std::log(10.0)));
  };
  Value zero = b.scalar(0, DType::i64), one = b.scalar(1, DType::i64);
  Value lowMel = mel(lo);
  Value two = b.scalar(2, DType::i64);
  Value step = b.div(b.sub(mel(hi), lowMel), b.cast(b.add(m, two), DType::f64));
  Value edges = b.cast(b.range(zero, b.add(m, two), one), DType::f64);
  edges = b.add(b.mul(edges, step), lowMel);
  edges = b.mul(b.sub(b.exp(b.mul(edges, f64(std::log(10.0) / 2595))), f64(1)),
                f64(700));
  edges = b.floor(b.div(b.mul(edges, b.cast(b.add(d, one), DType::f64)),
                        b.cast(sr, DType::f64)));
  auto pick = [&](int64_t first) { // [1, m]
    Value at = b.range(b.scalar(double(first), DType::i64),
                       b.add(m, b.scalar(double(first), DType::i64)), one);
    return b.unsqueeze(b.gather(edges, at, 0), {0});
  };
  Value left = pick(0), mid = pick(1), right = pick(2);
  Value j = b.unsqueeze(
      b.cast(b.range(zero, b.add(b.div(d, two), one), one), DType::f64), {1});
  auto both = [&](Value p, Value q) {
    return b.where(p, q, b.scalar(0, DType::i1));
  };
  Value rising = b.div(b.sub(j, left), b.max(b.sub(mid, left), f64(1)));
  rising = b.where(b.compare(CompareDirection::eq, mid, left), f64(1), rising);
  Value falling = b.div(b.sub(right, j), b.sub(right, mid));
  Value onRise = both(b.compare(CompareDirection::ge, j, left),
                      b.compare(CompareDirection::le, j, mid));
  Value onFall = both(b.compare(CompareDirection::ge, j, mid),
                      b.compare(CompareDirection::lt, j, right));
  Value out = b.where(onFall, falling, b.where(onRise, rising, f64(0)));
  c.setOutput(0, b.cast(out, *dtype));
  return success();
}

/// Det of [..., n, n] (n static): Gaussian elimination with partial
/// pivoting; the determinant is the product of the pivots, negated per row
/// swap. A zero pivot (a singular matrix) gives 0.
LogicalResult det(ImportContext &c) {
  Value a = c.input(0);
  if (!a)
    return failure();
  auto type = cast<RankedTensorType>(a.getType());
  int64_t rank = type.getRank();
  if (rank < 2 || !isFloat(a))
    return c.error("expected floats of shape [..., n, n]");
  if (!type.hasStaticShape())
    return c.error("Det needs a static input shape");
  int64_t n = type.getDimSize(rank - 1);
  if (type.getDimSize(rank - 2) != n)
    return c.error("the matrices must be square");
  GraphBuilder &b = c.b;
  SmallVector<int64_t> shape(type.getShape());
  Value rows = b.iota({n}, 0); // [n] i64
  Value result = scalarLike(c, a, 1.0);
  Value zero = scalarLike(c, a, 0.0), one = scalarLike(c, a, 1.0);
  for (int64_t k = 0; k < n; ++k) {
    // The pivot: the largest magnitude in column k at or below row k.
    Value column = b.squeeze(
        b.slice(a, {k, k}, {n, k + 1}, {rank - 2, rank - 1}), {rank - 1});
    Value p = b.add(b.argMax(b.abs(column), -1, /*keepdims=*/true),
                    b.scalar(double(k), DType::i64)); // [..., 1]
    if (k + 1 < n) {
      // Swap rows k and p: row i reads row (i == k ? p : i == p ? k : i).
      Value kIdx = b.scalar(double(k), DType::i64);
      Value src = b.where(b.compare(CompareDirection::eq, rows, kIdx), p,
                          b.where(b.compare(CompareDirection::eq, rows, p),
                                  kIdx, rows)); // [..., n]
      a = b.gatherElements(a, b.broadcastTo(b.unsqueeze(src, {-1}), shape),
                           rank - 2);
      Value swapped = b.compare(CompareDirection::ne, p, kIdx);
      result = b.mul(result, b.where(b.squeeze(swapped, {-1}),
                                     scalarLike(c, a, -1.0), one));
    }
    Value pivot =
        b.squeeze(b.slice(a, {k, k}, {k + 1, k + 1}, {rank - 2, rank - 1}),
                  {rank - 2, rank - 1}); // [...]
    result = b.mul(result, pivot);
    if (k + 1 == n)
      break;
    // Rows below k lose their column-k multiple of row k.
    Value safe =
        b.where(b.compare(CompareDirection::eq, pivot, zero), one, pivot);
    Value factors =
        b.div(b.slice(a, {k}, {k + 1}, {rank - 1}),
              b.unsqueeze(safe, {rank - 2, rank - 1})); // [..., n, 1]
    Value below = b.compare(CompareDirection::gt, b.reshape(rows, {n, 1}),
                            b.scalar(double(k), DType::i64));
    factors = b.where(below, factors, zero);
    Value rowK = b.slice(a, {k}, {k + 1}, {rank - 2}); // [..., 1, n]
    a = b.sub(a, b.mul(factors, rowK));
  }
  c.setOutput(0, result);
  return success();
}

} // namespace loom::onnx_import
