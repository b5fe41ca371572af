//===- CudaExecutor.cpp - runs an artifact's CUDA program on a GPU --------===//

#include "runtime/src/cuda/CudaExecutor.h"

#include "loom/common/CodegenAbi.h"
#include "loom/common/DynamicLibrary.h"
#include "loom/common/Nvrtc.h"
#include "loom/common/SourceChunks.h"
#include "runtime/src/Profile.h"
#include "runtime/src/Session.h"
#include "runtime/src/collectives/RunCollectives.h"
#include "runtime/src/cuda/CudaApi.h"
#include "runtime/src/cuda/sim/CudaSim.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>

namespace loom::cuda {
namespace {

using artifact::CudaBuffer;
using artifact::CudaCode;
using artifact::CudaCollective;
using artifact::CudaGemm;
using artifact::CudaKernel;

/// Device and staging buffers start at multiples of this (the compiler's
/// kBufferAlignment: 16-byte vector loads, cuBLASLt's preferred alignment).
constexpr int64_t kAlign = 256;
/// The largest size or count the validator accepts: products of a few of
/// them stay far from int64 overflow.
constexpr int64_t kMaxBytes = int64_t(1) << 46;
/// cuBLASLt's workspace per run slot (NVIDIA suggests 32 MiB on Hopper).
constexpr size_t kWorkspaceBytes = size_t(32) << 20;
/// Kernels per NVRTC program when the runtime compiles the source.
constexpr size_t kKernelsPerProgram = 48;

int64_t alignUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

std::string quoted(const std::string &s) { return "'" + s + "'"; }

bool isIdentifier(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

/// The number of parameters of `LOOM_KERNEL void NAME(...)` in `source`;
/// -1 when the declaration is not there.
int declaredParams(const std::string &source, const std::string &name) {
  std::string head = kKernelDecl + name + "(";
  size_t at = source.find(head);
  if (at == std::string::npos)
    return -1;
  size_t i = at + head.size();
  int depth = 0, params = 0;
  bool any = false;
  for (; i < source.size(); ++i) {
    char c = source[i];
    if (c == ')' && depth == 0)
      break;
    if (c == '(' || c == '<')
      ++depth;
    else if (c == ')' || c == '>')
      --depth;
    else if (c == ',' && depth == 0)
      ++params;
    else if (!std::isspace(static_cast<unsigned char>(c)))
      any = true;
  }
  if (i == source.size())
    return -1;
  return any ? params + 1 : 0;
}

/// Bytes of a tensor of a signature; -1 when a dim is dynamic.
int64_t signatureBytes(const artifact::TensorSignature &s) {
  int64_t n = static_cast<int64_t>(artifact::dtypeSize(s.dtype()));
  for (const auto &d : s.dims()) {
    if (d.size() < 0 || d.size() > kMaxBytes)
      return -1;
    n *= d.size();
    if (n > kMaxBytes)
      return -1;
  }
  return n;
}

/// Bytes of a weight (parse checked its data against its dims).
int64_t weightSize(const artifact::Weight &w) {
  int64_t n = static_cast<int64_t>(artifact::dtypeSize(w.dtype()));
  for (int64_t d : w.dims())
    n *= d;
  return n;
}

std::string bufferWhere(const CudaCode &c, int64_t i) {
  return "buffer " + std::to_string(i) + " (" + quoted(c.buffers(i).name()) +
         ")";
}

} // namespace

bool validateProgram(const artifact::Artifact &a, std::string &error) {
  auto fail = [&](const std::string &what) {
    error = "CUDA program: " + what;
    return false;
  };
  if (!a.has_cuda())
    return fail("the artifact has none (compile with loomc --target cuda)");
  const CudaCode &c = a.cuda();
  if (c.source().empty() && c.binaries_size() == 0)
    return fail("no source and no binaries");
  if (c.arena_bytes() < 0 || c.arena_bytes() > kMaxBytes)
    return fail("arena_bytes " + std::to_string(c.arena_bytes()) +
                " is out of range");
  const int64_t numBuffers = c.buffers_size();
  for (int64_t i = 0; i < numBuffers; ++i) {
    const CudaBuffer &b = c.buffers(i);
    std::string where = bufferWhere(c, i);
    size_t elem = artifact::dtypeSize(b.dtype());
    if (!elem)
      return fail(where + " has an unknown dtype " + std::to_string(b.dtype()));
    if (b.bytes() < 0 || b.bytes() > kMaxBytes)
      return fail(where + " has " + std::to_string(b.bytes()) + " bytes");
    int64_t count = 1;
    for (int64_t d : b.dims()) {
      if (d < 0 || d > kMaxBytes || (count *= d) > kMaxBytes)
        return fail(where + " has an invalid shape");
    }
    if (count * static_cast<int64_t>(elem) != b.bytes())
      return fail(
          where + " holds " + std::to_string(b.bytes()) + " bytes, its type " +
          artifact::typeString(b.dtype(), b.dims().data(), b.dims_size()) +
          " needs " + std::to_string(count * elem));
    switch (b.kind()) {
    case CudaBuffer::ARENA:
      if (b.offset() < 0 || b.offset() % kAlign != 0 ||
          b.offset() > c.arena_bytes() - b.bytes())
        return fail(where + " at arena offset " + std::to_string(b.offset()) +
                    " + " + std::to_string(b.bytes()) +
                    " bytes is not inside the arena of " +
                    std::to_string(c.arena_bytes()) +
                    " bytes (or not 256-byte aligned)");
      break;
    case CudaBuffer::INPUT: {
      if (b.index() < 0 || b.index() >= a.inputs_size())
        return fail(where + " is input " + std::to_string(b.index()) + " of " +
                    std::to_string(a.inputs_size()));
      const auto &s = a.inputs(b.index());
      int64_t want = signatureBytes(s);
      if (want < 0)
        return fail("input " + std::to_string(b.index()) + " (" +
                    quoted(s.name()) +
                    ") has a dynamic shape; the CUDA target takes static "
                    "shapes");
      if (s.dtype() != b.dtype() || want != b.bytes() || b.offset() != 0)
        return fail(where + " does not match input " +
                    std::to_string(b.index()) + " (" + quoted(s.name()) + ")");
      break;
    }
    case CudaBuffer::WEIGHT: {
      if (b.index() < 0 || b.index() >= a.weights_size())
        return fail(where + " is weight " + std::to_string(b.index()) + " of " +
                    std::to_string(a.weights_size()));
      const auto &w = a.weights(b.index());
      if (w.dtype() != b.dtype() || weightSize(w) != b.bytes() ||
          b.offset() != 0)
        return fail(where + " does not match weight " +
                    std::to_string(b.index()) + " (" + quoted(w.name()) + ")");
      break;
    }
    default:
      return fail(where + " has an unknown kind " + std::to_string(b.kind()));
    }
  }
  auto bufferIndex = [&](int64_t i, const std::string &what) {
    if (i >= 0 && i < numBuffers)
      return true;
    error = "CUDA program: " + what + " is buffer " + std::to_string(i) +
            " of " + std::to_string(numBuffers);
    return false;
  };
  for (int i = 0; i < c.kernels_size(); ++i) {
    const CudaKernel &k = c.kernels(i);
    std::string where = "kernel " + std::to_string(i) + " " + quoted(k.name());
    if (!isIdentifier(k.name()))
      return fail(where + ": not a C identifier");
    if (k.grid() < 1 || k.grid() > 0x7fffffff)
      return fail(where + ": grid " + std::to_string(k.grid()) +
                  " is out of range (1 to 2^31-1)");
    if (k.block() < 1 || k.block() > 1024)
      return fail(where + ": block " + std::to_string(k.block()) +
                  " is out of range (1 to 1024)");
    if (k.shared_bytes() < 0)
      return fail(where + ": negative shared memory");
    for (int j = 0; j < k.args_size(); ++j)
      if (!bufferIndex(k.args(j), where + " argument " + std::to_string(j)))
        return false;
    if (!c.source().empty()) {
      int declared = declaredParams(c.source(), k.name());
      if (declared < 0)
        return fail(where + " is not declared in the source");
      // A pointer table is the kernel's one parameter.
      int passed = k.pointer_table() ? 1 : k.args_size();
      if (declared != passed)
        return fail(where + " takes " + std::to_string(declared) +
                    " parameters in the source, the program passes " +
                    std::to_string(passed) +
                    (k.pointer_table() ? " (a pointer table)" : ""));
    }
  }
  for (int i = 0; i < c.gemms_size(); ++i) {
    const CudaGemm &g = c.gemms(i);
    std::string where = "matmul " + std::to_string(i) + " " + quoted(g.name());
    // INT8: s8 x s8 -> s32 (CUBLAS_COMPUTE_32I), D of INT32.
    bool int8 = g.dtype() == artifact::I8;
    if (g.dtype() != artifact::F32 && g.dtype() != artifact::F16 &&
        g.dtype() != artifact::BF16 && g.dtype() != artifact::F64 && !int8)
      return fail(where + ": dtype " + artifact::dtypeName(g.dtype()) +
                  " (cuBLASLt runs f32, f16, bf16, f64, and int8 -> int32)");
    if (int8 && (g.trans_a() || !g.trans_b()))
      return fail(where + ": an int8 matmul takes A as M x K and B as N x K "
                          "(trans_a false, trans_b true: cuBLASLt's int8 "
                          "layout)");
    if (int8 && (g.k() % api::kInt8Multiple || g.n() % api::kInt8Multiple))
      return fail(where +
                  ": an int8 matmul's k and n are multiples of 4 "
                  "(cuBLASLt's int8 rule), not k = " +
                  std::to_string(g.k()) + ", n = " + std::to_string(g.n()));
    if (int8 && (g.bias() != -1 || g.activation() != "none"))
      return fail(where + ": an int8 matmul has no bias nor activation");
    for (auto [v, n] : {std::pair{g.m(), "m"},
                        {g.n(), "n"},
                        {g.k(), "k"},
                        {g.batch(), "batch"}})
      if (v < 1 || v > (int64_t(1) << 31))
        return fail(where + ": " + n + " = " + std::to_string(v) +
                    " is out of range");
    for (auto [v, n] : {std::pair{g.stride_a(), "stride_a"},
                        {g.stride_b(), "stride_b"},
                        {g.stride_d(), "stride_d"}})
      if (v < 0 || v > kMaxBytes)
        return fail(where + ": " + n + " = " + std::to_string(v) +
                    " is out of range");
    if (g.batch() > 1 && g.stride_d() < g.m() * g.n())
      return fail(where + ": the batches of D overlap (stride_d " +
                  std::to_string(g.stride_d()) + ")");
    if (g.activation() != "none" && g.activation() != "relu" &&
        g.activation() != "gelu")
      return fail(where + ": unknown activation " + quoted(g.activation()));
    auto operand = [&](int64_t buffer, const char *name, int64_t stride,
                       int64_t elems) {
      std::string what = where + " operand " + name;
      if (!bufferIndex(buffer, what))
        return false;
      const CudaBuffer &b = c.buffers(buffer);
      artifact::DType want =
          int8 && std::string(name) == "D" ? artifact::I32 : g.dtype();
      if (b.dtype() != want)
        return fail(what + " is " + artifact::dtypeName(b.dtype()) +
                    ", the matmul " + artifact::dtypeName(want));
      int64_t need = (g.batch() - 1) * stride + elems;
      int64_t have =
          b.bytes() / static_cast<int64_t>(artifact::dtypeSize(b.dtype()));
      if (need > have)
        return fail(what + " needs " + std::to_string(need) + " elements, " +
                    bufferWhere(c, buffer) + " has " + std::to_string(have));
      return true;
    };
    if (!operand(g.a(), "A", g.stride_a(), g.m() * g.k()) ||
        !operand(g.b(), "B", g.stride_b(), g.k() * g.n()) ||
        !operand(g.d(), "D", g.stride_d(), g.m() * g.n()))
      return false;
    if (g.bias() != -1 && !operand(g.bias(), "bias", 0, g.n()))
      return false;
  }
  for (int i = 0; i < c.collectives_size(); ++i) {
    const CudaCollective &k = c.collectives(i);
    std::string where =
        "collective " + std::to_string(i) + " " + quoted(k.name());
    if (k.kind() < 0 || k.kind() >= abi::kNumCollectiveKinds)
      return fail(where + ": unknown kind " + std::to_string(k.kind()));
    if (!runtime::collectives::isCollectiveDtype(
            static_cast<loom_dtype>(k.dtype())))
      return fail(where + ": dtype " + artifact::dtypeName(k.dtype()) +
                  " (collectives take f32, f16, bf16, f64, i64, i32, i8)");
    bool reduces =
        k.kind() == abi::kAllReduce || k.kind() == abi::kReduceScatter;
    if ((reduces && (k.op() < 0 || k.op() > abi::kReduceProduct)) ||
        (k.kind() == abi::kBroadcast && (k.op() < 0 || k.op() > 65535)))
      return fail(where + ": op " + std::to_string(k.op()) +
                  " is not a reduction (0 to 3) or a root");
    if (k.axes() < 0 || k.axes() >= (int64_t(1) << 16))
      return fail(where + ": axes mask " + std::to_string(k.axes()) +
                  " is out of range");
    if (!bufferIndex(k.in(), where + " input") ||
        !bufferIndex(k.out(), where + " output"))
      return false;
    const CudaBuffer &in = c.buffers(k.in()), &out = c.buffers(k.out());
    if (in.dtype() != k.dtype() || out.dtype() != k.dtype())
      return fail(where + ": its buffers are not " +
                  artifact::dtypeName(k.dtype()));
    if (out.kind() != CudaBuffer::ARENA)
      return fail(where + ": it writes " + bufferWhere(c, k.out()) +
                  ", not an arena buffer");
    // The group's size G is the mesh's; here only that one size divides
    // the other as the kind needs.
    int64_t small = k.kind() == abi::kAllGather ? in.bytes() : out.bytes();
    int64_t large = k.kind() == abi::kAllGather ? out.bytes() : in.bytes();
    bool fits = k.kind() == abi::kAllReduce || k.kind() == abi::kBroadcast
                    ? in.bytes() == out.bytes()
                    : (small == 0 ? large == 0 : large % small == 0);
    if (!fits)
      return fail(where + ": input of " + std::to_string(in.bytes()) +
                  " bytes and output of " + std::to_string(out.bytes()) +
                  " do not fit its kind");
  }
  // Each collective is started once and waited for once, after its start.
  std::vector<int> started(c.collectives_size(), 0),
      waited(c.collectives_size(), 0);
  for (int i = 0; i < c.steps_size(); ++i) {
    const auto &s = c.steps(i);
    std::string where = "step " + std::to_string(i);
    if (s.has_launch()) {
      if (s.launch() < 0 || s.launch() >= c.kernels_size())
        return fail(where + " launches kernel " + std::to_string(s.launch()) +
                    " of " + std::to_string(c.kernels_size()));
    } else if (s.has_gemm()) {
      if (s.gemm() < 0 || s.gemm() >= c.gemms_size())
        return fail(where + " runs matmul " + std::to_string(s.gemm()) +
                    " of " + std::to_string(c.gemms_size()));
    } else if (s.has_collective() || s.has_collective_wait()) {
      int k = s.has_collective() ? s.collective() : s.collective_wait();
      if (k < 0 || k >= c.collectives_size())
        return fail(where + " names collective " + std::to_string(k) + " of " +
                    std::to_string(c.collectives_size()));
      if (s.has_collective() ? started[k]++ : (!started[k] || waited[k]++))
        return fail(where + (s.has_collective() ? " starts" : " waits for") +
                    " collective " + std::to_string(k) +
                    (s.has_collective() ? " a second time"
                                        : " before its start or twice"));
    } else {
      return fail(where + " is empty");
    }
  }
  for (int k = 0; k < c.collectives_size(); ++k)
    if (!started[k] || !waited[k])
      return fail("collective " + std::to_string(k) + " " +
                  quoted(c.collectives(k).name()) + " is " +
                  (started[k] ? "never waited for" : "never started"));
  if (c.output_buffers_size() != a.outputs_size())
    return fail(std::to_string(c.output_buffers_size()) +
                " output buffers for " + std::to_string(a.outputs_size()) +
                " outputs");
  for (int i = 0; i < c.output_buffers_size(); ++i) {
    std::string where = "output " + std::to_string(i) + " (" +
                        quoted(a.outputs(i).name()) + ")";
    if (!bufferIndex(c.output_buffers(i), where))
      return false;
    const CudaBuffer &b = c.buffers(c.output_buffers(i));
    int64_t want = signatureBytes(a.outputs(i));
    if (want < 0)
      return fail(where + " has a dynamic shape");
    if (b.dtype() != a.outputs(i).dtype() || b.bytes() != want)
      return fail(where + " is " + artifact::dtypeName(a.outputs(i).dtype()) +
                  " of " + std::to_string(want) + " bytes, " +
                  bufferWhere(c, c.output_buffers(i)) + " is " +
                  artifact::dtypeName(b.dtype()) + " of " +
                  std::to_string(b.bytes()));
  }
  for (int i = 0; i < c.binaries_size(); ++i) {
    const auto &bin = c.binaries(i);
    if (bin.arch().rfind("sm_", 0) != 0 || bin.cubin().empty())
      return fail("binary " + std::to_string(i) + " (arch " +
                  quoted(bin.arch()) + ") is not a cubin for an sm_XX arch");
  }
  return true;
}

bool deviceAvailable(int ordinal, std::string &why) {
  const Driver *cu = driver(why);
  if (!cu)
    return false;
  CUresult r = cu->cuInit(0);
  if (r != api::kSuccess) {
    why = "cuInit failed: " + resultName(*cu, r);
    return false;
  }
  int count = 0;
  r = cu->cuDeviceGetCount(&count);
  if (r != api::kSuccess) {
    why = "cuDeviceGetCount failed: " + resultName(*cu, r);
    return false;
  }
  if (ordinal < 0 || ordinal >= count) {
    why = count == 0 ? "no CUDA device"
                     : "no CUDA device " + std::to_string(ordinal) + " (" +
                           std::to_string(count) + " present)";
    return false;
  }
  return true;
}

// ---- the executor ---------------------------------------------------------

/// What one run in flight holds.
struct Slot {
  CUstream stream = nullptr;
  CUdeviceptr arena = 0, inputs = 0, workspace = 0;
  void *stagingIn = nullptr, *stagingOut = nullptr;
  /// Per kernel: the device address of each argument, and pointers to them
  /// (cuLaunchKernel's kernelParams).
  std::vector<std::vector<CUdeviceptr>> kernelArgs;
  std::vector<std::vector<void *>> kernelParams;
  /// The device arrays of the pointer-table kernels' argument addresses.
  std::vector<CUdeviceptr> tables;
  /// Per matmul: its descriptor (the bias pointer is the slot's).
  std::vector<cublasLtMatmulDesc_t> matmuls;
  /// Created on the first profiled run: before the inputs' upload, after
  /// it, after each step, after the outputs' download.
  std::vector<CUevent> events;
  /// The launch sequence captured on the slot's first run (its buffers'
  /// addresses are the slot's, fixed) and replayed with one launch per
  /// segment between collectives (Impl::segments; null for a collective's
  /// segment); set `graphFailed` when capture did not work (the steps then
  /// launch one by one).
  std::vector<CUgraphExec> graphs;
  bool graphFailed = false;
  /// Per collective: the event recorded after the steps that produce its
  /// input, (NCCL on a GPU) the event the communicator records after it on
  /// its stream, and (Gloo on a GPU) pinned host staging for its input and
  /// output; made on first use.
  std::vector<CUevent> ready;
  std::vector<CUevent> done;
  std::vector<void *> staging;
};

/// The collectives of one run: the session's communicator (null: one
/// rank, every collective a copy) over the artifact's mesh, and what each
/// collective in flight holds.
struct RunComm {
  runtime::collectives::Communicator *comm = nullptr;
  std::vector<int64_t> mesh;
  /// Per collective: its completion (null when it was a copy), its name for
  /// errors, whether its output comes back from host staging, and (ordered
  /// on the device) the handle of its issue.
  std::vector<runtime::collectives::WorkPtr> work;
  std::vector<std::string> names;
  std::vector<char> staged;
  std::vector<runtime::collectives::WorkPtr> issued;
  /// Whether the run failed in a collective (the status is then
  /// LOOM_UNAVAILABLE, as on the CPU).
  bool failed = false;

