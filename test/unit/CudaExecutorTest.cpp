//===- CudaExecutorTest.cpp - the runtime's CUDA device
//---------------------===//
//
// Programs written here (a CUDA source, cuBLASLt matmuls, buffers), not
// compiled by loomc: the binary links the runtime only, so it runs on a
// GPU machine without MLIR (bench/gpu/out/run.sh carries it there).
//
//  * CudaValidateTest: the artifact checks, no driver needed.
//  * CudaNoDriverTest: sessions with LOOM_LIBCUDA pointing nowhere (CTest
//    `cuda-executor-no-driver` sets it; skipped otherwise).
//  * CudaStubDriverTest: with the toolkit's stub libcuda (CTest
//    `cuda-executor-stub-driver`): every symbol of the driver table
//    resolves, cuInit fails with a named error.
//  * CudaDeviceTest: runs on a GPU against host references (skipped with
//    the reason when no CUDA device answers), and the same in the CUDA
//    simulator (runtime/src/cuda/sim), which runs without a GPU.
//  * CudaSimTest: what the simulator catches (writes past an allocation,
//    deadlocked barriers, memory nothing wrote).
//
//===----------------------------------------------------------------------===//

#include "runtime/src/cuda/CudaExecutor.h"
#include "loom/common/Artifact.h"
#include "loom/runtime.h"
#include "runtime/src/Executor.h"
#include "runtime/src/Session.h"
#include "runtime/src/cuda/CudaApi.h"
#include "runtime/src/cuda/sim/CudaSim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <sys/stat.h>
#include <thread>

using namespace loom;
using artifact::CudaBuffer;

namespace {

const char *kSource = R"(#define LOOM_KERNEL extern "C" __global__
// y = x * 2 + w (n elements), one thread each
LOOM_KERNEL void axpw(const float *__restrict__ x, const float *__restrict__ w,
                      float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 1000) y[i] = x[i] * 2.0f + w[i];
}
)";

void setSignature(artifact::TensorSignature *s, const std::string &name,
                  artifact::DType dtype, std::vector<int64_t> dims) {
  s->set_name(name);
  s->set_dtype(dtype);
  for (int64_t d : dims)
    s->add_dims()->set_size(d);
}

int addBuffer(artifact::CudaCode *c, CudaBuffer::Kind kind, int64_t index,
              int64_t offset, artifact::DType dtype, std::vector<int64_t> dims,
              const std::string &name) {
  CudaBuffer *b = c->add_buffers();
  b->set_kind(kind);
  b->set_index(index);
  b->set_offset(offset);
  int64_t n = 1;
  for (int64_t d : dims) {
    b->add_dims(d);
    n *= d;
  }
  b->set_bytes(n * static_cast<int64_t>(artifact::dtypeSize(dtype)));
  b->set_dtype(dtype);
  b->set_name(name);
  return c->buffers_size() - 1;
}

/// y = x * 2 + w over 1000 f32: one input, one weight, one arena output.
artifact::Artifact kernelProgram() {
  artifact::Artifact a;
  a.set_producer("test");
  a.set_model_name("axpw");
  setSignature(a.add_inputs(), "x", artifact::F32, {1000});
  setSignature(a.add_outputs(), "y", artifact::F32, {1000});
  artifact::Weight *w = a.add_weights();
  w->set_name("w");
  w->set_dtype(artifact::F32);
  w->add_dims(1000);
  std::vector<float> wv(1000);
  for (int i = 0; i < 1000; ++i)
    wv[i] = 0.5f * i;
  w->set_data(wv.data(), wv.size() * 4);
  artifact::CudaCode *c = a.mutable_cuda();
  c->set_source(kSource);
  c->set_arena_bytes(4096);
  int x = addBuffer(c, CudaBuffer::INPUT, 0, 0, artifact::F32, {1000}, "x");
  int wb = addBuffer(c, CudaBuffer::WEIGHT, 0, 0, artifact::F32, {1000}, "w");
  int y = addBuffer(c, CudaBuffer::ARENA, 0, 0, artifact::F32, {1000}, "y");
  artifact::CudaKernel *k = c->add_kernels();
  k->set_name("axpw");
  k->set_description("axpw (test)");
  k->set_grid(4);
  k->set_block(256);
  for (int b : {x, wb, y})
    k->add_args(b);
  c->add_steps()->set_launch(0);
  c->add_output_buffers(y);
  return a;
}

/// D[b] = op(A[b]) op(B[b]) (+ bias) (activation) through cuBLASLt, in
/// `dtype`: A and B inputs, the bias a weight, D in the arena.
struct GemmCase {
  int64_t m, n, k, batch;
  bool transA, transB, bias, shareB;
  std::string activation;
  artifact::DType dtype;
};

artifact::Artifact gemmProgram(const GemmCase &g) {
  artifact::Artifact a;
  a.set_producer("test");
  a.set_model_name("gemm");
  std::vector<int64_t> aDims = {g.batch, g.transA ? g.k : g.m,
                                g.transA ? g.m : g.k};
  std::vector<int64_t> bDims = {g.shareB ? 1 : g.batch, g.transB ? g.n : g.k,
                                g.transB ? g.k : g.n};
  std::vector<int64_t> dDims = {g.batch, g.m, g.n};
  setSignature(a.add_inputs(), "a", g.dtype, aDims);
  setSignature(a.add_inputs(), "b", g.dtype, bDims);
  setSignature(a.add_outputs(), "d", g.dtype, dDims);
  artifact::CudaCode *c = a.mutable_cuda();
  c->set_source("#define LOOM_KERNEL extern \"C\" __global__\n");
  int ab = addBuffer(c, CudaBuffer::INPUT, 0, 0, g.dtype, aDims, "a");
  int bb = addBuffer(c, CudaBuffer::INPUT, 1, 0, g.dtype, bDims, "b");
  int db = addBuffer(c, CudaBuffer::ARENA, 0, 0, g.dtype, dDims, "d");
  int64_t dBytes = c->buffers(db).bytes();
  c->set_arena_bytes((dBytes + 255) / 256 * 256);
  artifact::CudaGemm *m = c->add_gemms();
  m->set_name("mm");
  m->set_description("mm (test)");
  m->set_m(g.m);
  m->set_n(g.n);
  m->set_k(g.k);
  m->set_batch(g.batch);
  m->set_trans_a(g.transA);
  m->set_trans_b(g.transB);
  m->set_stride_a(g.m * g.k);
  m->set_stride_b(g.shareB ? 0 : g.k * g.n);
  m->set_stride_d(g.m * g.n);
  m->set_dtype(g.dtype);
  m->set_a(ab);
  m->set_b(bb);
  m->set_d(db);
  m->set_bias(-1);
  m->set_activation(g.activation);
  if (g.bias) {
    artifact::Weight *w = a.add_weights();
    w->set_name("bias");
    w->set_dtype(g.dtype);
    w->add_dims(g.n);
    w->set_data(std::string(g.n * artifact::dtypeSize(g.dtype), '\0'));
    m->set_bias(addBuffer(c, CudaBuffer::WEIGHT, 0, 0, g.dtype, {g.n}, "bias"));
  }
  c->add_steps()->set_gemm(0);
  c->add_output_buffers(db);
  return a;
}

