//===- OnnxImporterImpl.h - state shared by the ONNX op handlers -*- C++
//-*-===//

#ifndef LOOM_FRONTENDS_ONNX_ONNXIMPORTERIMPL_H
#define LOOM_FRONTENDS_ONNX_ONNXIMPORTERIMPL_H

#include "frontends/builder/GraphBuilder.h"
#include "frontends/onnx/OnnxImporter.h"

#include "llvm/ADT/StringMap.h"

#include <onnx/onnx_pb.h>

namespace loom::onnx_import {

/// The newest ai.onnx opset the op table is written against: a model
/// importing a newer one is refused (the range is 1 to this).
constexpr int64_t kNewestOpset = 20;

/// Checks an ai.onnx node against ONNX's schema of its op at `opset`
/// (libonnx's OpSchemaRegistry): input and output counts, no empty name for
/// a required input, the attributes' names and types, the required
/// attributes. Returns why the node does not match, or "" when it does or
/// when the op changed after the newest opset libonnx has a schema for.
std::string checkNodeSchema(const onnx::NodeProto &node, int64_t opset);

/// Converts an ONNX element type; failure for types graph IR lacks.
std::optional<DType> convertDataType(int onnxType);
/// ONNX's name of an element type, for messages.
std::string dataTypeName(int onnxType);

/// One entry of a shape vector computed at import: a static size, a
/// dynamic dim of a graph value (`source`, `dim`), or unknown (neither).
struct SymDim {
  int64_t value = 0; ///< the value when static (may be -1, as in Reshape)
  mlir::Value source;
  int64_t dim = -1;
  bool unknown = false;
  bool isStatic() const { return !source && !unknown; }
};

/// An integer tensor (rank 0 or 1) whose entries are partly symbolic, as
/// made by `Shape` of a tensor with dynamic dims.
struct SymShape {
  llvm::SmallVector<SymDim> dims;
  bool scalar = false;
};

/// An ONNX optional (OnnxSequence.cpp), known at import to be empty or to
/// hold a tensor or a sequence (a list, as ImportContext::sequences).
struct OptionalValue {
  bool present = false;
  /// Of a sequence type (also when empty).
  bool holdsSequence = false;
  mlir::Value tensor;
  std::vector<mlir::Value> list;
};

/// A value of any ONNX type the importer keeps: a tensor (a graph value,
/// or one known at import: `known`), a sequence or an optional. What a
/// subgraph imported in line takes and returns (importInlineAny).
struct AnyValue {
  enum class Kind { Tensor, Sequence, Optional };
  Kind kind = Kind::Tensor;
  mlir::Value tensor;
  std::optional<mlir::ElementsAttr> known;
  std::vector<mlir::Value> list;
  OptionalValue optional;
};

/// The import of one graph: values by name, values known at import time,
/// and accessors for the node being imported.
class ImportContext {
public:
  ImportContext(GraphBuilder &b, mlir::MLIRContext &ctx, int64_t opset,
                const ImportOptions &options)
      : b(b), ctx(ctx), opset(opset), options(options) {}

  GraphBuilder &b;
  mlir::MLIRContext &ctx;
  int64_t opset;
  const ImportOptions &options;
  const onnx::NodeProto *node = nullptr;
  llvm::StringMap<mlir::Value> values;
  /// The input of the node being converted that may stay a shape vector
  /// with dynamic dims (its OpEntry's shapeInput); -1 when none.
  int shapeInput = -1;
  /// Dynamic dims known to equal another value's dim though no shape rule
  /// of their op says so: a Reshape to another tensor's dims computed at
  /// run time. Followed by sameDynamicDim.
  llvm::DenseMap<std::pair<mlir::Value, int64_t>,
                 std::pair<mlir::Value, int64_t>>
      dimAliases;
  /// Tensors whose value is known at import: initializers, Constant nodes.
  llvm::StringMap<mlir::ElementsAttr> known;
  /// The constant op made for each known value, once.
  llvm::DenseMap<mlir::Attribute, mlir::Value> materialized;
  /// Integer tensors known up to dynamic dims (see OnnxShapes.cpp).
  llvm::StringMap<SymShape> symbolic;
  /// ONNX sequences: lists of graph values whose length is known at import
  /// (OnnxSequence.cpp). Only ops marked takesSequences may read one.
  llvm::StringMap<std::vector<mlir::Value>> sequences;
  /// ONNX optionals, known at import to be empty or not (OnnxSequence.cpp).
  /// Read, as sequences, only by ops marked takesSequences.
  llvm::StringMap<OptionalValue> optionals;
  /// Nodes imported by unrolling Loops at import (OnnxControlFlow.cpp),
  /// bounded by ImportOptions::maxNodes as the graph's own nodes are.
  int64_t unrolledNodes = 0;

