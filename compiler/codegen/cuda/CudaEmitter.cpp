//===- CudaEmitter.cpp - kernel.fusion regions to CUDA C++ ----------------===//
//
// Each `kernel.fusion` region of a function (after --loom-fusion) becomes
// CUDA C++ kernels and cuBLASLt calls:
//
// * a "map" kernel computes each element of its outputs on its own, in a
//   grid-stride loop (4 elements per iteration with vector loads and
//   stores when the outputs are contiguous and a multiple of 4 long).
//   Every graph op is an expression evaluated at an index, written by the
//   emitter its family registered (CudaEmitInternal.h): elementwise ops
//   with NumPy broadcasting, data movement (reshape, transpose, slice,
//   concat, pad, gather, ...) as index arithmetic, and reductions,
//   pooling, softmax and norms as loops over the reduced elements;
// * a "row" kernel serves a reduction, softmax or layer norm whose
//   reduced dims include the last one (CudaEmitRowKernel.cpp);
// * a region holding a matmul or a scatter is emitted whole by that op's
//   family: a cuBLASLt call (CudaEmitGemm.cpp), a scatter kernel.
//
// This file is the driver: it picks the kernels of each region, assembles
// the map kernels, places the mesh collectives between regions (a start
// and a wait step each, CudaEmitCollective.cpp), and plans the buffers of
// the function in one arena.
// An op the emitter does not cover is an error naming the op and its
// location, never a kernel that computes something else.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/CudaEmitter.h"

#include "compiler/codegen/cuda/CudaEmitInternal.h"
#include "compiler/codegen/cuda/CudaPrelude.h"
#include "dialects/graph/LocationString.h"
#include "dialects/graph/TensorBytes.h"
#include "passes/MemoryPlan/ArenaPlanner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>

using namespace mlir;
using namespace loom::graph;