std::string serialize(const artifact::Artifact &a) {
  std::string body;
  a.SerializeToString(&body);
  return artifact::header(body) + body;
}

/// A session of `a` on `device`; the status's code and message.
/// A status's code and message, the status freed.
struct Status {
  explicit Status(loom_status s)
      : code_(loom_status_get_code(s)), message_(loom_status_message(s)) {
    loom_status_free(s);
  }
  loom_status_code code() const { return code_; }
  const std::string &message() const { return message_; }

private:
  loom_status_code code_;
  std::string message_;
};

loom_status_code createSession(const artifact::Artifact &a, loom_device device,
                               loom_session **session, std::string &message) {
  loom_instance_options options;
  loom_instance_options_initialize(&options);
  options.device = device;
  loom_instance *instance = nullptr;
  loom_status_free(loom_instance_create(&options, &instance));
  std::string bytes = serialize(a);
  loom_status s = loom_session_create_from_memory(instance, bytes.data(),
                                                  bytes.size(), session);
  loom_status_code code = loom_status_get_code(s);
  message = loom_status_message(s);
  loom_status_free(s);
  // A session keeps a pointer to its instance: leaked on purpose here.
  return code;
}

std::string validate(const artifact::Artifact &a) {
  std::string error;
  return cuda::validateProgram(a, error) ? "" : error;
}

bool envIs(const char *name, const char *prefix) {
  const char *v = std::getenv(name);
  return v && std::strncmp(v, prefix, std::strlen(prefix)) == 0;
}

} // namespace

// ---- validation: no driver ------------------------------------------------

TEST(CudaValidateTest, WellFormedProgramsPass) {
  EXPECT_EQ(validate(kernelProgram()), "");
  EXPECT_EQ(validate(gemmProgram(
                {8, 16, 4, 3, true, true, true, false, "relu", artifact::F32})),
            "");
}

TEST(CudaValidateTest, EachBrokenPartIsNamed) {
  struct Case {
    const char *expect;
    std::function<void(artifact::Artifact &)> breakIt;
  };
  std::vector<Case> cases = {
      {"kernel 0 'axpw' argument 2 is buffer 7 of 3",
       [](auto &a) { a.mutable_cuda()->mutable_kernels(0)->set_args(2, 7); }},
      {"is not inside the arena of 4096 bytes",
       [](auto &a) { a.mutable_cuda()->mutable_buffers(2)->set_offset(3840); }},
      {"arena offset 100", // not 256-aligned
       [](auto &a) { a.mutable_cuda()->mutable_buffers(2)->set_offset(100); }},
      {"buffer 0 ('x') does not match input 0",
       [](auto &a) {
         auto *b = a.mutable_cuda()->mutable_buffers(0);
         b->set_dims(0, 999);
         b->set_bytes(999 * 4);
       }},
      {"buffer 1 ('w') is weight 3 of 1",
       [](auto &a) { a.mutable_cuda()->mutable_buffers(1)->set_index(3); }},
      {"holds 12 bytes, its type f32[1000] needs 4000",
       [](auto &a) { a.mutable_cuda()->mutable_buffers(2)->set_bytes(12); }},
      {"kernel 0 'axpw' takes 3 parameters in the source, the program "
       "passes 2",
       [](auto &a) {
         a.mutable_cuda()->mutable_kernels(0)->mutable_args()->RemoveLast();
       }},
      {"kernel 0 'nope' is not declared in the source",
       [](auto &a) { a.mutable_cuda()->mutable_kernels(0)->set_name("nope"); }},
      {"kernel 0 'axpw': block 2048 is out of range",
       [](auto &a) { a.mutable_cuda()->mutable_kernels(0)->set_block(2048); }},
      {"kernel 0 'axpw': grid 0 is out of range",
       [](auto &a) { a.mutable_cuda()->mutable_kernels(0)->set_grid(0); }},
      {"step 1 launches kernel 5 of 1",
       [](auto &a) { a.mutable_cuda()->add_steps()->set_launch(5); }},
      {"step 1 is empty", [](auto &a) { a.mutable_cuda()->add_steps(); }},
      {"2 output buffers for 1 outputs",
       [](auto &a) { a.mutable_cuda()->add_output_buffers(0); }},
      {"output 0 ('y') is f32 of 2000 bytes, buffer 2 ('y') is f32 of 4000",
       [](auto &a) { a.mutable_outputs(0)->mutable_dims(0)->set_size(500); }},
      {"arena_bytes -1 is out of range",
       [](auto &a) { a.mutable_cuda()->set_arena_bytes(-1); }},
      {"no source and no binaries",
       [](auto &a) { a.mutable_cuda()->clear_source(); }},
      {"binary 0 (arch 'compute_90') is not a cubin",
       [](auto &a) {
         auto *b = a.mutable_cuda()->add_binaries();
         b->set_arch("compute_90");
         b->set_cubin("x");
       }},
      {"buffer 2 ('y') has an unknown kind 7",
       [](auto &a) {
         a.mutable_cuda()->mutable_buffers(2)->set_kind(
             static_cast<CudaBuffer::Kind>(7));
       }},
  };
  for (const Case &c : cases) {
    artifact::Artifact a = kernelProgram();
    c.breakIt(a);
    std::string error = validate(a);
    EXPECT_NE(error.find(c.expect), std::string::npos)
        << "expected '" << c.expect << "', got '" << error << "'";
  }
}

