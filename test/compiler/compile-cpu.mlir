// loomc compile turns graph IR into a .loom artifact that loom-run runs on
// the CPU: a dynamic batch (two different batch sizes, one artifact),
// weights moved into the artifact, several outputs, an integer output.
// RUN: loomc compile %s -o %t.loom
// RUN: %python -c "import numpy as np; np.save('%t.x2.npy', np.array([[1, 2, 3], [-1, -2, -3]], np.float32)); np.save('%t.x3.npy', np.arange(9, dtype=np.float32).reshape(3, 3) - 4)"
// RUN: loom-run %t.loom --in x=%t.x2.npy --print | FileCheck %s --check-prefix=B2
// RUN: loom-run %t.loom --in x=%t.x3.npy --print | FileCheck %s --check-prefix=B3

// A constant of 1 KiB or more is a weight: 256 x f32 here.
func.func @layer(%x: tensor<?x3xf32> {graph.input = "x", graph.dim_names = ["batch", ""]})
    -> (tensor<?x2xf32> {graph.output = "y"}, tensor<?xf32> {graph.output = "row_max"},
        tensor<?x2xi1> {graph.output = "positive"}, tensor<f32> {graph.output = "big_sum"}) {
  %w = graph.constant dense<[[1.0, -1.0], [0.5, 0.0], [0.0, 2.0]]> : tensor<3x2xf32>
  %b = graph.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %big = graph.constant dense<0.5> : tensor<256xf32>
  %0 = graph.matmul %x, %w : (tensor<?x3xf32>, tensor<3x2xf32>) -> tensor<?x2xf32>
  %1 = graph.add %0, %b : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %2 = graph.tanh %1 : tensor<?x2xf32>
  %3 = graph.reduce_max %x axes = [1] : (tensor<?x3xf32>) -> tensor<?xf32>
  %z = graph.fill_like %1, 0.0 : f32 : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %4 = graph.compare gt, %1, %z : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xi1>
  %5 = graph.reduce_sum %big axes = [0] : (tensor<256xf32>) -> tensor<f32>
  return %2, %3, %4, %5 : tensor<?x2xf32>, tensor<?xf32>, tensor<?x2xi1>, tensor<f32>
}

// Expected values from numpy. x @ w + b = [[2.5, 4], [-1.5, -6]]
// B2: y f32[2, 2] = 0.986614 0.999329 -0.905148 -0.999988
// B2-NEXT: row_max f32[2] = 3 -1
// B2-NEXT: positive bool[2, 2] = 1 1 0 0
// B2-NEXT: big_sum f32[] = 128

// rows [-4 -3 -2], [-1 0 1], [2 3 4]: x @ w + b = [[-5, -1], [-0.5, 2], [4, 5]]
// B3: y f32[3, 2] = -0.999909 -0.761594 -0.462117 0.964028 0.999329 0.999909
// B3-NEXT: row_max f32[3] = -2 1 4
// B3-NEXT: positive bool[3, 2] = 0 0 0 1 1 1
