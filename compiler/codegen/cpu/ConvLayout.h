//===- ConvLayout.h - layouts and fusions around CPU convolutions -*- C++
//-*-===//
//
// Internal to the CPU code path: what CpuLibraryCallsPass does with the
// calls of loom_cpu_conv2d_nchw_f32 and loom_cpu_maxpool2d_f32 once it has
// made them (ConvLayout.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_CODEGEN_CPU_CONVLAYOUT_H
#define LOOM_COMPILER_CODEGEN_CPU_CONVLAYOUT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>

namespace loom::codegen {

/// A call of a kernel that can take its 4-D input and output in NHWC:
/// the operand numbers of the input, the output and the flags (an i64
/// constant), and the flags that say each is NHWC.
struct LayoutCall {
  mlir::func::CallOp call;
  unsigned in, out, flags;
  int64_t inNhwc, outNhwc;
};

/// The value of `call`'s flags operand `flags` (an arith constant).
int64_t callFlags(mlir::func::CallOp call, unsigned flags);
/// Sets it to `value` (a new constant before the call).
void setCallFlags(mlir::func::CallOp call, unsigned flags, int64_t value);

/// Folds a residual add into the convolution that produces one of its
/// operands: `y = conv(...) + r` (then maybe max(y, 0)), where the
/// convolution overwrites a buffer only the add reads, becomes a copy of
/// r into that buffer and the convolution accumulating into it (oneDNN's
/// sum post-op), the ReLU its post-op after the sum; y's users read the
/// buffer. `overwrite` and `relu` are the convolution's flag bits.
void foldResidualAdds(llvm::ArrayRef<LayoutCall> convs, int64_t overwrite,
                      int64_t relu);

/// Chooses NHWC for the buffers between the calls: a buffer written or
/// read by one of them, and every buffer linked to it through elementwise
/// ops (identity maps: ReLU, residual adds, copies), when each of these
/// buffers is an allocation the function owns. The calls get their NHWC
/// flags; the elementwise ops run unchanged (their loops do not care in
/// which order the elements lie, only that all operands agree); any other
/// reader or writer (a pooling loop, a reduction, a broadcast) gets a
/// strided view of the buffer as [N, C, H, W]. So transposes happen only
/// where a buffer of the network meets a caller's tensor, inside the first
/// and last kernel that touches it.
void chooseNhwcLayouts(llvm::ArrayRef<LayoutCall> calls);

} // namespace loom::codegen

#endif // LOOM_COMPILER_CODEGEN_CPU_CONVLAYOUT_H
