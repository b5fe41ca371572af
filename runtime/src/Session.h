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

namespace loom::runtime {

/// A new status (null when out of memory, which reads as success: callers
/// treat it as such only in that case).
loom_status makeStatus(loom_status_code code, std::string message);

/// The session's training description; null for an inference artifact.
const artifact::Training *sessionTraining(const loom_session *session);

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

/// The instance the session was made with (its parts load with it).
loom_instance *sessionInstance(const loom_session *session);

} // namespace loom::runtime

#endif // LOOM_RUNTIME_SESSION_H
