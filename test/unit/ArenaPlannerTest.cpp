//===- ArenaPlannerTest.cpp - the shared arena planner --------------------===//

#include "passes/MemoryPlan/ArenaPlanner.h"

#include <gtest/gtest.h>

using loom::memplan::ArenaPlan;
using loom::memplan::LiveBuffer;
using loom::memplan::planArena;

TEST(ArenaPlanner, DisjointRangesShareBytes) {
  ArenaPlan plan = planArena({{0, 1, 64}, {2, 3, 64}, {4, 5, 128}});
  EXPECT_EQ(plan.peak, 128);
  EXPECT_EQ(plan.unshared, 256);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0, 0}));
}

TEST(ArenaPlanner, OverlappingRangesDoNot) {
  // Largest first: the 128-byte buffer at 0, then the others above it.
  ArenaPlan plan = planArena({{0, 2, 64}, {1, 3, 128}, {2, 4, 64}});
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{128, 0, 192}));
  EXPECT_EQ(plan.peak, 256);
}

TEST(ArenaPlanner, FirstFitReusesAGap) {
  // b and c overlap a; b ends before c starts, so c takes b's place.
  ArenaPlan plan = planArena({{0, 10, 256}, {1, 2, 64}, {3, 4, 64}});
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 256, 256}));
  EXPECT_EQ(plan.peak, 320);
}

TEST(ArenaPlanner, Empty) {
  ArenaPlan plan = planArena({});
  EXPECT_EQ(plan.peak, 0);
  EXPECT_TRUE(plan.offsets.empty());
}
