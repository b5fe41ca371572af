//===- LlvmBackend.cpp - LLVM IR to objects, on every core ----------------===//
//
// Three steps, each for compile time at scale (GPT-2 small's training step
// is ~2300 kernels, 1570 of them outlined parallel loop nests):
//
// 1. Every function but the exported one becomes internal, with an
//    address nobody compares, and functions identical up to their names
//    are merged to a fixed point. Twelve identical layers give twelve
//    identical loop nests, each with its C interface, trampoline and
//    dispatcher (ParallelLoops.cpp); merged, each is optimized and
//    compiled once (GPT-2 small's step: 1570 nests, 76 distinct), and
//    internal, the inliner folds a nest's wrappers into one copy.
// 2. The module is cut into parts along its call graph: the glue (the
//    graph's function, its C interface and the exported entry) and the
//    groups of functions that reference each other, spread over the parts
//    by size; small functions that several groups call (the wrappers of
//    runtime calls) are copied into each part. A function one part defines
//    and another calls gets hidden external linkage, and the linker joins
//    the objects.
// 3. Each part is optimized and compiled on its own thread, in its own
//    LLVMContext (parsed from bitcode) with its own target machine. The
//    glue is compiled as at -O0 (fast instruction selection, no machine
//    scheduling): it is a straight line of calls whose blocks hold
//    thousands of instructions, and the selection DAG costs more than
//    linear time in a block's size.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cpu/LlvmBackend.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassTimingInfo.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <chrono>
#include <optional>
#include <thread>

using namespace llvm;

