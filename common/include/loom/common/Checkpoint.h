//===- Checkpoint.h - reading and writing .loomckpt files -------*- C++ -*-===//
//
// A checkpoint is a Checkpoint message (common/schema/loom_artifact.proto)
// behind the artifact's header scheme with its own magic and version. The
// runtime's trainer writes and reads it (loom_trainer_save/load); tools
// (loomc export --checkpoint) read it with readCheckpoint. No MLIR, no
// runtime C API: part of the LoomArtifactSchema library.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMMON_CHECKPOINT_H
#define LOOM_COMMON_CHECKPOINT_H

#include "loom/common/Artifact.h"

#include <map>
#include <string>
#include <vector>

namespace loom::artifact {

inline constexpr char kCheckpointMagic[8] = {'L', 'O', 'O', 'M',
                                             'C', 'K', 'P', 'T'};
/// Bump on every change a reader of the previous version cannot read.
/// 2: tensor data in segments after the message (version 1 still loads).
inline constexpr uint32_t kCheckpointVersion = 2;
inline constexpr FileKind kCheckpointFile = {
    kCheckpointMagic,
    kCheckpointVersion,
    "checkpoint",
    "Loom checkpoint",
    "it was written by another version of Loom",
    /*oldest=*/1,
    /*segmentsSince=*/2};

/// The bytes of a .loomckpt file holding `checkpoint`, its tensors' data
/// inline (small checkpoints, manifests, tests; a writer of large state
/// puts it in segments with a FileWriter instead). False with `error` when
/// the message does not serialize (over 2 GiB).
bool serializeCheckpoint(const Checkpoint &checkpoint, std::string &bytes,
                         std::string &error);

/// Parses and validates a whole file's bytes: header, message, and every
/// state tensor (a name, unique; a known dtype; data of its dims' size, in
/// its segment of the data section when it has one: `section` is set for
/// tensorData; micro_step and total_steps not negative, accumulate at
/// least 1).
bool parseCheckpoint(const void *data, size_t size, Checkpoint &out,
                     std::string &error, const Limits &limits = {},
                     DataSection *section = nullptr);

/// Reads and validates the checkpoint at `path` (mapped, not read whole);
/// every tensor comes back with its data inline. Messages start with the
/// path ("ckpt.loomckpt: checkpoint is corrupt (checksum mismatch)"). A
/// sharded checkpoint (a directory with a manifest, or the manifest file)
/// comes back merged: every sharded tensor whole, as a one-process
/// checkpoint holds it.
bool readCheckpoint(const std::string &path, Checkpoint &out,
                    std::string &error, const Limits &limits = {});

/// Reads and validates one checkpoint file as it is (a manifest stays a
/// manifest); messages start with the path.
bool readCheckpointFile(const std::string &path, Checkpoint &out,
                        std::string &error, const Limits &limits = {});

/// The manifest's name in a sharded checkpoint's directory.
inline constexpr const char *kManifestName = "manifest";

/// The file of `rank` (of `ranks`) in a sharded checkpoint written at
/// micro-step `microStep` (the step keeps an earlier set intact until the
/// new manifest replaces the old one).
std::string shardFileName(int64_t microStep, int64_t rank, int64_t ranks);

/// Merges the shards `files` (parsed) of a manifest into `manifest`'s
/// state: replicated tensors once, sharded ones concatenated in shard
/// order and cut to their full size (checked against the limits before
/// anything is allocated). `where` starts the messages.
bool mergeShards(Checkpoint &manifest, const std::vector<Checkpoint> &files,
                 const std::string &where, std::string &error,
                 const Limits &limits = {});

/// A tensor of dims `full` split along `dim` (StateShard.dim): the dim is
/// `groups` blocks, each cut in `count` parts; piece `index` is part
/// `index` of every block. Sizes are in elements of `elemBytes` bytes.
struct SplitLayout {
  std::vector<int64_t> full;
  int dim = 0;
  int64_t groups = 1, count = 1;
  size_t elemBytes = 0;
  /// Whether the layout is consistent (dim in range, sizes divide).
  bool valid() const;
  size_t wholeBytes() const;
  size_t pieceBytes() const;
  /// Copies piece `index` out of `whole` into `piece`, or back.
  void cut(const char *whole, int64_t index, char *piece) const;
  void place(const char *piece, int64_t index, char *whole) const;
};

/// The state tensors of a (validated) checkpoint by name; the pointers
/// live as long as `checkpoint`.
std::map<std::string, const CheckpointTensor *>
stateByName(const Checkpoint &checkpoint);

} // namespace loom::artifact

#endif // LOOM_COMMON_CHECKPOINT_H
