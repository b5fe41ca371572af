//===- ArtifactFormatTest.cpp - tensor data in segments
//--------------------===//
//
// The file format's data section (loom/common/FileHeader.h): artifacts and
// checkpoints keep their tensors' bytes after the message, aligned and
// checksummed, and the loaders refuse a segment that is truncated, corrupt
// or out of place with a message naming the tensor. Files of the previous
// versions (data inline) still load. No runtime: the loaders alone.
//
//===----------------------------------------------------------------------===//

#include "loom/common/Checkpoint.h"
#include "loom/common/FileIO.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <unistd.h>

using namespace loom::artifact;

namespace {

/// An inference artifact with one f32[4, 8] weight of bytes 0, 1, 2, ...
Artifact withWeight() {
  Artifact a;
  a.set_model_name("m");
  TensorSignature *out = a.add_outputs();
  out->set_name("y");
  out->set_dtype(F32);
  out->add_dims()->set_size(4);
  Weight *w = a.add_weights();
  w->set_name("w");
  w->set_dtype(F32);
  w->add_dims(4);
  w->add_dims(8);
  std::string data(128, '\0');
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<char>(i);
  w->set_data(data);
  a.mutable_cpu()->set_shared_object("not really code");
  a.mutable_cpu()->set_entry_symbol("entry");
  return a;
}

std::string weightBytes() {
  std::string data(128, '\0');
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<char>(i);
  return data;
}

/// The offset of the data section in a file.
uint64_t sectionOf(const std::string &file) {
  uint64_t body = 0;
  std::memcpy(&body, file.data() + 12, 8);
  return dataSectionOffset(body);
}

TEST(ArtifactFormatTest, WeightsLieInTheDataSection) {
  Artifact a = withWeight();
  std::string file, error;
  ASSERT_TRUE(serialize(a, file, error)) << error;
  // The message keeps the index only.
  EXPECT_TRUE(a.weights(0).data().empty());
  EXPECT_EQ(file.size(), sectionOf(file) + 128);
  EXPECT_EQ(sectionOf(file) % kSegmentAlign, 0u);

  Artifact out;
  DataSection section;
  ASSERT_TRUE(parse(file.data(), file.size(), out, error, {}, &section))
      << error;
  ASSERT_TRUE(out.weights(0).has_segment());
  EXPECT_EQ(section.data, file.data() + sectionOf(file));
  EXPECT_EQ(std::string(weightData(section, out.weights(0))), weightBytes());
}

TEST(ArtifactFormatTest, VersionTwoFilesStillLoad) {
  Artifact a = withWeight();
  std::string body;
  ASSERT_TRUE(a.SerializeToString(&body));
  std::string file = header(body) + body;
  file[8] = 2; // the format version, little endian
  Artifact out;
  DataSection section;
  std::string error;
  ASSERT_TRUE(parse(file.data(), file.size(), out, error, {}, &section))
      << error;
  EXPECT_EQ(std::string(weightData(section, out.weights(0))), weightBytes());
  // A version 2 file has no data section: bytes after its message are
  // damage.
  file += "x";
  EXPECT_FALSE(parse(file.data(), file.size(), out, error));
  EXPECT_NE(error.find("truncated or corrupt"), std::string::npos) << error;
  file[8] = 1;
  EXPECT_FALSE(parse(file.data(), file.size(), out, error));
  EXPECT_EQ(error, "artifact format version 1 is not supported by this "
                   "runtime (it reads versions 2 to 3); recompile the model");
}

TEST(ArtifactFormatTest, TruncatedSegmentNamesTheTensor) {
  Artifact a = withWeight();
  std::string file, error;
  ASSERT_TRUE(serialize(a, file, error)) << error;
  file.resize(file.size() - 1);
  Artifact out;
  EXPECT_FALSE(parse(file.data(), file.size(), out, error));
  EXPECT_EQ(error, "weight 0 ('w') lies past the end of the file (bytes 0 to "
                   "128 of a data section of 127): the file is truncated");
}

TEST(ArtifactFormatTest, CorruptSegmentNamesTheTensor) {
  Artifact a = withWeight();
  std::string file, error;
  ASSERT_TRUE(serialize(a, file, error)) << error;
  file[sectionOf(file) + 77] ^= 1;
  Artifact out;
  EXPECT_FALSE(parse(file.data(), file.size(), out, error));
  EXPECT_EQ(error, "weight 0 ('w') is corrupt (checksum mismatch)");
}

TEST(ArtifactFormatTest, SegmentIndexIsChecked) {
  Artifact a = withWeight();
  std::string data = weightBytes();
  a.mutable_weights(0)->clear_data();
  // The data is in the section, but the index points past the file, or
  // not at a segment boundary.
  for (uint64_t offset : {uint64_t(1) << 40, uint64_t(8)}) {
    FileWriter writer;
    writer.add(std::string_view(data),
               *a.mutable_weights(0)->mutable_segment());
    a.mutable_weights(0)->mutable_segment()->set_offset(offset);
    std::string file, error;
    ASSERT_TRUE(writer.assemble(a, kArtifactFile, file, error)) << error;
    Artifact out;
    EXPECT_FALSE(parse(file.data(), file.size(), out, error));
    EXPECT_EQ(error, offset == 8
                         ? "weight 0 ('w') is corrupt (its segment's offset 8 "
                           "is not a multiple of 64)"
                         : "weight 0 ('w') lies past the end of the file "
                           "(bytes 1099511627776 to 1099511627904 of a data "
                           "section of 128): the file is truncated");
  }
  // Inline and in a segment: one of them is wrong.
  FileWriter writer;
  writer.add(std::string_view(data), *a.mutable_weights(0)->mutable_segment());
  a.mutable_weights(0)->set_data(data);
  std::string file, error;
  ASSERT_TRUE(writer.assemble(a, kArtifactFile, file, error)) << error;
  Artifact out;
  EXPECT_FALSE(parse(file.data(), file.size(), out, error));
  EXPECT_EQ(error, "weight 0 ('w') is both inline and in a segment");
}

TEST(ArtifactFormatTest, InitialValuesLieInTheDataSection) {
  // A training artifact: a parameter p (input 1, output 1) with an
  // initial value, its moment m without (zeros are not stored).
  Artifact a;
  a.set_model_name("m");
  auto scalar = [](TensorSignature *s, const char *name, DType dtype) {
    s->set_name(name);
    s->set_dtype(dtype);
  };
  auto vector4 = [](TensorSignature *s, const char *name) {
    s->set_name(name);
    s->set_dtype(F32);
    s->add_dims()->set_size(4);
  };
  scalar(a.add_inputs(), "step", I64);
  vector4(a.add_inputs(), "p");
  vector4(a.add_inputs(), "m");
  scalar(a.add_outputs(), "loss", F32);
  vector4(a.add_outputs(), "p_next");
  vector4(a.add_outputs(), "m_next");
  scalar(a.add_outputs(), "grad_norm", F32);
  scalar(a.add_outputs(), "lr", F32);
  Training *t = a.mutable_training();
  t->set_accumulate(1);
  t->set_step_input(0);
  t->set_total_steps_input(-1);
  t->set_loss_output(0);
  t->set_grad_norm_output(3);
  t->set_lr_output(4);
  TrainingState *p = t->add_state();
  p->set_name("p");
  p->set_kind("param");
  p->set_input(1);
  p->set_output(1);
  p->set_initial(std::string(16, '\x3f'));
  TrainingState *m = t->add_state();
  m->set_name("p/exp_avg");
  m->set_kind("exp_avg");
  m->set_input(2);
  m->set_output(2);
  a.mutable_cpu()->set_shared_object("code");
  a.mutable_cpu()->set_entry_symbol("entry");

  std::string file, error;
  ASSERT_TRUE(serialize(a, file, error)) << error;
  EXPECT_EQ(file.size(), sectionOf(file) + 16) << "only p's value is stored";
  Artifact out;
  DataSection section;
  ASSERT_TRUE(parse(file.data(), file.size(), out, error, {}, &section))
      << error;
  EXPECT_EQ(std::string(initialData(section, out.training().state(0))),
            std::string(16, '\x3f'));
  EXPECT_TRUE(initialData(section, out.training().state(1)).empty());
  file[sectionOf(file) + 3] = 0;
  EXPECT_FALSE(parse(file.data(), file.size(), out, error));
  EXPECT_EQ(
      error,
      "training: state 'p''s initial value is corrupt (checksum mismatch)");
}

/// A temporary file's path, removed at the end of the test.
struct TempPath {
  std::string path = ::testing::TempDir() + "loom-format-" +
                     std::to_string(::getpid()) + ".loomckpt";
  ~TempPath() { std::remove(path.c_str()); }
};

TEST(ArtifactFormatTest, CheckpointTensorsLieInTheDataSection) {
  Checkpoint c;
  c.set_model_name("m");
  c.set_accumulate(1);
  std::string data = weightBytes();
  CheckpointTensor *t = c.add_state();
  t->set_name("w");
  t->set_kind("param");
  t->set_dtype(F32);
  t->add_dims(32);
  FileWriter writer;
  writer.add(std::string_view(data), *t->mutable_segment());
  TempPath temp;
  std::string error;
  ASSERT_TRUE(writer.write(c, kCheckpointFile, temp.path, error)) << error;

  Checkpoint out;
  ASSERT_TRUE(readCheckpointFile(temp.path, out, error)) << error;
  ASSERT_EQ(out.state_size(), 1);
  EXPECT_EQ(out.state(0).data(), data) << "read back inline";
  EXPECT_FALSE(out.state(0).has_segment());

  // Damage one byte of the tensor.
  std::string file;
  ASSERT_TRUE(loom::files::readFile(temp.path, file, error)) << error;
  file[sectionOf(file) + 5] ^= 0x10;
  ASSERT_TRUE(loom::files::writeFileAtomically(temp.path, file, error));
  EXPECT_FALSE(readCheckpointFile(temp.path, out, error));
  EXPECT_EQ(error, temp.path + ": checkpoint state 'w' is corrupt (checksum "
                               "mismatch)");
}

TEST(ArtifactFormatTest, CheckpointPastTwoGiB) {
  // Three tensors of 720 MiB (one buffer, written three times): a file of
  // 2.26 GB, past protobuf's 2 GiB cap, written and checked without ever
  // holding it in memory.
  const int64_t count = int64_t(180) << 20; // f32 elements per tensor
  std::string data(static_cast<size_t>(count) * 4, '\0');
  for (size_t i = 0; i < data.size(); i += 4096)
    data[i] = static_cast<char>(i / 4096);
  Checkpoint c;
  c.set_model_name("big");
  c.set_accumulate(1);
  FileWriter writer;
  for (const char *name : {"a", "b", "c"}) {
    CheckpointTensor *t = c.add_state();
    t->set_name(name);
    t->set_kind("param");
    t->set_dtype(F32);
    t->add_dims(count);
    writer.add(std::string_view(data), *t->mutable_segment());
  }
  TempPath temp;
  std::string error;
  ASSERT_TRUE(writer.write(c, kCheckpointFile, temp.path, error)) << error;

  loom::files::MappedFile file;
  ASSERT_TRUE(file.open(temp.path, error)) << error;
  EXPECT_GT(file.size(), uint64_t(1) << 31);
  Checkpoint out;
  DataSection section;
  ASSERT_TRUE(
      parseCheckpoint(file.data(), file.size(), out, error, {}, &section))
      << error;
  ASSERT_EQ(out.state_size(), 3);
  std::string_view last = tensorData(section, out.state(2));
  ASSERT_EQ(last.size(), data.size());
  EXPECT_TRUE(last == std::string_view(data));
}

TEST(ArtifactFormatTest, ChecksumSeesEveryByte) {
  std::string data(1000, 'a');
  uint64_t h = segmentChecksum(data.data(), data.size());
  for (size_t i :
       {size_t(0), size_t(31), size_t(32), size_t(990), size_t(999)}) {
    std::string changed = data;
    changed[i] = 'b';
    EXPECT_NE(segmentChecksum(changed.data(), changed.size()), h) << i;
  }
  EXPECT_NE(segmentChecksum(data.data(), 999), h);
}

} // namespace
