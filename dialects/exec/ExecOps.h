//===- ExecOps.h - exec dialect operations ----------------------*- C++ -*-===//

#ifndef LOOM_DIALECTS_EXEC_EXECOPS_H
#define LOOM_DIALECTS_EXEC_EXECOPS_H

#include "dialects/exec/ExecDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/exec/ExecOps.h.inc"

namespace loom::exec {

/// Bytes per element of `type` as stored: an integer or float rounded up to
/// whole bytes (i1 takes one), an index 8. `type` must be one of those.
int64_t getElementBytes(mlir::Type type);

/// Bytes of a static-shape memref of such elements.
int64_t getStaticBytes(mlir::MemRefType type);

} // namespace loom::exec

#endif // LOOM_DIALECTS_EXEC_EXECOPS_H
