//===- CpuModule.h - loading an artifact's CPU code -----------------------===//
//
// The compiler links each model's CPU code into a shared object; the
// runtime loads it from memory (memfd + dlopen), with no linker or LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPUMODULE_H
#define LOOM_RUNTIME_CPUMODULE_H

#include <memory>
#include <string>

namespace loom::runtime {

/// `void entry(void **args)`: the calling convention of CpuCode in
/// loom_artifact.proto.
using CpuEntry = void (*)(void **);

class CpuModule {
public:
  /// Loads `sharedObject` and finds `entrySymbol`. Checks first that this
  /// process runs on `triple` and that the CPU has every feature in
  /// `features` (LLVM's "+avx2,+fma,..." form). Null and a message on
  /// failure.
  static std::unique_ptr<CpuModule> load(const std::string &sharedObject,
                                         const std::string &entrySymbol,
                                         const std::string &triple,
                                         const std::string &features,
                                         std::string &error);
  ~CpuModule();
  CpuModule(const CpuModule &) = delete;
  CpuModule &operator=(const CpuModule &) = delete;

  CpuEntry entry() const { return entry_; }

private:
  CpuModule() = default;
  void *handle_ = nullptr;
  int fd_ = -1; // the code's memfd, open while the module is loaded
  CpuEntry entry_ = nullptr;
};

} // namespace loom::runtime

#endif // LOOM_RUNTIME_CPUMODULE_H
