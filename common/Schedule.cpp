//===- Schedule.cpp - pipeline schedules as data, and their verifier ------===//
//
// GPipe, 1F1B and interleaved 1F1B are fixed orders per rank (a warm-up of
// forwards, then alternately one forward and one backward, then the rest
// of the backwards; Megatron's order of micro-batches and chunks, with a
// last group smaller than S when S does not divide m). ZB-H1 comes from a
// list scheduler: the ranks run in simulated time with unit costs, and
// each, when free, picks among its computations whose inputs are there:
// an input gradient (I) first, then a forward while fewer than S
// micro-batches hold activations (1F1B's peak), then a weight gradient (W),
// which so fills the bubbles. verify() checks every result as it checks any
// schedule given to it.
//
//===----------------------------------------------------------------------===//

#include "loom/common/Schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace loom::pipeline {

namespace {

using Type = Action::Type;

/// A computation: (type, micro-batch, stage).
using Key = std::tuple<int, int, int>;
Key keyOf(Type t, int mb, int stage) {
  return {static_cast<int>(t), mb, stage};
}

const char *letter(Type t) {
  switch (t) {
  case Type::Forward:
    return "F";
  case Type::Backward:
    return "B";
  case Type::BackwardInput:
    return "I";
  case Type::BackwardWeight:
    return "W";
  default:
    return "?";
  }
}

bool isBackwardOfInput(Type t) {
  return t == Type::Backward || t == Type::BackwardInput;
}

} // namespace

std::string Action::str() const {
  std::string at = std::to_string(microBatch) + "@" + std::to_string(stage);
  switch (type) {
  case Type::SendActivation:
    return "send activation " + at + " -> rank " + std::to_string(peer);
  case Type::RecvActivation:
    return "recv activation " + at + " <- rank " + std::to_string(peer);
  case Type::SendGradient:
    return "send gradient " + at + " -> rank " + std::to_string(peer);
  case Type::RecvGradient:
    return "recv gradient " + at + " <- rank " + std::to_string(peer);
  default:
    return letter(type) + at;
  }
}

bool Schedule::splitBackward() const {
  for (const auto &p : programs)
    for (const Action &a : p)
      if (a.type == Type::BackwardInput || a.type == Type::BackwardWeight)
        return true;
  return false;
}

const std::vector<std::string> &scheduleNames() {
  static const std::vector<std::string> names = {"gpipe", "1f1b", "interleaved",
                                                 "zb-h1"};
  return names;
}

//===----------------------------------------------------------------------===//
// Making schedules
//===----------------------------------------------------------------------===//

namespace {

struct Op {
  Type type;
  int mb, stage, chunk;
  bool done = false;
  double end = 0;
};

/// The list scheduler (file comment).
class Maker {
public:
  Maker(const std::string &name, int ranks, int m, int v)
      : name(name), S(ranks), m(m), v(v), split(name == "zb-h1") {}

  /// GPipe, 1F1B and interleaved 1F1B: each rank's order is fixed (a
  /// warm-up of forwards, then one forward and one backward alternately,
  /// then the remaining backwards), in Megatron's order of (micro-batch,
  /// chunk): groups of S micro-batches, the forwards chunk by chunk, the
  /// backwards back through the chunks.
  Schedule fixedOrder() {
    int stages = S * v;
    for (int st = 0; st < stages; ++st)
      for (int mb = 0; mb < m; ++mb) {
        add({Type::Forward, mb, st, st / S});
        add({Type::Backward, mb, st, st / S});
      }
    std::vector<std::vector<int>> order(static_cast<size_t>(S));
    for (int r = 0; r < S; ++r) {
      std::vector<int> fwd, bwd;
      for (int g = 0; g * S < m; ++g) {
        int end = std::min(m, (g + 1) * S);
        for (int c = 0; c < v; ++c)
          for (int mb = g * S; mb < end; ++mb)
            fwd.push_back(static_cast<int>(
                index.at(keyOf(Type::Forward, mb, c * S + r))));
        for (int c = v - 1; c >= 0; --c)
          for (int mb = g * S; mb < end; ++mb)
            bwd.push_back(static_cast<int>(
                index.at(keyOf(Type::Backward, mb, c * S + r))));
      }
      int total = m * v;
      int warmup = name == "gpipe" ? total
                   : name == "interleaved"
                       ? std::min(total, (S - r - 1) * 2 + (v - 1) * S)
                       : std::min(total, S - r - 1);
      auto &o = order[static_cast<size_t>(r)];
      o.assign(fwd.begin(), fwd.begin() + warmup);
      for (int k = 0; warmup + k < total; ++k) {
        o.push_back(fwd[static_cast<size_t>(warmup + k)]);
        o.push_back(bwd[static_cast<size_t>(k)]);
      }
      for (int k = std::max(0, total - warmup); k < total; ++k)
        o.push_back(bwd[static_cast<size_t>(k)]);
    }
    return assemble(order);
  }

