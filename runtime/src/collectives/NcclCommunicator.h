//===- NcclCommunicator.h - collectives between GPUs ------------*- C++ -*-===//
//
// The NCCL backend of Communicator. NCCL and the CUDA driver are loaded
// with dlopen (Nccl.h, runtime/src/cuda/CudaApi.h); each rank takes the GPU
// of its local rank. The ranks meet through the same TCP store as Gloo's
// (rank 0 serves it); each group's ncclUniqueId goes through it, and the
// group's NCCL communicator is made on the worker when an operation first
// names the group. Operations run FIFO on one stream: buffers in device
// memory are used as they are, host buffers (the CPU backend's) are staged
// through device scratch buffers. A wait polls the stream and NCCL's
// asynchronous error; past the timeout it aborts the NCCL communicators, so
// a dead peer fails the operation instead of hanging it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_COLLECTIVES_NCCLCOMMUNICATOR_H
#define LOOM_RUNTIME_COLLECTIVES_NCCLCOMMUNICATOR_H

#include "runtime/src/collectives/Communicator.h"

#include <memory>
#include <string>

namespace loom::runtime::collectives {

struct NcclOptions {
  /// How long the rendezvous and each operation may wait for the others.
  std::chrono::milliseconds timeout = kDefaultTimeout;
  /// The rank among this node's ranks (picks the GPU: local rank modulo
  /// the device count); -1: the rank.
  int localRank = -1;
};

/// Joins the job of `size` ranks as `rank` over NCCL (the rendezvous as
/// createGlooCommunicator's). Null with `error` when NCCL or the CUDA
/// driver cannot be loaded, there is no GPU, or the rendezvous fails.
std::unique_ptr<Communicator>
createNcclCommunicator(int rank, int size, const std::string &addr, int port,
                       const NcclOptions &options, std::string &error);

/// Whether NCCL could run here: NCCL and a CUDA driver with a device load.
/// `why` says what is missing otherwise.
bool ncclAvailable(std::string &why);

} // namespace loom::runtime::collectives

#endif // LOOM_RUNTIME_COLLECTIVES_NCCLCOMMUNICATOR_H
