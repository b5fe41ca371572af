//===- GlooCommunicator.h - collectives between CPU processes ---*- C++ -*-===//
//
// The Gloo backend of Communicator: TCP pairs between every two members of
// a group, met through the store rank 0 serves (TcpStore.h). One context
// per group over a PrefixStore, made on the worker when an operation first
// names the group. Gloo's headers stay out of this one (they need
// exceptions; the runtime is built without).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_COLLECTIVES_GLOOCOMMUNICATOR_H
#define LOOM_RUNTIME_COLLECTIVES_GLOOCOMMUNICATOR_H

#include "runtime/src/collectives/Communicator.h"

#include <memory>
#include <string>

namespace loom::runtime::collectives {

struct GlooOptions {
  /// How long the rendezvous and each operation may wait for the others.
  std::chrono::milliseconds timeout = kDefaultTimeout;
  /// The address this rank's pairs listen on; empty: the local address of
  /// the connection to the store (the interface that reaches rank 0).
  std::string hostname;
};

/// Joins the job of `size` ranks as `rank`: rank 0 serves the rendezvous
/// on `port` of every interface, every rank meets it at `addr`:`port`.
/// Returns when every rank has arrived, or null with `error` naming the
/// ranks that did not arrive within the timeout (or what else failed).
std::unique_ptr<Communicator>
createGlooCommunicator(int rank, int size, const std::string &addr, int port,
                       const GlooOptions &options, std::string &error);

/// Tests: makes `comm` vanish as a killed process would (its connections
/// close with no goodbye); it fails every later call.
void dropGlooCommunicatorForTesting(Communicator &comm);

} // namespace loom::runtime::collectives

#endif // LOOM_RUNTIME_COLLECTIVES_GLOOCOMMUNICATOR_H
