// RUN: loom-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of the exec dialect; each case is named after
// the rule tag used in ExecOps.cpp.

// plan_c1: the arena has a size.
// expected-error @+1 {{'exec.plan' op arena must be >= 0 bytes, got -64}}
exec.plan @plan_c1 arena -64 dynamic_slots 0 alignment 64

// -----

// plan_c2: a count of dynamic slots.
// expected-error @+1 {{'exec.plan' op dynamic_slots must be >= 0, got -1}}
exec.plan @plan_c2 arena 0 dynamic_slots -1 alignment 64

// -----

// plan_c3: the alignment is a power of two.
// expected-error @+1 {{'exec.plan' op alignment must be a power of two, got 48}}
exec.plan @plan_c3 arena 0 dynamic_slots 0 alignment 48

// -----

// plan_parent: a plan lives at module level.
func.func @plan_parent() {
  // expected-error @+1 {{'exec.plan' op expects parent op 'builtin.module'}}
  "exec.plan"() <{sym_name = "p", arena = 0 : i64, dynamic_slots = 0 : i64, alignment = 64 : i64}> : () -> ()
  return
}

// -----

// buffer_c1: contiguous bytes, the identity layout.
exec.plan @p arena 1024 dynamic_slots 1 alignment 64
func.func @buffer_c1() {
  // expected-error @+1 {{'exec.buffer' op needs the identity layout, got 'memref<4x4xf32, strided<[8, 1]>>'}}
  %0 = exec.buffer @p slot 0 : memref<4x4xf32, strided<[8, 1]>>
  return
}

// -----

// buffer_c2: one size operand per dynamic dim.
exec.plan @p arena 1024 dynamic_slots 1 alignment 64
func.func @buffer_c2(%n: index) {
  // expected-error @+1 {{'exec.buffer' op has 1 size operands for 2 dynamic dims of 'memref<?x?xf32>'}}
  %0 = exec.buffer @p slot 1 [%n] : memref<?x?xf32>
  return
}

// -----

// buffer_c3: the plan exists.
func.func @buffer_c3() {
  // expected-error @+1 {{'exec.buffer' op 'nowhere' is not an exec.plan}}
  %0 = exec.buffer @nowhere slot 0 : memref<4xf32>
  return
}

// -----

// buffer_c4: the slot exists.
exec.plan @p arena 1024 dynamic_slots 1 alignment 64
func.func @buffer_c4(%n: index) {
  // expected-error @+1 {{'exec.buffer' op slot 2 is not a slot of 'p' (0 to 1)}}
  %0 = exec.buffer @p slot 2 [%n] : memref<?xf32>
  return
}

// -----

// buffer_c5: the offset is aligned.
exec.plan @p arena 1024 dynamic_slots 1 alignment 64
func.func @buffer_c5() {
  // expected-error @+1 {{'exec.buffer' op offset 96 is not a multiple of the alignment 64}}
  %0 = exec.buffer @p slot 0 offset 96 : memref<4xf32>
  return
}

// -----

// buffer_c6: a static-size buffer lies in the arena.
exec.plan @p arena 1024 dynamic_slots 1 alignment 64
func.func @buffer_c6() {
  // expected-error @+1 {{'exec.buffer' op static-size buffer in dynamic slot 1}}
  %0 = exec.buffer @p slot 1 : memref<4xf32>
  return
}

// -----

// buffer_c7: a static-size buffer fits in the arena (768 + 256 > 1000).
exec.plan @p arena 1000 dynamic_slots 1 alignment 64
func.func @buffer_c7() {
  // expected-error @+1 {{'exec.buffer' op bytes [768, 1024) do not fit in the 1000-byte arena}}
  %0 = exec.buffer @p slot 0 offset 768 : memref<64xf32>
  return
}

// -----

// buffer_c8: a dynamic-size buffer only in a dynamic slot.
exec.plan @p arena 1024 dynamic_slots 1 alignment 64
func.func @buffer_c8(%n: index) {
  // expected-error @+1 {{'exec.buffer' op dynamic-size buffer in the arena (slot 0)}}
  %0 = exec.buffer @p slot 0 [%n] : memref<?xf32>
  return
}

// -----

// buffer_c9: a dynamic-size buffer starts its slot.
exec.plan @p arena 1024 dynamic_slots 1 alignment 64
func.func @buffer_c9(%n: index) {
  // expected-error @+1 {{'exec.buffer' op dynamic-size buffer at offset 64 of its slot, not 0}}
  %0 = exec.buffer @p slot 1 offset 64 [%n] : memref<?xf32>
  return
}

// -----

// ods_element_type: elements with a byte size.
exec.plan @p arena 1024 dynamic_slots 1 alignment 64
func.func @ods_element_type() {
  // expected-error @+1 {{'exec.buffer' op result #0 must be memref of integer or floating-point or index values}}
  %0 = exec.buffer @p slot 0 : memref<4xcomplex<f32>>
  return
}
