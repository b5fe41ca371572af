//===- Runtime.cpp - the C API: status, instance, session, tensors, run ---===//
//
// A session holds the parsed signature, the mesh, the training
// description and one executor (Executor.h) chosen at load: the CPU code,
// the CUDA program or a pipeline artifact's description. A run checks the
// inputs against the signature, takes the communicator's lock and hands
// the run to the executor.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime.h"

#include "loom/common/Artifact.h"
#include "loom/common/FileIO.h"
#include "runtime/src/Executor.h"
#include "runtime/src/MappedWeights.h"
#include "runtime/src/Options.h"
#include "runtime/src/Session.h"
#include "runtime/src/Tensor.h"
#include "runtime/src/collectives/CommunicatorApi.h"
#include "runtime/src/collectives/RunCollectives.h"
#include "runtime/src/cpu/CpuExecutor.h"
#include "runtime/src/cuda/CudaExecutor.h"
#include "runtime/src/pipeline/PipelineArtifact.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <string>
#include <vector>

struct loom_status_s {
  loom_status_code code;
  std::string message;
};

namespace {
/// The status returned when a status cannot be allocated: loom_status_free
/// leaves it alone. Its message is a literal, so it allocates nothing.
loom_status_s outOfMemory{LOOM_OUT_OF_MEMORY, std::string()};
} // namespace

loom_status loom::runtime::outOfMemoryStatus() { return &outOfMemory; }

loom_status loom::runtime::makeStatus(loom_status_code code,
                                      std::string message) {
  loom_status status =
      new (std::nothrow) loom_status_s{code, std::move(message)};
  return status ? status : &outOfMemory;
}

loom_status loom::runtime::prefixStatus(loom_status status,
                                        const std::string &prefix) {
  if (status && status != &outOfMemory)
    status->message.insert(0, prefix);
  return status;
}

using loom::runtime::alignedAlloc;
using loom::runtime::makeStatus;
using loom::runtime::newTensor;
using loom::runtime::outOfMemoryStatus;
using loom::runtime::Signature;

namespace {
/// The largest tensor the runtime makes: sizes past it wrap in pointer
/// arithmetic.
constexpr size_t kMaxTensorBytes = static_cast<size_t>(PTRDIFF_MAX) / 2;
} // namespace

loom::runtime::AlignedBuffer loom::runtime::alignedAlloc(size_t bytes) {
  if (bytes > kMaxTensorBytes)
    return AlignedBuffer(nullptr);
  size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  return AlignedBuffer(std::aligned_alloc(64, rounded));
}

uint64_t loom::runtime::threadRow() {
  static std::atomic<uint64_t> next{1};
  static thread_local uint64_t row = next++;
  return row;
}

