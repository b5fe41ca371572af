//===- Memory.cpp - loom-run --print-memory ------------------------------===//

#include "tools/loom-run/Memory.h"

#include "tools/loom-run/Tensors.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace loom::tools {

namespace {

/// A line of /proc/self/status ("VmHWM:  1234 kB") in bytes; 0 when the
/// kernel has none.
size_t procStatusBytes(const char *key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  size_t n = std::strlen(key);
  while (std::getline(in, line))
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':')
      return std::stoull(line.substr(n + 1)) * 1024;
  return 0;
}

void row(const char *what, size_t bytes, const char *note = "") {
  std::printf("memory: %-34s %10.1f MiB%s%s\n", what,
              static_cast<double>(bytes) / (1 << 20), *note ? "  " : "", note);
}

} // namespace

std::string printMemory(const loom_session *session,
                        const loom_trainer *trainer, size_t dataBytes) {
  loom_session_memory sm;
  if (loom_status s = loom_session_memory_stats(session, &sm))
    return takeMessage(s);
  size_t total = sm.weight_bytes + sm.scratch_bytes + dataBytes;
  row("weights", sm.weight_bytes, "mapped from the artifact, shared");
  if (trainer) {
    loom_trainer_memory tm;
    if (loom_status s = loom_trainer_memory_stats(trainer, &tm))
      return takeMessage(s);
    size_t state =
        tm.parameter_bytes + tm.optimizer_state_bytes + tm.accumulator_bytes;
    row("parameters", tm.parameter_bytes);
    row("optimizer state", tm.optimizer_state_bytes);
    if (tm.accumulator_bytes)
      row("gradient accumulators", tm.accumulator_bytes);
    total += state;
    if (loom_trainer_updates_state_in_place(trainer)) {
      row("next state during a step", 0, "updated in place");
    } else {
      row("next state during a step", state, "the step's new state tensors");
      total += state;
    }
  }
  char contexts[64];
  std::snprintf(contexts, sizeof(contexts), "%zu run context(s)",
                sm.run_contexts);
  row(trainer ? "activations and gradients (arena)" : "activations (arena)",
      sm.scratch_bytes, contexts);
  row(trainer ? "batch" : "inputs and outputs", dataBytes);
  row("accounted", total);
  row("resident now (VmRSS)", procStatusBytes("VmRSS"));
  row("resident at peak (VmHWM)", procStatusBytes("VmHWM"));
  return "";
}

} // namespace loom::tools
