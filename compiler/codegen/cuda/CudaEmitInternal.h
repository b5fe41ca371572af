//===- CudaEmitInternal.h - what the CUDA emitter's files share -*- C++ -*-===//
//
// Private to compiler/codegen/cuda/. The CUDA emitter is split by op family:
//
// * CudaEmitter.cpp: the driver. Walks the function's kernel.fusion
//   regions, picks the kernel kind of each region (a whole-region emitter,
//   a row kernel, or a map kernel), assembles the kernels and plans the
//   buffers;
// * CudaKernelText.cpp: KernelText, the text of one kernel being built,
//   and the C++ spelling of types and literals;
// * CudaEmitElementwise.cpp, CudaEmitDataMovement.cpp,
//   CudaEmitReductions.cpp, CudaEmitGemm.cpp: the op emitters of each
//   family, each registered once in the OpEmitterTable through its
//   register<Family>Emitters function;
// * CudaEmitCollective.cpp: the mesh collectives between regions, as
//   Collective steps the runtime's communicator runs.
//
// A new op goes in its family's file: an emitter for its value at an
// index (and, for an op that takes a whole region, a region emitter),
// plus one line in that family's register function.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_CODEGEN_CUDA_CUDAEMITINTERNAL_H
#define LOOM_COMPILER_CODEGEN_CUDA_CUDAEMITINTERNAL_H

#include "compiler/codegen/cuda/CudaProgram.h"
#include "dialects/graph/GraphOps.h"
#include "dialects/kernel/KernelOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"

#include <cassert>
#include <functional>
#include <map>
#include <string>

namespace loom::codegen::cuda::detail {

/// A multi-index into a tensor: one C++ expression per dim ("0" for a dim
/// of size 1 or a broadcast one).
using Idx = llvm::SmallVector<std::string, 4>;

/// The threads per block of map and scatter kernels, and the most blocks a
/// grid-stride loop is launched with.
inline constexpr int64_t kBlock = 256;
/// Rows up to this many elements take a warp each in a row kernel.
inline constexpr int64_t kWarpRowMax = 1024;
inline constexpr int64_t kMaxGrid = 4096;
/// Elements per iteration of a vectorized map loop.
inline constexpr int kVectorWidth = 4;

//===----------------------------------------------------------------------===//
// Shapes, types and literals
//===----------------------------------------------------------------------===//

/// The shape and the element type of a ranked tensor value.
llvm::ArrayRef<int64_t> shapeOf(mlir::Value value);
mlir::Type elemOf(mlir::Value value);
/// The number of elements of `shape`.
int64_t numel(llvm::ArrayRef<int64_t> shape);

/// The C++ type a value of element type `type` computes in ("float" for
/// the 16-bit floats, "loom::i64", ...).
std::string computeType(mlir::Type type);
/// The C++ type a value of element type `type` is stored in ("__half",
/// "__nv_bfloat16", "signed char", ...).
std::string storageType(mlir::Type type);
/// The bytes of one stored element of `type`.
int64_t storageBytes(mlir::Type type);
/// Whether the CUDA target takes tensors of element type `type`.
bool supportedElement(mlir::Type type);

/// A C++ literal of `value` in the compute type of `type`.
std::string literal(double value, mlir::Type type);
/// The value of element `index` of a constant as a double.
double elementAsDouble(mlir::ElementsAttr attr, int64_t index);

/// The multi-index of `index` (an index of a value of shape `from`) in an
/// operand of shape `to` under NumPy broadcasting.
Idx broadcastIdx(const Idx &index, llvm::ArrayRef<int64_t> from,
                 llvm::ArrayRef<int64_t> to);
/// The row-major linear offset of `index` in `shape`.
std::string linearize(const Idx &index, llvm::ArrayRef<int64_t> shape);

/// A grid for a grid-stride loop of `iterations` with `block` threads.
int64_t gridFor(int64_t iterations, int64_t block);

/// Reports `op` as not supported by the CUDA target (with `why`, when
/// given), naming its location; always failure.
mlir::FailureOr<std::string> emitUnsupported(mlir::Operation *op,
                                             llvm::StringRef why = "");

class RegionEmitter;

//===----------------------------------------------------------------------===//
// KernelText: one kernel being built
//===----------------------------------------------------------------------===//

/// The text of one kernel being built: its parameters, its body, and the
/// values it has computed (per scope, so that a value computed inside a
/// loop or branch is not used outside it).
class KernelText {
public:
  KernelText(RegionEmitter &region, std::string name)
      : region(region), name(std::move(name)) {}

