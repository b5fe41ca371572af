//===- Distributed.h - loom-run as one rank of a job ------------*- C++ -*-===//
//
// When the artifact runs on a mesh of more than one rank (loomc train
// --data-parallel N), or the launcher says WORLD_SIZE > 1, loom-run joins
// the job the environment describes (loom-launch, torchrun, mpirun, srun),
// attaches the communicator to the session, and takes its part of each
// global batch: the rows of its "data" coordinate.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOMRUN_DISTRIBUTED_H
#define LOOM_TOOLS_LOOMRUN_DISTRIBUTED_H

#include "loom/runtime.h"

#include <cstdint>
#include <string>

namespace loom::tools {

struct Distributed {
  /// Null for a single process.
  loom_communicator *comm = nullptr;
  int rank = 0, size = 1;
  /// Ranks along the mesh's "data" axis, and this rank's coordinate on it.
  int64_t dataRanks = 1, dataIndex = 0;
  /// "data=2, tensor=2"; "" without a mesh.
  std::string mesh;
};

/// Joins the job when `session`'s artifact needs it; for a training
/// artifact without a mesh under WORLD_SIZE > 1, an error (each rank would
/// train alone). false with `error` on failure.
bool joinJob(loom_session *session, bool training, Distributed &dist,
             std::string &error);

} // namespace loom::tools

#endif // LOOM_TOOLS_LOOMRUN_DISTRIBUTED_H
