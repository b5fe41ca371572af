//===- GraphBuilder.h - build graph IR from C++ -----------------*- C++ -*-===//
//
// The public C++ API to build a model op by op. Each call checks shapes and
// attributes at once (through the op's own result-type inference and
// verifier); the first error is kept with the name of the op that caused
// it, later calls become no-ops returning a null Value, and `finish()`
// returns either a verified module or that error.
//
//   mlir::MLIRContext ctx;
//   loom::GraphBuilder b(ctx, "forward");
//   mlir::Value x = b.input("x", {loom::kDyn, 784});
//   mlir::Value w = b.param("fc.weight", {784, 10});
//   b.output("logits", b.matmul(x, w));
//   auto module = b.finish();   // FailureOr<OwningOpRef<ModuleOp>>
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTENDS_BUILDER_GRAPHBUILDER_H
#define LOOM_FRONTENDS_BUILDER_GRAPHBUILDER_H

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringSet.h"

#include <optional>
#include <string>

namespace loom {

/// A dynamic dim in a builder shape.
inline constexpr int64_t kDyn = mlir::ShapedType::kDynamic;

/// Element types of graph tensors. The unsigned ones are MLIR's unsigned
/// integer types (ui8, ...); the others are signless and signed in their
/// arithmetic.
enum class DType {
  f32,
  f16,
  bf16,
  f64,
  i1,
  i8,
  i16,
  i32,
  i64,
  u8,
  u16,
  u32,
  u64
};

/// The MLIR type of `dtype`.
mlir::Type toMlirType(mlir::MLIRContext &ctx, DType dtype);
/// The DType of an MLIR element type, if it is one.
std::optional<DType> fromMlirType(mlir::Type type);

class GraphBuilder {
public:
  /// Starts a module holding one function named `funcName`. Loads the
  /// dialects it needs into `ctx`.
  GraphBuilder(mlir::MLIRContext &ctx, llvm::StringRef funcName);
  ~GraphBuilder();
  GraphBuilder(const GraphBuilder &) = delete;
  GraphBuilder &operator=(const GraphBuilder &) = delete;

  //===--------------------------------------------------------------------===//
  // Signature
  //===--------------------------------------------------------------------===//

  /// A named weight: a function argument marked `graph.param`.
  mlir::Value param(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                    DType dtype = DType::f32);
  /// A named weight that starts at `initialValue` (kept as the argument's
  /// `graph.initial_value`, where `loomc train` starts training from); the
  /// argument takes the value's static shape and element type.
  mlir::Value param(llvm::StringRef name, mlir::ElementsAttr initialValue);
  /// A named batch input: a function argument marked `graph.input`.
  /// `dimNames` optionally names dims (ONNX `dim_param`, "" for unnamed);
  /// they are kept as `graph.dim_names` on the argument.
  mlir::Value input(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                    DType dtype = DType::f32,
                    llvm::ArrayRef<std::string> dimNames = {});
  /// The name given to dim `dim` of argument `arg` of the graph being
  /// built (`dimNames` of input()), "" when none.
  llvm::StringRef argumentDimName(mlir::Value arg, int64_t dim) const;
  /// A named function result, marked `graph.output`.
  void output(llvm::StringRef name, mlir::Value value);

  /// Ops built while a scope is open get the location "outer/inner/op".
  class Scope {
  public:
    Scope(Scope &&other) : builder(other.builder) { other.builder = nullptr; }
    ~Scope();

  private:
    friend class GraphBuilder;
    explicit Scope(GraphBuilder *b) : builder(b) {}
    GraphBuilder *builder;
  };
  [[nodiscard]] Scope scope(llvm::StringRef name);

  //===--------------------------------------------------------------------===//
  // Ops. Negative axes count from the end, as in NumPy and ONNX.
  //===--------------------------------------------------------------------===//

