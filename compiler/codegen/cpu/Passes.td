//===- Passes.td - passes of the CPU code path -------------*- tablegen -*-===//
//
// 16-bit floats, the memory plan and its CPU lowering. The other CPU passes
// are declared in CpuTransforms.h.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_CODEGEN_CPU_PASSES_TD
#define LOOM_COMPILER_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def CpuWidenFloatsPass : Pass<"loom-cpu-widen-floats", "mlir::ModuleOp"> {
  let summary = "compute f16/bf16 graph ops in f32; keep 16-bit storage";
  let description = [{
    On graph IR, before fusion. The CPU backend stores f16 and bf16 in 16
    bits and computes on them in f32. Every graph op that computes on a
    16-bit float operand or result (elementwise math, compare, matmul and
    conv, reductions, softmax, norms, pooling, losses, cumsum, ...) is
    rebuilt on f32: each 16-bit float operand goes through `graph.cast` to
    f32, 16-bit float and type attributes become f32, the result types are
    inferred again, and each result that was a 16-bit float is cast back to
    its type. So a matmul or conv accumulates in f32, and a chain of
    elementwise ops rounds to 16 bits after each op, as its types say.
    Left in 16 bits: casts, constants, and the ops with the
    `Graph_DataMovement` trait (reshape, transpose, slice, concat, gather,
    broadcast, pad, where, fills, ...), so the values that cross kernel
    boundaries stay 16-bit in memory; fusion then puts the casts into the
    elementwise loops around them. Integer, boolean and f64 values are not
    touched (a compare of bf16 still gives i1).

    ```mlir
    %y = graph.tanh %x : tensor<4xbf16>
    // becomes
    %0 = graph.cast %x to f32 : tensor<4xbf16>
    %1 = graph.tanh %0 : tensor<4xf32>
    %y = graph.cast %1 to bf16 : tensor<4xf32>
    ```
  }];
  let dependentDialects = ["::loom::graph::GraphDialect"];
}

def CpuExpandFloatCastsPass
    : Pass<"loom-cpu-expand-float-casts", "mlir::ModuleOp"> {
  let summary = "16-bit float conversions as integer arithmetic, no libcalls";
  let description = [{
    On arith, before the conversion to LLVM. LLVM lowers several
    conversions of 16-bit floats to calls of compiler-rt routines
    (`__truncsfbf2`, `__truncdfhf2`, and without F16C `__extendhfsf2` and
    `__truncsfhf2`) that the runtime does not link. This pass leaves none:

    * arithmetic that is still on f16/bf16 is done in f32 (upstream
      `arith-emulate-unsupported-floats`; the widening pass leaves none
      from graph ops, this is the safety net);
    * bf16 <-> f32: bit arithmetic (upstream `populateExpandBFloat16Patterns`:
      round to nearest even, NaN stays NaN, infinities stay);
    * f64 -> f16/bf16: f64 -> f32 rounded to odd, then f32 -> 16 bits to
      nearest even, which is correctly rounded (no double rounding);
      f16/bf16 -> f64 goes through f32 (exact);
    * integer -> f16/bf16 through f64 (exact for up to 32-bit integers),
      f16/bf16 -> integer through f32;
    * with `soft-f16` (a target without F16C): f16 <-> f32 as bit arithmetic
      too (round to nearest even, subnormals, overflow to infinity, NaN).
      Otherwise LLVM emits F16C instructions for them.

    `compileForCpu` sets `soft-f16` from the target CPU's features, and
    fails with an error naming the routine if the object still calls one.
  }];
  let options = [
    Option<"softF16", "soft-f16", "bool", "false",
           "expand f16 <-> f32 too (for a target without F16C)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}

def CpuCollectivesPass : Pass<"loom-cpu-collectives", "mlir::ModuleOp"> {
  let summary = "mesh collectives to asynchronous runtime calls";
  let description = [{
    On tensors, right before bufferization. Each collective of MLIR's
    `mesh` dialect (`all_reduce`, `reduce_scatter`, `all_gather`,
    `all_slice`, `broadcast`) becomes a start and a wait call of the
    runtime (docs/distributed.md, "What the generated code calls"):

    ```mlir
    %r = mesh.all_reduce %x on @mesh mesh_axes = [0] : tensor<8xf32> -> tensor<8xf32>
    ...
    %y = graph.add %r, %z  // the first use
    // becomes
    %in = bufferization.to_memref %x read_only : memref<8xf32>
    %out = memref.alloc() {alignment = 64} : memref<8xf32>
    %h = call @loom_rt_collective_start_f32(%in*, %out*, 0, 1, 0, 1) : ... -> i64
    ...
    call @loom_rt_collective_wait_f32(%h, %in*, %out*)
    %r = bufferization.to_tensor %out restrict writable : memref<8xf32>
    %y = graph.add %r, %z
    ```

    The collective runs between the two calls, overlapping whatever the
    code computes in between (the rest of the backward, for a gradient
    bucket). The wait takes both buffers, so the memory plan keeps them
    alive until then. The module's `mesh.mesh` is erased once nothing
    refers to it (the artifact records it, Artifact.mesh). A mesh op this
    pass does not lower (`mesh.shard`, `send`, `recv`, ...) is an error
    that names it.
  }];
  let dependentDialects = ["mlir::bufferization::BufferizationDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::func::FuncDialect",
                           "mlir::arith::ArithDialect"];
}

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