  Schedule run() {
    if (!split)
      return fixedOrder();
    // ZB-H1: the list scheduler over F, I and W.
    int stages = S * v;
    for (int s = 0; s < stages; ++s)
      for (int mb = 0; mb < m; ++mb) {
        add({Type::Forward, mb, s, s / S});
        add({Type::BackwardInput, mb, s, s / S});
        add({Type::BackwardWeight, mb, s, s / S});
      }
    std::vector<double> free(static_cast<size_t>(S), 0.0);
    std::vector<int> left(static_cast<size_t>(S), 0);
    std::vector<std::vector<int>> order(static_cast<size_t>(S));
    for (const Op &o : ops)
      ++left[static_cast<size_t>(o.stage % S)];
    inFlight.assign(static_cast<size_t>(S), 0);
    while (true) {
      // The free rank that is earliest in time.
      int r = -1;
      for (int i = 0; i < S; ++i)
        if (left[static_cast<size_t>(i)] &&
            (r < 0 ||
             free[static_cast<size_t>(i)] < free[static_cast<size_t>(r)]))
          r = i;
      if (r < 0)
        break;
      double now = free[static_cast<size_t>(r)];
      int best = -1;
      double nextReady = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < ops.size(); ++i) {
        const Op &o = ops[i];
        if (o.done || o.stage % S != r || !allowed(o, r))
          continue;
        double ready = 0;
        if (!inputsDone(o, ready))
          continue;
        if (ready > now) {
          nextReady = std::min(nextReady, ready);
          continue;
        }
        if (best < 0 || prefer(o, ops[static_cast<size_t>(best)], r))
          best = static_cast<int>(i);
      }
      if (best < 0) {
        // Wait for an input, or for another rank to move.
        double other = std::numeric_limits<double>::infinity();
        for (int i = 0; i < S; ++i)
          if (i != r && free[static_cast<size_t>(i)] > now)
            other = std::min(other, free[static_cast<size_t>(i)]);
        free[static_cast<size_t>(r)] = std::min(nextReady, other);
        if (std::isinf(free[static_cast<size_t>(r)]))
          free[static_cast<size_t>(r)] = now + 1; // another rank is at `now`
        continue;
      }
      Op &o = ops[static_cast<size_t>(best)];
      o.done = true;
      o.end = now + 1.0;
      free[static_cast<size_t>(r)] = o.end;
      --left[static_cast<size_t>(r)];
      order[static_cast<size_t>(r)].push_back(best);
      if (o.type == Type::Forward)
        ++inFlight[static_cast<size_t>(r)];
      if (o.type == Type::BackwardWeight)
        --inFlight[static_cast<size_t>(r)];
    }
    return assemble(order);
  }

private:
  void add(Op o) {
    index[keyOf(o.type, o.mb, o.stage)] = ops.size();
    ops.push_back(o);
  }
  const Op *find(Type t, int mb, int stage) const {
    auto it = index.find(keyOf(t, mb, stage));
    return it == index.end() ? nullptr : &ops[it->second];
  }

  /// Whether every input of `o` has been computed; `ready` is when the
  /// last is.
  bool inputsDone(const Op &o, double &ready) const {
    auto need = [&](const Op *dep) {
      if (!dep || !dep->done)
        return false;
      ready = std::max(ready, dep->end);
      return true;
    };
    int last = S * v - 1;
    switch (o.type) {
    case Type::Forward:
      return o.stage == 0 || need(find(Type::Forward, o.mb, o.stage - 1));
    case Type::BackwardInput:
      return need(find(Type::Forward, o.mb, o.stage)) &&
             (o.stage == last ||
              need(find(Type::BackwardInput, o.mb, o.stage + 1)));
    case Type::BackwardWeight:
      return need(find(Type::BackwardInput, o.mb, o.stage));
    default:
      return false;
    }
  }