  /// Computes a value at an index some other way than its op does (a row
  /// statistic, a vector lane, the matmul result read back).
  using Override =
      std::function<mlir::FailureOr<std::string>(const Idx &index)>;

  RegionEmitter &region;
  std::string name;
  std::string body;
  /// The indentation depth of the next line, in steps of two spaces.
  int depth = 1;
  /// The number of the next fresh local.
  int counter = 0;
  /// The pointer parameters: (declaration, buffer).
  llvm::SmallVector<std::pair<std::string, int>> params;
  llvm::DenseMap<int, std::string> paramOfBuffer;
  /// Per open scope: the local holding each (value, index) computed in it.
  llvm::SmallVector<std::map<std::string, std::string>> scopes{{}};
  /// Values the kernel computes some other way, called with the index.
  llvm::DenseMap<mlir::Value, Override> overrides;
  /// Set when an override could not serve the index it was asked for (a
  /// row kernel asked for another row's statistic).
  bool refused = false;
  /// In a vectorized loop: the index of the lane being computed.
  Idx laneIdx;

  /// Appends one line of body at the current depth.
  void line(const llvm::Twine &text) {
    body.append(2 * depth, ' ');
    body += text.str();
    body += "\n";
  }
  /// Opens a block (`text {`) and a scope.
  void open(const llvm::Twine &text) {
    line(text + " {");
    ++depth;
    scopes.emplace_back();
  }
  /// Closes the innermost block and its scope.
  void close(llvm::StringRef suffix = "") {
    --depth;
    scopes.pop_back();
    line("}" + suffix.str());
  }
  /// A new local name: `prefix` and a number.
  std::string fresh(llvm::StringRef prefix = "v") {
    return prefix.str() + std::to_string(counter++);
  }
  /// Declares a fresh local of C++ type `type` holding `expr`; its name.
  std::string let(llvm::StringRef type, const llvm::Twine &expr,
                  llvm::StringRef prefix = "v") {
    std::string local = fresh(prefix);
    line(type + " " + local + " = " + expr + ";");
    return local;
  }
  /// The pointer parameter for buffer `buffer` of element type `type`.
  std::string param(int buffer, mlir::Type type, bool output);
  /// Row-major div/mod of `flat` over `shape`: one index per dim ("0" for
  /// size-1 dims), each a fresh local named with `prefix`.
  Idx decompose(llvm::StringRef flat, llvm::ArrayRef<int64_t> shape,
                llvm::StringRef prefix);

  /// The expression of `value` at `index`: a local computed earlier in an
  /// enclosing scope, an override, a load of a region operand, or what
  /// the emitter of its op writes.
  mlir::FailureOr<std::string> eval(mlir::Value value, const Idx &index);
  /// The expression of `operand` of an op at `index`, an index of the op's
  /// `result` (NumPy broadcasting).
  mlir::FailureOr<std::string>
  evalBroadcast(mlir::Value operand, mlir::Value result, const Idx &index) {
    return eval(operand,
                broadcastIdx(index, shapeOf(result), shapeOf(operand)));
  }

