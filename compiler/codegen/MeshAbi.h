//===- MeshAbi.h - upstream mesh ops in the runtime's collective ABI --*- C++
//-*-===//
//
// What both code generators (the CPU's runtime calls, the CUDA program's
// collective steps) need to name a `mesh` collective in the runtime's
// terms (loom/common/CodegenAbi.h).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_CODEGEN_MESHABI_H
#define LOOM_COMPILER_CODEGEN_MESHABI_H

#include "loom/common/CodegenAbi.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"

#include <cstdint>

namespace loom::codegen {

/// The ABI's reduction code of `kind`; -1 for one the runtime has not.
inline int64_t reductionCode(mlir::mesh::ReductionKind kind) {
  switch (kind) {
  case mlir::mesh::ReductionKind::Sum:
    return abi::kReduceSum;
  case mlir::mesh::ReductionKind::Max:
    return abi::kReduceMax;
  case mlir::mesh::ReductionKind::Min:
    return abi::kReduceMin;
  case mlir::mesh::ReductionKind::Product:
    return abi::kReduceProduct;
  default:
    return -1;
  }
}

} // namespace loom::codegen

#endif // LOOM_COMPILER_CODEGEN_MESHABI_H