TEST(CudaValidateTest, MatmulOperandsAreChecked) {
  GemmCase g = {8, 16, 4, 3, false, false, true, false, "gelu", artifact::F16};
  struct Case {
    const char *expect;
    std::function<void(artifact::Artifact &)> breakIt;
  };
  std::vector<Case> cases = {
      {"operand B needs 264 elements, buffer 1 ('b') has 192",
       [](auto &a) { a.mutable_cuda()->mutable_gemms(0)->set_stride_b(100); }},
      {"matmul 0 'mm': the batches of D overlap",
       [](auto &a) { a.mutable_cuda()->mutable_gemms(0)->set_stride_d(0); }},
      {"unknown activation 'swish'",
       [](auto &a) {
         a.mutable_cuda()->mutable_gemms(0)->set_activation("swish");
       }},
      {"dtype i32 (cuBLASLt runs f32, f16, bf16, f64, and int8 -> int32)",
       [](auto &a) {
         a.mutable_cuda()->mutable_gemms(0)->set_dtype(artifact::I32);
       }},
      {"operand bias is buffer 9 of 4",
       [](auto &a) { a.mutable_cuda()->mutable_gemms(0)->set_bias(9); }},
      {"operand D is f32, the matmul f16",
       [](auto &a) {
         auto *b = a.mutable_cuda()->mutable_buffers(2);
         b->set_dtype(artifact::F32);
         b->set_bytes(b->bytes() * 2);
         a.mutable_cuda()->set_arena_bytes(4096);
       }},
      {"matmul 0 'mm': k = 0 is out of range",
       [](auto &a) { a.mutable_cuda()->mutable_gemms(0)->set_k(0); }},
  };
  EXPECT_EQ(validate(gemmProgram(g)), "");
  for (const Case &c : cases) {
    artifact::Artifact a = gemmProgram(g);
    c.breakIt(a);
    std::string error = validate(a);
    EXPECT_NE(error.find(c.expect), std::string::npos)
        << "expected '" << c.expect << "', got '" << error << "'";
  }
}

/// An int8 GEMM: s8 A [batch, m, k] and B [batch or 1, n, k] (cuBLASLt's
/// "TN" in row-major terms), D s32 [batch, m, n].
artifact::Artifact int8GemmProgram(int64_t m, int64_t n, int64_t k,
                                   int64_t batch, bool shareB) {
  GemmCase g{m, n, k, batch, false, true, false, shareB, "none", artifact::I8};
  artifact::Artifact a = gemmProgram(g);
  a.mutable_outputs(0)->set_dtype(artifact::I32);
  artifact::CudaCode *c = a.mutable_cuda();
  CudaBuffer *d = c->mutable_buffers(c->gemms(0).d());
  d->set_dtype(artifact::I32);
  d->set_bytes(batch * m * n * 4);
  c->set_arena_bytes((d->bytes() + 255) / 256 * 256);
  return a;
}

TEST(CudaValidateTest, Int8MatmulsFollowCublasLtsRules) {
  EXPECT_EQ(validate(int8GemmProgram(8, 16, 32, 2, false)), "");
  struct Case {
    const char *expect;
    std::function<void(artifact::Artifact &)> breakIt;
  };
  std::vector<Case> cases = {
      {"takes A as M x K and B as N x K",
       [](auto &a) { a.mutable_cuda()->mutable_gemms(0)->set_trans_a(true); }},
      {"takes A as M x K and B as N x K",
       [](auto &a) { a.mutable_cuda()->mutable_gemms(0)->set_trans_b(false); }},
      {"k and n are multiples of 4 (cuBLASLt's int8 rule), not k = 30",
       [](auto &a) { a.mutable_cuda()->mutable_gemms(0)->set_k(30); }},
      {"has no bias nor activation",
       [](auto &a) {
         a.mutable_cuda()->mutable_gemms(0)->set_activation("relu");
       }},
      {"operand D is f32, the matmul i32",
       [](auto &a) {
         a.mutable_cuda()->mutable_buffers(2)->set_dtype(artifact::F32);
         a.mutable_outputs(0)->set_dtype(artifact::F32);
       }},
  };
  for (const Case &c : cases) {
    artifact::Artifact a = int8GemmProgram(8, 16, 32, 2, false);
    c.breakIt(a);
    std::string error = validate(a);
    EXPECT_NE(error.find(c.expect), std::string::npos)
        << "expected '" << c.expect << "', got '" << error << "'";
  }
}

TEST(CudaValidateTest, AnArtifactWithoutCudaCodeIsRefused) {
  artifact::Artifact a = kernelProgram();
  a.clear_cuda();
  EXPECT_NE(validate(a).find("compile with loomc --target cuda"),
            std::string::npos);
}

// ---- no driver (CTest cuda-executor-no-driver) ----------------------------

TEST(CudaNoDriverTest, SessionsSayWhatIsMissing) {
  if (!envIs("LOOM_LIBCUDA", "/nonexistent"))
    GTEST_SKIP() << "run with LOOM_LIBCUDA=/nonexistent/libcuda.so.1 (CTest "
                    "cuda-executor-no-driver)";
  loom_session *session = nullptr;
  std::string message;
  // CUDA: the driver is named.
  EXPECT_EQ(createSession(kernelProgram(), LOOM_DEVICE_CUDA, &session, message),
            LOOM_UNAVAILABLE);
  EXPECT_NE(message.find("no CUDA driver (dlopen /nonexistent/libcuda.so.1"),
            std::string::npos)
      << message;
  EXPECT_EQ(session, nullptr);
  // AUTO on a CUDA-only artifact: the same, said to be about the artifact.
  EXPECT_EQ(createSession(kernelProgram(), LOOM_DEVICE_AUTO, &session, message),
            LOOM_UNAVAILABLE);
  EXPECT_NE(message.find("CUDA code only"), std::string::npos) << message;
  EXPECT_NE(message.find("no CUDA driver"), std::string::npos) << message;
  // CPU on a CUDA-only artifact.
  EXPECT_EQ(createSession(kernelProgram(), LOOM_DEVICE_CPU, &session, message),
            LOOM_UNAVAILABLE);
  EXPECT_NE(message.find("compile with loomc --target cpu"), std::string::npos)
      << message;
  // A broken program is refused before the driver is looked for.
  artifact::Artifact bad = kernelProgram();
  bad.mutable_cuda()->mutable_kernels(0)->set_args(0, 42);
  EXPECT_EQ(createSession(bad, LOOM_DEVICE_CUDA, &session, message),
            LOOM_BAD_ARTIFACT);
  EXPECT_NE(message.find("argument 0 is buffer 42 of 3"), std::string::npos)
      << message;
  // The device check alone.
  std::string why;
  EXPECT_FALSE(cuda::deviceAvailable(0, why));
  EXPECT_NE(why.find("no CUDA driver"), std::string::npos) << why;
}

