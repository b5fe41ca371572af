// RUN: loom-opt %s --split-input-file --loom-loss="logits=logits label-smoothing=0.1" | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-loss="loss=mse" | FileCheck %s --check-prefix=MSE
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-loss="logits=nope"

// --loom-loss: a labels input and one scalar loss replace the outputs.

// CHECK-LABEL: func.func @model(
// CHECK-SAME: %[[LABELS:[a-z0-9]+]]: tensor<4xi64> {graph.input = "labels"}) -> (tensor<f32> {graph.output = "loss"})
// CHECK: %[[NLL:.*]] = graph.cross_entropy %{{.*}}, %[[LABELS]] reduction = mean {ignore_index = -100 : i64}
// CHECK: graph.log_softmax
// CHECK: graph.compare ne, %[[LABELS]]
// CHECK: %[[A:.*]] = graph.mul %[[NLL]], %{{.*}}
// CHECK: %[[L:.*]] = graph.add %[[A]], %{{.*}}
// CHECK: return %[[L]] : tensor<f32>

// MSE-LABEL: func.func @model(
// MSE-SAME: tensor<4x3xf32> {graph.input = "labels"}) -> (tensor<f32> {graph.output = "loss"})
// MSE: graph.mse_loss %{{.*}}, %{{.*}} reduction = mean

// expected-error @+1 {{loom-loss: the model has no output 'nope' (its outputs: logits)}}
func.func @model(%x: tensor<4x3xf32> {graph.input = "x"}) -> (tensor<4x3xf32> {graph.output = "logits"}) {
  %y = graph.relu %x : tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
