//===- Memory.h - loom-run --print-memory ----------------------*- C++ -*-===//
//
// What a run holds, by role, from the runtime's own accounting
// (loom_session_memory_stats, loom_trainer_memory_stats) beside what the
// kernel measured for the process (VmRSS, VmHWM), so a user sees where
// the memory goes and how much of the peak the accounting explains.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOMRUN_MEMORY_H
#define LOOM_TOOLS_LOOMRUN_MEMORY_H

#include "loom/runtime.h"

#include <cstddef>
#include <string>

namespace loom::tools {

/// Prints one `memory:` line per role and the totals to stdout: the
/// session's weights and scratch (planned activations and gradients), the
/// trainer's state by role and its next values during a step (`trainer`
/// may be null: inference), `dataBytes` of input or batch tensors, then
/// the process's resident set now and at its peak. An empty string, or
/// the runtime's message on failure.
std::string printMemory(const loom_session *session,
                        const loom_trainer *trainer, size_t dataBytes);

} // namespace loom::tools

#endif // LOOM_TOOLS_LOOMRUN_MEMORY_H
