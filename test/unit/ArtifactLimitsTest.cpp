//===- ArtifactLimitsTest.cpp - the loaders' limits and bounds ------------===//
//
// The artifact and checkpoint loaders against files that ask for more than
// the limits allow (artifact::Limits, loom_instance_options'
// max_file_bytes and max_tensor_bytes), and against the inputs the fuzzers
// found (test/fuzz/regressions/). No runtime, no compiler: the loaders
// alone (LoomArtifactSchema).
//
//===----------------------------------------------------------------------===//

#include "loom/common/Checkpoint.h"

#include <gtest/gtest.h>

using namespace loom::artifact;

namespace {

/// A checkpoint file of `c`.
std::string fileOf(const Checkpoint &c) {
  std::string bytes, error;
  EXPECT_TRUE(serializeCheckpoint(c, bytes, error)) << error;
  return bytes;
}

Checkpoint oneTensor(std::vector<int64_t> dims, size_t bytes) {
  Checkpoint c;
  c.set_model_name("m");
  c.set_accumulate(1);
  CheckpointTensor *t = c.add_state();
  t->set_name("w");
  t->set_kind("param");
  t->set_dtype(F32);
  for (int64_t d : dims)
    t->add_dims(d);
  t->set_data(std::string(bytes, '\0'));
  return c;
}

TEST(ArtifactLimitsTest, CheckpointTensorBytes) {
  std::string file = fileOf(oneTensor({4, 8}, 128));
  Checkpoint out;
  std::string error;
  EXPECT_TRUE(parseCheckpoint(file.data(), file.size(), out, error)) << error;
  Limits small;
  small.maxTensorBytes = 64;
  EXPECT_FALSE(parseCheckpoint(file.data(), file.size(), out, error, small));
  EXPECT_EQ(error, "checkpoint state 'w' is f32[4, 8], more than the limit "
                   "of 64 bytes per tensor");
}

TEST(ArtifactLimitsTest, CheckpointFileBytes) {
  std::string file = fileOf(oneTensor({4, 8}, 128));
  Limits small;
  small.maxFileBytes = 100;
  Checkpoint out;
  std::string error;
  EXPECT_FALSE(parseCheckpoint(file.data(), file.size(), out, error, small));
  EXPECT_EQ(error, "checkpoint is too large (" + std::to_string(file.size()) +
                       " bytes; the limit is 100)");
}

TEST(ArtifactLimitsTest, HugeDimsDoNotOverflow) {
  // 2^62 elements of 4 bytes: the product overflows 64 bits.
  std::string file = fileOf(oneTensor({int64_t(1) << 31, int64_t(1) << 31}, 0));
  Checkpoint out;
  std::string error;
  EXPECT_FALSE(parseCheckpoint(file.data(), file.size(), out, error));
  EXPECT_EQ(error, "checkpoint state 'w' is f32[2147483648, 2147483648], more "
                   "than the limit of 8589934592 bytes per tensor");
}

/// A shard of `full` (an f32 tensor), chunk `index` of `count`.
Checkpoint shard(std::vector<int64_t> full, int64_t index, int64_t count,
                 int64_t chunk) {
  Checkpoint c = oneTensor({chunk}, static_cast<size_t>(chunk) * 4);
  CheckpointTensor *t = c.mutable_state(0);
  t->set_shard_index(index);
  t->set_shard_count(count);
  for (int64_t d : full)
    t->mutable_shard()->add_full_dims(d);
  return c;
}

TEST(ArtifactLimitsTest, MergedShardsAreChecked) {
  std::string error;
  Checkpoint merged;
  ASSERT_TRUE(mergeShards(merged, {shard({3}, 0, 2, 2), shard({3}, 1, 2, 2)},
                          "ck", error))
      << error;
  ASSERT_EQ(merged.state_size(), 1);
  EXPECT_EQ(merged.state(0).data().size(), 12u);
  // Full dims that overflow, or beyond the limit: refused before the
  // merged tensor is allocated.
  Checkpoint out;
  EXPECT_FALSE(
      mergeShards(out, {shard({int64_t(1) << 40, int64_t(1) << 40}, 0, 1, 2)},
                  "ck", error));
  EXPECT_EQ(error, "ck: state 'w' is f32[1099511627776, 1099511627776], more "
                   "than the limit of 8589934592 bytes per tensor");
  // A shard count larger than the files given: never whole, and not an
  // allocation sized by the file.
  Checkpoint out2;
  EXPECT_FALSE(
      mergeShards(out2, {shard({3}, 0, int64_t(1) << 60, 2)}, "ck", error));
  EXPECT_EQ(error,
            "ck: state 'w' is corrupt (shard count 1152921504606846976)");
}

TEST(ArtifactLimitsTest, TensorBytes) {
  uint64_t bytes = 0;
  std::string error;
  int64_t dims[] = {0, int64_t(1) << 62};
  EXPECT_TRUE(tensorBytes(F32, dims, 2, 16, "t", bytes, error)) << error;
  EXPECT_EQ(bytes, 0u);
  int64_t neg[] = {2, -1};
  EXPECT_FALSE(tensorBytes(F32, neg, 2, 16, "t", bytes, error));
  EXPECT_EQ(error, "t has a negative dim -1");
  int64_t ok[] = {2, 2};
  EXPECT_TRUE(tensorBytes(F64, ok, 2, 32, "t", bytes, error));
  EXPECT_EQ(bytes, 32u);
  EXPECT_FALSE(tensorBytes(F64, ok, 2, 31, "t", bytes, error));
}

} // namespace
