//===- FuzzArtifact.cpp - libFuzzer target: the artifact loader -----------===//
//
// Feeds bytes to loom::artifact::parse, the loader loom_session_create_*
// runs before it trusts anything in a file: as they are, and behind a
// fresh header (FuzzHeader.h). An artifact that parses then has its
// weights and signatures read the way the session reads them. The CPU
// code itself (a shared object handed to dlopen) is not fuzzed: an
// artifact is code, see docs/hardening.md.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzHeader.h"

using namespace loom::artifact;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Limits limits = loom::fuzz::fuzzLimits();
  loom::fuzz::checkBothWays(
      data, size, kArtifactFile, [&](const char *bytes, size_t n) {
        Artifact a;
        std::string error;
        if (!parse(bytes, n, a, error, limits))
          return loom::fuzz::requireReason(error);
        // What the session does with a parsed artifact: every weight's
        // bytes a whole number of elements within the limit, every
        // signature's dims readable.
        for (const Weight &w : a.weights()) {
          size_t elem = dtypeSize(w.dtype());
          if (elem == 0 || w.data().size() % elem != 0 ||
              w.data().size() > limits.maxTensorBytes)
            std::abort();
          (void)typeString(w.dtype(), w.dims().data(),
                           static_cast<size_t>(w.dims_size()));
        }
        for (const TensorSignature &s : a.inputs())
          for (const Dim &d : s.dims())
            (void)d.symbol().size();
      });
  return 0;
}
