//===- CommProbe.cpp - a rank that only talks through its communicator ---===//
//
// loom-comm-probe [--steps N] [--floats F] [--die-rank R --die-at K]
//
// Joins the job of its environment (loom_communicator_create_from_env)
// and runs N barriers, or with --floats N all-reduces of F floats; rank R
// kills itself (SIGKILL, as a crash would) at step K. Prints what each rank
// saw: "rank r: N barriers" or the failure, and exits 1 on failure. The
// process-level tests of failures (test/launch/dead-rank.test) and the
// launcher's use it.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime.h"
#include "runtime/src/collectives/CommunicatorApi.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  long steps = 10, dieRank = -1, dieAt = 0, floats = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    long v = std::strtol(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--steps"))
      steps = v;
    else if (!std::strcmp(argv[i], "--die-rank"))
      dieRank = v;
    else if (!std::strcmp(argv[i], "--die-at"))
      dieAt = v;
    else if (!std::strcmp(argv[i], "--floats"))
      floats = v;
  }
  loom_communicator *comm = nullptr;
  if (loom_status s = loom_communicator_create_from_env(nullptr, &comm)) {
    std::fprintf(stderr, "error: %s\n", loom_status_message(s));
    loom_status_free(s);
    return 1;
  }
  int rank = loom_communicator_rank(comm);
  std::vector<float> data(static_cast<size_t>(floats), 1.0f);
  for (long k = 0; k < steps; ++k) {
    if (rank == dieRank && k == dieAt)
      kill(getpid(), SIGKILL);
    std::string error;
    if (floats) {
      // The communicator behind the C handle (the C API has no all-reduce).
      error =
          comm->comm
              ->allReduce(data.data(), data.data(), data.size(), LOOM_DTYPE_F32,
                          loom::runtime::collectives::ReduceOp::Max)
              ->wait();
    } else if (loom_status s = loom_communicator_barrier(comm)) {
      error = loom_status_message(s);
      loom_status_free(s);
    }
    if (!error.empty()) {
      std::fprintf(stderr, "rank %d: error: %s\n", rank, error.c_str());
      loom_communicator_release(comm);
      return 1;
    }
  }
  std::printf("rank %d: %ld %s\n", rank, steps,
              floats ? "all-reduces" : "barriers");
  loom_communicator_release(comm);
  return 0;
}
