//===- Dequantized.h - reading dequantized 8-bit operands -------*- C++ -*-===//
//
// What --loom-integer-matmul and --loom-integer-conv share: recognizing an
// f32 dequantize of 8-bit integers, where its scale varies, and its zero
// point as one value.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_QUANTIZATION_DEQUANTIZED_H
#define LOOM_PASSES_QUANTIZATION_DEQUANTIZED_H

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace loom::quantization {

inline mlir::RankedTensorType tensorOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType());
}

/// `v` as a scalar (rank 0) when it holds one value: rank 0 already, one
/// element (reshaped), or a splat constant, perhaps reshaped (a new scalar
/// constant); null otherwise. New ops go at `b`'s insertion point.
mlir::Value asScalar(mlir::OpBuilder &b, mlir::Value v);

/// The dims of scale `s` of an operand of rank `rank` that differ from 1,
/// right-aligned against the operand (-1: none, -2: more than one).
int64_t varyingDim(mlir::RankedTensorType s, int64_t rank);

/// An f32 dequantize of 8-bit integers to the integers' shape, or null.
graph::DequantizeOp dequantizedBytes(mlir::Value v);

} // namespace loom::quantization

#endif // LOOM_PASSES_QUANTIZATION_DEQUANTIZED_H
