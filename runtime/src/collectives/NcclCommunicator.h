//===- NcclCommunicator.h - collectives between GPUs ------------*- C++ -*-===//
//
// The NCCL backend of Communicator. NCCL and the CUDA driver are loaded
// with dlopen (Nccl.h, runtime/src/cuda/CudaApi.h); each rank takes the GPU
// of its local rank. The ranks meet through the same TCP store as Gloo's
// (rank 0 serves it); each group's ncclUniqueId goes through it, and the
// group's NCCL communicator is made on the worker when an operation first
// names the group. With NCCL >= 2.14 communicators are non-blocking
// (ncclCommInitRankConfig with config.blocking = 0): their creation and
// every call return at once and the worker polls ncclCommGetAsyncError,
// the store's dead ranks and the timeout, so a rank that never arrives is
// named instead of hanging the creation (an older NCCL's blocking
// ncclCommInitRank is entered only once every member has said it is
// about to). Operations run FIFO on one stream: buffers in device memory
// are used as they are, host buffers (the CPU backend's) are staged
// through device scratch and pinned host memory with copies queued on the
// stream; the results are read only after the polling says the stream has
// run them. A step's sends and receives (sendRecvGroup) are one
// ncclGroupStart/End. orderedCollective orders a collective against a
// caller's stream of the same GPU on the device: the stream waits for the
// caller's event before the call (cuStreamWaitEvent) and records the
// caller's other event after it; the worker then moves on and polls that
// event (cuEventQuery) between tasks, with the same checks, to complete
// the operation. Any failure aborts the NCCL communicators
// (ncclCommAbort) and breaks this one, naming the rank.
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
