//===- RunCollectives.cpp - the collective ABI of the generated code ------===//

#include "runtime/src/collectives/RunCollectives.h"

#include "loom/common/Artifact.h"
#include "runtime/src/RunContext.h"

#include <cstring>

namespace loom::runtime::collectives {

bool meshGroup(const std::vector<int64_t> &shape, int rank, int64_t axes,
               Group &group, std::string &error) {
  group.clear();
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  if (axes < 0 || (shape.size() < 63 && (axes >> shape.size()) != 0)) {
    error = "the axes mask " + std::to_string(axes) +
            " names an axis the mesh of " + std::to_string(shape.size()) +
            " axes does not have";
    return false;
  }
  if (rank < 0 || rank >= n) {
    error = "rank " + std::to_string(rank) + " is not on the mesh of " +
            std::to_string(n) + " ranks";
    return false;
  }
  // Row-major coordinates: the last axis varies fastest.
  auto coords = [&](int64_t r) {
    std::vector<int64_t> c(shape.size());
    for (size_t i = shape.size(); i-- > 0;) {
      c[i] = r % shape[i];
      r /= shape[i];
    }
    return c;
  };
  std::vector<int64_t> mine = coords(rank);
  for (int64_t r = 0; r < n; ++r) {
    std::vector<int64_t> c = coords(r);
    bool member = true;
    for (size_t i = 0; i < shape.size() && member; ++i)
      member = ((axes >> i) & 1) || c[i] == mine[i];
    if (member)
      group.push_back(static_cast<int>(r));
  }
  return true;
}

std::string meshString(const std::vector<int64_t> &shape,
                       const std::vector<std::string> &axes) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    s += i ? ", " : "";
    s += (i < axes.size() && !axes[i].empty() ? axes[i]
                                              : "axis" + std::to_string(i)) +
         "=" + std::to_string(shape[i]);
  }
  return s;
}

namespace {

const char *kindName(int64_t kind) {
  static const char *const names[] = {
      "all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_slice"};
  return kind >= 0 && kind < 5 ? names[kind] : "unknown collective";
}

/// A dense buffer behind an unranked memref descriptor.
struct View {
  char *data = nullptr;
  size_t count = 0;
};

bool toView(const Unranked *u, size_t elem, const char *what, View &v,
            std::string &error) {
  if (!u || !u->descriptor || u->rank < 0 || u->rank > 16) {
    error = std::string("the ") + what + " buffer's descriptor is invalid";
    return false;
  }
  const int64_t *d = static_cast<const int64_t *>(u->descriptor);
  const int64_t *sizes = d + 3, *strides = d + 3 + u->rank;
  size_t count = 1;
  int64_t expect = 1;
  for (int64_t i = u->rank; i-- > 0;) {
    if (sizes[i] < 0) {
      error = std::string("the ") + what + " buffer has a negative size";
      return false;
    }
    if (sizes[i] != 1 && strides[i] != expect) {
      error = std::string("the ") + what + " buffer is not dense row-major";
      return false;
    }
    expect *= sizes[i];
    count *= static_cast<size_t>(sizes[i]);
  }
  v.data = reinterpret_cast<char *>(static_cast<intptr_t>(d[1])) +
           d[2] * static_cast<int64_t>(elem);
  v.count = count;
  if (!v.data && count) {
    error = std::string("the ") + what + " buffer is null";
    return false;
  }
  return true;
}

} // namespace

void RunCollectives::begin(Communicator *comm,
                           const std::vector<int64_t> &shape) {
  comm_ = comm;
  shape_ = shape;
  pending_.clear();
  names_.clear();
  failure_.clear();
}

void RunCollectives::fail(const std::string &message) {
  if (failure_.empty())
    failure_ = message;
}

