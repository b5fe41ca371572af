//===- KernelBase.td - kernel dialect base definitions -----*- tablegen -*-===//
//
// The `kernel` dialect: graph ops grouped into fused regions, the unit that
// every backend compiles.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_KERNEL_KERNELBASE_TD
#define LOOM_DIALECTS_KERNEL_KERNELBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def Kernel_Dialect : Dialect {
  let name = "kernel";
  let cppNamespace = "::loom::kernel";
  let summary = "Fused regions of graph ops, compiled one region at a time";
  let description = [{
    The `kernel` dialect holds the fusion decisions of the middle end. The
    `--loom-fusion` pass groups the graph ops of a function into
    `kernel.fusion` regions: each region is isolated from the rest of the
    function (it reads only its operands and gives only its results), so a
    backend compiles each region on its own (one loop nest or a few, a
    library call and its epilogue, one CUDA kernel) and never fuses across
    a region's boundary.
  }];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Kernel_FusionKind : I32EnumAttr<"FusionKind", "what a fused region computes", [
      I32EnumAttrCase<"elementwise", 0>, I32EnumAttrCase<"reduction", 1>,
      I32EnumAttrCase<"softmax", 2>, I32EnumAttrCase<"norm", 3>,
      I32EnumAttrCase<"matmul", 4>, I32EnumAttrCase<"other", 5>]> {
  let cppNamespace = "::loom::kernel";
}

class Kernel_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kernel_Dialect, mnemonic, traits>;

#endif // LOOM_DIALECTS_KERNEL_KERNELBASE_TD
