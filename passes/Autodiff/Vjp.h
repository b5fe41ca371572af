//===- Vjp.h - reverse-mode differentiation as a building block -*- C++ -*-===//
//
// The backward builder behind --loom-autodiff, for passes that
// differentiate something other than a function's scalar loss: the
// pipeline's stages seed their outputs with the gradients the next stage
// sends back (passes/Pipeline).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_AUTODIFF_VJP_H
#define LOOM_PASSES_AUTODIFF_VJP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <utility>

namespace loom::autodiff {

/// Builds, before the terminator of `func`'s body, the vector-Jacobian
/// product of the ops in the body: each seed (a value of the body, its
/// cotangent of the same type) is propagated backwards through the ops'
/// VJP rules (only those between a `wrt` argument and a seeded value), and
/// the gradient of each `wrt` argument is returned, null where none
/// reaches it. An active op without a VJP rule is an error on it.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
buildVjp(mlir::func::FuncOp func,
         llvm::ArrayRef<std::pair<mlir::Value, mlir::Value>> seeds,
         llvm::ArrayRef<mlir::BlockArgument> wrt, mlir::OpBuilder &b);

} // namespace loom::autodiff

#endif // LOOM_PASSES_AUTODIFF_VJP_H
