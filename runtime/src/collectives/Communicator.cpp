//===- Communicator.cpp - what every backend shares -----------------------===//

#include "runtime/src/collectives/Communicator.h"

#include <cerrno>
#include <cstdlib>

namespace loom::runtime::collectives {

const char *reduceOpName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Max:
    return "max";
  case ReduceOp::Min:
    return "min";
  case ReduceOp::Prod:
    return "prod";
  }
  return "?";
}

bool isCollectiveDtype(loom_dtype dtype) {
  switch (dtype) {
  case LOOM_DTYPE_F32:
  case LOOM_DTYPE_F16:
  case LOOM_DTYPE_BF16:
  case LOOM_DTYPE_F64:
  case LOOM_DTYPE_I64:
  case LOOM_DTYPE_I32:
  case LOOM_DTYPE_I8:
    return true;
  default:
    return false;
  }
}

std::string groupString(const Group &group, int worldSize) {
  if (group.empty() || static_cast<int>(group.size()) == worldSize)
    return "all " + std::to_string(worldSize) + " ranks";
  std::string s = group.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < group.size(); ++i)
    s += (i ? ", " : "") + std::to_string(group[i]);
  return s;
}

Work::~Work() = default;
Communicator::~Communicator() = default;

namespace {
class DoneWork : public Work {
public:
  explicit DoneWork(std::string error) : error_(std::move(error)) {}
  std::string wait() override { return error_; }

private:
  std::string error_;
};
} // namespace

WorkPtr completedWork(std::string error) {
  return std::make_shared<DoneWork>(std::move(error));
}

std::chrono::milliseconds timeoutFromEnv(std::chrono::milliseconds fallback,
                                         std::string &error) {
  const char *v = std::getenv("LOOM_COLLECTIVE_TIMEOUT");
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  errno = 0;
  double seconds = std::strtod(v, &end);
  if (errno || *end || !(seconds > 0) || seconds > 1e7) {
    error = std::string("LOOM_COLLECTIVE_TIMEOUT='") + v +
            "' is not a positive number of seconds";
    return fallback;
  }
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

} // namespace loom::runtime::collectives
