//===- Trainer.h - the trainer's checkpoint helpers, shared -----*- C++ -*-===//
//
// What the pipeline trainer (runtime/src/pipeline/Executor.cpp) reuses of
// the C API's trainer (Trainer.cpp): writing a checkpoint, one file or a
// directory of per-rank files and a manifest, and taking a checkpoint's
// state into a trainer by name.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_TRAINER_H
#define LOOM_RUNTIME_TRAINER_H

#include "loom/common/Checkpoint.h"
#include "loom/runtime.h"

#include <string>

namespace loom::runtime {

/// Writes checkpoint `c` (this rank's state in it, its data in `segments`'
/// segments) at `path`. Without
/// `directory`: rank 0 writes one file, the others wait for it. With it:
/// `path` is a directory, this rank writes its state as file `fileIndex`
/// of `files` (-1: this rank writes none), rank 0 the manifest naming the
/// `files` files once they are all in place. `comm` may be null for one
/// process (then `directory` must be false).
loom_status writeCheckpoint(artifact::Checkpoint &c,
                            artifact::FileWriter &segments,
                            const std::string &path, loom_communicator *comm,
                            bool directory, int fileIndex, int files);

/// Takes the state of (read, merged) checkpoint `c` from `path` into
/// `trainer` by name, and its micro-step and horizon. `others`: `c` may
/// hold state the trainer does not have (another pipeline rank's).
loom_status loadTrainerState(loom_trainer *trainer,
                             const artifact::Checkpoint &c,
                             const std::string &path, bool others);

} // namespace loom::runtime

#endif // LOOM_RUNTIME_TRAINER_H