namespace loom::codegen {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

unsigned definedFunctions(const Module &module) {
  unsigned n = 0;
  for (const Function &f : module)
    n += !f.isDeclaration();
  return n;
}

/// Step 1; returns the number of functions merged away.
unsigned shareIdenticalFunctions(Module &module, StringRef exported) {
  for (Function &f : module) {
    if (f.isDeclaration() || f.getName() == exported)
      continue;
    f.setLinkage(GlobalValue::InternalLinkage);
    f.setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
  }
  unsigned before = definedFunctions(module), now = before;
  // Each round merges the callers the last round made identical (the C
  // interfaces of merged bodies, then their trampolines, then the
  // dispatchers); a few rounds reach the fixed point.
  for (int round = 0; round < 8; ++round) {
    ModuleAnalysisManager analyses;
    MergeFunctionsPass().run(module, analyses);
    unsigned after = definedFunctions(module);
    if (after == now)
      break;
    now = after;
  }
  return before - now;
}

bool isGlue(const Function &f, const LlvmBackendOptions &options) {
  StringRef name = f.getName();
  return name == options.entry || name == options.exported ||
         (name.consume_front("_mlir_ciface_") && name == options.entry);
}

/// Each defined function's part; small functions that several others call
/// are in every part.
struct Partition {
  unsigned parts = 1;
  DenseMap<const Function *, unsigned> partOf;
  DenseSet<const Function *> everywhere;
};

/// The functions whose instructions use `f` (nullptr: a use outside any
/// function, such as a global's initializer).
SmallPtrSet<const Function *, 4> usersOf(const Function &f) {
  SmallPtrSet<const Function *, 4> users;
  for (const User *user : f.users()) {
    if (auto *inst = dyn_cast<Instruction>(user))
      users.insert(inst->getFunction());
    else
      users.insert(nullptr);
  }
  return users;
}

/// Step 2's plan: std::nullopt when one part will do.
std::optional<Partition>
partition(Module &module, const LlvmBackendOptions &options, unsigned wanted) {
  if (wanted < 2 || !module.alias_empty() || !module.ifunc_empty())
    return std::nullopt;
  Partition plan;
  for (const Function &f : module) {
    if (f.isDeclaration() || isGlue(f, options))
      continue;
    auto users = usersOf(f);
    if (f.getInstructionCount() <= 64 && users.size() > 1 &&
        !users.count(nullptr) && f.hasLocalLinkage())
      plan.everywhere.insert(&f);
  }
  auto grouped = [&](const Function *f) {
    return f && !f->isDeclaration() && !isGlue(*f, options) &&
           !plan.everywhere.count(f);
  };
  EquivalenceClasses<const Function *> groups;
  for (const Function &f : module) {
    if (!grouped(&f))
      continue;
    groups.insert(&f);
    for (const BasicBlock &block : f)
      for (const Instruction &inst : block)
        for (const Value *operand : inst.operands())
          if (auto *callee = dyn_cast<Function>(operand->stripPointerCasts()))
            if (grouped(callee))
              groups.unionSets(&f, callee);
  }
  // The groups, largest first, each to the least loaded part. The glue
  // counts a quarter of its size: it is compiled without optimizations.
  struct Group {
    SmallVector<const Function *> members;
    uint64_t size = 0;
  };
  SmallVector<Group> list;
  Group glue;
  for (const Function &f : module)
    if (!f.isDeclaration() && isGlue(f, options)) {
      glue.members.push_back(&f);
      glue.size += f.getInstructionCount() / 4 + 1;
    }
  if (!glue.members.empty())
    list.push_back(std::move(glue));
  // In the module's order (the classes' own order is by address, which
  // differs from run to run): the same module always splits the same way.
  MapVector<const Function *, Group> byLeader;
  for (const Function &f : module) {
    if (!grouped(&f))
      continue;
    Group &group = byLeader[groups.getLeaderValue(&f)];
    group.members.push_back(&f);
    group.size += f.getInstructionCount() + 1;
  }
  for (auto &entry : byLeader)
    list.push_back(std::move(entry.second));
  if (list.size() < 2)
    return std::nullopt;
  llvm::stable_sort(
      list, [](const Group &a, const Group &b) { return a.size > b.size; });
  plan.parts = std::min<unsigned>(wanted, list.size());
  SmallVector<uint64_t> load(plan.parts, 0);
  for (const Group &group : list) {
    unsigned part = std::min_element(load.begin(), load.end()) - load.begin();
    load[part] += group.size;
    for (const Function *f : group.members)
      plan.partOf[f] = part;
  }
  return plan;
}

/// Gives what one part defines and another uses hidden external linkage.
void exposeAcrossParts(Module &module, const Partition &plan) {
  for (Function &f : module) {
    if (f.isDeclaration() || !f.hasLocalLinkage() || plan.everywhere.count(&f))
      continue;
    unsigned part = plan.partOf.lookup(&f);
    bool crosses = false;
    for (const Function *user : usersOf(f))
      crosses |= !user || plan.everywhere.count(user) ||
                 plan.partOf.lookup(user) != part;
    if (!crosses)
      continue;
    f.setLinkage(GlobalValue::ExternalLinkage);
    f.setVisibility(GlobalValue::HiddenVisibility);
  }
  // Constants are copied into every part; a variable lives in part 0.
  for (GlobalVariable &var : module.globals()) {
    if (var.isDeclaration() || (var.isConstant() && var.hasLocalLinkage()))
      continue;
    if (var.hasLocalLinkage()) {
      var.setLinkage(GlobalValue::ExternalLinkage);
      var.setVisibility(GlobalValue::HiddenVisibility);
    }
  }
}

bool definedIn(const GlobalValue *value, const Partition &plan, unsigned part) {
  if (auto *f = dyn_cast<Function>(value))
    return plan.everywhere.count(f) || plan.partOf.lookup(f) == part;
  if (auto *var = dyn_cast<GlobalVariable>(value))
    return (var->isConstant() && var->hasLocalLinkage()) || part == 0;
  return part == 0;
}

Expected<std::unique_ptr<TargetMachine>>
makeMachine(const LlvmBackendOptions &options) {
  std::string error;
  const Target *target = TargetRegistry::lookupTarget(options.triple, error);
  if (!target)
    return createStringError(inconvertibleErrorCode(), error);
  std::unique_ptr<TargetMachine> machine(target->createTargetMachine(
      options.triple, options.cpu, options.features, TargetOptions(),
      Reloc::PIC_, std::nullopt, CodeGenOptLevel::Aggressive));
  if (!machine)
    return createStringError(inconvertibleErrorCode(),
                             "no target machine for CPU '" + options.cpu + "'");
  return machine;
}

void optimize(Module &module, TargetMachine &machine, unsigned level) {
  LoopAnalysisManager loops;
  FunctionAnalysisManager functions;
  CGSCCAnalysisManager sccs;
  ModuleAnalysisManager modules;
  PipelineTuningOptions tuning;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  OptimizationLevel ol = level == 0   ? OptimizationLevel::O0
                         : level == 1 ? OptimizationLevel::O1
                         : level == 2 ? OptimizationLevel::O2
                                      : OptimizationLevel::O3;
  ModulePassManager passes = level == 0
                                 ? builder.buildO0DefaultPipeline(ol)
                                 : builder.buildPerModuleDefaultPipeline(ol);
  passes.run(module, modules);
}

/// One part: optimize, mark the glue, compile to an object.
struct PartResult {
  std::string object;
  std::string error;
  double optimizeSeconds = 0, codegenSeconds = 0;
  unsigned functions = 0;
};

void compilePart(Module &module, const LlvmBackendOptions &options,
                 bool timePasses, PartResult &result) {
  auto machine = makeMachine(options);
  if (!machine) {
    result.error = toString(machine.takeError());
    return;
  }
  module.setDataLayout((*machine)->createDataLayout());
  module.setTargetTriple(options.triple);
  result.functions = definedFunctions(module);
  // LLVM vectorizes for 256-bit registers on AVX-512 CPUs unless told
  // otherwise (to stay out of the 512-bit frequency licence). The oneDNN
  // kernels a model calls run 512-bit anyway, so the loops between them pay
  // that licence already and take the full width: BERT's GELU and
  // requantization loops run 15-20% faster (docs/performance.md).
  if ((*machine)->getMCSubtargetInfo()->checkFeatures("+avx512f"))
    for (Function &f : module)
      if (!f.isDeclaration())
        f.addFnAttr("prefer-vector-width", "512");
  auto start = Clock::now();
  optimize(module, **machine, options.optLevel);
  result.optimizeSeconds = secondsSince(start);
  for (Function &f : module)
    if (!f.isDeclaration() && isGlue(f, options)) {
      f.removeFnAttr(Attribute::AlwaysInline);
      f.addFnAttr(Attribute::NoInline);
      f.addFnAttr(Attribute::OptimizeNone);
    }
  start = Clock::now();
  SmallString<0> object;
  {
    raw_svector_ostream os(object);
    legacy::PassManager codegen;
    if ((*machine)->addPassesToEmitFile(codegen, os, nullptr,
                                        CodeGenFileType::ObjectFile)) {
      result.error = "the target cannot emit objects";
      return;
    }
    if (timePasses)
      TimePassesIsEnabled = true;
    codegen.run(module);
  }
  result.codegenSeconds = secondsSince(start);
  result.object = std::string(object);
  if (timePasses) {
    // Printed now: left to llvm_shutdown, the report re-registers a
    // command-line option that is already gone and aborts.
    reportAndResetTimings(&errs());
    TimerGroup::printAll(errs());
    TimerGroup::clearAll();
    TimePassesIsEnabled = false;
  }
}

} // namespace

