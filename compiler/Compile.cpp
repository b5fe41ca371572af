//===- Compile.cpp - graph IR to a .loom artifact -------------------------===//

#include "compiler/Compile.h"

#include "frontends/onnx/OnnxExporter.h"
#include "passes/Quantization/Passes.h"
#include "passes/Sharding/ShardingUtils.h"

#include "dialects/graph/GraphOps.h"
#include "dialects/graph/TensorBytes.h"
#include "loom/common/Artifact.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>

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
  if (type.isUnsignedInteger(16))
    return artifact::U16;
  if (type.isUnsignedInteger(32))
    return artifact::U32;
  if (type.isUnsignedInteger(64))
    return artifact::U64;
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

LogicalResult fillSignature(artifact::TensorSignature &sig, StringRef name,
                            Type type, ArrayAttr dimNames, Operation *where,
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

/// Puts the bytes of `value` in `writer`'s next segment: a dense_resource's
/// blob in place (the context keeps it as long as it lives, so the
/// weights are never copied on their way to the file), anything else
/// copied. False when the data is not there (an unloaded dense_resource).
static bool addElements(ElementsAttr value, artifact::FileWriter &writer,
                        artifact::Segment &segment) {
  if (auto res = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return false;
    ArrayRef<char> data = blob->getData();
    writer.add(std::string_view(data.data(), data.size()), segment);
    return true;
  }
  FailureOr<std::string> bytes = graph::tensorBytes(value);
  if (failed(bytes))
    return false;
  writer.add(std::move(*bytes), segment);
  return true;
}

/// Replaces each large constant by a new trailing argument of `func` and
/// records it as a weight, its bytes in `writer`.
static LogicalResult outlineWeights(func::FuncOp func, int64_t minBytes,
                                    artifact::Artifact &out,
                                    artifact::FileWriter &writer) {
  SmallVector<graph::ConstantOp> constants;
  func.walk([&](graph::ConstantOp c) {
    auto type = cast<RankedTensorType>(c.getType());
    Type elem = type.getElementType();
    if (elem.isInteger(1) || dtypeOf(elem) == artifact::DTYPE_UNDEFINED)
      return;
    // A splat stays in the code, which fills its buffer at run time (the
    // zeros a gradient scatters into would be a vocabulary-sized weight).
    if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
        dense && dense.isSplat())
      return;
    int64_t width = elem.getIntOrFloatBitWidth() / 8;
    // So does a dense_resource of one repeated value (ONNX initializers
    // always come as blobs: the zero points of per-channel symmetric
    // weights, a zero bias), which then reads as the splat it is.
    if (auto res = dyn_cast<DenseResourceElementsAttr>(c.getValue())) {
      AsmResourceBlob *blob = res.getRawHandle().getBlob();
      ArrayRef<char> data = blob ? blob->getData() : ArrayRef<char>();
      if (width > 0 && static_cast<int64_t>(data.size()) >= width &&
          data.size() % width == 0 &&
          llvm::all_of(llvm::seq<size_t>(width, data.size()),
                       [&](size_t i) { return data[i] == data[i % width]; })) {
        c.setValueAttr(
            DenseElementsAttr::getFromRawBuffer(type, data.take_front(width)));
        return;
      }
    }
    int64_t bytes = type.getNumElements() * width;
    if (bytes >= minBytes)
      constants.push_back(c);
  });
  for (graph::ConstantOp c : constants) {
    auto value = cast<ElementsAttr>(c.getValue());
    auto type = cast<RankedTensorType>(c.getType());
    std::string name = "weight_" + std::to_string(out.weights_size());
    if (auto res = dyn_cast<DenseResourceElementsAttr>(value))
      name = res.getRawHandle().getKey().str();
    artifact::Weight *w = out.add_weights();
    w->set_name(name);
    w->set_dtype(dtypeOf(type.getElementType()));
    for (int64_t d : type.getShape())
      w->add_dims(d);
    if (!addElements(value, writer, *w->mutable_segment()))
      return c.emitError("constant data is not available (an unloaded "
                         "dense_resource)");
    unsigned index = func.getNumArguments();
    MLIRContext *ctx = func.getContext();
    func.insertArgument(
        index, type,
        DictionaryAttr::get(
            ctx, {NamedAttribute(StringAttr::get(ctx, "graph.weight"),
                                 StringAttr::get(ctx, name))}),
        c.getLoc());
    // Read only: the runtime maps the weights from the file and shares
    // them between concurrent runs, so the code must never write one in
    // place.
    func.setArgAttr(index,
                    bufferization::BufferizationDialect::kWritableAttrName,
                    BoolAttr::get(ctx, false));
    c.replaceAllUsesWith(func.getArgument(index));
    c.erase();
  }
  return success();
}

