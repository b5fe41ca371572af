// A LoRA adapter added with the builder's IR: y = x base + (x a) b, where
// base is the pretrained weight (frozen with --freeze) and a, b the
// low-rank adapter (b starts at zero, as LoRA does).
func.func @forward(
    %x: tensor<8x4xf32> {graph.input = "x"},
    %base: tensor<4x4xf32> {graph.param = "base", graph.initial_value = dense<[[1.0, 0.5, 0.0, -0.5], [0.0, 1.0, 0.5, 0.0], [-0.5, 0.0, 1.0, 0.5], [0.5, -0.5, 0.0, 1.0]]> : tensor<4x4xf32>},
    %a: tensor<4x2xf32> {graph.param = "lora_a", graph.initial_value = dense<[[0.1, -0.2], [0.2, 0.1], [-0.1, 0.3], [0.3, 0.2]]> : tensor<4x2xf32>},
    %b: tensor<2x4xf32> {graph.param = "lora_b", graph.initial_value = dense<0.0> : tensor<2x4xf32>})
    -> (tensor<8x4xf32> {graph.output = "y"}) {
  %0 = graph.matmul %x, %base : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %1 = graph.matmul %x, %a : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  %2 = graph.matmul %1, %b : (tensor<8x2xf32>, tensor<2x4xf32>) -> tensor<8x4xf32>
  %3 = graph.add %0, %2 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %3 : tensor<8x4xf32>
}