  /// The `__global__` function's text.
  std::string definition() const;
  /// Whether the buffers go through a pointer table (more than
  /// kMaxDirectArgs of them).
  bool usesPointerTable() const {
    return tableAlways || params.size() > kMaxDirectArgs;
  }
  /// The buffers go through the pointer table whatever their number (a
  /// kernel that picks its buffer by index: `loom_table[k]`).
  bool tableAlways = false;

private:
  mlir::FailureOr<std::string> evalOp(mlir::Operation *op, mlir::Value value,
                                      const Idx &index);
};

/// A local holding `expr` rounded as the 16-bit float type `type` says
/// (for other types, as computed).
std::string rounded(KernelText &kernel, mlir::Type type,
                    const std::string &expr);

//===----------------------------------------------------------------------===//
// RegionEmitter: one kernel.fusion region
//===----------------------------------------------------------------------===//

/// What a region's emission reads and writes.
class RegionEmitter {
public:
  RegionEmitter(kernel::FusionOp region, Program &program,
                std::string &constants)
      : fusion(region), program(program), constants(constants) {}

  /// The region being emitted.
  kernel::FusionOp fusion;
  /// The buffer of each region operand and result.
  llvm::SmallVector<int> operandBuffers, resultBuffers;
  /// A new scratch buffer of `type` and `shape`, named for `what`.
  std::function<int(mlir::Type type, llvm::ArrayRef<int64_t> shape,
                    llvm::StringRef what)>
      newScratch;
  Program &program;
  /// Where the region's __device__ constant arrays go.
  std::string &constants;
  int kernelCounter = 0;

  /// The region's name, kind, ops and location, for comments.
  std::string description();
  /// The next kernel's name: the region's, numbered after the first.
  std::string kernelName();
  int bufferOfArg(mlir::BlockArgument arg) {
    return operandBuffers[arg.getArgNumber()];
  }
  /// A small constant of the region as a __device__ array; its name.
  std::string constantArray(graph::ConstantOp constant);
  /// Appends `__device__ const TYPE NAME[] = {ELEMENTS};` to the region's
  /// constants; `name`.
  std::string deviceArray(const std::string &name, llvm::StringRef type,
                          llvm::ArrayRef<std::string> elements);
  /// The buffer the region yields `value` into; -1 when it does not yield
  /// it.
  int bufferOfResult(mlir::Value value);
  /// bufferOfResult, or new scratch of `value`'s type named for `what`.
  int bufferOrScratch(mlir::Value value, llvm::StringRef what) {
    int buffer = bufferOfResult(value);
    return buffer >= 0 ? buffer
                       : newScratch(elemOf(value), shapeOf(value), what);
  }
  /// Appends `kernel` to the program's source and launches it.
  void addKernel(KernelText &kernel, int64_t grid, int64_t block,
                 llvm::StringRef what = "");