namespace {

/// The attribute names of the training contract (docs/training.md).
constexpr StringLiteral kTrainingAttr = "loom.training";
constexpr StringLiteral kInputAttr = "graph.input";
constexpr StringLiteral kStepAttr = "graph.step";
constexpr StringLiteral kTotalStepsAttr = "graph.total_steps";
constexpr StringLiteral kStateAttr = "graph.state";
constexpr StringLiteral kStateKindAttr = "graph.state_kind";
constexpr StringLiteral kInitialValueAttr = "graph.initial_value";
constexpr StringLiteral kOutputAttr = "graph.output";
constexpr StringLiteral kNextStateAttr = "graph.next_state";

/// Whether `type` is a rank-0 tensor of `elem`.
bool isScalarOf(Type type, function_ref<bool(Type)> elem) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 0 && elem(tensor.getElementType());
}

} // namespace

/// The name of entry argument `i` in the artifact's signature: its batch
/// input, parameter or state name, "step" and "total_steps" for the
/// training counters, else input_<i>.
static std::string inputName(func::FuncOp func, unsigned i) {
  for (StringRef attr : {kInputAttr.data(), "graph.param", kStateAttr.data()})
    if (auto s = func.getArgAttrOfType<StringAttr>(i, attr))
      return s.str();
  if (func.getArgAttr(i, kStepAttr))
    return "step";
  if (func.getArgAttr(i, kTotalStepsAttr))
    return "total_steps";
  return "input_" + std::to_string(i);
}

/// The name of entry result `i`: its output name, or the name of the state
/// whose next value it is, else output_<i>.
static std::string outputName(func::FuncOp func, unsigned i) {
  for (StringRef attr : {kOutputAttr, kNextStateAttr})
    if (auto s = func.getResultAttrOfType<StringAttr>(i, attr))
      return s.str();
  return "output_" + std::to_string(i);
}