  /// Waits for every collective still in flight: their buffers are the
  /// slot's, which must outlive them. Those ordered on the device complete
  /// here, at the end of the run: the first that failed, "NAME: why"
  /// (and `failed` set); "" otherwise.
  std::string finish() {
    std::string first;
    for (size_t k = 0; k < work.size(); ++k) {
      std::string why;
      if (k < issued.size() && issued[k]) {
        why = issued[k]->wait();
        issued[k].reset();
      }
      if (work[k]) {
        std::string late = work[k]->wait();
        work[k].reset();
        if (why.empty())
          why = late;
      }
      if (!why.empty() && first.empty())
        first = names[k] + ": " + why;
    }
    if (!first.empty())
      failed = true;
    return first;
  }
};

const char *collectiveKindName(int64_t kind) {
  static const char *const names[] = {
      "all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_slice"};
  return kind >= 0 && kind < abi::kNumCollectiveKinds ? names[kind]
                                                      : "collective";
}

struct GemmPlan {
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  int computeType = 0, scaleType = 0;
  uint32_t epilogue = 0;
  cublasLtMatmulHeuristicResult_t heuristic{};
  bool f64 = false;
  /// s8 x s8 -> s32: alpha and beta are int32.
  bool int8 = false;
};

struct CudaExecutor::Impl {
  const Driver *cu = nullptr;
  const CublasLt *lt = nullptr;
  CUdevice device = 0;
  bool contextRetained = false;
  CUcontext context = nullptr;
  std::vector<CUmodule> modules;
  std::vector<CUfunction> functions;
  CudaCode program; // without source and binaries (not needed after load)
  std::vector<int64_t> inputOffsets, inputSizes, outputOffsets, outputSizes;
  int64_t inputsBytes = 0, outputsBytes = 0;
  CUdeviceptr weights = 0;
  std::vector<int64_t> weightOffsets;
  cublasLtHandle_t handle = nullptr;
  std::vector<GemmPlan> gemms;
  bool syncEachStep = false;
  /// Whether runs replay the launch sequence as a CUDA graph
  /// (LOOM_CUDA_GRAPHS=0 turns it off).
  bool useGraphs = true;
  /// The steps cut at the collectives: a collective's start or wait runs
  /// on the host (the communicator is called; no CUDA graph can hold that),
  /// so each run of kernels and matmuls between two of them is a graph of
  /// its own (`graph`), and each collective step a segment alone.
  struct Segment {
    int begin = 0, end = 0;
    bool graph = false;
  };
  std::vector<Segment> segments;
  bool simulated = false;
  /// The GPU's ordinal (a collective ordered on the device names it to the
  /// communicator, which refuses another GPU than its own).
  int ordinal = 0;
  /// cuStreamWaitEvent, looked up in the driver's library (on a GPU only;
  /// not in CudaApi.h's table): the run's stream waits on the device for a
  /// collective NCCL runs on its own stream.
  CUresult (*streamWaitEvent)(CUstream, CUevent, unsigned) = nullptr;
  /// LOOM_CUDA_COLLECTIVE_STAGING=1: collectives go through pinned host
  /// staging whatever the backend, as Gloo's do on a GPU (so that the
  /// simulator runs that path too).
  bool forceStaging = false;
  std::string description;

