//===- OnnxQuantizer.h - ONNX f32 model -> int8 ONNX model ------*- C++ -*-===//
//
// `loomc quantize`: rewrites an f32 ONNX model's matrix products as int8
// products, as ONNX Runtime's quantize_dynamic does, so that Loom (and any
// ONNX runtime) runs them as integer GEMMs.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTENDS_ONNX_ONNXQUANTIZER_H
#define LOOM_FRONTENDS_ONNX_ONNXQUANTIZER_H

#include <string>

namespace onnx {
class ModelProto;
} // namespace onnx

namespace loom::onnx_quantize {

struct QuantizeOptions {
  /// "dynamic": weights quantized now, activations at run time.
  std::string mode = "dynamic";
  /// One scale per output column of each weight (else per tensor).
  bool perChannel = false;
  /// Nodes whose name (or, unnamed, first output) matches stay f32.
  std::string exclude;
};

/// What was quantized, as JSON: per node its weight's shape, scales and the
/// SQNR the weight's quantization leaves (dB); per node left in f32, why.
struct QuantizeReport {
  std::string json;
  int quantized = 0, kept = 0;
};

/// Rewrites `model` in place. Each MatMul whose second input is a rank-2
/// f32 initializer, and each Gemm with such a B (alpha 1, transA 0; transB
/// and a bias C with beta 1 are taken), becomes
///   DynamicQuantizeLinear(x) -> MatMulInteger(x_q, W_q, x_zero)
///   -> Cast(f32) -> Mul(x_scale * w_scale) [-> Add(C)]
/// with W_q the weight rounded to s8 with a symmetric scale (max |w| / 127,
/// per tensor or per column). Returns "" or the problem (a bad option, an
/// opset below 11, a weight in external data).
std::string quantizeModel(onnx::ModelProto &model, const QuantizeOptions &o,
                          QuantizeReport &report);

} // namespace loom::onnx_quantize

#endif // LOOM_FRONTENDS_ONNX_ONNXQUANTIZER_H