/// Fills `out.training` from the training step's attributes (the contract
/// the optimizer pass emits; docs/training.md): `loom.training` on the
/// function; on each argument one role of graph.input (batch),
/// graph.step, graph.total_steps or graph.state (+ graph.state_kind,
/// optional graph.initial_value); on each result graph.output ("loss",
/// "grad_norm", "lr" or another name, ignored by the trainer) or
/// graph.next_state. Initial values move from the IR into the artifact.
static LogicalResult fillTraining(func::FuncOp func, Attribute attr,
                                  const CompileOptions &options,
                                  artifact::Artifact &out,
                                  artifact::FileWriter &writer) {
  auto error = [&]() {
    return func.emitError() << "training step '" << func.getName() << "': ";
  };
  auto dict = dyn_cast<DictionaryAttr>(attr);
  if (!dict)
    return error() << kTrainingAttr << " must be a dictionary, not " << attr;
  artifact::Training *training = out.mutable_training();
  training->set_total_steps_input(-1);
  training->set_inference_module(options.inferenceModule);
  for (NamedAttribute entry : dict) {
    StringRef key = entry.getName();
    if (key == "accumulate" || key == "total_steps") {
      auto value = dyn_cast<IntegerAttr>(entry.getValue());
      int64_t v = value ? value.getInt() : -1;
      int64_t min = key == "accumulate" ? 1 : 0;
      if (!value || v < min || v > std::numeric_limits<int32_t>::max())
        return error() << kTrainingAttr << "." << key
                       << " must be an integer from " << min << " to "
                       << std::numeric_limits<int32_t>::max() << ", not "
                       << entry.getValue();
      if (key == "accumulate")
        training->set_accumulate(static_cast<int32_t>(v));
      else
        training->set_total_steps(v);
    } else if (key == "description" || key == "labels") {
      auto value = dyn_cast<StringAttr>(entry.getValue());
      if (!value)
        return error() << kTrainingAttr << "." << key
                       << " must be a string, not " << entry.getValue();
      if (key == "description")
        training->set_description(value.str());
      else
        training->set_labels(value.str());
    } else {
      return error() << kTrainingAttr << " has an unknown entry '" << key
                     << "' (known: accumulate, total_steps, description, "
                        "labels)";
    }
  }
  if (training->accumulate() == 0)
    return error() << kTrainingAttr << " has no accumulate";

  // Arguments: exactly one role each.
  llvm::StringMap<unsigned> stateArgs;
  llvm::StringSet<> batchNames;
  bool hasStep = false;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    Type type = func.getArgument(i).getType();
    auto argError = [&]() {
      return error() << "argument " << i << " ('" << inputName(func, i)
                     << "') ";
    };
    int roles = 0;
    for (StringRef role : {kInputAttr, kStepAttr, kTotalStepsAttr, kStateAttr})
      roles += func.getArgAttr(i, role) != nullptr;
    if (roles != 1)
      return argError() << "must have exactly one of " << kInputAttr << ", "
                        << kStepAttr << ", " << kTotalStepsAttr << ", "
                        << kStateAttr << " (it has " << roles << ")";
    if (Attribute input = func.getArgAttr(i, kInputAttr)) {
      auto name = dyn_cast<StringAttr>(input);
      if (!name || name.getValue().empty())
        return argError() << kInputAttr << " must be a non-empty string";
      batchNames.insert(name.getValue());
      continue;
    }
    for (StringRef counter : {kStepAttr, kTotalStepsAttr}) {
      if (!func.getArgAttr(i, counter))
        continue;
      if (!isa<UnitAttr>(func.getArgAttr(i, counter)))
        return argError() << counter << " must be a unit attribute";
      if (!isScalarOf(type, [](Type t) { return t.isSignlessInteger(64); }))
        return argError() << "has " << counter
                          << ", so it must be a tensor<i64> scalar, not "
                          << type;
      bool isStep = counter == kStepAttr;
      if (isStep ? hasStep : training->total_steps_input() >= 0)
        return argError() << "is a second " << counter << " argument";
      if (isStep) {
        hasStep = true;
        training->set_step_input(static_cast<int32_t>(i));
      } else {
        training->set_total_steps_input(static_cast<int32_t>(i));
      }
    }
    if (!func.getArgAttr(i, kStateAttr))
      continue;
    auto name = func.getArgAttrOfType<StringAttr>(i, kStateAttr);
    auto kind = func.getArgAttrOfType<StringAttr>(i, kStateKindAttr);
    if (!name || name.getValue().empty())
      return argError() << kStateAttr << " must be a non-empty string";
    if (!kind || kind.getValue().empty())
      return argError() << "has no " << kStateKindAttr
                        << " (\"param\", \"exp_avg\", ...)";
    if (!stateArgs.try_emplace(name.getValue(), i).second)
      return argError() << "is a second state named '" << name.getValue()
                        << "'";
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return argError() << "is state, so its shape must be static, not "
                        << type;
    artifact::TrainingState *state = training->add_state();
    Type wholeType = type; // of the initial value
    state->set_name(name.str());
    state->set_kind(kind.str());
    state->set_input(static_cast<int32_t>(i));
    state->set_output(-1);
    if (auto shard = func.getArgAttrOfType<DictionaryAttr>(i, "graph.shard")) {
      auto axis = shard.getAs<StringAttr>("axis");
      auto full = shard.getAs<DenseI64ArrayAttr>("shape");
      if (!axis || !full)
        return argError() << "graph.shard needs an axis and a shape";
      artifact::StateShard *out = state->mutable_shard();
      out->set_axis(axis.str());
      for (int64_t d : full.asArrayRef())
        out->add_full_dims(d);
      if (auto dim = shard.getAs<IntegerAttr>("dim")) {
        // Tensor parallel: a piece along one dim; the initial value is
        // the whole tensor.
        auto groups = shard.getAs<IntegerAttr>("groups");
        int64_t d = dim.getInt(), g = groups ? groups.getInt() : 1;
        if (d < 0 || d >= (int64_t)full.size() ||
            full.size() != (size_t)tensor.getRank() || g < 1 ||
            tensor.getDimSize(d) == 0 || full[d] % tensor.getDimSize(d) ||
            full[d] % (g * (full[d] / tensor.getDimSize(d))))
          return argError() << "graph.shard " << shard
                            << " does not describe a piece of " << type;
        out->set_dim(static_cast<int32_t>(d));
        out->set_groups(g);
        wholeType = tensor.clone(full.asArrayRef());
      } else if (func.getArgAttr(i, kInitialValueAttr)) {
        // ZeRO-3: a flat chunk of a parameter whose initial value is the
        // whole tensor (each rank cuts its chunk).
        int64_t numel = 1;
        for (int64_t d : full.asArrayRef())
          numel *= d;
        int64_t chunk = tensor.getRank() == 1 ? tensor.getDimSize(0) : 0;
        if (chunk < 1 || chunk > numel || chunk * 65536 < numel)
          return argError() << "graph.shard " << shard
                            << " does not describe a flat chunk of " << type;
        wholeType = tensor.clone(full.asArrayRef());
      }
    }
    if (Attribute init = func.getArgAttr(i, kInitialValueAttr)) {
      auto value = dyn_cast<ElementsAttr>(init);
      if (!value || value.getType() != wholeType)
        return argError() << kInitialValueAttr << " must be elements of type "
                          << wholeType;
      if (options.initialValues &&
          !addElements(value, writer, *state->mutable_initial_segment()))
        return argError() << kInitialValueAttr
                          << " has no data (an unloaded dense_resource)";
      // The bytes live in the artifact now; codegen need not carry them.
      func.removeArgAttr(i, kInitialValueAttr);
    }
  }
  if (!options.sourceOnnx.empty()) {
    // The source model is kept for `loomc export`, which writes the
    // trained values into exactly the parameters' initializers: their
    // data would be a second copy of the state's initial values.
    std::set<std::string> params;
    for (const artifact::TrainingState &s : training->state())
      if (s.kind() == "param")
        params.insert(s.name());
    auto dataOf =
        [&](const std::string &name) -> std::optional<std::string_view> {
      auto found = options.sourceData.find(name);
      if (found == options.sourceData.end())
        return std::nullopt;
      // The importer records only the blobs it moved data into (a
      // DenseElementsAttr's raw data would be one element for a splat).
      auto res = dyn_cast<DenseResourceElementsAttr>(found->second);
      AsmResourceBlob *blob = res ? res.getRawHandle().getBlob() : nullptr;
      if (!blob)
        return std::nullopt;
      return std::string_view(blob->getData().data(), blob->getData().size());
    };
    std::string stripped;
    std::string problem = onnx_export::dropInitializerData(
        options.sourceOnnx, params, dataOf, stripped);
    if (!problem.empty())
      return error() << "the source model: " << problem;
    training->set_source_onnx(std::move(stripped));
  }
  if (!hasStep)
    return error() << "no argument is the micro-step counter (" << kStepAttr
                   << ")";
  if (!training->labels().empty() && !batchNames.contains(training->labels()))
    return error() << "the labels '" << training->labels()
                   << "' are not a batch input (" << kInputAttr << ")";

  // Results: the scalars and one next value per state.
  llvm::StringMap<int32_t> scalars = {
      {"loss", -1}, {"grad_norm", -1}, {"lr", -1}, {"loss_scale", -1}};
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    Type type = func.getResultTypes()[i];
    auto resultError = [&]() {
      return error() << "result " << i << " ('" << outputName(func, i) << "') ";
    };
    auto output = func.getResultAttrOfType<StringAttr>(i, kOutputAttr);
    auto next = func.getResultAttrOfType<StringAttr>(i, kNextStateAttr);
    if (!output == !next)
      return resultError() << "must have exactly one of " << kOutputAttr
                           << " and " << kNextStateAttr;
    if (output) {
      auto it = scalars.find(output.getValue());
      if (it == scalars.end())
        continue; // another output: the trainer ignores it
      if (it->second >= 0)
        return resultError()
               << "is a second '" << output.getValue() << "' output";
      if (!isScalarOf(type, [](Type t) { return t.isF32(); }))
        return resultError() << "must be tensor<f32>, not " << type;
      it->second = static_cast<int32_t>(i);
      continue;
    }
    auto arg = stateArgs.find(next.getValue());
    if (arg == stateArgs.end())
      return resultError() << "is the next value of '" << next.getValue()
                           << "', which is no state argument";
    for (artifact::TrainingState &state : *training->mutable_state()) {
      if (state.name() != next.getValue())
        continue;
      if (state.output() >= 0)
        return resultError()
               << "is a second next value of state '" << next.getValue() << "'";
      Type stateType = func.getArgument(arg->second).getType();
      if (type != stateType)
        return resultError()
               << "is the next value of state '" << next.getValue() << "' ("
               << stateType << ") but has type " << type;
      state.set_output(static_cast<int32_t>(i));
    }
  }
  for (StringRef name : {"loss", "grad_norm", "lr"})
    if (scalars[name] < 0)
      return error() << "no result is the '" << name << "' output ("
                     << kOutputAttr << " = \"" << name << "\")";
  training->set_loss_output(scalars["loss"]);
  training->set_grad_norm_output(scalars["grad_norm"]);
  training->set_lr_output(scalars["lr"]);
  if (scalars["loss_scale"] >= 0)
    training->set_loss_scale_output(scalars["loss_scale"]);
  for (const artifact::TrainingState &state : training->state())
    if (state.output() < 0)
      return error() << "state '" << state.name() << "' has no next value (a "
                     << "result with " << kNextStateAttr << " = \""
                     << state.name() << "\")";
  return success();
}

