//===- PipelineParallel.cpp - a pipeline-parallel training artifact -------===//

#include "compiler/PipelineParallel.h"
#include "compiler/codegen/cpu/CpuCodegen.h"
#include "loom/common/Artifact.h"
#include "loom/common/FileIO.h"
#include "loom/common/Schedule.h"
#include "passes/PassReport.h"
#include "passes/Pipeline/Passes.h"
#include "passes/Pipeline/PipelineUtils.h"
#include "passes/Sharding/ShardingUtils.h"
#include "passes/Training/TrainingUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace loom {

/// A module holding a copy of `f` (and of the mesh, when `withMesh`).
static OwningOpRef<ModuleOp> moduleOf(ModuleOp from, func::FuncOp f,
                                      bool withMesh) {
  OwningOpRef<ModuleOp> m = ModuleOp::create(from.getLoc());
  OpBuilder b = OpBuilder::atBlockEnd(m->getBody());
  if (withMesh)
    if (mesh::MeshOp mesh = sharding::findMesh(from))
      b.clone(*mesh);
  b.clone(*f);
  return m;
}

/// f16: the train_step of a rank without the loss scale's state (the
/// other ranks than the last) returns the scale it unscaled by, the
/// all-reduce marked kLossScaleSumAttr, as "loss_scale": its trainer then
/// reports the step's scale and adopts the state of a step that skipped
/// its update on overflow, as the last rank's does.
static LogicalResult addLossScaleOutput(ModuleOp m) {
  auto step = m.lookupSymbol<func::FuncOp>("train_step");
  Operation *sum = nullptr;
  if (step)
    step.walk([&](Operation *op) {
      if (op->hasAttr(pipeline::kLossScaleSumAttr))
        sum = op;
    });
  if (!sum)
    return m.emitError("pipeline: internal error: an update without the "
                       "loss scale's all-reduce");
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
  ret->insertOperands(ret.getNumOperands(), sum->getResult(0));
  Builder b(m.getContext());
  step.insertResult(step.getNumResults(), sum->getResult(0).getType(),
                    b.getDictionaryAttr({b.getNamedAttr(
                        "graph.output", b.getStringAttr("loss_scale"))}));
  return success();
}

/// Runs canonicalization and CSE on `m`.
static LogicalResult simplify(ModuleOp m) {
  PassManager pm(m.getContext());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  return pm.run(m);
}

namespace {
/// The pipeline's settings, resolved from the training options.
struct Settings {
  int64_t ranks, virtualStages, microBatches, dataRanks;
  /// Tensor-parallel ranks inside each stage (1: none).
  int64_t tensorRanks;
  std::string schedule, boundaries, freeze;
  int64_t memoryBudget;
  std::string loss;
  int64_t ignoreIndex;
  std::string description, labels;
  int64_t totalSteps;
  bool summary;
  /// Recomputation inside each stage ("" or none: off), f16's loss
  /// scaling.
  std::string recompute;
  bool lossScale;

  explicit Settings(const TrainingOptions &t)
      : ranks(t.pipeline.stages),
        virtualStages(t.pipeline.virtualStagesOrDefault()),
        microBatches(t.pipeline.microBatches), dataRanks(t.dataParallel),
        tensorRanks(std::max<int64_t>(1, t.tensorParallel)),
        schedule(t.pipeline.scheduleOrDefault()),
        boundaries(t.pipeline.boundaries), freeze(t.freeze),
        memoryBudget(t.memoryBudget), loss(toString(t.loss).str()),
        ignoreIndex(t.ignoreIndex), description(t.description()),
        labels(t.labels), totalSteps(t.totalSteps), summary(t.printSummary),
        recompute(toString(t.recompute).str()),
        lossScale(t.precision == Precision::F16) {}
};
} // namespace

