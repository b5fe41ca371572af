// RUN: loom-opt %s -split-input-file -verify-diagnostics --loom-verify-collectives | FileCheck %s

// One program for every rank: every group agrees.
// CHECK-LABEL: func.func @spmd
mesh.mesh @mesh(shape = 2x2) {loom.axes = ["data", "tensor"]}
func.func @spmd(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = mesh.all_reduce %x on @mesh mesh_axes = [1] : tensor<4xf32> -> tensor<4xf32>
  %b = mesh.all_reduce %a on @mesh mesh_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// Two programs that issue the same collectives over the tensor axis in the
// same order: they agree.
// CHECK-LABEL: func.func @even
mesh.mesh @mesh(shape = 2) {loom.axes = ["tensor"]}
func.func @even(%x: tensor<4xf32>) -> tensor<4xf32> attributes {loom.ranks = array<i64: 0>} {
  %a = mesh.all_reduce %x on @mesh mesh_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  return %a : tensor<4xf32>
}
func.func @odd(%x: tensor<4xf32>) -> tensor<4xf32> attributes {loom.ranks = array<i64: 1>} {
  %y = arith.constant dense<1.0> : tensor<4xf32>
  %a = mesh.all_reduce %y on @mesh mesh_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// A planted defect: rank 1 all-gathers where rank 0 all-reduces.
mesh.mesh @mesh(shape = 2) {loom.axes = ["data"]}
func.func @r0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {loom.ranks = array<i64: 0>} {
  %a = mesh.all_reduce %x on @mesh mesh_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  // expected-error @+1 {{loom-verify-collectives: collective #1 of group {0, 1} differs: rank 0 issues mesh.all_reduce {mesh = @mesh, mesh_axes = array<i16: 0>, reduction = #mesh.partial<sum>} : (tensor<4xf32>) -> (tensor<4xf32>), rank 1 issues mesh.all_gather {gather_axis = 0 : index, mesh = @mesh, mesh_axes = array<i16: 0>} : (tensor<4xf32>) -> (tensor<8xf32>)}}
  %b = mesh.all_reduce %a on @mesh mesh_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  return %b : tensor<4xf32>
}
func.func @r1(%x: tensor<4xf32>) -> tensor<8xf32> attributes {loom.ranks = array<i64: 1>} {
  %a = mesh.all_reduce %x on @mesh mesh_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %b = mesh.all_gather %a on @mesh mesh_axes = [0] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
  return %b : tensor<8xf32>
}

// -----

// A planted defect: rank 1 never issues the second collective (a hang).
mesh.mesh @mesh(shape = 2) {loom.axes = ["data"]}
func.func @r0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {loom.ranks = array<i64: 0>} {
  %a = mesh.all_reduce %x on @mesh mesh_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  // expected-error @+1 {{collective #1 of group {0, 1} differs: rank 0 issues mesh.all_reduce}}
  %b = mesh.all_reduce %a on @mesh mesh_axes = [0] reduction = <max> : tensor<4xf32> -> tensor<4xf32>
  return %b : tensor<4xf32>
}
func.func @r1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {loom.ranks = array<i64: 1>} {
  %a = mesh.all_reduce %x on @mesh mesh_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// A collective some ranks may skip.
mesh.mesh @mesh(shape = 2) {loom.axes = ["data"]}
func.func @branch(%c: i1, %x: tensor<4xf32>) -> tensor<4xf32> {
  %r = scf.if %c -> tensor<4xf32> {
    // expected-error @+1 {{a collective inside 'scf.if': the ranks of its group may not all reach it}}
    %a = mesh.all_reduce %x on @mesh mesh_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    scf.yield %a : tensor<4xf32>
  } else {
    scf.yield %x : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// expected-error @+1 {{rank 1 runs no program}}
mesh.mesh @mesh(shape = 2) {loom.axes = ["data"]}
func.func @only0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {loom.ranks = array<i64: 0>} {
  %a = mesh.all_reduce %x on @mesh mesh_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  return %a : tensor<4xf32>
}