/// The next values of the state leave the signature: the CPU code writes
/// each into its state's input (`kStateInPlaceAttr` on the function: pairs
/// of result and argument indices, for --loom-cpu-state-in-place).
static void updateStateInPlace(func::FuncOp func, artifact::Artifact &out) {
  artifact::Training *training = out.mutable_training();
  if (training->state_size() == 0)
    return;
  SmallVector<int64_t> pairs;
  std::vector<bool> dropped(out.outputs_size(), false);
  for (artifact::TrainingState &state : *training->mutable_state()) {
    pairs.push_back(state.output());
    pairs.push_back(state.input());
    dropped[state.output()] = true;
    state.set_output(-1);
  }
  // The other outputs' new indices.
  std::vector<int32_t> index(out.outputs_size(), -1);
  google::protobuf::RepeatedPtrField<artifact::TensorSignature> kept;
  for (int i = 0; i < out.outputs_size(); ++i)
    if (!dropped[i]) {
      index[i] = kept.size();
      *kept.Add() = out.outputs(i);
    }
  *out.mutable_outputs() = std::move(kept);
  training->set_loss_output(index[training->loss_output()]);
  training->set_grad_norm_output(index[training->grad_norm_output()]);
  training->set_lr_output(index[training->lr_output()]);
  if (training->has_loss_scale_output())
    training->set_loss_scale_output(index[training->loss_scale_output()]);
  training->set_state_in_place(true);
  func->setAttr(codegen::kStateInPlaceAttr,
                DenseI64ArrayAttr::get(func.getContext(), pairs));
}