Expected<std::vector<std::string>>
compileLlvmModule(std::unique_ptr<Module> module,
                  const LlvmBackendOptions &options) {
  auto start = Clock::now();
  unsigned merged = shareIdenticalFunctions(*module, options.exported);
  unsigned threads = options.threads
                         ? options.threads
                         : hardware_concurrency().compute_thread_count();
  auto plan = partition(*module, options, threads);
  if (options.timing)
    errs() << format("  LLVM: %u functions identical to another merged away, "
                     "%u left in %u part(s): %.3f s\n",
                     merged, definedFunctions(*module), plan ? plan->parts : 1,
                     secondsSince(start));

  std::vector<PartResult> results(plan ? plan->parts : 1);
  if (!plan) {
    compilePart(*module, options, options.timing, results[0]);
  } else {
    exposeAcrossParts(*module, *plan);
    std::vector<std::string> bitcode(plan->parts);
    for (unsigned part = 0; part < plan->parts; ++part) {
      ValueToValueMapTy map;
      std::unique_ptr<Module> clone =
          CloneModule(*module, map, [&](const GlobalValue *value) {
            return definedIn(value, *plan, part);
          });
      raw_string_ostream os(bitcode[part]);
      WriteBitcodeToFile(*clone, os);
    }
    module.reset();
    if (options.timing)
      errs() << format("  LLVM: parts written as bitcode: %.3f s\n",
                       secondsSince(start));
    std::vector<std::thread> workers;
    for (unsigned part = 0; part < plan->parts; ++part)
      workers.emplace_back([&, part] {
        LLVMContext context;
        auto parsed = parseBitcodeFile(
            MemoryBufferRef(bitcode[part], "loom-part"), context);
        if (!parsed) {
          results[part].error = toString(parsed.takeError());
          return;
        }
        compilePart(**parsed, options, /*timePasses=*/false, results[part]);
      });
    for (std::thread &worker : workers)
      worker.join();
  }
  std::vector<std::string> objects;
  for (auto [part, result] : llvm::enumerate(results)) {
    if (!result.error.empty())
      return createStringError(inconvertibleErrorCode(), result.error);
    if (options.timing)
      errs() << format("  LLVM part %zu: %u functions, optimization %.3f s, "
                       "code generation %.3f s\n",
                       part, result.functions, result.optimizeSeconds,
                       result.codegenSeconds);
    objects.push_back(std::move(result.object));
  }
  if (options.timing)
    errs() << format("  LLVM in all: %.3f s\n", secondsSince(start));
  return objects;
}

} // namespace loom::codegen