namespace loom::codegen::cuda {
namespace detail {

const OpEmitterTable &opEmitters() {
  static const OpEmitterTable table = [] {
    OpEmitterTable families;
    registerElementwiseEmitters(families);
    registerDataMovementEmitters(families);
    registerReductionEmitters(families);
    registerGemmEmitters(families);
    registerAttentionEmitters(families);
    registerRandomEmitters(families);
    return families;
  }();
  return table;
}

//===----------------------------------------------------------------------===//
// RegionEmitter
//===----------------------------------------------------------------------===//

std::string RegionEmitter::description() {
  std::string text = fusion.getName().str() + " (" +
                     kernel::stringifyFusionKind(fusion.getKind()).str() + "):";
  for (Operation &op : fusion.getBody().front().without_terminator())
    text += " " + op.getName().getStringRef().drop_front(6).str();
  std::string location = locationString(fusion.getLoc());
  if (!location.empty())
    text += " @ " + location;
  return text;
}

std::string RegionEmitter::kernelName() {
  std::string name = fusion.getName().str();
  if (kernelCounter > 0)
    name += "_" + std::to_string(kernelCounter);
  ++kernelCounter;
  return name;
}

std::string RegionEmitter::constantArray(graph::ConstantOp constant) {
  auto it = constantNames.find(constant);
  if (it != constantNames.end())
    return it->second;
  // Element by element: a resource blob's bytes as dense elements first.
  ElementsAttr value = graph::denseElements(constant.getValue());
  if (!value)
    value = constant.getValue();
  Type type = value.getElementType();
  std::string name =
      fusion.getName().str() + "_c" + std::to_string(constantNames.size());
  std::vector<std::string> elements;
  for (int64_t i = 0; i < value.getNumElements(); ++i) {
    double element = elementAsDouble(value, i);
    std::string elementText = literal(element, type);
    if (type.isF16())
      elementText = "__half_raw{" +
                    std::to_string(APFloat(static_cast<float>(element))
                                       .bitcastToAPInt()
                                       .getZExtValue()) +
                    "}";
    if (type.isF16() || type.isBF16()) {
      // 16-bit storage: the exact bits of the attribute.
      auto floatAttr = cast<FloatAttr>(value.getValues<Attribute>()[i]);
      uint64_t bits = floatAttr.getValue().bitcastToAPInt().getZExtValue();
      elementText =
          std::string(type.isF16() ? "__half_raw" : "__nv_bfloat16_raw") + "{" +
          std::to_string(bits) + "}";
    }
    elements.push_back(std::move(elementText));
  }
  constantNames[constant] = deviceArray(name, storageType(type), elements);
  return name;
}

std::string RegionEmitter::deviceArray(const std::string &name, StringRef type,
                                       ArrayRef<std::string> elements) {
  std::string text = "__device__ const " + type.str() + " " + name + "[" +
                     std::to_string(elements.size()) + "] = {";
  for (auto [i, element] : llvm::enumerate(elements))
    text += (i ? ", " : "") + element;
  constants += text + "};\n";
  return name;
}

int RegionEmitter::bufferOfResult(Value value) {
  auto yield = cast<kernel::YieldOp>(fusion.getBody().front().getTerminator());
  for (auto [v, buffer] : llvm::zip(yield.getOperands(), resultBuffers))
    if (v == value)
      return buffer;
  return -1;
}

void RegionEmitter::addKernel(KernelText &kernel, int64_t grid, int64_t block,
                              StringRef what) {
  Kernel launch;
  launch.name = kernel.name;
  launch.description = description();
  if (!what.empty())
    launch.description += " [" + what.str() + "]";
  launch.grid = std::max<int64_t>(1, grid);
  launch.block = block;
  for (auto &param : kernel.params)
    launch.args.push_back(param.second);
  launch.pointerTable = kernel.usesPointerTable();
  program.source += "\n// " + launch.description + "\n// launch: grid " +
                    std::to_string(launch.grid) + ", block " +
                    std::to_string(block) + "\n" + kernel.definition();
  program.steps.push_back(
      {Step::Launch, static_cast<int>(program.kernels.size())});
  program.kernels.push_back(std::move(launch));
}

LogicalResult RegionEmitter::emit() {
  Block &body = fusion.getBody().front();
  auto yield = cast<kernel::YieldOp>(body.getTerminator());
  // An op that takes the whole region (a matmul, a scatter) decides it.
  for (Operation &op : body.without_terminator()) {
    // ONNX If, Loop and Scan: no kernel runs a region op yet.
    if (isa<graph::IfOp, graph::LoopOp>(op))
      return op.emitError("CUDA codegen: ")
             << op.getName()
             << " (control flow) is not supported on the CUDA target yet; "
                "compile for the CPU (--target cpu) ["
             << locationString(op.getLoc()) << "]";
    // nonzero (ONNX NonZero, Compress, Unique): its result size is the
    // data's, which no launch here can size.
    if (isa<graph::NonZeroOp>(op))
      return op.emitError("CUDA codegen: ")
             << op.getName()
             << " (a result size that depends on the data) is not supported "
                "on the CUDA target yet; compile for the CPU (--target cpu) ["
             << locationString(op.getLoc()) << "]";
    for (Value result : op.getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type || !type.hasStaticShape() ||
          !supportedElement(type.getElementType()))
        return op.emitError("CUDA codegen: ")
               << op.getName() << " has type " << result.getType()
               << "; the CUDA target takes static shapes of f32, f16, bf16, "
                  "f64, i1 and 8- to 64-bit integers ["
               << locationString(op.getLoc()) << "]";
    }
    const OpEmitter *emitter = opEmitters().lookup(&op);
    if (emitter && emitter->wholeRegion)
      return emitter->wholeRegion(*this, &op);
  }
  // Reductions with few results over many elements: split over the grid.
  FailureOr<bool> split = emitSplitReductions(*this);
  if (failed(split))
    return failure();
  if (*split)
    return success();
  // Then the first op that can root a row kernel, if its row kernel
  // applies.
  for (Operation &op : body.without_terminator()) {
    const OpEmitter *emitter = opEmitters().lookup(&op);
    if (!emitter || !emitter->rowKernel)
      continue;
    FailureOr<bool> rows = emitter->rowKernel(*this, &op);
    if (failed(rows))
      return failure();
    if (*rows)
      return success();
    // Fall back to the map kernel, named as if the row kernel never was.
    kernelCounter = 0;
    break;
  }
  SmallVector<Value> values(yield.getOperands());
  return emitMap(values, resultBuffers);
}

//===----------------------------------------------------------------------===//
// Map kernels
//===----------------------------------------------------------------------===//

/// Block arguments of the region that `values` read.
static SmallVector<BlockArgument> argsRead(ArrayRef<Value> values) {
  SmallVector<BlockArgument> args;
  SmallVector<Value> work(values.begin(), values.end());
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Value value = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      if (!llvm::is_contained(args, arg))
        args.push_back(arg);
      continue;
    }
    Operation *def = value.getDefiningOp();
    if (def && seen.insert(def).second)
      work.append(def->operand_begin(), def->operand_end());
  }
  llvm::sort(args, [](BlockArgument a, BlockArgument b) {
    return a.getArgNumber() < b.getArgNumber();
  });
  return args;
}

