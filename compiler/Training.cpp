//===- Training.cpp - a training step to a .loom artifact -----------------===//

#include "compiler/Training.h"

#include "compiler/PipelineParallel.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace loom {

LogicalResult keepInferenceModel(ModuleOp module,
                                 onnx_import::KeptSource *source,
                                 CompileOptions &options) {
  // From ONNX, export rewrites the source model, so the graph IR (a copy
  // of every weight) is kept only when there is none.
  if (source && !source->model.empty()) {
    options.sourceOnnx = std::move(source->model);
    options.sourceData = std::move(source->data);
    return success();
  }
  llvm::raw_string_ostream os(options.inferenceModule);
  return writeBytecodeToFile(module, os);
}

LogicalResult runTrainingPipeline(ModuleOp module,
                                  const TrainingOptions &training,
                                  report::Sink &sink, bool timing) {
  PassManager pm(module.getContext());
  buildTrainingPassPipeline(pm, training, &sink);
  if (timing)
    pm.enableTiming();
  return pm.run(module);
}

LogicalResult compileTraining(ModuleOp module, const TrainingOptions &training,
                              CompileOptions options, report::Sink &sink,
                              std::string &artifact, CompileReport *compiled) {
  if (training.pipeline.enabled()) {
    // Every stage part is a compile of its own: one fusion report file or
    // timing table cannot hold them.
    options.cpu.fusionReport.clear();
    options.cpu.printFusion = false;
    options.cpu.timing = false;
    return compilePipelineParallel(module, training, options, &sink, artifact);
  }
  if (training.gradientsOnly) {
    options.inferenceModule.clear();
    options.sourceOnnx.clear();
  }
  options.funcName = training.entryFunction();
  options.stateInPlace = true; // on the CPU target
  return compileToArtifact(module, options, artifact, compiled);
}

llvm::Error finishTrainingReport(const TrainingOptions &training,
                                 report::Sink &sink,
                                 const CompileReport &compiled) {
  if (training.pipeline.enabled() || !training.runsRecompute())
    return llvm::Error::success();
  llvm::json::Object *recompute = sink.getObject("recompute");
  if (!recompute)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the recompute report is missing");
  int64_t passPeak = recompute->getInteger("planned_peak_after").value_or(-1);
  (*recompute)["codegen_planned_peak"] = compiled.arenaBytes;
  if (training.report) {
    llvm::errs() << "memory plan of the compiled step: " << compiled.arenaBytes
                 << " bytes (loom-recompute planned " << passPeak << ")\n";
    sink.add("memory_plan",
             llvm::json::Object{{"arena_bytes", compiled.arenaBytes}});
  }
  if (training.memoryBudget > 0 && compiled.arenaBytes > training.memoryBudget)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "the compiled step's memory plan needs " +
            std::to_string(compiled.arenaBytes) +
            " bytes, over the budget of " +
            std::to_string(training.memoryBudget) +
            " (loom-recompute planned " + std::to_string(passPeak) +
            "); a smaller budget leaves room for the difference");
  return llvm::Error::success();
}

} // namespace loom