namespace {

Signature toSignature(const loom::artifact::TensorSignature &sig) {
  Signature s;
  s.name = sig.name();
  s.dtype = static_cast<loom_dtype>(sig.dtype());
  for (const auto &d : sig.dims()) {
    s.dims.push_back(d.size());
    s.dimNames.push_back(d.symbol());
  }
  return s;
}

std::string shapeString(const int64_t *shape, size_t rank) {
  std::string s = "[";
  for (size_t i = 0; i < rank; ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string signatureString(const Signature &s) {
  std::string r = std::string(loom_dtype_name(s.dtype)) + "[";
  for (size_t i = 0; i < s.dims.size(); ++i) {
    r += i ? ", " : "";
    if (s.dims[i] >= 0)
      r += std::to_string(s.dims[i]);
    else
      r += s.dimNames[i].empty() ? "?" : s.dimNames[i];
  }
  return r + "]";
}

} // namespace

struct loom_instance_s {
  int32_t numThreads; // 0: OpenMP's default (one per core)
  loom::artifact::Limits limits;
  loom_device device;
  int32_t deviceOrdinal;
};

struct loom_session_s {
  loom_instance *instance;
  /// The artifact's bytes: the file mapped (loom_session_create_from_file)
  /// or a 64-byte aligned copy (from memory). Weights are read in place
  /// and initial values copied from its data section; declared before the
  /// executor, so it outlives it.
  std::unique_ptr<loom::files::MappedFile> mapping;
  loom::runtime::AlignedBuffer copy;
  loom::artifact::DataSection section;
  std::vector<Signature> inputs, outputs;
  std::string modelName;
  /// Set for a training artifact (checked by artifact::parse).
  std::unique_ptr<loom::artifact::Training> training;
  /// The mesh the code was compiled for (empty: one process).
  std::vector<int64_t> meshShape;
  std::vector<std::string> meshAxes;
  int32_t zeroStage = 0;
  std::vector<const char *> meshAxisPtrs;
  /// Attached by loom_session_attach_communicator; not owned.
  loom_communicator *communicator = nullptr;
  /// What runs the code (never null once created): the CPU code, the CUDA
  /// program, or a pipeline artifact's description (no code of its own:
  /// its trainer runs the stages' and updates' artifacts).
  std::unique_ptr<loom::runtime::Executor> executor;
  /// The random ops' state (docs/training.md, "Random ops"): when the
  /// code's last input is `loom.rng_state` (i64 [2]), the session hides it
  /// from the signature and passes [seed, run counter] itself, the seed
  /// drawn at load (or LOOM_SEED), the counter one more every run.
  bool rngInput = false;
  uint64_t rngSeed = 0;
  std::atomic<uint64_t> rngCounter{0};
  ~loom_session_s() {
    if (mapping)
      loom::runtime::unregisterMappedFile(mapping.get());
  }
};

const loom::artifact::Training *
loom::runtime::sessionTraining(const loom_session *session) {
  return session ? session->training.get() : nullptr;
}

const loom::artifact::DataSection &
loom::runtime::sessionData(const loom_session *session) {
  return session->section;
}

void loom::runtime::sessionReleaseData(const loom_session *session,
                                       std::string_view bytes) {
  const loom::files::MappedFile *m = session->mapping.get();
  if (m && bytes.data() >= m->data() &&
      bytes.data() + bytes.size() <= m->data() + m->size())
    m->release(static_cast<uint64_t>(bytes.data() - m->data()), bytes.size());
}

const loom::artifact::Limits &
loom::runtime::sessionLimits(const loom_session *session) {
  return session->instance->limits;
}

const std::string &
loom::runtime::sessionModelName(const loom_session *session) {
  return session->modelName;
}

loom_communicator *
loom::runtime::sessionCommunicator(const loom_session *session) {
  return session ? session->communicator : nullptr;
}

const loom::artifact::Pipeline *
loom::runtime::sessionPipeline(const loom_session *session) {
  return session ? session->executor->pipeline() : nullptr;
}

loom_instance *loom::runtime::sessionInstance(const loom_session *session) {
  return session ? session->instance : nullptr;
}

extern "C" {

loom_status_code loom_status_get_code(loom_status status) {
  return status ? status->code : LOOM_OK;
}

const char *loom_status_message(loom_status status) {
  if (status == &outOfMemory)
    return "out of memory (no memory left for this status's message)";
  return status ? status->message.c_str() : "";
}

void loom_status_free(loom_status status) {
  if (status != &outOfMemory)
    delete status;
}

size_t loom_dtype_size(loom_dtype dtype) {
  return loom::artifact::dtypeSize(dtype);
}

const char *loom_dtype_name(loom_dtype dtype) {
  return loom::artifact::dtypeName(dtype);
}

loom_status loom_instance_create(const loom_instance_options *options,
                                 loom_instance **out) {
  if (!out)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_instance_create: out is null");
  // The first versioned layout (API version 4) ends at device_ordinal.
  if (loom_status s = loom::runtime::checkOptionsSize(
          options, LOOM_OPTIONS_END(loom_instance_options, device_ordinal),
          "loom_instance_create", "loom_instance_options"))
    return s;
  int32_t threads = LOOM_OPTION(options, num_threads, 0);
  if (threads < 0)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_instance_create: num_threads is negative");
  loom_device device = LOOM_OPTION(options, device, LOOM_DEVICE_AUTO);
  if (device != LOOM_DEVICE_AUTO && device != LOOM_DEVICE_CPU &&
      device != LOOM_DEVICE_CUDA && device != LOOM_DEVICE_CUDA_SIM)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_instance_create: unknown device " +
                          std::to_string(static_cast<int>(device)));
  int32_t ordinal = LOOM_OPTION(options, device_ordinal, 0);
  if (ordinal < 0)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_instance_create: device_ordinal is negative");
  // OpenBLAS and OpenMP (oneDNN) keep one thread count per process.
  if (threads > 0) {
    openblas_set_num_threads(threads);
    omp_set_num_threads(threads);
  }
  loom::artifact::Limits limits;
  if (uint64_t bytes = LOOM_OPTION(options, max_file_bytes, uint64_t(0)))
    limits.maxFileBytes = bytes;
  if (uint64_t bytes = LOOM_OPTION(options, max_tensor_bytes, uint64_t(0)))
    limits.maxTensorBytes = bytes;
  *out = new (std::nothrow) loom_instance_s{threads, limits, device, ordinal};
  return *out ? nullptr : outOfMemoryStatus();
}

void loom_instance_release(loom_instance *instance) { delete instance; }

uint32_t loom_runtime_api_version(void) { return LOOM_RUNTIME_API_VERSION; }

namespace {

/// A session over the artifact bytes `data`, `size`, which `session`
/// (mapping or copy) already owns.
loom_status createSession(std::unique_ptr<loom_session_s> session,
                          const void *data, size_t size, loom_session **out) {
  loom_instance *instance = session->instance;
  loom::artifact::Artifact artifact;
  std::string error;
  if (!loom::artifact::parse(data, size, artifact, error, instance->limits,
                             &session->section))
    return makeStatus(LOOM_BAD_ARTIFACT, error);

  for (const auto &sig : artifact.inputs())
    session->inputs.push_back(toSignature(sig));
  for (const auto &sig : artifact.outputs())
    session->outputs.push_back(toSignature(sig));
  if (!session->inputs.empty() &&
      session->inputs.back().name == "loom.rng_state" &&
      session->inputs.back().dtype == LOOM_DTYPE_I64 &&
      session->inputs.back().dims == std::vector<int64_t>{2}) {
    session->inputs.pop_back();
    session->rngInput = true;
    const char *seed = std::getenv("LOOM_SEED");
    if (seed && *seed) {
      session->rngSeed = std::strtoull(seed, nullptr, 0);
    } else {
      std::random_device device;
      session->rngSeed = (uint64_t(device()) << 32) ^ device();
    }
  }
  for (auto *list : {&session->inputs, &session->outputs})
    for (Signature &s : *list)
      for (const std::string &n : s.dimNames)
        s.dimNamePtrs.push_back(n.c_str());

  session->modelName = artifact.model_name();
  session->meshShape.assign(artifact.mesh().shape().begin(),
                            artifact.mesh().shape().end());
  session->meshAxes.assign(artifact.mesh().axes().begin(),
                           artifact.mesh().axes().end());
  session->zeroStage = artifact.mesh().zero_stage();
  for (const std::string &a : session->meshAxes)
    session->meshAxisPtrs.push_back(a.c_str());
  if (artifact.has_training()) {
    session->training = std::make_unique<loom::artifact::Training>();
    session->training->Swap(artifact.mutable_training());
  }
  if (artifact.has_pipeline()) {
    // No code: the trainer loads the parts (loom::pipeline::
    // PipelineTrainer).
    session->executor = std::make_unique<loom::runtime::PipelineArtifact>(
        *artifact.mutable_pipeline());
    *out = session.release();
    return nullptr;
  }
  // The device: the CUDA program when asked for (or, with AUTO, when the
  // artifact has one and a GPU answers), else the CPU code.
  bool hasCpu = !artifact.cpu().shared_object().empty();
  bool hasCuda = artifact.has_cuda();
  loom_device device = instance->device;
  std::string noGpu;
  if (device == LOOM_DEVICE_AUTO)
    device = hasCuda && (!hasCpu || loom::cuda::deviceAvailable(
                                        instance->deviceOrdinal, noGpu))
                 ? LOOM_DEVICE_CUDA
                 : LOOM_DEVICE_CPU;
  if (device == LOOM_DEVICE_CUDA || device == LOOM_DEVICE_CUDA_SIM) {
    if (!hasCuda)
      return makeStatus(LOOM_UNAVAILABLE,
                        "the artifact has no CUDA code (it was compiled for "
                        "the CPU): compile with loomc --target cuda");
    // A mesh artifact's collectives run through the communicator that
    // loom_session_attach_communicator attaches (its size checked against
    // the mesh there, and a run of a multi-rank mesh without one refused
    // in run()): NCCL on device buffers, Gloo through host staging, the
    // simulator's host memory as it is (CudaExecutor.cpp).
    loom::cuda::CudaExecutor::Options options;
    options.ordinal = instance->deviceOrdinal;
    options.simulate = device == LOOM_DEVICE_CUDA_SIM;
    loom::cuda::Failure failure = loom::cuda::Failure::None;
    std::unique_ptr<loom::cuda::CudaExecutor> cuda =
        loom::cuda::CudaExecutor::load(artifact, session->section, options,
                                       error, failure);
    if (!cuda)
      return makeStatus(
          failure == loom::cuda::Failure::BadArtifact   ? LOOM_BAD_ARTIFACT
          : failure == loom::cuda::Failure::Unavailable ? LOOM_UNAVAILABLE
                                                        : LOOM_INTERNAL,
          (instance->device == LOOM_DEVICE_AUTO
               ? "the artifact has CUDA code only (loomc "
                 "--target cuda): "
               : "") +
              error);
    session->executor = std::move(cuda);
    *out = session.release();
    return nullptr;
  }
  if (!hasCpu)
    return makeStatus(LOOM_UNAVAILABLE,
                      "the artifact has CUDA code only (loomc --target "
                      "cuda) and the CPU device cannot run it" +
                          (noGpu.empty() ? std::string()
                                         : " (no GPU answers: " + noGpu + ")") +
                          "; compile with loomc --target cpu");
  std::unique_ptr<loom::runtime::CpuExecutor> cpu;
  if (loom_status status =
          loom::runtime::CpuExecutor::load(artifact, session->section, cpu))
    return status;
  session->executor = std::move(cpu);
  *out = session.release();
  return nullptr;
}

} // namespace

loom_status loom_session_create_from_memory(loom_instance *instance,
                                            const void *data, size_t size,
                                            loom_session **out) {
  if (!instance || !data || !out)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_session_create_from_memory: null argument");
  *out = nullptr;
  if (size > instance->limits.maxFileBytes)
    return makeStatus(LOOM_BAD_ARTIFACT,
                      "artifact is too large (" + std::to_string(size) +
                          " bytes; the limit is " +
                          std::to_string(instance->limits.maxFileBytes) + ")");
  // The caller may free its bytes once this returns: the session keeps an
  // aligned copy (the weights are read in place from it).
  auto session = std::make_unique<loom_session_s>();
  session->instance = instance;
  session->copy = loom::runtime::alignedAlloc(std::max<size_t>(size, 1));
  if (!session->copy)
    return makeStatus(LOOM_OUT_OF_MEMORY,
                      "out of memory for a copy of the artifact (" +
                          std::to_string(size) + " bytes)");
  std::memcpy(session->copy.get(), data, size);
  const void *bytes = session->copy.get();
  return createSession(std::move(session), bytes, size, out);
}

loom_status loom_session_create_from_file(loom_instance *instance,
                                          const char *path,
                                          loom_session **out) {
  if (!path)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_session_create_from_file: path is null");
  if (!instance || !out)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_session_create_from_file: null argument");
  *out = nullptr;
  // Mapped, not read: the weights stay in the page cache, shared by every
  // session and process that maps the file.
  auto session = std::make_unique<loom_session_s>();
  session->instance = instance;
  session->mapping = std::make_unique<loom::files::MappedFile>();
  std::string error;
  if (!session->mapping->open(path, error, "artifact")) {
    // Not a regular file (a pipe, a device): read whole, as from memory.
    std::string bytes;
    if (!loom::files::readFile(path, bytes, error, "artifact",
                               instance->limits.maxFileBytes))
      return makeStatus(error.rfind("cannot", 0) == 0 ? LOOM_NOT_FOUND
                                                      : LOOM_BAD_ARTIFACT,
                        error);
    return loom::runtime::prefixStatus(
        loom_session_create_from_memory(instance, bytes.data(), bytes.size(),
                                        out),
        std::string(path) + ": ");
  }
  // Kernels that keep a weight packed give its pages back (MappedWeights.h).
  loom::runtime::registerMappedFile(session->mapping.get());
  const void *bytes = session->mapping->data();
  size_t size = session->mapping->size();
  loom_status status =
      createSession(std::move(session), bytes ? bytes : "", size, out);
  return loom::runtime::prefixStatus(status, std::string(path) + ": ");
}

void loom_session_release(loom_session *session) { delete session; }

loom_status loom_session_attach_communicator(loom_session *session,
                                             loom_communicator *comm) {
  if (!session)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_session_attach_communicator: session is null");
  int64_t ranks = 1;
  for (int64_t s : session->meshShape)
    ranks *= s;
  if (comm && !session->meshShape.empty() && comm->comm->size() != ranks)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "this artifact runs on a mesh of " +
                          std::to_string(ranks) + " ranks (" +
                          loom::runtime::collectives::meshString(
                              session->meshShape, session->meshAxes) +
                          "), the communicator has " +
                          std::to_string(comm->comm->size()) + " ranks");
  session->communicator = comm;
  return nullptr;
}

size_t loom_session_mesh(const loom_session *session, size_t capacity,
                         int64_t *shape, const char **axes,
                         int32_t *zero_stage) {
  if (!session)
    return 0;
  size_t n = session->meshShape.size();
  for (size_t i = 0; i < n && i < capacity; ++i) {
    if (shape)
      shape[i] = session->meshShape[i];
    if (axes)
      axes[i] = session->meshAxisPtrs[i];
  }
  if (zero_stage)
    *zero_stage = session->zeroStage;
  return n;
}

loom_status loom_session_set_max_concurrent_runs(loom_session *session,
                                                 size_t max_runs) {
  if (!session)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_session_set_max_concurrent_runs: session is null");
  session->executor->setMaxConcurrentRuns(max_runs);
  return nullptr;
}

loom_status loom_session_memory_stats(const loom_session *session,
                                      loom_session_memory *out) {
  if (!session || !out)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_session_memory_stats: null argument");
  *out = session->executor->memory();
  return nullptr;
}

loom_device loom_session_device(const loom_session *session) {
  return session ? session->executor->device() : LOOM_DEVICE_CPU;
}

const char *loom_session_device_description(const loom_session *session) {
  return session ? session->executor->description().c_str() : "";
}

int32_t loom_session_is_training(const loom_session *session) {
  return session && session->training ? 1 : 0;
}

size_t loom_session_input_count(const loom_session *session) {
  return session ? session->inputs.size() : 0;
}

size_t loom_session_output_count(const loom_session *session) {
  return session ? session->outputs.size() : 0;
}

static loom_status tensorInfo(const std::vector<Signature> &list, size_t index,
                              const char *what, loom_tensor_info *out) {
  if (!out)
    return makeStatus(LOOM_INVALID_ARGUMENT, "tensor info: out is null");
  if (index >= list.size())
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      std::string(what) + " index " + std::to_string(index) +
                          " is out of range (" + std::to_string(list.size()) +
                          ")");
  const Signature &s = list[index];
  *out = {s.name.c_str(), s.dtype, s.dims.size(), s.dims.data(),
          s.dimNamePtrs.data()};
  return nullptr;
}

