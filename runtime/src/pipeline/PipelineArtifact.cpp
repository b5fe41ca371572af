//===- PipelineArtifact.cpp - a pipeline artifact's session ---------------===//

#include "runtime/src/pipeline/PipelineArtifact.h"

#include "runtime/src/Session.h"

namespace loom::runtime {

PipelineArtifact::PipelineArtifact(artifact::Pipeline &pipeline) {
  pipeline_.Swap(&pipeline);
  description_ =
      "pipeline of " + std::to_string(pipeline_.ranks()) + " rank(s)";
}

loom_status PipelineArtifact::run(const RunRequest &) {
  return makeStatus(LOOM_INVALID_ARGUMENT,
                    "a pipeline artifact runs through a trainer "
                    "(loom_trainer_*), not loom_session_run");
}

} // namespace loom::runtime
