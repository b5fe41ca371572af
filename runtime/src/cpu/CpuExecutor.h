//===- CpuExecutor.h - runs an artifact's CPU code --------------*- C++ -*-===//
//
// The runtime's CPU device: the artifact's shared object loaded in memory
// (CpuModule), the weights read in place from the artifact's bytes (the
// file's mapping: every session and process shares them), and the run contexts
// (RunContext.h) reused across runs. A run marshals each input and weight
// into a memref descriptor (allocated, aligned, offset, sizes, strides),
// calls the entry through RunContext::call, turns each result descriptor
// into a tensor and frees what the code allocated.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_CPUEXECUTOR_H
#define LOOM_RUNTIME_CPU_CPUEXECUTOR_H

#include "loom/common/Artifact.h"
#include "runtime/src/CpuModule.h"
#include "runtime/src/Executor.h"
#include "runtime/src/RunContext.h"

#include <memory>
#include <string>
#include <vector>

namespace loom::runtime {

class CpuExecutor final : public Executor {
public:
  /// Loads `a`'s CPU code (which must be there) and takes its weights in
  /// place from `section` (the parsed file's data section, 64-byte
  /// aligned, which must outlive the executor; the code never writes a
  /// weight); a weight held inline in the message (a version 2 file) is
  /// copied. LOOM_OUT_OF_MEMORY for a weight that cannot be copied,
  /// LOOM_UNAVAILABLE for code this process cannot load (CpuModule::load's
  /// message).
  static loom_status load(const artifact::Artifact &a,
                          const artifact::DataSection &section,
                          std::unique_ptr<CpuExecutor> &out);

  /// Drops what the convolution kernels kept of this artifact's filters.
  ~CpuExecutor() override;

  loom_device device() const override { return LOOM_DEVICE_CPU; }
  const std::string &description() const override { return description_; }
  loom_status run(const RunRequest &request) override;
  loom_session_memory memory() const override;
  void setMaxConcurrentRuns(size_t limit) override;

private:
  CpuExecutor() = default;

  std::vector<loom_tensor_s> weights_;
  size_t weightBytes_ = 0;
  /// The kernels' names, by the id the code's profile hooks pass.
  std::vector<std::string> kernels_;
  std::unique_ptr<CpuModule> code_;
  /// Mutable under the const API (loom_session_memory_stats): the pool
  /// synchronizes itself.
  mutable RunContextPool contexts_;
  std::string description_ = "cpu";
};

} // namespace loom::runtime

#endif // LOOM_RUNTIME_CPU_CPUEXECUTOR_H
