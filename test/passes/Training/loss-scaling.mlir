// Dynamic loss scaling in the IR of the step: --loom-autodiff loss-scale
// seeds the backward with a scale argument; --loom-optimizer keeps the
// scale and the count of good steps as state, unscales the gradients,
// skips the update when they are not finite and updates the scale as
// torch.cuda.amp.GradScaler does.
// RUN: loom-opt %s --loom-autodiff=loss-scale | FileCheck %s --check-prefix=GRAD
// RUN: loom-opt %s --loom-autodiff=loss-scale --loom-optimizer="optimizer=sgd lr=0.1 momentum=0.9 loss-scale-init=1024 loss-scale-interval=3" | FileCheck %s --check-prefix=STEP
// RUN: not loom-opt %s --loom-autodiff=loss-scale --loom-optimizer="loss-scale-backoff=2" 2>&1 | FileCheck %s --check-prefix=BAD

func.func @f(%x: tensor<4x3xf16> {graph.input = "x"},
             %w: tensor<3x2xf32> {graph.param = "w", graph.initial_value = dense<1.0> : tensor<3x2xf32>})
    -> (tensor<f32> {graph.output = "loss"}) {
  %w16 = graph.cast %w to f16 : tensor<3x2xf32>
  %m = graph.matmul %x, %w16 : (tensor<4x3xf16>, tensor<3x2xf16>) -> tensor<4x2xf16>
  %m32 = graph.cast %m to f32 : tensor<4x2xf16>
  %s = graph.reduce_mean %m32 axes = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// The scale is the backward's seed (the loss itself is not scaled).
// GRAD-LABEL: func.func @f_grad(
// GRAD-SAME: %arg2: tensor<f32> {graph.loss_scale}
// GRAD: %[[LOSS:.*]] = graph.reduce_mean
// GRAD: graph.reshape %arg2 [1, 1]
// GRAD: return %[[LOSS]], %{{.*}} : tensor<f32>, tensor<3x2xf32>

// STEP-LABEL: func.func @train_step(
// STEP-SAME: %arg5: tensor<f32> {graph.initial_value = dense<1.024000e+03> : tensor<f32>, graph.state = "loss_scale", graph.state_kind = "loss_scale"}
// STEP-SAME: %arg6: tensor<f32> {graph.state = "loss_scale/growth_tracker", graph.state_kind = "growth_tracker"}
// STEP-SAME: tensor<f32> {graph.output = "lr"}, tensor<f32> {graph.output = "loss_scale"}
// STEP-SAME: tensor<f32> {graph.next_state = "loss_scale"}, tensor<f32> {graph.next_state = "loss_scale/growth_tracker"}
// STEP-SAME: loss_scale=dynamic(init=1.024000e+03 growth=2.000000e+00 every 3 backoff=5.000000e-01)
// Unscale with 1 / scale; finite when the sum of squares is below inf.
// STEP: %[[INV:.*]] = graph.div %{{.*}}, %arg5
// STEP: %[[G:.*]] = graph.mul %{{.*}}, %[[INV]] : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
// STEP: %[[SQ:.*]] = graph.reduce_sum
// STEP: %[[FINITE:.*]] = graph.compare lt, %{{.*}}, %[[INF:.*]] : (tensor<f32>, tensor<f32>) -> tensor<i1>
// Parameters and momentum keep their values when it is not.
// STEP-DAG: graph.where %[[FINITE]], %{{.*}}, %arg3 : (tensor<i1>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
// STEP-DAG: graph.where %[[FINITE]], %{{.*}}, %arg4 : (tensor<i1>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
// The scale: good steps + 1 or 0; grow after 3; back off by half.
// STEP-DAG: %[[GOOD:.*]] = graph.where %[[FINITE]], %{{.*}}, %{{.*}} : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
// STEP-DAG: %[[GROW:.*]] = graph.compare ge, %[[GOOD]], %{{.*}}
// STEP-DAG: graph.mul %arg5, %{{.*}}
// STEP: return {{.*}}, %arg5,

// BAD: error: loom-optimizer: loss scaling needs init > 0, growth >= 1, 0 < backoff < 1, interval >= 1
