//===- TensorFilesTest.cpp - common's .npy and .pb tensor files -----------===//
//
// loom/common/TensorFiles.h on its own (LoomTensorFiles: no runtime, no
// compiler): .npy and TensorProto round trips, bf16 as float32 in .npy,
// and the refusals of files whose data does not fit their shape.
//
//===----------------------------------------------------------------------===//

#include "loom/common/TensorFiles.h"
#include "loom/common/DType.h"
#include "loom/common/FileIO.h"

#include <gtest/gtest.h>

#include <cstring>
#include <unistd.h>

using namespace loom::files;

namespace {

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "/loom-tensorfiles-" +
         std::to_string(getpid()) + "-" + name;
}

HostTensor f32Tensor(std::vector<int64_t> shape, std::vector<float> values) {
  HostTensor t;
  t.dtype = loom::dtypes::kF32;
  t.shape = std::move(shape);
  t.bytes.assign(reinterpret_cast<const char *>(values.data()),
                 values.size() * sizeof(float));
  return t;
}

TEST(TensorFiles, NpyRoundTrip) {
  HostTensor t = f32Tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  std::string path = tempPath("a.npy"), error;
  ASSERT_TRUE(writeNpy(path, viewOf(t), error)) << error;
  HostTensor back;
  ASSERT_TRUE(readNpy(path, back, error)) << error;
  EXPECT_EQ(back.dtype, t.dtype);
  EXPECT_EQ(back.shape, t.shape);
  EXPECT_EQ(back.bytes, t.bytes);
  HostTensor byExtension;
  ASSERT_TRUE(readTensorFile(path, byExtension, error)) << error;
  EXPECT_EQ(byExtension.bytes, t.bytes);
  unlink(path.c_str());
}

TEST(TensorFiles, NpyMapsInPlace) {
  HostTensor t = f32Tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  std::string path = tempPath("m.npy"), error;
  ASSERT_TRUE(writeNpy(path, viewOf(t), error)) << error;
  MappedTensor m;
  ASSERT_TRUE(mapNpy(path, m, error)) << error;
  EXPECT_EQ(m.dtype, t.dtype);
  EXPECT_EQ(m.shape, t.shape);
  ASSERT_EQ(m.bytes, t.bytes.size());
  ASSERT_TRUE(m.file);
  // The data lies inside the mapping, after the .npy header.
  EXPECT_GT(m.data, m.file->data());
  EXPECT_LE(m.data + m.bytes, m.file->data() + m.file->size());
  EXPECT_EQ(std::string(m.data, m.bytes), t.bytes);
  // Released pages read back from the file.
  m.file->release(0, m.file->size());
  EXPECT_EQ(std::string(m.data, m.bytes), t.bytes);
  unlink(path.c_str());
  EXPECT_FALSE(mapNpy(path, m, error));
  EXPECT_NE(error.find("cannot open '" + path + "'"), std::string::npos)
      << error;
}

TEST(TensorFiles, MappedFileRefusesDirectoriesAndMapsEmptyFiles) {
  MappedFile f;
  std::string error;
  EXPECT_FALSE(f.open(::testing::TempDir(), error, "data"));
  EXPECT_NE(error.find("cannot map data"), std::string::npos) << error;
  std::string path = tempPath("empty");
  ASSERT_TRUE(writeFileAtomically(path, "", error)) << error;
  ASSERT_TRUE(f.open(path, error)) << error;
  EXPECT_EQ(f.size(), 0u);
  f.release(0, 100); // nothing mapped: no effect
  unlink(path.c_str());
}

TEST(TensorFiles, TensorProtoRoundTrip) {
  HostTensor t = f32Tensor({4}, {0.5f, -1, 2, 8});
  std::string path = tempPath("a.pb"), error, name;
  ASSERT_TRUE(writeTensorProto(path, "x", viewOf(t), error)) << error;
  HostTensor back;
  ASSERT_TRUE(readTensorProto(path, name, back, error)) << error;
  EXPECT_EQ(name, "x");
  EXPECT_EQ(back.shape, t.shape);
  EXPECT_EQ(back.bytes, t.bytes);
  EXPECT_GT(tensorProtoBytes("x", viewOf(t)).size(), t.bytes.size());
  unlink(path.c_str());
}

