//===- MappedWeights.cpp - the artifacts' mapped bytes, process-wide ------===//

#include "runtime/src/MappedWeights.h"

#include "loom/common/FileIO.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace loom::runtime {

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<const files::MappedFile *> files;
};

Registry &registry() {
  static Registry *r = new Registry; // kernels may run at exit
  return *r;
}

} // namespace

void registerMappedFile(const files::MappedFile *file) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.files.push_back(file);
}

void unregisterMappedFile(const files::MappedFile *file) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.files.erase(std::remove(r.files.begin(), r.files.end(), file),
                r.files.end());
}

void releaseMappedWeight(const void *data, size_t bytes) {
  auto *p = static_cast<const char *>(data);
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const files::MappedFile *f : r.files)
    if (p >= f->data() && p + bytes <= f->data() + f->size()) {
      f->release(static_cast<uint64_t>(p - f->data()), bytes);
      return;
    }
}

} // namespace loom::runtime