TEST(CudaNoDriverTest, InstanceOptionsAreChecked) {
  loom_instance_options options;
  loom_instance_options_initialize(&options);
  EXPECT_EQ(options.device, LOOM_DEVICE_AUTO);
  EXPECT_EQ(options.device_ordinal, 0);
  options.device = static_cast<loom_device>(7);
  loom_instance *instance = nullptr;
  loom_status s = loom_instance_create(&options, &instance);
  EXPECT_EQ(loom_status_get_code(s), LOOM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(loom_status_message(s)).find("unknown device 7"),
            std::string::npos);
  loom_status_free(s);
  options.device = LOOM_DEVICE_CUDA;
  options.device_ordinal = -1;
  s = loom_instance_create(&options, &instance);
  EXPECT_EQ(loom_status_get_code(s), LOOM_INVALID_ARGUMENT);
  loom_status_free(s);
}

// ---- the stub driver (CTest cuda-executor-stub-driver) --------------------

TEST(CudaStubDriverTest, TableResolvesAndCuInitFailsByName) {
  const char *lib = std::getenv("LOOM_LIBCUDA");
  if (!lib || !std::strstr(lib, "stubs"))
    GTEST_SKIP() << "run with LOOM_LIBCUDA set to the toolkit's stub "
                    "libcuda.so (CTest cuda-executor-stub-driver)";
  std::string error;
  // Every symbol of the driver table (cuda.h's exported _v2 names) is in
  // the stub: the table itself is right.
  ASSERT_NE(cuda::driver(error), nullptr) << error;
  std::string why;
  EXPECT_FALSE(cuda::deviceAvailable(0, why));
  EXPECT_NE(why.find("cuInit failed: CUDA_ERROR_STUB_LIBRARY (34)"),
            std::string::npos)
      << why;
  loom_session *session = nullptr;
  std::string message;
  EXPECT_EQ(createSession(kernelProgram(), LOOM_DEVICE_CUDA, &session, message),
            LOOM_UNAVAILABLE);
  EXPECT_NE(message.find("CUDA_ERROR_STUB_LIBRARY"), std::string::npos)
      << message;
  // cuBLASLt's table resolves against the real library.
  std::string ltError;
  EXPECT_NE(cuda::cublasLt(ltError), nullptr) << ltError;
}

// ---- on a GPU, and in the CUDA simulator ----------------------------------

