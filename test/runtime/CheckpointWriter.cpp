//===- CheckpointWriter.cpp - trains and saves until it is killed ---------===//
//
// The writer of the kill-during-save test (test/runtime/checkpoint-kill.py):
//
//   loom-ckpt-writer TRAIN.loom CKPT          step, save to CKPT, print
//                                              "saved K" (K the micro-step
//                                              counter in the file); forever
//   loom-ckpt-writer TRAIN.loom CKPT --check   load CKPT, print "loaded K"
//
// Batches are made up (every batch input filled with a fixed pattern), so
// the artifact may be any training artifact with static batch shapes but
// the batch dim, which is taken as 4.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

static int fail(const char *what, loom_status status) {
  std::fprintf(stderr, "loom-ckpt-writer: %s: %s\n", what,
               loom_status_message(status));
  loom_status_free(status);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 3 || (argc == 4 && std::strcmp(argv[3], "--check") != 0) ||
      argc > 4) {
    std::fprintf(stderr, "usage: loom-ckpt-writer TRAIN.loom CKPT [--check]\n");
    return 2;
  }
  bool check = argc == 4;
  loom_instance *instance = nullptr;
  loom_session *session = nullptr;
  loom_trainer *trainer = nullptr;
  if (loom_status s = loom_instance_create(nullptr, &instance))
    return fail("instance", s);
  if (loom_status s =
          loom_session_create_from_file(instance, argv[1], &session))
    return fail("session", s);
  if (loom_status s = loom_trainer_create(session, &trainer))
    return fail("trainer", s);
  if (check) {
    loom_status s = loom_trainer_load(trainer, argv[2]);
    if (!s)
      std::printf("loaded %lld\n",
                  static_cast<long long>(loom_trainer_micro_step(trainer)));
    // Released: the sanitizer run (scripts/sanitize.sh) checks for leaks.
    loom_trainer_release(trainer);
    loom_session_release(session);
    loom_instance_release(instance);
    return s ? fail("load", s) : 0;
  }
  if (loom_trainer_total_steps(trainer) == 0)
    if (loom_status s = loom_trainer_set_total_steps(trainer, 1 << 30))
      return fail("horizon", s);
  std::vector<loom_tensor *> batch;
  for (size_t i = 0; i < loom_trainer_batch_input_count(trainer); ++i) {
    loom_tensor_info info;
    if (loom_status s = loom_trainer_batch_input_info(trainer, i, &info))
      return fail("batch input", s);
    std::vector<int64_t> dims(info.dims, info.dims + info.rank);
    for (int64_t &d : dims)
      d = d < 0 ? 4 : d;
    loom_tensor *t = nullptr;
    if (loom_status s =
            loom_tensor_create(info.dtype, dims.size(), dims.data(), &t))
      return fail("batch tensor", s);
    size_t count = 1;
    for (int64_t d : dims)
      count *= static_cast<size_t>(d);
    unsigned char *data = static_cast<unsigned char *>(loom_tensor_data(t));
    size_t bytes = count * loom_dtype_size(info.dtype);
    for (size_t b = 0; b < bytes; ++b)
      data[b] = info.dtype == LOOM_DTYPE_F32 ? (b % 4 == 3 ? 0x3f : 0) : 0;
    batch.push_back(t);
  }
  for (;;) {
    if (loom_status s =
            loom_trainer_step(trainer, batch.data(), batch.size(), nullptr))
      return fail("step", s);
    if (loom_status s = loom_trainer_save(trainer, argv[2]))
      return fail("save", s);
    std::printf("saved %lld\n",
                static_cast<long long>(loom_trainer_micro_step(trainer)));
    std::fflush(stdout);
  }
}
