//===- CommProbe.cpp - a rank that only talks through its communicator ---===//
//
// loom-comm-probe [--steps N] [--die-rank R --die-at K]
//
// Joins the job of its environment (loom_communicator_create_from_env)
// and runs N barriers; rank R kills itself (SIGKILL, as a crash would) at
// barrier K. Prints what each rank saw: "rank r: N barriers" or the
// failure, and exits 1 on failure. The process-level tests of failures
// (test/launch/dead-rank.test) and the launcher's use it.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char **argv) {
  long steps = 10, dieRank = -1, dieAt = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    long v = std::strtol(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--steps"))
      steps = v;
    else if (!std::strcmp(argv[i], "--die-rank"))
      dieRank = v;
    else if (!std::strcmp(argv[i], "--die-at"))
      dieAt = v;
  }
  loom_communicator *comm = nullptr;
  if (loom_status s = loom_communicator_create_from_env(nullptr, &comm)) {
    std::fprintf(stderr, "error: %s\n", loom_status_message(s));
    loom_status_free(s);
    return 1;
  }
  int rank = loom_communicator_rank(comm);
  for (long k = 0; k < steps; ++k) {
    if (rank == dieRank && k == dieAt)
      kill(getpid(), SIGKILL);
    if (loom_status s = loom_communicator_barrier(comm)) {
      std::fprintf(stderr, "rank %d: error: %s\n", rank,
                   loom_status_message(s));
      loom_status_free(s);
      loom_communicator_release(comm);
      return 1;
    }
  }
  std::printf("rank %d: %ld barriers\n", rank, steps);
  loom_communicator_release(comm);
  return 0;
}
