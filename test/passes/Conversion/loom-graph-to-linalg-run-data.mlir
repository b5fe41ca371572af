// Data movement (slice, concat, gather, gather_elements, embedding, pad,
// trilu, cumsum) computes the right elements, on static and dynamic
// shapes. Expected values: NumPy 1.24 (x[::-1, 1:-1], np.take,
// np.take_along_axis, np.pad modes, np.tril/np.triu, np.cumsum).
// RUN: loom-opt --loom-graph-to-linalg %s \
// RUN: | mlir-opt --one-shot-bufferize="bufferize-function-boundaries" \
// RUN:     --buffer-deallocation-pipeline --convert-bufferization-to-memref \
// RUN:     --convert-linalg-to-loops --convert-scf-to-cf --expand-strided-metadata \
// RUN:     --lower-affine --convert-math-to-libm --convert-math-to-llvm \
// RUN:     --convert-arith-to-llvm --finalize-memref-to-llvm --convert-func-to-llvm \
// RUN:     --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s


// Slices with negative steps, the INT64_MIN sentinel and clamped ends,
// on a static and on a dynamic tensor (the run-time arithmetic).
func.func @slices(%x: tensor<3x4xi32>, %xd: tensor<?x?xi32>)
    -> (tensor<3x2xi32>, tensor<?x?xi32>, tensor<1x2xi32>, tensor<?x?xi32>, tensor<2x2xi32>, tensor<?x?xi32>) {
  %0 = graph.slice %x starts = [-1, 1] ends = [-9223372036854775808, -1] steps = [-1, 1] : (tensor<3x4xi32>) -> tensor<3x2xi32>
  %1 = graph.slice %xd starts = [-1, 1] ends = [-9223372036854775808, -1] steps = [-1, 1] : (tensor<?x?xi32>) -> tensor<?x?xi32>
  %2 = graph.slice %x starts = [2, 3] ends = [0, -9223372036854775808] steps = [-2, -2] : (tensor<3x4xi32>) -> tensor<1x2xi32>
  %3 = graph.slice %xd starts = [2, 3] ends = [0, -9223372036854775808] steps = [-2, -2] : (tensor<?x?xi32>) -> tensor<?x?xi32>
  %4 = graph.slice %x starts = [0, 1] ends = [3, 100] steps = [2, 2] : (tensor<3x4xi32>) -> tensor<2x2xi32>
  %5 = graph.slice %xd starts = [0, 1] ends = [3, 100] steps = [2, 2] : (tensor<?x?xi32>) -> tensor<?x?xi32>
  return %0, %1, %2, %3, %4, %5 : tensor<3x2xi32>, tensor<?x?xi32>, tensor<1x2xi32>, tensor<?x?xi32>, tensor<2x2xi32>, tensor<?x?xi32>
}

func.func @concat(%a: tensor<3x?xi32>, %b: tensor<3x1xi32>) -> tensor<3x?xi32> {
  %0 = graph.concat %a, %b axis = 1 : (tensor<3x?xi32>, tensor<3x1xi32>) -> tensor<3x?xi32>
  return %0 : tensor<3x?xi32>
}