static artifact::DType dtypeOfName(StringRef name, MLIRContext *ctx) {
  // The CUDA program names element types as MLIR prints them.
  Type t = name.empty() ? Type() : parseType(name, ctx);
  return t ? dtypeOf(t) : artifact::DTYPE_UNDEFINED;
}

/// The CUDA program of `func` into `out.cuda` (and, with archs, its
/// binaries compiled by `options.compileCuda`).
static LogicalResult compileCuda(ModuleOp module, func::FuncOp func,
                                 unsigned numInputs,
                                 const CompileOptions &options,
                                 artifact::Artifact &out,
                                 CompileReport *report) {
  FailureOr<codegen::cuda::Program> program =
      codegen::compileForCuda(module, func.getName(), numInputs, options.cuda);
  if (failed(program))
    return failure();
  MLIRContext *ctx = module.getContext();
  artifact::CudaCode *cuda = out.mutable_cuda();
  cuda->set_source(program->source);
  cuda->set_arena_bytes(program->arenaBytes);
  for (const codegen::cuda::Buffer &b : program->buffers) {
    artifact::CudaBuffer *buffer = cuda->add_buffers();
    buffer->set_kind(b.kind == codegen::cuda::Buffer::Input
                         ? artifact::CudaBuffer::INPUT
                     : b.kind == codegen::cuda::Buffer::Weight
                         ? artifact::CudaBuffer::WEIGHT
                         : artifact::CudaBuffer::ARENA);
    buffer->set_index(b.index);
    buffer->set_offset(b.offset);
    buffer->set_bytes(b.bytes);
    buffer->set_dtype(dtypeOfName(b.elementType, ctx));
    for (int64_t d : b.shape)
      buffer->add_dims(d);
    buffer->set_name(b.name);
  }
  for (const codegen::cuda::Kernel &k : program->kernels) {
    artifact::CudaKernel *kernel = cuda->add_kernels();
    kernel->set_name(k.name);
    kernel->set_description(k.description);
    kernel->set_grid(k.grid);
    kernel->set_block(static_cast<int32_t>(k.block));
    kernel->set_shared_bytes(static_cast<int32_t>(k.sharedBytes));
    for (int a : k.args)
      kernel->add_args(a);
    kernel->set_pointer_table(k.pointerTable);
    out.add_kernels(k.name);
  }
  for (const codegen::cuda::Gemm &g : program->gemms) {
    artifact::CudaGemm *gemm = cuda->add_gemms();
    gemm->set_name(g.name);
    gemm->set_description(g.description);
    gemm->set_m(g.m);
    gemm->set_n(g.n);
    gemm->set_k(g.k);
    gemm->set_batch(g.batch);
    gemm->set_trans_a(g.transA);
    gemm->set_trans_b(g.transB);
    gemm->set_stride_a(g.strideA);
    gemm->set_stride_b(g.strideB);
    gemm->set_stride_d(g.strideD);
    gemm->set_dtype(dtypeOfName(g.elementType, ctx));
    gemm->set_a(g.a);
    gemm->set_b(g.b);
    gemm->set_d(g.d);
    gemm->set_bias(g.bias);
    gemm->set_activation(g.activation);
    out.add_kernels(g.name);
  }
  for (const codegen::cuda::Step &s : program->steps) {
    artifact::CudaStep *step = cuda->add_steps();
    if (s.kind == codegen::cuda::Step::Launch)
      step->set_launch(s.index);
    else if (s.kind == codegen::cuda::Step::Collective)
      step->set_collective(s.index);
    else if (s.kind == codegen::cuda::Step::CollectiveWait)
      step->set_collective_wait(s.index);
    else
      step->set_gemm(s.index);
  }
  for (const codegen::cuda::Collective &c : program->collectives) {
    artifact::CudaCollective *collective = cuda->add_collectives();
    collective->set_kind(static_cast<int32_t>(c.kind));
    collective->set_dtype(dtypeOfName(c.elementType, ctx));
    collective->set_op(c.op);
    collective->set_axes(c.axes);
    collective->set_in(c.in);
    collective->set_out(c.out);
    collective->set_name(c.name);
  }
  for (int o : program->outputs)
    cuda->add_output_buffers(o);
  cuda->set_allow_tf32(options.cudaAllowTf32);
  for (const std::string &arch : options.cudaArchs) {
    if (!options.compileCuda)
      return module.emitError("--arch ")
             << arch << ": no CUDA compiler was given (NVRTC)";
    std::string cubin, error;
    int version = 0;
    if (!options.compileCuda(program->source, arch, cubin, version, error))
      return module.emitError("NVRTC compiling the CUDA source for ")
             << arch << " failed: " << error;
    artifact::CudaBinary *binary = cuda->add_binaries();
    binary->set_arch(arch);
    binary->set_cubin(std::move(cubin));
    binary->set_nvrtc_version(version);
  }
  if (report) {
    report->cudaSource = program->source;
    report->arenaBytes = program->arenaBytes;
    report->cudaKernels = program->kernels.size();
    report->cudaGemms = program->gemms.size();
    report->memoryPlan =
        "CUDA memory plan: " + std::to_string(program->buffers.size()) +
        " buffers, arena " + std::to_string(program->arenaBytes) + " bytes\n";
  }
  return success();
}

