//===- GraphBase.td - graph dialect base definitions -------*- tablegen -*-===//
//
// The `graph` dialect: tensor operations with value semantics, the IR every
// Loom frontend produces and every middle-end pass consumes.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_GRAPH_GRAPHBASE_TD
#define LOOM_DIALECTS_GRAPH_GRAPHBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialects/graph/GraphInterfaces.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::loom::graph";
  let summary = "Tensor operations with value semantics for deep-learning models";
  let description = [{
    The `graph` dialect is Loom's model-level IR. Every op consumes and
    produces ranked tensors (`tensor<...>`) of `f32`, `f16`, `bf16`, `f64`,
    `i1`, `i8`, `i32` or `i64`, with static or dynamic (`?`) dimensions. Ops
    have value semantics: no op writes to memory.

    Conventions shared by every op:

    * Implicit broadcasting follows NumPy: shapes are aligned on the right,
      and two dimensions are compatible when they are equal or one is 1. A
      dynamic dimension broadcast against 1 stays dynamic; against a static
      size it takes that size.
    * Axis attributes are normalized: `0 <= axis < rank`. Frontends and the
      C++ builder turn negative (Python-style) axes into this form.
    * Every op infers its result type from its operands and attributes
      (`InferTypeOpInterface`), so the result type written in the IR is
      checked, never trusted.

    A model is a `func.func` whose arguments carry `graph.param = "name"`
    (a weight) or `graph.input = "name"` (a batch input), and whose results
    carry `graph.output = "name"`. An input may also carry
    `graph.dim_names = ["batch", ""]`: the names of its dynamic dims (ONNX
    `dim_param`), so two inputs' dims named alike are known to be equal.
  }];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
  // Attributes live in the op's attribute dictionary, so generic code (the
  // GraphBuilder, importers) can infer result types from a plain
  // (operands, attributes) pair.
  let usePropertiesForAttributes = 0;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// Integers are signless (signed arithmetic: i8, i16, i32, i64) or unsigned
// (ui8, ui16, ui32, ui64: unsigned division, comparison, widening and
// conversion); the lowerings pick the arithmetic from the type and leave
// signless types behind.
defvar Graph_Integers = [I8, I16, I32, I64, UI8, UI16, UI32, UI64];
def Graph_ElementType : AnyTypeOf<!listconcat([F32, F16, BF16, F64, I1],
                                              Graph_Integers),
                                  "graph element type">;
def Graph_Tensor : RankedTensorOf<!listconcat([F32, F16, BF16, F64, I1],
                                              Graph_Integers)>;
def Graph_FloatTensor : RankedTensorOf<[F32, F16, BF16, F64]>;
def Graph_NumericTensor : RankedTensorOf<!listconcat([F32, F16, BF16, F64],
                                                     Graph_Integers)>;
def Graph_IndexTensor : RankedTensorOf<[I32, I64]>;
def Graph_BoolTensor : RankedTensorOf<[I1]>;
def Graph_IntegerTensor : RankedTensorOf<Graph_Integers>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Graph_CompareDirection : I32EnumAttr<"CompareDirection",
    "comparison direction", [
      I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
      I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
      I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::loom::graph";
  let genSpecializedAttr = 0;
}
def Graph_CompareDirectionAttr
    : EnumAttr<Graph_Dialect, Graph_CompareDirection, "compare_direction">;

def Graph_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "GELU approximation", [
      I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"tanh", 1>]> {
  let cppNamespace = "::loom::graph";
  let genSpecializedAttr = 0;
}
def Graph_GeluApproximationAttr
    : EnumAttr<Graph_Dialect, Graph_GeluApproximation, "gelu_approximation">;

def Graph_Reduction : I32EnumAttr<"Reduction", "loss reduction", [
      I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"sum", 1>,
      I32EnumAttrCase<"mean", 2>]> {
  let cppNamespace = "::loom::graph";
  let genSpecializedAttr = 0;
}
def Graph_ReductionAttr
    : EnumAttr<Graph_Dialect, Graph_Reduction, "reduction">;