  mlir::Value constant(llvm::ArrayRef<float> values,
                       llvm::ArrayRef<int64_t> shape);
  mlir::Value constant(mlir::ElementsAttr value);
  /// A rank-0 tensor holding `value`.
  mlir::Value scalar(double value, DType dtype = DType::f32);
  mlir::Value iota(llvm::ArrayRef<int64_t> shape, int64_t axis,
                   DType dtype = DType::i64);

  mlir::Value neg(mlir::Value x);
  mlir::Value abs(mlir::Value x);
  mlir::Value exp(mlir::Value x);
  mlir::Value log(mlir::Value x);
  mlir::Value sqrt(mlir::Value x);
  mlir::Value rsqrt(mlir::Value x);
  mlir::Value tanh(mlir::Value x);
  mlir::Value cos(mlir::Value x);
  mlir::Value sin(mlir::Value x);
  mlir::Value atan(mlir::Value x);
  mlir::Value sigmoid(mlir::Value x);
  mlir::Value relu(mlir::Value x);
  mlir::Value erf(mlir::Value x);
  mlir::Value floor(mlir::Value x);
  mlir::Value ceil(mlir::Value x);
  /// Rounds halves to even.
  mlir::Value round(mlir::Value x);
  mlir::Value gelu(mlir::Value x, bool tanhApproximation = false);
  mlir::Value clamp(mlir::Value x, std::optional<double> min,
                    std::optional<double> max);
  mlir::Value dropout(mlir::Value x, double ratio, bool training,
                      int64_t seed = 0);
  mlir::Value cast(mlir::Value x, DType to);

  mlir::Value add(mlir::Value lhs, mlir::Value rhs);
  mlir::Value sub(mlir::Value lhs, mlir::Value rhs);
  mlir::Value mul(mlir::Value lhs, mlir::Value rhs);
  mlir::Value div(mlir::Value lhs, mlir::Value rhs);
  mlir::Value pow(mlir::Value lhs, mlir::Value rhs);
  mlir::Value max(mlir::Value lhs, mlir::Value rhs);
  mlir::Value min(mlir::Value lhs, mlir::Value rhs);
  /// Truncated remainder (sign of lhs, C fmod).
  mlir::Value rem(mlir::Value lhs, mlir::Value rhs);
  /// Floored modulo (sign of rhs, Python %).
  mlir::Value mod(mlir::Value lhs, mlir::Value rhs);
  /// Bitwise ops and shifts of integers (shiftRight: logical on unsigned
  /// types, arithmetic on signed ones).
  mlir::Value bitAnd(mlir::Value lhs, mlir::Value rhs);
  mlir::Value bitOr(mlir::Value lhs, mlir::Value rhs);
  mlir::Value bitXor(mlir::Value lhs, mlir::Value rhs);
  mlir::Value bitNot(mlir::Value x);
  mlir::Value shiftLeft(mlir::Value lhs, mlir::Value rhs);
  mlir::Value shiftRight(mlir::Value lhs, mlir::Value rhs);
  mlir::Value compare(graph::CompareDirection direction, mlir::Value lhs,
                      mlir::Value rhs);
  mlir::Value where(mlir::Value cond, mlir::Value x, mlir::Value y);

  /// Linear quantization to zeroPoint's integer type and back (ONNX
  /// QuantizeLinear / DequantizeLinear): scale and zeroPoint are scalars or
  /// vary along one dim of x (size 1 elsewhere).
  mlir::Value quantize(mlir::Value x, mlir::Value scale, mlir::Value zeroPoint);
  mlir::Value dequantize(mlir::Value x, mlir::Value scale,
                         mlir::Value zeroPoint);

