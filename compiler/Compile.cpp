//===- Compile.cpp - graph IR to a .loom artifact -------------------------===//

#include "compiler/Compile.h"

#include "dialects/graph/GraphOps.h"
#include "dialects/graph/TensorBytes.h"
#include "runtime/src/Artifact.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace loom {

/// The artifact dtype of an element type; DTYPE_UNDEFINED when the
/// runtime has none.
static artifact::DType dtypeOf(Type type) {
  if (type.isF32())
    return artifact::F32;
  if (type.isF64())
    return artifact::F64;
  if (type.isF16())
    return artifact::F16;
  if (type.isBF16())
    return artifact::BF16;
  if (type.isInteger(1))
    return artifact::BOOL;
  if (type.isUnsignedInteger(8))
    return artifact::U8;
  if (type.isSignlessInteger(8) || type.isSignedInteger(8))
    return artifact::I8;
  if (type.isSignlessInteger(16))
    return artifact::I16;
  if (type.isSignlessInteger(32))
    return artifact::I32;
  if (type.isSignlessInteger(64))
    return artifact::I64;
  return artifact::DTYPE_UNDEFINED;
}

static FailureOr<func::FuncOp> entryFunction(ModuleOp module, StringRef name) {
  if (!name.empty()) {
    auto func = module.lookupSymbol<func::FuncOp>(name);
    if (!func)
      return module.emitError("no function '") << name << "' to compile";
    return func;
  }
  func::FuncOp found;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isPrivate() || func.isDeclaration())
      continue;
    if (found)
      return module.emitError("the module has several public functions ('")
             << found.getName() << "', '" << func.getName()
             << "'): name one with --func";
    found = func;
  }
  if (!found)
    return module.emitError("the module has no public function to compile");
  return found;
}

static LogicalResult fillSignature(artifact::TensorSignature &sig,
                                   StringRef name, Type type,
                                   ArrayAttr dimNames, Operation *where,
                                   StringRef what) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return where->emitError()
           << what << " '" << name << "' is not a ranked tensor: " << type;
  artifact::DType dtype = dtypeOf(tensor.getElementType());
  if (dtype == artifact::DTYPE_UNDEFINED)
    return where->emitError()
           << what << " '" << name << "' has element type "
           << tensor.getElementType() << ", which the runtime does not support";
  sig.set_name(name.str());
  sig.set_dtype(dtype);
  for (int64_t i = 0; i < tensor.getRank(); ++i) {
    artifact::Dim *dim = sig.add_dims();
    dim->set_size(tensor.isDynamicDim(i) ? -1 : tensor.getDimSize(i));
    if (tensor.isDynamicDim(i) && dimNames &&
        i < static_cast<int64_t>(dimNames.size()))
      if (auto s = dyn_cast<StringAttr>(dimNames[i]))
        dim->set_symbol(s.str());
  }
  return success();
}

/// Replaces each large constant by a new trailing argument of `func` and
/// records its bytes as a weight.
static LogicalResult outlineWeights(func::FuncOp func, int64_t minBytes,
                                    artifact::Artifact &out) {
  SmallVector<graph::ConstantOp> constants;
  func.walk([&](graph::ConstantOp c) {
    auto type = cast<RankedTensorType>(c.getType());
    Type elem = type.getElementType();
    if (elem.isInteger(1) || dtypeOf(elem) == artifact::DTYPE_UNDEFINED)
      return;
    int64_t bytes = type.getNumElements() * (elem.getIntOrFloatBitWidth() / 8);
    if (bytes >= minBytes)
      constants.push_back(c);
  });
  for (graph::ConstantOp c : constants) {
    auto value = cast<ElementsAttr>(c.getValue());
    FailureOr<std::string> bytes = graph::tensorBytes(value);
    if (failed(bytes))
      return c.emitError("constant data is not available (an unloaded "
                         "dense_resource)");
    auto type = cast<RankedTensorType>(c.getType());
    std::string name = "weight_" + std::to_string(out.weights_size());
    if (auto res = dyn_cast<DenseResourceElementsAttr>(value))
      name = res.getRawHandle().getKey().str();
    artifact::Weight *w = out.add_weights();
    w->set_name(name);
    w->set_dtype(dtypeOf(type.getElementType()));
    for (int64_t d : type.getShape())
      w->add_dims(d);
    w->set_data(std::move(*bytes));
    unsigned index = func.getNumArguments();
    MLIRContext *ctx = func.getContext();
    func.insertArgument(
        index, type,
        DictionaryAttr::get(
            ctx, {NamedAttribute(StringAttr::get(ctx, "graph.weight"),
                                 StringAttr::get(ctx, name))}),
        c.getLoc());
    c.replaceAllUsesWith(func.getArgument(index));
    c.erase();
  }
  return success();
}

LogicalResult compileToArtifact(ModuleOp module, const CompileOptions &options,
                                std::string &bytes, CompileReport *report) {
  if (options.target != "cpu")
    return module.emitError("target '")
           << options.target << "' is not supported yet (available: cpu)";
  FailureOr<func::FuncOp> func = entryFunction(module, options.funcName);
  if (failed(func))
    return failure();

  artifact::Artifact out;
  out.set_producer("loomc");
  out.set_model_name(func->getName().str());
  for (unsigned i = 0; i < func->getNumArguments(); ++i) {
    std::string name = "input_" + std::to_string(i);
    for (StringRef attr : {"graph.input", "graph.param"})
      if (auto s = func->getArgAttrOfType<StringAttr>(i, attr))
        name = s.str();
    if (failed(fillSignature(
            *out.add_inputs(), name, func->getArgument(i).getType(),
            func->getArgAttrOfType<ArrayAttr>(i, "graph.dim_names"), *func,
            "input")))
      return failure();
  }
  for (unsigned i = 0; i < func->getNumResults(); ++i) {
    std::string name = "output_" + std::to_string(i);
    if (auto s = func->getResultAttrOfType<StringAttr>(i, "graph.output"))
      name = s.str();
    if (failed(fillSignature(*out.add_outputs(), name,
                             func->getResultTypes()[i], nullptr, *func,
                             "output")))
      return failure();
  }
  if (out.outputs_size() == 0)
    return func->emitError("the function has no results to compute");
  if (failed(outlineWeights(*func, options.minWeightBytes, out)))
    return failure();

  FailureOr<codegen::CpuCode> code =
      codegen::compileForCpu(module, func->getName(), options.cpu);
  if (failed(code))
    return failure();
  artifact::CpuCode *cpu = out.mutable_cpu();
  cpu->set_shared_object(std::move(code->sharedObject));
  cpu->set_entry_symbol(code->entrySymbol);
  cpu->set_target_triple(code->triple);
  cpu->set_cpu(code->cpu);
  cpu->set_features(code->features);
  for (const std::string &name : code->kernels)
    out.add_kernels(name);
  if (report)
    report->memoryPlan = code->memoryPlan;

  std::string body;
  if (!out.SerializeToString(&body))
    return module.emitError("serializing the artifact failed (over 2 GiB?)");
  bytes = artifact::header(body) + body;
  return success();
}

} // namespace loom
