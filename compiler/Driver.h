//===- Driver.h - loomc's commands and options as a library -----*- C++ -*-===//
//
// The commands of `loomc` (import, export, compile, train, schedule) and
// every option they take, as one table shared by the command line
// (tools/loomc) and the Python module (python/): an option has its name,
// the commands that take it, a category and a line of help, and sets one
// field of DriverOptions from its text. `run` carries a command out with
// the library (compiler/Compile.h, Training.h, PipelineParallel.h,
// ExportTrained.h, frontends/onnx).
//
// Errors: what the compiler finds is reported as diagnostics on the
// context; `run` and `setOption` return an llvm::Error whose message is
// the rest ("" when the diagnostics said it all).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_DRIVER_H
#define LOOM_COMPILER_DRIVER_H

#include "compiler/Compile.h"
#include "compiler/Pipelines.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <utility>
#include <vector>

namespace loom::driver {

/// The commands, as bits (an option lists the commands that take it).
enum Command : unsigned {
  Import = 1u << 0,
  Export = 1u << 1,
  Compile = 1u << 2,
  Train = 1u << 3,
  Schedule = 1u << 4,
  Quantize = 1u << 5,
};

struct CommandInfo {
  Command command;
  const char *name;
  /// One line: what the command does.
  const char *summary;
  /// After "loomc NAME": the positional arguments ("<model> -o <out>").
  const char *usage;
  /// A few lines of examples, each a whole command line.
  const char *examples;
};

llvm::ArrayRef<CommandInfo> commands();
/// The entry of `command`.
const CommandInfo &commandInfo(Command command);
/// The command named `name`, or null.
const CommandInfo *findCommand(llvm::StringRef name);
/// "compile and train": the names of the commands in `commands`.
std::string commandNames(unsigned commands);

/// Every option's value. The defaults are the commands' defaults.
struct DriverOptions {
  /// The model (or artifact): the commands' positional argument.
  std::string input;
  /// -o; "-" is stdout (import only).
  std::string output = "-";
  /// --target, --func, --cpu, --opt-level, the fusion reports, --timing.
  CompileOptions codegen;
  std::string emit = "artifact";
  std::string archs;
  std::string fusedAttention = "auto";
  bool allowTf32 = false;
  /// --bind NAME=FILE and --dim NAME=SIZE, as given.
  std::vector<std::string> binds, dims;
  /// --seq-len NAME=N, --absent NAME and --input-shape NAME=SHAPE, as
  /// given (sequence and optional graph inputs, ONNX's ImportOptions).
  std::vector<std::string> seqLens, absent, inputShapes;
  int64_t batch = 0;
  int64_t maxNodes = 1000000;
  std::string maxTensorBytes = "8GiB";
  bool printMemoryPlan = false, printSummary = false, printIR = false;
  bool noInitialValues = false;
  std::string checkpoint, report;
  /// loomc quantize: --mode, --per-channel, --exclude; static mode's
  /// --calibration, --method and --percentile.
  std::string quantizeMode = "dynamic";
  bool perChannel = false;
  std::string exclude;
  std::string calibration, calibrationMethod = "minmax";
  double percentile = 99.999;
  /// loomc schedule.
  std::string costs;
  bool printTimeline = false;
  /// loomc train.
  TrainingOptions train;
  TrainingOptionsText trainText;
  std::vector<std::string> deprecatedSchedule;
  bool pipelineStagesGiven = false;
  /// loomc export and quantize: --external-data (auto, always, never).
  std::string externalData = "auto";
  /// The compile cache of compile and train (compiler/CompileCache.h):
  /// --cache-dir (empty: LOOM_CACHE_DIR or the default), --no-cache.
  std::string cacheDir;
  bool noCache = false;
  /// Every option setOption took, (name, value) in order: what the compile
  /// cache keys on.
  std::vector<std::pair<std::string, std::string>> given;
};

struct OptionInfo {
  const char *name;
  /// How the value is shown in help ("<float>"); null for a flag, which
  /// takes no value (or "true"/"false" after '=').
  const char *valueName;
  const char *help;
  const char *category;
  /// The commands that take it (Command bits).
  unsigned commands;
  /// Listed only by --help-hidden.
  bool hidden;
  /// May be given more than once; each value is kept.
  bool repeats;
  llvm::Error (*set)(DriverOptions &options, llvm::StringRef value);
};

/// The table, in help order: options of one category are together.
llvm::ArrayRef<OptionInfo> options();
/// The option named `name` (without dashes), or null.
const OptionInfo *findOption(llvm::StringRef name);

/// Sets option `name` of `command` from `value` ("" for a flag given
/// alone). An option of other commands is refused naming them, an unknown
/// one naming the command's help.
llvm::Error setOption(DriverOptions &options, Command command,
                      llvm::StringRef name, llvm::StringRef value);

/// Carries out `command`: files in, files out, as loomc does. The context
/// must have loom's dialects (registerAllDialects) loaded.
llvm::Error run(Command command, DriverOptions &options,
                mlir::MLIRContext &ctx);

} // namespace loom::driver

#endif // LOOM_COMPILER_DRIVER_H
