//===- OptionsTest.cpp - the API version and growable options structs -----===//
//
// loom_runtime_api_version answers the header's version; every options
// struct opens with struct_size, set by its *_initialize; a create call
// refuses a struct that was not initialized (struct_size 0 or below the
// first versioned layout) with LOOM_INVALID_ARGUMENT naming the struct.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace {

TEST(OptionsTest, ApiVersionIsTheHeaders) {
  EXPECT_EQ(loom_runtime_api_version(), uint32_t(LOOM_RUNTIME_API_VERSION));
  EXPECT_GE(loom_runtime_api_version(), 4u);
}

TEST(OptionsTest, InitializeSetsStructSize) {
  loom_instance_options instance;
  std::memset(&instance, 0xff, sizeof(instance));
  loom_instance_options_initialize(&instance);
  EXPECT_EQ(instance.struct_size, sizeof(loom_instance_options));
  EXPECT_EQ(instance.num_threads, 0);
  EXPECT_EQ(instance.device, LOOM_DEVICE_AUTO);

  loom_communicator_options comm;
  std::memset(&comm, 0xff, sizeof(comm));
  loom_communicator_options_initialize(&comm);
  EXPECT_EQ(comm.struct_size, sizeof(loom_communicator_options));
  EXPECT_EQ(comm.timeout_seconds, 0.0);
  EXPECT_EQ(comm.backend, nullptr);
}

/// The status's code and message, freed.
std::pair<loom_status_code, std::string> take(loom_status s) {
  std::pair<loom_status_code, std::string> r{loom_status_get_code(s),
                                             loom_status_message(s)};
  loom_status_free(s);
  return r;
}

TEST(OptionsTest, InstanceRefusesUninitializedOptions) {
  loom_instance_options options;
  loom_instance_options_initialize(&options);
  loom_instance *instance = nullptr;
  ASSERT_EQ(loom_instance_create(&options, &instance), nullptr);
  loom_instance_release(instance);
  ASSERT_EQ(loom_instance_create(nullptr, &instance), nullptr);
  loom_instance_release(instance);

  for (size_t size : {size_t(0), sizeof(size_t), sizeof(options) / 2}) {
    options.struct_size = size;
    instance = nullptr;
    auto [code, message] = take(loom_instance_create(&options, &instance));
    EXPECT_EQ(code, LOOM_INVALID_ARGUMENT) << size;
    EXPECT_NE(message.find("loom_instance_options.struct_size is " +
                           std::to_string(size)),
              std::string::npos)
        << message;
    EXPECT_EQ(instance, nullptr);
  }
}

TEST(OptionsTest, LargerStructFromANewerCallerIsRead) {
  // A caller compiled against a later header (fields past ours): the
  // fields we know are read, the rest ignored.
  struct Newer {
    loom_instance_options known;
    int64_t later;
  } newer;
  loom_instance_options_initialize(&newer.known);
  newer.known.struct_size = sizeof(Newer);
  newer.known.num_threads = -1; // read: refused
  newer.later = 42;
  loom_instance *instance = nullptr;
  auto [code, message] = take(loom_instance_create(&newer.known, &instance));
  EXPECT_EQ(code, LOOM_INVALID_ARGUMENT);
  EXPECT_NE(message.find("num_threads"), std::string::npos) << message;
}

TEST(OptionsTest, CommunicatorRefusesUninitializedOptions) {
  loom_communicator_options options;
  loom_communicator_options_initialize(&options);
  options.struct_size = 0;
  loom_communicator *comm = nullptr;
  auto [code, message] =
      take(loom_communicator_create(0, 1, "127.0.0.1", 0, &options, &comm));
  EXPECT_EQ(code, LOOM_INVALID_ARGUMENT);
  EXPECT_NE(message.find("loom_communicator_options.struct_size is 0"),
            std::string::npos)
      << message;
  EXPECT_EQ(comm, nullptr);
}

} // namespace
