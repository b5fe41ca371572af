//===- Passes.td - passes of the CPU code path -------------*- tablegen -*-===//
//
// Every pass of the CPU code path, in pipeline order where it matters
// (CpuCodegen.cpp's buildCpuLoweringPipeline says why each is there). Each
// has a lit test named after its flag in test/compiler/codegen/cpu/.
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
    (loom/common/CodegenAbi.h): one call for the arena (slot 0) at the
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

def CpuFusionPass : Pass<"loom-cpu-fusion"> {
  let summary = "fuse elementwise linalg ops, never into a matmul nor across "
                "a kernel.fusion boundary";
  let description = [{
    On tensors: fuses elementwise `linalg.generic` producers into their
    consumers (an elementwise chain, or a chain feeding a reduction, becomes
    one loop nest), except into a matmul contraction, which stays a library
    call. A producer with several users is computed once and stored, not
    recomputed inside each. `kernel.fusion` regions are isolated from above,
    so nothing fuses across their boundaries; a region whose body folds away
    is replaced by the operands it forwards.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def CpuInlineKernelsPass : Pass<"loom-cpu-inline-kernels"> {
  let summary = "inline each kernel.fusion body into its parent, its ops' "
                "locations tagged with the region's name";
  let description = [{
    Inlines the body of each `kernel.fusion` into its parent, once the ops
    of each region are lowered and fused among themselves; each inlined op's
    location becomes a `FusedLoc` whose metadata is the region's name, so
    the profile hooks can name kernels after their region.
  }];
}

def CpuMathApproximationPass : Pass<"loom-cpu-math-approximation"> {
  let summary = "transcendental math ops as inline polynomials; fast-math "
                "flags (contract; reassoc in reductions) in linalg bodies";
  let description = [{
    Replaces tanh, exp, log, erf and the other transcendental math ops by
    MLIR's polynomial approximations (inline arithmetic that LLVM can
    vectorize, accurate to a few ulp in f32) instead of scalar libm calls;
    f32 erf as one rational function (4.5e-7 from erf at most, a third of
    the work of MLIR's piecewise one).
    In `linalg.generic` bodies, arithmetic gets the `contract` fast-math
    flag, and `reassoc` too in reductions (so LLVM vectorizes them);
    float conversions get none (extf(truncf(x)) must not fold to x).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def CpuLibraryCallsPass : Pass<"loom-cpu-library-calls", "mlir::ModuleOp"> {
  let summary = "f32 matmuls and convolutions to the runtime's kernels";
  let description = [{
    On buffers: replaces each f32 matmul contraction that loom-graph-to-linalg
    emits, and each f32 `linalg.conv_2d_nchw_fchw`, by a call to the
    runtime's kernels (`loom_cpu_matmul_f32`, `loom_cpu_conv2d_nchw_f32` in
    loom/common/CodegenAbi.h; OpenBLAS behind them).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect"];
}

def CpuProfileHooksPass : Pass<"loom-cpu-profile-hooks", "mlir::ModuleOp"> {
  let summary = "bracket each kernel with the runtime's profiling hooks";
  let description = [{
    On buffers, in each public function: brackets each kernel (a linalg op,
    a library call, a `memref.copy`) with calls to the runtime's profiling
    hooks `loom_rt_profile_begin/end(i64 id)`, and records the kernels'
    names (op, fused body, shape, source location) in the module attribute
    `loom.kernels`, indexed by id.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
}

def CpuScalarAccumulatorsPass
    : Pass<"loom-cpu-scalar-accumulators", "mlir::ModuleOp"> {
  let summary = "reduce into a stack scalar (copied in and out) instead of "
                "a rank-0 buffer of the arena, so the sum stays in a register";
  let description = [{
    On buffers: a reduction into a rank-0 buffer (a full sum, a squared
    norm) accumulates in a stack scalar of its own, copied in before and
    out after. The arena buffer and the input it reduces share one base
    pointer, so LLVM stored and reloaded the sum at every element and
    vectorized nothing (1 ms instead of 0.1 ms for 800 K floats); an
    alloca it keeps in a register.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def CpuParallelLoopsPass : Pass<"loom-cpu-parallel-loops", "mlir::ModuleOp"> {
  let summary = "outline loop nests with a parallel outer loop for the "
                "runtime's thread pool";
  let description = [{
    On buffers: outlines each `linalg.generic` whose outer loop is parallel
    into a function over a range of that loop, called through the runtime's
    thread pool (`loom_rt_parallel_for`); fills of a constant,
    transposes, copies and maps become such generics first. A generic that
    does not split is outlined whole (`loom_seq_N`) and called. After lowering to LLVM,
    `addParallelDispatchers()` defines the dispatchers. See
    ParallelLoops.cpp.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect"];
}

def CpuRuntimeChecksPass : Pass<"loom-cpu-runtime-checks", "mlir::ModuleOp"> {
  let summary = "turn cf.assert into calls of the runtime's loom_rt_fail";
  let description = [{
    Turns each `cf.assert` (a run-time check of a lowering) into a call of
    the runtime's `loom_rt_fail(message)` when it fails: the run returns an
    error status instead of aborting the process. See RuntimeChecks.cpp.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::func::FuncDialect"];
}

def CopyToLinalgPass : Pass<"loom-copy-to-linalg", "mlir::ModuleOp"> {
  let summary = "memref.copy to linalg.copy";
  let description = [{
    `memref.copy` (from bufferization and buffer clones) becomes
    `linalg.copy`, which lowers to loops like every other linalg op. The
    upstream lowering of a non-contiguous `memref.copy` calls `memrefCopy`
    from MLIR's runner utilities, a library the runtime does not have.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

#endif // LOOM_COMPILER_CODEGEN_CPU_PASSES_TD

def CpuStateInPlacePass : Pass<"loom-cpu-state-in-place", "mlir::ModuleOp"> {
  let summary = "write a training step's next state into its state "
                "arguments";
  let description = [{
    On tensors, before bufferization: for each [result, argument] pair of a
    function's `loom.state_in_place`, the returned value is materialized in
    the argument (`bufferization.materialize_in_destination`), which is
    marked writable, and the op computing it takes the argument as its init
    instead of an empty tensor, so that the update writes into the
    argument's buffer (a copy where it cannot). See StateInPlace.cpp.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect"];
}

def CpuDropInPlaceResultsPass
    : Pass<"loom-cpu-drop-in-place-results", "mlir::ModuleOp"> {
  let summary = "drop the results that --loom-cpu-state-in-place wrote into "
                "their arguments";
  let description = [{
    On buffers, after bufferization and before deallocation: each result
    of `loom.state_in_place` must now be its argument's buffer; it leaves
    the function's results (deallocation would clone it otherwise), and
    the attribute goes.
  }];
}
