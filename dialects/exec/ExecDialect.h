//===- ExecDialect.h - the exec dialect -------------------------*- C++ -*-===//

#ifndef LOOM_DIALECTS_EXEC_EXECDIALECT_H
#define LOOM_DIALECTS_EXEC_EXECDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/exec/ExecDialect.h.inc"

#endif // LOOM_DIALECTS_EXEC_EXECDIALECT_H