  /// ZB-H1: an input gradient first (the previous stage waits for it),
  /// then a forward while fewer than S micro-batches hold activations on
  /// the rank (they are freed by W: 1F1B's peak, that of its first rank),
  /// then a weight gradient; earlier micro-batches first.
  bool allowed(const Op &o, int r) const {
    return o.type != Type::Forward || inFlight[static_cast<size_t>(r)] < S;
  }
  static std::pair<int, int> rankKey(const Op &o) {
    int kind = o.type == Type::BackwardInput ? 0
               : o.type == Type::Forward     ? 1
                                             : 2;
    return {kind, o.mb};
  }
  bool prefer(const Op &a, const Op &b, int) const {
    return rankKey(a) < rankKey(b);
  }

  Schedule assemble(const std::vector<std::vector<int>> &order) const {
    Schedule s;
    s.name = name;
    s.ranks = S;
    s.virtualStages = v;
    s.microBatches = m;
    s.programs.resize(static_cast<size_t>(S));
    int last = S * v - 1;
    for (int r = 0; r < S; ++r) {
      auto &p = s.programs[static_cast<size_t>(r)];
      for (int i : order[static_cast<size_t>(r)]) {
        const Op &o = ops[static_cast<size_t>(i)];
        int prev = s.rankOf(std::max(o.stage - 1, 0));
        int next = s.rankOf(std::min(o.stage + 1, last));
        bool fromPrev = o.stage > 0 && prev != r;
        bool toNext = o.stage < last && next != r;
        if (o.type == Type::Forward && fromPrev)
          p.push_back({Type::RecvActivation, o.mb, o.stage, prev});
        if (isBackwardOfInput(o.type) && toNext)
          p.push_back({Type::RecvGradient, o.mb, o.stage, next});
        p.push_back({o.type, o.mb, o.stage, -1});
        if (o.type == Type::Forward && toNext)
          p.push_back({Type::SendActivation, o.mb, o.stage, next});
        if (isBackwardOfInput(o.type) && fromPrev)
          p.push_back({Type::SendGradient, o.mb, o.stage, prev});
      }
    }
    return s;
  }

  std::string name;
  int S, m, v;
  bool split;
  std::vector<Op> ops;
  std::map<Key, size_t> index;
  std::vector<int> inFlight;
};

} // namespace

Schedule makeSchedule(const std::string &name, int ranks, int microBatches,
                      int virtualStages, std::string &error) {
  const auto &names = scheduleNames();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    error = "unknown pipeline schedule '" + name +
            "' (gpipe, 1f1b, interleaved, zb-h1)";
    return {};
  }
  if (ranks < 1 || microBatches < 1 || virtualStages < 1 || ranks > 4096 ||
      microBatches > 4096 || virtualStages > 64) {
    error = "a pipeline needs 1 to 4096 stages and micro-batches and 1 to "
            "64 virtual stages per rank, not " +
            std::to_string(ranks) + ", " + std::to_string(microBatches) +
            " and " + std::to_string(virtualStages);
    return {};
  }
  if (name != "interleaved" && virtualStages != 1) {
    error = "only the interleaved schedule has virtual stages";
    return {};
  }
  return Maker(name, ranks, microBatches, virtualStages).run();
}

//===----------------------------------------------------------------------===//
// Verifying
//===----------------------------------------------------------------------===//

namespace {

/// The send a receive waits for: (type, micro-batch, sending stage).
Key sendOf(const Action &recv) {
  return recv.type == Type::RecvActivation
             ? keyOf(Type::SendActivation, recv.microBatch, recv.stage - 1)
             : keyOf(Type::SendGradient, recv.microBatch, recv.stage + 1);
}

std::string where(int rank, size_t step, const Action &a) {
  return "rank " + std::to_string(rank) + " step " + std::to_string(step) +
         " (" + a.str() + ")";
}

} // namespace

