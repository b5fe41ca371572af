// arg_max and arg_min over an input with unit dims before the reduced axis
// (a batch of 1): each kept dim of the input, unit or not, takes its place
// in the result's index. The emitter skipped the unit dims' places, so
// the dims after the axis read the index of a unit dim (always 0): every
// position returned the arg max of the first one (MaxPool's Indices
// output with pads, 16 of 25 wrong in the simulator). Run in the CUDA
// simulator against NumPy.
// RUN: loomc compile %s --target cuda -o %t.loom
// RUN: %python -c "import numpy as np; np.save('%t.x.npy', np.random.default_rng(0).standard_normal((1, 1, 6, 5)).astype(np.float32))"
// RUN: env LOOM_CUDA_CACHE=%t.cache loom-run %t.loom --device cuda-sim --in x=%t.x.npy --out-dir %t.out
// RUN: %python -c "import numpy as np; x = np.load('%t.x.npy'); a = np.load('%t.out/output_0.npy'); b = np.load('%t.out/output_1.npy'); print('ok' if (a == x.argmax(2)[:, :, None]).all() and (b == x.argmin(3)).all() else 'bad %%r %%r' %% (a, b))" | FileCheck %s
// CHECK: ok
func.func @f(%x: tensor<1x1x6x5xf32> {graph.input = "x"}) -> (tensor<1x1x1x5xi64>, tensor<1x1x6xi64>) {
  %a = graph.arg_max %x axis = 2 keepdims : (tensor<1x1x6x5xf32>) -> tensor<1x1x1x5xi64>
  %b = graph.arg_min %x axis = 3 : (tensor<1x1x6x5xf32>) -> tensor<1x1x6xi64>
  return %a, %b : tensor<1x1x1x5xi64>, tensor<1x1x6xi64>
}
