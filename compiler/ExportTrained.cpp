//===- ExportTrained.cpp - a trained model back to ONNX -------------------===//

#include "compiler/ExportTrained.h"

#include "compiler/Qat.h"
#include "frontends/onnx/OnnxExporter.h"
#include "frontends/onnx/OnnxQuantizer.h"
#include "loom/common/Artifact.h"
#include "loom/common/Checkpoint.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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

/// A QAT artifact (loomc train --qat): the record compiler/Qat.cpp left in
/// the source model becomes `q`, the options of the static QDQ rewrite
/// with the activations' ranges: the observed ones, or with learned scales
/// the range [-z s, (255 - z) s] of each trained scale s and zero point z
/// (rounded and clamped as graph.fake_quantize does), from which ONNX
/// Runtime's formula gives back s and z. Those parameters leave `values`.
LogicalResult takeQatRecord(Location loc, const std::string &source,
                            Values &values, bool &isQat,
                            onnx_quantize::QuantizeOptions &q) {
  isQat = false;
  onnx::ModelProto model;
  if (!model.ParseFromString(source))
    return emitError(loc) << "the artifact's source model cannot be read";
  const std::string *text = nullptr;
  for (const auto &p : model.metadata_props())
    if (p.key() == qat::kMetadataKey)
      text = &p.value();
  if (!text)
    return success();
  isQat = true;
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(*text);
  const llvm::json::Object *record = parsed ? parsed->getAsObject() : nullptr;
  const llvm::json::Object *ranges =
      record ? record->getObject("ranges") : nullptr;
  if (!ranges) {
    if (!parsed)
      llvm::consumeError(parsed.takeError());
    return emitError(loc) << "the artifact's QAT record is malformed";
  }
  q.mode = "static";
  q.perChannel = true;
  q.method = "qat";
  q.exclude = record->getString("exclude").value_or("").str();
  bool learned = record->getBoolean("learned_scales").value_or(false);
  for (const auto &[name, range] : *ranges) {
    const llvm::json::Array *lohi = range.getAsArray();
    if (!lohi || lohi->size() != 2 || !(*lohi)[0].getAsNumber() ||
        !(*lohi)[1].getAsNumber())
      return emitError(loc) << "the artifact's QAT record is malformed at '"
                            << name.str() << "'";
    double lo = *(*lohi)[0].getAsNumber(), hi = *(*lohi)[1].getAsNumber();
    if (learned) {
      auto take = [&](StringRef suffix, float &out) -> LogicalResult {
        auto it = values.find(name.str() + suffix.str());
        // No data: an initial value of zeros, which artifacts do not store.
        const std::string &raw =
            it == values.end() ? std::string() : it->second.rawData;
        if (it == values.end() || (raw.size() != sizeof(float) && !raw.empty()))
          return emitError(loc) << "the QAT parameter '" << name.str() << suffix
                                << "' is missing";
        out = 0.0f;
        if (!raw.empty())
          std::memcpy(&out, raw.data(), sizeof(float));
        values.erase(it);
        return success();
      };
      float s = 0, zp = 0;
      if (failed(take("/qat_scale", s)) || failed(take("/qat_zero_point", zp)))
        return failure();
      if (!(s > 0) || !std::isfinite(s))
        return emitError(loc)
               << "the learned scale of '" << name.str() << "' is " << s
               << ": not a positive number, so no int8 model has it";
      double z = std::min(255.0, std::max(0.0, std::nearbyint(double(zp))));
      lo = -z * double(s);
      hi = (255.0 - z) * double(s);
    }
    q.ranges[name.str()] = {static_cast<float>(lo), static_cast<float>(hi)};
  }
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
  bool isQat = false;
  onnx_quantize::QuantizeOptions qatOptions;
  if (!tr.source_onnx().empty() &&
      failed(takeQatRecord(loc, tr.source_onnx(), values, isQat, qatOptions)))
    return failure();
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
  if (isQat) {
    // The trained model as the QDQ form the training step simulated.
    auto *props = model.mutable_metadata_props();
    for (int i = props->size() - 1; i >= 0; --i)
      if (props->Get(i).key() == qat::kMetadataKey)
        props->DeleteSubrange(i, 1);
    onnx_quantize::QuantizeReport report;
    if (std::string problem =
            onnx_quantize::quantizeModel(model, qatOptions, report);
        !problem.empty())
      return emitError(loc) << "the QDQ export: " << problem;
  }
  if (std::string problem =
          onnx_export::writeModel(model, outputPath.str(), external);
      !problem.empty())
    return emitError(loc) << problem;
  return success();
}

} // namespace loom