bool verify(const Schedule &s, const VerifyOptions &options,
            VerifyResult &result, std::string &error) {
  int S = s.ranks, stages = s.stages(), m = s.microBatches;
  if (S < 1 || s.virtualStages < 1 || m < 1 ||
      s.programs.size() != static_cast<size_t>(S)) {
    error = "the schedule has " + std::to_string(s.programs.size()) +
            " rank programs for " + std::to_string(S) + " ranks";
    return false;
  }
  if (!options.activationBytes.empty() &&
      options.activationBytes.size() != static_cast<size_t>(stages)) {
    error = "activation bytes for " +
            std::to_string(options.activationBytes.size()) +
            " stages, the schedule has " + std::to_string(stages);
    return false;
  }
  bool split = s.splitBackward();
  // Each action is well formed and on its stage's rank.
  std::set<Key> computed;
  std::map<Key, std::pair<int, size_t>> sends, recvs; // key -> rank, step
  for (int r = 0; r < S; ++r) {
    const auto &p = s.programs[static_cast<size_t>(r)];
    for (size_t i = 0; i < p.size(); ++i) {
      const Action &a = p[i];
      std::string at = where(r, i, a);
      if (a.type > Type::RecvGradient || a.microBatch < 0 ||
          a.microBatch >= m || a.stage < 0 || a.stage >= stages) {
        error = at + ": no such micro-batch or stage";
        return false;
      }
      if (s.rankOf(a.stage) != r) {
        error = at + ": stage " + std::to_string(a.stage) + " runs on rank " +
                std::to_string(s.rankOf(a.stage));
        return false;
      }
      if (split && a.type == Type::Backward) {
        error = at + ": a whole backward in a schedule that splits them";
        return false;
      }
      if (a.isCompute()) {
        if (!computed.insert(keyOf(a.type, a.microBatch, a.stage)).second) {
          error = at + ": computed twice";
          return false;
        }
        continue;
      }
      int other = a.type == Type::SendActivation || a.type == Type::RecvGradient
                      ? a.stage + 1
                      : a.stage - 1;
      if (other < 0 || other >= stages || a.peer != s.rankOf(other) ||
          a.peer == r) {
        error = at + ": the peer of stage " + std::to_string(a.stage) + "'s " +
                (a.type == Type::SendActivation || a.type == Type::RecvGradient
                     ? "next"
                     : "previous") +
                " stage is not rank " + std::to_string(a.peer);
        return false;
      }
      bool send =
          a.type == Type::SendActivation || a.type == Type::SendGradient;
      Key k = send ? keyOf(a.type, a.microBatch, a.stage) : sendOf(a);
      auto &table = send ? sends : recvs;
      if (!table.emplace(k, std::make_pair(r, i)).second) {
        error = at + ": sent or received twice";
        return false;
      }
    }
  }
  // Every computation once.
  for (int st = 0; st < stages; ++st)
    for (int mb = 0; mb < m; ++mb) {
      std::vector<Type> need = {Type::Forward};
      if (split) {
        need.push_back(Type::BackwardInput);
        need.push_back(Type::BackwardWeight);
      } else {
        need.push_back(Type::Backward);
      }
      for (Type t : need)
        if (!computed.count(keyOf(t, mb, st))) {
          error = "rank " + std::to_string(s.rankOf(st)) + " never computes " +
                  Action{t, mb, st, -1}.str();
          return false;
        }
    }
  // Every send has its receive and every receive its send.
  for (const auto &[k, at] : sends)
    if (!recvs.count(k)) {
      const Action &a = s.programs[static_cast<size_t>(at.first)][at.second];
      error = where(at.first, at.second, a) +
              " has no matching receive on rank " + std::to_string(a.peer);
      return false;
    }
  for (const auto &[k, at] : recvs)
    if (!sends.count(k)) {
      const Action &a = s.programs[static_cast<size_t>(at.first)][at.second];
      error = where(at.first, at.second, a) + " has no matching send on rank " +
              std::to_string(a.peer);
      return false;
    }

  // Run it: computations and sends in order, receives blocking.
  std::vector<size_t> pc(static_cast<size_t>(S), 0);
  std::set<Key> done;                           // computations
  std::set<Key> posted;                         // sends
  std::set<std::tuple<int, int, int>> received; // (type, mb, stage) per rank
  std::vector<int> live(static_cast<size_t>(S), 0);
  std::vector<int64_t> liveBytes(static_cast<size_t>(S), 0);
  result.peakLive.assign(static_cast<size_t>(S), 0);
  result.peakBytes.assign(static_cast<size_t>(S), 0);
  auto bytesOf = [&](int stage) -> int64_t {
    return options.activationBytes.empty()
               ? 0
               : options.activationBytes[static_cast<size_t>(stage)];
  };
  Type bwd = split ? Type::BackwardInput : Type::Backward;
  int last = stages - 1;
  while (true) {
    bool moved = false, finished = true;
    for (int r = 0; r < S; ++r) {
      const auto &p = s.programs[static_cast<size_t>(r)];
      size_t &i = pc[static_cast<size_t>(r)];
      while (i < p.size()) {
        const Action &a = p[i];
        std::string at = where(r, i, a);
        int mb = a.microBatch, st = a.stage;
        auto have = [&](Type t, int stage) {
          return done.count(keyOf(t, mb, stage)) > 0;
        };
        if (a.type == Type::RecvActivation || a.type == Type::RecvGradient) {
          if (!posted.count(sendOf(a)))
            break; // blocked
          received.insert({static_cast<int>(a.type), mb, st});
        } else if (a.type == Type::SendActivation) {
          if (!have(Type::Forward, st)) {
            error = at + ": sends an activation not computed yet";
            return false;
          }
          posted.insert(keyOf(a.type, mb, st));
        } else if (a.type == Type::SendGradient) {
          if (!have(bwd, st)) {
            error = at + ": sends a gradient not computed yet";
            return false;
          }
          posted.insert(keyOf(a.type, mb, st));
        } else {
          // A computation: its inputs are here (computed on this rank, or
          // received).
          auto input = [&](Type produced, int stage, Type recvType) {
            if (s.rankOf(stage) == r)
              return have(produced, stage);
            return received.count({static_cast<int>(recvType), mb, st}) > 0;
          };
          bool ok = true;
          std::string what;
          if (a.type == Type::Forward && st > 0) {
            ok = input(Type::Forward, st - 1, Type::RecvActivation);
            what = "the activation of stage " + std::to_string(st - 1);
          } else if (a.type == Type::Backward ||
                     a.type == Type::BackwardInput) {
            ok = have(Type::Forward, st);
            what = "its own forward";
            if (ok && st < last) {
              ok = input(bwd, st + 1, Type::RecvGradient);
              what = "the gradient from stage " + std::to_string(st + 1);
            }
          } else if (a.type == Type::BackwardWeight) {
            ok = have(Type::BackwardInput, st);
            what = "its input gradient (I)";
          }
          if (!ok) {
            error = at + ": runs before " + what;
            return false;
          }
          done.insert(keyOf(a.type, mb, st));
          int &n = live[static_cast<size_t>(r)];
          int64_t &b = liveBytes[static_cast<size_t>(r)];
          if (a.type == Type::Forward) {
            ++n;
            b += bytesOf(st);
          } else if (a.type ==
                     (split ? Type::BackwardWeight : Type::Backward)) {
            --n;
            b -= bytesOf(st);
          }
          result.peakLive[static_cast<size_t>(r)] =
              std::max(result.peakLive[static_cast<size_t>(r)], n);
          if (b > result.peakBytes[static_cast<size_t>(r)]) {
            result.peakBytes[static_cast<size_t>(r)] = b;
            if (options.memoryBudget > 0 && b > options.memoryBudget) {
              error = at + ": rank " + std::to_string(r) + " holds " +
                      std::to_string(b) + " bytes of activations (" +
                      std::to_string(n) +
                      " micro-batches), over the memory budget of " +
                      std::to_string(options.memoryBudget);
              return false;
            }
          }
        }
        ++i;
        moved = true;
      }
      finished = finished && i == p.size();
    }
    if (finished)
      return true;
    if (moved)
      continue;
    // Nobody moves: a cycle of ranks waiting on each other's receives.
    int start = -1;
    for (int r = 0; r < S && start < 0; ++r)
      if (pc[static_cast<size_t>(r)] <
          s.programs[static_cast<size_t>(r)].size())
        start = r;
    std::vector<int> path;
    std::vector<int> seen(static_cast<size_t>(S), -1);
    int r = start;
    while (r >= 0 && seen[static_cast<size_t>(r)] < 0 &&
           pc[static_cast<size_t>(r)] <
               s.programs[static_cast<size_t>(r)].size()) {
      seen[static_cast<size_t>(r)] = static_cast<int>(path.size());
      path.push_back(r);
      r = s.programs[static_cast<size_t>(r)][pc[static_cast<size_t>(r)]].peer;
    }
    size_t from = r >= 0 && seen[static_cast<size_t>(r)] >= 0
                      ? static_cast<size_t>(seen[static_cast<size_t>(r)])
                      : 0;
    error = "deadlock:";
    for (size_t k = from; k < path.size(); ++k) {
      int q = path[k];
      size_t step = pc[static_cast<size_t>(q)];
      const Action &a = s.programs[static_cast<size_t>(q)][step];
      error += std::string(k == from ? " " : ", ") + where(q, step, a) +
               " waits for rank " + std::to_string(a.peer);
    }
    return false;
  }
}