  /// Input `i` as a shape vector: symbolic, or a known integer tensor.
  std::optional<SymShape> symbolicInput(int i) const;

  /// The node's location: NameLoc("node name") wrapping "op_type".
  mlir::Location nodeLoc() const;
  /// Emits an error naming the node and its op; returns failure().
  mlir::LogicalResult error(const llvm::Twine &message) const;

  bool hasInput(int i) const;
  /// Input `i` as a graph value (materializing known tensors as constants).
  mlir::Value input(int i);
  /// Input `i` when its value is known at import.
  std::optional<mlir::DenseElementsAttr> knownInput(int i) const;
  /// Input `i` as a list of integers known at import; error otherwise.
  mlir::FailureOr<llvm::SmallVector<int64_t>> intsInput(int i,
                                                        llvm::StringRef what);
  void setOutput(int i, mlir::Value v);

  bool hasAttr(llvm::StringRef name) const;
  int64_t attrInt(llvm::StringRef name, int64_t dflt) const;
  float attrFloat(llvm::StringRef name, float dflt) const;
  std::string attrString(llvm::StringRef name, llvm::StringRef dflt) const;
  llvm::SmallVector<int64_t> attrInts(llvm::StringRef name) const;
  const onnx::TensorProto *attrTensor(llvm::StringRef name) const;

  /// Converts a TensorProto (inline or external data) to an attribute;
  /// large tensors become dense_resource blobs. `taken`: the tensor's raw
  /// data, moved out of it by the caller, taken over.
  mlir::FailureOr<mlir::ElementsAttr>
  convertTensor(const onnx::TensorProto &t, mlir::Location loc,
                std::string *taken = nullptr);

