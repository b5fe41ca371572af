//===- InitAll.h - register Loom's dialects and passes ----------*- C++ -*-===//
//
// The one place that lists what Loom's tools register, so loom-opt, loomc
// and the tests agree on the dialects and passes they know.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_INITALL_H
#define LOOM_COMPILER_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace loom {

/// Adds Loom's dialects and the upstream dialects its pipelines use.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers Loom's passes and the upstream passes its pipelines use, so
/// that they can be named on the command line (`--canonicalize`, ...).
void registerAllPasses();

} // namespace loom

#endif // LOOM_COMPILER_INITALL_H
