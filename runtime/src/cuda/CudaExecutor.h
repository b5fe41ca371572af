//===- CudaExecutor.h - runs an artifact's CUDA program on a GPU -*- C++
//-*-===//
//
// The runtime's CUDA device: loads Artifact.cuda (a cubin of the artifact
// for the GPU's arch, or the source compiled by NVRTC through the on-disk
// cache), looks up every kernel, uploads the weights once, builds one
// cuBLASLt descriptor set per matmul (its algorithm chosen once), and runs
// the launch sequence on a stream: inputs copied in through pinned
// staging, the steps in order, the outputs copied back, one synchronize.
// A mesh artifact's collective steps run through the run's communicator
// (NCCL on device buffers, ordered against the run's stream by events on
// the device; Gloo through pinned host staging; the simulator's host
// memory as it is; docs/cuda.md, "Collectives").
//
// Every CUDA call goes through the dlopen tables of CudaApi.h: no CUDA
// header or library at build time. The program is validated before
// anything trusts it (validateProgram needs no driver). Errors name the
// CUDA error and the kernel or matmul.
//
// Memory: the weights are one device allocation of the session. Each run
// in flight holds a slot: a stream, the arena (one allocation of
// arena_bytes: the compiler's static memory plan), the inputs' device
// buffers, pinned staging for inputs and outputs and the cuBLASLt
// workspace, all sized at load (shapes are static). Slots are cached and
// reused across runs; a second concurrent run makes a second slot.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_CUDAEXECUTOR_H
#define LOOM_RUNTIME_CUDA_CUDAEXECUTOR_H

#include "loom/common/Artifact.h"
#include "runtime/src/Executor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace loom::cuda {

/// Checks `a.cuda()` against itself and the artifact's signature and
/// weights: buffer kinds, indices and sizes (arena offsets + bytes within
/// arena_bytes; inputs, weights and outputs of the signature's dtype and
/// size), kernels (launch bounds, argument buffers, and the parameter
/// count of the kernel's declaration in the source), matmuls (dtype, sizes
/// and batch strides within their buffers, bias, activation), steps and
/// binaries. Needs no driver. On failure: false and a message naming the
/// part ("CUDA program: kernel 3 'fusion_2' argument 1 is buffer 99 of
/// 12").
bool validateProgram(const artifact::Artifact &a, std::string &error);

/// Whether a CUDA device `ordinal` answers (driver, cuInit, device count);
/// `why` otherwise: "no CUDA driver (dlopen libcuda.so.1: ...)", "cuInit
/// failed: CUDA_ERROR_NO_DEVICE (100)", "no CUDA device 1 (1 present)".
bool deviceAvailable(int ordinal, std::string &why);

/// How a load or run failed.
enum class Failure {
  None,
  BadArtifact, // validateProgram refused it, or its code does not load
  Unavailable, // no driver, no device, no NVRTC/cuBLASLt, out of memory
  Internal,    // a CUDA call failed
};

/// The time of one step of a profiled run, in the run's GPU timeline.
struct StepTime {
  std::string name;
  double startMs = 0, endMs = 0; // from the run's first event (the uploads)
};

/// The session's executor on a CUDA device (runtime/src/Executor.h).
class CudaExecutor final : public runtime::Executor {
public:
  struct Options {
    int ordinal = 0;
    /// NVRTC's cache ("" = no cache); defaults to defaultCacheDir().
    std::string cacheDir;
    bool useDefaultCache = true;
    /// The CUDA simulator (runtime/src/cuda/sim/CudaSim.h): the same
    /// executor through host implementations of the driver and cuBLASLt,
    /// the source compiled as host C++. A check of the generated code.
    bool simulate = false;
  };

  /// Validates and loads `a`'s CUDA program on device `options.ordinal`,
  /// uploading its weights from `section` (the parsed file's data
  /// section; only read during the load). Null on failure, with `error`
  /// and `failure` set.
  static std::unique_ptr<CudaExecutor>
  load(const artifact::Artifact &a, const artifact::DataSection &section,
       const Options &options, std::string &error, Failure &failure);
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor &) = delete;
  CudaExecutor &operator=(const CudaExecutor &) = delete;

  /// Bytes of input `i` and output `i` (static: the signature's).
  size_t inputBytes(size_t i) const;
  size_t outputBytes(size_t i) const;

  /// One run: `inputs[i]` holds inputBytes(i) bytes of input i,
  /// `outputs[i]` receives outputBytes(i) bytes. Thread-safe (runs in
  /// flight take different slots). `times` (may be null) receives each
  /// step's GPU time. With `state` (claimed, claimState): the run takes
  /// the state's slot, whose inputs region keeps the state inputs between
  /// runs; inputs the device holds (state->onDevice) are not uploaded,
  /// and paired outputs are not downloaded (their `outputs[i]` may be
  /// null). The program's collectives run through `communicator` (null:
  /// one rank, each a copy) over `meshShape` (empty: every rank on one
  /// axis); a failed one fails the run with Failure::Unavailable. False
  /// with `error`, `failure` set on failure.
  bool runBuffers(const std::vector<const void *> &inputs,
                  const std::vector<void *> &outputs,
                  std::vector<StepTime> *times, std::string &error,
                  Failure &failure, const runtime::DeviceState *state = nullptr,
                  runtime::collectives::Communicator *communicator = nullptr,
                  const std::vector<int64_t> &meshShape = {});

  /// A session's run (inputs checked): the outputs are new tensors of the
  /// signature's (static) shapes, filled by runBuffers; a profile gets
  /// the run and each step, placed from the run's start on the host.
  loom_status run(const runtime::RunRequest &request) override;
  loom_device device() const override;

  /// Device-resident training state (runtime::Executor).
  bool claimState(const runtime::DeviceState &state) override;
  void releaseState() override;
  loom_status adoptState() override;
  loom_status readState(size_t input, void *out, size_t bytes) override;

  /// "cuda:0 NVIDIA H100 80GB HBM3 (sm_90); code: cubin of the artifact"
  /// or "...; code: NVRTC, 9 programs (9 from the cache) in 0.01 s; 2
  /// cuBLASLt matmuls; load 0.12 s".
  const std::string &description() const override;

  struct Impl;

private:
  explicit CudaExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_CUDAEXECUTOR_H
