//===- Session.h - what the trainer needs of the runtime's core -*- C++ -*-===//
//
// The C API's status and session are defined in Runtime.cpp; the trainer
// (Trainer.cpp) builds on loom_session_run and reads the artifact's
// training description through these.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_SESSION_H
#define LOOM_RUNTIME_SESSION_H

#include "loom/common/Artifact.h"
#include "loom/runtime.h"

#include <string>
#include <string_view>

namespace loom::runtime {

class Executor;
struct DeviceState;

/// A new status; never null: when the status itself cannot be allocated,
/// outOfMemoryStatus().
loom_status makeStatus(loom_status_code code, std::string message);

/// The preallocated LOOM_OUT_OF_MEMORY status, which loom_status_free
/// leaves alone: what a call returns when nothing can be allocated.
loom_status outOfMemoryStatus();

/// `status` with `prefix` put before its message (the preallocated
/// out-of-memory status is returned unchanged); null stays null.
loom_status prefixStatus(loom_status status, const std::string &prefix);

/// The session's training description; null for an inference artifact.
const artifact::Training *sessionTraining(const loom_session *session);

/// The artifact's data section (where its segments' bytes are: initial
/// values, weights), alive as long as the session.
const artifact::DataSection &sessionData(const loom_session *session);

/// Tells the session that `bytes` of its data section (an initial value
/// the trainer copied) are not needed again soon: a mapped file's pages
/// are dropped from this process's memory (they read back from the file
/// if touched).
void sessionReleaseData(const loom_session *session, std::string_view bytes);

/// The limits of the session's instance on the files it loads.
const artifact::Limits &sessionLimits(const loom_session *session);

/// The artifact's model name.
const std::string &sessionModelName(const loom_session *session);

/// The communicator attached to the session (loom_session_attach_
/// communicator), or null.
loom_communicator *sessionCommunicator(const loom_session *session);

/// The session's pipeline description; null unless it is a pipeline
/// artifact (which has no code: loom_session_run refuses it).
const artifact::Pipeline *sessionPipeline(const loom_session *session);

/// What runs the session's code.
Executor &sessionExecutor(loom_session *session);

/// loom_session_run (or, with `profile`, loom_session_run_profiled) with
/// training state kept on the device (`state`, claimed by the caller):
/// the outputs paired in `state` are left null.
loom_status sessionRunWithState(loom_session *session,
                                const loom_tensor *const *inputs,
                                size_t num_inputs, loom_tensor **outputs,
                                size_t num_outputs, loom_profile *profile,
                                const DeviceState &state);

/// The instance the session was made with (its parts load with it).
loom_instance *sessionInstance(const loom_session *session);

} // namespace loom::runtime

#endif // LOOM_RUNTIME_SESSION_H