loom_status loom_session_input_info(const loom_session *session, size_t index,
                                    loom_tensor_info *out) {
  if (!session)
    return makeStatus(LOOM_INVALID_ARGUMENT, "input info: session is null");
  return tensorInfo(session->inputs, index, "input", out);
}

loom_status loom_session_output_info(const loom_session *session, size_t index,
                                     loom_tensor_info *out) {
  if (!session)
    return makeStatus(LOOM_INVALID_ARGUMENT, "output info: session is null");
  return tensorInfo(session->outputs, index, "output", out);
}

} // extern "C"

loom_status loom::runtime::newTensor(const char *api, loom_dtype dtype,
                                     size_t rank, const int64_t *shape,
                                     std::unique_ptr<loom_tensor_s> &t) {
  size_t elem = loom_dtype_size(dtype);
  if (!elem)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      std::string(api) + ": unknown dtype " +
                          std::to_string(static_cast<int>(dtype)));
  size_t count = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      return makeStatus(LOOM_INVALID_ARGUMENT, std::string(api) +
                                                   ": negative dim in " +
                                                   shapeString(shape, rank));
    if (shape[i] &&
        count > kMaxTensorBytes / elem / static_cast<size_t>(shape[i]))
      return makeStatus(LOOM_INVALID_ARGUMENT, std::string(api) + ": shape " +
                                                   shapeString(shape, rank) +
                                                   " is too large");
    count *= static_cast<size_t>(shape[i]);
  }
  t = std::make_unique<loom_tensor_s>();
  t->dtype = dtype;
  t->shape.assign(shape, shape + rank);
  t->count = count;
  return nullptr;
}