  mlir::Value matmul(mlir::Value lhs, mlir::Value rhs,
                     bool transposeLhs = false, bool transposeRhs = false);
  /// `(lhs - lhsZero) x (rhs - rhsZero)` in i32: 8-bit operands, scalar
  /// zero points of their element types (graph.matmul_integer).
  mlir::Value matmulInteger(mlir::Value lhs, mlir::Value rhs,
                            mlir::Value lhsZero, mlir::Value rhsZero);
  /// Empty strides/dilations mean 1 per spatial dim; empty padding means 0.
  mlir::Value conv(mlir::Value input, mlir::Value filter, mlir::Value bias,
                   llvm::ArrayRef<int64_t> strides = {},
                   llvm::ArrayRef<int64_t> padding = {},
                   llvm::ArrayRef<int64_t> dilations = {}, int64_t groups = 1);
  /// `conv(input - inputZero, filter - filterZero)` in i32: 8-bit operands,
  /// scalar zero points of their element types (graph.conv_integer);
  /// strides, padding and dilations as conv's.
  mlir::Value convInteger(mlir::Value input, mlir::Value filter,
                          mlir::Value inputZero, mlir::Value filterZero,
                          llvm::ArrayRef<int64_t> strides = {},
                          llvm::ArrayRef<int64_t> padding = {},
                          llvm::ArrayRef<int64_t> dilations = {},
                          int64_t groups = 1);
  /// Empty strides mean the kernel size; empty padding means 0.
  mlir::Value maxPool(mlir::Value x, llvm::ArrayRef<int64_t> kernel,
                      llvm::ArrayRef<int64_t> strides = {},
                      llvm::ArrayRef<int64_t> padding = {},
                      bool ceilMode = false,
                      llvm::ArrayRef<int64_t> dilations = {});
  mlir::Value avgPool(mlir::Value x, llvm::ArrayRef<int64_t> kernel,
                      llvm::ArrayRef<int64_t> strides = {},
                      llvm::ArrayRef<int64_t> padding = {},
                      bool countIncludePad = false, bool ceilMode = false);
  mlir::Value globalAvgPool(mlir::Value x);

  mlir::Value batchNorm(mlir::Value x, mlir::Value scale, mlir::Value bias,
                        mlir::Value mean, mlir::Value variance,
                        double epsilon = 1e-5);
  /// `bias` may be null.
  mlir::Value layerNorm(mlir::Value x, mlir::Value scale, mlir::Value bias,
                        int64_t axis = -1, double epsilon = 1e-5);
  mlir::Value softmax(mlir::Value x, int64_t axis = -1);
  mlir::Value logSoftmax(mlir::Value x, int64_t axis = -1);

  mlir::Value reduceSum(mlir::Value x, llvm::ArrayRef<int64_t> axes,
                        bool keepdims = false);
  mlir::Value reduceMean(mlir::Value x, llvm::ArrayRef<int64_t> axes,
                         bool keepdims = false);
  mlir::Value reduceMax(mlir::Value x, llvm::ArrayRef<int64_t> axes,
                        bool keepdims = false);
  mlir::Value reduceMin(mlir::Value x, llvm::ArrayRef<int64_t> axes,
                        bool keepdims = false);

  /// Index (i64) of the maximum / minimum along `axis`.
  mlir::Value reduceProd(mlir::Value x, llvm::ArrayRef<int64_t> axes,
                         bool keepdims = false);
  mlir::Value argMax(mlir::Value x, int64_t axis, bool keepdims = false,
                     bool selectLastIndex = false);
  mlir::Value argMin(mlir::Value x, int64_t axis, bool keepdims = false,
                     bool selectLastIndex = false);

