//===- FuzzCheckpoint.cpp - libFuzzer target: the checkpoint loader -------===//
//
// Feeds bytes to loom::artifact::parseCheckpoint (what readCheckpointFile
// and loom_trainer_load run on a file's bytes): as they are, and behind a
// fresh header (FuzzHeader.h). A checkpoint that parses is then merged as
// the shards of a manifest (what readCheckpoint does for a sharded
// checkpoint), alone and twice.
//
//===----------------------------------------------------------------------===//

#include "loom/common/Checkpoint.h"
#include "test/fuzz/FuzzHeader.h"

#include <vector>

using namespace loom::artifact;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Limits limits = loom::fuzz::fuzzLimits();
  loom::fuzz::checkBothWays(
      data, size, kCheckpointFile, [&](const char *bytes, size_t n) {
        Checkpoint c;
        std::string error;
        if (!parseCheckpoint(bytes, n, c, error, limits))
          return loom::fuzz::requireReason(error);
        (void)stateByName(c);
        for (size_t copies = 1; copies <= 2; ++copies) {
          Checkpoint manifest;
          error.clear();
          std::vector<Checkpoint> shards(copies, c);
          if (!mergeShards(manifest, shards, "fuzz", error, limits))
            loom::fuzz::requireReason(error);
        }
      });
  return 0;
}
