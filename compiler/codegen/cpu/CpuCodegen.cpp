//===- CpuCodegen.cpp - graph IR to a CPU shared object -------------------===//
//
// The one file of the CPU path that includes the upstream conversion and
// LLVM target headers (slow to compile); keep it that way.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cpu/CpuCodegen.h"

#include "compiler/codegen/cpu/CpuTransforms.h"
#include "compiler/codegen/cpu/LlvmBackend.h"
#include "passes/Conversion/Passes.h"
#include "passes/Fusion/Passes.h"
#include "passes/Quantization/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include <cstdio>

#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Pass.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;

namespace loom::codegen {

#define GEN_PASS_DEF_COPYTOLINALGPASS
#include "compiler/codegen/cpu/Passes.h.inc"

namespace {
/// memref.copy (from bufferization and buffer clones) becomes linalg.copy,
/// which lowers to loops like every other linalg op. The upstream lowering
/// of a non-contiguous memref.copy calls `memrefCopy` from MLIR's runner
/// utilities, a library the runtime does not have.
struct CopyToLinalgPass : impl::CopyToLinalgPassBase<CopyToLinalgPass> {
  void runOnOperation() override {
    getOperation().walk([](memref::CopyOp copy) {
      OpBuilder b(copy);
      b.create<linalg::CopyOp>(copy.getLoc(), copy.getSource(),
                               copy.getTarget());
      copy.erase();
    });
  }
};
} // namespace

void buildCpuLoweringPipeline(OpPassManager &pm,
                              const CpuCodegenOptions &options) {
  // f16/bf16 ops compute in f32 between casts; their data stays 16-bit.
  // (kCpuGraphPasses names what runs before fusion.)
  pm.addPass(createCpuWidenFloatsPass());
  // Matmuls of dequantized 8-bit tensors run as integer GEMMs.
  pm.addNestedPass<func::FuncOp>(createIntegerMatmulPass());
  // Convolutions of dequantized 8-bit tensors run as integer ones.
  pm.addNestedPass<func::FuncOp>(createIntegerConvPass());
  // The graph-level fusion decisions: kernel.fusion regions, each lowered
  // and fused on its own, then inlined.
  FusionPassOptions fusion;
  fusion.report = options.fusionReport;
  fusion.summary = options.printFusion;
  pm.addPass(createFusionPass(fusion));
  pm.addNestedPass<func::FuncOp>(createGraphToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  // Within each region (isolated from above, so never across one):
  // elementwise chains (and producers into reductions) become one
  // linalg.generic: one loop nest, no intermediate buffers. Not nested on
  // kernel.fusion: a body may fold away here, and only the parent can
  // then replace the region by its operands.
  pm.addPass(createCpuFusionPass());
  pm.addPass(createCpuInlineKernelsPass());
  // Folds that span former regions (reshape pairs, shared constants).
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCpuMathApproximationPass());
  // Checks of run-time shape parameters report a status, never abort.
  pm.addPass(createCpuRuntimeChecksPass());
  // Mesh collectives: started where they stand, awaited at first use.
  pm.addPass(createCpuCollectivesPass());

  // A training step's next state goes into its state arguments.
  pm.addPass(createCpuStateInPlacePass());
  bufferization::OneShotBufferizationOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.setFunctionBoundaryTypeConversion(
      bufferization::LayoutMapOption::IdentityLayoutMap);
  // A graph.loop body (scf.while) yields new tensors as its carried
  // values: each iteration's is a fresh buffer, freed by the deallocation
  // pipeline below.
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCpuDropInPlaceResultsPass());
  pm.addPass(createCpuLibraryCallsPass());
  pm.addPass(createCpuProfileHooksPass());
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addPass(createBufferizationToMemRefPass());
  pm.addPass(createCopyToLinalgPass());
  pm.addPass(createCSEPass());
  pm.addPass(createCpuMemoryPlanPass());
  pm.addPass(createExecToCpuPass());
  pm.addPass(createCpuParallelLoopsPass());
  pm.addPass(createCpuScalarAccumulatorsPass());

  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // No compiler-rt call for a 16-bit float conversion may reach LLVM.
  CpuExpandFloatCastsPassOptions floatCasts;
  floatCasts.softF16 = options.softF16;
  pm.addPass(createCpuExpandFloatCastsPass(floatCasts));
  // LLVM intrinsics first (floor, fma, sqrt, ... stay inline); what has
  // none and was not approximated calls libm.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void registerCpuCodegenDialects(DialectRegistry &registry) {
  // Shape reification of tensor ops: without it, bufferizing a tensor.pad
  // with dynamic dims sized its allocation with a memref.dim of itself.
  tensor::registerInferTypeOpInterfaceExternalModels(registry);
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

void registerCpuCodegenPipelines() {
  registerCpuPasses();
  PassPipelineRegistration<>(
      "loom-cpu-lowering",
      "graph IR to the LLVM dialect: the CPU code path of loomc compile",
      [](OpPassManager &pm) { buildCpuLoweringPipeline(pm); });
}

/// "12.5 KiB" style.
static std::string formatBytes(int64_t bytes) {
  char buf[32];
  if (bytes < 1024)
    std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(bytes));
  else if (bytes < 1024 * 1024)
    std::snprintf(buf, sizeof(buf), "%.1f KiB", bytes / 1024.0);
  else
    std::snprintf(buf, sizeof(buf), "%.1f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

/// The plan MemoryPlan.cpp recorded, for people: planned peak of the
/// static buffers against no reuse, the dynamic slots, the largest buffers.
static std::string formatMemoryPlan(DictionaryAttr plan) {
  auto intOf = [](DictionaryAttr d, StringRef key) {
    return cast<IntegerAttr>(d.get(key)).getInt();
  };
  SmallVector<DictionaryAttr> buffers;
  for (Attribute a : cast<ArrayAttr>(plan.get("buffers")))
    buffers.push_back(cast<DictionaryAttr>(a));
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "memory plan of '" << cast<StringAttr>(plan.get("function")).getValue()
     << "': " << buffers.size() << " intermediate buffers\n";
  os << "  planned peak (static-size buffers): "
     << formatBytes(intOf(plan, "arena_bytes")) << " in one arena ("
     << formatBytes(intOf(plan, "unshared_bytes")) << " without reuse)\n";
  int64_t dynamicCount = llvm::count_if(
      buffers, [&](DictionaryAttr d) { return intOf(d, "bytes") < 0; });
  os << "  dynamic-size buffers: " << dynamicCount << " in "
     << intOf(plan, "dynamic_slots")
     << " reused slots (each as large as its largest buffer at run time)\n";
  std::stable_sort(buffers.begin(), buffers.end(),
                   [&](DictionaryAttr a, DictionaryAttr b) {
                     return intOf(a, "bytes") > intOf(b, "bytes");
                   });
  os << "  largest buffers:\n";
  for (DictionaryAttr d : ArrayRef(buffers).take_front(10)) {
    int64_t bytes = intOf(d, "bytes");
    os << "    " << (bytes >= 0 ? formatBytes(bytes) : std::string("dynamic"))
       << "  " << cast<TypeAttr>(d.get("type")).getValue();
    if (intOf(d, "slot") == 0)
      os << "  arena offset " << intOf(d, "offset");
    else
      os << "  slot " << intOf(d, "slot");
    os << "  live ops " << intOf(d, "first") << "-" << intOf(d, "last")
       << cast<StringAttr>(d.get("source")).getValue() << "\n";
  }
  return out;
}

/// Adds `void loom_entry(void **args)` calling the C interface of `entry`,
/// `_mlir_ciface_<entry>(results*, in0*, in1*, ...)`: args[i] is input
/// i's descriptor, args[last] the results'.
static LogicalResult addEntryWrapper(ModuleOp module, StringRef entry,
                                     bool hasResults) {
  std::string cifaceName = ("_mlir_ciface_" + entry).str();
  auto ciface = module.lookupSymbol<LLVM::LLVMFuncOp>(cifaceName);
  if (!ciface)
    return module.emitError("CPU codegen: no C interface '")
           << cifaceName << "' after lowering";
  MLIRContext *ctx = module.getContext();
  Location loc = ciface.getLoc();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr});
  auto fn = b.create<LLVM::LLVMFuncOp>(loc, kCpuEntrySymbol, type);
  Block *block = fn.addEntryBlock(b);
  b.setInsertionPointToStart(block);
  unsigned n = ciface.getNumArguments();
  unsigned inputs = hasResults ? n - 1 : n;
  SmallVector<Value> args;
  for (unsigned i = 0; i < n; ++i) {
    // The C interface takes the results' pointer first; loom_entry last.
    int32_t slot = hasResults ? (i == 0 ? inputs : i - 1) : i;
    Value addr = b.create<LLVM::GEPOp>(loc, ptr, ptr, fn.getArgument(0),
                                       ArrayRef<LLVM::GEPArg>{slot});
    args.push_back(b.create<LLVM::LoadOp>(loc, ptr, addr));
  }
  b.create<LLVM::CallOp>(loc, ciface, args);
  b.create<LLVM::ReturnOp>(loc, ValueRange{});
  return success();
}

