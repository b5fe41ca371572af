// RUN: loom-opt %s --loom-data-parallel="ranks=2" | FileCheck %s

// A cross-entropy mean over the labels that are not ignored: each rank
// counts its labels, the counts are summed over the ranks at the start,
// and the rank's loss and gradient are weighed by 2 * count / total before
// the mean over the ranks, so the result is the global batch's mean.

// CHECK-LABEL: func.func @f_grad
// CHECK: %[[IGN:.*]] = graph.constant dense<-100> : tensor<i64>
// CHECK: %[[NE:.*]] = graph.compare ne, %arg1, %[[IGN]]
// CHECK: %[[KEPT:.*]] = graph.cast %[[NE]] to f32
// CHECK: %[[COUNT:.*]] = graph.reduce_sum %[[KEPT]] axes = [0]
// CHECK: %[[TOTAL:.*]] = mesh.all_reduce %[[COUNT]] on @mesh mesh_axes = [0]
// CHECK: %[[N:.*]] = graph.mul %[[COUNT]], %{{.*}}
// CHECK: %[[W:.*]] = graph.div %[[N]], %{{.*}}
// CHECK: %[[LOSS:.*]] = graph.cross_entropy
// CHECK: %[[WL:.*]] = graph.mul %[[LOSS]], %[[W]]
// CHECK: mesh.all_reduce %[[WL]] on @mesh
// CHECK: %[[G:.*]] = graph.matmul %arg0, %{{.*}} {transpose_lhs}
// CHECK: %[[WG:.*]] = graph.mul %[[G]], %[[W]]
// CHECK: mesh.all_reduce %[[WG]] on @mesh

func.func @f_grad(%x: tensor<4x3xf32> {graph.input = "x"},
                  %labels: tensor<4xi64> {graph.input = "labels"},
                  %w: tensor<3x2xf32> {graph.param = "w"})
    -> (tensor<f32> {graph.output = "loss"},
        tensor<3x2xf32> {graph.grad_of = "w", graph.output = "w.grad"}) {
  %m = graph.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %loss = graph.cross_entropy %m, %labels reduction = mean {ignore_index = -100 : i64} : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<f32>
  %dm = graph.fill_like %m, 1.0 : f32 : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %g = graph.matmul %x, %dm {transpose_lhs} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %loss, %g : tensor<f32>, tensor<3x2xf32>
}