TEST(TensorFiles, Bf16IsWrittenAsFloat32) {
  HostTensor f = f32Tensor({3}, {1.0f, -2.5f, 1.00390625f});
  HostTensor bf16;
  std::string error;
  ASSERT_TRUE(convertBf16(viewOf(f), bf16, error)) << error;
  EXPECT_EQ(bf16.dtype, loom::dtypes::kBF16);
  ASSERT_EQ(bf16.bytes.size(), 6u);
  uint16_t last;
  std::memcpy(&last, bf16.bytes.data() + 4, 2);
  EXPECT_EQ(last, 0x3f80); // 1 + 2^-8 rounds to nearest even: 1.0
  std::string path = tempPath("bf16.npy");
  ASSERT_TRUE(writeNpy(path, viewOf(bf16), error)) << error;
  HostTensor back;
  ASSERT_TRUE(readNpy(path, back, error)) << error;
  EXPECT_EQ(back.dtype, loom::dtypes::kF32);
  HostTensor want = f32Tensor({3}, {1.0f, -2.5f, 1.0f});
  EXPECT_EQ(back.bytes, want.bytes);
  unlink(path.c_str());
}

TEST(TensorFiles, DataThatDoesNotFitTheShapeIsRefused) {
  HostTensor t = f32Tensor({2, 2}, {1, 2, 3, 4});
  std::string path = tempPath("short.npy"), error, bytes;
  ASSERT_TRUE(writeNpy(path, viewOf(t), error)) << error;
  ASSERT_TRUE(readFile(path, bytes, error)) << error;
  bytes.resize(bytes.size() - 4);
  ASSERT_TRUE(writeFileAtomically(path, bytes, error)) << error;
  HostTensor back;
  EXPECT_FALSE(readNpy(path, back, error));
  EXPECT_NE(error.find("holds 12 data bytes, its shape needs 16"),
            std::string::npos)
      << error;
  EXPECT_FALSE(convertBf16(TensorView{loom::dtypes::kI32, nullptr, 0, nullptr},
                           back, error));
  EXPECT_EQ(error, "cannot convert a i32 tensor to or from bf16");
  unlink(path.c_str());
}

} // namespace

// ONNX SequenceProto and OptionalProto files (sequence and optional graph
// inputs and outputs): read back what writeSequenceProto wrote, tell a
// TensorProto apart, and refuse a sequence of mixed element types.
namespace {

TEST(TensorFiles, SequenceProtoRoundTrip) {
  HostTensor a = f32Tensor({2}, {1, 2}), b = f32Tensor({1, 3}, {3, 4, 5});
  std::string path = tempPath("seq.pb"), error;
  ASSERT_TRUE(writeSequenceProto(path, "s", {viewOf(a), viewOf(b)}, error))
      << error;
  ValueProto v;
  bool isValue = false;
  ASSERT_TRUE(readValueProto(path, v, isValue, error)) << error;
  ASSERT_TRUE(isValue);
  EXPECT_EQ(v.name, "s");
  EXPECT_EQ(v.elemType, 1);
  EXPECT_FALSE(v.nested);
  ASSERT_EQ(v.tensors.size(), 2u);
  EXPECT_EQ(v.tensors[0].shape, a.shape);
  EXPECT_EQ(v.tensors[0].bytes, a.bytes);
  EXPECT_EQ(v.tensors[1].shape, b.shape);
  EXPECT_EQ(v.tensors[1].bytes, b.bytes);
  unlink(path.c_str());
}

TEST(TensorFiles, TensorProtoIsNotASequence) {
  std::string error;
  for (const char *name : {"x", ""}) {
    HostTensor t = f32Tensor({}, {7});
    std::string path = tempPath("t.pb");
    ASSERT_TRUE(writeTensorProto(path, name, viewOf(t), error)) << error;
    ValueProto v;
    bool isValue = true;
    ASSERT_TRUE(readValueProto(path, v, isValue, error)) << error;
    EXPECT_FALSE(isValue) << "name '" << name << "'";
    unlink(path.c_str());
  }
}

TEST(TensorFiles, EmptyOptionalAndMixedTypes) {
  std::string path = tempPath("opt.pb"), error;
  // An OptionalProto holding nothing: its name (field 1) alone.
  ASSERT_TRUE(writeFileAtomically(path, std::string("\x0a\x01o", 3), error));
  ValueProto v;
  bool isValue = false;
  ASSERT_TRUE(readValueProto(path, v, isValue, error)) << error;
  EXPECT_TRUE(isValue);
  EXPECT_EQ(v.name, "o");
  EXPECT_TRUE(v.tensors.empty());
  HostTensor f = f32Tensor({1}, {1});
  HostTensor i;
  i.dtype = loom::dtypes::kI64;
  i.shape = {1};
  i.bytes.assign(8, '\0');
  ASSERT_TRUE(writeSequenceProto(path, "m", {viewOf(f), viewOf(i)}, error));
  EXPECT_FALSE(readValueProto(path, v, isValue, error));
  EXPECT_NE(error.find("('m') mixes element types: element 1 has data type 7, "
                       "element 0 1"),
            std::string::npos)
      << error;
  unlink(path.c_str());
}

} // namespace