def Graph_PadMode : I32EnumAttr<"PadMode", "padding mode", [
      I32EnumAttrCase<"constant", 0>, I32EnumAttrCase<"reflect", 1>,
      I32EnumAttrCase<"edge", 2>]> {
  let cppNamespace = "::loom::graph";
  let genSpecializedAttr = 0;
}
def Graph_PadModeAttr : EnumAttr<Graph_Dialect, Graph_PadMode, "pad_mode">;

def Graph_ScatterReduction : I32EnumAttr<"ScatterReduction",
    "how scattered updates combine with the data", [
      I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"add", 1>,
      I32EnumAttrCase<"mul", 2>, I32EnumAttrCase<"max", 3>,
      I32EnumAttrCase<"min", 4>]> {
  let cppNamespace = "::loom::graph";
  let genSpecializedAttr = 0;
}
def Graph_ScatterReductionAttr
    : EnumAttr<Graph_Dialect, Graph_ScatterReduction, "scatter_reduction">;

def Graph_ResizeMode : I32EnumAttr<"ResizeMode", "resize interpolation", [
      I32EnumAttrCase<"nearest", 0>, I32EnumAttrCase<"linear", 1>,
      I32EnumAttrCase<"cubic", 2>]> {
  let cppNamespace = "::loom::graph";
  let genSpecializedAttr = 0;
}
def Graph_ResizeModeAttr
    : EnumAttr<Graph_Dialect, Graph_ResizeMode, "resize_mode">;

def Graph_CoordinateMode : I32EnumAttr<"CoordinateMode",
    "how an output coordinate maps to an input coordinate", [
      I32EnumAttrCase<"half_pixel", 0>, I32EnumAttrCase<"pytorch_half_pixel", 1>,
      I32EnumAttrCase<"align_corners", 2>, I32EnumAttrCase<"asymmetric", 3>,
      I32EnumAttrCase<"half_pixel_symmetric", 4>]> {
  let cppNamespace = "::loom::graph";
  let genSpecializedAttr = 0;
}
def Graph_CoordinateModeAttr
    : EnumAttr<Graph_Dialect, Graph_CoordinateMode, "coordinate_mode">;

def Graph_NearestMode : I32EnumAttr<"NearestMode",
    "rounding of a coordinate to the nearest input element", [
      I32EnumAttrCase<"round_prefer_floor", 0>,
      I32EnumAttrCase<"round_prefer_ceil", 1>, I32EnumAttrCase<"floor", 2>,
      I32EnumAttrCase<"ceil", 3>]> {
  let cppNamespace = "::loom::graph";
  let genSpecializedAttr = 0;
}
def Graph_NearestModeAttr
    : EnumAttr<Graph_Dialect, Graph_NearestMode, "nearest_mode">;

//===----------------------------------------------------------------------===//
// Traits
//===----------------------------------------------------------------------===//

/// Each result element is an operand element or a fill value, moved without
/// arithmetic: reshapes, transposes, slices, concats, gathers, pads, `where`.
/// Such an op gives the same values in any element type, so a backend may
/// leave it in a narrow one: the CPU backend keeps f16/bf16 data in 16 bits
/// through these ops and computes every other op in f32
/// (`--loom-cpu-widen-floats`).
def Graph_DataMovement : NativeOpTrait<"DataMovement"> {
  let cppNamespace = "::loom::graph::GraphTrait";
}

// Op classes. The passes that treat a class of ops alike (fusion, recompute,
// mixed precision, the backends) ask for these traits instead of listing
// ops, so a new op is classified where it is defined.

/// Elementwise with numpy broadcasting of its operands: each result element
/// is computed from the operand elements at its (broadcast) index. The
/// binary arithmetic ops, `compare` and `where`. (Unary elementwise ops carry
/// MLIR's `Elementwise` instead: their operand and result shapes agree.)
def Graph_BroadcastingElementwise : NativeOpTrait<"BroadcastingElementwise"> {
  let cppNamespace = "::loom::graph::GraphTrait";
}

/// Reduces its input along the `axes` attribute with one associative
/// operation (sum, mean, max, min, product).
def Graph_ReductionTrait : NativeOpTrait<"Reduction"> {
  let cppNamespace = "::loom::graph::GraphTrait";
}

