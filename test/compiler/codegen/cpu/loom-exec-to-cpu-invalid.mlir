// RUN: loom-opt --loom-exec-to-cpu %s -split-input-file -verify-diagnostics

// What the CPU lowering rejects: one function's buffers in two plans (the
// runtime has one arena per run), and buffers outside host memory.

exec.plan @a arena 64 dynamic_slots 0 alignment 64
exec.plan @b arena 64 dynamic_slots 0 alignment 64
func.func @two_plans() {
  %0 = exec.buffer @a slot 0 : memref<4xf32>
  // expected-error @+1 {{'exec.buffer' op names plan 'b' but another buffer of 'two_plans' names 'a'; the CPU lowering takes one plan per function}}
  %1 = exec.buffer @b slot 0 : memref<4xf32>
  return
}

// -----

exec.plan @p arena 64 dynamic_slots 0 alignment 64
func.func @memory_space() {
  // expected-error @+1 {{'exec.buffer' op is in memory space 1 : i64; the CPU runtime's slots are host memory}}
  %0 = exec.buffer @p slot 0 : memref<4xf32, 1>
  return
}