namespace {

/// The tests of CudaDeviceTest run on each device: a GPU (skipped when
/// none answers) and the CUDA simulator (the host; skipped only where it
/// cannot run).
class CudaDeviceTest : public ::testing::TestWithParam<loom_device> {
protected:
  bool simulated() const { return GetParam() == LOOM_DEVICE_CUDA_SIM; }
};

std::string deviceName(const ::testing::TestParamInfo<loom_device> &info) {
  return info.param == LOOM_DEVICE_CUDA ? "gpu" : "sim";
}

#define REQUIRE_DEVICE()                                                       \
  do {                                                                         \
    std::string why;                                                           \
    if (simulated() ? !cuda::sim::supported(why)                               \
                    : !cuda::deviceAvailable(0, why))                          \
      GTEST_SKIP() << "no "                                                    \
                   << (simulated() ? "CUDA simulator" : "CUDA device") << ": " \
                   << why;                                                     \
  } while (0)

float toFloat(artifact::DType t, const void *p) {
  uint32_t bits = 0;
  if (t == artifact::F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (t == artifact::BF16) {
    bits = uint32_t(h) << 16;
  } else { // f16
    uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 31, man = h & 1023;
    if (exp == 0) {
      float f = std::ldexp(static_cast<float>(man), -24);
      return sign ? -f : f;
    }
    if (exp == 31)
      bits = (sign << 31) | 0x7f800000 | (man << 13);
    else
      bits = (sign << 31) | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void fromFloat(artifact::DType t, float f, void *p) {
  if (t == artifact::F32) {
    std::memcpy(p, &f, 4);
    return;
  }
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t h;
  if (t == artifact::BF16) {
    h = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
  } else { // f16, values here are small and normal
    uint32_t sign = bits >> 31;
    int exp = static_cast<int>((bits >> 23) & 255) - 112;
    uint32_t man = bits & 0x7fffff;
    if (exp <= 0)
      h = static_cast<uint16_t>(sign << 15);
    else
      h = static_cast<uint16_t>((sign << 15) | (exp << 10) |
                                ((man + 0x1000) >> 13));
  }
  std::memcpy(p, &h, 2);
}

loom_tensor *randomTensor(artifact::DType t, std::vector<int64_t> dims,
                          std::mt19937 &rng) {
  loom_tensor *x = nullptr;
  loom_status_free(loom_tensor_create(static_cast<loom_dtype>(t), dims.size(),
                                      dims.data(), &x));
  std::uniform_real_distribution<float> u(-1, 1);
  size_t n = loom_tensor_element_count(x), e = artifact::dtypeSize(t);
  char *p = static_cast<char *>(loom_tensor_data(x));
  for (size_t i = 0; i < n; ++i)
    fromFloat(t, u(rng), p + i * e);
  return x;
}

} // namespace

TEST_P(CudaDeviceTest, KernelMatchesTheHost) {
  REQUIRE_DEVICE();
  loom_session *session = nullptr;
  std::string message;
  ASSERT_EQ(createSession(kernelProgram(), GetParam(), &session, message),
            LOOM_OK)
      << message;
  EXPECT_EQ(loom_session_device(session), GetParam());
  std::printf("device: %s\n", loom_session_device_description(session));
  int64_t dims[] = {1000};
  loom_tensor *x = nullptr;
  loom_status_free(loom_tensor_create(LOOM_DTYPE_F32, 1, dims, &x));
  float *xv = static_cast<float *>(loom_tensor_data(x));
  for (int i = 0; i < 1000; ++i)
    xv[i] = static_cast<float>(i) - 300;
  // Several runs from several threads: each takes its own slot.
  std::vector<std::thread> threads;
  std::vector<std::string> failures(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 5; ++r) {
        loom_tensor *y = nullptr;
        const loom_tensor *in[] = {x};
        loom_status s = loom_session_run(session, in, 1, &y, 1);
        if (s) {
          failures[t] = loom_status_message(s);
          loom_status_free(s);
          return;
        }
        const float *yv = static_cast<const float *>(loom_tensor_data(y));
        for (int i = 0; i < 1000; ++i)
          if (yv[i] != xv[i] * 2 + 0.5f * i) {
            failures[t] =
                "y[" + std::to_string(i) + "] = " + std::to_string(yv[i]);
            break;
          }
        loom_tensor_release(y);
      }
    });
  for (auto &t : threads)
    t.join();
  for (const std::string &f : failures)
    EXPECT_EQ(f, "");
  // A profiled run: the run, the upload, the kernel, the download.
  loom_profile *profile = nullptr;
  loom_status_free(loom_profile_create(&profile));
  loom_tensor *y = nullptr;
  const loom_tensor *in[] = {x};
  loom_status s = loom_session_run_profiled(session, in, 1, &y, 1, profile);
  EXPECT_EQ(s, nullptr) << loom_status_message(s);
  loom_status_free(s);
  EXPECT_EQ(loom_profile_event_count(profile), 4u);
  loom_tensor_release(y);
  loom_profile_release(profile);
  loom_tensor_release(x);
  loom_session_release(session);
}

TEST_P(CudaDeviceTest, MatmulsMatchTheHost) {
  REQUIRE_DEVICE();
  std::vector<GemmCase> cases = {
      {32, 48, 64, 1, false, false, false, false, "none", artifact::F32},
      {17, 9, 33, 3, true, false, true, false, "relu", artifact::F32},
      {16, 24, 40, 2, false, true, true, true, "gelu", artifact::F32},
      {64, 32, 48, 2, true, true, false, false, "none", artifact::F16},
      {32, 64, 32, 1, false, false, true, false, "gelu", artifact::BF16},
      {1, 40, 24, 1, false, true, true, false, "relu", artifact::F16},
  };
  std::mt19937 rng(7);
  for (const GemmCase &g : cases) {
    SCOPED_TRACE("m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) +
                 " k=" + std::to_string(g.k) +
                 " batch=" + std::to_string(g.batch) +
                 " transA=" + std::to_string(g.transA) +
                 " transB=" + std::to_string(g.transB) + " " + g.activation +
                 " " + artifact::dtypeName(g.dtype));
    artifact::Artifact a = gemmProgram(g);
    size_t e = artifact::dtypeSize(g.dtype);
    std::vector<char> bias(g.n * e);
    std::vector<float> biasF(g.n, 0);
    if (g.bias) {
      for (int64_t j = 0; j < g.n; ++j) {
        fromFloat(g.dtype, 0.1f * static_cast<float>(j % 7) - 0.3f,
                  bias.data() + j * e);
        biasF[j] = toFloat(g.dtype, bias.data() + j * e);
      }
      a.mutable_weights(0)->set_data(bias.data(), bias.size());
    }
    loom_session *session = nullptr;
    std::string message;
    ASSERT_EQ(createSession(a, GetParam(), &session, message), LOOM_OK)
        << message;
    std::vector<int64_t> aDims = {g.batch, g.transA ? g.k : g.m,
                                  g.transA ? g.m : g.k};
    std::vector<int64_t> bDims = {g.shareB ? 1 : g.batch, g.transB ? g.n : g.k,
                                  g.transB ? g.k : g.n};
    loom_tensor *at = randomTensor(g.dtype, aDims, rng);
    loom_tensor *bt = randomTensor(g.dtype, bDims, rng);
    const loom_tensor *in[] = {at, bt};
    loom_tensor *d = nullptr;
    loom_status s = loom_session_run(session, in, 2, &d, 1);
    ASSERT_EQ(s, nullptr) << loom_status_message(s);
    const char *ap = static_cast<const char *>(loom_tensor_data_const(at));
    const char *bp = static_cast<const char *>(loom_tensor_data_const(bt));
    const char *dp = static_cast<const char *>(loom_tensor_data_const(d));
    double worst = 0;
    float tol = g.dtype == artifact::F32 ? 1e-4f : 3e-2f;
    for (int64_t b = 0; b < g.batch; ++b)
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) {
          double acc = 0;
          for (int64_t p = 0; p < g.k; ++p) {
            int64_t ai = b * g.m * g.k + (g.transA ? p * g.m + i : i * g.k + p);
            int64_t bb = g.shareB ? 0 : b;
            int64_t bi =
                bb * g.k * g.n + (g.transB ? j * g.k + p : p * g.n + j);
            acc += double(toFloat(g.dtype, ap + ai * e)) *
                   toFloat(g.dtype, bp + bi * e);
          }
          acc += biasF[j];
          if (g.activation == "relu")
            acc = std::max(acc, 0.0);
          if (g.activation == "gelu")
            acc = 0.5 * acc *
                  (1 + std::tanh(0.7978845608 *
                                 (acc + 0.044715 * acc * acc * acc)));
          double got = toFloat(g.dtype, dp + ((b * g.m + i) * g.n + j) * e);
          worst = std::max(worst, std::fabs(got - acc) / (1 + std::fabs(acc)));
        }
    EXPECT_LT(worst, tol);
    loom_tensor_release(at);
    loom_tensor_release(bt);
    loom_tensor_release(d);
    loom_session_release(session);
  }
}

