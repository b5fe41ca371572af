//===- Passes.td - quantized graphs ------------------------*- tablegen -*-===//

#ifndef LOOM_PASSES_QUANTIZATION_PASSES_TD
#define LOOM_PASSES_QUANTIZATION_PASSES_TD

include "mlir/Pass/PassBase.td"

def IntegerMatmulPass : Pass<"loom-integer-matmul", "mlir::func::FuncOp"> {
  let summary = "run a matmul of two dequantized 8-bit tensors as an "
                "integer matmul";
  let description = [{
    A QDQ model (ONNX Runtime's `quantize_static`, a QAT export) computes
    `matmul(dequantize(a, sa, za), dequantize(b, sb, zb))` in floats. With
    8-bit `a` and `b`, scalar zero points and a scale that is per tensor
    (or, for `b`, per output column) that is exactly

    ```mlir
    %p = graph.matmul_integer %a, %b, %za, %zb    // exact, in i32
    %y = graph.mul (graph.cast %p to f32), (graph.mul %sa, %sb)
    ```

    which the CPU code runs as oneDNN's integer GEMM instead of two
    dequantized f32 copies and an f32 GEMM (and which is more accurate:
    the sums are exact before the one rounding). A zero point that is a
    constant splat (per-channel zero points of symmetric weights) counts as
    scalar. What does not fit (per-row or varying zero points, scales
    along other dims, non-8-bit or non-f32 dequantizes) is left as it is.

    With `weights-nk` (the CUDA target), every `graph.matmul_integer`
    whose rhs is a constant 8-bit K x N matrix (the weight of a QDQ or a
    MatMulInteger model) gets it as a constant N x K and `transpose_rhs`:
    the layout cuBLASLt's int8 GEMM reads, so the CUDA program reads the
    weight as it is instead of transposing it on every run.
  }];
  let options = [
    Option<"weightsNK", "weights-nk", "bool", "false",
           "store constant 8-bit K x N rhs matrices as N x K">,
  ];
  let dependentDialects = ["::loom::graph::GraphDialect"];
}

def IntegerConvPass : Pass<"loom-integer-conv", "mlir::func::FuncOp"> {
  let summary = "run a convolution of two dequantized 8-bit tensors as an "
                "integer convolution";
  let description = [{
    The QDQ form of a CNN (ONNX Runtime's `quantize_static`, `loomc
    quantize --mode static`) computes `conv(dequantize(x, sx, zx),
    dequantize(w, sw, zw), bias)` in floats. With 8-bit `x` and `w`,
    scalar zero points, `sx` per tensor and `sw` per tensor or per output
    channel (dim 0 of the filter) that is exactly

    ```mlir
    %p = graph.conv_integer %x, %w, %zx, %zw ...   // exact, in i32
    %y = graph.mul (graph.cast %p to f32), (graph.mul %sx, %sw)
    %z = graph.add %y, %bias                       // [O, 1, 1]
    ```

    (the float convolution's zero padding is the dequantized `zx`, which
    is how conv_integer pads), which the CPU code runs as oneDNN's int8
    convolution. A zero point that is a constant splat counts as scalar.
    What does not fit (varying zero points, scales along other dims,
    non-8-bit or non-f32 dequantizes) is left as it is.
  }];
  let dependentDialects = ["::loom::graph::GraphDialect"];
}

def FakeQuantPass : Pass<"loom-fake-quant", "mlir::ModuleOp"> {
  let summary = "fake int8 quantization of the marked products, for "
                "quantization-aware training";
  let description = [{
    `loomc train --qat` marks each MatMul/Gemm (and Conv) that `loomc
    quantize --mode static` would quantize with `loom.qat = {activation =
    "x", min = lo : f64, max = hi : f64}`, the range of its activation
    observed on calibration data. This pass puts `graph.fake_quantize` on
    both operands of each marked op, as the QDQ form will quantize them:

    * the weight (rhs; a convolution's filter) per output channel,
      symmetric s8: `scale = max |w| / 127` over the other dims (1 where
      that is 0), computed from the current weights every step, zero point
      0, range [-127, 127];
    * the activation (lhs) u8 asymmetric, range [0, 255]: the scale and
      zero point ONNX Runtime computes from [min(lo, 0), max(hi, 0)]
      (`(hi - lo) / 255`, `round(-lo / scale)`), one `fake_quantize` per
      activation however many products read it.

    The observed scales and zero points are constants (no gradient; the
    weights' go through the straight-through estimator). With
    `learned-scales` each activation's scale and zero point are new
    `graph.param` arguments `<activation>/qat_scale` and
    `<activation>/qat_zero_point` (`tensor<1xf32>`, initialized from the
    range) that the optimizer trains with LSQ's gradient.

    ```mlir
    %y = graph.matmul %x, %w {loom.qat = {activation = "x", min = -1.0,
                                           max = 3.0}} ...
    // becomes
    %xq = graph.fake_quantize %x, %sx, %zx {qmin = 0, qmax = 255} ...
    %wq = graph.fake_quantize %w, %sw, %zw {qmin = -127, qmax = 127} ...
    %y = graph.matmul %xq, %wq ...
    ```
  }];
  let options = [
    Option<"learnedScales", "learned-scales", "bool", /*default=*/"false",
           "train the activations' scales and zero points (LSQ)">
  ];
  let dependentDialects = ["::loom::graph::GraphDialect"];
}

#endif // LOOM_PASSES_QUANTIZATION_PASSES_TD
