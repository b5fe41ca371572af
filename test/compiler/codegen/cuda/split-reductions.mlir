// Reductions with few results over many elements are split over the
// grid (CudaEmitSplitReduction.cpp): a kernel of partials, one that
// combines them in order (deterministic: no atomics), then the region's
// map kernel reads the combined value. A region whose reduction is its
// result writes it from the combining kernel (no map kernel).
// RUN: loomc compile %s --target cuda --emit cuda --func sum_of_squares -o %t.sq.cu
// RUN: FileCheck %s --check-prefix=SQ < %t.sq.cu
// RUN: loomc compile %s --target cuda --emit cuda --func bias_grad -o %t.bias.cu
// RUN: FileCheck %s --check-prefix=BIAS < %t.bias.cu
// RUN: loomc compile %s --target cuda --emit cuda --func scaled_mean -o %t.mean.cu
// RUN: FileCheck %s --check-prefix=MEAN < %t.mean.cu
// RUN: loomc compile %s --target cuda --emit cuda --func loss -o %t.ce.cu
// RUN: FileCheck %s --check-prefix=CE < %t.ce.cu
// RUN: loomc compile %s --target cuda --emit cuda --func mse -o %t.mse.cu
// RUN: FileCheck %s --check-prefix=MSE < %t.mse.cu
// RUN: loomc compile %s --target cuda --emit cuda --func small -o %t.small.cu
// RUN: FileCheck %s --check-prefix=SMALL < %t.small.cu
// RUN: loomc compile %s --target cuda --emit cuda --func pool -o %t.pool.cu
// RUN: FileCheck %s --check-prefix=POOL < %t.pool.cu

// A gradient norm's sum of squares (one result, 262144 elements): 128
// blocks of partials instead of one block, each over blocks of 256
// neighbouring elements; one block combines them.
// SQ: // fusion_0 (reduction): mul reduce_sum {{.*}}[split reduction: 128 partials per result]
// SQ-NEXT: // launch: grid 128, block 256
// SQ: for (loom::i64 r = p{{[0-9]+}} * (loom::i64)blockDim.x + threadIdx.x; r < 262144; r += 128 * (loom::i64)blockDim.x)
// SQ: loom::block_reduce(acc{{[0-9]+}}, [](float a, float b) { return loom::add_<float>(a, b); }
// SQ: loom::st(out{{[0-9]+}} + t, acc{{[0-9]+}});
// SQ: [split reduction: combine]
// SQ-NEXT: // launch: grid 1, block 256
// SQ: for (loom::i64 p = threadIdx.x; p < 128; p += blockDim.x)
// SQ: loom::block_reduce(
// SQ-NOT: [map]
func.func @sum_of_squares(%g: tensor<256x1024xf32>) -> tensor<f32> {
  %0 = graph.mul %g, %g : (tensor<256x1024xf32>, tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %1 = graph.reduce_sum %0 axes = [0, 1] : (tensor<256x1024xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// A bias gradient: 256 columns summed over 1024 tokens. Neighbouring
// threads read neighbouring columns of one row.
// BIAS: // fusion_0 (reduction): reduce_sum {{.*}}[split reduction: 128 partials per result]
// BIAS-NEXT: // launch: grid 128, block 256
// BIAS: loom::i64 o{{[0-9]+}} = t % 256;
// BIAS: for (loom::i64 r = p{{[0-9]+}}; r < 1024; r += 128)
// BIAS: [split reduction: combine]
// BIAS: for (loom::i64 p = 0; p < 128; ++p)
// BIAS: acc{{[0-9]+}} += loom::ld(in0[p * 256 + o]);
// BIAS-NOT: [map]
func.func @bias_grad(%dy: tensor<8x128x256xf32>) -> tensor<256xf32> {
  %0 = graph.reduce_sum %dy axes = [0, 1] : (tensor<8x128x256xf32>) -> tensor<256xf32>
  return %0 : tensor<256xf32>
}

// A mean that the region goes on using: the combining kernel divides by
// the count, and the map kernel reads the combined value.
// MEAN: [split reduction: 128 partials per result]
// MEAN: [split reduction: combine]
// MEAN: acc{{[0-9]+}} /= 262144.f;
// MEAN: // fusion_0 (reduction): reduce_mean div {{.*}}[map]
func.func @scaled_mean(%x: tensor<512x512xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %0 = graph.reduce_mean %x axes = [0, 1] : (tensor<512x512xf32>) -> tensor<f32>
  %1 = graph.div %y, %0 : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  return %1 : tensor<16xf32>
}

// Cross-entropy over 1024 rows of 512 classes: a block per row (max and
// sum of exponentials as block reductions); ignored labels leave the
// count; the blocks' sums and counts combined in order.
// CE: // fusion_0 (other): cross_entropy {{.*}}[split loss: a block per row, 1024 partials]
// CE-NEXT: // launch: grid 1024, block 256
// CE: for (loom::i64 row = blockIdx.x; row < 1024; row += gridDim.x)
// CE: if (!(v{{[0-9]+}} == -100LL))
// CE: loom::block_reduce(m{{[0-9]+}}, {{.*}}loom::max_<float>
// CE: loom::block_reduce(s{{[0-9]+}}, {{.*}}loom::add_<float>
// CE: if (threadIdx.x == 0)
// CE: [split loss: combine]
// CE-NEXT: // launch: grid 1, block 32
// CE: for (loom::i64 b = 0; b < 1024; ++b)
// CE: acc{{[0-9]+}} = cnt{{[0-9]+}} > 0 ? acc{{[0-9]+}} / cnt{{[0-9]+}} : __int_as_float(0x7fc00000);
func.func @loss(%logits: tensor<8x128x512xf32>, %labels: tensor<8x128xi64>) -> tensor<f32> {
  %0 = graph.cross_entropy %logits, %labels reduction = mean {ignore_index = -100 : i64} : (tensor<8x128x512xf32>, tensor<8x128xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// MSE with a mean: a split sum of squared differences.
// MSE: // fusion_0 (other): mse_loss {{.*}}[split reduction: 32 partials per result]
// MSE: d{{[0-9]+}} * d{{[0-9]+}}
// MSE: [split reduction: combine]
// MSE: acc{{[0-9]+}} /= 65536.f;
func.func @mse(%p: tensor<64x1024xf32>, %t: tensor<64x1024xf32>) -> tensor<f32> {
  %0 = graph.mse_loss %p, %t reduction = mean : (tensor<64x1024xf32>, tensor<64x1024xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// Small reductions keep their row kernel (a warp per row of up to 1024):
// one block is quick enough.
// SMALL: // fusion_0 (reduction): reduce_sum {{.*}}[warp rows]
// SMALL-NOT: split
func.func @small(%x: tensor<4x1024xf32>) -> tensor<4xf32> {
  %0 = graph.reduce_sum %x axes = [1] : (tensor<4x1024xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// A kept dim of size 1 (the batch) before the channels: the channel is
// read at the result's channel index (it was read at the batch's).
// POOL: for (loom::i64 i = {{.*}}; i < 3;
// POOL: loom::i64 x[[C:[0-9]+]] = i;
// POOL: loom::ld(in0[x[[C]] * 25 +
func.func @pool(%x: tensor<1x3x5x5xf32>) -> tensor<1x3x1x1xf32> {
  %0 = graph.global_avg_pool %x : (tensor<1x3x5x5xf32>) -> tensor<1x3x1x1xf32>
  return %0 : tensor<1x3x1x1xf32>
}
