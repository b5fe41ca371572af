//===- GraphOps.td - graph dialect operations --------------*- tablegen -*-===//
//
// Every op: summary, description with an example, assembly format, verifier
// (ODS constraints plus the checks done by result-type inference), and folds
// where they are trivial. Verifier rules carry a tag (`matmul_c1`) that the
// error message, GraphOps.cpp and test/dialects/graph/invalid.mlir share.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_GRAPH_GRAPHOPS_TD
#define LOOM_DIALECTS_GRAPH_GRAPHOPS_TD

include "dialects/graph/GraphBase.td"

//===----------------------------------------------------------------------===//
// Constants and generators
//===----------------------------------------------------------------------===//

def Graph_ConstantOp : Graph_InferredOp<"constant", [ConstantLike]> {
  let summary = "a constant tensor";
  let description = [{
    Produces the tensor held by `value`. Large weights are best held as
    `dense_resource` blobs so that the IR text stays small.

    ```mlir
    %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Graph_IotaOp : Graph_InferredOp<"iota"> {
  let summary = "a tensor of indices along one axis";
  let description = [{
    Produces a tensor of the static `shape` whose element at index
    `(i0, ..., in)` is `i_axis`, converted to the element type. With a 1-D
    shape this is `range(0, n)`; affine ranges are an iota followed by a mul
    and an add.

    An iota of at most 4096 elements folds to a constant; larger ones stay
    an iota, which a kernel computes instead of loading.

    ```mlir
    %pos = graph.iota [1, 16] axis = 1 : i64
    ```
  }];
  let arguments = (ins DenseI64ArrayAttr:$shape, I64Attr:$axis,
                       TypeAttr:$element_type);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = "$shape `axis` `=` $axis attr-dict `:` $element_type";
  let hasFolder = 1;
  let extraClassDeclaration = [{
    /// The elements, computed (the shape is static).
    mlir::DenseElementsAttr computeValue();
  }];
}

def Graph_FillLikeOp : Graph_InferredOp<"fill_like", [Graph_DataMovement]> {
  let summary = "a tensor of the shape of another, filled with one value";
  let description = [{
    A tensor with the shape of `ref` (its dynamic dims included) whose
    every element is `value`; the element type is `value`'s type
    (`fill_like_c1`: a graph element type). Only the shape of `ref` is
    read. This is how a constant of a run-time shape (ONNX
    `ConstantOfShape` of a `Shape`, zeros_like, ones_like) is written.
    With a static shape it folds to a splat constant.

    ```mlir
    %z = graph.fill_like %mask, 0.0 : f32 : (tensor<?x16xi1>) -> tensor<?x16xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$ref, TypedAttrInterface:$value);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$ref `,` $value attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

def Graph_NegOp : Graph_UnaryOp<"neg", Graph_NumericTensor> {
  let summary = "elementwise negation";
  let description = [{
    `-x` elementwise. `neg(neg(x))` folds to `x`.

    ```mlir
    %y = graph.neg %x : tensor<4xf32>
    ```
  }];
  let hasFolder = 1;
}

def Graph_AbsOp : Graph_UnaryOp<"abs", Graph_NumericTensor> {
  let summary = "elementwise absolute value";
  let description = [{
    `|x|` elementwise.

    ```mlir
    %y = graph.abs %x : tensor<4xi32>
    ```
  }];
}

def Graph_ExpOp : Graph_UnaryOp<"exp", Graph_FloatTensor> {
  let summary = "elementwise exponential";
  let description = [{
    `e^x` elementwise.

    ```mlir
    %y = graph.exp %x : tensor<4xf32>
    ```
  }];
}

def Graph_LogOp : Graph_UnaryOp<"log", Graph_FloatTensor> {
  let summary = "elementwise natural logarithm";
  let description = [{
    `ln(x)` elementwise.

    ```mlir
    %y = graph.log %x : tensor<4xf32>
    ```
  }];
}

def Graph_SqrtOp : Graph_UnaryOp<"sqrt", Graph_FloatTensor> {
  let summary = "elementwise square root";
  let description = [{
    `sqrt(x)` elementwise.

    ```mlir
    %y = graph.sqrt %x : tensor<4xf32>
    ```
  }];
}

def Graph_RsqrtOp : Graph_UnaryOp<"rsqrt", Graph_FloatTensor> {
  let summary = "elementwise reciprocal square root";
  let description = [{
    `1 / sqrt(x)` elementwise.

    ```mlir
    %y = graph.rsqrt %x : tensor<4xf32>
    ```
  }];
}

def Graph_TanhOp : Graph_UnaryOp<"tanh", Graph_FloatTensor> {
  let summary = "elementwise hyperbolic tangent";
  let description = [{
    `tanh(x)` elementwise.

    ```mlir
    %y = graph.tanh %x : tensor<4xf32>
    ```
  }];
}

def Graph_CosOp : Graph_UnaryOp<"cos", Graph_FloatTensor> {
  let summary = "elementwise cosine";
  let description = [{
    `cos(x)` elementwise (radians). The cosine learning-rate schedule of a
    training step is built from it.

    ```mlir
    %y = graph.cos %x : tensor<4xf32>
    ```
  }];
}

def Graph_SinOp : Graph_UnaryOp<"sin", Graph_FloatTensor> {
  let summary = "elementwise sine";
  let description = [{
    `sin(x)` elementwise (radians).

    ```mlir
    %y = graph.sin %x : tensor<4xf32>
    ```
  }];
}

def Graph_AtanOp : Graph_UnaryOp<"atan", Graph_FloatTensor> {
  let summary = "elementwise arc tangent";
  let description = [{
    `atan(x)` elementwise, in (-pi/2, pi/2); +-inf gives +-pi/2. ONNX's
    Asin and Acos are imported through it.

    ```mlir
    %y = graph.atan %x : tensor<4xf32>
    ```
  }];
}

def Graph_SigmoidOp : Graph_UnaryOp<"sigmoid", Graph_FloatTensor> {
  let summary = "elementwise logistic sigmoid";
  let description = [{
    `1 / (1 + e^-x)` elementwise.

    ```mlir
    %y = graph.sigmoid %x : tensor<4xf32>
    ```
  }];
}

def Graph_ReluOp : Graph_UnaryOp<"relu", Graph_NumericTensor> {
  let summary = "elementwise rectified linear unit";
  let description = [{
    `max(x, 0)` elementwise.

    ```mlir
    %y = graph.relu %x : tensor<4xf32>
    ```
  }];
}

def Graph_ErfOp : Graph_UnaryOp<"erf", Graph_FloatTensor> {
  let summary = "elementwise Gauss error function";
  let description = [{
    `erf(x)` elementwise.

    ```mlir
    %y = graph.erf %x : tensor<4xf32>
    ```
  }];
}

def Graph_FloorOp : Graph_UnaryOp<"floor", Graph_FloatTensor> {
  let summary = "elementwise floor";
  let description = [{
    The largest integer not greater than `x`, elementwise.

    ```mlir
    %y = graph.floor %x : tensor<4xf32>
    ```
  }];
}

def Graph_CeilOp : Graph_UnaryOp<"ceil", Graph_FloatTensor> {
  let summary = "elementwise ceiling";
  let description = [{
    The smallest integer not less than `x`, elementwise.

    ```mlir
    %y = graph.ceil %x : tensor<4xf32>
    ```
  }];
}

def Graph_RoundOp : Graph_UnaryOp<"round", Graph_FloatTensor> {
  let summary = "elementwise rounding, halves to even";
  let description = [{
    The nearest integer to `x`; halfway cases go to the even neighbour
    (`round(2.5) = 2`, `round(-1.5) = -2`), as in ONNX `Round` and NumPy.

    ```mlir
    %y = graph.round %x : tensor<4xf32>
    ```
  }];
}

def Graph_GeluOp : Graph_UnaryOp<"gelu", Graph_FloatTensor> {
  let summary = "elementwise Gaussian error linear unit";
  let description = [{
    Exact: `0.5 * x * (1 + erf(x / sqrt(2)))`. With `approximate = tanh`:
    `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`, as in
    GPT-2 and PyTorch's `gelu(approximate="tanh")`.

    ```mlir
    %y = graph.gelu %x : tensor<4xf32>
    %z = graph.gelu %x approximate = tanh : tensor<4xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$x,
      DefaultValuedAttr<Graph_GeluApproximationAttr,
                        "GeluApproximation::none">:$approximate);
  let assemblyFormat =
      "$x (`approximate` `=` `` $approximate^)? attr-dict `:` type($x)";
}

def Graph_ClampOp : Graph_UnaryOp<"clamp", Graph_NumericTensor> {
  let summary = "elementwise clamp to [min, max]";
  let description = [{
    `min(max(x, min), max)` elementwise; either bound may be absent, not
    both. Bounds are written as `f64` and converted to the element type.

    ```mlir
    %y = graph.clamp %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$x, OptionalAttr<F64Attr>:$min,
                       OptionalAttr<F64Attr>:$max);
  let hasVerifier = 1;
}

def Graph_DropoutOp : Graph_UnaryOp<"dropout", Graph_FloatTensor> {
  let summary = "randomly zeroes elements while training";
  let description = [{
    With `training`, zeroes each element with probability `ratio` and scales
    the kept ones by `1 / (1 - ratio)`; the mask is a pure function of
    `seed` and the element index, so the backward pass can rebuild it.
    Without `training` it is the identity and folds away.

    ```mlir
    %y = graph.dropout %x {ratio = 0.1 : f64, seed = 7 : i64, training}
        : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$x, F64Attr:$ratio, UnitAttr:$training,
                       DefaultValuedAttr<I64Attr, "0">:$seed);
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_GradAllReduceOp : Graph_UnaryOp<"grad_all_reduce", Graph_FloatTensor> {
  let summary = "the identity, whose gradient is summed over mesh axes";
  let description = [{
    Returns `x` unchanged; its VJP is the sum of the result's gradient over
    the ranks of the mesh axes `mesh_axes` of `mesh` (a `mesh.all_reduce`).
    Tensor parallelism (`--loom-tensor-parallel`) puts it where a value
    every rank holds whole enters computation split over the ranks (the
    input of a column-parallel matmul): each rank's backward then yields a
    part of that value's gradient, and the parts are summed (Megatron's
    `f` operator). `mesh.all_reduce` in the forward is its dual: the
    gradient of a value summed from the ranks' parts is the gradient every
    rank holds.

    Only autodiff reads it: once the gradient function is built it folds
    away, so run the autodiff pass before anything that folds.

    ```mlir
    %y = graph.grad_all_reduce %x on @mesh axes = [0] : tensor<4x32xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$x, FlatSymbolRefAttr:$mesh,
                       DenseI16ArrayAttr:$mesh_axes);
  let assemblyFormat =
      "$x `on` $mesh `axes` `=` $mesh_axes attr-dict `:` type($x)";
  let hasFolder = 1;
}

def Graph_CastOp : Graph_InferredOp<"cast", [Elementwise]> {
  let summary = "elementwise conversion to another element type";
  let description = [{
    Converts each element to `to`, keeping the shape. Float to integer
    rounds toward zero; to `i1` tests `!= 0`. A cast to the operand's own
    element type folds away.

    ```mlir
    %h = graph.cast %x to f16 : tensor<4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, TypeAttr:$to);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$x `to` $to attr-dict `:` type($x)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise binary and ternary ops (NumPy broadcasting)
//===----------------------------------------------------------------------===//

def Graph_AddOp : Graph_BinaryOp<"add", Graph_NumericTensor, [Commutative]> {
  let summary = "elementwise addition with broadcasting";
  let description = [{
    `lhs + rhs` with NumPy broadcasting. `x + 0` folds to `x` when the
    result has `x`'s type; two constants fold.

    ```mlir
    %y = graph.add %x, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
  }];
  let hasFolder = 1;
}

def Graph_SubOp : Graph_BinaryOp<"sub", Graph_NumericTensor> {
  let summary = "elementwise subtraction with broadcasting";
  let description = [{
    `lhs - rhs` with NumPy broadcasting. `x - 0` folds to `x`.

    ```mlir
    %y = graph.sub %x, %m : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
    ```
  }];
  let hasFolder = 1;
}

def Graph_MulOp : Graph_BinaryOp<"mul", Graph_NumericTensor, [Commutative]> {
  let summary = "elementwise multiplication with broadcasting";
  let description = [{
    `lhs * rhs` with NumPy broadcasting. `x * 1` folds to `x`.

    ```mlir
    %y = graph.mul %x, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    ```
  }];
  let hasFolder = 1;
}

def Graph_DivOp : Graph_BinaryOp<"div", Graph_NumericTensor> {
  let summary = "elementwise division with broadcasting";
  let description = [{
    `lhs / rhs` with NumPy broadcasting; integer division rounds toward
    zero. `x / 1` folds to `x`.

    ```mlir
    %y = graph.div %x, %n : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    ```
  }];
  let hasFolder = 1;
}

def Graph_PowOp : Graph_BinaryOp<"pow", Graph_FloatTensor> {
  let summary = "elementwise power with broadcasting";
  let description = [{
    `lhs ^ rhs` with NumPy broadcasting.

    ```mlir
    %y = graph.pow %x, %e : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    ```
  }];
}

def Graph_MaxOp : Graph_BinaryOp<"max", Graph_NumericTensor, [Commutative]> {
  let summary = "elementwise maximum with broadcasting";
  let description = [{
    `max(lhs, rhs)` with NumPy broadcasting; NaN propagates.

    ```mlir
    %y = graph.max %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
}

def Graph_MinOp : Graph_BinaryOp<"min", Graph_NumericTensor, [Commutative]> {
  let summary = "elementwise minimum with broadcasting";
  let description = [{
    `min(lhs, rhs)` with NumPy broadcasting; NaN propagates.

    ```mlir
    %y = graph.min %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
}

def Graph_RemOp : Graph_BinaryOp<"rem", Graph_NumericTensor> {
  let summary = "elementwise truncated remainder with broadcasting";
  let description = [{
    `lhs - rhs * trunc(lhs / rhs)` with NumPy broadcasting: the result has
    the sign of `lhs` (C `fmod`, ONNX `Mod` with `fmod = 1`). Integer
    division by zero is undefined.

    ```mlir
    %y = graph.rem %a, %b : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    ```
  }];
}

// Bitwise ops on integers: the bits as they are, any signedness.
class Graph_BitwiseOp<string mnemonic, string what, string onnx>
    : Graph_BinaryOp<mnemonic, Graph_IntegerTensor, [Commutative]> {
  let summary = "elementwise bitwise " # what # " with broadcasting";
  let description = [{
    The bitwise }] # what # [{ of two integers of one type, with NumPy
    broadcasting (ONNX `}] # onnx # [{`).
  }];
}
def Graph_BitAndOp : Graph_BitwiseOp<"bit_and", "and", "BitwiseAnd">;
def Graph_BitOrOp : Graph_BitwiseOp<"bit_or", "or", "BitwiseOr">;
def Graph_BitXorOp : Graph_BitwiseOp<"bit_xor", "exclusive or", "BitwiseXor">;

def Graph_ShiftLeftOp : Graph_BinaryOp<"shift_left", Graph_IntegerTensor> {
  let summary = "elementwise left shift with broadcasting";
  let description = [{
    `lhs << rhs` with NumPy broadcasting (ONNX `BitShift` LEFT); a shift by
    the bit width or more gives 0.

    ```mlir
    %y = graph.shift_left %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
    ```
  }];
}

def Graph_ShiftRightOp : Graph_BinaryOp<"shift_right", Graph_IntegerTensor> {
  let summary = "elementwise right shift with broadcasting";
  let description = [{
    `lhs >> rhs` with NumPy broadcasting (ONNX `BitShift` RIGHT): logical
    on unsigned types, arithmetic on signed ones; a shift by the bit width
    or more gives 0 (or -1 for a negative signed `lhs`).
  }];
}

def Graph_BitNotOp : Graph_UnaryOp<"bit_not", Graph_IntegerTensor> {
  let summary = "elementwise bitwise not";
  let description = [{
    Every bit flipped (ONNX `BitwiseNot`).

    ```mlir
    %y = graph.bit_not %x : tensor<4xi32>
    ```
  }];
}

def Graph_ModOp : Graph_BinaryOp<"mod", Graph_NumericTensor> {
  let summary = "elementwise floored modulo with broadcasting";
  let description = [{
    `lhs - rhs * floor(lhs / rhs)` with NumPy broadcasting: the result has
    the sign of `rhs` (Python `%`, ONNX `Mod` with `fmod = 0`). Integer
    division by zero is undefined.

    ```mlir
    %y = graph.mod %a, %b : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
    ```
  }];
}

def Graph_CompareOp : Graph_InferredOp<"compare", [SameOperandsElementType,
                                                  Graph_BroadcastingElementwise]> {
  let summary = "elementwise comparison with broadcasting";
  let description = [{
    Compares `lhs` and `rhs` elementwise with NumPy broadcasting and
    produces an `i1` tensor. Float comparisons are ordered (false when
    either side is NaN), except `ne`, which is true for NaN.

    ```mlir
    %m = graph.compare lt, %a, %b : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Graph_CompareDirectionAttr:$direction,
                       Graph_Tensor:$lhs, Graph_Tensor:$rhs);
  let results = (outs Graph_BoolTensor:$result);
  let assemblyFormat = [{
    `` $direction `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_WhereOp : Graph_InferredOp<"where", [Graph_DataMovement,
                                              Graph_BroadcastingElementwise]> {
  let summary = "elementwise select with broadcasting";
  let description = [{
    `cond ? x : y` elementwise, with all three operands broadcast together.
    `x` and `y` share an element type (`where_c1`).

    ```mlir
    %y = graph.where %m, %a, %b
        : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Graph_BoolTensor:$cond, Graph_Tensor:$x,
                       Graph_Tensor:$y);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $cond `,` $x `,` $y attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

def Graph_QuantizeOp : Graph_InferredOp<"quantize",
                                        [Graph_BroadcastingElementwise]> {
  let summary = "linear quantization to an integer type";
  let description = [{
    `saturate(round(x / scale) + zero_point)` elementwise (ONNX
    QuantizeLinear): rounding to nearest even, saturating to the range of
    the result's element type, which is `zero_point`'s (`i8`, `ui8`, `i16`,
    `ui16`). `scale` and `zero_point` broadcast against `x` as NumPy does
    and have one shape: a scalar (per tensor) or, per channel, the size of
    one dim of `x` there and 1 elsewhere (ONNX's 1-D per-axis scale
    reshaped by the importer).

    ```mlir
    %q = graph.quantize %x, %s, %z
        : (tensor<2x3xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x3xui8>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$x, Graph_FloatTensor:$scale,
                       Graph_Tensor:$zero_point);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $x `,` $scale `,` $zero_point attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// The range the result saturates to: [0, 2^w - 1] for an unsigned
    /// w-bit type, [-2^(w-1), 2^(w-1) - 1] for a signed one.
    std::pair<double, double> getSaturationRange();
  }];
}

def Graph_DequantizeOp : Graph_InferredOp<"dequantize",
                                          [Graph_BroadcastingElementwise]> {
  let summary = "linear dequantization of an integer tensor";
  let description = [{
    `(x - zero_point) * scale` elementwise (ONNX DequantizeLinear), in the
    element type of `scale`, which is the result's. `x` and `zero_point`
    share an integer element type; `scale` and `zero_point` broadcast as in
    `graph.quantize`.

    ```mlir
    %x = graph.dequantize %q, %s, %z
        : (tensor<2x3xi8>, tensor<3xf32>, tensor<3xi8>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_FloatTensor:$scale,
                       Graph_Tensor:$zero_point);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $scale `,` $zero_point attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_FakeQuantizeOp : Graph_InferredOp<"fake_quantize",
                                            [SameOperandsElementType,
                                             Graph_BroadcastingElementwise]> {
  let summary = "quantize and dequantize in floats (quantization-aware training)";
  let description = [{
    `(clamp(round(x / scale) + z, qmin, qmax) - z) * scale` elementwise with
    `z = clamp(round(zero_point), qmin, qmax)`, rounding halves to even:
    what `graph.dequantize(graph.quantize(x))` computes for an integer type
    of range [qmin, qmax], kept in x's float type so that it can be
    trained (`loomc train --qat`, `--loom-fake-quant`). `scale` and
    `zero_point` are floats of one shape that broadcasts against `x`: a
    scalar (per tensor) or, per channel, one dim of `x` and 1 elsewhere.

    Its gradient is the straight-through estimator: `x` receives the
    result's gradient where `round(x / scale) + z` lies in [qmin, qmax] and
    zero elsewhere. Without `learned` the scale and zero point are
    observed, not trained, and get no gradient; with it they get LSQ's
    (Esser et al. 2020; PyTorch's `_fake_quantize_learnable_*`): the scale
    `round(x / s) - x / s` inside the range and `q - z` outside, the zero
    point `-scale` outside and 0 inside.

    ```mlir
    %y = graph.fake_quantize %x, %s, %z {qmin = 0 : i64, qmax = 255 : i64}
        : (tensor<2x3xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$x, Graph_FloatTensor:$scale,
                       Graph_FloatTensor:$zero_point, I64Attr:$qmin,
                       I64Attr:$qmax, UnitAttr:$learned);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $scale `,` $zero_point attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// Checks the quantization parameters' shapes and the range
    /// (dialects/graph/FakeQuantize.cpp).
    static ::llvm::LogicalResult
    checkParams(std::optional<::mlir::Location> loc, Adaptor adaptor);
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      if (::mlir::failed(checkParams(loc, adaptor)))
        return ::mlir::failure();
      return ::loom::graph::inferBroadcastResult(
          loc, getOperationName(), adaptor.getOperands(), ::mlir::Type(),
          types);
    }
  }];
}

//===----------------------------------------------------------------------===//
// Linear algebra, convolution, pooling
//===----------------------------------------------------------------------===//

def Graph_MatmulOp : Graph_InferredOp<"matmul", [SameOperandsElementType,
                                                Graph_Contraction]> {
  let summary = "batched matrix product with broadcasting batch dims";
  let description = [{
    NumPy `matmul` semantics: the last two dims are the matrix, leading
    dims are batch dims broadcast against each other. A 1-D `lhs` is a row
    vector and a 1-D `rhs` a column vector; the added dim is removed from
    the result. `transpose_lhs` / `transpose_rhs` swap the last two dims of
    an operand of rank 2 or more before the product. An operand made by a
    `graph.transpose` of its last two dims folds into the flag, so GEMMs
    read it in place instead of a transposed copy.

    ```mlir
    %y = graph.matmul %a, %b {transpose_rhs}
        : (tensor<8x16x64xf32>, tensor<32x64xf32>) -> tensor<8x16x32xf32>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$lhs, Graph_NumericTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_MatmulIntegerOp : Graph_InferredOp<"matmul_integer"> {
  let summary = "matrix product of zero-shifted 8-bit integers, exact in i32";
  let description = [{
    `(lhs - lhs_zero) x (rhs - rhs_zero)` with `graph.matmul`'s shapes
    (batch dims broadcast, 1-D operands as vectors, transpose flags), each
    difference and sum exact in `i32`, the result's type. `lhs` and `rhs`
    hold `i8` or `ui8` (each its own); each zero point is a scalar (rank 0)
    of its operand's element type. ONNX's MatMulInteger and QLinearMatMul
    with per-tensor zero points import as this op, and
    `--loom-integer-matmul` makes it of a float matmul of two dequantized
    operands; the CPU code runs it as oneDNN's u8 x s8 -> s32 GEMM.

    ```mlir
    %y = graph.matmul_integer %a, %b, %za, %zb
        : (tensor<4x64xui8>, tensor<64x32xi8>, tensor<ui8>, tensor<i8>)
        -> tensor<4x32xi32>
    ```
  }];
  let arguments = (ins Graph_IntegerTensor:$lhs, Graph_IntegerTensor:$rhs,
                       Graph_IntegerTensor:$lhs_zero,
                       Graph_IntegerTensor:$rhs_zero,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Graph_IntegerTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $lhs_zero `,` $rhs_zero attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_ConvOp : Graph_InferredOp<"conv", [SameOperandsElementType,
                                            Graph_Contraction]> {
  let summary = "1-D, 2-D or 3-D grouped convolution (NCHW)";
  let description = [{
    Cross-correlation of `input` `[N, C, spatial...]` with `filter`
    `[O, C / groups, kernel...]`, plus an optional `bias` `[O]`. `padding`
    holds the begin pads of every spatial dim, then the end pads. Output
    spatial size: `(in + pad_begin + pad_end - dilation * (k - 1) - 1) /
    stride + 1`.

    ```mlir
    %y = graph.conv %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1]
        dilations = [1, 1] groups = 1
        : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>)
        -> tensor<1x16x32x32xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$filter,
                       Optional<Graph_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, I64Attr:$groups);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`,` $bias^)? `strides` `=` $strides `padding` `=`
    $padding `dilations` `=` $dilations `groups` `=` $groups attr-dict `:`
    functional-type(operands, results)
  }];
}

def Graph_ConvIntegerOp : Graph_InferredOp<"conv_integer"> {
  let summary = "convolution of zero-shifted 8-bit integers, exact in i32";
  let description = [{
    `conv(input - input_zero, filter - filter_zero)` with `graph.conv`'s
    shapes and attributes (NCHW, `padding` begin pads then end pads,
    strides, dilations, groups), each difference and sum exact in `i32`,
    the result's type. The padding holds the input's zero point (0 once
    shifted), as ONNX's ConvInteger pads. `input` and `filter` hold `i8`
    or `ui8` (each its own); each zero point is a scalar (rank 0) of its
    operand's element type. ONNX's ConvInteger and QLinearConv with
    per-tensor zero points import as this op, and `--loom-integer-conv`
    makes it of a float convolution of two dequantized operands; the CPU
    code runs a 1-D or 2-D one as oneDNN's u8/s8 x s8 -> s32 convolution.

    ```mlir
    %y = graph.conv_integer %x, %w, %zx, %zw strides = [1, 1]
        padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
        : (tensor<1x3x32x32xui8>, tensor<16x3x3x3xi8>, tensor<ui8>,
           tensor<i8>) -> tensor<1x16x32x32xi32>
    ```
  }];
  let arguments = (ins Graph_IntegerTensor:$input,
                       Graph_IntegerTensor:$filter,
                       Graph_IntegerTensor:$input_zero,
                       Graph_IntegerTensor:$filter_zero,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, I64Attr:$groups);
  let results = (outs Graph_IntegerTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter `,` $input_zero `,` $filter_zero `strides` `=` $strides
    `padding` `=` $padding `dilations` `=` $dilations `groups` `=` $groups
    attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_MaxPoolOp : Graph_InferredOp<"max_pool"> {
  let summary = "1-D, 2-D or 3-D max pooling (NCHW)";
  let description = [{
    Max over windows of `kernel` size; padded positions never win.
    `padding` holds begin pads, then end pads; `ceil_mode` rounds the
    output size up as ONNX and PyTorch do.

    ```mlir
    %y = graph.max_pool %x kernel = [2, 2] strides = [2, 2]
        padding = [0, 0, 0, 0] dilations = [1, 1]
        : (tensor<1x16x32x32xf32>) -> tensor<1x16x16x16xf32>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$x, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, UnitAttr:$ceil_mode);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = [{
    $x `kernel` `=` $kernel `strides` `=` $strides `padding` `=` $padding
    `dilations` `=` $dilations (`ceil_mode` $ceil_mode^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Graph_AvgPoolOp : Graph_InferredOp<"avg_pool"> {
  let summary = "1-D, 2-D or 3-D average pooling (NCHW)";
  let description = [{
    Mean over windows of `kernel` size. With `count_include_pad` padded
    zeros count in the divisor; otherwise only real elements do.

    ```mlir
    %y = graph.avg_pool %x kernel = [3, 3] strides = [1, 1]
        padding = [1, 1, 1, 1] count_include_pad
        : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$x, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       UnitAttr:$ceil_mode, UnitAttr:$count_include_pad);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $x `kernel` `=` $kernel `strides` `=` $strides `padding` `=` $padding
    (`ceil_mode` $ceil_mode^)? (`count_include_pad` $count_include_pad^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_GlobalAvgPoolOp : Graph_InferredOp<"global_avg_pool"> {
  let summary = "mean over all spatial dims (NCHW)";
  let description = [{
    `[N, C, spatial...] -> [N, C, 1...]`: the mean of each channel.

    ```mlir
    %y = graph.global_avg_pool %x
        : (tensor<1x512x7x7xf32>) -> tensor<1x512x1x1xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$x);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Normalization and softmax
//===----------------------------------------------------------------------===//

def Graph_BatchNormOp : Graph_InferredOp<"batch_norm",
                                         [SameOperandsElementType,
                                          Graph_Normalization]> {
  let summary = "batch normalization, inference form";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale + bias` per channel (dim 1),
    with the running statistics given as operands.

    ```mlir
    %y = graph.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64}
        : (tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>,
           tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$x, Graph_FloatTensor:$scale,
                       Graph_FloatTensor:$bias, Graph_FloatTensor:$mean,
                       Graph_FloatTensor:$variance, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $scale `,` $bias `,` $mean `,` $variance attr-dict `:`
    functional-type(operands, results)
  }];
}

def Graph_LayerNormOp : Graph_InferredOp<"layer_norm",
                                         [SameOperandsElementType,
                                          Graph_Normalization]> {
  let summary = "layer normalization over the trailing dims from `axis`";
  let description = [{
    Normalizes `x` over dims `[axis, rank)` to zero mean and unit variance
    (biased variance, `epsilon` inside the square root), then multiplies by
    `scale` and adds the optional `bias`; both have shape `x.shape[axis:]`.

    ```mlir
    %y = graph.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f64}
        : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>)
        -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$x, Graph_FloatTensor:$scale,
                       Optional<Graph_FloatTensor>:$bias, I64Attr:$axis,
                       F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_SoftmaxOp : Graph_InferredOp<"softmax", [Graph_Normalization]> {
  let summary = "softmax along one axis";
  let description = [{
    `exp(x - max) / sum(exp(x - max))` along `axis`.

    ```mlir
    %p = graph.softmax %x {axis = 1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$x, I64Attr:$axis);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Graph_LogSoftmaxOp : Graph_InferredOp<"log_softmax",
                                          [Graph_Normalization]> {
  let summary = "log of softmax along one axis";
  let description = [{
    `x - max - log(sum(exp(x - max)))` along `axis`, computed stably.

    ```mlir
    %p = graph.log_softmax %x {axis = 1 : i64}
        : (tensor<2x10xf32>) -> tensor<2x10xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$x, I64Attr:$axis);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Graph_AttentionOp : Graph_InferredOp<"attention", [Graph_Contraction]> {
  let summary = "scaled dot-product attention, fused";
  let description = [{
    `softmax(mask(q k^T * scale)) v` over the last two dims, without the
    `[..., S, T]` scores: `q` `[..., S, D]`, `k` `[..., T, D]`, `v`
    `[..., T, Dv]` with equal batch dims give `out` `[..., S, Dv]` and
    `lse` `[..., S]` (f32), each row's log-sum-exp of its scores, which
    the gradient reads instead of the probabilities. A score is `fill`
    where the optional `mask` (`[S, T]`, broadcast over the batch) is
    true, and with `causal` where the key comes after the query (`j > i`;
    such keys get no weight at all, as with `fill = -inf`). What
    `--loom-fuse-attention` makes from matmul, scale, where, softmax,
    matmul (passes/Fusion/AttentionFusion.cpp); the CUDA target computes
    it tile by tile with an online softmax (FlashAttention-2's method).

    ```mlir
    %o, %lse = graph.attention %q, %k, %v {scale = 0.125 : f64,
        fill = -1.0e4 : f64, causal}
        : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>)
        -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$q, Graph_FloatTensor:$k,
                       Graph_FloatTensor:$v, Optional<Graph_BoolTensor>:$mask,
                       F64Attr:$scale, F64Attr:$fill, UnitAttr:$causal);
  let results = (outs Graph_FloatTensor:$out, Graph_FloatTensor:$lse);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`mask` $mask^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Graph_AttentionGradOp : Graph_InferredOp<"attention_grad"> {
  let summary = "the gradients of a graph.attention";
  let description = [{
    `dq`, `dk`, `dv` of a `graph.attention` (same operands and attributes)
    from its `out`, its `lse` and the gradient `dout` of its `out`. The
    probabilities are recomputed from `q`, `k` and `lse`, never stored.

    ```mlir
    %dq, %dk, %dv = graph.attention_grad %q, %k, %v, %o, %lse, %do
        {scale = 0.125 : f64, fill = -1.0e4 : f64, causal}
        : (tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>,
           tensor<2x16x8xf32>, tensor<2x16xf32>, tensor<2x16x8xf32>)
        -> (tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>)
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$q, Graph_FloatTensor:$k,
                       Graph_FloatTensor:$v, Graph_FloatTensor:$out,
                       Graph_FloatTensor:$lse, Graph_FloatTensor:$dout,
                       Optional<Graph_BoolTensor>:$mask, F64Attr:$scale,
                       F64Attr:$fill, UnitAttr:$causal);
  let results = (outs Graph_FloatTensor:$dq, Graph_FloatTensor:$dk,
                      Graph_FloatTensor:$dv);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $out `,` $lse `,` $dout (`mask` $mask^)? attr-dict
    `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def Graph_SumSquaresOp : Graph_InferredOp<"sum_squares",
                                          [SameOperandsElementType]> {
  let summary = "the sum of the squares of every element of every operand";
  let description = [{
    One scalar: the squared global norm of all its operands, as a
    training step's gradient clipping needs (`--loom-optimizer` with
    `fused-norm`, which the CUDA target asks for). The CUDA target reads
    every operand once in one kernel over the whole grid, walking a table
    of fixed-size chunks of all of them (as PyTorch's multi_tensor_apply),
    then sums the blocks' partial sums in a fixed order.

    ```mlir
    %s = graph.sum_squares %g0, %g1 : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Graph_FloatTensor>:$inputs);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type(operands, results)";
}

def Graph_ReduceSumOp : Graph_ReduceOp<"reduce_sum", Graph_NumericTensor, "sum">;
def Graph_ReduceMeanOp : Graph_ReduceOp<"reduce_mean", Graph_FloatTensor, "mean">;
def Graph_ReduceMaxOp : Graph_ReduceOp<"reduce_max", Graph_NumericTensor, "maximum">;
def Graph_ReduceMinOp : Graph_ReduceOp<"reduce_min", Graph_NumericTensor, "minimum">;

def Graph_ReduceProdOp : Graph_ReduceOp<"reduce_prod", Graph_NumericTensor, "product">;

def Graph_ArgMaxOp : Graph_ArgReduceOp<"arg_max", "maximum">;
def Graph_ArgMinOp : Graph_ArgReduceOp<"arg_min", "minimum">;

def Graph_CumSumOp : Graph_InferredOp<"cumsum"> {
  let summary = "cumulative sum along one axis";
  let description = [{
    `y[..., i, ...] = sum(x[..., j, ...] for j <= i)` along `axis`
    (normalized). `exclusive` leaves out element `i` itself (so the first
    sum is 0); `reverse` sums from the end.

    ```mlir
    %y = graph.cumsum %x axis = 1 exclusive
        : (tensor<2x8xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$x, I64Attr:$axis,
                       UnitAttr:$exclusive, UnitAttr:$reverse);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = [{
    $x `axis` `=` $axis (`exclusive` $exclusive^)? (`reverse` $reverse^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_TopKOp : Graph_InferredOp<"top_k"> {
  let summary = "the k largest (or smallest) elements along one axis";
  let description = [{
    Along `axis` (normalized), the `k` largest elements of `x` (the
    smallest with `smallest`) and their `i64` indices. Values come sorted,
    largest first (smallest first with `smallest`), and equal values keep
    the lower index first; with `unsorted` their order is unspecified.
    `0 <= k <= dim` (`top_k_c2`, `top_k_c3`).

    ```mlir
    %v, %i = graph.top_k %x k = 3 axis = 1
        : (tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$x, I64Attr:$k, I64Attr:$axis,
                       UnitAttr:$smallest, UnitAttr:$unsorted);
  let results = (outs Graph_NumericTensor:$values, Graph_IndexTensor:$indices);
  let assemblyFormat = [{
    $x `k` `=` $k `axis` `=` $axis (`smallest` $smallest^)?
    (`unsorted` $unsorted^)? attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def Graph_ReshapeOp : Graph_InferredOp<"reshape", [Graph_DataMovement]> {
  let summary = "reshape to a new shape with the same elements";
  let description = [{
    `shape` lists the new dims. As in ONNX, `0` copies the input's dim at
    the same position and one `-1` is inferred from the element count, so
    a reshape of dynamic dims (`[0, 0, 12, 64]` on `tensor<?x?x768xf32>`)
    needs no shape tensor. Reshape of reshape folds into one reshape, and a
    reshape to the operand's own static type folds away.

    ```mlir
    %y = graph.reshape %x [0, 0, 12, 64]
        : (tensor<?x16x768xf32>) -> tensor<?x16x12x64xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, DenseI64ArrayAttr:$shape);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$x $shape attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_TransposeOp : Graph_InferredOp<"transpose", [Graph_DataMovement]> {
  let summary = "permutes the dims of a tensor";
  let description = [{
    Result dim `i` is operand dim `perm[i]`. Transpose of transpose folds
    into one transpose; the identity permutation folds away. A transpose of
    the last two dims of a matmul's only use becomes the swapped product
    (`(A B)^T = B^T A^T`), computed in the transposed layout directly.

    ```mlir
    %y = graph.transpose %x [0, 2, 1, 3]
        : (tensor<2x16x12x64xf32>) -> tensor<2x12x16x64xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, DenseI64ArrayAttr:$perm);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$x $perm attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
  let hasCanonicalizeMethod = 1;
}

def Graph_BroadcastToOp
    : Graph_InferredOp<"broadcast_to", [Graph_DataMovement]> {
  let summary = "broadcasts a tensor to a larger shape";
  let description = [{
    Broadcasts `x` to `shape` under NumPy rules (dims aligned on the right;
    an operand dim must be 1 or equal). A `-1` in `shape` keeps the
    operand's dim at that position, which is how a dynamic dim passes
    through. Broadcasting to the operand's own type folds away.

    ```mlir
    %y = graph.broadcast_to %b [-1, 16, 64]
        : (tensor<?x1x64xf32>) -> tensor<?x16x64xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, DenseI64ArrayAttr:$shape);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$x $shape attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_ConcatOp
    : Graph_InferredOp<"concat", [Graph_DataMovement, SameOperandsElementType]> {
  let summary = "concatenates tensors along one axis";
  let description = [{
    All operands have the same rank and agree on every dim but `axis`.
    A single operand folds to itself.

    ```mlir
    %y = graph.concat %a, %b axis = 1
        : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Graph_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Graph_SliceOp : Graph_InferredOp<"slice", [Graph_DataMovement]> {
  let summary = "strided slice of every dim";
  let description = [{
    For each dim `d`: elements `starts[d], starts[d] + steps[d], ...` up to
    (excluding) `ends[d]`. As in ONNX and Python, negative starts/ends count
    from the end and are clamped to the dim; a negative step walks
    backwards. All three arrays have one entry per dim; starts and ends
    take the whole int64 range, so ONNX's `INT64_MIN` "before the first
    element" sentinel round-trips.

    ```mlir
    %y = graph.slice %x starts = [0, 1] ends = [4, 9223372036854775807]
        steps = [2, 1] : (tensor<4x8xf32>) -> tensor<2x7xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $x `starts` `=` custom<I64List>($starts) `ends` `=` custom<I64List>($ends)
    `steps` `=` $steps attr-dict `:`
    functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Graph_GatherOp : Graph_InferredOp<"gather", [Graph_DataMovement]> {
  let summary = "gathers slices along one axis by index";
  let description = [{
    ONNX `Gather`: the result shape is `data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`. Negative indices count from the end.

    ```mlir
    %y = graph.gather %data, %idx axis = 0
        : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `axis` `=` $axis attr-dict `:`
    functional-type(operands, results)
  }];
}

def Graph_GatherElementsOp
    : Graph_InferredOp<"gather_elements", [Graph_DataMovement]> {
  let summary = "gathers single elements along one axis by index";
  let description = [{
    ONNX `GatherElements`: `indices` has the rank of `data`
    (`gather_elements_c1`) and the result has the shape of `indices`. For
    `axis = 1`, `y[i][j][k] = data[i][indices[i][j][k]][k]`. Off the axis,
    index dims may not exceed data dims (`gather_elements_c3`). Negative
    indices count from the end.

    ```mlir
    %y = graph.gather_elements %data, %idx axis = 1
        : (tensor<4x10xf32>, tensor<4x1xi64>) -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `axis` `=` $axis attr-dict `:`
    functional-type(operands, results)
  }];
}

def Graph_ScatterElementsOp : Graph_InferredOp<"scatter_elements"> {
  let summary = "writes single elements along one axis by index";
  let description = [{
    ONNX `ScatterElements`: a copy of `data` in which, for `axis = 1`,
    element `[i][indices[i][j][k]][k]` becomes `updates[i][j][k]` — or is
    combined with it by `reduction` (`add`, `mul`, `max`, `min`). `indices`
    and `updates` have one shape, and all three the same rank
    (`scatter_elements_c1`); `updates` has `data`'s element type. With
    `none`, duplicate indices leave an unspecified one of the updates.

    ```mlir
    %y = graph.scatter_elements %data, %idx, %upd axis = 0 reduction = add
        : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IndexTensor:$indices,
                       Graph_Tensor:$updates, I64Attr:$axis,
                       Graph_ScatterReductionAttr:$reduction);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `,` $updates `axis` `=` $axis `reduction` `=` ``
    $reduction attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_TriluOp : Graph_InferredOp<"trilu", [Graph_DataMovement]> {
  let summary = "keeps the upper or lower triangle of the last two dims";
  let description = [{
    For each matrix in the last two dims (rank >= 2, `trilu_c1`), keeps
    the elements on and below diagonal `k` (`lower`, the default) or on
    and above it (`upper`) and zeroes the others. `k > 0` moves the
    diagonal up, `k < 0` down.

    ```mlir
    %m = graph.trilu %x upper k = 1 : (tensor<16x16xf32>) -> tensor<16x16xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, UnitAttr:$upper, I64Attr:$k);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $x (`upper` $upper^)? `k` `=` $k attr-dict `:`
    functional-type(operands, results)
  }];
}

def Graph_ResizeOp : Graph_InferredOp<"resize"> {
  let summary = "resamples a tensor by nearest, linear or cubic interpolation";
  let description = [{
    ONNX `Resize` without a region of interest. Each dim `d` has a scale
    and a size: the output dim is `sizes[d]` when it is not -1, else
    `floor(in * scales[d])`. A scale of 0 stands for `out / in`, worked out
    at run time (a size given for a dynamic dim). Output coordinates map
    to input coordinates by `coordinate_mode`; `nearest` rounds them by
    `nearest_mode`, `linear` and `cubic` interpolate every resized dim
    (`cubic_coeff_a`, `exclude_outside` as in ONNX).

    ```mlir
    %y = graph.resize %x scales = [1.0, 1.0, 2.0, 2.0] sizes = [-1, -1, -1, -1]
        mode = linear coordinate_mode = half_pixel
        nearest_mode = round_prefer_floor
        : (tensor<?x3x8x8xf32>) -> tensor<?x3x16x16xf32>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$x, DenseF64ArrayAttr:$scales,
                       DenseI64ArrayAttr:$sizes, Graph_ResizeModeAttr:$mode,
                       Graph_CoordinateModeAttr:$coordinate_mode,
                       Graph_NearestModeAttr:$nearest_mode,
                       DefaultValuedAttr<F64Attr, "-0.75">:$cubic_coeff_a,
                       UnitAttr:$exclude_outside);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = [{
    $x `scales` `=` $scales `sizes` `=` $sizes `mode` `=` `` $mode
    `coordinate_mode` `=` `` $coordinate_mode `nearest_mode` `=` ``
    $nearest_mode attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_SqueezeOp : Graph_InferredOp<"squeeze", [Graph_DataMovement]> {
  let summary = "removes size-1 dims";
  let description = [{
    Removes the dims listed in `axes` (sorted, unique); each must be 1, or
    dynamic and 1 at run time.

    ```mlir
    %y = graph.squeeze %x axes = [1] : (tensor<4x1x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, DenseI64ArrayAttr:$axes);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$x `axes` `=` $axes attr-dict `:` functional-type(operands, results)";
}

def Graph_UnsqueezeOp : Graph_InferredOp<"unsqueeze", [Graph_DataMovement]> {
  let summary = "inserts size-1 dims";
  let description = [{
    Inserts a size-1 dim at each position of `axes` (sorted, unique,
    positions in the result).

    ```mlir
    %y = graph.unsqueeze %x axes = [0, 2] : (tensor<4x8xf32>) -> tensor<1x4x1x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, DenseI64ArrayAttr:$axes);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$x `axes` `=` $axes attr-dict `:` functional-type(operands, results)";
}

def Graph_FlattenOp : Graph_InferredOp<"flatten", [Graph_DataMovement]> {
  let summary = "flattens to 2-D around an axis";
  let description = [{
    `[d0, ..., dn] -> [d0 * ... * d(axis-1), d(axis) * ... * dn]`, with
    `0 <= axis <= rank`. Flattening a tensor that is already that 2-D
    shape folds away.

    ```mlir
    %y = graph.flatten %x axis = 1 : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, I64Attr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$x `axis` `=` $axis attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_PadOp : Graph_InferredOp<"pad", [Graph_DataMovement]> {
  let summary = "pads every dim";
  let description = [{
    `pads` holds the begin pads of every dim, then the end pads (ONNX
    order), all non-negative. `constant` fills with `value`; `reflect`
    mirrors without repeating the edge (pads smaller than the dim); `edge`
    repeats the edge element. All-zero pads fold away.

    ```mlir
    %y = graph.pad %x pads = [0, 1, 0, 1] mode = constant {value = 0.0 : f64}
        : (tensor<2x3xf32>) -> tensor<2x5xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, DenseI64ArrayAttr:$pads,
                       Graph_PadModeAttr:$mode,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $x `pads` `=` $pads `mode` `=` `` $mode attr-dict `:`
    functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Graph_EmbeddingOp : Graph_InferredOp<"embedding", [Graph_DataMovement]> {
  let summary = "embedding lookup: rows of a table by id";
  let description = [{
    `table` is `[vocab, dim]`; the result is `ids.shape + [dim]`, row
    `ids[...]` of the table. Ids outside `[0, vocab)` are an error at run
    time.

    ```mlir
    %e = graph.embedding %wte, %ids
        : (tensor<50257x768xf32>, tensor<?x16xi64>) -> tensor<?x16x768xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$table, Graph_IndexTensor:$ids);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat =
      "$table `,` $ids attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Graph_CrossEntropyOp : Graph_InferredOp<"cross_entropy"> {
  let summary = "softmax cross-entropy between logits and class labels";
  let description = [{
    `logits` is `[..., C]` (classes last), `labels` the integer class per
    row, shaped like `logits` without its last dim. Per row the loss is
    `-log_softmax(logits)[label]`; rows whose label equals `ignore_index`
    contribute 0 and are left out of the mean. `reduction` is `none`
    (shape of `labels`), `sum` or `mean` (a scalar).

    ```mlir
    %l = graph.cross_entropy %logits, %labels reduction = mean
        : (tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$logits, Graph_IndexTensor:$labels,
                       Graph_ReductionAttr:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `reduction` `=` `` $reduction attr-dict `:`
    functional-type(operands, results)
  }];
}

def Graph_MseLossOp : Graph_InferredOp<"mse_loss", [SameOperandsElementType]> {
  let summary = "mean squared error";
  let description = [{
    `(pred - target)^2` elementwise, reduced by `reduction`: `none` keeps
    the shape, `sum` and `mean` give a scalar. `pred` and `target` have the
    same shape.

    ```mlir
    %l = graph.mse_loss %p, %t reduction = mean
        : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$pred, Graph_FloatTensor:$target,
                       Graph_ReductionAttr:$reduction);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $pred `,` $target `reduction` `=` `` $reduction attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Run-time shape parameters
//===----------------------------------------------------------------------===//
//
// The ops above take shapes, axes and bounds as attributes, known when the
// model is compiled. ONNX lets a model pass them as tensors computed (or
// given as graph inputs) at run time. The ops below take them as operands:
// the dims they produce are dynamic, and the values are checked when the
// code runs (the lowering clamps, or the runtime reports, what ONNX calls
// undefined). Parameter tensors are 1-D of static length, i32 or i64.

class Graph_DynamicOp<string mnemonic, list<Trait> traits = []>
    : Graph_InferredOp<mnemonic, traits>;

def Graph_DynamicReshapeOp
    : Graph_DynamicOp<"dynamic_reshape", [Graph_DataMovement]> {
  let summary = "reshape to a shape given as a tensor";
  let description = [{
    ONNX `Reshape` with its shape known only at run time: the result has
    one dim per entry of `shape`, each dynamic. As in `reshape`, a `0`
    copies the input's dim at the same position (unless `allowzero`, where
    it means a zero-size dim) and one `-1` is inferred from the element
    count. The element count must not change.

    ```mlir
    %y = graph.dynamic_reshape %x, %shape
        : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_IndexTensor:$shape,
                       UnitAttr:$allowzero);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $x `,` $shape (`allowzero` $allowzero^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Graph_DynamicUnsqueezeOp
    : Graph_DynamicOp<"dynamic_unsqueeze", [Graph_DataMovement]> {
  let summary = "inserts size-1 dims at positions given as a tensor";
  let description = [{
    ONNX `Unsqueeze` with its axes known only at run time: `axes` (length
    `k`, positions in the result, negative ones counted from its end) must
    be distinct. The result has rank `rank(x) + k`, every dim dynamic.

    ```mlir
    %y = graph.dynamic_unsqueeze %x, %axes
        : (tensor<3x4xf32>, tensor<1xi64>) -> tensor<?x?x?xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_IndexTensor:$axes);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$x `,` $axes attr-dict `:` functional-type(operands, results)";
}

def Graph_DynamicSqueezeOp
    : Graph_DynamicOp<"dynamic_squeeze", [Graph_DataMovement]> {
  let summary = "removes size-1 dims at positions given as a tensor";
  let description = [{
    ONNX `Squeeze` with its axes known only at run time: `axes` (length
    `k <= rank(x)`, negative ones counted from the end) must be distinct
    and name dims of size 1. The result has rank `rank(x) - k`, every dim
    dynamic.

    ```mlir
    %y = graph.dynamic_squeeze %x, %axes
        : (tensor<1x3x1xf32>, tensor<2xi64>) -> tensor<?xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_IndexTensor:$axes);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$x `,` $axes attr-dict `:` functional-type(operands, results)";
}

def Graph_DynamicSliceOp
    : Graph_DynamicOp<"dynamic_slice", [Graph_DataMovement]> {
  let summary = "strided slice with bounds given as tensors";
  let description = [{
    ONNX `Slice` with `starts`, `ends`, `axes` and `steps` known only at
    run time, all of the same static length. For each listed axis (negative
    ones counted from the end; distinct), `slice`'s rules apply: negative
    starts and ends count from the end and are clamped to the dim, a
    negative step walks backwards, a zero step is an error. Unlisted dims
    are taken whole. Every result dim is dynamic.

    ```mlir
    %y = graph.dynamic_slice %x, %starts, %ends, %axes, %steps
        : (tensor<4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>,
           tensor<1xi64>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_IndexTensor:$starts,
                       Graph_IndexTensor:$ends, Graph_IndexTensor:$axes,
                       Graph_IndexTensor:$steps);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $x `,` $starts `,` $ends `,` $axes `,` $steps attr-dict `:`
    functional-type(operands, results)
  }];
}

def Graph_DynamicReduceSumOp : Graph_DynamicOp<"dynamic_reduce_sum"> {
  let summary = "sum over axes given as a tensor";
  let description = [{
    ONNX `ReduceSum` (opset 13) with its axes known only at run time:
    `axes` (negative ones counted from the end) must be distinct. An empty
    `axes` reduces every dim, or none with `noop_with_empty_axes`. With
    `keepdims` the result has the operand's rank, else `rank(x) - k`; every
    dim is dynamic.

    ```mlir
    %y = graph.dynamic_reduce_sum %x, %axes keepdims
        : (tensor<3x4xf32>, tensor<1xi64>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$x, Graph_IndexTensor:$axes,
                       UnitAttr:$keepdims, UnitAttr:$noop_with_empty_axes);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = [{
    $x `,` $axes (`keepdims` $keepdims^)?
    (`noop_with_empty_axes` $noop_with_empty_axes^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Graph_DynamicCumSumOp : Graph_DynamicOp<"dynamic_cumsum"> {
  let summary = "cumulative sum along an axis given as a tensor";
  let description = [{
    ONNX `CumSum` with its axis known only at run time: `axis` holds one
    integer (rank 0 or 1), negative counted from the end. Otherwise as
    `cumsum`.

    ```mlir
    %y = graph.dynamic_cumsum %x, %axis reverse
        : (tensor<2x3xf32>, tensor<i32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$x, Graph_IndexTensor:$axis,
                       UnitAttr:$exclusive, UnitAttr:$reverse);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = [{
    $x `,` $axis (`exclusive` $exclusive^)? (`reverse` $reverse^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_DynamicFillOp
    : Graph_DynamicOp<"dynamic_fill", [Graph_DataMovement]> {
  let summary = "a tensor of a shape given as a tensor, filled with a value";
  let description = [{
    ONNX `ConstantOfShape` of a run-time shape: one dynamic dim per entry
    of `shape` (each `>= 0`), every element `value`.

    ```mlir
    %y = graph.dynamic_fill %shape {value = 1.0 : f32}
        : (tensor<2xi64>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Graph_IndexTensor:$shape, TypedAttrInterface:$value);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$shape attr-dict `:` functional-type(operands, results)";
}

def Graph_DynamicBroadcastOp
    : Graph_DynamicOp<"dynamic_broadcast", [Graph_DataMovement]> {
  let summary = "broadcast to a shape given as a tensor (ONNX Expand)";
  let description = [{
    ONNX `Expand`: `x` and a tensor of shape `shape` broadcast together
    under NumPy rules (either side may be 1). The result has rank
    `max(rank(x), k)`; a dim keeps `x`'s static size when that is not 1,
    and is dynamic otherwise.

    ```mlir
    %y = graph.dynamic_broadcast %x, %shape
        : (tensor<3x1xf32>, tensor<2xi64>) -> tensor<3x?xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_IndexTensor:$shape);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$x `,` $shape attr-dict `:` functional-type(operands, results)";
}

def Graph_RangeOp : Graph_DynamicOp<"range", [SameOperandsElementType]> {
  let summary = "evenly spaced values from start towards limit";
  let description = [{
    ONNX `Range`: `max(ceil((limit - start) / delta), 0)` elements,
    `start + i * delta`. The three operands are scalars (rank 0) of one
    numeric type; a zero `delta` is an error.

    ```mlir
    %y = graph.range %start, %limit, %delta
        : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$start, Graph_NumericTensor:$limit,
                       Graph_NumericTensor:$delta);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = [{
    $start `,` $limit `,` $delta attr-dict `:`
    functional-type(operands, results)
  }];
}

def Graph_DynamicTileOp
    : Graph_DynamicOp<"dynamic_tile", [Graph_DataMovement]> {
  let summary = "repeats a tensor a run-time number of times along each dim";
  let description = [{
    ONNX `Tile`: `repeats` has one non-negative entry per dim of `x`;
    result dim `d` is `x.dim(d) * repeats[d]`, dynamic.

    ```mlir
    %y = graph.dynamic_tile %x, %repeats
        : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_IndexTensor:$repeats);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$x `,` $repeats attr-dict `:` functional-type(operands, results)";
}

def Graph_DynamicPadOp : Graph_DynamicOp<"dynamic_pad", [Graph_DataMovement]> {
  let summary = "pads every dim by amounts given as a tensor";
  let description = [{
    ONNX `Pad` (opset 11) with its pads known only at run time: `pads`
    holds `2 * rank(x)` entries, the begin pads of every dim then the end
    pads; negative pads crop. `value` (rank 0, of `x`'s element type) fills
    in `constant` mode; `reflect` and `edge` as in `pad`. Every result dim
    is dynamic.

    ```mlir
    %y = graph.dynamic_pad %x, %pads, %value mode = constant
        : (tensor<2x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_IndexTensor:$pads,
                       Graph_Tensor:$value, Graph_PadModeAttr:$mode);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $x `,` $pads `,` $value `mode` `=` `` $mode attr-dict `:`
    functional-type(operands, results)
  }];
}

def Graph_DynamicResizeOp : Graph_DynamicOp<"dynamic_resize"> {
  let summary = "resamples a tensor by run-time scales or sizes";
  let description = [{
    ONNX `Resize` with its scales (a float `param`) or its sizes (an
    integer `param`) known only at run time, one entry per dim; otherwise
    as `resize`. Every result dim is dynamic. Scales must be positive and
    sizes non-negative.

    ```mlir
    %y = graph.dynamic_resize %x, %scales mode = nearest
        coordinate_mode = asymmetric nearest_mode = floor
        : (tensor<1x1x2x2xf32>, tensor<4xf32>) -> tensor<?x?x?x?xf32>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$x, Graph_NumericTensor:$param,
                       Graph_ResizeModeAttr:$mode,
                       Graph_CoordinateModeAttr:$coordinate_mode,
                       Graph_NearestModeAttr:$nearest_mode,
                       DefaultValuedAttr<F64Attr, "-0.75">:$cubic_coeff_a,
                       UnitAttr:$exclude_outside);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = [{
    $x `,` $param `mode` `=` `` $mode
    `coordinate_mode` `=` `` $coordinate_mode `nearest_mode` `=` ``
    $nearest_mode attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_DynamicTopKOp : Graph_DynamicOp<"dynamic_top_k"> {
  let summary = "the k largest (or smallest) elements, k given as a tensor";
  let description = [{
    ONNX `TopK` with `k` known only at run time (one integer, rank 0 or 1,
    `0 <= k <=` the axis dim); otherwise as `top_k`. The result's axis dim
    is dynamic.

    ```mlir
    %v, %i = graph.dynamic_top_k %x, %k axis = 1
        : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>)
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$x, Graph_IndexTensor:$k,
                       I64Attr:$axis, UnitAttr:$smallest, UnitAttr:$unsorted);
  let results = (outs Graph_NumericTensor:$values, Graph_IndexTensor:$indices);
  let assemblyFormat = [{
    $x `,` $k `axis` `=` $axis (`smallest` $smallest^)?
    (`unsorted` $unsorted^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_NonZeroOp : Graph_DynamicOp<"nonzero"> {
  let summary = "the coordinates of the true elements of a boolean tensor";
  let description = [{
    One row per true element of `mask`, in row-major order, holding that
    element's coordinates: the result is `[count, rank(mask)]` of i64,
    where `count`, the number of true elements, is known only when the
    code runs (the result size depends on the data, not on shapes). ONNX
    `NonZero` is its transpose; `Compress` and `Unique` gather with its
    rows. Lowered on the CPU as a count, then one sequential pass that
    writes the rows; the CUDA target refuses it by name, and it has no
    gradient (its operand is boolean, its result integer).

    ```mlir
    %i = graph.nonzero %mask : (tensor<2x3xi1>) -> tensor<?x2xi64>
    ```
  }];
  let arguments = (ins Graph_BoolTensor:$mask);
  let results = (outs Graph_IndexTensor:$result);
  let assemblyFormat =
      "$mask attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Control flow (ONNX If, Loop and Scan)
//===----------------------------------------------------------------------===//
//
// Region ops, isolated from above: every value a body reads from outside
// is an operand (`captures`) and an argument of each region, so the passes
// that follow data flow through operands (fusion, autodiff's activity
// analysis, recompute) see all of it. The result types come from the
// frontend (the ONNX importer joins the types a loop-carried value takes);
// yields need only be cast-compatible with them (same element type and
// rank, each dim equal or dynamic on one side). Lowered to `scf` on the
// CPU (GraphToLinalg/ControlFlow.cpp); the CUDA target and autodiff refuse
// them by name.

def Graph_YieldOp : Graph_Op<"yield", [Pure, Terminator,
                                      ParentOneOf<["IfOp", "LoopOp"]>]> {
  let summary = "the values a graph.if branch or a graph.loop body yields";
  let description = [{
    Ends each region of `graph.if` and `graph.loop`.

    ```mlir
    graph.yield %a, %b : tensor<2xf32>, tensor<i1>
    ```
  }];
  let arguments = (ins Variadic<Graph_Tensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

def Graph_IfOp : Graph_Op<"if", [IsolatedFromAbove, RecursiveMemoryEffects]> {
  let summary = "one of two regions, chosen by a boolean scalar";
  let description = [{
    ONNX `If`: runs `then_region` when `cond` (a rank-0 boolean) is true,
    else `else_region`, and returns what the region ran yields. Both regions
    take one argument per capture (the values the branches read from
    outside, in order) and yield one value per result, each cast-compatible
    with it (`if_c3`).

    ```mlir
    %r = graph.if %c captures(%x : tensor<4xf32>) : tensor<i1> -> tensor<4xf32>
    {
    ^bb0(%a: tensor<4xf32>):
      %n = graph.neg %a : tensor<4xf32>
      graph.yield %n : tensor<4xf32>
    } else {
    ^bb0(%a: tensor<4xf32>):
      graph.yield %a : tensor<4xf32>
    }
    ```
  }];
  let arguments = (ins Graph_BoolTensor:$cond, Variadic<Graph_Tensor>:$captures);
  let results = (outs Variadic<Graph_Tensor>:$results);
  let regions = (region SizedRegion<1>:$then_region,
                        SizedRegion<1>:$else_region);
  let assemblyFormat = [{
    $cond (`captures` `(` $captures^ `:` type($captures) `)`)? attr-dict `:`
    type($cond) (`->` type($results)^)? $then_region `else` $else_region
  }];
  let hasVerifier = 1;
}

def Graph_LoopOp : Graph_Op<"loop", [IsolatedFromAbove, RecursiveMemoryEffects,
                                     AttrSizedOperandSegments]> {
  let summary = "a body run while a counter is below a bound and a flag holds";
  let description = [{
    ONNX `Loop`: `for (i = 0; i < trip_count && cond; ++i)` runs `body`,
    with `trip_count` (rank-0 i64) and `cond` (rank-0 i1) optional (absent:
    unbounded, true). The body's arguments are the iteration number
    (`tensor<i64>`), the condition (`tensor<i1>`), one per loop-carried
    value (initially `inits`, each cast-compatible with its argument) and
    one per capture. It yields the next condition, the next carried values
    and any number of scan values. The results are the final carried
    values (of their arguments' types) and, per scan value, the values of
    every iteration stacked along a new leading dim (its length the number
    of iterations run: dynamic unless the frontend knows it).

    ```mlir
    %y, %ys = graph.loop trip_count %n : tensor<i64>
        inits(%y0 : tensor<2xf32>) captures(%d : tensor<2xf32>)
        -> tensor<2xf32>, tensor<?x2xf32> {
    ^bb0(%i: tensor<i64>, %c: tensor<i1>, %y: tensor<2xf32>, %dd: tensor<2xf32>):
      %next = graph.add %y, %dd
          : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      graph.yield %c, %next, %y : tensor<i1>, tensor<2xf32>, tensor<2xf32>
    }
    ```
  }];
  let arguments = (ins Optional<Graph_IndexTensor>:$trip_count,
                       Optional<Graph_BoolTensor>:$cond,
                       Variadic<Graph_Tensor>:$inits,
                       Variadic<Graph_Tensor>:$captures);
  let results = (outs Variadic<Graph_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`trip_count` $trip_count^ `:` type($trip_count))?
    (`cond` $cond^ `:` type($cond))?
    (`inits` `(` $inits^ `:` type($inits) `)`)?
    (`captures` `(` $captures^ `:` type($captures) `)`)? attr-dict-with-keyword
    (`->` type($results)^)? $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The number of scan results (after the carried values').
    unsigned getNumScans() { return getNumResults() - getInits().size(); }
  }];
}

//===----------------------------------------------------------------------===//
// Random ops (docs/training.md, "Random ops")
//===----------------------------------------------------------------------===//
// Every random op is a pure function of its operands and attributes: a
// counter-based generator (SplitMix64) of (op key, run counter, draw index).
// `key` and `counter` are rank-0 i64 tensors: in an inference artifact the
// runtime's per-session seed and run counter (the hidden input
// `loom.rng_state`), in a training step 0 and the micro-step counter. The
// op key is `seed` when the op has one, else a hash of `key` and `stream`
// (distinct per unseeded op). So a clone (recomputation) draws the same
// values, the next run draws new ones, and a seed reproduces the sequence.

def Graph_RngScalar : 0DTensorOf<[I64]>;

def Graph_RandomUniformOp : Graph_Op<"random_uniform", [Pure]> {
  let summary = "a tensor of uniform draws in [low, high)";
  let description = [{
    Each element is `low + (high - low) * u`, u uniform in [0, 1) from the
    element's draw (24 bits for f32, f16 and bf16, 53 for f64). The result
    shape is static.

    ```mlir
    %u = graph.random_uniform %key, %counter {low = 0.0 : f64, high = 1.0 : f64, seed = 3 : i64}
        : (tensor<i64>, tensor<i64>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_RngScalar:$key, Graph_RngScalar:$counter,
                       F64Attr:$low, F64Attr:$high, OptionalAttr<I64Attr>:$seed,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat =
      "$key `,` $counter attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_RandomNormalOp : Graph_Op<"random_normal", [Pure]> {
  let summary = "a tensor of normal draws";
  let description = [{
    Each element is `mean + scale * n`, n standard normal by Box-Muller from
    two 24-bit uniforms of the element's draw (u1 in (0, 1], u2 in [0, 1):
    `sqrt(-2 ln u1) cos(2 pi u2)`). The result shape is static.

    ```mlir
    %n = graph.random_normal %key, %counter {mean = 0.0 : f64, scale = 1.0 : f64, stream = 2 : i64}
        : (tensor<i64>, tensor<i64>) -> tensor<8xf32>
    ```
  }];
  let arguments = (ins Graph_RngScalar:$key, Graph_RngScalar:$counter,
                       F64Attr:$mean, F64Attr:$scale, OptionalAttr<I64Attr>:$seed,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat =
      "$key `,` $counter attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_BernoulliOp : Graph_Op<"bernoulli", [Pure,
                                              Graph_BroadcastingElementwise]> {
  let summary = "1 with probability p, elementwise";
  let description = [{
    Element i is 1 when the uniform u of its draw (in the precision of
    `probs`) is below `probs[i]`, else 0, in the result's element type; the
    result has the shape of `probs`.

    ```mlir
    %b = graph.bernoulli %p, %key, %counter {seed = 0 : i64}
        : (tensor<10xf32>, tensor<i64>, tensor<i64>) -> tensor<10xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$probs, Graph_RngScalar:$key,
                       Graph_RngScalar:$counter, OptionalAttr<I64Attr>:$seed,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$probs `,` $key `,` $counter attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_MultinomialOp : Graph_Op<"multinomial", [Pure]> {
  let summary = "class indices drawn from unnormalized log-probabilities";
  let description = [{
    `logits` is [batch, classes] of unnormalized log-probabilities; the
    result [batch, sample_size] holds class indices, sample (b, s) drawn
    with probability softmax(logits[b]) by inverting the cumulative sum
    with the uniform (53 bits) of draw b * sample_size + s.

    ```mlir
    %s = graph.multinomial %logits, %key, %counter {sample_size = 4 : i64}
        : (tensor<2x3xf32>, tensor<i64>, tensor<i64>) -> tensor<2x4xi32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$logits, Graph_RngScalar:$key,
                       Graph_RngScalar:$counter, I64Attr:$sample_size,
                       OptionalAttr<I64Attr>:$seed,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs Graph_IndexTensor:$result);
  let assemblyFormat =
      "$logits `,` $key `,` $counter attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_RandomDropoutOp : Graph_Op<"random_dropout", [Pure,
    Graph_BroadcastingElementwise, AllTypesMatch<["x", "result"]>]> {
  let summary = "training dropout whose mask changes with the counter";
  let description = [{
    `graph.dropout {training}` with a mask drawn per run: element i is kept
    when the top 24 bits of its draw, as a fraction of 2^24, are >= `ratio`
    (then scaled by 1 / (1 - ratio)), else 0. The op key is `seed` (the
    graph.dropout's), the counter the training step's micro-step: each step
    draws a new mask, a clone within a step the same, and the VJP is the
    same op applied to the result's gradient (the mask rebuilt, not
    stored).

    ```mlir
    %y = graph.random_dropout %x, %key, %step {ratio = 0.1 : f64, seed = 7 : i64}
        : (tensor<4x8xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$x, Graph_RngScalar:$key,
                       Graph_RngScalar:$counter, F64Attr:$ratio,
                       DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat =
      "$x `,` $key `,` $counter attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // LOOM_DIALECTS_GRAPH_GRAPHOPS_TD