namespace {

loom_status run(loom_session *session, const loom_tensor *const *inputs,
                size_t num_inputs, loom_tensor **outputs, size_t num_outputs,
                loom_profile *profile,
                const loom::runtime::DeviceState *state = nullptr) {
  if (!session || (num_inputs && !inputs) || !outputs)
    return makeStatus(LOOM_INVALID_ARGUMENT, "loom_session_run: null argument");
  if (session->executor->pipeline())
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "model '" + session->modelName +
                          "' is a pipeline artifact, which runs through a "
                          "trainer (loom_trainer_*), not loom_session_run");
  if (num_inputs != session->inputs.size())
    return makeStatus(
        LOOM_INVALID_ARGUMENT,
        "the model takes " + std::to_string(session->inputs.size()) +
            " inputs, the run gave " + std::to_string(num_inputs));
  if (num_outputs != session->outputs.size())
    return makeStatus(
        LOOM_INVALID_ARGUMENT,
        "the model has " + std::to_string(session->outputs.size()) +
            " outputs, the run asked for " + std::to_string(num_outputs));

  // A multi-rank artifact needs its ranks.
  int64_t meshRanks = 1;
  for (int64_t s : session->meshShape)
    meshRanks *= s;
  loom_communicator *comm = session->communicator;
  if (meshRanks > 1 && !comm)
    return makeStatus(
        LOOM_UNAVAILABLE,
        "this artifact runs on a mesh of " + std::to_string(meshRanks) +
            " ranks (" +
            loom::runtime::collectives::meshString(session->meshShape,
                                                   session->meshAxes) +
            "); start it under loom-launch (or torchrun, mpirun, srun) with " +
            std::to_string(meshRanks) + " ranks");