//===----------------------------------------------------------------------===//
// Simulating and drawing
//===----------------------------------------------------------------------===//

Timeline simulate(const Schedule &s, const Costs &costs) {
  Timeline t;
  int S = s.ranks;
  t.times.resize(static_cast<size_t>(S));
  for (int r = 0; r < S; ++r)
    t.times[static_cast<size_t>(r)].assign(
        s.programs[static_cast<size_t>(r)].size(), {0.0, 0.0});
  std::vector<size_t> pc(static_cast<size_t>(S), 0);
  std::vector<double> clock(static_cast<size_t>(S), 0.0);
  std::map<Key, double> sentAt;
  double busy = 0;
  bool moved = true;
  while (moved) {
    moved = false;
    for (int r = 0; r < S; ++r) {
      const auto &p = s.programs[static_cast<size_t>(r)];
      size_t &i = pc[static_cast<size_t>(r)];
      double &now = clock[static_cast<size_t>(r)];
      while (i < p.size()) {
        const Action &a = p[i];
        double start = now, end = now;
        if (a.type == Type::RecvActivation || a.type == Type::RecvGradient) {
          auto it = sentAt.find(sendOf(a));
          if (it == sentAt.end())
            break;
          end = std::max(now, it->second + costs.transfer);
        } else if (a.type == Type::SendActivation ||
                   a.type == Type::SendGradient) {
          sentAt[keyOf(a.type, a.microBatch, a.stage)] = now;
        } else {
          double c = a.type == Type::Forward         ? costs.forward
                     : a.type == Type::BackwardInput ? costs.backwardInput
                     : a.type == Type::BackwardWeight
                         ? costs.backwardWeight
                         : costs.backwardInput + costs.backwardWeight;
          end = start + c;
          busy += c;
        }
        t.times[static_cast<size_t>(r)][i] = {start, end};
        now = end;
        t.makespan = std::max(t.makespan, end);
        ++i;
        moved = true;
      }
    }
  }
  t.bubble = t.makespan > 0 ? 1.0 - busy / (S * t.makespan) : 0.0;
  return t;
}

