//===- OnnxQuantizer.h - ONNX f32 model -> int8 ONNX model ------*- C++ -*-===//
//
// `loomc quantize`: rewrites an f32 ONNX model's matrix products as int8
// products, as ONNX Runtime's quantize_dynamic (--mode dynamic) or
// quantize_static with the QDQ format (--mode static) does, so that Loom
// (and any ONNX runtime) runs them as integer GEMMs. The static mode's
// activation ranges come from a calibration run, which the caller makes
// (compiler/Calibration.h): this file only rewrites the graph.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTENDS_ONNX_ONNXQUANTIZER_H
#define LOOM_FRONTENDS_ONNX_ONNXQUANTIZER_H

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace onnx {
class ModelProto;
} // namespace onnx

namespace loom::onnx_quantize {

struct QuantizeOptions {
  /// "dynamic": weights quantized now, activations at run time.
  /// "static": weights and activations quantized now (QDQ), each
  /// activation with the range in `ranges`.
  std::string mode = "dynamic";
  /// One scale per output column of each weight (else per tensor).
  bool perChannel = false;
  /// Nodes whose name (or, unnamed, first output) matches stay f32.
  std::string exclude;
  /// Static: the calibrated [min, max] of each activation that a quantized
  /// node reads, by tensor name (every QuantizeTarget's `activation`).
  std::map<std::string, std::pair<float, float>> ranges;
  /// Static: how the ranges were found, for the report ("minmax",
  /// "percentile 99.999").
  std::string method;
};

/// One quantized node in the report.
struct QuantizedNode {
  std::string node, op, weight, output;
  int64_t k = 0, n = 0;
  bool perChannel = false;
  /// The weight's scales and the SQNR its rounding leaves (dB; NaN: exact).
  double scaleMin = 0, scaleMax = 0, weightSqnr = NAN;
  /// Static: the activation, its calibrated range, scale and zero point.
  std::string activation;
  double rangeMin = 0, rangeMax = 0, activationScale = 0;
  int activationZero = 0;
  /// Static: the SQNR of the node's output in the quantized model against
  /// the f32 model's on the calibration data (dB; NaN: not measured).
  double outputSqnr = NAN;
};

/// One MatMul/Gemm (or, static, Conv) left in f32, and why.
struct KeptNode {
  std::string node, op, why;
};

/// What was quantized: per node its weight's shape, scales and errors (and
/// in static mode its activation's range); per node left in f32, why.
struct QuantizeReport {
  std::string mode, method;
  std::vector<QuantizedNode> nodes;
  std::vector<KeptNode> kept;
  /// The report as JSON (loomc quantize --report).
  std::string json() const;
};

/// A node the static mode quantizes: the tensors calibration observes.
struct QuantizeTarget {
  /// The node's name (or, unnamed, its first output).
  std::string node;
  /// The activation it reads (input 0) and its output (output 0).
  std::string activation, output;
};

/// The nodes quantizeModel quantizes with `o`: each MatMul whose second
/// input is a rank-2 f32 initializer, each Gemm with such a B (alpha 1,
/// transA 0; transB and a bias C with beta 1 are taken) and, in the static
/// mode, each Conv whose filter is an f32 initializer (its bias taken), not
/// excluded. Returns "" or the problem (a bad --exclude).
std::string findTargets(const onnx::ModelProto &model, const QuantizeOptions &o,
                        std::vector<QuantizeTarget> &targets);

/// Rewrites `model` in place. Dynamic mode: each target (findTargets)
/// becomes
///   DynamicQuantizeLinear(x) -> MatMulInteger(x_q, W_q, x_zero)
///   -> Cast(f32) -> Mul(x_scale * w_scale) [-> Add(C)]
/// Static mode (QDQ, as ONNX Runtime's quantize_static writes it with u8
/// activations and s8 weights): each target's activation goes through
///   QuantizeLinear(x, x_scale, x_zero: u8) -> DequantizeLinear
/// (one pair per activation, the scale and zero point asymmetric from its
/// range in `o.ranges`, widened to hold 0), its weight becomes
///   W_q (s8 initializer) -> DequantizeLinear(w_scale, 0 [, axis])
/// and the node itself stays, reading the dequantized values; its output
/// and the bias stay f32. In both modes W_q is the weight rounded to s8
/// with a symmetric scale (max |w| / 127, per tensor or per output column;
/// a Conv filter's output channels are its dim 0, DequantizeLinear's axis
/// 0). The dynamic mode leaves Conv nodes alone.
/// Returns "" or the problem (a bad option, an opset the written ops lack,
/// a weight in external data, an activation without a range).
std::string quantizeModel(onnx::ModelProto &model, const QuantizeOptions &o,
                          QuantizeReport &report);

/// The u8 scale and zero point of the range [lo, hi] (widened to hold 0),
/// as ONNX Runtime computes them: scale (hi - lo) / 255 (1 for an empty
/// range), zero point round(-lo / scale).
void activationParams(double lo, double hi, float &scale, int &zero);

} // namespace loom::onnx_quantize

#endif // LOOM_FRONTENDS_ONNX_ONNXQUANTIZER_H