  // Check every input against its signature; named dynamic dims agree.
  std::map<std::string, std::pair<int64_t, std::string>> symbols;
  for (size_t i = 0; i < num_inputs; ++i) {
    const Signature &s = session->inputs[i];
    const loom_tensor *t = inputs[i];
    std::string where = "input " + std::to_string(i) + " ('" + s.name + "')";
    if (!t)
      return makeStatus(LOOM_INVALID_ARGUMENT, where + " is null");
    bool fits = t->dtype == s.dtype && t->shape.size() == s.dims.size();
    for (size_t d = 0; fits && d < s.dims.size(); ++d)
      fits = s.dims[d] < 0 || s.dims[d] == t->shape[d];
    if (!fits)
      return makeStatus(LOOM_SHAPE_MISMATCH,
                        where + " is " + loom_dtype_name(t->dtype) +
                            shapeString(t->shape.data(), t->shape.size()) +
                            ", the model expects " + signatureString(s));
    for (size_t d = 0; d < s.dims.size(); ++d) {
      if (s.dims[d] >= 0 || s.dimNames[d].empty())
        continue;
      auto [it, inserted] = symbols.try_emplace(
          s.dimNames[d], t->shape[d], where + " dim " + std::to_string(d));
      if (!inserted && it->second.first != t->shape[d])
        return makeStatus(LOOM_SHAPE_MISMATCH,
                          "dim '" + s.dimNames[d] + "' is " +
                              std::to_string(it->second.first) + " in " +
                              it->second.second + " but " +
                              std::to_string(t->shape[d]) + " in " + where +
                              " dim " + std::to_string(d));
    }
  }

