//===- CheckpointTest.cpp - tensor-parallel pieces in checkpoints ---------===//
//
// SplitLayout cuts a rank's piece of a tensor split along one dim in
// groups (a fused q|k|v weight) and puts pieces back; mergeShards makes a
// whole tensor from the pieces of a sharded checkpoint's files.
//
//===----------------------------------------------------------------------===//

#include "loom/common/Checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

using loom::artifact::Checkpoint;
using loom::artifact::CheckpointTensor;
using loom::artifact::SplitLayout;

namespace {

SplitLayout layout(std::vector<int64_t> full, int dim, int64_t groups,
                   int64_t count) {
  SplitLayout l;
  l.full = std::move(full);
  l.dim = dim;
  l.groups = groups;
  l.count = count;
  l.elemBytes = sizeof(float);
  return l;
}

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

std::vector<float> cut(const SplitLayout &l, const std::vector<float> &whole,
                       int64_t index) {
  std::vector<float> piece(l.pieceBytes() / sizeof(float));
  l.cut(reinterpret_cast<const char *>(whole.data()), index,
        reinterpret_cast<char *>(piece.data()));
  return piece;
}

} // namespace

// Rows of a [6, 2] weight in 3 groups over 2 ranks: rank r holds row r of
// each group of 2 rows.
TEST(SplitLayout, GroupsGiveEachRankItsPartOfEveryGroup) {
  SplitLayout l = layout({6, 2}, 0, 3, 2);
  ASSERT_TRUE(l.valid());
  std::vector<float> whole = iota(12);
  EXPECT_EQ(cut(l, whole, 0), (std::vector<float>{0, 1, 4, 5, 8, 9}));
  EXPECT_EQ(cut(l, whole, 1), (std::vector<float>{2, 3, 6, 7, 10, 11}));
}

// A split inner dim: every outer row contributes its columns.
TEST(SplitLayout, InnerDimAndRoundTrip) {
  SplitLayout l = layout({2, 4, 3}, 1, 1, 2);
  ASSERT_TRUE(l.valid());
  std::vector<float> whole = iota(24);
  std::vector<float> p0 = cut(l, whole, 0), p1 = cut(l, whole, 1);
  EXPECT_EQ(p0, (std::vector<float>{0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17}));
  std::vector<float> back(24, -1.0f);
  l.place(reinterpret_cast<const char *>(p0.data()), 0,
          reinterpret_cast<char *>(back.data()));
  l.place(reinterpret_cast<const char *>(p1.data()), 1,
          reinterpret_cast<char *>(back.data()));
  EXPECT_EQ(back, whole);
}

TEST(SplitLayout, RejectsSizesThatDoNotDivide) {
  EXPECT_FALSE(layout({6, 2}, 0, 2, 2).valid()); // 6 is not 2 groups x 2
  EXPECT_FALSE(layout({6, 2}, 2, 1, 2).valid()); // no dim 2
  EXPECT_FALSE(layout({6, 2}, 0, 0, 2).valid()); // no groups
  EXPECT_TRUE(layout({6, 2}, 0, 3, 2).valid());
}

namespace {

/// A one-tensor checkpoint file holding piece `index` of 2 of `l`.
Checkpoint pieceFile(const SplitLayout &l, const std::vector<float> &whole,
                     int64_t index) {
  Checkpoint c;
  CheckpointTensor *t = c.add_state();
  t->set_name("w");
  t->set_kind("param");
  t->set_dtype(loom::artifact::F32);
  std::vector<int64_t> dims = l.full;
  dims[static_cast<size_t>(l.dim)] /= l.count;
  for (int64_t d : dims)
    t->add_dims(d);
  std::vector<float> piece = cut(l, whole, index);
  t->set_data(std::string(reinterpret_cast<const char *>(piece.data()),
                          piece.size() * sizeof(float)));
  t->mutable_shard()->set_axis("tensor");
  for (int64_t d : l.full)
    t->mutable_shard()->add_full_dims(d);
  t->mutable_shard()->set_dim(l.dim);
  t->mutable_shard()->set_groups(l.groups);
  t->set_shard_index(index);
  t->set_shard_count(l.count);
  return c;
}

} // namespace

TEST(MergeShards, PutsTensorParallelPiecesInPlace) {
  SplitLayout l = layout({6, 2}, 0, 3, 2);
  std::vector<float> whole = iota(12);
  Checkpoint manifest;
  std::string error;
  ASSERT_TRUE(loom::artifact::mergeShards(
      manifest, {pieceFile(l, whole, 1), pieceFile(l, whole, 0)}, "ckpt",
      error))
      << error;
  ASSERT_EQ(manifest.state_size(), 1);
  const CheckpointTensor &t = manifest.state(0);
  EXPECT_FALSE(t.has_shard());
  ASSERT_EQ(t.dims_size(), 2);
  EXPECT_EQ(t.dims(0), 6);
  ASSERT_EQ(t.data().size(), whole.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(t.data().data(), whole.data(), t.data().size()), 0);
}

TEST(MergeShards, NamesAMissingPiece) {
  SplitLayout l = layout({6, 2}, 0, 3, 2);
  Checkpoint manifest;
  std::string error;
  // Two files (rank 1's lost its piece): the piece is named.
  EXPECT_FALSE(loom::artifact::mergeShards(
      manifest, {pieceFile(l, iota(12), 0), Checkpoint()}, "ckpt", error));
  EXPECT_NE(error.find("state 'w' lacks shard 1 of 2"), std::string::npos)
      << error;
}
