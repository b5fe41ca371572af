//===- Distributed.cpp - loom-run as one rank of a job --------------------===//

#include "tools/loom-run/Distributed.h"

#include <cstdlib>
#include <vector>

namespace loom::tools {

/// The world size a launcher set (WORLD_SIZE, or mpirun's), else 1.
/// SLURM_NTASKS counts only with a mesh: an allocation's other tasks may
/// run other programs.
static long launcherWorldSize() {
  for (const char *v : {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"})
    if (const char *s = std::getenv(v); s && *s)
      return std::strtol(s, nullptr, 10);
  return 1;
}

bool joinJob(loom_session *session, bool training, Distributed &dist,
             std::string &error) {
  constexpr size_t kMaxAxes = 8;
  int64_t shape[kMaxAxes];
  const char *axes[kMaxAxes];
  size_t n = loom_session_mesh(session, kMaxAxes, shape, axes, nullptr);
  int64_t ranks = 1;
  for (size_t i = 0; i < n && i < kMaxAxes; ++i) {
    ranks *= shape[i];
    dist.mesh +=
        (i ? ", " : "") + std::string(axes[i]) + "=" + std::to_string(shape[i]);
  }
  long world = launcherWorldSize();
  if (ranks <= 1 && world <= 1)
    return true;
  if (ranks <= 1) {
    if (!training)
      return true; // inference: every rank runs the whole model alone
    error = "this training artifact runs in one process (it has no mesh), "
            "but the launcher started " +
            std::to_string(world) +
            " ranks: each would train alone; compile it with loomc train "
            "--data-parallel " +
            std::to_string(world);
    return false;
  }
  std::string how = "start it under loom-launch --nproc " +
                    std::to_string(ranks) + " (or torchrun, mpirun, srun)";
  if (world != ranks && std::getenv("WORLD_SIZE")) {
    error = "this artifact runs on a mesh of " + std::to_string(ranks) +
            " ranks (" + dist.mesh + "), the launcher started " +
            std::to_string(world) + "; " + how;
    return false;
  }
  if (loom_status s = loom_communicator_create_from_env(nullptr, &dist.comm)) {
    error = loom_status_message(s);
    loom_status_free(s);
    return false;
  }
  dist.rank = loom_communicator_rank(dist.comm);
  dist.size = loom_communicator_size(dist.comm);
  if (dist.size != ranks) {
    error = "this artifact runs on a mesh of " + std::to_string(ranks) +
            " ranks (" + dist.mesh + "), this job has " +
            std::to_string(dist.size) + "; " + how;
    return false;
  }
  if (loom_status s = loom_session_attach_communicator(session, dist.comm)) {
    error = loom_status_message(s);
    loom_status_free(s);
    return false;
  }
  // Row-major coordinates: the data coordinate of this rank.
  int64_t rest = dist.rank;
  for (size_t i = n; i-- > 0;) {
    if (std::string(axes[i]) == "data") {
      dist.dataRanks = shape[i];
      dist.dataIndex = rest % shape[i];
    }
    rest /= shape[i];
  }
  return true;
}

} // namespace loom::tools
