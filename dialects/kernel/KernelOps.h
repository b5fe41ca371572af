//===- KernelOps.h - kernel dialect operations ------------------*- C++ -*-===//

#ifndef LOOM_DIALECTS_KERNEL_KERNELOPS_H
#define LOOM_DIALECTS_KERNEL_KERNELOPS_H

#include "dialects/kernel/KernelDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/kernel/KernelEnums.h.inc"

#define GET_OP_CLASSES
#include "dialects/kernel/KernelOps.h.inc"

#endif // LOOM_DIALECTS_KERNEL_KERNELOPS_H
