//===- PipelineScheduleTest.cpp - schedules, verifier, bubbles ------------===//
//
// Every schedule is valid for S = 1 to 4 ranks and any micro-batch count
// (m < S included); the simulated bubble of GPipe and 1F1B is the analytic
// (S-1)/(m+S-1), interleaving and ZB-H1 have smaller ones; the verifier
// rejects planted defects with the rank and step named.
//
//===----------------------------------------------------------------------===//

#include "loom/common/Schedule.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace loom::pipeline;

namespace {

Schedule make(const std::string &name, int S, int m, int v = 1) {
  std::string error;
  Schedule s = makeSchedule(name, S, m, v, error);
  EXPECT_EQ(error, "") << name;
  return s;
}

bool ok(const Schedule &s, std::string &error, VerifyResult *out = nullptr,
        VerifyOptions options = {}) {
  VerifyResult r;
  bool good = verify(s, options, r, error);
  if (out)
    *out = r;
  return good;
}

/// The step of `rank`'s program where `pred` holds first.
template <typename Pred> size_t stepOf(const Schedule &s, int rank, Pred pred) {
  const auto &p = s.programs[static_cast<size_t>(rank)];
  return static_cast<size_t>(std::find_if(p.begin(), p.end(), pred) -
                             p.begin());
}

} // namespace

TEST(PipelineSchedule, EveryScheduleIsValidForAnyCounts) {
  for (const std::string &name : scheduleNames())
    for (int S = 1; S <= 4; ++S)
      for (int m : {1, 2, 3, 4, 5, 8}) {
        int v = name == "interleaved" ? 2 : 1;
        Schedule s = make(name, S, m, v);
        std::string error;
        VerifyResult r;
        EXPECT_TRUE(ok(s, error, &r))
            << name << " S=" << S << " m=" << m << ": " << error;
        // 1F1B's memory: rank r holds at most S - r micro-batches; ZB-H1
        // at most 1F1B's peak, S, on every rank.
        for (int q = 0; q < S; ++q) {
          int cap = name == "1f1b" ? S - q : name == "zb-h1" ? S : m * v;
          EXPECT_LE(r.peakLive[static_cast<size_t>(q)], std::min(cap, m * v))
              << name << " S=" << S << " m=" << m << " rank " << q;
        }
        if (name == "gpipe")
          EXPECT_EQ(r.peakLive[0], m);
      }
}

TEST(PipelineSchedule, OneFOneBOrder) {
  // Rank 0 of 4 with 8 micro-batches: 3 warm-up forwards, then one
  // forward and one backward alternately.
  Schedule s = make("1f1b", 4, 8);
  std::string order;
  for (const Action &a : s.programs[0])
    if (a.isCompute())
      order += a.str().substr(0, a.str().find('@')) + " ";
  EXPECT_EQ(order, "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7 ");
}

TEST(PipelineSchedule, BubblesAgainstTheAnalyticModel) {
  for (int S : {2, 4})
    for (int m : {1, 2, 4, 8}) {
      Costs unit; // F = I = W = 1
      for (const char *name : {"gpipe", "1f1b"}) {
        Timeline t = simulate(make(name, S, m), unit);
        EXPECT_NEAR(t.bubble, analyticBubble(name, S, m, 1), 1e-9)
            << name << " S=" << S << " m=" << m;
      }
      double oneF = simulate(make("1f1b", S, m), unit).bubble;
      double zb = simulate(make("zb-h1", S, m), unit).bubble;
      double inter = simulate(make("interleaved", S, m, 2), unit).bubble;
      EXPECT_LT(zb, oneF) << "S=" << S << " m=" << m;
      EXPECT_GE(zb, analyticBubble("zb-h1", S, m, 1) - 1e-9);
      if (m % S == 0) // Megatron's analysis assumes full groups
        EXPECT_NEAR(inter, analyticBubble("interleaved", S, m, 2), 1e-9)
            << "S=" << S << " m=" << m;
      // With one micro-batch nothing overlaps: every schedule is a chain.
      if (m > 1)
        EXPECT_LT(inter, oneF) << "S=" << S << " m=" << m;
    }
}