/// For each of `values` (outputs of shape `shape`), its component: outputs
/// that read an operand of that shape in common (a block argument, or a
/// value of `readBack`), directly or through other outputs' operands,
/// share one; numbered from 0 in the order of their first output.
static SmallVector<int>
independentOutputs(ArrayRef<Value> values, ArrayRef<int64_t> shape,
                   const DenseMap<Value, int> &readBack) {
  SmallVector<int> parent(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    parent[i] = static_cast<int>(i);
  // Iterative, with path halving: a chain of thousands of outputs must not
  // recurse as deep.
  auto find = [&](int i) {
    while (parent[i] != i)
      i = parent[i] = parent[parent[i]];
    return i;
  };
  DenseMap<Value, int> firstReader;
  for (auto [n, output] : llvm::enumerate(values)) {
    SmallVector<Value> work = {output};
    llvm::SmallPtrSet<Operation *, 16> seen;
    while (!work.empty()) {
      Value value = work.pop_back_val();
      bool leaf = isa<BlockArgument>(value) || readBack.count(value);
      if (leaf && ArrayRef<int64_t>(shapeOf(value)) == shape) {
        auto [it, inserted] = firstReader.try_emplace(value, n);
        if (!inserted)
          parent[find(static_cast<int>(n))] = find(it->second);
      }
      if (leaf)
        continue;
      Operation *def = value.getDefiningOp();
      if (def && seen.insert(def).second)
        work.append(def->operand_begin(), def->operand_end());
    }
  }
  SmallVector<int> component(values.size());
  DenseMap<int, int> number;
  for (size_t i = 0; i < values.size(); ++i)
    component[i] = number.try_emplace(find(static_cast<int>(i)), number.size())
                       .first->second;
  return component;
}

/// `loom::vec<T, 4>` of the storage type of `type`.
static std::string vectorType(Type type) {
  return "loom::vec<" + storageType(type) + ", " +
         std::to_string(kVectorWidth) + ">";
}

LogicalResult RegionEmitter::emitMap(ArrayRef<Value> values,
                                     ArrayRef<int> buffers,
                                     const DenseMap<Value, int> &readBack) {
  return emitMap(values, buffers, readBack, {});
}

LogicalResult
RegionEmitter::emitMap(ArrayRef<Value> values, ArrayRef<int> buffers,
                       const DenseMap<Value, int> &readBack,
                       const DenseMap<Value, ComputedValue> &computed) {
  // Outputs of one shape share a grid-stride loop; shapes in order.
  SmallVector<SmallVector<int64_t>> shapes;
  for (Value value : values) {
    SmallVector<int64_t> shape(shapeOf(value));
    if (!llvm::is_contained(shapes, shape))
      shapes.push_back(shape);
  }
  KernelText kernel(*this, kernelName());
  // Values computed elsewhere in this region and read back from a buffer.
  for (auto &[value, buffer] : readBack) {
    Value readValue = value;
    int readBuffer = buffer;
    kernel.overrides[readValue] = [&kernel, readValue,
                                   readBuffer](const Idx &index) {
      std::string pointer = kernel.param(readBuffer, elemOf(readValue), false);
      return FailureOr<std::string>(
          kernel.let(computeType(elemOf(readValue)),
                     "loom::ld(" + pointer + "[" +
                         linearize(index, shapeOf(readValue)) + "])"));
    };
  }
  // Values the caller computes (scalar loads of what its steps wrote).
  for (auto &[value, compute] : computed) {
    ComputedValue fn = compute;
    kernel.overrides[value] = [&kernel, fn](const Idx &index) {
      return fn(kernel, index);
    };
  }
  int64_t iterations = 0;
  auto emitLoop = [&](ArrayRef<int64_t> shape, ArrayRef<Value> group,
                      ArrayRef<int> groupBuffers) -> LogicalResult {
    int64_t count = numel(shape);
    bool vectorize = count % kVectorWidth == 0 && count >= kVectorWidth;
    int64_t loopIterations = vectorize ? count / kVectorWidth : count;
    iterations = std::max(iterations, loopIterations);
    std::string stride = "(loom::i64)gridDim.x * blockDim.x";
    std::string loopVar = vectorize ? "j" : "i";
    kernel.open("for (loom::i64 " + loopVar +
                " = blockIdx.x * (loom::i64)blockDim.x + threadIdx.x; " +
                loopVar + " < " + std::to_string(loopIterations) + "; " +
                loopVar + " += " + stride + ")");
    SmallVector<std::string> outVectors;
    // Values read as vectors in this loop, with the override each had
    // before (a read-back value's), restored after the loop.
    SmallVector<std::pair<Value, KernelText::Override>> preloaded;
    if (vectorize) {
      // Inputs of the loop's shape, read whole: one vector load each.
      SmallVector<Value> reads;
      for (BlockArgument arg : argsRead(group))
        reads.push_back(arg);
      for (auto &entry : readBack)
        reads.push_back(entry.first);
      for (Value read : reads) {
        if (ArrayRef<int64_t>(shapeOf(read)) != ArrayRef<int64_t>(shape))
          continue;
        int buffer = isa<BlockArgument>(read)
                         ? bufferOfArg(cast<BlockArgument>(read))
                         : readBack.lookup(read);
        Type type = elemOf(read);
        std::string pointer = kernel.param(buffer, type, false);
        std::string vector = kernel.let(
            vectorType(type),
            "*reinterpret_cast<const " + vectorType(type) + " *>(" + pointer +
                " + " + std::to_string(kVectorWidth) + " * j)",
            "a");
        KernelText::Override previous = kernel.overrides.lookup(read);
        preloaded.push_back({read, previous});
        kernel.overrides[read] =
            [&kernel, vector, read, type, previous,
             buffer](const Idx &index) -> FailureOr<std::string> {
          if (index == kernel.laneIdx)
            return kernel.let(computeType(type),
                              "loom::ld(" + vector + ".v[l])");
          if (previous)
            return previous(index);
          std::string pointer = kernel.param(buffer, type, false);
          return FailureOr<std::string>(kernel.let(
              computeType(type), "loom::ld(" + pointer + "[" +
                                     linearize(index, shapeOf(read)) + "])"));
        };
      }
      for (Value value : group) {
        std::string out = kernel.fresh("o");
        kernel.line(vectorType(elemOf(value)) + " " + out + ";");
        outVectors.push_back(out);
      }
      kernel.line("#pragma unroll");
      kernel.open("for (int l = 0; l < " + std::to_string(kVectorWidth) +
                  "; ++l)");
      kernel.line("loom::i64 i = " + std::to_string(kVectorWidth) +
                  " * j + l;");
    }
    Idx index = kernel.decompose("i", shape, "x");
    kernel.laneIdx = vectorize ? index : Idx{"<none>"};
    for (auto [n, valueAndBuffer] :
         llvm::enumerate(llvm::zip(group, groupBuffers))) {
      auto [value, buffer] = valueAndBuffer;
      FailureOr<std::string> element = kernel.eval(value, index);
      if (failed(element))
        return failure();
      if (vectorize) {
        kernel.line("loom::st(&" + outVectors[n] + ".v[l], " + *element + ");");
      } else {
        std::string out = kernel.param(buffer, elemOf(value), true);
        kernel.line("loom::st(" + out + " + i, " + *element + ");");
      }
    }
    if (vectorize) {
      kernel.close();
      for (auto [n, valueAndBuffer] :
           llvm::enumerate(llvm::zip(group, groupBuffers))) {
        auto [value, buffer] = valueAndBuffer;
        std::string out = kernel.param(buffer, elemOf(value), true);
        kernel.line("*reinterpret_cast<" + vectorType(elemOf(value)) + " *>(" +
                    out + " + " + std::to_string(kVectorWidth) +
                    " * j) = " + outVectors[n] + ";");
      }
    }
    for (auto &[read, previous] : preloaded) {
      if (previous)
        kernel.overrides[read] = previous;
      else
        kernel.overrides.erase(read);
    }
    kernel.close();
    return success();
  };
  for (const SmallVector<int64_t> &shape : shapes) {
    if (numel(shape) == 0)
      continue;
    SmallVector<Value> group;
    SmallVector<int> groupBuffers;
    for (auto [value, buffer] : llvm::zip(values, buffers))
      if (ArrayRef<int64_t>(shapeOf(value)) == ArrayRef<int64_t>(shape)) {
        group.push_back(value);
        groupBuffers.push_back(buffer);
      }
    // Outputs that read no operand of this shape in common (an optimizer's
    // update of each parameter) get loops of their own: a loop's registers
    // are then one tensor's, whatever the number of tensors.
    SmallVector<int> component = independentOutputs(group, shape, readBack);
    int components = 1 + *llvm::max_element(component);
    for (int c = 0; c < components; ++c) {
      SmallVector<Value> part;
      SmallVector<int> partBuffers;
      for (auto [n, value] : llvm::enumerate(group))
        if (component[n] == c) {
          part.push_back(value);
          partBuffers.push_back(groupBuffers[n]);
        }
      if (failed(emitLoop(shape, part, partBuffers)))
        return failure();
    }
  }
  if (iterations == 0)
    return success(); // nothing to compute (empty tensors)
  addKernel(kernel, gridFor(iterations, kBlock), kBlock, "map");
  return success();
}

} // namespace detail