int64_t RunCollectives::start(const Unranked *in, const Unranked *out,
                              int64_t kind, int64_t dtype, int64_t op,
                              int64_t axes) {
  // "all_reduce #3 of the step"; a bad call's message adds the group.
  std::string shortName = std::string(kindName(kind)) + " #" +
                          std::to_string(pending_.size()) + " of the step";
  std::string name = shortName;
  if (!failure_.empty())
    return -1;
  auto bad = [&](const std::string &why) {
    fail("collective " + name + ": " + why);
    return int64_t(-1);
  };
  if (kind < 0 || kind > 4)
    return bad("unknown kind " + std::to_string(kind));
  auto type = static_cast<loom_dtype>(dtype);
  if (!isCollectiveDtype(type))
    return bad("unsupported dtype " + std::to_string(dtype));
  size_t elem = artifact::dtypeSize(type);
  if ((kind == 0 || kind == 2) && (op < 0 || op > 3))
    return bad("unknown reduction " + std::to_string(op));
  View src, dst;
  std::string error;
  if (!toView(in, elem, "input", src, error) ||
      !toView(out, elem, "output", dst, error))
    return bad(error);

  // The group: the ranks that differ from this one only on `axes`.
  Group group;
  int worldSize = 1, me = 0;
  if (comm_) {
    worldSize = comm_->size();
    if (!meshGroup(shape_.empty() ? std::vector<int64_t>{worldSize} : shape_,
                   comm_->rank(), axes, group, error))
      return bad(error);
    name += " over " + groupString(group, worldSize);
  } else {
    group = {0};
  }
  size_t g = group.size();
  for (size_t i = 0; i < g; ++i)
    if (comm_ && group[i] == comm_->rank())
      me = static_cast<int>(i);
  if (kind == 3 && (op < 0 || op >= static_cast<int64_t>(g)))
    return bad("root " + std::to_string(op) + " is not in a group of " +
               std::to_string(g));

  // numel(out) against numel(in) for the kind.
  size_t wantOut = kind == 1 ? src.count * g
                   : kind == 2 || kind == 4
                       ? (src.count % g ? SIZE_MAX : src.count / g)
                       : src.count;
  if (dst.count != wantOut)
    return bad("input of " + std::to_string(src.count) +
               " elements and output of " + std::to_string(dst.count) +
               " do not fit a group of " + std::to_string(g));

  if (comm_ && g > 1 && kind != 4) {
    std::string broken = comm_->error();
    if (!broken.empty())
      return bad("the communicator is broken by an earlier failure: " + broken);
  }
  WorkPtr work;
  if (g == 1 || kind == 4) {
    // One member, or all-slice: no communication.
    const char *from = src.data + (kind == 4 ? me * dst.count * elem : 0);
    if (dst.count && dst.data != from)
      std::memmove(dst.data, from, dst.count * elem);
  } else {
    auto reduce = static_cast<ReduceOp>(op);
    switch (kind) {
    case 0:
      work =
          comm_->allReduce(src.data, dst.data, src.count, type, reduce, group);
      break;
    case 1:
      work = comm_->allGather(src.data, dst.data, src.count, type, group);
      break;
    case 2:
      work = comm_->reduceScatter(src.data, dst.data, dst.count, type, reduce,
                                  group);
      break;
    case 3:
      work = comm_->broadcast(src.data, dst.data, src.count, type,
                              static_cast<int>(op), group);
      break;
    }
  }
  pending_.push_back(std::move(work));
  names_.push_back(std::move(shortName));
  return static_cast<int64_t>(pending_.size()) - 1;
}

void RunCollectives::wait(int64_t handle) {
  if (handle < 0)
    return; // a start that failed; the failure is recorded
  if (handle >= static_cast<int64_t>(pending_.size())) {
    fail("collective wait: unknown handle " + std::to_string(handle));
    return;
  }
  WorkPtr work = std::move(pending_[handle]);
  if (!work)
    return;
  std::string error = work->wait();
  if (!error.empty())
    fail("collective " + names_[handle] + ": " + error); // names the group
}

std::string RunCollectives::finish() {
  for (size_t h = 0; h < pending_.size(); ++h)
    wait(static_cast<int64_t>(h));
  pending_.clear();
  names_.clear();
  comm_ = nullptr;
  std::string f;
  f.swap(failure_);
  return f;
}

} // namespace loom::runtime::collectives

using loom::runtime::RunContext;
using loom::runtime::collectives::Unranked;

/// The ABI of docs/distributed.md: one pair per element type, all the same
/// implementation (the dtype argument says the type).
#define LOOM_COLLECTIVE_ABI(T)                                                 \
  extern "C" __attribute__((visibility("default")))                            \
  int64_t _mlir_ciface_loom_rt_collective_start_##T(                           \
      Unranked *in, Unranked *out, int64_t kind, int64_t dtype, int64_t op,    \
      int64_t axes) {                                                          \
    return RunContext::current().collectives().start(in, out, kind, dtype, op, \
                                                     axes);                    \
  }                                                                            \
  extern "C" __attribute__((visibility("default"))) void                       \
      _mlir_ciface_loom_rt_collective_wait_##T(int64_t handle, Unranked *,     \
                                               Unranked *) {                   \
    RunContext::current().collectives().wait(handle);                          \
  }
LOOM_COLLECTIVE_ABI(f32)
LOOM_COLLECTIVE_ABI(f16)
LOOM_COLLECTIVE_ABI(bf16)
LOOM_COLLECTIVE_ABI(f64)
LOOM_COLLECTIVE_ABI(i64)
LOOM_COLLECTIVE_ABI(i32)
LOOM_COLLECTIVE_ABI(i8)
#undef LOOM_COLLECTIVE_ABI