  // One step at a time per communicator; a broken one fails at once.
  std::unique_lock<std::mutex> commLock;
  if (comm) {
    commLock = std::unique_lock<std::mutex>(comm->runMutex);
    std::string broken = comm->comm->error();
    if (!broken.empty())
      return makeStatus(LOOM_UNAVAILABLE,
                        "the communicator is broken by an earlier failure: " +
                            broken);
  }

  // The random ops' state, after the caller's inputs.
  std::vector<const loom_tensor *> withState;
  uint64_t rng[2];
  loom_tensor_s rngTensor;
  if (session->rngInput) {
    rng[0] = session->rngSeed;
    rng[1] = session->rngCounter.fetch_add(1);
    rngTensor.dtype = LOOM_DTYPE_I64;
    rngTensor.shape = {2};
    rngTensor.count = 2;
    rngTensor.data = rng;
    withState.assign(inputs, inputs + num_inputs);
    withState.push_back(&rngTensor);
    inputs = withState.data();
    num_inputs = withState.size();
  }

  return session->executor->run({inputs, num_inputs, session->outputs, outputs,
                                 profile, session->meshShape,
                                 comm ? comm->comm.get() : nullptr,
                                 session->instance->numThreads, state});
}

} // namespace

loom::runtime::Executor &loom::runtime::sessionExecutor(loom_session *session) {
  return *session->executor;
}

