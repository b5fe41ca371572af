//===- CudaSim.h - the CUDA program executed on the host --------*- C++ -*-===//
//
// The `cuda-sim` device (LOOM_DEVICE_CUDA_SIM, loom-run --device
// cuda-sim): a check of the generated CUDA code on machines without a GPU,
// not a way to run models. The runtime's own CUDA executor
// (CudaExecutor.cpp) runs unchanged — launch sequence, memory plan,
// argument packing, slots, streams, events, graph capture — through a
// driver table and a cuBLASLt table implemented here on the host:
//
// * the artifact's CUDA source is compiled as host C++ (SimCompiler.cpp,
//   with the headers of SimHeaders.h) into shared libraries, one per
//   program of whole regions, cached like NVRTC's cubins; each kernel's
//   blocks run one after another, a block's threads cooperatively on
//   fibers (barriers and warp shuffles switch between them);
// * device memory is host memory: every allocation filled with 0xff bytes
//   (NaN in every float type) so that a read of memory nothing wrote
//   shows, and ending at an unmapped page, so that a kernel reading or
//   writing past the end of an allocation fails naming the kernel and the
//   address instead of corrupting memory (accesses past a buffer inside
//   the arena, the compiler's memory plan, are not caught);
// * streams run each operation when it is issued (graph capture records
//   it), so a mesh program's collective steps hand the communicator the
//   buffers themselves, their producers done (CudaExecutor.cpp); events
//   read the host's clock; cuBLASLt matmuls are computed from
//   their descriptors (layouts, transposes, batches, bias and ReLU / GELU
//   epilogues) with OpenBLAS, 16-bit floats through f32.
//
// LOOM_CUDA_SIM_STATS=1 prints, at the process's exit, the kernel launches,
// matmuls and copies (count and bytes each way) it was asked for
// (test/training/cuda-sim-copies.py counts a training step's).
//
// Errors carry the simulator's message in the result's name
// (cuGetErrorName): "CUDA_ERROR_LAUNCH_FAILED: kernel fusion_3, block 2,
// thread 37: deadlock: ...".
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_SIM_CUDASIM_H
#define LOOM_RUNTIME_CUDA_SIM_CUDASIM_H

#include "runtime/src/cuda/CudaApi.h"

#include <string>
#include <vector>

namespace loom::cuda::sim {

/// The simulator's tables (never null).
const Driver *driver();
const CublasLt *cublasLt();

/// Whether this build can simulate (x86-64 Linux); `why` otherwise.
bool supported(std::string &why);

/// Compiles each of `programs` (the prelude and whole regions, as NVRTC's
/// programs) as host C++ into a shared library, cached under `cacheDir`
/// ("" = no cache); `images[i]` is the library's path, which the
/// simulator's cuModuleLoadData loads. The compiler is $LOOM_SIM_CXX, else
/// the first of c++, g++ and clang++ on PATH. `how` says what was done
/// ("host C++ (c++), 2 programs (0 from the cache) in 1.20 s"). False with
/// `error`: the compiler's log, or "no host C++ compiler ...".
bool compile(const std::vector<std::string> &programs,
             const std::string &cacheDir, std::vector<std::string> &images,
             std::string &how, std::string &error);

} // namespace loom::cuda::sim

#endif // LOOM_RUNTIME_CUDA_SIM_CUDASIM_H