/// "+avx2,+fma,..." for the host's features.
static std::string hostFeatures() {
  std::string features;
  for (const auto &f : llvm::sys::getHostCPUFeatures()) {
    if (!features.empty())
      features += ",";
    features += (f.second ? "+" : "-") + f.first().str();
  }
  return features;
}

/// The compiler-rt routine for 16-bit floats (__truncsfbf2, __extendhfsf2,
/// ...) that `object` calls, if any: the runtime does not provide them, so
/// the shared object would fail to load. --loom-cpu-expand-float-casts is
/// meant to leave none.
static std::optional<std::string> halfFloatRoutine(StringRef object) {
  auto file = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(object, "loom-cpu"));
  if (!file) {
    llvm::consumeError(file.takeError());
    return std::nullopt;
  }
  llvm::Regex routine("^__(extend|trunc|float|fix)[a-z]*(hf|bf)[a-z0-9]*$|"
                      "^__gnu_(h2f|f2h)_ieee$");
  for (const llvm::object::SymbolRef &symbol : (*file)->symbols()) {
    auto flags = symbol.getFlags();
    auto name = symbol.getName();
    if (!flags || !name) {
      llvm::consumeError(flags.takeError());
      llvm::consumeError(name.takeError());
      continue;
    }
    if ((*flags & llvm::object::SymbolRef::SF_Undefined) &&
        routine.match(*name))
      return name->str();
  }
  return std::nullopt;
}

