//===- Qat.cpp - loomc train --qat: marks and ranges ----------------------===//

#include "compiler/Qat.h"

#include "compiler/Calibration.h"
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxQuantizer.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace loom::qat {
namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The graph.param name of `v`, if it is a parameter argument.
StringRef paramName(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return {};
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!func)
    return {};
  auto name =
      func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "graph.param");
  return name ? name.getValue() : StringRef();
}

/// The node's name in the importer's location (NameLoc(node, op type)).
StringRef nodeName(Operation *op) {
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    return loc.getName().getValue();
  return {};
}

} // namespace

llvm::Error prepare(MLIRContext &ctx, StringRef modelPath,
                    const QatOptions &options, ModuleOp module,
                    std::string &sourceOnnx) {
  onnx::ModelProto model;
  if (failed(onnx_import::readModelFile(ctx, modelPath, model)))
    return error("--qat: cannot read '" + modelPath + "'");
  onnx_quantize::QuantizeOptions q;
  q.mode = "static";
  q.perChannel = true;
  q.exclude = options.exclude;
  std::vector<onnx_quantize::QuantizeTarget> targets;
  if (std::string why = onnx_quantize::findTargets(model, q, targets);
      !why.empty())
    return error("--qat: " + why);
  if (targets.empty())
    return error("--qat: " + modelPath +
                 " has no MatMul/Gemm that loomc quantize --mode static "
                 "quantizes (a rank-2 f32 initializer as B)");

  // The weight each target reads (its B), by node name or first output.
  std::map<std::string, std::string> weightOf;
  for (const onnx::NodeProto &n : model.graph().node()) {
    std::string name = !n.name().empty() ? n.name()
                       : n.output_size() ? n.output(0)
                                         : "";
    if (n.input_size() >= 2)
      weightOf[name] = n.input(1);
  }

  calibration::CalibrationOptions c;
  c.data = options.data;
  c.loomRun = options.loomRun;
  c.modelDir = options.modelDir;
  auto runner = calibration::Runner::create(c, model);
  if (!runner)
    return error("--qat: " + llvm::toString(runner.takeError()));
  std::vector<std::string> activations;
  for (const onnx_quantize::QuantizeTarget &t : targets)
    if (!llvm::is_contained(activations, t.activation))
      activations.push_back(t.activation);
  // The observed range: the mean over the batches of each batch's extremes,
  // the value PyTorch's moving-average observer tends to, so that a rare
  // outlier does not set the step of every value (the global extremes,
  // what `loomc quantize --mode static` takes, do).
  std::vector<double> sumLo(activations.size()), sumHi(activations.size());
  int64_t batches = 0;
  llvm::Error e = (*runner)->run(
      ctx, {&model}, {activations},
      [&](std::vector<std::vector<files::HostTensor>> &values) -> llvm::Error {
        for (size_t k = 0; k < activations.size(); ++k) {
          const files::HostTensor &t = values[0][k];
          const auto *v = reinterpret_cast<const float *>(t.bytes.data());
          size_t n = t.bytes.size() / sizeof(float);
          if (n == 0)
            continue;
          auto [lo, hi] = std::minmax_element(v, v + n);
          if (!std::isfinite(*lo) || !std::isfinite(*hi))
            return error("'" + activations[k] +
                         "' is not finite on the calibration data");
          sumLo[k] += *lo;
          sumHi[k] += *hi;
        }
        ++batches;
        return llvm::Error::success();
      });
  if (e)
    return error("--qat: " + llvm::toString(std::move(e)));
  if (batches == 0)
    return error("--qat: " + options.data + " holds no samples");
  std::map<std::string, std::pair<float, float>> ranges;
  for (size_t k = 0; k < activations.size(); ++k)
    ranges[activations[k]] = {static_cast<float>(sumLo[k] / batches),
                              static_cast<float>(sumHi[k] / batches)};

  // Marks each target's product: the matmul (conv) that reads its weight
  // parameter, told apart by the node's name where several do.
  SmallVector<Operation *> products;
  module.walk([&](Operation *op) {
    if (isa<graph::MatmulOp, graph::ConvOp>(op) && op->getNumOperands() >= 2)
      products.push_back(op);
  });
  Builder b(&ctx);
  llvm::json::Object record, observed;
  for (const onnx_quantize::QuantizeTarget &t : targets) {
    std::string weight = weightOf[t.node];
    SmallVector<Operation *> found;
    for (Operation *op : products)
      if (paramName(op->getOperand(1)) == weight)
        found.push_back(op);
    if (found.size() > 1 || found.empty()) {
      SmallVector<Operation *> named;
      for (Operation *op : found.empty() ? products : found)
        if (!t.node.empty() && nodeName(op) == t.node)
          named.push_back(op);
      found = named;
    }
    if (found.size() != 1)
      return error("--qat: cannot tell which product of the imported graph "
                   "is node '" +
                   t.node + "' (weight '" + weight + "')");
    auto it = ranges.find(t.activation);
    if (it == ranges.end())
      return error("--qat: no range was observed for '" + t.activation + "'");
    auto [lo, hi] = it->second;
    found.front()->setAttr(
        "loom.qat",
        b.getDictionaryAttr(
            {b.getNamedAttr("activation", b.getStringAttr(t.activation)),
             b.getNamedAttr("min", b.getF64FloatAttr(lo)),
             b.getNamedAttr("max", b.getF64FloatAttr(hi))}));
    observed[t.activation] = llvm::json::Array{lo, hi};
  }
  llvm::errs() << "qat: " << targets.size() << " MatMul/Gemm node"
               << (targets.size() == 1 ? "" : "s") << " fake-quantized, "
               << activations.size() << " activation range"
               << (activations.size() == 1 ? "" : "s") << " observed on "
               << (*runner)->samples() << " sample"
               << ((*runner)->samples() == 1 ? "" : "s")
               << (options.learnedScales ? " (learned scales)" : "") << "\n";

  // The record `loomc export` reads (ExportTrained.cpp).
  record["exclude"] = options.exclude;
  record["learned_scales"] = options.learnedScales;
  record["ranges"] = std::move(observed);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(record));
  onnx::ModelProto source;
  if (!source.ParseFromString(sourceOnnx))
    return error("--qat: the kept source model cannot be read back");
  for (int i = source.metadata_props_size() - 1; i >= 0; --i)
    if (source.metadata_props(i).key() == kMetadataKey)
      source.mutable_metadata_props()->DeleteSubrange(i, 1);
  auto *prop = source.add_metadata_props();
  prop->set_key(kMetadataKey);
  prop->set_value(os.str());
  sourceOnnx = source.SerializeAsString();
  return llvm::Error::success();
}

} // namespace loom::qat