TEST_P(CudaDeviceTest, Int8MatmulsAreExact) {
  REQUIRE_DEVICE();
  struct Case {
    int64_t m, n, k, batch;
    bool shareB;
  };
  // Values at the ends of s8's range: every sum exact in the s32 result.
  for (Case g : {Case{5, 24, 64, 1, false}, Case{16, 8, 36, 3, false},
                 Case{7, 12, 4, 2, true}}) {
    SCOPED_TRACE("m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) +
                 " k=" + std::to_string(g.k) +
                 " batch=" + std::to_string(g.batch));
    loom_session *session = nullptr;
    std::string message;
    ASSERT_EQ(createSession(int8GemmProgram(g.m, g.n, g.k, g.batch, g.shareB),
                            GetParam(), &session, message),
              LOOM_OK)
        << message;
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> u(-128, 127);
    auto make = [&](std::vector<int64_t> dims) {
      loom_tensor *x = nullptr;
      loom_status_free(
          loom_tensor_create(LOOM_DTYPE_I8, dims.size(), dims.data(), &x));
      auto *p = static_cast<int8_t *>(loom_tensor_data(x));
      for (size_t i = 0; i < loom_tensor_element_count(x); ++i)
        p[i] = static_cast<int8_t>(i % 5 == 0 ? -128 : u(rng));
      return x;
    };
    loom_tensor *at = make({g.batch, g.m, g.k});
    loom_tensor *bt = make({g.shareB ? 1 : g.batch, g.n, g.k});
    const loom_tensor *in[] = {at, bt};
    loom_tensor *d = nullptr;
    loom_status s = loom_session_run(session, in, 2, &d, 1);
    ASSERT_EQ(s, nullptr) << loom_status_message(s);
    auto *ap = static_cast<const int8_t *>(loom_tensor_data_const(at));
    auto *bp = static_cast<const int8_t *>(loom_tensor_data_const(bt));
    auto *dp = static_cast<const int32_t *>(loom_tensor_data_const(d));
    int64_t wrong = 0;
    for (int64_t b = 0; b < g.batch; ++b)
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) {
          int64_t acc = 0, bb = g.shareB ? 0 : b;
          for (int64_t p = 0; p < g.k; ++p)
            acc += int64_t(ap[(b * g.m + i) * g.k + p]) *
                   bp[(bb * g.n + j) * g.k + p];
          wrong += dp[(b * g.m + i) * g.n + j] != acc;
        }
    EXPECT_EQ(wrong, 0);
    loom_tensor_release(at);
    loom_tensor_release(bt);
    loom_tensor_release(d);
    loom_session_release(session);
  }
}

TEST_P(CudaDeviceTest, Tf32MatmulsAreAskedFor) {
  REQUIRE_DEVICE();
  // loomc --allow-tf32 (CudaCode.allow_tf32): f32 matmuls computed with
  // CUBLAS_COMPUTE_32F_FAST_TF32, their inputs read with a 10-bit
  // mantissa; without it, in f32.
  GemmCase g{32, 48, 256, 1, false, false, false, false, "none", artifact::F32};
  std::mt19937 rng(11);
  loom_tensor *at = randomTensor(g.dtype, {1, g.m, g.k}, rng);
  loom_tensor *bt = randomTensor(g.dtype, {1, g.k, g.n}, rng);
  const float *ap = static_cast<const float *>(loom_tensor_data_const(at));
  const float *bp = static_cast<const float *>(loom_tensor_data_const(bt));
  double worst[2] = {0, 0};
  for (int tf32 = 0; tf32 < 2; ++tf32) {
    artifact::Artifact a = gemmProgram(g);
    a.mutable_cuda()->set_allow_tf32(tf32 == 1);
    loom_session *session = nullptr;
    std::string message;
    ASSERT_EQ(createSession(a, GetParam(), &session, message), LOOM_OK)
        << message;
    std::string description = loom_session_device_description(session);
    EXPECT_EQ(description.find("(f32 in TF32)") != std::string::npos, tf32 == 1)
        << description;
    const loom_tensor *in[] = {at, bt};
    loom_tensor *d = nullptr;
    Status st(loom_session_run(session, in, 2, &d, 1));
    ASSERT_EQ(st.code(), LOOM_OK) << st.message();
    const float *dp = static_cast<const float *>(loom_tensor_data_const(d));
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < g.k; ++p)
          acc += double(ap[i * g.k + p]) * bp[p * g.n + j];
        worst[tf32] = std::max(worst[tf32], std::fabs(dp[i * g.n + j] - acc) /
                                                (1 + std::fabs(acc)));
      }
    loom_tensor_release(d);
    loom_session_release(session);
  }
  EXPECT_LT(worst[0], 1e-5) << "f32";
  EXPECT_LT(worst[1], 1e-2) << "TF32";
  if (simulated()) // the simulator rounds as tensor cores do, always
    EXPECT_GT(worst[1], 1e-5) << "TF32 inputs are rounded";
  loom_tensor_release(at);
  loom_tensor_release(bt);
}

TEST_P(CudaDeviceTest, LaunchErrorsNameTheKernel) {
  REQUIRE_DEVICE();
  // More dynamic shared memory than any GPU has: refused at load, named.
  artifact::Artifact a = kernelProgram();
  a.mutable_cuda()->mutable_kernels(0)->set_shared_bytes(64 << 20);
  loom_session *session = nullptr;
  std::string message;
  EXPECT_EQ(createSession(a, GetParam(), &session, message), LOOM_UNAVAILABLE);
  EXPECT_NE(message.find("kernel axpw needs"), std::string::npos) << message;
  // A source that does not compile: NVRTC's log.
  artifact::Artifact b = kernelProgram();
  b.mutable_cuda()->set_source(std::string(kSource) + "\nthis is not C++;\n");
  EXPECT_EQ(createSession(b, GetParam(), &session, message), LOOM_BAD_ARTIFACT);
  EXPECT_NE(message.find(simulated() ? "host C++" : "NVRTC"), std::string::npos)
      << message;
}

