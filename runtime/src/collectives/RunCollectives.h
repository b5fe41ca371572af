//===- RunCollectives.h - the collectives of one run ------------*- C++ -*-===//
//
// The generated code calls _mlir_ciface_loom_rt_collective_start_T and
// _wait_T (docs/distributed.md); they land here, on the run context of the
// calling thread. A run's collectives go to the session's communicator
// over the group that the `axes` mask picks on the artifact's mesh; with
// no communicator (a one-rank mesh) every collective is a copy. Handles
// are indices into this run's list; a failure is recorded here and fails
// the run.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_COLLECTIVES_RUNCOLLECTIVES_H
#define LOOM_RUNTIME_COLLECTIVES_RUNCOLLECTIVES_H

#include "runtime/src/collectives/Communicator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::runtime::collectives {

/// The world ranks that differ from `rank` only on the mesh axes set in
/// `axes` (bit i = axis i), ascending (row-major layout). Sets `error` when
/// `axes` names an axis the mesh does not have or `rank` is off the mesh.
bool meshGroup(const std::vector<int64_t> &shape, int rank, int64_t axes,
               Group &group, std::string &error);

/// "data=2, tensor=2".
std::string meshString(const std::vector<int64_t> &shape,
                       const std::vector<std::string> &axes);

/// An unranked memref as the generated code passes it: the rank and a
/// pointer to {allocated, aligned, offset, sizes[rank], strides[rank]}.
struct Unranked {
  int64_t rank;
  void *descriptor;
};

class RunCollectives {
public:
  /// Starts a run: `comm` (null: one rank) over a mesh of `shape` (empty:
  /// no mesh).
  void begin(Communicator *comm, const std::vector<int64_t> &shape);
  /// The ABI's start: a handle >= 0, or -1 when this collective or an
  /// earlier one of the run failed.
  int64_t start(const Unranked *in, const Unranked *out, int64_t kind,
                int64_t dtype, int64_t op, int64_t axes);
  /// The ABI's wait.
  void wait(int64_t handle);
  /// Ends the run: waits for every collective still in flight (their
  /// buffers die with the run) and returns the run's failure, "" if none.
  std::string finish();

private:
  void fail(const std::string &message);

  Communicator *comm_ = nullptr;
  std::vector<int64_t> shape_;
  std::vector<WorkPtr> pending_;
  std::vector<std::string> names_;
  std::string failure_;
};

} // namespace loom::runtime::collectives

#endif // LOOM_RUNTIME_COLLECTIVES_RUNCOLLECTIVES_H