LogicalResult compilePipelineParallel(ModuleOp module,
                                      const TrainingOptions &training,
                                      const CompileOptions &options,
                                      report::Sink *sink, std::string &bytes) {
  const Settings p(training);
  auto error = [&]() { return module.emitError("pipeline: "); };
  if (p.ranks < 1 || p.virtualStages < 1 || p.microBatches < 1 ||
      p.dataRanks < 1)
    return error() << "the stage, virtual stage, micro-batch and "
                      "data-parallel counts must be >= 1";
  if (p.schedule == "interleaved" ? p.virtualStages < 2 : p.virtualStages != 1)
    return error()
           << "--virtual-stages " << p.virtualStages
           << " goes with --pipeline-schedule interleaved only (and it needs "
              "2 or more)";
  // The schedule is checked here too, so that a bad one fails the compile
  // rather than the run.
  std::string why;
  pipeline::Schedule schedule = pipeline::makeSchedule(
      p.schedule, static_cast<int>(p.ranks), static_cast<int>(p.microBatches),
      static_cast<int>(p.virtualStages), why);
  if (!why.empty())
    return error() << why;

  FailureOr<func::FuncOp> loss = training::pickFunction(module, "", "pipeline");
  if (failed(loss))
    return failure();
  // The outer signature: the batch inputs of one replica's global batch.
  artifact::Artifact out;
  out.set_producer("loomc");
  out.set_model_name(loss->getName().str());
  for (unsigned i = 0; i < loss->getNumArguments(); ++i) {
    auto name = loss->getArgAttrOfType<StringAttr>(i, "graph.input");
    if (!name)
      continue;
    auto type = dyn_cast<RankedTensorType>(loss->getArgument(i).getType());
    if (!type || type.getRank() == 0 || type.isDynamicDim(0))
      return loss->emitError("pipeline: batch input '")
             << name.getValue()
             << "' must have a static batch dim 0 to be cut into "
                "micro-batches (loomc train --batch B), not "
             << loss->getArgument(i).getType();
    SmallVector<int64_t> dims(type.getShape());
    dims[0] *= p.microBatches;
    if (failed(fillSignature(*out.add_inputs(), name.getValue(),
                             type.clone(dims), nullptr, *loss, "input")))
      return failure();
  }

  PassManager pm(module.getContext());
  {
    PipelineStagesPassOptions stages;
    stages.funcName = loss->getName().str();
    stages.stages = p.ranks * p.virtualStages;
    stages.boundaries = p.boundaries;
    stages.freeze = p.freeze;
    stages.summary = p.summary;
    pm.addPass(createPipelineStagesPass(stages));
    PipelinePartsPassOptions parts;
    parts.ranks = p.ranks;
    parts.dataRanks = p.dataRanks;
    parts.recompute = p.recompute;
    if (!p.recompute.empty() && training.target == "cpu")
      parts.targetPasses = codegen::kCpuGraphPasses;
    parts.lossScale = p.lossScale;
    parts.summary = p.summary;
    pm.addPass(createPipelinePartsPass(parts));
  }
  if (failed(pm.run(module)))
    return failure();

  CompileOptions partOptions = options;
  partOptions.inferenceModule.clear();
  partOptions.sourceOnnx.clear();
  partOptions.outputPath.clear(); // the parts nest in the artifact
  artifact::Pipeline *pipe = out.mutable_pipeline();
  pipe->set_ranks(static_cast<int32_t>(p.ranks));
  pipe->set_virtual_stages(static_cast<int32_t>(p.virtualStages));
  pipe->set_micro_batches(static_cast<int32_t>(p.microBatches));
  pipe->set_schedule(p.schedule);
  pipe->set_data_parallel(static_cast<int32_t>(p.dataRanks));
  if (p.tensorRanks > 1)
    pipe->set_tensor_parallel(static_cast<int32_t>(p.tensorRanks));
  pipe->set_loss(p.loss);
  pipe->set_ignore_index(p.ignoreIndex);
  pipe->set_memory_budget(p.memoryBudget);
  std::string base = loss->getName().str();
  int64_t n = p.ranks * p.virtualStages;
  std::vector<int64_t> savedBytes;
  llvm::json::Array stageReports;
  for (int64_t k = 0; k < n; ++k) {
    artifact::PipelineStage *stage = pipe->add_stages();
    llvm::json::Object report{{"stage", k}, {"rank", k % p.ranks}};
    llvm::json::Array parts;
    for (StringRef part : {"F", "I", "W"}) {
      std::string name = base + "_stage" + std::to_string(k) + "_" + part.str();
      auto f = module.lookupSymbol<func::FuncOp>(name);
      if (!f) {
        if (part == "F")
          return error() << "stage " << k << " has no forward";
        continue;
      }
      if (part == "F") {
        if (auto a = f->getAttrOfType<IntegerAttr>(pipeline::kSavedBytesAttr))
          stage->set_saved_bytes(a.getInt());
        if (auto a = f->getAttrOfType<FloatAttr>(pipeline::kFlopsAttr))
          stage->set_flops(a.getValueAsDouble());
        if (auto a = f->getAttrOfType<StringAttr>(pipeline::kDescriptionAttr))
          stage->set_description(a.str());
        savedBytes.push_back(stage->saved_bytes());
        report["ops"] = stage->description();
        report["flops"] = stage->flops();
        report["saved_bytes_per_micro_batch"] = stage->saved_bytes();
        llvm::json::Array params;
        if (auto a = f->getAttrOfType<ArrayAttr>(pipeline::kParamsAttr))
          for (Attribute name : a)
            params.push_back(cast<StringAttr>(name).str());
        report["parameters"] = std::move(params);
        if (auto a = f->getAttrOfType<IntegerAttr>(pipeline::kSentBytesAttr))
          report["sent_bytes_per_micro_batch"] = a.getInt();
      }
      parts.push_back(part.str());
      // With tensor parallelism a part holds collectives over `tensor`:
      // it runs on the mesh.
      OwningOpRef<ModuleOp> m = moduleOf(module, f, p.tensorRanks > 1);
      if (failed(simplify(*m)))
        return failure();
      partOptions.funcName = name;
      std::string code;
      if (failed(compileToArtifact(*m, partOptions, code)))
        return failure();
      if (part == "F")
        stage->set_forward(std::move(code));
      else if (part == "I")
        stage->set_backward_input(std::move(code));
      else
        stage->set_backward_weight(std::move(code));
    }
    report["parts"] = std::move(parts);
    stageReports.push_back(std::move(report));
  }
  // Each rank's optimizer step.
  for (int64_t r = 0; r < p.ranks; ++r) {
    std::string name = "pipeline_update_" + std::to_string(r);
    auto f = module.lookupSymbol<func::FuncOp>(name);
    if (!f)
      return error() << "rank " << r << " has no update function";
    OwningOpRef<ModuleOp> m = moduleOf(module, f, true);
    PassManager upm(m->getContext());
    buildPipelineUpdatePassPipeline(upm, training, r);
    if (failed(upm.run(*m)))
      return failure();
    if (p.lossScale && p.ranks > 1 && r != p.ranks - 1 &&
        failed(addLossScaleOutput(*m)))
      return failure();
    partOptions.funcName = "train_step";
    std::string code;
    if (failed(compileToArtifact(*m, partOptions, code)))
      return failure();
    pipe->add_updates(std::move(code));
  }
  // Check the schedule's memory now that the stages' sizes are known.
  {
    pipeline::VerifyOptions verify;
    verify.activationBytes = savedBytes;
    verify.memoryBudget = p.memoryBudget;
    pipeline::VerifyResult result;
    if (!pipeline::verify(schedule, verify, result, why))
      return error() << "schedule " << p.schedule << ": " << why;
    if (training.report && sink) {
      pipeline::Timeline t = pipeline::simulate(schedule, pipeline::Costs{});
      sink->add(
          "pipeline",
          llvm::json::Object{
              {"schedule", p.schedule},
              {"ranks", p.ranks},
              {"virtual_stages", p.virtualStages},
              {"micro_batches", p.microBatches},
              {"data_parallel", p.dataRanks},
              {"tensor_parallel", p.tensorRanks},
              {"partition", p.boundaries.empty()
                                ? "balanced by the cost model (FLOPs + 4 x "
                                  "bytes)"
                                : "at the boundaries " + p.boundaries},
              {"stages", std::move(stageReports)},
              {"peak_micro_batches_per_rank",
               llvm::json::Array(result.peakLive)},
              {"peak_saved_bytes_per_rank",
               llvm::json::Array(result.peakBytes)},
              {"memory_budget", p.memoryBudget},
              {"bubble_simulated_unit_costs", t.bubble},
              {"bubble_analytic",
               pipeline::analyticBubble(p.schedule, static_cast<int>(p.ranks),
                                        static_cast<int>(p.microBatches),
                                        static_cast<int>(p.virtualStages))}});
    }
  }

  artifact::Training *outTraining = out.mutable_training();
  outTraining->set_accumulate(1);
  outTraining->set_total_steps(p.totalSteps);
  outTraining->set_total_steps_input(-1);
  outTraining->set_description(p.description + "; pipeline " + p.schedule +
                               " over " + std::to_string(p.ranks) + " ranks, " +
                               std::to_string(p.microBatches) +
                               " micro-batches");
  outTraining->set_labels(p.labels);
  outTraining->set_inference_module(options.inferenceModule);
  outTraining->set_source_onnx(options.sourceOnnx);
  if (p.ranks * p.dataRanks * p.tensorRanks > 1) {
    // [D, S] over (data, pipe), or [D, T, S] over (data, tensor, pipe):
    // the parts' meshes lay the ranks out alike (theirs has no data axis
    // without replicas).
    artifact::Mesh *mesh = out.mutable_mesh();
    mesh->add_shape(p.dataRanks);
    mesh->add_axes("data");
    if (p.tensorRanks > 1) {
      mesh->add_shape(p.tensorRanks);
      mesh->add_axes("tensor");
    }
    mesh->add_shape(p.ranks);
    mesh->add_axes("pipe");
  }
  std::string problem;
  if (!artifact::serialize(out, bytes, problem) ||
      (!options.outputPath.empty() &&
       !files::writeFileAtomically(options.outputPath, bytes, problem)))
    return error() << problem;
  if (!options.outputPath.empty())
    bytes.clear(); // written, as compileToArtifact does
  return success();
}