/// Links the objects into a shared object with ld.lld.
static FailureOr<std::string> linkSharedObject(ModuleOp module,
                                               ArrayRef<std::string> objects) {
  std::string lld;
  for (const char *name : {"ld.lld", "ld.lld-19"}) {
    if (auto path = llvm::sys::findProgramByName(name)) {
      lld = *path;
      break;
    }
  }
  if (lld.empty())
    return module.emitError(
        "CPU codegen needs ld.lld to link (apt-get install lld)");
  SmallVector<SmallString<128>> objPaths;
  auto removeAll = [&] {
    for (const auto &path : objPaths)
      llvm::sys::fs::remove(path);
  };
  for (const std::string &object : objects) {
    int fd;
    SmallString<128> path;
    if (llvm::sys::fs::createTemporaryFile("loom-cpu", "o", fd, path)) {
      removeAll();
      return module.emitError("CPU codegen: cannot create a temporary file");
    }
    objPaths.push_back(path);
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << object;
  }
  SmallString<128> soPath;
  if (llvm::sys::fs::createTemporaryFile("loom-cpu", "so", soPath)) {
    removeAll();
    return module.emitError("CPU codegen: cannot create a temporary file");
  }
  std::string message;
  SmallVector<StringRef> argv = {lld,  "-shared", "-O2", "--gc-sections",
                                 "-o", soPath};
  for (const auto &path : objPaths)
    argv.push_back(path);
  int rc =
      llvm::sys::ExecuteAndWait(lld, argv, std::nullopt, {}, 0, 0, &message);
  removeAll();
  auto buffer = llvm::MemoryBuffer::getFile(soPath);
  llvm::sys::fs::remove(soPath);
  if (rc != 0 || !buffer)
    return module.emitError("CPU codegen: linking with ")
           << lld << " failed (exit " << rc << ") " << message;
  return (*buffer)->getBuffer().str();
}

