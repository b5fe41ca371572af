//===- CommunicatorApi.cpp - the C API of communicators -------------------===//

#include "runtime/src/collectives/CommunicatorApi.h"

#include "runtime/src/Options.h"
#include "runtime/src/Session.h"
#include "runtime/src/collectives/GlooCommunicator.h"
#include "runtime/src/collectives/NcclCommunicator.h"

#include <cstdlib>

#include <new>

using loom::runtime::makeStatus;
using namespace loom::runtime::collectives;

namespace {

/// The timeout of `options`, else $LOOM_COLLECTIVE_TIMEOUT, else 300 s.
loom_status timeoutOf(const loom_communicator_options *options,
                      std::chrono::milliseconds &timeout) {
  double seconds = LOOM_OPTION(options, timeout_seconds, 0.0);
  if (seconds < 0 || seconds > 1e7 || seconds != seconds)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_communicator options: timeout_seconds " +
                          std::to_string(seconds) + " is not a duration");
  if (seconds > 0) {
    timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    return nullptr;
  }
  std::string error;
  timeout = timeoutFromEnv(kDefaultTimeout, error);
  return error.empty() ? nullptr : makeStatus(LOOM_INVALID_ARGUMENT, error);
}

loom_status create(int32_t rank, int32_t size, const char *addr, int32_t port,
                   int32_t localRank, const loom_communicator_options *options,
                   loom_communicator **out) {
  if (!out)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_communicator_create: out is null");
  *out = nullptr;
  if (size < 1 || rank < 0 || rank >= size)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_communicator_create: rank " + std::to_string(rank) +
                          " is not below the size " + std::to_string(size));
  // The first versioned layout (API version 4) ends at backend.
  if (loom_status s = loom::runtime::checkOptionsSize(
          options, LOOM_OPTIONS_END(loom_communicator_options, backend),
          "loom_communicator_create", "loom_communicator_options"))
    return s;
  std::chrono::milliseconds timeout = kDefaultTimeout;
  if (loom_status s = timeoutOf(options, timeout))
    return s;
  const char *named = LOOM_OPTION(options, backend, nullptr);
  std::string backend = named ? named : "";
  if (backend.empty())
    if (const char *env = std::getenv("LOOM_COLLECTIVES"))
      backend = env;
  if (backend.empty())
    backend = "gloo";
  if (backend != "gloo" && backend != "nccl")
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_communicator_create: the collective engine is "
                      "'gloo' or 'nccl', not '" +
                          backend + "' (options.backend or LOOM_COLLECTIVES)");
  auto handle = std::make_unique<loom_communicator_s>();
  handle->localRank = localRank;
  if (size == 1 && backend == "gloo") {
    handle->comm = createSelfCommunicator();
  } else if (backend == "nccl") {
    NcclOptions nccl;
    nccl.timeout = timeout;
    nccl.localRank = localRank;
    std::string error;
    handle->comm = createNcclCommunicator(
        rank, size, addr && *addr ? addr : "127.0.0.1", port, nccl, error);
    if (!handle->comm)
      return makeStatus(LOOM_UNAVAILABLE, error);
  } else {
    if (!addr || !*addr)
      return makeStatus(LOOM_INVALID_ARGUMENT,
                        "loom_communicator_create: no master address");
    if (port < 1 || port > 65535)
      return makeStatus(LOOM_INVALID_ARGUMENT,
                        "loom_communicator_create: port " +
                            std::to_string(port) + " is not a TCP port");
    GlooOptions gloo;
    gloo.timeout = timeout;
    std::string error;
    handle->comm = createGlooCommunicator(rank, size, addr, port, gloo, error);
    if (!handle->comm)
      return makeStatus(LOOM_UNAVAILABLE, error);
  }
  *out = handle.release();
  return nullptr;
}

} // namespace

extern "C" {

loom_status loom_communicator_create(int32_t rank, int32_t size,
                                     const char *master_addr,
                                     int32_t master_port,
                                     const loom_communicator_options *options,
                                     loom_communicator **out) {
  return create(rank, size, master_addr, master_port, -1, options, out);
}

loom_status
loom_communicator_create_from_env(const loom_communicator_options *options,
                                  loom_communicator **out) {
  RankEnvironment env;
  bool found = false;
  std::string error;
  if (!rankFromEnvironment(env, found, error))
    return makeStatus(LOOM_INVALID_ARGUMENT, error);
  if (!found)
    return create(0, 1, nullptr, 0, 0, options, out);
  return create(env.rank, env.size, env.masterAddr.c_str(), env.masterPort,
                env.localRank, options, out);
}

int32_t loom_communicator_rank(const loom_communicator *comm) {
  return comm ? comm->comm->rank() : 0;
}

int32_t loom_communicator_size(const loom_communicator *comm) {
  return comm ? comm->comm->size() : 1;
}

int32_t loom_communicator_local_rank(const loom_communicator *comm) {
  return comm ? comm->localRank : 0;
}

loom_status loom_communicator_barrier(loom_communicator *comm) {
  if (!comm)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_communicator_barrier: comm is null");
  std::lock_guard<std::mutex> lock(comm->runMutex);
  std::string error = comm->comm->barrier()->wait();
  return error.empty() ? nullptr : makeStatus(LOOM_UNAVAILABLE, error);
}

void loom_communicator_abort(loom_communicator *comm, const char *reason) {
  if (comm)
    comm->comm->abort(reason && *reason ? reason : "aborted");
}

void loom_communicator_release(loom_communicator *comm) { delete comm; }

} // extern "C"
