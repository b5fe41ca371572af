//===- CudaTarget.cpp - loomc's CUDA flags --------------------------------===//

#include "tools/loomc/CudaTarget.h"

#include "loom/common/Nvrtc.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

namespace loom::tools {

mlir::LogicalResult setCudaOptions(CompileOptions &options,
                                   llvm::StringRef target, llvm::StringRef emit,
                                   llvm::StringRef archs, bool allowTf32) {
  auto fail = [](const llvm::Twine &message) {
    llvm::errs() << "error: " << message << "\n";
    return mlir::failure();
  };
  if (emit != "artifact" && emit != "cuda" && emit != "mlir")
    return fail("--emit takes artifact, cuda or mlir, not '" + emit + "'");
  if (emit == "cuda" && target != "cuda")
    return fail("--emit cuda needs --target cuda");
  if (!archs.empty() && target != "cuda")
    return fail("--arch needs --target cuda");
  if (allowTf32 && target != "cuda")
    return fail("--allow-tf32 needs --target cuda (the CPU computes f32 "
                "matmuls in f32)");
  options.cudaAllowTf32 = allowTf32;
  llvm::SmallVector<llvm::StringRef> list;
  archs.split(list, ',', -1, false);
  for (llvm::StringRef arch : list) {
    unsigned number = 0;
    if (!arch.starts_with("sm_") || arch.drop_front(3).getAsInteger(10, number))
      return fail("--arch: '" + arch + "' is not an arch like sm_80 or sm_90");
    if (emit != "cuda")
      options.cudaArchs.push_back(arch.str());
  }
  options.compileCuda = [](const std::string &source, const std::string &arch,
                           std::string &cubin, int &version,
                           std::string &error) {
    // No cache: loomc compiles once, for the artifact.
    cuda::NvrtcCompiler compiler("");
    cuda::CompileResult r = compiler.compile({source, arch, {}});
    std::string why;
    const cuda::Nvrtc *api = cuda::nvrtc(why);
    version = api ? api->version : 0;
    cubin = std::move(r.cubin);
    error = std::move(r.error);
    return r.ok;
  };
  return mlir::success();
}

} // namespace loom::tools