//===----------------------------------------------------------------------===//
// The program of a function
//===----------------------------------------------------------------------===//

using namespace detail;

/// The MLIR spelling of element type `type` ("f32", "i64", ...).
static std::string elementName(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

/// Whether the region only reshapes its one operand (a view: no kernel).
static bool isView(kernel::FusionOp region) {
  Block &body = region.getBody().front();
  if (region.getNumOperands() != 1 || region.getNumResults() != 1)
    return false;
  Value value = body.getTerminator()->getOperand(0);
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>(def))
      return false;
    value = def->getOperand(0);
  }
  return value == body.getArgument(0);
}

/// Wraps each constant that is used outside a region (a function result,
/// such as a constant learning rate) in a region of its own, which a map
/// kernel writes into its buffer.
static void wrapConstants(func::FuncOp func) {
  unsigned counter = 0;
  for (auto constant :
       llvm::make_early_inc_range(func.getOps<graph::ConstantOp>())) {
    if (constant.use_empty())
      continue;
    OpBuilder builder(constant);
    MLIRContext *ctx = constant.getContext();
    auto region = builder.create<kernel::FusionOp>(
        constant.getLoc(), TypeRange{constant.getType()},
        builder.getStringAttr("constant_" + std::to_string(counter++)),
        kernel::FusionKindAttr::get(ctx, kernel::FusionKind::other),
        ValueRange{});
    Block *body = new Block();
    region.getBody().push_back(body);
    constant.getResult().replaceAllUsesWith(region.getResult(0));
    builder.setInsertionPointToStart(body);
    auto yield = builder.create<kernel::YieldOp>(constant.getLoc(),
                                                 constant.getResult());
    constant->moveBefore(yield);
  }
}

