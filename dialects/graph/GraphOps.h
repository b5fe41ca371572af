//===- GraphOps.h - graph dialect operations --------------------*- C++ -*-===//

#ifndef LOOM_DIALECTS_GRAPH_GRAPHOPS_H
#define LOOM_DIALECTS_GRAPH_GRAPHOPS_H

#include "dialects/graph/GraphDialect.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/graph/GraphEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/graph/GraphAttrs.h.inc"

namespace loom::graph {

/// Broadcasts `lhs` and `rhs` under NumPy rules into `out`. Returns false
/// and fills `why` when two dims conflict. A dynamic dim against 1 stays
/// dynamic; against a static size it takes that size.
bool broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs,
                     llvm::SmallVectorImpl<int64_t> &out, std::string *why);

/// Result type of an elementwise op over `operands` broadcast together. The
/// element type is `elementType` if given, else the first operand's.
llvm::LogicalResult
inferBroadcastResult(std::optional<mlir::Location> loc, llvm::StringRef opName,
                     mlir::ValueRange operands, mlir::Type elementType,
                     llvm::SmallVectorImpl<mlir::Type> &types);

/// The shape rules of graph.matmul, one place for its verifier and the
/// backends: a rank-1 lhs is a row vector [1, K] and a rank-1 rhs a column
/// vector [K, 1] (that dim is dropped from the result); the transpose flags
/// swap an operand's last two dims; batch dims broadcast.
struct MatmulShape {
  int64_t m = 0, n = 0, k = 0; ///< k: the contracted size, from the lhs
  bool lhsVector = false, rhsVector = false;
  llvm::SmallVector<int64_t> batch;  ///< the broadcast batch dims
  llvm::SmallVector<int64_t> result; ///< batch, then m and n unless vectors
};

/// The MatmulShape of `lhs` x `rhs`; fails with the broken constraint
/// (matmul_c1..c4, tagged in GraphOps.cpp) in `why`.
llvm::FailureOr<MatmulShape>
inferMatmulShape(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs,
                 bool transposeLhs, bool transposeRhs, std::string &why);

/// The scale rules quantize, dequantize and fake_quantize share: the zero
/// point has the scale's shape, which broadcasts into `x` without widening
/// it and is a scalar or varies along one dim (a channel dim of `x`).
llvm::LogicalResult checkQuantScale(std::optional<mlir::Location> loc,
                                    llvm::StringRef opName,
                                    mlir::RankedTensorType x,
                                    mlir::RankedTensorType scale,
                                    mlir::RankedTensorType zeroPoint);

/// Result type of a reduction of `input` over `axes`.
llvm::LogicalResult inferReduceResult(std::optional<mlir::Location> loc,
                                      llvm::StringRef opName, mlir::Type input,
                                      llvm::ArrayRef<int64_t> axes,
                                      bool keepdims,
                                      llvm::SmallVectorImpl<mlir::Type> &types);

/// Result type of arg_max / arg_min of `input` along `axis`.
llvm::LogicalResult
inferArgReduceResult(std::optional<mlir::Location> loc, llvm::StringRef opName,
                     mlir::Type input, int64_t axis, bool keepdims,
                     llvm::SmallVectorImpl<mlir::Type> &types);

namespace GraphTrait {
/// Graph_DataMovement (GraphBase.td): the op's result elements are operand
/// elements or fill values, moved without arithmetic.
template <typename ConcreteType>
class DataMovement
    : public mlir::OpTrait::TraitBase<ConcreteType, DataMovement> {};

/// The op classes of GraphBase.td: elementwise with broadcasting, reduction,
/// normalization, contraction. Markers only; passes test them with
/// `op->hasTrait<GraphTrait::Reduction>()`.
template <typename ConcreteType>
class BroadcastingElementwise
    : public mlir::OpTrait::TraitBase<ConcreteType, BroadcastingElementwise> {};
template <typename ConcreteType>
class Reduction : public mlir::OpTrait::TraitBase<ConcreteType, Reduction> {};
template <typename ConcreteType>
class Normalization
    : public mlir::OpTrait::TraitBase<ConcreteType, Normalization> {};
template <typename ConcreteType>
class Contraction : public mlir::OpTrait::TraitBase<ConcreteType, Contraction> {
};
} // namespace GraphTrait

} // namespace loom::graph

namespace loom::graph::detail {
/// CostOpInterface's estimates of any graph op (GraphCost.cpp).
int64_t estimateFlops(mlir::Operation *op);
int64_t estimateBytes(mlir::Operation *op);
} // namespace loom::graph::detail

#include "dialects/graph/GraphInterfaces.h.inc"

namespace loom::graph {
/// Attaches the VJP rules (GraphVjp.cpp) to the graph ops; called when the
/// dialect is loaded.
void registerVjpRules(mlir::MLIRContext &ctx);
/// The VJP of `mesh.all_reduce` (a sum of the ranks' parts), attached when
/// the mesh dialect loads.
void registerMeshVjpRules(mlir::DialectRegistry &registry);
} // namespace loom::graph

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.h.inc"

#endif // LOOM_DIALECTS_GRAPH_GRAPHOPS_H
