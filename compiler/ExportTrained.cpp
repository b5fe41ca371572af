//===- ExportTrained.cpp - a trained model back to ONNX -------------------===//

#include "compiler/ExportTrained.h"

#include "frontends/onnx/OnnxExporter.h"
#include "loom/common/Artifact.h"
#include "loom/common/Checkpoint.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <set>

using namespace mlir;

namespace loom {

namespace {
using Values = std::map<std::string, onnx_export::InitializerValue>;

/// The initial value, dtype and whole dims of each parameter `a` trains.
/// (Their data only `withData`: a checkpoint's replaces it.)
void addParams(const artifact::Artifact &a,
               const artifact::DataSection &section, bool withData,
               Values &values) {
  for (const auto &s : a.training().state())
    if (s.kind() == "param") {
      const auto &sig = a.inputs(s.input());
      std::vector<int64_t> dims;
      for (const auto &d : sig.dims())
        dims.push_back(d.size());
      // A tensor-parallel piece: the initial value and checkpoints hold
      // the whole tensor.
      // A ZeRO-3 chunk (no dim) too.
      if (s.has_shard())
        dims.assign(s.shard().full_dims().begin(), s.shard().full_dims().end());
      values[s.name()] = {
          sig.dtype(), dims,
          withData ? std::string(artifact::initialData(section, s)) : ""};
    }
}

/// Replaces `values`' data by the checkpoint's, which must hold exactly
/// these parameters with the same dtypes and shapes.
LogicalResult readTrained(Location loc, StringRef artifactPath,
                          StringRef checkpointPath, Values &values) {
  std::string error;
  artifact::Checkpoint ck;
  if (!artifact::readCheckpoint(checkpointPath.str(), ck, error))
    return emitError(loc) << error;
  std::set<std::string> found;
  for (auto &t : *ck.mutable_state()) {
    if (t.kind() != "param")
      continue;
    auto it = values.find(t.name());
    if (it == values.end())
      return emitError(loc)
             << checkpointPath << " has a parameter '" << t.name() << "' that "
             << artifactPath
             << " does not train: a checkpoint of another model?";
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    if (t.dtype() != it->second.dataType || dims != it->second.dims)
      return emitError(loc)
             << checkpointPath << ": parameter '" << t.name()
             << "' has another dtype or shape than in " << artifactPath;
    it->second.rawData = std::move(*t.mutable_data());
    found.insert(t.name());
  }
  for (const auto &[name, v] : values)
    if (!found.count(name))
      return emitError(loc)
             << checkpointPath << " lacks parameter '" << name << "' of "
             << artifactPath << ": a checkpoint of another model?";
  return success();
}

/// A graph-IR model with `values` as its parameters' initializers.
LogicalResult exportGraphModel(MLIRContext &ctx, StringRef ir,
                               StringRef artifactPath, StringRef funcName,
                               const Values &values, onnx::ModelProto &model) {
  Location loc = UnknownLoc::get(&ctx);
  ParserConfig config(&ctx);
  auto module = parseSourceString<ModuleOp>(ir, config);
  if (!module)
    return emitError(loc) << artifactPath
                          << " holds no readable inference model";
  for (auto func : module->getOps<func::FuncOp>())
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto name = func.getArgAttrOfType<StringAttr>(i, "graph.param");
      auto it = name ? values.find(name.str()) : values.end();
      if (it == values.end())
        continue;
      auto type = cast<RankedTensorType>(func.getArgument(i).getType());
      bool splat = false;
      ArrayRef<char> raw(it->second.rawData.data(), it->second.rawData.size());
      if (raw.empty()) {
        func.setArgAttr(
            i, "graph.initial_value",
            DenseElementsAttr::get(
                type, Builder(&ctx).getZeroAttr(type.getElementType())));
        continue;
      }
      if (!DenseElementsAttr::isValidRawBuffer(type, raw, splat))
        return emitError(loc) << "parameter '" << name.getValue()
                              << "' has data of the wrong size";
      func.setArgAttr(i, "graph.initial_value",
                      DenseElementsAttr::getFromRawBuffer(type, raw));
    }
  onnx_export::ExportOptions options;
  options.funcName = funcName.str();
  options.paramsAsInitializers = true;
  if (failed(onnx_export::exportModel(*module, model, options)))
    return failure();
  std::string problem = onnx_export::checkModel(model);
  if (!problem.empty())
    return module->emitError("the exported model fails onnx.checker: ")
           << problem;
  return success();
}
} // namespace

LogicalResult exportTrainedModel(MLIRContext &ctx, StringRef artifactPath,
                                 StringRef checkpointPath, StringRef funcName,
                                 StringRef outputPath,
                                 onnx_export::ExternalData external) {
  Location loc = UnknownLoc::get(&ctx);
  std::string error;
  auto file = llvm::MemoryBuffer::getFile(artifactPath);
  if (!file)
    return emitError(loc) << "cannot read '" << artifactPath << "'";
  artifact::Artifact art;
  artifact::DataSection section;
  if (!artifact::parse((*file)->getBufferStart(), (*file)->getBufferSize(), art,
                       error, {}, &section))
    return emitError(loc) << artifactPath << ": " << error;
  if (!art.has_training())
    return emitError(loc) << artifactPath
                          << " is not a training artifact (loomc train makes "
                             "one)";
  Values values;
  bool initial = checkpointPath.empty();
  addParams(art, section, initial, values);
  // A pipeline artifact: each rank's update artifact trains its stages'.
  for (const std::string &update : art.pipeline().updates()) {
    artifact::Artifact u;
    artifact::DataSection updateSection;
    if (!artifact::parse(update.data(), update.size(), u, error, {},
                         &updateSection))
      return emitError(loc) << artifactPath << ": a pipeline update: " << error;
    addParams(u, updateSection, initial, values);
  }
  if (!checkpointPath.empty() &&
      failed(readTrained(loc, artifactPath, checkpointPath, values)))
    return failure();
  const artifact::Training &tr = art.training();
  onnx::ModelProto model;
  if (tr.source_onnx().empty()) {
    if (failed(exportGraphModel(ctx, tr.inference_module(), artifactPath,
                                funcName, values, model)))
      return failure();
  } else if (std::string problem = onnx_export::replaceInitializers(
                 tr.source_onnx(), values, model);
             !problem.empty()) {
    return emitError(loc) << problem;
  }
  values.clear(); // the model holds the data now
  if (std::string problem =
          onnx_export::writeModel(model, outputPath.str(), external);
      !problem.empty())
    return emitError(loc) << problem;
  return success();
}

} // namespace loom
