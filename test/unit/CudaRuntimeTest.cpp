//===- CudaRuntimeTest.cpp - the CUDA loader and NVRTC cache, no GPU ------===//
//
// A test binary of its own: the library loaders cache their first answer
// per process, and MissingDriver points libcuda at a path that does not
// exist before anything opens it.
//
//===----------------------------------------------------------------------===//

#include "loom/common/FileIO.h"
#include "runtime/src/cuda/CudaApi.h"
#include "runtime/src/cuda/NvrtcCompiler.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace loom::cuda;

namespace {

const char *kKernel = R"(extern "C" __global__ void scale(float *x, float a) {
  x[threadIdx.x] *= a;
})";

std::string tempDir(const char *name) {
  auto dir =
      std::filesystem::temp_directory_path() /
      (std::string("loom-cuda-test-") + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

} // namespace

TEST(CudaApiTest, MissingDriverIsAnError) {
  setenv("LOOM_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  std::string error;
  EXPECT_EQ(driver(error), nullptr);
  EXPECT_NE(error.find("no CUDA driver"), std::string::npos) << error;
  EXPECT_NE(error.find("/nonexistent/libcuda.so.1"), std::string::npos)
      << error;
  // The answer is kept: a second call says the same, no retry.
  std::string again;
  EXPECT_EQ(driver(again), nullptr);
  EXPECT_EQ(again, error);
}

TEST(NvrtcCacheTest, MissHitAndCorruptEntry) {
  std::string why;
  if (!nvrtc(why))
    GTEST_SKIP() << "NVRTC is not available: " << why;
  std::string dir = tempDir("cache");
  NvrtcCompiler compiler(dir);
  CompileRequest request{kKernel, "sm_80", {}};
  std::string path = compiler.cachePath(request);
  ASSERT_FALSE(path.empty());

  CompileResult miss = compiler.compile(request);
  ASSERT_TRUE(miss.ok) << miss.error;
  EXPECT_FALSE(miss.cached);
  EXPECT_FALSE(miss.cubin.empty());
  EXPECT_TRUE(std::filesystem::exists(path));

  CompileResult hit = compiler.compile(request);
  ASSERT_TRUE(hit.ok) << hit.error;
  EXPECT_TRUE(hit.cached);
  EXPECT_EQ(hit.cubin, miss.cubin);

  // A damaged entry (one byte flipped in the cubin): recompiled, rewritten.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-8, std::ios::end);
    f.put('\x5a');
  }
  CompileResult damaged = compiler.compile(request);
  ASSERT_TRUE(damaged.ok) << damaged.error;
  EXPECT_FALSE(damaged.cached);
  EXPECT_EQ(damaged.cubin, miss.cubin);
  EXPECT_TRUE(compiler.compile(request).cached);

  // A truncated entry and an unreadable one (a directory) are not trusted.
  std::filesystem::resize_file(path, 20);
  CompileResult truncated = compiler.compile(request);
  ASSERT_TRUE(truncated.ok) << truncated.error;
  EXPECT_FALSE(truncated.cached);
  std::filesystem::remove(path);
  std::filesystem::create_directory(path);
  CompileResult unreadable = compiler.compile(request);
  ASSERT_TRUE(unreadable.ok) << unreadable.error;
  EXPECT_FALSE(unreadable.cached);

  // Another arch is another entry.
  CompileRequest other{kKernel, "sm_90", {}};
  EXPECT_NE(compiler.cachePath(other), path);
  CompileResult sm90 = compiler.compile(other);
  ASSERT_TRUE(sm90.ok) << sm90.error;
  EXPECT_FALSE(sm90.cached);
  std::filesystem::remove_all(dir);
}

TEST(NvrtcCacheTest, CompileErrorCarriesTheLog) {
  std::string why;
  if (!nvrtc(why))
    GTEST_SKIP() << "NVRTC is not available: " << why;
  NvrtcCompiler compiler("");
  CompileResult r = compiler.compile(
      {"__global__ void f() { undefined_name(); }", "sm_80", {}});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("undefined_name"), std::string::npos) << r.error;
}

TEST(NvrtcCacheTest, CompilesInParallel) {
  std::string why;
  if (!nvrtc(why))
    GTEST_SKIP() << "NVRTC is not available: " << why;
  NvrtcCompiler compiler("");
  std::vector<CompileRequest> requests;
  for (const char *arch : {"sm_80", "sm_86", "sm_90"})
    requests.push_back({kKernel, arch, {}});
  std::vector<CompileResult> results = compiler.compileAll(requests, 2);
  ASSERT_EQ(results.size(), 3u);
  for (const CompileResult &r : results)
    EXPECT_TRUE(r.ok) << r.error;
}
