//===- PipelineArtifact.h - a pipeline artifact's session -------*- C++ -*-===//
//
// The executor of a pipeline artifact's session (docs/pipeline.md): it
// has no code of its own and runs nothing. It holds the description that
// the session's trainer (PipelineTrainer, pipeline/Executor.h) reads to
// load the stages' and updates' artifacts, each a session of its own.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_PIPELINE_PIPELINEARTIFACT_H
#define LOOM_RUNTIME_PIPELINE_PIPELINEARTIFACT_H

#include "loom/common/Artifact.h"
#include "runtime/src/Executor.h"

#include <memory>
#include <string>

namespace loom::runtime {

class PipelineArtifact final : public Executor {
public:
  /// Takes `pipeline` (swapped out of the artifact).
  explicit PipelineArtifact(artifact::Pipeline &pipeline);

  loom_device device() const override { return LOOM_DEVICE_CPU; }
  /// "pipeline of 4 rank(s)".
  const std::string &description() const override { return description_; }
  /// Refuses: a pipeline artifact runs through a trainer (loom_session_run
  /// says so before it gets here).
  loom_status run(const RunRequest &request) override;
  const artifact::Pipeline *pipeline() const override { return &pipeline_; }

private:
  artifact::Pipeline pipeline_;
  std::string description_;
};

} // namespace loom::runtime

#endif // LOOM_RUNTIME_PIPELINE_PIPELINEARTIFACT_H