  /// The inputs of the node asked for with knownInput that were not known:
  /// those an error about a value needed at import is about.
  mutable llvm::SmallVector<int, 4> unknownAsked;

private:
  const onnx::AttributeProto *attr(llvm::StringRef name) const;
};

using Handler = mlir::LogicalResult (*)(ImportContext &);

struct OpEntry {
  const char *domain; ///< "" is ai.onnx
  const char *opType;
  int sinceVersion;
  Handler handler;
  /// The input that may be a shape vector with dynamic dims (Reshape's
  /// shape); -1 when none. No other input of the node may be one.
  int shapeInput = -1;
  /// Whether the op's inputs may be sequences (ImportContext::sequences);
  /// any other op given one is refused before its converter runs.
  bool takesSequences = false;
};

/// Stores `s` as the node's output 0: as a known tensor when every entry
/// is static, else as a symbolic vector.
void setSymbolicOutput(ImportContext &c, const SymShape &s);

/// Evaluates shape arithmetic (Gather, Unsqueeze, Concat, ...) on
/// symbolic shape vectors. Returns true when it handled the node.
bool foldShapeArithmetic(ImportContext &c);

/// Dim `dim` of `x` as a rank-0 i64 tensor computed at run time.
mlir::Value dimSize(ImportContext &c, mlir::Value x, int64_t dim);

/// True when every entry of `s` is static or one dynamic dim: not a
/// product of dynamic dims, whose value is not tracked.
bool canMaterialize(const SymShape &s);

/// A shape vector with dynamic dims (canMaterialize) as an i64 tensor
/// computed at run time, for an op that takes it as data (Range's limit,
/// Slice's ends, a Cast of a length).
mlir::Value materializeSymbolic(ImportContext &c, const SymShape &s);

/// True when dynamic dim `da` of `a` provably equals dim `db` of `b`,
/// following the shape rules of the graph ops between them to the dims
/// they come from: one dim, or two graph inputs' dims of one ONNX
/// dim_param (the runtime checks that those agree).
bool sameDynamicDim(const ImportContext &c, mlir::Value a, int64_t da,
                    mlir::Value b, int64_t db);

/// ONNX Einsum as transposes, reductions and matmuls (OnnxEinsum.cpp).
mlir::LogicalResult einsum(ImportContext &c);

/// LSTM, GRU and RNN unrolled over the sequence (OnnxRecurrent.cpp).
mlir::LogicalResult lstm(ImportContext &c);
mlir::LogicalResult gru(ImportContext &c);
mlir::LogicalResult rnn(ImportContext &c);

/// Ops written as a few graph ops (OnnxDecomposed.cpp).
mlir::LogicalResult sinh(ImportContext &c);
mlir::LogicalResult cosh(ImportContext &c);
mlir::LogicalResult tan(ImportContext &c);
template <bool cosh> mlir::LogicalResult inverseHyperbolic(ImportContext &c);
mlir::LogicalResult atanh(ImportContext &c);
mlir::LogicalResult asin(ImportContext &c);
mlir::LogicalResult acos(ImportContext &c);
mlir::LogicalResult thresholdedRelu(ImportContext &c);
mlir::LogicalResult shrink(ImportContext &c);
mlir::LogicalResult isInf(ImportContext &c);
mlir::LogicalResult isNaN(ImportContext &c);
mlir::LogicalResult eyeLike(ImportContext &c);
mlir::LogicalResult hardmax(ImportContext &c);
template <bool toSpace> mlir::LogicalResult depthSpace(ImportContext &c);

/// Old-opset forms of ops the table knows from a later opset, Celu and
/// MeanVarianceNormalization (OnnxLegacy.cpp). newerForm converts the node
/// with the converter of its op's next form in the table, for a legacy form
/// whose semantics that one shares.
mlir::LogicalResult newerForm(ImportContext &c);
/// Add, Sub, Mul, Div and Pow before opset 7 (`broadcast`, `axis`).
template <mlir::Value (GraphBuilder::*fn)(mlir::Value, mlir::Value)>
mlir::LogicalResult binaryV1(ImportContext &c);
mlir::LogicalResult constantForms(ImportContext &c);
mlir::LogicalResult padV1(ImportContext &c);
mlir::LogicalResult batchNormV1(ImportContext &c);
mlir::LogicalResult preluV1(ImportContext &c);
mlir::LogicalResult celu(ImportContext &c);
mlir::LogicalResult meanVarianceNormalization(ImportContext &c);

/// The quantization ops (OnnxQuantized.cpp).
mlir::LogicalResult quantizeLinear(ImportContext &c);
mlir::LogicalResult dequantizeLinear(ImportContext &c);
mlir::LogicalResult dynamicQuantizeLinear(ImportContext &c);
mlir::LogicalResult matMulInteger(ImportContext &c);
mlir::LogicalResult qLinearMatMul(ImportContext &c);
mlir::LogicalResult convInteger(ImportContext &c);
mlir::LogicalResult qLinearConv(ImportContext &c);

/// Indexing and vision ops (OnnxIndexing.cpp).
mlir::LogicalResult gatherND(ImportContext &c);
mlir::LogicalResult scatterND(ImportContext &c);
mlir::LogicalResult reverseSequence(ImportContext &c);
mlir::LogicalResult maxUnpool(ImportContext &c);
mlir::LogicalResult lrn(ImportContext &c);
mlir::LogicalResult gridSample(ImportContext &c);
mlir::LogicalResult roiAlign(ImportContext &c);
/// Signal ops and Det (OnnxSignal.cpp).
mlir::LogicalResult hannWindow(ImportContext &c);
mlir::LogicalResult hammingWindow(ImportContext &c);
mlir::LogicalResult blackmanWindow(ImportContext &c);
template <int version> mlir::LogicalResult dft(ImportContext &c);
mlir::LogicalResult stft(ImportContext &c);
mlir::LogicalResult melWeightMatrix(ImportContext &c);
mlir::LogicalResult det(ImportContext &c);
/// MaxPool's Indices output for input `x` and output `y`: flat indices
/// into `x` (column-major within a plane when `columnMajor`); null after an
/// error, which `c` has reported.
mlir::Value maxPoolIndices(ImportContext &c, mlir::Value x, mlir::Value y,
                           llvm::ArrayRef<int64_t> kernel,
                           llvm::ArrayRef<int64_t> strides,
                           llvm::ArrayRef<int64_t> pads,
                           llvm::ArrayRef<int64_t> dilations, bool columnMajor);

/// The window of a convolution node (Conv, ConvInteger, QLinearConv):
/// strides, dilations and begin-then-end pads per spatial dim (pads / auto_pad
/// resolved against x), and the group count.
struct ConvWindow {
  llvm::SmallVector<int64_t> strides, pads, dilations;
  int64_t groups = 1;
};
/// The node's ConvWindow for input `x` and filter `w` (kernel_shape,
/// strides, dilations, pads / auto_pad, group); failure after an error,
/// which `c` has reported.
mlir::FailureOr<ConvWindow> convWindow(ImportContext &c, mlir::Value x,
                                       mlir::Value w);
/// ONNX Conv of `x` and `w` (and `bias`, may be null) with the node's
/// attributes (kernel_shape, strides, dilations, pads / auto_pad, group);
/// null after an error, which `c` has reported.
mlir::Value convolution(ImportContext &c, mlir::Value x, mlir::Value w,
                        mlir::Value bias);
/// ONNX ConvTranspose as a matmul and col2im (OnnxConvTranspose.cpp).
mlir::LogicalResult convTranspose(ImportContext &c);

/// The graph element type of `v` (f32 when it has none).
DType dtypeOf(mlir::Value v);

/// `t` as text, for messages.
std::string str(mlir::Type t);

/// The ranked tensor type of `v`.
mlir::RankedTensorType tensorOf(mlir::Value v);

/// `x`'s static shape, or an error saying `what` needs one.
mlir::FailureOr<llvm::SmallVector<int64_t>>
staticShape(ImportContext &c, mlir::Value x, const llvm::Twine &what);

/// A rank-0 constant of `like`'s element type.
mlir::Value scalarLike(ImportContext &c, mlir::Value like, double v);

/// A constant of `shape` and element type `elem` from doubles (rounded to
/// nearest even for floats, toward zero for integers).
mlir::Value constantOf(ImportContext &c, llvm::ArrayRef<double> values,
                       llvm::ArrayRef<int64_t> shape, mlir::Type elem);

/// Whether `v`'s elements are floats.
bool isFloat(mlir::Value v);

/// Converts one node (that passed the schema check) with `entry`: its
/// inputs must exist, shape arithmetic is folded, the converter runs and
/// every output must be produced. Used for the main graph and for the
/// subgraphs of If, Loop and Scan (OnnxControlFlow.cpp).
mlir::LogicalResult importNode(ImportContext &ic, const onnx::NodeProto &node,
                               const OpEntry *entry);

/// ONNX control flow as graph.if and graph.loop (OnnxControlFlow.cpp).
mlir::LogicalResult ifOp(ImportContext &c);
mlir::LogicalResult loopOp(ImportContext &c);
mlir::LogicalResult scanOp(ImportContext &c);

/// The ai.onnx.preview.training optimizers, OneHot with a run-time depth
/// and TfIdfVectorizer (OnnxMisc.cpp).
mlir::LogicalResult adam(ImportContext &c);
mlir::LogicalResult adagrad(ImportContext &c);
mlir::LogicalResult momentum(ImportContext &c);
mlir::LogicalResult oneHotAnyDepth(ImportContext &c);
mlir::LogicalResult tfIdfVectorizer(ImportContext &c);
/// Resize with coordinate mode tf_crop_and_resize or tf_half_pixel_for_nn.
mlir::LogicalResult resizeTf(ImportContext &c);

/// Imports subgraph `g` (`what`, for messages) in line at the builder's
/// insertion point, with `inputs` as the values of g's inputs; returns its
/// outputs (OnnxControlFlow.cpp).
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
importInline(ImportContext &c, const onnx::GraphProto &g, llvm::StringRef what,
             llvm::ArrayRef<mlir::Value> inputs);

/// importInline for a subgraph that may take and return sequences and
/// optionals.
mlir::FailureOr<llvm::SmallVector<AnyValue>>
importInlineAny(ImportContext &c, const onnx::GraphProto &g,
                llvm::StringRef what, llvm::ArrayRef<AnyValue> inputs);

/// The value named `name` as an AnyValue (a tensor known at import keeps
/// `known` and no graph value); nothing when no value has that name.
std::optional<AnyValue> lookupAny(ImportContext &c, llvm::StringRef name);
/// Gives `name` the value `v` (of any kind), replacing what it had.
void defineAny(ImportContext &c, llvm::StringRef name, const AnyValue &v);
/// The graph values `v` holds, in order: the tensor (materialized when
/// known), a sequence's elements, a present optional's tensor or elements.
void flattenAny(ImportContext &c, const AnyValue &v,
                llvm::SmallVectorImpl<mlir::Value> &out);
/// `like` with its graph values taken from `flat` starting at `at`
/// (advanced): the inverse of flattenAny for a value of one structure.
AnyValue unflattenAny(const AnyValue &like, llvm::ArrayRef<mlir::Value> flat,
                      size_t &at);
/// "" when `a` and `b` have one structure (kinds, sequence lengths,
/// optionals' presence), else what differs, for messages.
std::string sameStructure(const AnyValue &a, const AnyValue &b);
/// The bool `v` holds when it is known at import (a constant, or a
/// comparison of constants, as Not builds); nothing otherwise.
std::optional<bool> knownBool(mlir::Value v);

/// Optional, OptionalHasElement and OptionalGetElement (OnnxSequence.cpp).
mlir::LogicalResult optionalOp(ImportContext &c);
mlir::LogicalResult optionalHasElement(ImportContext &c);
mlir::LogicalResult optionalGetElement(ImportContext &c);
/// Identity of a tensor, sequence or optional (opset 14 and 16).
mlir::LogicalResult identityAny(ImportContext &c);

/// ONNX sequences as lists of graph values known at import
/// (OnnxSequence.cpp).
mlir::LogicalResult sequenceEmpty(ImportContext &c);
mlir::LogicalResult sequenceConstruct(ImportContext &c);
mlir::LogicalResult sequenceInsert(ImportContext &c);
mlir::LogicalResult sequenceErase(ImportContext &c);
mlir::LogicalResult sequenceAt(ImportContext &c);
mlir::LogicalResult sequenceLength(ImportContext &c);
mlir::LogicalResult splitToSequence(ImportContext &c);
mlir::LogicalResult concatFromSequence(ImportContext &c);
mlir::LogicalResult sequenceMap(ImportContext &c);

/// Ops whose output size is the data's, around graph.nonzero
/// (OnnxDataDependent.cpp).
mlir::LogicalResult nonZero(ImportContext &c);
mlir::LogicalResult compress(ImportContext &c);
mlir::LogicalResult unique(ImportContext &c);
mlir::LogicalResult nonMaxSuppression(ImportContext &c);

/// The random ops (OnnxRandom.cpp).
mlir::LogicalResult randomUniform(ImportContext &c);
mlir::LogicalResult randomUniformLike(ImportContext &c);
mlir::LogicalResult randomNormal(ImportContext &c);
mlir::LogicalResult randomNormalLike(ImportContext &c);
mlir::LogicalResult bernoulli(ImportContext &c);
mlir::LogicalResult multinomial(ImportContext &c);

/// The entry for `opType` at `opset`: the newest whose since-version is not
/// newer than the model's opset. Null when unsupported.
const OpEntry *lookupOp(llvm::StringRef domain, llvm::StringRef opType,
                        int64_t opset);

} // namespace loom::onnx_import

#endif // LOOM_FRONTENDS_ONNX_ONNXIMPORTERIMPL_H
