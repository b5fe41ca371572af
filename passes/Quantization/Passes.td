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
  }];
  let dependentDialects = ["::loom::graph::GraphDialect"];
}

#endif // LOOM_PASSES_QUANTIZATION_PASSES_TD
