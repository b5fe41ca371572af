// Casts to and from f16 and bf16 on the CPU, bit for bit against numpy:
// ties to even, NaN, infinities, overflow to infinity, subnormals, f64 and
// i32 sources that a rounding through f32 would get wrong. Run for the host
// (F16C instructions for f16) and for plain x86-64 (no F16C: every f16
// conversion in integer arithmetic, --loom-cpu-expand-float-casts).
// The bf16 input `b` is given as float32 values: loom-run rounds them.
// `b_chain` and `h_chain` add a quarter ulp of 1 twice: each add rounds,
// so 1 stays 1 (an f32 chain without the roundings would give 1 + ulp).
// RUN: rm -rf %t && mkdir -p %t/host %t/x86-64
// RUN: %python %S/Inputs/low_precision.py cast-inputs %t/host
// RUN: %python %S/Inputs/low_precision.py cast-inputs %t/x86-64
// RUN: loomc compile %s -o %t/host.loom
// RUN: loom-run %t/host.loom --in x=%t/host/x.npy --in d=%t/host/d.npy --in i=%t/host/i.npy --in h=%t/host/h.npy --in b=%t/host/x.npy --out-dir %t/host
// RUN: %python %S/Inputs/low_precision.py cast-check %t/host | FileCheck %s
// RUN: loomc compile %s --cpu x86-64 -o %t/x86-64.loom
// RUN: loom-run %t/x86-64.loom --in x=%t/x86-64/x.npy --in d=%t/x86-64/d.npy --in i=%t/x86-64/i.npy --in h=%t/x86-64/h.npy --in b=%t/x86-64/x.npy --out-dir %t/x86-64
// RUN: %python %S/Inputs/low_precision.py cast-check %t/x86-64 | FileCheck %s
// CHECK-COUNT-16: : ok
// CHECK-NOT: MISMATCH

func.func @casts(%x: tensor<32xf32> {graph.input = "x"},
                 %d: tensor<32xf64> {graph.input = "d"},
                 %i: tensor<32xi32> {graph.input = "i"},
                 %h: tensor<32xf16> {graph.input = "h"},
                 %b: tensor<32xbf16> {graph.input = "b"})
    -> (tensor<32xbf16> {graph.output = "x_bf16"}, tensor<32xf16> {graph.output = "x_f16"},
        tensor<32xbf16> {graph.output = "d_bf16"}, tensor<32xf16> {graph.output = "d_f16"},
        tensor<32xbf16> {graph.output = "i_bf16"}, tensor<32xf16> {graph.output = "i_f16"},
        tensor<32xbf16> {graph.output = "b"}, tensor<32xf16> {graph.output = "b_f16"},
        tensor<32xf64> {graph.output = "b_f64"}, tensor<32xi32> {graph.output = "b_i32"},
        tensor<32xbf16> {graph.output = "h_bf16"}, tensor<32xf32> {graph.output = "h_f32"},
        tensor<32xf64> {graph.output = "h_f64"}, tensor<32xi32> {graph.output = "h_i32"},
        tensor<32xbf16> {graph.output = "b_chain"}, tensor<32xf16> {graph.output = "h_chain"}) {
  %x_bf16 = graph.cast %x to bf16 : tensor<32xf32>
  %x_f16 = graph.cast %x to f16 : tensor<32xf32>
  %d_bf16 = graph.cast %d to bf16 : tensor<32xf64>
  %d_f16 = graph.cast %d to f16 : tensor<32xf64>
  %i_bf16 = graph.cast %i to bf16 : tensor<32xi32>
  %i_f16 = graph.cast %i to f16 : tensor<32xi32>
  %b_f16 = graph.cast %b to f16 : tensor<32xbf16>
  %b_f64 = graph.cast %b to f64 : tensor<32xbf16>
  %b_i32 = graph.cast %b to i32 : tensor<32xbf16>
  %h_bf16 = graph.cast %h to bf16 : tensor<32xf16>
  %h_f32 = graph.cast %h to f32 : tensor<32xf16>
  %h_f64 = graph.cast %h to f64 : tensor<32xf16>
  %h_i32 = graph.cast %h to i32 : tensor<32xf16>
  %qb = graph.constant dense<0.00390625> : tensor<bf16>
  %b1 = graph.add %b, %qb : (tensor<32xbf16>, tensor<bf16>) -> tensor<32xbf16>
  %b_chain = graph.add %b1, %qb : (tensor<32xbf16>, tensor<bf16>) -> tensor<32xbf16>
  %qh = graph.constant dense<0.00048828125> : tensor<f16>
  %h1 = graph.add %h, %qh : (tensor<32xf16>, tensor<f16>) -> tensor<32xf16>
  %h_chain = graph.add %h1, %qh : (tensor<32xf16>, tensor<f16>) -> tensor<32xf16>
  return %x_bf16, %x_f16, %d_bf16, %d_f16, %i_bf16, %i_f16, %b, %b_f16, %b_f64, %b_i32,
         %h_bf16, %h_f32, %h_f64, %h_i32, %b_chain, %h_chain
      : tensor<32xbf16>, tensor<32xf16>, tensor<32xbf16>, tensor<32xf16>, tensor<32xbf16>,
        tensor<32xf16>, tensor<32xbf16>, tensor<32xf16>, tensor<32xf64>, tensor<32xi32>,
        tensor<32xbf16>, tensor<32xf32>, tensor<32xf64>, tensor<32xi32>, tensor<32xbf16>,
        tensor<32xf16>
}