/// The file of `out` with `writer`'s segments: written at
/// options.outputPath when set (streamed, never assembled in memory), else
/// into `bytes`.
static LogicalResult finishArtifact(ModuleOp module, artifact::Artifact &out,
                                    artifact::FileWriter &writer,
                                    const CompileOptions &options,
                                    std::string &bytes) {
  std::string error;
  bool ok = options.outputPath.empty()
                ? writer.assemble(out, artifact::kArtifactFile, bytes, error)
                : writer.write(out, artifact::kArtifactFile, options.outputPath,
                               error);
  if (!ok)
    return module.emitError(error);
  return success();
}

LogicalResult compileToArtifact(ModuleOp module, const CompileOptions &options,
                                std::string &bytes, CompileReport *report) {
  if (options.target != "cpu" && options.target != "cuda")
    return module.emitError("target '")
           << options.target << "' is not supported (available: cpu, cuda)";
  FailureOr<func::FuncOp> func = entryFunction(module, options.funcName);
  if (failed(func))
    return failure();

  artifact::Artifact out;
  // The tensors' bytes (weights, initial values), in the data section.
  artifact::FileWriter writer;
  out.set_producer("loomc");
  out.set_model_name(func->getName().str());
  for (unsigned i = 0; i < func->getNumArguments(); ++i) {
    std::string name = inputName(*func, i);
    if (failed(fillSignature(
            *out.add_inputs(), name, func->getArgument(i).getType(),
            func->getArgAttrOfType<ArrayAttr>(i, "graph.dim_names"), *func,
            "input")))
      return failure();
  }
  for (unsigned i = 0; i < func->getNumResults(); ++i) {
    std::string name = outputName(*func, i);
    if (failed(fillSignature(*out.add_outputs(), name,
                             func->getResultTypes()[i], nullptr, *func,
                             "output")))
      return failure();
  }
  if (out.outputs_size() == 0)
    return func->emitError("the function has no results to compute");
  if (Attribute training = (*func)->getAttr(kTrainingAttr)) {
    if (failed(fillTraining(*func, training, options, out, writer)))
      return failure();
    if (options.stateInPlace && options.target == "cpu")
      updateStateInPlace(*func, out);
  } else {
    for (unsigned i = 0; i < func->getNumArguments(); ++i)
      for (StringRef role : {kStepAttr, kTotalStepsAttr, kStateAttr})
        if (func->getArgAttr(i, role))
          return func->emitError("argument ")
                 << i << " has " << role << ", but the function has no "
                 << kTrainingAttr << " attribute";
    if (!options.inferenceModule.empty())
      return func->emitError("an inference module was given, but '")
             << func->getName() << "' is not a training step (no "
             << kTrainingAttr << ")";
    // Graph-level folds before the weights are outlined, as the training
    // pipeline has them: a transpose of a weight feeding a matmul becomes
    // its transpose flag (PyTorch exports a Linear as MatMul(x,
    // Transpose(W)) when constants are not folded, and the tied LM head's
    // 768 x 50257 transpose was 40% of GPT-2 small's inference), identities
    // go, equal subgraphs merge. (A training step is canonicalized by its
    // pipeline; CSE would merge the recompute pass's clones back, so a
    // function holding some, a gradient function, gets no CSE.)
    bool recomputes = false;
    func->walk(
        [&](Operation *op) { recomputes |= op->hasAttr("loom.recompute"); });
    PassManager pm(module.getContext());
    // On CUDA the int8 products' constant weights are stored N x K, as
    // cuBLASLt's int8 GEMM reads them (not transposed on every run).
    if (options.target == "cuda") {
      IntegerMatmulPassOptions integer;
      integer.weightsNK = true;
      pm.addNestedPass<func::FuncOp>(createIntegerMatmulPass(integer));
    }
    pm.addPass(createCanonicalizerPass());
    if (!recomputes)
      pm.addPass(createCSEPass());
    if (failed(pm.run(module)))
      return failure();
  }
  if (mesh::MeshOp mesh = sharding::findMesh(module)) {
    artifact::Mesh *m = out.mutable_mesh();
    SmallVector<std::string> axes = sharding::axisNames(mesh);
    if (axes.size() != mesh.getShape().size())
      return mesh.emitError("the mesh needs one name per axis (")
             << sharding::kAxesAttr << ")";
    for (auto [size, name] : llvm::zip(mesh.getShape(), axes)) {
      if (size <= 0)
        return mesh.emitError("the mesh's axes need static sizes");
      m->add_shape(size);
      m->add_axes(name);
    }
    if (auto zero = mesh->getAttrOfType<IntegerAttr>(sharding::kZeroAttr))
      m->set_zero_stage(static_cast<int32_t>(zero.getInt()));
  }
  unsigned numInputs = func->getNumArguments();
  if (failed(outlineWeights(*func, options.minWeightBytes, out, writer)))
    return failure();

  if (options.target == "cuda") {
    if (failed(compileCuda(module, *func, numInputs, options, out, report)))
      return failure();
    return finishArtifact(module, out, writer, options, bytes);
  }

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
  if (report) {
    report->memoryPlan = code->memoryPlan;
    report->arenaBytes = code->arenaBytes;
  }

  return finishArtifact(module, out, writer, options, bytes);
}

void summarizeModule(ModuleOp module, llvm::raw_ostream &os) {
  std::map<std::string, int64_t> ops;
  int64_t params = 0, bytes = 0, tensors = 0;
  module.walk([&](Operation *op) {
    if (!isa<graph::GraphDialect>(op->getDialect()))
      return;
    ++ops[op->getName().getStringRef().str()];
    if (auto c = dyn_cast<graph::ConstantOp>(op)) {
      auto type = cast<RankedTensorType>(c.getType());
      ++tensors;
      params += type.getNumElements();
      unsigned bits = type.getElementType().getIntOrFloatBitWidth();
      bytes += type.getNumElements() * ((bits + 7) / 8);
    }
  });
  os << "ops:\n";
  for (auto &[name, count] : ops)
    os << "  " << name << ": " << count << "\n";
  os << "parameters: " << params << " in " << tensors << " tensors, " << bytes
     << " bytes\n";
}

} // namespace loom
