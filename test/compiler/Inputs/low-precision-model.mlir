// The model of low-precision-run.test, with DT for the 16-bit float type
// (bf16 or f16): every kind of op the CPU backend widens to f32, and data
// movement it keeps in 16 bits.
func.func @model(%acc_in: tensor<4x512xDT> {graph.input = "acc_in"},
                 %a: tensor<8x64xDT> {graph.input = "a"},
                 %b: tensor<64x16xDT> {graph.input = "b"},
                 %x: tensor<2x3x8x8xDT> {graph.input = "x"},
                 %w: tensor<4x3x3x3xDT> {graph.input = "w"},
                 %e: tensor<4x16xDT> {graph.input = "e"},
                 %g: tensor<16xDT> {graph.input = "g"},
                 %bias: tensor<16xDT> {graph.input = "bias"},
                 %labels: tensor<4xi64> {graph.input = "labels"},
                 %table: tensor<10x16xDT> {graph.input = "table"},
                 %ids: tensor<5xi64> {graph.input = "ids"})
    -> (tensor<4x4xDT> {graph.output = "acc"}, tensor<8x16xDT> {graph.output = "mm"},
        tensor<2x4x6x6xDT> {graph.output = "conv"}, tensor<4x16xDT> {graph.output = "chain"},
        tensor<4x16xDT> {graph.output = "softmax"}, tensor<4x16xDT> {graph.output = "layer_norm"},
        tensor<4xDT> {graph.output = "reduce_sum"}, tensor<DT> {graph.output = "cross_entropy"},
        tensor<5x16xDT> {graph.output = "embedding"}, tensor<5x16xDT> {graph.output = "gather"},
        tensor<32x4xDT> {graph.output = "transpose_concat"}, tensor<4x16xi1> {graph.output = "compare"}) {
  // Rows of 64 then 511 halves, times themselves: 4096 + 511 * 0.25 =
  // 4223.75, which rounds to 4224 from an f32 accumulator; a 16-bit one
  // stays at 4096 (0.25 is under half its ulp there).
  %acc_t = graph.transpose %acc_in [1, 0] : (tensor<4x512xDT>) -> tensor<512x4xDT>
  %acc = graph.matmul %acc_in, %acc_t : (tensor<4x512xDT>, tensor<512x4xDT>) -> tensor<4x4xDT>
  %mm = graph.matmul %a, %b : (tensor<8x64xDT>, tensor<64x16xDT>) -> tensor<8x16xDT>
  %conv = graph.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<2x3x8x8xDT>, tensor<4x3x3x3xDT>) -> tensor<2x4x6x6xDT>
  %sq = graph.mul %e, %e : (tensor<4x16xDT>, tensor<4x16xDT>) -> tensor<4x16xDT>
  %t = graph.add %sq, %e : (tensor<4x16xDT>, tensor<4x16xDT>) -> tensor<4x16xDT>
  %th = graph.tanh %t : tensor<4x16xDT>
  %chain = graph.exp %th : tensor<4x16xDT>
  %softmax = graph.softmax %e {axis = 1 : i64} : (tensor<4x16xDT>) -> tensor<4x16xDT>
  %ln = graph.layer_norm %e, %g, %bias {axis = 1 : i64, epsilon = 1.0e-05 : f64}
      : (tensor<4x16xDT>, tensor<16xDT>, tensor<16xDT>) -> tensor<4x16xDT>
  %rs = graph.reduce_sum %e axes = [1] : (tensor<4x16xDT>) -> tensor<4xDT>
  %ce = graph.cross_entropy %e, %labels reduction = mean : (tensor<4x16xDT>, tensor<4xi64>) -> tensor<DT>
  %emb = graph.embedding %table, %ids : (tensor<10x16xDT>, tensor<5xi64>) -> tensor<5x16xDT>
  %gat = graph.gather %table, %ids axis = 0 : (tensor<10x16xDT>, tensor<5xi64>) -> tensor<5x16xDT>
  %et = graph.transpose %e [1, 0] : (tensor<4x16xDT>) -> tensor<16x4xDT>
  %neg = graph.neg %et : tensor<16x4xDT>
  %tc = graph.concat %et, %neg axis = 0 : (tensor<16x4xDT>, tensor<16x4xDT>) -> tensor<32x4xDT>
  %cmp = graph.compare gt, %e, %softmax : (tensor<4x16xDT>, tensor<4x16xDT>) -> tensor<4x16xi1>
  return %acc, %mm, %conv, %chain, %softmax, %ln, %rs, %ce, %emb, %gat, %tc, %cmp
      : tensor<4x4xDT>, tensor<8x16xDT>, tensor<2x4x6x6xDT>, tensor<4x16xDT>, tensor<4x16xDT>,
        tensor<4x16xDT>, tensor<4xDT>, tensor<DT>, tensor<5x16xDT>, tensor<5x16xDT>,
        tensor<32x4xDT>, tensor<4x16xi1>
}