TEST(PipelineSchedule, RejectsAMissingReceive) {
  Schedule s = make("1f1b", 2, 2);
  auto &p = s.programs[1];
  p.erase(p.begin() + static_cast<long>(stepOf(s, 1, [](const Action &a) {
            return a.type == Action::Type::RecvActivation;
          })));
  std::string error;
  EXPECT_FALSE(ok(s, error));
  EXPECT_NE(error.find("rank 0 step 1 (send activation 0@0 -> rank 1) has no "
                       "matching receive on rank 1"),
            std::string::npos)
      << error;
}

TEST(PipelineSchedule, RejectsACyclicWait) {
  // Rank 0 waits for a gradient before it sends the activation that rank
  // 1 needs to compute that gradient.
  Schedule s = make("gpipe", 2, 1);
  auto &p0 = s.programs[0];
  size_t send = stepOf(s, 0, [](const Action &a) {
    return a.type == Action::Type::SendActivation;
  });
  Action sendAct = p0[send];
  p0.erase(p0.begin() + static_cast<long>(send));
  size_t recv = stepOf(s, 0, [](const Action &a) {
    return a.type == Action::Type::RecvGradient;
  });
  p0.insert(p0.begin() + static_cast<long>(recv) + 1, sendAct);
  std::string error;
  EXPECT_FALSE(ok(s, error));
  EXPECT_NE(error.find("deadlock: rank 0 step 1 (recv gradient 0@0 <- rank 1) "
                       "waits for rank 1, rank 1 step 0 (recv activation 0@1 "
                       "<- rank 0) waits for rank 0"),
            std::string::npos)
      << error;
}

TEST(PipelineSchedule, RejectsComputingBeforeTheInput) {
  Schedule s = make("1f1b", 2, 2);
  auto &p = s.programs[1];
  // The forward before its receive.
  size_t recv = stepOf(s, 1, [](const Action &a) {
    return a.type == Action::Type::RecvActivation;
  });
  std::swap(p[recv], p[recv + 1]);
  std::string error;
  EXPECT_FALSE(ok(s, error));
  EXPECT_NE(error.find("rank 1 step 0 (F0@1): runs before the activation of "
                       "stage 0"),
            std::string::npos)
      << error;
}

TEST(PipelineSchedule, MemoryBudget) {
  Schedule gpipe = make("gpipe", 2, 4), oneF = make("1f1b", 2, 4);
  VerifyOptions options;
  options.activationBytes = {1000, 1000};
  options.memoryBudget = 2500;
  std::string error;
  EXPECT_TRUE(ok(oneF, error, nullptr, options)) << error;
  EXPECT_FALSE(ok(gpipe, error, nullptr, options));
  EXPECT_NE(error.find("rank 0 holds 3000 bytes of activations (3 "
                       "micro-batches), over the memory budget of 2500"),
            std::string::npos)
      << error;
}

TEST(PipelineSchedule, BadRequests) {
  std::string error;
  makeSchedule("pipedream", 2, 4, 1, error);
  EXPECT_NE(error.find("unknown pipeline schedule 'pipedream'"),
            std::string::npos);
  makeSchedule("1f1b", 2, 0, 1, error);
  EXPECT_NE(error.find("1 to 4096"), std::string::npos);
  makeSchedule("1f1b", 2, 4, 2, error);
  EXPECT_NE(error.find("only the interleaved schedule"), std::string::npos);
}

TEST(PipelineSchedule, DrawsATimeline) {
  Schedule s = make("1f1b", 2, 2);
  std::string text = drawTimeline(s, simulate(s, Costs{}));
  // Rank 0 waits for the gradients; rank 1 is done while rank 0 does B1.
  EXPECT_EQ(text, "rank 0 |F0 F1 .  .  B0 B0 .  B1 B1\n"
                  "rank 1 |.  F0 B0 B0 F1 B1 B1 .  .\n");
}
