//===- Nccl.h - NCCL, loaded with dlopen ------------------------*- C++ -*-===//
//
// The GPU collectives engine, loaded at run time through one symbol table
// (no link-time dependency, no nccl.h): the runtime builds and runs where
// NCCL is absent and says "NCCL not available" as a status. The types are
// NCCL's ABI (nccl.h of NCCL 2.x), declared here.
//
// This is the loader only: a Communicator over NCCL needs device buffers
// and streams, which come with the CUDA device (not yet in the runtime).
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

struct Library {
#define LOOM_NCCL_MEMBER(name, ret, params) ret(*name) params = nullptr;
  LOOM_NCCL_SYMBOLS(LOOM_NCCL_MEMBER)
#undef LOOM_NCCL_MEMBER
  /// NCCL's version, e.g. 22807 for 2.28.7.
  int version = 0;
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
