//===- TensorParallelRewrites.h - vocab and sequence parallel ---*- C++ -*-===//
//
// The rewrites `--loom-tensor-parallel` applies after its plan when asked:
// the vocab-parallel embedding and cross-entropy (VocabParallel.cpp) and
// sequence parallelism (SequenceParallel.cpp). Private to the pass.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_SHARDING_TENSORPARALLELREWRITES_H
#define LOOM_PASSES_SHARDING_TENSORPARALLELREWRITES_H

#include "passes/Sharding/ShardingUtils.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace loom::tensor_parallel {

/// This rank's part of `range(0, n)` over `axis` (`n / axis.size` i64
/// indices from `rank * n / axis.size`): a constant cut by `mesh.all_slice`,
/// which communicates nothing.
mlir::Value rankRange(mlir::OpBuilder &b, mlir::Location loc,
                      const sharding::MeshAxis &axis, int64_t n);

/// What the vocab-parallel rewrite works on: gathers of a table split over
/// the vocab (its rows), and ops that read logits split over their last
/// dim and need whole-vocab statistics (graph.cross_entropy,
/// graph.log_softmax along the vocab, graph.reduce_sum / reduce_mean over
/// it). The operands already have their local types.
struct VocabWork {
  llvm::SmallVector<graph::GatherOp> embeddings;
  llvm::SmallVector<mlir::Operation *> ops;
  /// Whole vocab size of each split value `ops` read (before retyping).
  llvm::DenseMap<mlir::Value, int64_t> wholeDim;
  /// Filled by the rewrite: each embedding's all-reduce and the index of
  /// its entry in the collectives it reported (sequence parallelism may
  /// turn the all-reduce into a reduce-scatter).
  llvm::SmallVector<std::pair<mlir::Operation *, size_t>> embeddingSums;
};

/// Replaces each of `work`'s ops by its vocab-parallel form; appends each
/// collective to `collectives` (JSON, as the pass reports them) and a line
/// per op to `os`.
void rewriteVocabParallel(mlir::func::FuncOp f, const sharding::MeshAxis &axis,
                          VocabWork &work, llvm::json::Array &collectives,
                          llvm::raw_ostream &os);

/// Sequence parallelism over the tensor-parallel plan: `rowSums` are the
/// all-reduces after the row-parallel matmuls, `columnInputs` the markers
/// on the column-parallel matmuls' inputs. Between them the activations
/// are split along the sequence (the rows of the row-parallel matmul:
/// dim rank - 2). Fills `out` (the report's `sequence_parallel` object) and
/// prints a line per decision to `os`.
void rewriteSequenceParallel(
    mlir::func::FuncOp f, const sharding::MeshAxis &axis,
    llvm::ArrayRef<mlir::Operation *> rowSums,
    llvm::ArrayRef<graph::GradAllReduceOp> columnInputs,
    llvm::json::Object &out, llvm::raw_ostream &os);

} // namespace loom::tensor_parallel

#endif // LOOM_PASSES_SHARDING_TENSORPARALLELREWRITES_H
