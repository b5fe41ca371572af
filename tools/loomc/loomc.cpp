//===- loomc.cpp - the Loom compiler driver -------------------------------===//
//
//   loomc import|export|compile|train|schedule [MODEL] [-o OUT] [options]
//
// The command line over compiler/Driver.h: the commands and their options
// are the driver's table, which `loomc SUB --help` prints (LLVM's own
// options only under `loomc --help-hidden`). An option of another command
// is refused naming the commands that take it. Errors go to stderr, one
// "error: ..." line each, and the exit code is 1. README.md and
// docs/status.md describe the commands.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver.h"
#include "compiler/InitAll.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;
using namespace mlir;
using llvm::StringRef;
using namespace loom::driver;

static int exitError(const llvm::Twine &message) {
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

/// `loomc --help`: the commands.
static void printOverview(llvm::raw_ostream &os) {
  os << "loomc: the Loom compiler (README.md, docs/status.md)\n\n"
     << "usage: loomc <command> [options]; loomc <command> --help lists its "
        "options\n\ncommands:\n";
  for (const CommandInfo &c : commands())
    os << llvm::format("  %-10s", c.name) << c.summary << "\n";
  os << "\nloomc --help-hidden lists LLVM's own options as well.\n";
}

/// `loomc SUB --help`: the command's options by category; `hidden` adds
/// the ones only --help-hidden shows.
static void printHelp(const CommandInfo &c, bool hidden,
                      llvm::raw_ostream &os) {
  os << "loomc " << c.name << ": " << c.summary << "\n\nusage: loomc " << c.name
     << (*c.usage ? " " : "") << c.usage << " [options]\n"
     << "examples:\n";
  llvm::SmallVector<StringRef> lines;
  StringRef(c.examples).split(lines, '\n');
  for (StringRef line : lines)
    os << "  " << line << "\n";
  auto spelled = [](const OptionInfo &o) {
    std::string s =
        (StringRef(o.name).size() == 1 ? "-" : "--") + std::string(o.name);
    if (o.valueName)
      s += (s.size() == 2 ? " " : "=") + std::string(o.valueName);
    return s;
  };
  size_t width = 0, left = 0;
  for (const OptionInfo &o : options())
    if (o.commands & c.command)
      width = std::max(width, spelled(o).size());
  width = std::min<size_t>(width, 31);
  StringRef category;
  for (const OptionInfo &o : options()) {
    if (!(o.commands & c.command))
      continue;
    if (o.hidden && !hidden) {
      ++left;
      continue;
    }
    if (category != o.category)
      os << (category = o.category) << ":\n";
    std::string name = spelled(o);
    os << "  " << name;
    if (name.size() > width)
      os << "\n  " << std::string(width, ' ');
    else
      os << std::string(width - name.size(), ' ');
    os << "  " << o.help << (o.repeats ? " (repeats)" : "") << "\n";
  }
  if (left)
    os << "(" << left << " more under loomc " << c.name << " --help-hidden)\n";
}

/// Parses argv[2..] into `options`; the arguments LLVM takes (its own
/// options, which the driver does not know) go to `llvmArgs`. Returns
/// false after printing an error, or after the help (`exitCode` 0).
static bool parseArguments(int argc, char **argv, const CommandInfo &c,
                           DriverOptions &options,
                           std::vector<const char *> &llvmArgs, int &exitCode) {
  exitCode = 1;
  bool help = false, hidden = false;
  for (int i = 2; i < argc; ++i) {
    StringRef arg = argv[i];
    if (arg == "-h" || arg == "-help" || arg == "--help") {
      help = true;
      continue;
    }
    if (arg == "-help-hidden" || arg == "--help-hidden") {
      help = hidden = true;
      continue;
    }
    if (!arg.starts_with("-") || arg == "-") {
      if (!options.input.empty())
        return exitError("loomc " + llvm::Twine(c.name) +
                         " takes one model; '" + arg + "' is a second"),
               false;
      options.input = arg.str();
      continue;
    }
    auto [name, value] =
        arg.drop_while([](char ch) { return ch == '-'; }).split('=');
    bool hasValue = arg.contains('=');
    const OptionInfo *option = findOption(name);
    if (!option && cl::getRegisteredOptions().count(name)) {
      llvmArgs.push_back(argv[i]);
      continue;
    }
    if (option && option->valueName && !hasValue) {
      if (i + 1 == argc)
        return exitError(arg + " needs a value " + option->valueName), false;
      value = argv[++i];
    }
    if (llvm::Error e = setOption(options, c.command, name, value))
      return exitError(llvm::toString(std::move(e))), false;
  }
  if (help) {
    printHelp(c, hidden, llvm::outs());
    exitCode = 0;
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  StringRef first = argc > 1 ? argv[1] : "";
  if (first.empty() || first == "-h" || first == "-help" || first == "--help") {
    printOverview(first.empty() ? llvm::errs() : llvm::outs());
    return first.empty();
  }
  if (first.starts_with("-")) {
    // --help-hidden, --version and LLVM's other options of the tool.
    cl::ParseCommandLineOptions(argc, argv, "Loom compiler driver\n");
    return exitError("loomc needs a command first (loomc --help lists them)");
  }
  const CommandInfo *command = findCommand(first);
  if (!command) {
    std::string names;
    for (const CommandInfo &c : commands())
      names += (names.empty() ? "" : ", ") + std::string(c.name);
    return exitError("unknown command '" + first + "' (available: " + names +
                     ")");
  }
  DriverOptions options;
  std::vector<const char *> llvmArgs = {argv[0]};
  int exitCode = 0;
  if (!parseArguments(argc, argv, *command, options, llvmArgs, exitCode))
    return exitCode;
  if (llvmArgs.size() > 1) {
    // LLVM's own options may change the code but are not in the compile
    // cache's key: such a compile bypasses the cache.
    options.noCache = true;
    cl::ParseCommandLineOptions(llvmArgs.size(), llvmArgs.data(),
                                "Loom compiler driver\n");
  }

  DialectRegistry registry;
  loom::registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  loom::registerAllPasses();
  // Diagnostics: one "[file: ]error: message" line each on stderr. The
  // messages name the ONNX node themselves.
  ScopedDiagnosticHandler handler(&ctx, [](Diagnostic &diag) {
    if (auto file = dyn_cast<FileLineColLoc>(diag.getLocation()))
      llvm::errs() << file.getFilename().getValue() << ": ";
    StringRef severity =
        diag.getSeverity() == DiagnosticSeverity::Error     ? "error: "
        : diag.getSeverity() == DiagnosticSeverity::Warning ? "warning: "
                                                            : "note: ";
    llvm::errs() << severity << diag.str() << "\n";
    return success();
  });
  if (llvm::Error e = run(command->command, options, ctx)) {
    std::string message = llvm::toString(std::move(e));
    return message.empty() ? 1 : exitError(message);
  }
  return 0;
}