double analyticBubble(const std::string &name, int ranks, int microBatches,
                      int virtualStages) {
  double idle = ranks - 1;
  if (name == "interleaved")
    return idle / (virtualStages * microBatches + idle);
  if (name == "zb-h1")
    return idle / (3.0 * microBatches + idle);
  return idle / (microBatches + idle);
}

std::string drawTimeline(const Schedule &s, const Timeline &t) {
  // A cell per time unit, wide enough for the longest label.
  auto label = [&](const Action &a) {
    std::string l = letter(a.type) + std::to_string(a.microBatch);
    if (s.virtualStages > 1)
      l += "." + std::to_string(a.stage / s.ranks);
    return l;
  };
  size_t width = 2;
  for (const auto &p : s.programs)
    for (const Action &a : p)
      if (a.isCompute())
        width = std::max(width, label(a).size() + 1);
  size_t cells = static_cast<size_t>(std::ceil(t.makespan - 1e-9));
  std::string out;
  for (int r = 0; r < s.ranks; ++r) {
    std::vector<std::string> row(cells, ".");
    const auto &p = s.programs[static_cast<size_t>(r)];
    for (size_t i = 0; i < p.size(); ++i) {
      if (!p[i].isCompute())
        continue;
      auto [start, end] = t.times[static_cast<size_t>(r)][i];
      for (size_t c = static_cast<size_t>(std::floor(start + 1e-9));
           c < cells && c + 1e-9 < end; ++c)
        row[c] = label(p[i]);
    }
    std::string line = "rank " + std::to_string(r) + " |";
    for (const std::string &c : row)
      line += c + std::string(width - c.size(), ' ');
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += line + "\n";
  }
  return out;
}

} // namespace loom::pipeline