FailureOr<Program> emitCudaProgram(func::FuncOp func, unsigned numInputs) {
  wrapConstants(func);
  Program program;
  std::string constants, kernels;
  DenseMap<Value, int> bufferOf;
  // Live ranges of the arena buffers: region positions.
  struct Range {
    int64_t first = 0, last = 0;
  };
  DenseMap<int, Range> ranges;
  auto addBuffer = [&](Buffer buffer) {
    program.buffers.push_back(std::move(buffer));
    return static_cast<int>(program.buffers.size() - 1);
  };
  auto bufferFor = [&](Type type, StringRef name) {
    auto tensorType = cast<RankedTensorType>(type);
    Buffer buffer;
    buffer.elementType = elementName(tensorType.getElementType());
    buffer.shape.assign(tensorType.getShape().begin(),
                        tensorType.getShape().end());
    buffer.bytes = numel(tensorType.getShape()) *
                   storageBytes(tensorType.getElementType());
    buffer.name = name.str();
    return buffer;
  };
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape() ||
        !supportedElement(type.getElementType()))
      return func.emitError("CUDA codegen: argument ")
             << arg.getArgNumber() << " has type " << arg.getType()
             << "; the CUDA target takes static shapes of f32, f16, bf16, "
                "f64, i1 and 8- to 64-bit integers (give dynamic dims a "
                "size)";
    Buffer buffer = bufferFor(type, "arg" + std::to_string(arg.getArgNumber()));
    bool input = arg.getArgNumber() < numInputs;
    buffer.kind = input ? Buffer::Input : Buffer::Weight;
    buffer.index = input ? arg.getArgNumber() : arg.getArgNumber() - numInputs;
    bufferOf[arg] = addBuffer(std::move(buffer));
  }
  int64_t position = 0;
  // Collectives started and not yet waited for: the buffer each writes ->
  // its index. A collective runs between its start and its wait (the
  // communicator's stream or worker), so its input and its output stay
  // alive, in the memory plan, until the wait: right before the first step
  // that reads the output, or at the end.
  std::map<int, int> pendingOut;
  auto waitFor = [&](int buffer) {
    auto it = pendingOut.find(buffer);
    if (it == pendingOut.end())
      return;
    int index = it->second;
    pendingOut.erase(it);
    program.steps.push_back({Step::CollectiveWait, index});
    for (int b :
         {program.collectives[index].in, program.collectives[index].out})
      if (ranges.count(b))
        ranges[b].last = std::max(ranges[b].last, position);
  };
  auto waitAll = [&] {
    while (!pendingOut.empty()) {
      // In start order.
      auto first = llvm::min_element(
          pendingOut, [](auto &a, auto &b) { return a.second < b.second; });
      waitFor(first->first);
    }
  };
  Block &block = func.getBody().front();
  for (Operation &op : block) {
    if (isa<func::ReturnOp>(op)) {
      ++position;
      waitAll();
      for (Value value : op.getOperands()) {
        int buffer = bufferOf.lookup(value);
        program.outputs.push_back(buffer);
        if (ranges.count(buffer))
          ranges[buffer].last = std::numeric_limits<int32_t>::max();
      }
      continue;
    }
    if (isMeshCollective(&op)) {
      // A Collective step (CudaEmitCollective.cpp): its input read where
      // the op stands, its output a buffer of its own.
      ++position;
      FailureOr<Collective> collective = collectiveOf(&op);
      if (failed(collective))
        return failure();
      Value input = op.getOperand(0);
      if (!bufferOf.count(input))
        return op.emitError("CUDA codegen: operand of ")
               << op.getName() << " is not a buffer ["
               << locationString(op.getLoc()) << "]";
      int in = bufferOf[input];
      waitFor(in);
      if (ranges.count(in))
        ranges[in].last = std::max(ranges[in].last, position);
      int index = static_cast<int>(program.collectives.size());
      int out =
          addBuffer(bufferFor(op.getResult(0).getType(),
                              op.getName().getStringRef().drop_front(5).str() +
                                  "_" + std::to_string(index) + "#0"));
      ranges[out] = {position, position};
      bufferOf[op.getResult(0)] = out;
      collective->in = in;
      collective->out = out;
      program.collectives.push_back(std::move(*collective));
      program.steps.push_back({Step::Collective, index});
      pendingOut[out] = index;
      continue;
    }
    auto region = dyn_cast<kernel::FusionOp>(op);
    if (!region) {
      if (op.use_empty() && isa<graph::ConstantOp>(op))
        continue;
      if (op.getName().getDialectNamespace() == "mesh")
        return op.emitError("CUDA codegen: ")
               << op.getName()
               << " is not supported on the CUDA target (it runs the mesh "
                  "collectives all_reduce, all_gather, reduce_scatter, "
                  "broadcast and all_slice) ["
               << locationString(op.getLoc()) << "]";
      return op.emitError("CUDA codegen: ")
             << op.getName() << " outside a kernel.fusion region ["
             << locationString(op.getLoc()) << "]";
    }
    ++position;
    for (Value input : region.getInputs()) {
      if (!bufferOf.count(input))
        return region.emitError("CUDA codegen: operand of ")
               << region.getName()
               << " is not a buffer (a large constant the compiler did not "
                  "move into the weights?)";
      int buffer = bufferOf[input];
      if (ranges.count(buffer))
        ranges[buffer].last = std::max(ranges[buffer].last, position);
    }
    if (isView(region)) {
      bufferOf[region.getResult(0)] = bufferOf[region.getInputs()[0]];
      continue;
    }
    for (Value input : region.getInputs())
      waitFor(bufferOf[input]);
    // The region's constants go before its kernels, in `kernels`.
    RegionEmitter emitter(region, program, kernels);
    for (Value input : region.getInputs())
      emitter.operandBuffers.push_back(bufferOf[input]);
    for (OpResult result : region.getResults()) {
      int buffer = addBuffer(bufferFor(
          result.getType(), region.getName().str() + "#" +
                                std::to_string(result.getResultNumber())));
      ranges[buffer] = {position, position};
      bufferOf[result] = buffer;
      emitter.resultBuffers.push_back(buffer);
    }
    emitter.newScratch = [&, position](Type type, ArrayRef<int64_t> shape,
                                       StringRef what) {
      int buffer =
          addBuffer(bufferFor(RankedTensorType::get(shape, type),
                              region.getName().str() + " " + what.str()));
      ranges[buffer] = {position, position};
      return buffer;
    };
    std::string before = program.source;
    program.source.clear();
    // Each region's text (its constants, then its kernels) starts with a
    // marker, so that tools can split the source between regions.
    kernels += ::loom::cuda::kRegionMarker + region.getName().str() + "\n";
    if (failed(emitter.emit()))
      return failure();
    kernels += program.source;
    program.source = before;
  }
  // The static memory plan: offsets in one arena.
  std::vector<memplan::LiveBuffer> live;
  std::vector<int> ids;
  for (auto &[id, range] : ranges)
    ids.push_back(id);
  llvm::sort(ids);
  for (int id : ids)
    live.push_back(
        {ranges[id].first, ranges[id].last,
         memplan::alignUp(std::max<int64_t>(program.buffers[id].bytes, 1),
                          kBufferAlignment)});
  memplan::ArenaPlan plan = memplan::planArena(live);
  for (auto [id, offset] : llvm::zip(ids, plan.offsets)) {
    program.buffers[id].kind = Buffer::Arena;
    program.buffers[id].offset = offset;
  }
  program.arenaBytes = plan.peak;
  program.source = std::string(kPrelude) + constants + kernels;
  return program;
}

} // namespace loom::codegen::cuda
