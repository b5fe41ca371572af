//===- ArenaPlanner.cpp - offsets in one arena from live ranges -----------===//

#include "passes/MemoryPlan/ArenaPlanner.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace loom::memplan {

ArenaPlan planArena(const std::vector<LiveBuffer> &buffers) {
  ArenaPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return buffers[a].bytes > buffers[b].bytes;
  });
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> taken;
  for (size_t i : order) {
    const LiveBuffer &b = buffers[i];
    taken.clear();
    for (size_t p : placed)
      if (buffers[p].first <= b.last && b.first <= buffers[p].last)
        taken.push_back({plan.offsets[p], plan.offsets[p] + buffers[p].bytes});
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (auto [begin, end] : taken) {
      if (offset + b.bytes <= begin)
        break;
      offset = std::max(offset, end);
    }
    plan.offsets[i] = offset;
    plan.peak = std::max(plan.peak, offset + b.bytes);
    plan.unshared += b.bytes;
    placed.push_back(i);
  }
  return plan;
}

} // namespace loom::memplan