  std::mutex mutex;
  std::vector<std::unique_ptr<Slot>> freeSlots;

  /// Device-resident training state (runtime::DeviceState): the runs of
  /// the one trainer that claimed it (its state's pairs, `statePairs`) use
  /// `stateSlot`, whose inputs region holds the state between runs;
  /// `stateRan`: the last run's state outputs await adoptState.
  std::mutex stateMutex;
  bool stateClaimed = false;
  std::vector<std::pair<size_t, size_t>> statePairs;
  std::unique_ptr<Slot> stateSlot;
  bool stateRan = false;

  ~Impl();
  bool check(CUresult r, const std::string &what, std::string &error) const {
    if (r == api::kSuccess)
      return true;
    error = what + ": " + resultName(*cu, r);
    return false;
  }
  CUdeviceptr address(const Slot &s, int buffer) const;
  bool makeSlot(std::unique_ptr<Slot> &slot, std::string &error,
                Failure &failure);
  void destroySlot(Slot &slot) const;
  bool launch(Slot &slot, int kernel, std::string &error) const;
  bool matmul(Slot &slot, int gemm, std::string &error) const;
  /// Runs step `step`; a collective's through `comm` (null only while
  /// capturing, which takes no collective).
  bool runStep(Slot &slot, int step, RunComm *comm, std::string &error) const;
  /// A collective's start and its wait (docs/cuda.md, "Collectives").
  bool collectiveStart(Slot &slot, RunComm &comm, int k,
                       std::string &error) const;
  bool collectiveWait(Slot &slot, RunComm &comm, int k,
                      std::string &error) const;
  /// Captures each graph segment of the launch sequence into
  /// `slot.graphs`, or sets `slot.graphFailed`.
  void capture(Slot &slot) const;
  std::string stepName(int step) const;
};

CudaExecutor::Impl::~Impl() {
  if (!cu)
    return;
  if (context)
    cu->cuCtxSetCurrent(context);
  for (auto &slot : freeSlots)
    destroySlot(*slot);
  if (stateSlot)
    destroySlot(*stateSlot);
  if (lt) {
    for (GemmPlan &g : gemms)
      for (cublasLtMatrixLayout_t l : {g.a, g.b, g.d})
        if (l)
          lt->cublasLtMatrixLayoutDestroy(l);
    if (handle)
      lt->cublasLtDestroy(handle);
  }
  if (weights)
    cu->cuMemFree(weights);
  for (CUmodule m : modules)
    cu->cuModuleUnload(m);
  if (contextRetained)
    cu->cuDevicePrimaryCtxRelease(device);
}

CUdeviceptr CudaExecutor::Impl::address(const Slot &s, int buffer) const {
  const CudaBuffer &b = program.buffers(buffer);
  switch (b.kind()) {
  case CudaBuffer::INPUT:
    return s.inputs + inputOffsets[b.index()];
  case CudaBuffer::WEIGHT:
    return weights + weightOffsets[b.index()];
  default:
    return s.arena + b.offset();
  }
}

void CudaExecutor::Impl::destroySlot(Slot &s) const {
  if (s.stream)
    cu->cuStreamSynchronize(s.stream);
  for (CUevent e : s.events)
    cu->cuEventDestroy(e);
  for (CUevent e : s.ready)
    if (e)
      cu->cuEventDestroy(e);
  for (CUevent e : s.done)
    if (e)
      cu->cuEventDestroy(e);
  for (void *p : s.staging)
    if (p)
      cu->cuMemFreeHost(p);
  for (CUgraphExec g : s.graphs)
    if (g)
      cu->cuGraphExecDestroy(g);
  if (lt)
    for (cublasLtMatmulDesc_t d : s.matmuls)
      if (d)
        lt->cublasLtMatmulDescDestroy(d);
  for (CUdeviceptr p : {s.arena, s.inputs, s.workspace})
    if (p)
      cu->cuMemFree(p);
  for (CUdeviceptr p : s.tables)
    cu->cuMemFree(p);
  for (void *p : {s.stagingIn, s.stagingOut})
    if (p)
      cu->cuMemFreeHost(p);
  if (s.stream)
    cu->cuStreamDestroy(s.stream);
}

bool CudaExecutor::Impl::makeSlot(std::unique_ptr<Slot> &out,
                                  std::string &error, Failure &failure) {
  auto slot = std::make_unique<Slot>();
  struct Guard {
    const Impl *impl;
    std::unique_ptr<Slot> *slot;
    ~Guard() {
      if (*slot)
        impl->destroySlot(**slot);
    }
  } guard{this, &slot};
  failure = Failure::Unavailable; // most likely: out of device memory
  if (!check(cu->cuStreamCreate(&slot->stream, api::kStreamNonBlocking),
             "cuStreamCreate", error))
    return false;
  auto alloc = [&](CUdeviceptr &p, int64_t bytes, const char *what) {
    return bytes == 0 || check(cu->cuMemAlloc(&p, static_cast<size_t>(bytes)),
                               std::string("cuMemAlloc of ") + what + " (" +
                                   std::to_string(bytes) + " bytes)",
                               error);
  };
  auto host = [&](void *&p, int64_t bytes, const char *what) {
    return bytes == 0 ||
           check(cu->cuMemAllocHost(&p, static_cast<size_t>(bytes)),
                 std::string("cuMemAllocHost of ") + what + " (" +
                     std::to_string(bytes) + " bytes)",
                 error);
  };
  if (!alloc(slot->arena, program.arena_bytes(), "the arena") ||
      !alloc(slot->inputs, inputsBytes, "the inputs") ||
      !alloc(slot->workspace, gemms.empty() ? 0 : kWorkspaceBytes,
             "the cuBLASLt workspace") ||
      !host(slot->stagingIn, inputsBytes, "the input staging") ||
      !host(slot->stagingOut, outputsBytes, "the output staging"))
    return false;
  for (int k = 0; k < program.kernels_size(); ++k) {
    const CudaKernel &kernel = program.kernels(k);
    std::vector<CUdeviceptr> args;
    for (int a : kernel.args())
      args.push_back(address(*slot, a));
    if (kernel.pointer_table() && !args.empty()) {
      // The addresses, fixed for the slot, uploaded once: the kernel's
      // one argument is their array.
      CUdeviceptr table = 0;
      int64_t bytes = static_cast<int64_t>(args.size() * sizeof(CUdeviceptr));
      if (!alloc(table, bytes, "a pointer table"))
        return false;
      slot->tables.push_back(table);
      if (!check(cu->cuMemcpyHtoDAsync(table, args.data(),
                                       static_cast<size_t>(bytes),
                                       slot->stream),
                 "cuMemcpyHtoDAsync of kernel " + kernel.name() +
                     "'s pointer table",
                 error) ||
          !check(cu->cuStreamSynchronize(slot->stream), "cuStreamSynchronize",
                 error))
        return false;
      args.assign(1, table);
    }
    slot->kernelArgs.push_back(std::move(args));
  }
  for (auto &args : slot->kernelArgs) {
    std::vector<void *> params;
    for (CUdeviceptr &a : args)
      params.push_back(&a);
    slot->kernelParams.push_back(std::move(params));
  }
  failure = Failure::Internal;
  for (int i = 0; i < program.gemms_size(); ++i) {
    const CudaGemm &g = program.gemms(i);
    const GemmPlan &plan = gemms[i];
    cublasLtMatmulDesc_t desc = nullptr;
    cublasStatus_t st =
        lt->cublasLtMatmulDescCreate(&desc, plan.computeType, plan.scaleType);
    if (st != api::kCublasSuccess) {
      error = "cublasLtMatmulDescCreate for matmul " + g.name() + ": " +
              statusName(*lt, st);
      return false;
    }
    slot->matmuls.push_back(desc);
    // Row-major D = op(A) op(B) is column-major D^T = op(B)^T op(A)^T:
    // cuBLASLt's A is our B, its B our A (see load).
    int32_t transA = g.trans_b() ? api::kOpT : api::kOpN;
    int32_t transB = g.trans_a() ? api::kOpT : api::kOpN;
    uint32_t epilogue = plan.epilogue;
    CUdeviceptr bias = g.bias() >= 0 ? address(*slot, g.bias()) : 0;
    const void *biasPtr = reinterpret_cast<const void *>(bias);
    struct Attr {
      int attr;
      const void *value;
      size_t size;
    } attrs[] = {{api::kDescTransA, &transA, sizeof(transA)},
                 {api::kDescTransB, &transB, sizeof(transB)},
                 {api::kDescEpilogue, &epilogue, sizeof(epilogue)},
                 {api::kDescBiasPointer, &biasPtr, sizeof(biasPtr)}};
    for (const Attr &a : attrs) {
      if (a.attr == api::kDescBiasPointer && !bias)
        continue;
      st = lt->cublasLtMatmulDescSetAttribute(desc, a.attr, a.value, a.size);
      if (st != api::kCublasSuccess) {
        error = "cublasLtMatmulDescSetAttribute(" + std::to_string(a.attr) +
                ") for matmul " + g.name() + ": " + statusName(*lt, st);
        return false;
      }
    }
  }
  out = std::move(slot);
  failure = Failure::None;
  return true;
}

std::string CudaExecutor::Impl::stepName(int step) const {
  const auto &s = program.steps(step);
  if (s.has_collective() || s.has_collective_wait()) {
    int k = s.has_collective() ? s.collective() : s.collective_wait();
    return std::string(s.has_collective() ? "" : "wait ") +
           collectiveKindName(program.collectives(k).kind()) + " #" +
           std::to_string(k);
  }
  return s.has_launch() ? program.kernels(s.launch()).name()
                        : program.gemms(s.gemm()).name();
}

bool CudaExecutor::Impl::launch(Slot &slot, int k, std::string &error) const {
  const CudaKernel &kernel = program.kernels(k);
  CUresult r =
      cu->cuLaunchKernel(functions[k], static_cast<unsigned>(kernel.grid()), 1,
                         1, static_cast<unsigned>(kernel.block()), 1, 1,
                         static_cast<unsigned>(kernel.shared_bytes()),
                         slot.stream, slot.kernelParams[k].data(), nullptr);
  return check(r,
               "cuLaunchKernel failed for kernel " + kernel.name() + " (" +
                   kernel.description() + ")",
               error);
}

bool CudaExecutor::Impl::matmul(Slot &slot, int i, std::string &error) const {
  const CudaGemm &g = program.gemms(i);
  const GemmPlan &plan = gemms[i];
  float oneF = 1, zeroF = 0;
  double oneD = 1, zeroD = 0;
  int32_t oneI = 1, zeroI = 0;
  const void *alpha = plan.f64    ? static_cast<const void *>(&oneD)
                      : plan.int8 ? static_cast<const void *>(&oneI)
                                  : &oneF;
  const void *beta = plan.f64    ? static_cast<const void *>(&zeroD)
                     : plan.int8 ? static_cast<const void *>(&zeroI)
                                 : &zeroF;
  auto ptr = [&](int b) { return reinterpret_cast<void *>(address(slot, b)); };
  void *d = ptr(g.d());
  cublasStatus_t st = lt->cublasLtMatmul(
      handle, slot.matmuls[i], alpha, ptr(g.b()), plan.a, ptr(g.a()), plan.b,
      beta, d, plan.d, d, plan.d, plan.heuristic.algo,
      slot.workspace ? reinterpret_cast<void *>(slot.workspace) : nullptr,
      slot.workspace ? kWorkspaceBytes : 0, slot.stream);
  if (st == api::kCublasSuccess)
    return true;
  error = "cublasLtMatmul failed for matmul " + g.name() + " (" +
          g.description() + "): " + statusName(*lt, st);
  return false;
}

bool CudaExecutor::Impl::runStep(Slot &slot, int s, RunComm *comm,
                                 std::string &error) const {
  const auto &step = program.steps(s);
  if (step.has_collective() || step.has_collective_wait()) {
    if (!comm) {
      error = "step " + std::to_string(s) + " (" + stepName(s) +
              ") cannot be captured in a CUDA graph";
      return false;
    }
    return step.has_collective()
               ? collectiveStart(slot, *comm, step.collective(), error)
               : collectiveWait(slot, *comm, step.collective_wait(), error);
  }
  return step.has_launch() ? launch(slot, step.launch(), error)
                           : matmul(slot, step.gemm(), error);
}

bool CudaExecutor::Impl::collectiveStart(Slot &slot, RunComm &rc, int k,
                                         std::string &error) const {
  namespace coll = runtime::collectives;
  const CudaCollective &c = program.collectives(k);
  const int64_t kind = c.kind();
  std::string name = std::string("collective ") + collectiveKindName(kind) +
                     " #" + std::to_string(k) + " of the step (" + c.name() +
                     ")";
  auto bad = [&](const std::string &why) {
    error = name + ": " + why;
    rc.failed = true;
    return false;
  };
  // The group: the ranks that differ from this one only on `axes`
  // (runtime/src/collectives/RunCollectives.cpp, as on the CPU).
  coll::Group group = {0};
  int me = 0;
  if (rc.comm) {
    int world = rc.comm->size();
    std::string why;
    if (!coll::meshGroup(rc.mesh.empty() ? std::vector<int64_t>{world}
                                         : rc.mesh,
                         rc.comm->rank(), c.axes(), group, why))
      return bad(why);
    name += " over " + coll::groupString(group, world);
    for (size_t i = 0; i < group.size(); ++i)
      if (group[i] == rc.comm->rank())
        me = static_cast<int>(i);
  }
  const size_t g = group.size();
  auto dtype = static_cast<loom_dtype>(c.dtype());
  const size_t elem = coll::collectiveElementSize(dtype);
  const CudaBuffer &in = program.buffers(c.in()),
                   &out = program.buffers(c.out());
  const size_t inCount = static_cast<size_t>(in.bytes()) / elem,
               outCount = static_cast<size_t>(out.bytes()) / elem;
  if (kind == abi::kBroadcast && c.op() >= static_cast<int64_t>(g))
    return bad("root " + std::to_string(c.op()) + " is not in a group of " +
               std::to_string(g));
  size_t want = kind == abi::kAllGather ? inCount * g
                : kind == abi::kReduceScatter || kind == abi::kAllSlice
                    ? (inCount % g ? SIZE_MAX : inCount / g)
                    : inCount;
  if (outCount != want)
    return bad("input of " + std::to_string(inCount) +
               " elements and output of " + std::to_string(outCount) +
               " do not fit a group of " + std::to_string(g));
  CUdeviceptr src = address(slot, c.in()), dst = address(slot, c.out());
  if (g == 1 || kind == abi::kAllSlice) {
    // One member, or all-slice: no communication, a copy on the stream.
    size_t bytes = outCount * elem;
    CUdeviceptr from = src + (kind == abi::kAllSlice ? me * bytes : 0);
    return !bytes || from == dst ||
           check(cu->cuMemcpyDtoDAsync(dst, from, bytes, slot.stream),
                 "cuMemcpyDtoDAsync for " + name, error);
  }
  std::string broken = rc.comm->error();
  if (!broken.empty())
    return bad("the communicator is broken by an earlier failure: " + broken);

  // Where the communicator reads and writes. On a GPU, NCCL takes the
  // device buffers as they are, ordered on the device: its stream waits
  // for an event recorded after the producers, and the run's stream waits
  // at the wait step for the event NCCL's stream records after the
  // collective, so the host queues the steps after the start without
  // waiting for either. Any other backend (Gloo) works on host memory:
  // the input comes back to pinned staging once the producers are done
  // (the host waits for them), the output goes up at the wait. The
  // simulator's device memory is host memory, and its streams have run
  // every step issued so far: the buffers as they are.
  bool staged =
      forceStaging || (!simulated && std::string(rc.comm->backend()) != "nccl");
  bool ordered = !simulated && !staged && streamWaitEvent;
  const void *from = reinterpret_cast<const void *>(src);
  void *to = reinterpret_cast<void *>(dst);
  coll::CollectiveCall call;
  call.kind = kind == abi::kAllReduce   ? coll::CollectiveCall::AllReduce
              : kind == abi::kAllGather ? coll::CollectiveCall::AllGather
              : kind == abi::kReduceScatter
                  ? coll::CollectiveCall::ReduceScatter
                  : coll::CollectiveCall::Broadcast;
  call.count = kind == abi::kReduceScatter ? outCount : inCount;
  call.dtype = dtype;
  call.op = static_cast<coll::ReduceOp>(c.op());
  call.root = static_cast<int>(c.op());
  call.group = group;
  if (!simulated || staged) {
    if (slot.ready.empty())
      slot.ready.assign(program.collectives_size(), nullptr);
    CUevent &ready = slot.ready[k];
    if (!ready && !check(cu->cuEventCreate(&ready, api::kEventDefault),
                         "cuEventCreate for " + name, error))
      return false;
    if (staged) {
      if (slot.staging.empty())
        slot.staging.assign(program.collectives_size(), nullptr);
      void *&host = slot.staging[k];
      if (!host && !check(cu->cuMemAllocHost(
                              &host, static_cast<size_t>(
                                         alignUp(in.bytes()) +
                                         std::max<int64_t>(out.bytes(), 1))),
                          "cuMemAllocHost of the staging of " + name, error))
        return false;
      if (!check(cu->cuMemcpyDtoHAsync(
                     host, src, static_cast<size_t>(in.bytes()), slot.stream),
                 "cuMemcpyDtoHAsync of the input of " + name, error))
        return false;
      from = host;
      to = static_cast<char *>(host) + alignUp(in.bytes());
    }
    if (!check(cu->cuEventRecord(ready, slot.stream),
               "cuEventRecord for " + name, error))
      return false;
    if (ordered) {
      if (slot.done.empty())
        slot.done.assign(program.collectives_size(), nullptr);
      CUevent &done = slot.done[k];
      if (!done && !check(cu->cuEventCreate(&done, api::kEventDefault),
                          "cuEventCreate for " + name, error))
        return false;
      call.in = from;
      call.out = to;
      coll::OrderedWork w =
          rc.comm->orderedCollective(call, {ordinal, ready, done});
      rc.issued[k] = std::move(w.issued);
      rc.work[k] = std::move(w.completed);
      rc.names[k] = std::move(name);
      rc.staged[k] = 0;
      return true;
    }
    if (!check(cu->cuEventSynchronize(ready),
               "the steps before " + name +
                   " (a kernel failed; set "
                   "LOOM_CUDA_SYNC_STEPS=1 to name it)",
               error))
      return false;
  }
  call.in = from;
  call.out = to;
  rc.work[k] = coll::issueCollective(*rc.comm, call);
  rc.names[k] = std::move(name);
  rc.staged[k] = staged;
  return true;
}

bool CudaExecutor::Impl::collectiveWait(Slot &slot, RunComm &rc, int k,
                                        std::string &error) const {
  if (runtime::collectives::WorkPtr issued = std::move(rc.issued[k])) {
    // Ordered on the device: the host waits only until the collective is
    // queued on the communicator's stream with its event after it; the
    // run's stream waits for that event before the consumers, and the
    // completion is polled at the end of the run (RunComm::finish). A
    // failure already known (an earlier collective's, a dead peer) fails
    // the run here.
    std::string why = issued->wait();
    if (why.empty())
      why = rc.comm->error();
    if (!why.empty()) {
      error = rc.names[k] + ": " + why;
      rc.failed = true;
      return false;
    }
    return check(streamWaitEvent(slot.stream, slot.done[k], 0),
                 "cuStreamWaitEvent for " + rc.names[k], error);
  }
  runtime::collectives::WorkPtr work = std::move(rc.work[k]);
  if (!work)
    return true; // a copy, on the stream
  std::string why = work->wait();
  if (!why.empty()) {
    error = rc.names[k] + ": " + why;
    rc.failed = true;
    return false;
  }
  if (!rc.staged[k])
    return true;
  // The output, from pinned staging, before the steps that read it.
  const CudaCollective &c = program.collectives(k);
  const CudaBuffer &in = program.buffers(c.in()),
                   &out = program.buffers(c.out());
  return !out.bytes() ||
         check(cu->cuMemcpyHtoDAsync(
                   address(slot, c.out()),
                   static_cast<char *>(slot.staging[k]) + alignUp(in.bytes()),
                   static_cast<size_t>(out.bytes()), slot.stream),
               "cuMemcpyHtoDAsync of the output of " + rc.names[k], error);
}

void CudaExecutor::Impl::capture(Slot &slot) const {
  std::string ignored;
  slot.graphs.assign(segments.size(), nullptr);
  bool ok = true;
  for (size_t i = 0; ok && i < segments.size(); ++i) {
    const Segment &seg = segments[i];
    if (!seg.graph)
      continue;
    if (cu->cuStreamBeginCapture(slot.stream, api::kCaptureModeRelaxed) !=
        api::kSuccess) {
      ok = false;
      break;
    }
    for (int s = seg.begin; ok && s < seg.end; ++s)
      ok = runStep(slot, s, nullptr, ignored);
    // Capture ends whatever happened, so that the stream leaves capture
    // mode.
    CUgraph graph = nullptr;
    ok = cu->cuStreamEndCapture(slot.stream, &graph) == api::kSuccess && ok &&
         graph;
    CUgraphExec exec = nullptr;
    ok = ok && cu->cuGraphInstantiate(&exec, graph, 0) == api::kSuccess;
    if (graph)
      cu->cuGraphDestroy(graph);
    slot.graphs[i] = exec;
  }
  if (ok)
    return;
  for (CUgraphExec g : slot.graphs)
    if (g)
      cu->cuGraphExecDestroy(g);
  slot.graphs.clear();
  slot.graphFailed = true;
}

CudaExecutor::CudaExecutor(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
CudaExecutor::~CudaExecutor() = default;

size_t CudaExecutor::inputBytes(size_t i) const {
  return static_cast<size_t>(impl->inputSizes[i]);
}
size_t CudaExecutor::outputBytes(size_t i) const {
  return static_cast<size_t>(impl->outputSizes[i]);
}
const std::string &CudaExecutor::description() const {
  return impl->description;
}
loom_device CudaExecutor::device() const {
  return impl->simulated ? LOOM_DEVICE_CUDA_SIM : LOOM_DEVICE_CUDA;
}

/// The cubins of `code` for `arch` ("sm_90"): the artifact's binary for it
/// (or for an earlier minor of the same major, which the GPU also runs;
/// not with `sourceOnly`), else the source compiled by NVRTC in programs
/// of whole regions. `fromBinary` says which.
static bool codeFor(const CudaCode &code, const std::string &arch,
                    const CudaExecutor::Options &options,
                    std::vector<std::string> &cubins, std::string &how,
                    bool &fromBinary, std::string &error, Failure &failure,
                    bool sourceOnly = false) {
  fromBinary = false;
  int major = std::atoi(arch.c_str() + 3) / 10,
      minor = std::atoi(arch.c_str() + 3) % 10;
  if (options.simulate && code.source().empty()) {
    failure = Failure::Unavailable;
    error = "the CUDA simulator compiles the CUDA source, and this artifact "
            "has cubins only (compile without --no-source)";
    return false;
  }
  const artifact::CudaBinary *best = nullptr;
  int bestMinor = -1;
  for (const auto &b : code.binaries()) {
    const char *digits = b.arch().c_str() + 3;
    if (!std::isdigit(static_cast<unsigned char>(*digits)))
      continue; // "sm_90a": arch-specific, runs on that arch only
    std::string tail = digits;
    if (!std::all_of(tail.begin(), tail.end(),
                     [](char c) { return std::isdigit((unsigned char)c); })) {
      if (b.arch() == arch) // an arch-specific cubin of exactly this GPU
        best = &b, bestMinor = 99;
      continue;
    }
    int v = std::atoi(digits);
    if (v / 10 == major && v % 10 <= minor && v % 10 > bestMinor)
      best = &b, bestMinor = v % 10;
  }
  if (best && !options.simulate && !sourceOnly) {
    cubins = {best->cubin()};
    how = "cubin of the artifact (" + best->arch() + ")";
    fromBinary = true;
    return true;
  }
  if (code.source().empty()) {
    failure = Failure::Unavailable;
    std::string archs;
    for (const auto &b : code.binaries())
      archs += (archs.empty() ? "" : ", ") + b.arch();
    error = "the artifact has cubins for " + archs + " and no source; this " +
            "GPU is " + arch + " (compile with loomc --arch " + arch + ")";
    return false;
  }
  std::vector<std::string> options2;
  {
    std::istringstream in(code.nvrtc_options());
    for (std::string o; in >> o;)
      options2.push_back(o);
  }
  std::string prelude;
  std::vector<std::string> regions, programs;
  if (splitRegions(code.source(), prelude, regions))
    programs = chunkSource(prelude, regions, kKernelsPerProgram);
  else
    programs = {code.source()};
  if (options.simulate) {
    std::string dir =
        options.useDefaultCache ? defaultCacheDir() : options.cacheDir;
    if (sim::compile(programs, dir, cubins, how, error))
      return true;
    failure = error.rfind("no host", 0) == 0 ? Failure::Unavailable
                                             : Failure::BadArtifact;
    return false;
  }
  std::vector<CompileRequest> requests;
  for (std::string &p : programs)
    requests.push_back({std::move(p), arch, options2});
  NvrtcCompiler compiler(options.useDefaultCache ? defaultCacheDir()
                                                 : options.cacheDir);
  auto started = std::chrono::steady_clock::now();
  std::vector<CompileResult> results = compiler.compileAll(requests);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  size_t cached = 0;
  for (CompileResult &r : results) {
    if (!r.ok) {
      failure = r.error.rfind("no NVRTC", 0) == 0 ? Failure::Unavailable
                                                  : Failure::BadArtifact;
      error = "compiling the CUDA source with NVRTC: " + r.error;
      return false;
    }
    cached += r.cached;
    cubins.push_back(std::move(r.cubin));
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f", seconds);
  how = "NVRTC for " + arch + ", " + std::to_string(results.size()) +
        " programs (" + std::to_string(cached) + " from the cache) in " + buf +
        " s";
  return true;
}

std::unique_ptr<CudaExecutor>
CudaExecutor::load(const artifact::Artifact &a,
                   const artifact::DataSection &section, const Options &options,
                   std::string &error, Failure &failure) {
  auto started = std::chrono::steady_clock::now();
  failure = Failure::BadArtifact;
  if (!validateProgram(a, error))
    return nullptr;
  failure = Failure::Unavailable;
  if (options.simulate ? !sim::supported(error)
                       : !deviceAvailable(options.ordinal, error))
    return nullptr;
  auto impl = std::make_unique<Impl>();
  Impl &x = *impl;
  x.simulated = options.simulate;
  x.ordinal = options.ordinal;
  x.cu = options.simulate ? sim::driver() : driver(error);
  const Driver &cu = *x.cu;
  // cuStreamWaitEvent (CUDA 3.2 on): every driver has it; without it the
  // collectives take the host's ordering.
  std::string ignored;
  if (!options.simulate)
    dl::lookup(cu.handle, "cuStreamWaitEvent", x.streamWaitEvent,
               "libcuda.so.1", ignored);
  const CudaCode &code = a.cuda();
  if (!x.check(cu.cuDeviceGet(&x.device, options.ordinal), "cuDeviceGet",
               error))
    return nullptr;
  int major = 0, minor = 0, optin = 0;
  char name[256] = {};
  if (!x.check(cu.cuDeviceGetAttribute(&major, api::kAttrComputeCapabilityMajor,
                                       x.device),
               "cuDeviceGetAttribute", error) ||
      !x.check(cu.cuDeviceGetAttribute(&minor, api::kAttrComputeCapabilityMinor,
                                       x.device),
               "cuDeviceGetAttribute", error) ||
      !x.check(cu.cuDeviceGetAttribute(&optin, api::kAttrMaxSharedPerBlockOptin,
                                       x.device),
               "cuDeviceGetAttribute", error) ||
      !x.check(cu.cuDeviceGetName(name, sizeof(name) - 1, x.device),
               "cuDeviceGetName", error))
    return nullptr;
  if (!x.check(cu.cuDevicePrimaryCtxRetain(&x.context, x.device),
               "cuDevicePrimaryCtxRetain", error))
    return nullptr;
  x.contextRetained = true;
  if (!x.check(cu.cuCtxSetCurrent(x.context), "cuCtxSetCurrent", error))
    return nullptr;
  std::string arch = "sm_" + std::to_string(major * 10 + minor), how;

  // The code: modules and every kernel.
  std::vector<std::string> cubins;
  bool fromBinary = false;
  if (!codeFor(code, arch, options, cubins, how, fromBinary, error, failure))
    return nullptr;
  failure = Failure::BadArtifact;
  auto loadModules = [&] {
    for (const std::string &cubin : cubins) {
      CUmodule m = nullptr;
      if (!x.check(cu.cuModuleLoadData(&m, cubin.data()),
                   "cuModuleLoadData (" + arch + ")", error))
        return false;
      x.modules.push_back(m);
    }
    return true;
  };
  if (!loadModules()) {
    // The artifact's cubin refused (a driver older than the compiler's
    // NVRTC, a damaged binary): its source, compiled here, if it has one.
    if (!fromBinary || code.source().empty())
      return nullptr;
    std::string refused = error;
    for (CUmodule m : x.modules)
      cu.cuModuleUnload(m);
    x.modules.clear();
    cubins.clear();
    if (!codeFor(code, arch, options, cubins, how, fromBinary, error, failure,
                 /*sourceOnly=*/true))
      return nullptr;
    failure = Failure::BadArtifact;
    if (!loadModules())
      return nullptr;
    how += " (the artifact's cubin was refused: " + refused + ")";
  }
  for (const CudaKernel &k : code.kernels()) {
    CUfunction f = nullptr;
    CUresult r = api::kErrorNotFound;
    for (CUmodule m : x.modules)
      if ((r = cu.cuModuleGetFunction(&f, m, k.name().c_str())) !=
          api::kErrorNotFound)
        break;
    if (!x.check(r, "cuModuleGetFunction for kernel " + k.name(), error))
      return nullptr;
    if (k.shared_bytes() > 48 * 1024) {
      if (k.shared_bytes() > optin) {
        error = "kernel " + k.name() + " needs " +
                std::to_string(k.shared_bytes()) +
                " bytes of shared memory, this GPU allows " +
                std::to_string(optin);
        failure = Failure::Unavailable;
        return nullptr;
      }
      if (!x.check(cu.cuFuncSetAttribute(f, api::kFuncAttrMaxDynamicShared,
                                         k.shared_bytes()),
                   "cuFuncSetAttribute for kernel " + k.name(), error))
        return nullptr;
    }
    x.functions.push_back(f);
  }

  // The program without its code; input and output layouts.
  x.program = code;
  x.program.clear_source();
  x.program.clear_binaries();
  for (int s = 0; s < code.steps_size(); ++s) {
    const auto &step = code.steps(s);
    bool graph = step.has_launch() || step.has_gemm();
    if (graph && !x.segments.empty() && x.segments.back().graph)
      x.segments.back().end = s + 1;
    else
      x.segments.push_back({s, s + 1, graph});
  }
  for (const auto &s : a.inputs()) {
    int64_t bytes = signatureBytes(s);
    x.inputOffsets.push_back(x.inputsBytes);
    x.inputSizes.push_back(bytes);
    x.inputsBytes += alignUp(std::max<int64_t>(bytes, 1));
  }
  for (const auto &s : a.outputs()) {
    int64_t bytes = signatureBytes(s);
    x.outputOffsets.push_back(x.outputsBytes);
    x.outputSizes.push_back(bytes);
    x.outputsBytes += alignUp(std::max<int64_t>(bytes, 1));
  }

  // The weights, once: one allocation, each at a 256-byte boundary.
  failure = Failure::Unavailable;
  int64_t weightBytes = 0;
  for (const auto &w : a.weights()) {
    x.weightOffsets.push_back(weightBytes);
    weightBytes += alignUp(std::max<int64_t>(weightSize(w), 1));
  }
  if (weightBytes &&
      !x.check(cu.cuMemAlloc(&x.weights, static_cast<size_t>(weightBytes)),
               "cuMemAlloc of the weights (" + std::to_string(weightBytes) +
                   " bytes)",
               error))
    return nullptr;

  // cuBLASLt: a layout set per matmul, its algorithm chosen once.
  failure = Failure::Internal;
  if (code.gemms_size()) {
    std::string why;
    x.lt = options.simulate ? sim::cublasLt() : cublasLt(why);
    if (!x.lt) {
      error = why;
      failure = Failure::Unavailable;
      return nullptr;
    }
    cublasStatus_t st = x.lt->cublasLtCreate(&x.handle);
    if (st != api::kCublasSuccess) {
      error = "cublasLtCreate: " + statusName(*x.lt, st);
      return nullptr;
    }
  }
  auto ltCheck = [&](cublasStatus_t st, const std::string &what) {
    if (st == api::kCublasSuccess)
      return true;
    error = what + ": " + statusName(*x.lt, st);
    return false;
  };
  for (const CudaGemm &g : code.gemms()) {
    GemmPlan plan;
    int type = g.dtype() == artifact::F16    ? api::kR16F
               : g.dtype() == artifact::BF16 ? api::kR16BF
               : g.dtype() == artifact::F64  ? api::kR64F
                                             : api::kR32F;
    plan.f64 = g.dtype() == artifact::F64;
    plan.int8 = g.dtype() == artifact::I8;
    plan.computeType = plan.f64    ? api::kComputeF64
                       : plan.int8 ? api::kComputeI32
                       : code.allow_tf32() && g.dtype() == artifact::F32
                           ? api::kComputeF32FastTf32
                           : api::kComputeF32;
    plan.scaleType = plan.f64    ? api::kR64F
                     : plan.int8 ? api::kR32I
                                 : api::kR32F;
    if (plan.int8)
      type = api::kR8I;
    bool bias = g.bias() >= 0;
    plan.epilogue = g.activation() == "relu"
                        ? (bias ? api::kEpilogueReluBias : api::kEpilogueRelu)
                    : g.activation() == "gelu"
                        ? (bias ? api::kEpilogueGeluBias : api::kEpilogueGelu)
                        : (bias ? api::kEpilogueBias : api::kEpilogueDefault);
    // Column-major views of the row-major operands: cuBLASLt computes
    // D^T (n x m, ld n) = op(B)^T (n x k) x op(A)^T (k x m).
    //   its A = our B: stored k x n (ld n) -> n x k, or n x k transposed
    //     (ld k) -> k x n with op T;
    //   its B = our A: stored m x k (ld k) -> k x m, or k x m transposed
    //     (ld m) -> m x k with op T.
    // int8 (trans_b, not trans_a): its A is k x n with op T, its B k x m,
    // D n x m of int32 ("TN", the IMMA kernels' layout).
    struct Layout {
      cublasLtMatrixLayout_t *out;
      uint64_t rows, cols;
      int64_t ld, stride;
    } layouts[] = {
        {&plan.a, uint64_t(g.trans_b() ? g.k() : g.n()),
         uint64_t(g.trans_b() ? g.n() : g.k()), g.trans_b() ? g.k() : g.n(),
         g.stride_b()},
        {&plan.b, uint64_t(g.trans_a() ? g.m() : g.k()),
         uint64_t(g.trans_a() ? g.k() : g.m()), g.trans_a() ? g.m() : g.k(),
         g.stride_a()},
        {&plan.d, uint64_t(g.n()), uint64_t(g.m()), g.n(), g.stride_d()},
    };
    for (Layout &l : layouts) {
      int layoutType = plan.int8 && l.out == &plan.d ? api::kR32I : type;
      if (!ltCheck(x.lt->cublasLtMatrixLayoutCreate(l.out, layoutType, l.rows,
                                                    l.cols, l.ld),
                   "cublasLtMatrixLayoutCreate for matmul " + g.name()))
        return nullptr;
      if (g.batch() > 1) {
        int32_t count = static_cast<int32_t>(g.batch());
        if (!ltCheck(x.lt->cublasLtMatrixLayoutSetAttribute(
                         *l.out, api::kLayoutBatchCount, &count, sizeof(count)),
                     "cublasLtMatrixLayoutSetAttribute(batch count) for "
                     "matmul " +
                         g.name()) ||
            !ltCheck(x.lt->cublasLtMatrixLayoutSetAttribute(
                         *l.out, api::kLayoutBatchStride, &l.stride,
                         sizeof(l.stride)),
                     "cublasLtMatrixLayoutSetAttribute(batch stride) for "
                     "matmul " +
                         g.name()))
          return nullptr;
      }
    }
    x.gemms.push_back(plan);
  }

  // The first slot: its descriptors choose each matmul's algorithm.
  std::unique_ptr<Slot> slot;
  if (!x.makeSlot(slot, error, failure))
    return nullptr;
  x.freeSlots.push_back(std::move(slot));
  Slot &first = *x.freeSlots.back();
  failure = Failure::Unavailable;
  if (code.gemms_size()) {
    cublasLtMatmulPreference_t pref = nullptr;
    if (!ltCheck(x.lt->cublasLtMatmulPreferenceCreate(&pref),
                 "cublasLtMatmulPreferenceCreate"))
      return nullptr;
    uint64_t workspace = kWorkspaceBytes;
    bool ok = ltCheck(
        x.lt->cublasLtMatmulPreferenceSetAttribute(
            pref, api::kPrefMaxWorkspace, &workspace, sizeof(workspace)),
        "cublasLtMatmulPreferenceSetAttribute");
    for (int i = 0; ok && i < code.gemms_size(); ++i) {
      GemmPlan &plan = x.gemms[i];
      int found = 0;
      cublasStatus_t st = x.lt->cublasLtMatmulAlgoGetHeuristic(
          x.handle, first.matmuls[i], plan.a, plan.b, plan.d, plan.d, pref, 1,
          &plan.heuristic, &found);
      if (st != api::kCublasSuccess || found == 0) {
        const CudaGemm &g = code.gemms(i);
        error = "cuBLASLt has no algorithm for matmul " + g.name() + " (" +
                g.description() + ", " + artifact::dtypeName(g.dtype()) +
                ", epilogue " + g.activation() +
                (g.bias() >= 0 ? " + bias" : "") + "): " +
                (st != api::kCublasSuccess ? statusName(*x.lt, st)
                                           : std::string("none found"));
        ok = false;
      }
    }
    x.lt->cublasLtMatmulPreferenceDestroy(pref);
    if (!ok)
      return nullptr;
  }

  // Upload the weights on the first slot's stream.
  failure = Failure::Internal;
  for (int i = 0; i < a.weights_size(); ++i) {
    std::string_view data = artifact::weightData(section, a.weights(i));
    if (!data.empty() &&
        !x.check(cu.cuMemcpyHtoDAsync(x.weights + x.weightOffsets[i],
                                      data.data(), data.size(), first.stream),
                 "uploading weight " + a.weights(i).name(), error))
      return nullptr;
  }
  if (!x.check(cu.cuStreamSynchronize(first.stream),
               "cuStreamSynchronize after the weights' upload", error))
    return nullptr;

  const char *debug = std::getenv("LOOM_CUDA_SYNC_STEPS");
  x.syncEachStep = debug && *debug && std::strcmp(debug, "0") != 0;
  const char *graphs = std::getenv("LOOM_CUDA_GRAPHS");
  x.useGraphs = !graphs || std::strcmp(graphs, "0") != 0;
  const char *staging = std::getenv("LOOM_CUDA_COLLECTIVE_STAGING");
  x.forceStaging = staging && *staging && std::strcmp(staging, "0") != 0;
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f", seconds);
  x.description =
      (options.simulate ? "cuda-sim:" : "cuda:") +
      std::to_string(options.ordinal) + " " + name + " (" + arch +
      "); code: " + how + "; " + std::to_string(code.kernels_size()) +
      " kernels, " + std::to_string(code.gemms_size()) + " cuBLASLt matmuls" +
      (code.allow_tf32() ? " (f32 in TF32)" : "") + ", arena " +
      std::to_string(code.arena_bytes()) + " bytes; load " + buf + " s";
  failure = Failure::None;
  return std::unique_ptr<CudaExecutor>(new CudaExecutor(std::move(impl)));
}

/// Which of `count` outputs are `state`'s (they stay on the device).
static std::vector<char> stateOutputs(const runtime::DeviceState *state,
                                      size_t count) {
  std::vector<char> kept(count, 0);
  if (state)
    for (auto [in, out] : state->pairs)
      kept[out] = 1;
  return kept;
}

bool CudaExecutor::runBuffers(const std::vector<const void *> &inputs,
                              const std::vector<void *> &outputs,
                              std::vector<StepTime> *times, std::string &error,
                              Failure &failure,
                              const runtime::DeviceState *state,
                              runtime::collectives::Communicator *communicator,
                              const std::vector<int64_t> &meshShape) {
  Impl &x = *impl;
  const Driver &cu = *x.cu;
  failure = Failure::Internal;
  if (inputs.size() != x.inputSizes.size() ||
      outputs.size() != x.outputSizes.size()) {
    error = "CUDA run: wrong number of inputs or outputs";
    return false;
  }
  if (!x.check(cu.cuCtxSetCurrent(x.context), "cuCtxSetCurrent", error))
    return false;
  // A run with device-resident state takes the state's slot (one run at a
  // time); any other run a free slot or a new one.
  std::unique_ptr<Slot> slot;
  std::unique_lock<std::mutex> stateLock;
  if (state) {
    stateLock = std::unique_lock<std::mutex>(x.stateMutex);
    slot = std::move(x.stateSlot);
    x.stateRan = false;
    if (!slot && state->onDevice) {
      error = "CUDA run: the training state is no longer on the device";
      return false;
    }
  } else {
    std::lock_guard<std::mutex> lock(x.mutex);
    if (!x.freeSlots.empty()) {
      slot = std::move(x.freeSlots.back());
      x.freeSlots.pop_back();
    }
  }
  if (!slot && !x.makeSlot(slot, error, failure))
    return false;
  failure = Failure::Internal;
  // Inputs the device holds already (state from the last run) are not
  // uploaded; state outputs stay on the device.
  std::vector<char> resident(inputs.size(), 0);
  std::vector<char> kept = stateOutputs(state, outputs.size());
  if (state && state->onDevice)
    for (auto [in, out] : state->pairs)
      resident[in] = 1;
  bool uploadAll =
      std::find(resident.begin(), resident.end(), 1) == resident.end();
  const int numSteps = x.program.steps_size();
  const size_t numEvents = static_cast<size_t>(numSteps) + 3;
  if (times && slot->events.size() != numEvents) {
    for (CUevent e : slot->events)
      cu.cuEventDestroy(e);
    slot->events.assign(numEvents, nullptr);
    for (CUevent &e : slot->events)
      if (!x.check(cu.cuEventCreate(&e, api::kEventDefault), "cuEventCreate",
                   error)) {
        x.destroySlot(*slot);
        return false;
      }
  }
  auto record = [&](size_t i) {
    return !times || x.check(cu.cuEventRecord(slot->events[i], slot->stream),
                             "cuEventRecord", error);
  };

  // Inputs through pinned staging, one copy (or one per input the device
  // does not hold); the steps; the outputs back.
  bool ok = record(0);
  char *stageIn = static_cast<char *>(slot->stagingIn);
  for (size_t i = 0; ok && i < inputs.size(); ++i)
    if (x.inputSizes[i] && !resident[i])
      std::memcpy(stageIn + x.inputOffsets[i], inputs[i], x.inputSizes[i]);
  if (ok && x.inputsBytes && uploadAll)
    ok = x.check(cu.cuMemcpyHtoDAsync(slot->inputs, stageIn,
                                      static_cast<size_t>(x.inputsBytes),
                                      slot->stream),
                 "cuMemcpyHtoDAsync of the inputs", error);
  for (size_t i = 0; ok && !uploadAll && i < inputs.size(); ++i)
    if (x.inputSizes[i] && !resident[i])
      ok = x.check(cu.cuMemcpyHtoDAsync(slot->inputs + x.inputOffsets[i],
                                        stageIn + x.inputOffsets[i],
                                        static_cast<size_t>(x.inputSizes[i]),
                                        slot->stream),
                   "cuMemcpyHtoDAsync of input " + std::to_string(i), error);
  ok = ok && record(1);
  // The collectives of this run (their start and wait steps).
  RunComm comm;
  comm.comm = communicator;
  comm.mesh = meshShape;
  const size_t numCollectives = x.program.collectives_size();
  comm.work.resize(numCollectives);
  comm.names.resize(numCollectives);
  comm.staged.resize(numCollectives, 0);
  comm.issued.resize(numCollectives);
  // The steps: one graph launch per segment between collectives, after
  // the slot's first run captured them; one by one when profiled (an
  // event after each), synchronized after each (LOOM_CUDA_SYNC_STEPS), or
  // when capture did not work.
  bool replay = ok && !times && !x.syncEachStep && x.useGraphs &&
                numSteps > 0 && !slot->graphFailed;
  if (replay && slot->graphs.empty())
    x.capture(*slot);
  replay = replay && !slot->graphs.empty();
  for (size_t i = 0; ok && replay && i < x.segments.size(); ++i) {
    const Impl::Segment &seg = x.segments[i];
    if (seg.graph)
      ok = x.check(cu.cuGraphLaunch(slot->graphs[i], slot->stream),
                   "cuGraphLaunch", error);
    else
      ok = x.runStep(*slot, seg.begin, &comm, error);
  }
  for (int s = 0; ok && !replay && s < numSteps; ++s) {
    ok = x.runStep(*slot, s, &comm, error);
    ok = ok && record(s + 2);
    if (ok && x.syncEachStep)
      ok = x.check(cu.cuStreamSynchronize(slot->stream),
                   "after step " + std::to_string(s) + " (" + x.stepName(s) +
                       ")",
                   error);
  }
  // Nothing may still read or write the slot's buffers once it is reused
  // or freed: a failed run's collectives in flight end first. Those
  // ordered on the device are polled to completion here, where a dead
  // peer, NCCL's error or the timeout fails the run (the communicator
  // then aborts NCCL, which ends its kernels, so the synchronize below
  // does not hang on them).
  std::string late = comm.finish();
  if (ok && !late.empty()) {
    ok = false;
    error = late;
  }
  if (comm.failed)
    failure = Failure::Unavailable;
  char *stageOut = static_cast<char *>(slot->stagingOut);
  for (size_t i = 0; ok && i < outputs.size(); ++i) {
    if (!x.outputSizes[i] || kept[i])
      continue;
    CUdeviceptr from = x.address(*slot, x.program.output_buffers(i));
    ok = x.check(cu.cuMemcpyDtoHAsync(stageOut + x.outputOffsets[i], from,
                                      static_cast<size_t>(x.outputSizes[i]),
                                      slot->stream),
                 "cuMemcpyDtoHAsync of output " + std::to_string(i), error);
  }
  ok = ok && record(numSteps + 2);
  if (ok)
    ok = x.check(cu.cuStreamSynchronize(slot->stream),
                 "running the program (a kernel failed; set "
                 "LOOM_CUDA_SYNC_STEPS=1 to name it)",
                 error);
  if (!ok) {
    if (state) {
      // The state's slot holds the only copy of the state: kept, so that
      // readState can still try to save it.
      cu.cuStreamSynchronize(slot->stream);
      x.stateSlot = std::move(slot);
      return false;
    }
    // The slot's stream may hold work that failed: never reuse it.
    x.destroySlot(*slot);
    return false;
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    if (x.outputSizes[i] && !kept[i])
      std::memcpy(outputs[i], stageOut + x.outputOffsets[i], x.outputSizes[i]);
  if (times) {
    // Event i's time from event 0; a failed query reads as the previous.
    std::vector<float> at(numEvents, 0);
    for (size_t i = 1; i < numEvents; ++i)
      if (cu.cuEventElapsedTime(&at[i], slot->events[0], slot->events[i]) !=
          api::kSuccess)
        at[i] = at[i - 1];
    times->clear();
    times->push_back({"copy inputs to the device", 0, at[1]});
    for (int s = 0; s < numSteps; ++s)
      times->push_back({x.stepName(s), at[s + 1], at[s + 2]});
    times->push_back(
        {"copy outputs to the host", at[numSteps + 1], at[numSteps + 2]});
  }
  if (state) {
    x.stateSlot = std::move(slot);
    x.stateRan = true;
  } else {
    std::lock_guard<std::mutex> lock(x.mutex);
    x.freeSlots.push_back(std::move(slot));
  }
  failure = Failure::None;
  return true;
}

bool CudaExecutor::claimState(const runtime::DeviceState &state) {
  Impl &x = *impl;
  std::lock_guard<std::mutex> lock(x.stateMutex);
  if (x.stateClaimed)
    return false;
  // Each pair's output must be the input's size, and not another input's
  // buffer (adoptState's copies must not overlap).
  for (auto [in, out] : state.pairs) {
    if (in >= x.inputSizes.size() || out >= x.outputSizes.size() ||
        x.inputSizes[in] != x.outputSizes[out])
      return false;
    const CudaBuffer &b = x.program.buffers(x.program.output_buffers(out));
    if (b.kind() == CudaBuffer::INPUT && static_cast<size_t>(b.index()) != in)
      return false;
  }
  x.stateClaimed = true;
  x.statePairs = state.pairs;
  return true;
}

void CudaExecutor::releaseState() {
  Impl &x = *impl;
  std::lock_guard<std::mutex> lock(x.stateMutex);
  if (x.stateSlot) {
    x.cu->cuCtxSetCurrent(x.context);
    x.destroySlot(*x.stateSlot);
    x.stateSlot.reset();
  }
  x.stateClaimed = false;
  x.statePairs.clear();
  x.stateRan = false;
}

loom_status CudaExecutor::adoptState() {
  Impl &x = *impl;
  const Driver &cu = *x.cu;
  std::lock_guard<std::mutex> lock(x.stateMutex);
  if (!x.stateSlot || !x.stateRan)
    return runtime::makeStatus(LOOM_INTERNAL,
                               "CUDA: no run's training state to adopt");
  std::string error;
  Slot &slot = *x.stateSlot;
  bool ok = x.check(cu.cuCtxSetCurrent(x.context), "cuCtxSetCurrent", error);
  for (auto [in, out] : x.statePairs) {
    CUdeviceptr to = slot.inputs + x.inputOffsets[in];
    CUdeviceptr from = x.address(slot, x.program.output_buffers(out));
    if (ok && from != to && x.inputSizes[in])
      ok = x.check(
          cu.cuMemcpyDtoDAsync(to, from, static_cast<size_t>(x.inputSizes[in]),
                               slot.stream),
          "cuMemcpyDtoDAsync of state input " + std::to_string(in), error);
  }
  ok = ok && x.check(cu.cuStreamSynchronize(slot.stream),
                     "adopting the training state", error);
  x.stateRan = false;
  return ok ? nullptr : runtime::makeStatus(LOOM_INTERNAL, error);
}

loom_status CudaExecutor::readState(size_t input, void *out, size_t bytes) {
  Impl &x = *impl;
  const Driver &cu = *x.cu;
  std::lock_guard<std::mutex> lock(x.stateMutex);
  if (!x.stateSlot)
    return runtime::makeStatus(LOOM_INTERNAL,
                               "CUDA: no training state on the device");
  if (input >= x.inputSizes.size() ||
      bytes != static_cast<size_t>(x.inputSizes[input]))
    return runtime::makeStatus(
        LOOM_INTERNAL, "CUDA: state input " + std::to_string(input) +
                           " is not " + std::to_string(bytes) + " bytes");
  std::string error;
  Slot &slot = *x.stateSlot;
  bool ok =
      x.check(cu.cuCtxSetCurrent(x.context), "cuCtxSetCurrent", error) &&
      (!bytes ||
       x.check(cu.cuMemcpyDtoHAsync(out, slot.inputs + x.inputOffsets[input],
                                    bytes, slot.stream),
               "cuMemcpyDtoHAsync of state input " + std::to_string(input),
               error)) &&
      x.check(cu.cuStreamSynchronize(slot.stream),
              "reading the training state from the device", error);
  return ok ? nullptr : runtime::makeStatus(LOOM_INTERNAL, error);
}

loom_status CudaExecutor::run(const runtime::RunRequest &request) {
  std::vector<const void *> in;
  for (size_t i = 0; i < request.numInputs; ++i)
    in.push_back(request.inputs[i]->data);
  std::vector<std::unique_ptr<loom_tensor_s>> made;
  std::vector<void *> out;
  std::vector<char> kept =
      stateOutputs(request.state, request.outputSignature.size());
  for (const runtime::Signature &s : request.outputSignature) {
    if (kept[out.size()]) {
      made.emplace_back(nullptr); // stays on the device
      out.push_back(nullptr);
      continue;
    }
    loom_tensor *t = nullptr;
    if (loom_status status =
            loom_tensor_create(s.dtype, s.dims.size(), s.dims.data(), &t))
      return status;
    made.emplace_back(t);
    out.push_back(t->data);
  }
  loom_profile *profile = request.profile;
  std::vector<StepTime> times;
  std::string error;
  Failure failure = Failure::None;
  int64_t start = runtime::nowNs();
  if (!runBuffers(in, out, profile ? &times : nullptr, error, failure,
                  request.state, request.communicator, request.meshShape))
    return runtime::makeStatus(
        failure == Failure::Unavailable ? LOOM_UNAVAILABLE : LOOM_INTERNAL,
        error);
  int64_t end = runtime::nowNs();
  if (profile) {
    uint64_t row = runtime::threadRow();
    std::lock_guard<std::mutex> lock(profile->mutex);
    profile->events.push_back({"run", "run", start, end, row});
    for (const StepTime &t : times)
      profile->events.push_back(
          {t.name, "kernel", start + static_cast<int64_t>(t.startMs * 1e6),
           start + static_cast<int64_t>(t.endMs * 1e6), row});
  }
  for (size_t i = 0; i < made.size(); ++i)
    request.outputs[i] = made[i].release();
  return nullptr;
}

} // namespace loom::cuda