  /// Emits the region: a whole-region emitter, a row kernel or a map
  /// kernel.
  mlir::LogicalResult emit();
  /// A map kernel computing `values` into `buffers`; `readBack` values are
  /// read from their buffer instead of computed.
  mlir::LogicalResult emitMap(llvm::ArrayRef<mlir::Value> values,
                              llvm::ArrayRef<int> buffers,
                              const llvm::DenseMap<mlir::Value, int> &readBack);
  mlir::LogicalResult emitMap(llvm::ArrayRef<mlir::Value> values,
                              llvm::ArrayRef<int> buffers) {
    return emitMap(values, buffers, llvm::DenseMap<mlir::Value, int>());
  }
  /// How a whole-region emitter computes a value of the region that its
  /// steps before the map kernel produced (an integer GEMM's product with
  /// its zero-point corrections), at an index of the map kernel.
  using ComputedValue = std::function<mlir::FailureOr<std::string>(
      KernelText &kernel, const Idx &index)>;
  /// emitMap, with `computed` values evaluated by their function.
  mlir::LogicalResult
  emitMap(llvm::ArrayRef<mlir::Value> values, llvm::ArrayRef<int> buffers,
          const llvm::DenseMap<mlir::Value, int> &readBack,
          const llvm::DenseMap<mlir::Value, ComputedValue> &computed);

private:
  llvm::DenseMap<mlir::Operation *, std::string> constantNames;
};

//===----------------------------------------------------------------------===//
// The op emitter table
//===----------------------------------------------------------------------===//

/// Writes into `kernel` the computation of `result` (a result of `op`) at
/// `index`; the expression holding it (usually a local).
using ValueEmitter = std::function<mlir::FailureOr<std::string>(
    KernelText &kernel, mlir::Operation *op, mlir::Value result,
    const Idx &index)>;
/// Emits a whole region for `op`, an op that does not compute element by
/// element (a matmul's cuBLASLt call, a scatter).
using RegionOpEmitter = std::function<mlir::LogicalResult(RegionEmitter &region,
                                                          mlir::Operation *op)>;
/// Emits a region as a row kernel rooted at `root`: false when a row
/// kernel does not apply (the map kernel then computes the region).
using RowKernelEmitter = mlir::FailureOr<bool> (*)(RegionEmitter &region,
                                                   mlir::Operation *root);

/// How the emitter handles one op.
struct OpEmitter {
  /// Its value at an index of a map or row kernel.
  ValueEmitter value;
  /// Set for an op that takes the whole region it is in.
  RegionOpEmitter wholeRegion;
  /// Set for an op that can root a row kernel.
  RowKernelEmitter rowKernel = nullptr;
};

/// The emitters of the ops, keyed by op class; filled once by the
/// register<Family>Emitters functions.
class OpEmitterTable {
public:
  /// Registers `emit` for the values of `OpT`.
  template <typename OpT>
  void add(mlir::FailureOr<std::string> (*emit)(KernelText &, OpT, mlir::Value,
                                                const Idx &)) {
    addValue<OpT>([emit](KernelText &kernel, mlir::Operation *op,
                         mlir::Value result, const Idx &index) {
      return emit(kernel, mlir::cast<OpT>(op), result, index);
    });
  }
  /// Registers one emitter for the values of each of `OpTs`.
  template <typename... OpTs> void addValue(const ValueEmitter &emit) {
    (setValue(mlir::TypeID::get<OpTs>(), emit), ...);
  }
  /// Registers `emit` as the emitter of any region holding an `OpT`.
  template <typename OpT>
  void addWholeRegion(mlir::LogicalResult (*emit)(RegionEmitter &, OpT)) {
    entries[mlir::TypeID::get<OpT>()].wholeRegion =
        [emit](RegionEmitter &region, mlir::Operation *op) {
          return emit(region, mlir::cast<OpT>(op));
        };
  }
  /// Registers `emit` as the row kernel of regions rooted at each of
  /// `OpTs`.
  template <typename... OpTs> void addRowKernel(RowKernelEmitter emit) {
    ((entries[mlir::TypeID::get<OpTs>()].rowKernel = emit), ...);
  }

  /// The emitters of `op`'s class; null when it has none.
  const OpEmitter *lookup(mlir::Operation *op) const {
    auto it = entries.find(op->getName().getTypeID());
    return it == entries.end() ? nullptr : &it->second;
  }

private:
  void setValue(mlir::TypeID id, const ValueEmitter &emit) {
    assert(!entries[id].value && "two value emitters for one op");
    entries[id].value = emit;
  }