FailureOr<CpuCode> compileForCpu(ModuleOp module, StringRef entry,
                                 const CpuCodegenOptions &options) {
  MLIRContext *ctx = module.getContext();
  DialectRegistry registry;
  registerCpuCodegenDialects(registry);
  ctx->appendDialectRegistry(registry);

  auto func = module.lookupSymbol<func::FuncOp>(entry);
  if (!func)
    return module.emitError("no function '") << entry << "' to compile";
  func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                UnitAttr::get(ctx));
  // The graph.* argument and result attributes (names, dim names) are in
  // the artifact's signature; LLVM has no use for them. Which arguments
  // are weights the library calls want to know.
  SmallVector<int64_t> weights;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (func.getArgAttr(i, "graph.weight"))
      weights.push_back(i);
  if (!weights.empty())
    func->setAttr(kWeightArgsAttr, DenseI64ArrayAttr::get(ctx, weights));
  func.setAllArgAttrs(ArrayRef<DictionaryAttr>{});
  func.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
  // The caller's inputs and the mapped weights are never written (a
  // training step's state, --loom-cpu-state-in-place, is).
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    func.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                    BoolAttr::get(ctx, false));
  bool hasResults = func.getNumResults() > 0;

  CpuCode code;
  // The target machine: PIC code for a shared object.
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  code.entrySymbol = kCpuEntrySymbol;
  code.triple = llvm::sys::getProcessTriple();
  if (options.cpu == "host") {
    code.cpu = llvm::sys::getHostCPUName().str();
    code.features = hostFeatures();
  } else {
    code.cpu = options.cpu;
  }
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(code.triple, error);
  if (!target)
    return module.emitError("CPU codegen: ") << error;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      code.triple, code.cpu, code.features, llvm::TargetOptions(),
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return module.emitError("CPU codegen: no target machine for CPU '")
           << code.cpu << "'";
  if (!machine->getMCSubtargetInfo()->isCPUStringValid(code.cpu))
    return module.emitError("CPU codegen: unknown CPU '")
           << code.cpu << "' (try x86-64-v3, skylake-avx512 or host)";

  // f16 <-> f32 conversions are F16C instructions where the target has
  // them; elsewhere (x86 without F16C) LLVM would call compiler-rt.
  CpuCodegenOptions pipelineOptions = options;
  pipelineOptions.softF16 =
      llvm::Triple(code.triple).isX86() &&
      !machine->getMCSubtargetInfo()->checkFeatures("+f16c");
  PassManager pm(ctx);
  buildCpuLoweringPipeline(pm, pipelineOptions);
  if (options.timing)
    pm.enableTiming();
  if (failed(pm.run(module)))
    return failure();
  if (failed(addEntryWrapper(module, entry, hasResults)) ||
      failed(addParallelDispatchers(module)))
    return failure();
  if (auto plans = module->getAttrOfType<ArrayAttr>(kMemoryPlanAttr)) {
    for (Attribute plan : plans) {
      auto dict = cast<DictionaryAttr>(plan);
      code.memoryPlan += formatMemoryPlan(dict);
      code.arenaBytes += cast<IntegerAttr>(dict.get("arena_bytes")).getInt();
    }
    module->removeAttr(kMemoryPlanAttr);
  }
  if (auto names = module->getAttrOfType<ArrayAttr>(kKernelNamesAttr)) {
    for (Attribute name : names)
      code.kernels.push_back(cast<StringAttr>(name).str());
    module->removeAttr(kKernelNamesAttr);
  }

  llvm::LLVMContext llvmContext;
  auto llvmModule = translateModuleToLLVMIR(module, llvmContext, "loom");
  if (!llvmModule)
    return module.emitError("CPU codegen: translation to LLVM IR failed");
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(code.triple);
  if (!options.dumpLlvm.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(options.dumpLlvm, ec, llvm::sys::fs::OF_Text);
    if (ec)
      return module.emitError("CPU codegen: cannot write ")
             << options.dumpLlvm << ": " << ec.message();
    llvmModule->print(os, nullptr);
  }
  LlvmBackendOptions backend;
  backend.triple = code.triple;
  backend.cpu = code.cpu;
  backend.features = code.features;
  backend.optLevel = options.optLevel;
  backend.threads = options.threads;
  backend.entry = entry.str();
  backend.exported = code.entrySymbol;
  backend.timing = options.timing;
  auto objects = compileLlvmModule(std::move(llvmModule), backend);
  if (!objects)
    return module.emitError("CPU codegen: ")
           << llvm::toString(objects.takeError());
  for (const std::string &object : *objects)
    if (auto routine = halfFloatRoutine(object))
      return module.emitError("CPU codegen: the code calls ")
             << *routine
             << ", a compiler-rt routine for 16-bit floats that the runtime "
                "does not provide (a conversion --loom-cpu-expand-float-casts "
                "did not expand)";
  auto so = linkSharedObject(module, *objects);
  if (failed(so))
    return failure();
  code.sharedObject = std::move(*so);
  return code;
}

} // namespace loom::codegen
