//===- ArenaPlanner.h - offsets in one arena from live ranges ---*- C++ -*-===//
//
// The allocation core of the memory plan, shared by the CPU backend's
// `--loom-cpu-memory-plan` (compiler/codegen/cpu/MemoryPlan.cpp) and the
// graph-level `--loom-recompute`, so that the peak a pass plans for is the
// peak the code gets. No MLIR: intervals and sizes in, offsets and the peak
// out.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_MEMORYPLAN_ARENAPLANNER_H
#define LOOM_PASSES_MEMORYPLAN_ARENAPLANNER_H

#include <cstdint>
#include <vector>

namespace loom::memplan {

/// A buffer to place: live from position `first` to `last` (inclusive,
/// positions in program order), `bytes` long (already aligned).
struct LiveBuffer {
  int64_t first = 0, last = 0;
  int64_t bytes = 0;
};

struct ArenaPlan {
  /// The offset of each buffer, in the order given.
  std::vector<int64_t> offsets;
  /// The arena's size: the planned peak.
  int64_t peak = 0;
  /// The sum of all sizes (the peak without reuse).
  int64_t unshared = 0;
};

/// Offsets in one arena: largest buffer first (stable for equal sizes),
/// each at the lowest offset where it overlaps no placed buffer whose live
/// range meets its own. Two buffers share bytes only when their live ranges
/// are disjoint.
ArenaPlan planArena(const std::vector<LiveBuffer> &buffers);

/// `n` rounded up to a multiple of `alignment` (> 0).
inline int64_t alignUp(int64_t n, int64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

} // namespace loom::memplan

#endif // LOOM_PASSES_MEMORYPLAN_ARENAPLANNER_H