  llvm::DenseMap<mlir::TypeID, OpEmitter> entries;
};

/// "sum", "mean", "max", "min" or "prod" for the reduce ops; "" for any
/// other op.
llvm::StringRef reductionKind(mlir::Operation *op);
/// Whether `value` is computed, inside its region, from an op for which
/// `pred` holds.
bool readsFrom(mlir::Value value,
               llvm::function_ref<bool(mlir::Operation *)> pred);
/// A cross-entropy's label at `row` (evaluated into `kernel`), with the
/// condition that skips the row (an ignored label; "false" without
/// ignore_index) in `skip`.
mlir::FailureOr<std::string> crossEntropyLabel(KernelText &kernel,
                                               graph::CrossEntropyOp loss,
                                               const Idx &row,
                                               std::string &skip);
/// A cross-entropy row's loss, logsumexp - the label's logit, from the
/// row's max and sum of exponentials and its label (crossEntropyLabel).
mlir::FailureOr<std::string>
crossEntropyRowLoss(KernelText &kernel, graph::CrossEntropyOp loss,
                    const Idx &row, const std::string &label,
                    const std::string &max, const std::string &sum);
/// The initial value of a "sum", "mean", "max", "min" or "prod" reduction
/// of element type `type`, in its compute type.
std::string reductionInit(llvm::StringRef kind, mlir::Type type);
/// The statement that combines `element` into `acc` for `kind`.
std::string reductionCombine(llvm::StringRef kind, const std::string &acc,
                             const std::string &element);
/// The prelude function that combines two partial results of `kind` in
/// C++ type `cxxType` ("loom::add_<float>").
std::string reductionCombineFn(llvm::StringRef kind,
                               const std::string &cxxType);
/// `loom::block_reduce(value, ...)` of a block's `value`s of C++ type
/// `type`, combined by function `fn` from `identity`.
std::string blockReduce(const std::string &value, const std::string &type,
                        const std::string &fn, const std::string &identity);
/// `loom::warp_reduce(value, ...)` of a warp's `value`s, combined by `fn`
/// (every lane of the warp gets the result).
std::string warpReduce(const std::string &value, const std::string &type,
                       const std::string &fn);
/// The threads of a block that strides over a row of `rowSize` elements:
/// a power of two from a warp to kBlock.
int64_t rowBlock(int64_t rowSize);
/// The index into a reduction's input (of `inputShape`, reduced over
/// `axes`) of the element at `reducedIndex` (one entry per reduced axis)
/// of the result element at `resultIndex`.
Idx reductionInputIndex(llvm::ArrayRef<int64_t> inputShape,
                        llvm::ArrayRef<int64_t> axes, bool keepdims,
                        const Idx &resultIndex, const Idx &reducedIndex);
/// A region whose reductions (and cross-entropy and MSE losses) have too
/// few results to fill the GPU, as split reductions: per reduction, a
/// kernel of partial results over the whole grid and a kernel that
/// combines them, then a map kernel that reads the combined values
/// (CudaEmitSplitReduction.cpp). False when the region has none, or has
/// other ops that need a row kernel.
mlir::FailureOr<bool> emitSplitReductions(RegionEmitter &region);
/// graph.sum_squares: a chunk-table kernel over every operand, then one
/// block over its partials (CudaEmitSplitReduction.cpp).
mlir::LogicalResult emitSumSquaresRegion(RegionEmitter &region,
                                         graph::SumSquaresOp op);
/// The row kernel of a reduction, softmax or layer norm whose reduced dims
/// include the last one (CudaEmitRowKernel.cpp).
mlir::FailureOr<bool> emitRowKernel(RegionEmitter &region,
                                    mlir::Operation *root);

/// The table every emission uses, filled on first use.
const OpEmitterTable &opEmitters();

/// The families: each registers its ops' emitters in `table`.
void registerElementwiseEmitters(OpEmitterTable &table);
void registerDataMovementEmitters(OpEmitterTable &table);
void registerReductionEmitters(OpEmitterTable &table);
void registerGemmEmitters(OpEmitterTable &table);
void registerAttentionEmitters(OpEmitterTable &table);
/// The random ops (CudaEmitRandom.cpp).
void registerRandomEmitters(OpEmitterTable &table);

/// A whole-region op's operand in a buffer: a region operand's, or
/// scratch that a map kernel computes it into (a constant cloned into the
/// region).
mlir::FailureOr<int> operandBuffer(RegionEmitter &region, mlir::Value operand);

/// Whether `op` is an upstream `mesh` collective the CUDA program runs as
/// a Collective step (all_reduce, all_gather, reduce_scatter, broadcast,
/// all_slice).
bool isMeshCollective(mlir::Operation *op);

/// The Collective of mesh collective `op` (its `in` and `out` buffers are
/// the caller's to set); an error naming the op and its location when the
/// runtime has no such collective (a gather along another dim than 0, a
/// root on several axes, an element type no collective takes).
mlir::FailureOr<Collective> collectiveOf(mlir::Operation *op);

} // namespace loom::codegen::cuda::detail

#endif // LOOM_COMPILER_CODEGEN_CUDA_CUDAEMITINTERNAL_H
