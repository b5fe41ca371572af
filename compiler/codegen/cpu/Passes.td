//===- Passes.td - passes of the CPU code path -------------*- tablegen -*-===//
//
// The memory plan and its CPU lowering. The other CPU passes are declared
// in CpuTransforms.h.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_CODEGEN_CPU_PASSES_TD
#define LOOM_COMPILER_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def CpuMemoryPlanPass : Pass<"loom-cpu-memory-plan", "mlir::ModuleOp"> {
  let summary = "plan intermediate buffers into a reused arena and slots";
  let description = [{
    On buffers, after deallocation: plans the intermediate `memref.alloc`s
    of each public function by liveness. Static-size buffers get offsets in
    one arena (slot 0), first fit in decreasing size, sharing bytes only
    when their live ranges are disjoint; dynamic-size buffers share slots
    1..N when their live ranges are disjoint. Emits the plan as
    `exec.plan @<function>_plan` and each planned alloc as an
    `exec.buffer` (its deallocs dropped); buffers that escape (returned,
    passed to an unknown call, taken apart into pointers) stay allocs.
    Records the plan for `loomc compile --print-memory-plan` in the module
    attribute `loom.memory_plan`. See MemoryPlan.cpp.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "64",
           "byte alignment of every arena offset (a power of two)">,
  ];
  let dependentDialects = ["::loom::exec::ExecDialect"];
}

def ExecToCpuPass : Pass<"loom-exec-to-cpu", "mlir::ModuleOp"> {
  let summary = "lower exec buffers to the CPU runtime's slots";
  let description = [{
    Lowers each `exec.buffer` to a `memref.view` of a slot that the runtime
    hands out with `loom_rt_slot(slot, bytes) -> memref<?xi8>`
    (runtime/src/RunContext.cpp): one call for the arena (slot 0) at the
    top of each function, shared by its static-size buffers, and one call
    per dynamic-size buffer where it is made, with that buffer's bytes, so
    the runtime grows the slot to the largest of them. Then erases the
    `exec.plan`s.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

#endif // LOOM_COMPILER_CODEGEN_CPU_PASSES_TD
