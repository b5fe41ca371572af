//===- ExecOps.td - exec dialect operations ----------------*- tablegen -*-===//
//
// Verifier rules carry a tag (`buffer_c3`) that ExecOps.cpp and
// test/dialects/exec/invalid.mlir share.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_EXEC_EXECOPS_TD
#define LOOM_DIALECTS_EXEC_EXECOPS_TD

include "dialects/exec/ExecBase.td"

def Exec_PlanOp : Exec_Op<"plan", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "the static memory plan of one function: its slots";
  let description = [{
    Declares the slots that the buffers of one function live in:

    * slot 0, the arena: `arena` bytes, known at compile time, holding every
      static-size buffer at a fixed offset;
    * slots 1 to `dynamic_slots`: one dynamic-size buffer at a time each,
      as large at run time as the largest buffer placed in it;
    * `alignment`: a power of two that every offset in the arena is a
      multiple of, so that each buffer is as aligned as the arena's base,
      up to `alignment` (64 bytes: a cache line and any vector load; the
      CPU runtime's slots are 64-byte aligned).

    The plan is a symbol op at module level rather than an attribute of
    the function: buffers name it (`exec.buffer @f_plan ...`), so their
    verifier can check slot, offset and size against it wherever they are
    nested; the runtime and a GPU backend find every plan of a module by
    walking its top level, whatever op the function is (`func.func` on the
    CPU, a launch sequence later).

    Example: a 2 KiB arena and two dynamic slots, the plan of `@f`.

    ```mlir
    exec.plan @f_plan arena 2048 dynamic_slots 2 alignment 64
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Exec_I64Attr:$arena,
                       Exec_I64Attr:$dynamic_slots, Exec_I64Attr:$alignment);
  let assemblyFormat = [{
    $sym_name `arena` $arena `dynamic_slots` $dynamic_slots
    `alignment` $alignment attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether `slot` is a slot of this plan.
    bool hasSlot(int64_t slot) {
      return slot >= 0 && slot <= getDynamicSlots();
    }
  }];
}

def Exec_BufferOp : Exec_Op<"buffer", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a buffer at its place in a memory plan";
  let description = [{
    A memref in slot `slot` of the plan `plan`. A static-size buffer lies
    in the arena (slot 0) at byte `offset`; a dynamic-size buffer starts
    its dynamic slot, and its sizes are operands, one per dynamic dim. The
    layout is the identity: the bytes are contiguous.

    The buffer needs no deallocation: its bytes belong to the slot, and
    another buffer of the plan may reuse them once this one is dead.
    Because of that reuse `exec.buffer` has an allocation effect: it is
    not folded with an identical buffer nor hoisted.

    Example: a 16 KiB buffer at offset 128 of the arena, and a dynamic
    batch of rows in slot 2.

    ```mlir
    exec.plan @f_plan arena 16512 dynamic_slots 2 alignment 64
    func.func @f(%n: index) {
      %a = exec.buffer @f_plan slot 0 offset 128 : memref<64x64xf32>
      %b = exec.buffer @f_plan slot 2 [%n] : memref<?x64xf32>
      return
    }
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$plan, Exec_I64Attr:$slot,
                       DefaultValuedAttr<Exec_I64Attr, "0">:$offset,
                       Variadic<Index>:$dynamic_sizes);
  let results = (outs Res<Exec_MemRef, "",
                          [MemAlloc<DefaultResource, 0, FullEffect>]>:$result);
  let assemblyFormat = [{
    $plan `slot` $slot (`offset` $offset^)? (` ` `[` $dynamic_sizes^ `]`)?
    attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    mlir::MemRefType getType() { return getResult().getType(); }
  }];
}

#endif // LOOM_DIALECTS_EXEC_EXECOPS_TD