TEST_P(CudaDeviceTest, ARefusedCubinFallsBackToTheSource) {
  REQUIRE_DEVICE();
  // Cubins the driver refuses for every arch: the source compiled here
  // runs instead (the simulator compiles the source whatever the cubins).
  artifact::Artifact a = kernelProgram();
  for (const char *arch : {"sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90",
                           "sm_100", "sm_103", "sm_110", "sm_120"}) {
    artifact::CudaBinary *b = a.mutable_cuda()->add_binaries();
    b->set_arch(arch);
    b->set_cubin(std::string("not a cubin"));
  }
  loom_session *session = nullptr;
  std::string message;
  ASSERT_EQ(createSession(a, GetParam(), &session, message), LOOM_OK)
      << message;
  std::string description = loom_session_device_description(session);
  if (!simulated()) {
    EXPECT_NE(description.find("the artifact's cubin was refused"),
              std::string::npos)
        << description;
  }
  int64_t dims[] = {1000};
  loom_tensor *x = nullptr, *y = nullptr;
  loom_status_free(loom_tensor_create(LOOM_DTYPE_F32, 1, dims, &x));
  float *xv = static_cast<float *>(loom_tensor_data(x));
  for (int i = 0; i < 1000; ++i)
    xv[i] = static_cast<float>(i);
  const loom_tensor *in[] = {x};
  Status st(loom_session_run(session, in, 1, &y, 1));
  ASSERT_EQ(st.code(), LOOM_OK) << st.message();
  const float *yv = static_cast<const float *>(loom_tensor_data(y));
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(yv[i], 2.0f * i + 0.5f * i) << i;
  loom_tensor_release(y);
  loom_tensor_release(x);
  loom_session_release(session);
}

TEST_P(CudaDeviceTest, TrainingStateStaysOnTheDevice) {
  REQUIRE_DEVICE();
  // The program's input 0 as state, its output 0 the next state: s' = 2 s
  // + w, run and adopted on the device; the host's tensor is not read
  // once the device holds the state.
  loom_session *session = nullptr;
  std::string message;
  ASSERT_EQ(createSession(kernelProgram(), GetParam(), &session, message),
            LOOM_OK)
      << message;
  runtime::Executor &executor = runtime::sessionExecutor(session);
  runtime::DeviceState state;
  state.pairs = {{0, 0}};
  ASSERT_TRUE(executor.claimState(state));
  EXPECT_FALSE(executor.claimState(state)) << "one owner at a time";
  int64_t dims[] = {1000};
  loom_tensor *s = nullptr;
  loom_status_free(loom_tensor_create(LOOM_DTYPE_F32, 1, dims, &s));
  float *sv = static_cast<float *>(loom_tensor_data(s));
  std::vector<float> want(1000);
  for (int i = 0; i < 1000; ++i)
    want[i] = sv[i] = static_cast<float>(i % 7) - 3;
  auto step = [&](bool adopt) {
    loom_tensor *out = nullptr;
    const loom_tensor *in[] = {s};
    Status st(
        runtime::sessionRunWithState(session, in, 1, &out, 1, nullptr, state));
    ASSERT_EQ(st.code(), LOOM_OK) << st.message();
    EXPECT_EQ(out, nullptr) << "a state output stays on the device";
    state.onDevice = true;
    if (adopt) {
      Status a(executor.adoptState());
      ASSERT_EQ(a.code(), LOOM_OK) << a.message();
      for (int i = 0; i < 1000; ++i)
        want[i] = 2 * want[i] + 0.5f * i;
    }
    // The host's copy is stale from here: poisoned, it must not be read.
    for (int i = 0; i < 1000; ++i)
      sv[i] = std::nanf("");
  };
  step(true);
  step(true);
  step(false); // a skipped update (non-finite gradients) keeps the state
  std::vector<float> got(1000, -1);
  Status r(executor.readState(0, got.data(), got.size() * sizeof(float)));
  ASSERT_EQ(r.code(), LOOM_OK) << r.message();
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(got[i], want[i]) << "state element " << i;
  Status bad(executor.readState(0, got.data(), 4));
  EXPECT_EQ(bad.code(), LOOM_INTERNAL);
  executor.releaseState();
  EXPECT_TRUE(executor.claimState(state)) << "released, claimed again";
  executor.releaseState();
  loom_tensor_release(s);
  loom_session_release(session);
}

// ---- what the CUDA simulator catches ----------------------------------------

namespace {

/// Runs kernelProgram() with its kernel's source, name, grid and block
/// replaced, in the simulator: the run's status, and y.
Status runSimulated(const std::string &source, const std::string &name,
                    int grid, int block, std::vector<float> &y) {
  artifact::Artifact a = kernelProgram();
  a.mutable_cuda()->set_source(source);
  artifact::CudaKernel *k = a.mutable_cuda()->mutable_kernels(0);
  k->set_name(name);
  k->set_grid(grid);
  k->set_block(block);
  loom_session *session = nullptr;
  std::string message;
  if (createSession(a, LOOM_DEVICE_CUDA_SIM, &session, message) != LOOM_OK) {
    ADD_FAILURE() << message;
    return Status(nullptr);
  }
  int64_t dims[] = {1000};
  loom_tensor *x = nullptr, *out = nullptr;
  loom_status_free(loom_tensor_create(LOOM_DTYPE_F32, 1, dims, &x));
  float *xv = static_cast<float *>(loom_tensor_data(x));
  for (int i = 0; i < 1000; ++i)
    xv[i] = static_cast<float>(i);
  const loom_tensor *in[] = {x};
  Status st(loom_session_run(session, in, 1, &out, 1));
  y.clear();
  if (out) {
    const float *yv = static_cast<const float *>(loom_tensor_data(out));
    y.assign(yv, yv + 1000);
    loom_tensor_release(out);
  }
  loom_tensor_release(x);
  loom_session_release(session);
  return st;
}

#define REQUIRE_SIMULATOR()                                                    \
  do {                                                                         \
    std::string why;                                                           \
    if (!cuda::sim::supported(why))                                            \
      GTEST_SKIP() << why;                                                     \
  } while (0)

} // namespace

TEST(CudaSimTest, AWritePastAnAllocationNamesTheKernel) {
  REQUIRE_SIMULATOR();
  // y is the arena's 4000 bytes (the allocation 4096): threads up to
  // 4 * 1024 write far past it.
  std::vector<float> y;
  Status st = runSimulated(R"(#define LOOM_KERNEL extern "C" __global__
LOOM_KERNEL void over(const float *x, const float *w, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i * 4] = x[i % 1000];
}
)",
                           "over", 4, 1024, y);
  EXPECT_EQ(st.code(), LOOM_INTERNAL);
  EXPECT_NE(st.message().find("CUDA_ERROR_ILLEGAL_ADDRESS: kernel over"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("past the end of a device allocation of 4096"),
            std::string::npos)
      << st.message();
}

