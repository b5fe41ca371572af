//===- Nccl.h - NCCL, loaded with dlopen ------------------------*- C++ -*-===//
//
// The GPU collectives engine, loaded at run time through one symbol table
// (no link-time dependency, no nccl.h): the runtime builds and runs where
// NCCL is absent and says "NCCL not available" as a status. The types are
// NCCL's ABI (nccl.h of NCCL 2.x), declared here.
//
// NcclCommunicator.cpp is the Communicator over it. ncclSend/ncclRecv
// need NCCL >= 2.7; non-blocking communicators NCCL >= 2.14, which
// ncclGetVersion tells at run time (an older one runs blocking).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_COLLECTIVES_NCCL_H
#define LOOM_RUNTIME_COLLECTIVES_NCCL_H

#include <cstddef>
#include <string>

namespace loom::runtime::nccl {

using Result = int; // ncclResult_t: 0 is ncclSuccess
using Comm = struct ncclComm *;
using Stream = void *; // cudaStream_t
using DataType = int;  // ncclDataType_t
using RedOp = int;     // ncclRedOp_t
struct UniqueId {
  char internal[128];
};

/// ncclResult_t's ncclInProgress: a non-blocking communicator's call is
/// still under way (poll ncclCommGetAsyncError).
constexpr Result kInProgress = 7;

/// ncclConfig_t exactly as nccl.h of NCCL 2.28 lays it out
/// (ncclConfig_v22800; NCCL_CONFIG_INITIALIZER gives the values
/// configInitializer() does). NCCL reads `size` first and copies at most
/// its own struct's size, then takes from each field only what `version`
/// says the caller knew: an older NCCL ignores the fields it lacks, a
/// newer one defaults the fields after these.
struct Config {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char *netName;
  int splitShare;
  int trafficClass;
  const char *commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
};

/// NCCL_CONFIG_INITIALIZER: every attribute undefined (NCCL's default).
Config configInitializer();

/// The first NCCL with ncclCommInitRankConfig, config.blocking and
/// ncclCommFinalize: 2.14.0.
constexpr int kNonBlockingVersion = 21400;

// NAME, return type, parameters.
#define LOOM_NCCL_SYMBOLS(X)                                                   \
  X(ncclGetVersion, Result, (int *version))                                    \
  X(ncclGetErrorString, const char *, (Result result))                         \
  X(ncclGetUniqueId, Result, (UniqueId * id))                                  \
  X(ncclCommInitRank, Result,                                                  \
    (Comm * comm, int nranks, UniqueId id, int rank))                          \
  X(ncclCommDestroy, Result, (Comm comm))                                      \
  X(ncclCommAbort, Result, (Comm comm))                                        \
  X(ncclCommGetAsyncError, Result, (Comm comm, Result * error))                \
  X(ncclAllReduce, Result,                                                     \
    (const void *send, void *recv, size_t count, DataType type, RedOp op,      \
     Comm comm, Stream stream))                                                \
  X(ncclAllGather, Result,                                                     \
    (const void *send, void *recv, size_t count, DataType type, Comm comm,     \
     Stream stream))                                                           \
  X(ncclReduceScatter, Result,                                                 \
    (const void *send, void *recv, size_t count, DataType type, RedOp op,      \
     Comm comm, Stream stream))                                                \
  X(ncclBroadcast, Result,                                                     \
    (const void *send, void *recv, size_t count, DataType type, int root,      \
     Comm comm, Stream stream))                                                \
  X(ncclSend, Result,                                                          \
    (const void *send, size_t count, DataType type, int peer, Comm comm,       \
     Stream stream))                                                           \
  X(ncclRecv, Result,                                                          \
    (void *recv, size_t count, DataType type, int peer, Comm comm,             \
     Stream stream))                                                           \
  X(ncclGroupStart, Result, ())                                                \
  X(ncclGroupEnd, Result, ())

// Since NCCL 2.14 (kNonBlockingVersion): null in an older library.
#define LOOM_NCCL_OPTIONAL_SYMBOLS(X)                                          \
  X(ncclCommInitRankConfig, Result,                                            \
    (Comm * comm, int nranks, UniqueId id, int rank, Config *config))          \
  X(ncclCommFinalize, Result, (Comm comm))

struct Library {
#define LOOM_NCCL_MEMBER(name, ret, params) ret(*name) params = nullptr;
  LOOM_NCCL_SYMBOLS(LOOM_NCCL_MEMBER)
  LOOM_NCCL_OPTIONAL_SYMBOLS(LOOM_NCCL_MEMBER)
#undef LOOM_NCCL_MEMBER
  /// NCCL's version, e.g. 22807 for 2.28.7.
  int version = 0;

  /// Whether communicators can be made and used without blocking
  /// (ncclCommInitRankConfig with config.blocking = 0, ncclCommFinalize):
  /// NCCL >= 2.14. Older ones block in ncclCommInitRank until every
  /// member has called it.
  bool nonBlocking() const {
    return version >= kNonBlockingVersion && ncclCommInitRankConfig &&
           ncclCommFinalize;
  }
};

/// NCCL, loaded once per process (libnccl.so.2 from the library path, else
/// from $CUDA_HOME/lib64, $CUDA_HOME/lib, /usr/local/cuda/lib64 and
/// /usr/local/cuda/lib); null with `error` ("NCCL not available: ...")
/// when it cannot be loaded or lacks a symbol. Thread-safe.
const Library *load(std::string &error);

/// "2.28.7".
std::string versionString(int version);

} // namespace loom::runtime::nccl

#endif // LOOM_RUNTIME_COLLECTIVES_NCCL_H
