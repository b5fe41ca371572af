//===- MappedWeights.h - the artifacts' mapped bytes, process-wide -*- C++
//-*-===//
//
// Weights are read in place from their artifact's mapped file. A kernel
// that keeps a weight in a layout of its own (a packed GEMM rhs, a
// reordered convolution filter) gives the weight's pages back through
// releaseMappedWeight; only pages of a file mapped by a live session are
// touched (a weight copied into memory is left alone).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_MAPPEDWEIGHTS_H
#define LOOM_RUNTIME_MAPPEDWEIGHTS_H

#include <cstddef>

namespace loom::files {
class MappedFile;
}

namespace loom::runtime {

/// `file` (read-only, private) holds weights read in place until
/// unregisterMappedFile.
void registerMappedFile(const files::MappedFile *file);
void unregisterMappedFile(const files::MappedFile *file);

/// Drops the pages of [data, data + bytes) from this process's memory
/// when the range lies in a registered file (they read back from the file
/// if touched again); anything else is left alone.
void releaseMappedWeight(const void *data, size_t bytes);

} // namespace loom::runtime

#endif // LOOM_RUNTIME_MAPPEDWEIGHTS_H