loom_status loom::runtime::sessionRunWithState(
    loom_session *session, const loom_tensor *const *inputs, size_t num_inputs,
    loom_tensor **outputs, size_t num_outputs, loom_profile *profile,
    const DeviceState &state) {
  return run(session, inputs, num_inputs, outputs, num_outputs, profile,
             &state);
}

extern "C" {

loom_status loom_session_run(loom_session *session,
                             const loom_tensor *const *inputs,
                             size_t num_inputs, loom_tensor **outputs,
                             size_t num_outputs) {
  return run(session, inputs, num_inputs, outputs, num_outputs, nullptr);
}

loom_status loom_session_run_profiled(loom_session *session,
                                      const loom_tensor *const *inputs,
                                      size_t num_inputs, loom_tensor **outputs,
                                      size_t num_outputs,
                                      loom_profile *profile) {
  if (!profile)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_session_run_profiled: profile is null");
  return run(session, inputs, num_inputs, outputs, num_outputs, profile);
}

loom_status loom_profile_create(loom_profile **out) {
  if (!out)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_profile_create: out is null");
  *out = new (std::nothrow) loom_profile_s();
  return *out ? nullptr : outOfMemoryStatus();
}

void loom_profile_release(loom_profile *profile) { delete profile; }

size_t loom_profile_event_count(const loom_profile *profile) {
  if (!profile)
    return 0;
  std::lock_guard<std::mutex> lock(const_cast<loom_profile *>(profile)->mutex);
  return profile->events.size();
}

/// `s` as a JSON string body.
static std::string jsonEscape(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out;
}

loom_status loom_profile_write_chrome_trace(const loom_profile *profile,
                                            const char *path) {
  if (!profile || !path)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_profile_write_chrome_trace: null argument");
  auto *p = const_cast<loom_profile *>(profile);
  std::lock_guard<std::mutex> lock(p->mutex);
  int64_t origin = p->events.empty() ? 0 : p->events.front().startNs;
  for (const auto &e : p->events)
    origin = std::min(origin, e.startNs);
  std::string json = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [";
  bool first = true;
  for (const auto &e : p->events) {
    char times[96];
    std::snprintf(times, sizeof(times), "\"ts\": %.3f, \"dur\": %.3f",
                  (e.startNs - origin) / 1e3, (e.endNs - e.startNs) / 1e3);
    json += std::string(first ? "\n" : ",\n") + "  {\"name\": \"" +
            jsonEscape(e.name) + "\", \"cat\": \"" + e.category +
            "\", \"ph\": \"X\", " + times +
            ", \"pid\": 1, \"tid\": " + std::to_string(e.thread) + "}";
    first = false;
  }
  json += "\n]}\n";
  std::string error;
  if (!loom::files::writeFileAtomically(path, json, error))
    return makeStatus(LOOM_NOT_FOUND, error);
  return nullptr;
}

loom_status loom_tensor_create(loom_dtype dtype, size_t rank,
                               const int64_t *shape, loom_tensor **out) {
  if (!out || (rank && !shape))
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_tensor_create: null argument");
  std::unique_ptr<loom_tensor_s> t;
  if (loom_status s = newTensor("loom_tensor_create", dtype, rank, shape, t))
    return s;
  size_t bytes = t->count * loom_dtype_size(dtype);
  t->owned = alignedAlloc(bytes);
  if (!t->owned)
    return makeStatus(LOOM_OUT_OF_MEMORY, "out of memory for a tensor of " +
                                              std::to_string(bytes) + " bytes");
  t->data = t->owned.get();
  std::memset(t->data, 0, bytes);
  *out = t.release();
  return nullptr;
}

loom_status loom_tensor_wrap(loom_dtype dtype, size_t rank,
                             const int64_t *shape, void *data,
                             size_t size_bytes, loom_tensor **out) {
  if (!out || (rank && !shape) || !data)
    return makeStatus(LOOM_INVALID_ARGUMENT, "loom_tensor_wrap: null argument");
  std::unique_ptr<loom_tensor_s> t;
  if (loom_status s = newTensor("loom_tensor_wrap", dtype, rank, shape, t))
    return s;
  size_t bytes = t->count * loom_dtype_size(dtype);
  if (bytes > size_bytes)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_tensor_wrap: shape " + shapeString(shape, rank) +
                          " needs " + std::to_string(bytes) +
                          " bytes, the buffer has " +
                          std::to_string(size_bytes));
  t->data = data;
  *out = t.release();
  return nullptr;
}

void loom_tensor_release(loom_tensor *tensor) { delete tensor; }

loom_dtype loom_tensor_dtype(const loom_tensor *t) {
  return t ? t->dtype : LOOM_DTYPE_UNDEFINED;
}
size_t loom_tensor_rank(const loom_tensor *t) {
  return t ? t->shape.size() : 0;
}
const int64_t *loom_tensor_shape(const loom_tensor *t) {
  return t ? t->shape.data() : nullptr;
}
size_t loom_tensor_element_count(const loom_tensor *t) {
  return t ? t->count : 0;
}
size_t loom_tensor_size_bytes(const loom_tensor *t) {
  return t ? t->count * loom_dtype_size(t->dtype) : 0;
}
void *loom_tensor_data(loom_tensor *t) { return t ? t->data : nullptr; }
const void *loom_tensor_data_const(const loom_tensor *t) {
  return t ? t->data : nullptr;
}

} // extern "C"
