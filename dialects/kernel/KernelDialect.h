//===- KernelDialect.h - the kernel dialect ---------------------*- C++ -*-===//

#ifndef LOOM_DIALECTS_KERNEL_KERNELDIALECT_H
#define LOOM_DIALECTS_KERNEL_KERNELDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/kernel/KernelDialect.h.inc"

#endif // LOOM_DIALECTS_KERNEL_KERNELDIALECT_H
