//===- ExecBase.td - exec dialect base definitions ---------*- tablegen -*-===//
//
// The `exec` dialect: the program the runtime runs, starting with where its
// buffers live (a static memory plan).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_EXEC_EXECBASE_TD
#define LOOM_DIALECTS_EXEC_EXECBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Exec_Dialect : Dialect {
  let name = "exec";
  let cppNamespace = "::loom::exec";
  let summary = "The runtime program: buffers placed by a static memory plan";
  let description = [{
    The `exec` dialect describes what the runtime does when it runs a
    compiled function, independently of the device that runs it. Today it
    holds the static memory plan:

    * `exec.plan` declares a function's slots: slot 0 is one arena of a
      size known at compile time, in which every static-size intermediate
      buffer has an offset; slots 1 to N hold dynamic-size buffers (a
      dynamic batch), each as large at run time as the largest buffer
      placed in it. The runtime keeps the slots of a run context across
      runs, so after the first run nothing is allocated.
    * `exec.buffer` is a memref in a slot of a plan.

    Two buffers of one plan may share bytes only when their live ranges (an
    `exec.buffer` to the last use of its result or of a view of it, in
    program order) are disjoint; the pass that makes the plan
    (`--loom-cpu-memory-plan`) guarantees it, so passes must not move an
    `exec.buffer` earlier. Backends lower the ops: on the CPU
    `--loom-exec-to-cpu` asks the runtime for each slot with
    `loom_rt_slot(slot, bytes)` and takes `memref.view`s of it; a GPU
    backend can allocate the same plan as one device arena.
  }];
}

class Exec_Op<string mnemonic, list<Trait> traits = []>
    : Op<Exec_Dialect, mnemonic, traits>;

/// A 64-bit integer read as signed, so that verifiers see negative values.
def Exec_I64Attr : TypedSignlessIntegerAttrBase<I64, "int64_t",
                                               "64-bit signless integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

/// Element types that have a byte size (i1 takes one byte).
def Exec_MemRef : MemRefOf<[AnyInteger, AnyFloat, Index]>;

#endif // LOOM_DIALECTS_EXEC_EXECBASE_TD