TEST(CudaSimTest, ADeadlockedBarrierIsNamed) {
  REQUIRE_SIMULATOR();
  // Half of warp 0 shuffles while the other half waits at __syncthreads.
  std::vector<float> y;
  Status st = runSimulated(R"(#define LOOM_KERNEL extern "C" __global__
LOOM_KERNEL void split(const float *x, const float *w, float *y) {
  float v = x[threadIdx.x];
  if (threadIdx.x < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
  else __syncthreads();
  y[threadIdx.x] = v;
}
)",
                           "split", 1, 64, y);
  EXPECT_EQ(st.code(), LOOM_INTERNAL);
  EXPECT_NE(st.message().find("CUDA_ERROR_LAUNCH_FAILED: kernel split, "
                              "block 0"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("deadlock"), std::string::npos) << st.message();
}

TEST(CudaSimTest, ShufflesAndBarriersMatchAGpu) {
  REQUIRE_SIMULATOR();
  // A block sum through shuffles and shared memory, then y[i] = x[i] +
  // the sum of x over the block (blocks of 256 threads).
  std::vector<float> y;
  Status st = runSimulated(R"(#define LOOM_KERNEL extern "C" __global__
LOOM_KERNEL void bsum(const float *x, const float *w, float *y) {
  __shared__ float part[8];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < 1000 ? x[i] : 0.f, s = v;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
  __syncthreads();
  float total = 0;
  for (int k = 0; k < 8; ++k) total += part[k];
  if (i < 1000) y[i] = v + total;
}
)",
                           "bsum", 4, 256, y);
  ASSERT_EQ(st.code(), LOOM_OK) << st.message();
  for (int i = 0; i < 1000; ++i) {
    int b = i / 256;
    float total = 0;
    for (int j = b * 256; j < std::min(1000, b * 256 + 256); ++j)
      total += static_cast<float>(j);
    ASSERT_EQ(y[i], static_cast<float>(i) + total) << "y[" << i << "]";
  }
}

TEST(CudaSimTest, Int8MatmulsTakeCublasLtsLayoutOnly) {
  // The simulator's cuBLASLt answers as the GPU's int8 path does: "TN"
  // with m, k and the leading dims multiples of 4, else no algorithm.
  using namespace cuda;
  const CublasLt &lt = *sim::cublasLt();
  cublasLtHandle_t handle = nullptr;
  ASSERT_EQ(lt.cublasLtCreate(&handle), 0);
  auto tryShape = [&](int32_t opA, int32_t opB, uint64_t m, uint64_t k,
                      int64_t lda) {
    cublasLtMatmulDesc_t desc = nullptr;
    EXPECT_EQ(lt.cublasLtMatmulDescCreate(&desc, api::kComputeI32, api::kR32I),
              0);
    lt.cublasLtMatmulDescSetAttribute(desc, api::kDescTransA, &opA,
                                      sizeof(opA));
    lt.cublasLtMatmulDescSetAttribute(desc, api::kDescTransB, &opB,
                                      sizeof(opB));
    uint64_t n = 8;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    lt.cublasLtMatrixLayoutCreate(&a, api::kR8I, k, m, lda);
    lt.cublasLtMatrixLayoutCreate(&b, api::kR8I, k, n, k);
    lt.cublasLtMatrixLayoutCreate(&d, api::kR32I, m, n, m);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    lt.cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, d, d, nullptr, 1,
                                      &result, &found);
    int status = -1;
    if (found) {
      // D (m x n) = A^T B, A k x m, B k x n: every element k * 2 * 3.
      std::vector<int8_t> av(lda * m, 2), bv(k * n, 3);
      std::vector<int32_t> dv(m * n, -1);
      int32_t one = 1, zero = 0;
      status = lt.cublasLtMatmul(handle, desc, &one, av.data(), a, bv.data(), b,
                                 &zero, dv.data(), d, dv.data(), d,
                                 &result.algo, nullptr, 0, nullptr);
      for (int32_t v : dv)
        EXPECT_EQ(v, static_cast<int32_t>(6 * k));
    }
    for (cublasLtMatrixLayout_t l : {a, b, d})
      lt.cublasLtMatrixLayoutDestroy(l);
    lt.cublasLtMatmulDescDestroy(desc);
    return found ? status : -1;
  };
  using api::kOpN, api::kOpT;
  EXPECT_EQ(tryShape(kOpT, kOpN, 12, 16, 16), 0);
  EXPECT_EQ(tryShape(kOpN, kOpN, 12, 16, 16), -1) << "NN";
  EXPECT_EQ(tryShape(kOpT, kOpT, 12, 16, 16), -1) << "TT";
  EXPECT_EQ(tryShape(kOpT, kOpN, 12, 18, 18), -1) << "k = 18";
  EXPECT_EQ(tryShape(kOpT, kOpN, 10, 16, 16), -1) << "m = 10";
  EXPECT_EQ(tryShape(kOpT, kOpN, 12, 16, 18), -1) << "lda = 18";
  lt.cublasLtDestroy(handle);
}

TEST(CudaSimTest, MemoryNothingWroteReadsAsNaN) {
  REQUIRE_SIMULATOR();
  // A kernel that writes half its output: the rest is what the device
  // memory held, 0xff bytes (NaN), so a comparison with the CPU fails.
  std::vector<float> y;
  Status st = runSimulated(R"(#define LOOM_KERNEL extern "C" __global__
LOOM_KERNEL void half(const float *x, const float *w, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 500) y[i] = x[i];
}
)",
                           "half", 4, 256, y);
  ASSERT_EQ(st.code(), LOOM_OK) << st.message();
  ASSERT_EQ(y.size(), 1000u);
  EXPECT_EQ(y[499], 499.0f);
  EXPECT_TRUE(std::isnan(y[500]));
  EXPECT_TRUE(std::isnan(y[999]));
}

INSTANTIATE_TEST_SUITE_P(Devices, CudaDeviceTest,
                         ::testing::Values(LOOM_DEVICE_CUDA,
                                           LOOM_DEVICE_CUDA_SIM),
                         deviceName);