/// Normalizes its input along an axis with statistics computed over it
/// (`softmax`, `log_softmax`, `layer_norm`, `batch_norm`): numerically
/// sensitive, computed in f32 under mixed precision.
def Graph_Normalization : NativeOpTrait<"Normalization"> {
  let cppNamespace = "::loom::graph::GraphTrait";
}

/// A contraction, multiply-adds over a contracted dimension (`matmul`,
/// `conv`): the ops that run on tensor cores / BLAS in a low precision
/// and accumulate in f32.
def Graph_Contraction : NativeOpTrait<"Contraction"> {
  let cppNamespace = "::loom::graph::GraphTrait";
}

//===----------------------------------------------------------------------===//
// Base op classes
//===----------------------------------------------------------------------===//

/// Every graph op has a cost estimate (GraphInterfaces.td).
class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic,
         !listconcat(traits, [Graph_CostOpInterface])>;

/// An op whose result type is computed by a C++ `inferReturnTypes`; the
/// inference also checks the operands and attributes, so it doubles as the
/// op's shape verifier.
class Graph_InferredOp<string mnemonic, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor])>;

/// Elementwise unary op: the result has the operand's type.
class Graph_UnaryOp<string mnemonic, Type tensorType, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits, [Pure, Elementwise,
          SameOperandsAndResultType, InferTypeOpInterface])> {
  let arguments = (ins tensorType:$x);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

/// Elementwise binary op with NumPy broadcasting of both operands.
class Graph_BinaryOp<string mnemonic, Type tensorType, list<Trait> traits = []>
    : Graph_InferredOp<mnemonic, !listconcat(traits, [SameOperandsElementType,
                                                      Graph_BroadcastingElementwise])> {
  let arguments = (ins tensorType:$lhs, tensorType:$rhs);
  let results = (outs tensorType:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::loom::graph::inferBroadcastResult(
          loc, getOperationName(), adaptor.getOperands(), ::mlir::Type(),
          types);
    }
  }];
}

/// Reduction over `axes` (sorted, unique, normalized), optionally keeping
/// the reduced dimensions as size 1.
class Graph_ReduceOp<string mnemonic, Type tensorType, string what>
    : Graph_InferredOp<mnemonic, [Graph_ReductionTrait]> {
  let summary = "reduces a tensor by " # what # " over axes";
  let description = [{
    Reduces `x` by }] # what # [{ over the dimensions listed in `axes`
    (sorted, unique, in `[0, rank)`). With `keepdims` the reduced
    dimensions stay as size 1; otherwise they are removed.

    Example:

    ```mlir
    %r = graph.}] # mnemonic # [{ %x axes = [1] keepdims
        : (tensor<4x8xf32>) -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins tensorType:$x, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keepdims);
  let results = (outs tensorType:$result);
  let assemblyFormat = [{
    $x `axes` `=` $axes (`keepdims` $keepdims^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::loom::graph::inferReduceResult(
          loc, getOperationName(), adaptor.getX().getType(),
          adaptor.getAxes(), adaptor.getKeepdims(), types);
    }
  }];
}

/// Index of the extreme element along one axis.
class Graph_ArgReduceOp<string mnemonic, string what>
    : Graph_InferredOp<mnemonic> {
  let summary = "index of the " # what # " along one axis";
  let description = [{
    The `i64` index of the }] # what # [{ element of `x` along `axis`
    (normalized). Ties give the first index, or the last with
    `select_last_index`. With `keepdims` the axis stays as size 1.

    Example:

    ```mlir
    %i = graph.}] # mnemonic # [{ %x axis = 1 keepdims
        : (tensor<4x8xf32>) -> tensor<4x1xi64>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$x, I64Attr:$axis,
                       UnitAttr:$keepdims, UnitAttr:$select_last_index);
  let results = (outs Graph_IndexTensor:$result);
  let assemblyFormat = [{
    $x `axis` `=` $axis (`keepdims` $keepdims^)?
    (`select_last_index` $select_last_index^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *ctx, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::loom::graph::inferArgReduceResult(
          loc, getOperationName(), adaptor.getX().getType(),
          adaptor.getAxis(), adaptor.getKeepdims(), types);
    }
  }];
}

#endif // LOOM_DIALECTS_GRAPH_GRAPHBASE_TD