  /// ONNX semantics: 0 copies the input dim, one -1 is inferred.
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  /// A tensor of `ref`'s shape holding `value` in every element.
  mlir::Value fillLike(mlir::Value ref, double value, DType dtype);
  mlir::Value cumsum(mlir::Value x, int64_t axis, bool exclusive = false,
                     bool reverse = false);
  /// The k largest (smallest) elements along `axis`, and their indices.
  std::pair<mlir::Value, mlir::Value> topK(mlir::Value x, int64_t k,
                                           int64_t axis = -1,
                                           bool largest = true,
                                           bool sorted = true);
  mlir::Value trilu(mlir::Value x, bool upper, int64_t k = 0);
  /// ONNX Resize; `sizes` entries of -1 come from `scales`.
  mlir::Value resize(mlir::Value x, llvm::ArrayRef<double> scales,
                     llvm::ArrayRef<int64_t> sizes, graph::ResizeMode mode,
                     graph::CoordinateMode coordinates,
                     graph::NearestMode nearest, double cubicCoeffA = -0.75,
                     bool excludeOutside = false);
  mlir::Value transpose(mlir::Value x, llvm::ArrayRef<int64_t> perm);
  /// -1 keeps the operand's dim at that position.
  mlir::Value broadcastTo(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  mlir::Value concat(mlir::ValueRange inputs, int64_t axis);
  /// ONNX Slice: `axes` empty means [0, n); `steps` empty means 1s.
  mlir::Value slice(mlir::Value x, llvm::ArrayRef<int64_t> starts,
                    llvm::ArrayRef<int64_t> ends,
                    llvm::ArrayRef<int64_t> axes = {},
                    llvm::ArrayRef<int64_t> steps = {});
  mlir::Value gather(mlir::Value data, mlir::Value indices, int64_t axis);
  mlir::Value gatherElements(mlir::Value data, mlir::Value indices,
                             int64_t axis);
  mlir::Value scatterElements(
      mlir::Value data, mlir::Value indices, mlir::Value updates, int64_t axis,
      graph::ScatterReduction reduction = graph::ScatterReduction::none);
  mlir::Value squeeze(mlir::Value x, llvm::ArrayRef<int64_t> axes);
  mlir::Value unsqueeze(mlir::Value x, llvm::ArrayRef<int64_t> axes);
  mlir::Value flatten(mlir::Value x, int64_t axis = 1);
  mlir::Value pad(mlir::Value x, llvm::ArrayRef<int64_t> pads,
                  graph::PadMode mode = graph::PadMode::constant,
                  double value = 0.0);
  mlir::Value embedding(mlir::Value table, mlir::Value ids);

  //===--------------------------------------------------------------------===//
  // Run-time shape parameters: shapes, axes, bounds and pads as tensors
  // (ONNX's form), for values known only when the model runs. Axes may be
  // negative; the results' dims are dynamic.
  //===--------------------------------------------------------------------===//

  mlir::Value dynamicReshape(mlir::Value x, mlir::Value shape,
                             bool allowzero = false);
  mlir::Value dynamicUnsqueeze(mlir::Value x, mlir::Value axes);
  mlir::Value dynamicSqueeze(mlir::Value x, mlir::Value axes);
  mlir::Value dynamicSlice(mlir::Value x, mlir::Value starts, mlir::Value ends,
                           mlir::Value axes, mlir::Value steps);
  mlir::Value dynamicReduceSum(mlir::Value x, mlir::Value axes, bool keepdims,
                               bool noopWithEmptyAxes = false);
  mlir::Value dynamicCumSum(mlir::Value x, mlir::Value axis,
                            bool exclusive = false, bool reverse = false);
  /// ONNX ConstantOfShape: `value` in every element of a `shape` tensor.
  mlir::Value dynamicFill(mlir::Value shape, mlir::TypedAttr value);
  /// ONNX Expand.
  mlir::Value dynamicBroadcast(mlir::Value x, mlir::Value shape);
  mlir::Value range(mlir::Value start, mlir::Value limit, mlir::Value delta);
  mlir::Value dynamicTile(mlir::Value x, mlir::Value repeats);
  mlir::Value dynamicPad(mlir::Value x, mlir::Value pads, mlir::Value value,
                         graph::PadMode mode = graph::PadMode::constant);
  /// TopK with a run-time k.
  std::pair<mlir::Value, mlir::Value> dynamicTopK(mlir::Value x, mlir::Value k,
                                                  int64_t axis = -1,
                                                  bool largest = true,
                                                  bool sorted = true);
  /// ONNX Resize by run-time scales (a float `param`) or sizes (i64).
  mlir::Value
  dynamicResize(mlir::Value x, mlir::Value param, graph::ResizeMode mode,
                graph::CoordinateMode coordinates, graph::NearestMode nearest,
                double cubicCoeffA = -0.75, bool excludeOutside = false);

  /// The coordinates of `mask`'s true elements, one row each in row-major
  /// order: [count, rank] of i64, the count known at run time.
  mlir::Value nonzero(mlir::Value mask);

  mlir::Value crossEntropy(mlir::Value logits, mlir::Value labels,
                           graph::Reduction reduction = graph::Reduction::mean,
                           std::optional<int64_t> ignoreIndex = std::nullopt);
  mlir::Value mseLoss(mlir::Value pred, mlir::Value target,
                      graph::Reduction reduction = graph::Reduction::mean);

  //===--------------------------------------------------------------------===//
  // Result
  //===--------------------------------------------------------------------===//

  /// The context the module is built in.
  mlir::MLIRContext &context() const { return ctx_; }
  /// False once any call failed.
  bool ok() const { return error_.empty(); }
  /// The first error, "location: message", or empty.
  const std::string &error() const { return error_; }

  /// The OpBuilder the ops are built with, for a frontend that builds ops
  /// with regions itself (ONNX If and Loop): the ops built after its
  /// insertion point moves into a block go there.
  mlir::OpBuilder &opBuilder() { return builder_; }
  /// The location an op named `opName` built now gets ("scope/.../name").
  mlir::Location locationOf(llvm::StringRef opName) { return location(opName); }

  /// Finishes the function, verifies the module and hands it over. Fails
  /// with the first error of any call, or the verifier's message. The
  /// builder is unusable afterwards.
  mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>> finish();

private:
  template <typename OpTy>
  mlir::Value build(mlir::ValueRange operands,
                    llvm::ArrayRef<mlir::NamedAttribute> attrs = {});
  template <typename OpTy>
  mlir::Operation *buildOp(mlir::ValueRange operands,
                           llvm::ArrayRef<mlir::NamedAttribute> attrs = {});
  mlir::Value argument(llvm::StringRef kind, llvm::StringRef name,
                       llvm::ArrayRef<int64_t> shape, DType dtype,
                       llvm::ArrayRef<std::string> dimNames = {},
                       mlir::ElementsAttr initialValue = {});
  mlir::Location location(llvm::StringRef opName);
  void fail(const llvm::Twine &message);
  /// Checks that `v` is a ranked tensor; records an error otherwise.
  mlir::RankedTensorType tensorType(mlir::Value v, llvm::StringRef what);
  /// Normalizes a possibly negative axis into [0, rank); records an error
  /// and returns -1 if it is out of range.
  int64_t normalizeAxis(int64_t axis, int64_t rank, llvm::StringRef what);
  bool normalizeAxes(llvm::ArrayRef<int64_t> axes, int64_t rank,
                     llvm::StringRef what, llvm::SmallVectorImpl<int64_t> &out);
  template <typename OpTy>
  mlir::Value reduce(mlir::Value x, llvm::ArrayRef<int64_t> axes,
                     bool keepdims);
  template <typename OpTy>
  mlir::Value argReduce(mlir::Value x, int64_t axis, bool keepdims,
                        bool selectLastIndex);

  mlir::MLIRContext &ctx_;
  mlir::OpBuilder builder_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
  mlir::Operation *func_ = nullptr; // a func.func
  mlir::Block *body_ = nullptr;
  llvm::SmallVector<mlir::DictionaryAttr> argAttrs_;
  llvm::SmallVector<mlir::Value> results_;
  llvm::SmallVector<mlir::DictionaryAttr> resultAttrs_;
  llvm::SmallVector<std::string> scopes_;
  llvm::StringSet<> names_;
  std::string funcName_;
  std::string error_;
  bool finished_ = false;
};

} // namespace loom

#endif // LOOM_FRONTENDS_BUILDER_GRAPHBUILDER_H