llvm::Expected<std::optional<ScheduleCosts>>
parseScheduleCosts(llvm::StringRef text) {
  if (text.empty())
    return std::nullopt;
  ScheduleCosts costs;
  SmallVector<StringRef> parts;
  text.split(parts, ',');
  double *v[4] = {&costs.forward, &costs.backwardInput, &costs.backwardWeight,
                  &costs.transfer};
  bool ok = parts.size() == 3 || parts.size() == 4;
  for (size_t i = 0; ok && i < parts.size(); ++i)
    ok = !parts[i].trim().getAsDouble(*v[i]) && *v[i] >= 0;
  if (!ok)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--costs takes F,I,W[,T] (non-negative numbers), not '" + text + "'");
  return costs;
}

llvm::Expected<std::string>
simulatePipelineSchedule(const std::string &name, int64_t ranks,
                         int64_t microBatches, int64_t virtualStages,
                         const ScheduleCosts *costs, bool timeline) {
  int64_t v = virtualStages > 0 ? virtualStages : name == "interleaved" ? 2 : 1;
  std::string error;
  pipeline::Schedule s = pipeline::makeSchedule(name, static_cast<int>(ranks),
                                                static_cast<int>(microBatches),
                                                static_cast<int>(v), error);
  if (!error.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
  pipeline::VerifyOptions options;
  pipeline::VerifyResult result;
  if (!pipeline::verify(s, options, result, error))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "schedule " + name + ": " + error);
  pipeline::Timeline t = pipeline::simulate(s, pipeline::Costs{});
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "schedule " << name << ": " << s.ranks << " stages"
     << (v > 1 ? " x " + std::to_string(v) + " chunks" : "") << ", "
     << s.microBatches
     << " micro-batches: verified (each computation once after its inputs, "
        "every send received, no cyclic wait)\n";
  os << llvm::formatv(
      "simulated with F = I = W = 1: makespan {0}, bubble "
      "{1:P1} (analytic {2:P1})\n",
      t.makespan, t.bubble,
      pipeline::analyticBubble(name, s.ranks, s.microBatches, s.virtualStages));
  if (costs) {
    pipeline::Costs c;
    c.forward = costs->forward;
    c.backwardInput = costs->backwardInput;
    c.backwardWeight = costs->backwardWeight;
    c.transfer = costs->transfer;
    pipeline::Timeline m = pipeline::simulate(s, c);
    os << llvm::formatv("simulated with F = {0}, I = {1}, W = {2}, transfer "
                        "{3}: makespan {4}, bubble {5:P1}\n",
                        c.forward, c.backwardInput, c.backwardWeight,
                        c.transfer, m.makespan, m.bubble);
  }
  os << "peak micro-batches holding activations, per rank:";
  for (int n : result.peakLive)
    os << " " << n;
  os << "\n";
  if (timeline)
    os << pipeline::drawTimeline(s, t);
  return text;
}

} // namespace loom