// Negative indices count from the end.
func.func @gathers(%d: tensor<?x2xf32>, %i: tensor<2x2xi64>, %j: tensor<3xi32>, %k: tensor<3x2xi64>, %ids: tensor<2xi64>)
    -> (tensor<2x2x2xf32>, tensor<?x3xf32>, tensor<3x2xf32>, tensor<2x2xf32>) {
  %0 = graph.gather %d, %i axis = 0 : (tensor<?x2xf32>, tensor<2x2xi64>) -> tensor<2x2x2xf32>
  %1 = graph.gather %d, %j axis = 1 : (tensor<?x2xf32>, tensor<3xi32>) -> tensor<?x3xf32>
  %2 = graph.gather_elements %d, %k axis = 1 : (tensor<?x2xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  %3 = graph.embedding %d, %ids : (tensor<?x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  return %0, %1, %2, %3 : tensor<2x2x2xf32>, tensor<?x3xf32>, tensor<3x2xf32>, tensor<2x2xf32>
}

func.func @pads(%x: tensor<2x?xi32>) -> (tensor<3x?xi32>, tensor<4x?xi32>, tensor<3x?xi32>) {
  %0 = graph.pad %x pads = [1, 0, 0, 2] mode = constant {value = 7.0 : f64} : (tensor<2x?xi32>) -> tensor<3x?xi32>
  %1 = graph.pad %x pads = [1, 2, 1, 1] mode = reflect : (tensor<2x?xi32>) -> tensor<4x?xi32>
  %2 = graph.pad %x pads = [0, 2, 1, 0] mode = edge : (tensor<2x?xi32>) -> tensor<3x?xi32>
  return %0, %1, %2 : tensor<3x?xi32>, tensor<4x?xi32>, tensor<3x?xi32>
}

func.func @trilu(%x: tensor<3x4xi32>) -> (tensor<3x4xi32>, tensor<3x4xi32>, tensor<3x4xi32>) {
  %0 = graph.trilu %x k = 0 : (tensor<3x4xi32>) -> tensor<3x4xi32>
  %1 = graph.trilu %x upper k = 1 : (tensor<3x4xi32>) -> tensor<3x4xi32>
  %2 = graph.trilu %x k = -1 : (tensor<3x4xi32>) -> tensor<3x4xi32>
  return %0, %1, %2 : tensor<3x4xi32>, tensor<3x4xi32>, tensor<3x4xi32>
}

func.func @cumsum(%c: tensor<2x?xi32>) -> (tensor<2x?xi32>, tensor<2x?xi32>, tensor<2x?xi32>, tensor<2x?xi32>) {
  %0 = graph.cumsum %c axis = 1 : (tensor<2x?xi32>) -> tensor<2x?xi32>
  %1 = graph.cumsum %c axis = 1 exclusive : (tensor<2x?xi32>) -> tensor<2x?xi32>
  %2 = graph.cumsum %c axis = 1 reverse : (tensor<2x?xi32>) -> tensor<2x?xi32>
  %3 = graph.cumsum %c axis = 1 exclusive reverse : (tensor<2x?xi32>) -> tensor<2x?xi32>
  return %0, %1, %2, %3 : tensor<2x?xi32>, tensor<2x?xi32>, tensor<2x?xi32>, tensor<2x?xi32>
}

func.func private @printMemrefF32(tensor<*xf32>)
func.func private @printMemrefI32(tensor<*xi32>)

func.func @main() {
  %x = arith.constant dense<[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]> : tensor<3x4xi32>
  %xd = tensor.cast %x : tensor<3x4xi32> to tensor<?x?xi32>
  %s:6 = call @slices(%x, %xd) : (tensor<3x4xi32>, tensor<?x?xi32>)
      -> (tensor<3x2xi32>, tensor<?x?xi32>, tensor<1x2xi32>, tensor<?x?xi32>, tensor<2x2xi32>, tensor<?x?xi32>)
  %su0 = tensor.cast %s#0 : tensor<3x2xi32> to tensor<*xi32>
  call @printMemrefI32(%su0) : (tensor<*xi32>) -> ()
  %su1 = tensor.cast %s#1 : tensor<?x?xi32> to tensor<*xi32>
  call @printMemrefI32(%su1) : (tensor<*xi32>) -> ()
  %su2 = tensor.cast %s#2 : tensor<1x2xi32> to tensor<*xi32>
  call @printMemrefI32(%su2) : (tensor<*xi32>) -> ()
  %su3 = tensor.cast %s#3 : tensor<?x?xi32> to tensor<*xi32>
  call @printMemrefI32(%su3) : (tensor<*xi32>) -> ()
  %su4 = tensor.cast %s#4 : tensor<2x2xi32> to tensor<*xi32>
  call @printMemrefI32(%su4) : (tensor<*xi32>) -> ()
  %su5 = tensor.cast %s#5 : tensor<?x?xi32> to tensor<*xi32>
  call @printMemrefI32(%su5) : (tensor<*xi32>) -> ()
  %a = tensor.extract_slice %x[0, 0] [3, 2] [1, 1] : tensor<3x4xi32> to tensor<3x2xi32>
  %ad = tensor.cast %a : tensor<3x2xi32> to tensor<3x?xi32>
  %b = tensor.extract_slice %x[0, 1] [3, 1] [1, 1] : tensor<3x4xi32> to tensor<3x1xi32>
  %cc = call @concat(%ad, %b) : (tensor<3x?xi32>, tensor<3x1xi32>) -> tensor<3x?xi32>
  %ccu0 = tensor.cast %cc : tensor<3x?xi32> to tensor<*xi32>
  call @printMemrefI32(%ccu0) : (tensor<*xi32>) -> ()
  %d = arith.constant dense<[[0.0, 1.5], [3.0, 4.5], [6.0, 7.5], [9.0, 10.5], [12.0, 13.5]]> : tensor<5x2xf32>
  %dd = tensor.cast %d : tensor<5x2xf32> to tensor<?x2xf32>
  %i = arith.constant dense<[[0, -1], [2, -5]]> : tensor<2x2xi64>
  %j = arith.constant dense<[-1, 0, 1]> : tensor<3xi32>
  %k = arith.constant dense<[[1, 0], [0, -1], [-2, 1]]> : tensor<3x2xi64>
  %ids = arith.constant dense<[4, 1]> : tensor<2xi64>
  %g:4 = call @gathers(%dd, %i, %j, %k, %ids) : (tensor<?x2xf32>, tensor<2x2xi64>, tensor<3xi32>, tensor<3x2xi64>, tensor<2xi64>)
      -> (tensor<2x2x2xf32>, tensor<?x3xf32>, tensor<3x2xf32>, tensor<2x2xf32>)
  %gu0 = tensor.cast %g#0 : tensor<2x2x2xf32> to tensor<*xf32>
  call @printMemrefF32(%gu0) : (tensor<*xf32>) -> ()
  %gu1 = tensor.cast %g#1 : tensor<?x3xf32> to tensor<*xf32>
  call @printMemrefF32(%gu1) : (tensor<*xf32>) -> ()
  %gu2 = tensor.cast %g#2 : tensor<3x2xf32> to tensor<*xf32>
  call @printMemrefF32(%gu2) : (tensor<*xf32>) -> ()
  %gu3 = tensor.cast %g#3 : tensor<2x2xf32> to tensor<*xf32>
  call @printMemrefF32(%gu3) : (tensor<*xf32>) -> ()
  %p = tensor.extract_slice %x[0, 0] [2, 3] [1, 1] : tensor<3x4xi32> to tensor<2x3xi32>
  %pd = tensor.cast %p : tensor<2x3xi32> to tensor<2x?xi32>
  %pp:3 = call @pads(%pd) : (tensor<2x?xi32>) -> (tensor<3x?xi32>, tensor<4x?xi32>, tensor<3x?xi32>)
  %ppu0 = tensor.cast %pp#0 : tensor<3x?xi32> to tensor<*xi32>
  call @printMemrefI32(%ppu0) : (tensor<*xi32>) -> ()
  %ppu1 = tensor.cast %pp#1 : tensor<4x?xi32> to tensor<*xi32>
  call @printMemrefI32(%ppu1) : (tensor<*xi32>) -> ()
  %ppu2 = tensor.cast %pp#2 : tensor<3x?xi32> to tensor<*xi32>
  call @printMemrefI32(%ppu2) : (tensor<*xi32>) -> ()
  %t:3 = call @trilu(%x) : (tensor<3x4xi32>) -> (tensor<3x4xi32>, tensor<3x4xi32>, tensor<3x4xi32>)
  %tu0 = tensor.cast %t#0 : tensor<3x4xi32> to tensor<*xi32>
  call @printMemrefI32(%tu0) : (tensor<*xi32>) -> ()
  %tu1 = tensor.cast %t#1 : tensor<3x4xi32> to tensor<*xi32>
  call @printMemrefI32(%tu1) : (tensor<*xi32>) -> ()
  %tu2 = tensor.cast %t#2 : tensor<3x4xi32> to tensor<*xi32>
  call @printMemrefI32(%tu2) : (tensor<*xi32>) -> ()
  %c = arith.constant dense<[[1, 2, 3, 4], [10, 20, 30, 40]]> : tensor<2x4xi32>
  %cd = tensor.cast %c : tensor<2x4xi32> to tensor<2x?xi32>
  %cs:4 = call @cumsum(%cd) : (tensor<2x?xi32>) -> (tensor<2x?xi32>, tensor<2x?xi32>, tensor<2x?xi32>, tensor<2x?xi32>)
  %csu0 = tensor.cast %cs#0 : tensor<2x?xi32> to tensor<*xi32>
  call @printMemrefI32(%csu0) : (tensor<*xi32>) -> ()
  %csu1 = tensor.cast %cs#1 : tensor<2x?xi32> to tensor<*xi32>
  call @printMemrefI32(%csu1) : (tensor<*xi32>) -> ()
  %csu2 = tensor.cast %cs#2 : tensor<2x?xi32> to tensor<*xi32>
  call @printMemrefI32(%csu2) : (tensor<*xi32>) -> ()
  %csu3 = tensor.cast %cs#3 : tensor<2x?xi32> to tensor<*xi32>
  call @printMemrefI32(%csu3) : (tensor<*xi32>) -> ()
  return
}

// x[::-1, 1:-1] (static, then dynamic)
// CHECK: sizes = [3, 2]
// CHECK-NEXT: {{\[}}{{\[}}9, 10]
// CHECK-NEXT: [5, 6]
// CHECK-NEXT: [1, 2]]
// CHECK: sizes = [3, 2]
// CHECK-NEXT: {{\[}}{{\[}}9, 10]
// CHECK-NEXT: [5, 6]
// CHECK-NEXT: [1, 2]]
// x[2:0:-2, 3::-2]
// CHECK: sizes = [1, 2]
// CHECK-NEXT: {{\[}}{{\[}}11, 9]]
// CHECK: sizes = [1, 2]
// CHECK-NEXT: {{\[}}{{\[}}11, 9]]
// x[0:3:2, 1:100:2]
// CHECK: sizes = [2, 2]
// CHECK-NEXT: {{\[}}{{\[}}1, 3]
// CHECK-NEXT: [9, 11]]
// CHECK: sizes = [2, 2]
// CHECK-NEXT: {{\[}}{{\[}}1, 3]
// CHECK-NEXT: [9, 11]]
// concat(x[:, :2], x[:, 1:2], axis 1)
// CHECK: sizes = [3, 3]
// CHECK-NEXT: {{\[}}{{\[}}0, 1, 1]
// CHECK-NEXT: [4, 5, 5]
// CHECK-NEXT: [8, 9, 9]]
// d[[[0, -1], [2, -5]]]
// CHECK: sizes = [2, 2, 2]
// CHECK-NEXT: {{\[}}{{\[}}{{\[}}0, 1.5]
// CHECK-NEXT: [12, 13.5]]
// CHECK-NEXT: {{\[}}{{\[}}6, 7.5]
// CHECK-NEXT: [0, 1.5]]]
// np.take(d, [-1, 0, 1], axis=1)
// CHECK: sizes = [5, 3]
// CHECK-NEXT: {{\[}}{{\[}}1.5, 0, 1.5]
// CHECK-NEXT: [4.5, 3, 4.5]
// CHECK-NEXT: [7.5, 6, 7.5]
// CHECK-NEXT: [10.5, 9, 10.5]
// CHECK-NEXT: [13.5, 12, 13.5]]
// np.take_along_axis(d[:3], k % 2, axis=1)
// CHECK: sizes = [3, 2]
// CHECK-NEXT: {{\[}}{{\[}}1.5, 0]
// CHECK-NEXT: [3, 4.5]
// CHECK-NEXT: [6, 7.5]]
// embedding rows 4, 1
// CHECK: sizes = [2, 2]
// CHECK-NEXT: {{\[}}{{\[}}12, 13.5]
// CHECK-NEXT: [3, 4.5]]
// np.pad constant 7
// CHECK: sizes = [3, 5]
// CHECK-NEXT: {{\[}}{{\[}}7, 7, 7, 7, 7]
// CHECK-NEXT: [0, 1, 2, 7, 7]
// CHECK-NEXT: [4, 5, 6, 7, 7]]
// np.pad reflect
// CHECK: sizes = [4, 6]
// CHECK-NEXT: {{\[}}{{\[}}6, 5, 4, 5, 6, 5]
// CHECK-NEXT: [2, 1, 0, 1, 2, 1]
// CHECK-NEXT: [6, 5, 4, 5, 6, 5]
// CHECK-NEXT: [2, 1, 0, 1, 2, 1]]
// np.pad edge
// CHECK: sizes = [3, 5]
// CHECK-NEXT: {{\[}}{{\[}}0, 0, 0, 1, 2]
// CHECK-NEXT: [4, 4, 4, 5, 6]
// CHECK-NEXT: [4, 4, 4, 5, 6]]
// np.tril(x)
// CHECK: sizes = [3, 4]
// CHECK-NEXT: {{\[}}{{\[}}0, 0, 0, 0]
// CHECK-NEXT: [4, 5, 0, 0]
// CHECK-NEXT: [8, 9, 10, 0]]
// np.triu(x, 1)
// CHECK: sizes = [3, 4]
// CHECK-NEXT: {{\[}}{{\[}}0, 1, 2, 3]
// CHECK-NEXT: [0, 0, 6, 7]
// CHECK-NEXT: [0, 0, 0, 11]]
// np.tril(x, -1)
// CHECK: sizes = [3, 4]
// CHECK-NEXT: {{\[}}{{\[}}0, 0, 0, 0]
// CHECK-NEXT: [4, 0, 0, 0]
// CHECK-NEXT: [8, 9, 0, 0]]
// np.cumsum
// CHECK: sizes = [2, 4]
// CHECK-NEXT: {{\[}}{{\[}}1, 3, 6, 10]
// CHECK-NEXT: [10, 30, 60, 100]]
// exclusive
// CHECK: sizes = [2, 4]
// CHECK-NEXT: {{\[}}{{\[}}0, 1, 3, 6]
// CHECK-NEXT: [0, 10, 30, 60]]
// reverse
// CHECK: sizes = [2, 4]
// CHECK-NEXT: {{\[}}{{\[}}10, 9, 7, 4]
// CHECK-NEXT: [100, 90, 70, 40]]
// exclusive reverse
// CHECK: sizes = [2, 4]
// CHECK-NEXT: {{\[}}{{\[}}9, 7, 4, 0]
// CHECK-NEXT: [90, 70, 40, 0]]
