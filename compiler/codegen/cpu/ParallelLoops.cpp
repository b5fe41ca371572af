//===- ParallelLoops.cpp - run loop nests on the runtime's thread pool ----===//
//
// A linalg.generic with a parallel loop that every operand reads as one
// plain dim (and every output has) is split along it -- the first such loop
// of static size >= 4, since a dynamic outer dim is often a batch of 1 --
// and outlined into
//
//   func.func private @loom_par_N(%lo, %hi, %operands...)  // the generic on
//       // subviews [lo, hi) of that dim; its linalg.index shifted by lo
//
// and replaced by a call of `@loom_par_dispatch_N(%n, %grain, %operands...)`.
// A table the body gathers from (read by memref.load inside it) is passed
// whole to every chunk, after the operands. Fills of a constant,
// transposes, copies and maps become such generics first. A generic that
// does not split is outlined whole into
// `@loom_seq_N(%operands..., %captured...)` and called directly, so the
// graph's function is a straight line of calls (cheap to compile) and the
// nests of identical layers are identical functions (merged, LlvmBackend).
// After lowering to LLVM, addParallelDispatchers() defines that dispatcher:
// it packs the operands' descriptor pointers into a context and calls the
// runtime's `loom_rt_parallel_for(trampoline, ctx, n, grain)`, which runs
// `trampoline(ctx, lo, hi)` over chunks of [0, n) on its thread pool
// (loom/common/CodegenAbi.h); the trampoline unpacks the context and
// calls @loom_par_N's C interface. `grain` is the elements of work per
// index of the loop, for the runtime to decide whether threads pay off.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cpu/CpuTransforms.h"
#include "loom/common/CodegenAbi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;

namespace loom::codegen {

#define GEN_PASS_DEF_CPUPARALLELLOOPSPASS
#include "compiler/codegen/cpu/Passes.h.inc"

namespace {

constexpr const char *kBodyPrefix = "loom_par_";
constexpr const char *kDispatchPrefix = "loom_par_dispatch_";
constexpr const char *kSequentialPrefix = "loom_seq_";

/// A value the outlined functions can clone: a constant.
bool isConstant(Value v) {
  return v.getDefiningOp() &&
         v.getDefiningOp()->hasTrait<OpTrait::ConstantLike>();
}

/// A value from outside a generic's body that its outlined chunks can take
/// along: a constant (cloned), or a memref the body only loads from (a
/// gather's table, passed whole to every chunk).
bool isConstantOrReadTable(Value v, Region &body) {
  if (isConstant(v))
    return true;
  if (!isa<MemRefType>(v.getType()))
    return false;
  return llvm::all_of(v.getUses(), [&](OpOperand &use) {
    return !body.isAncestor(use.getOwner()->getParentRegion()) ||
           isa<memref::LoadOp, memref::DimOp>(use.getOwner());
  });
}

/// For each operand, the position of loop `loop` among its dims (-1: it
/// does not read it); nullopt when that loop cannot be split.
std::optional<SmallVector<int64_t>> splitDims(linalg::GenericOp op,
                                              unsigned loop) {
  if (op.getIteratorTypesArray()[loop] != utils::IteratorType::parallel)
    return std::nullopt;
  SmallVector<int64_t> dims;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      return std::nullopt;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    int64_t pos = -1;
    for (auto [i, e] : llvm::enumerate(map.getResults())) {
      if (auto d = dyn_cast<AffineDimExpr>(e)) {
        if (d.getPosition() == loop) {
          if (pos >= 0)
            return std::nullopt;
          pos = static_cast<int64_t>(i);
        }
        continue;
      }
      if (e.isFunctionOfDim(loop))
        return std::nullopt; // the loop inside an expression (a window)
    }
    // Every output is split, or chunks would write the same elements.
    if (op.isDpsInit(&operand) && pos < 0)
      return std::nullopt;
    dims.push_back(pos);
  }
  return dims;
}

/// The loop to split and each operand's dim for it. Prefers the first
/// parallel loop of static size >= 4 (a dynamic outer dim is often a batch
/// of 1), else the first that can be split at all.
std::optional<std::pair<unsigned, SmallVector<int64_t>>>
chooseSplit(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() == 0)
    return std::nullopt;
  // Values from outside the body: constants we clone, tables we pass (not
  // an output: chunks would read what others write).
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(op.getRegion(), captured);
  if (!llvm::all_of(captured, [&](Value v) {
        return isConstantOrReadTable(v, op.getRegion()) &&
               !llvm::is_contained(op.getDpsInits(), v);
      }))
    return std::nullopt;
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  std::optional<std::pair<unsigned, SmallVector<int64_t>>> first;
  for (unsigned loop = 0; loop < op.getNumLoops(); ++loop) {
    auto dims = splitDims(op, loop);
    if (!dims)
      continue;
    if (!ShapedType::isDynamic(sizes[loop]) && sizes[loop] >= 4)
      return std::make_pair(loop, *dims);
    if (!first)
      first = std::make_pair(loop, *dims);
  }
  return first;
}

/// A fill of a constant, a transpose, a copy and a map as the
/// linalg.generic they are, so that they split like any other loop nest (a
/// GEMM's zeroed output, a weight's transpose: megabytes each in a training
/// step). A fill's value moves into the body: every operand of a split
/// generic is a memref.
void generalizeCopies(func::FuncOp func) {
  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front())
    if (isa<linalg::FillOp, linalg::TransposeOp, linalg::CopyOp, linalg::MapOp>(
            op))
      ops.push_back(&op);
  for (Operation *op : ops) {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    if (!linalgOp.hasPureBufferSemantics() || linalgOp.getNumLoops() == 0)
      continue;
    OpBuilder b(op);
    auto fill = dyn_cast<linalg::FillOp>(op);
    if (!fill) {
      IRRewriter rewriter(b);
      (void)linalg::generalizeNamedOp(rewriter, linalgOp);
      continue;
    }
    Value value = fill.value();
    if (!isConstant(value))
      continue;
    AffineMap out = linalgOp.getIndexingMapsArray().back();
    b.create<linalg::GenericOp>(
        op->getLoc(), TypeRange{}, ValueRange{}, fill.output(),
        ArrayRef<AffineMap>{out}, linalgOp.getIteratorTypesArray(),
        [value](OpBuilder &nb, Location loc, ValueRange) {
          nb.create<linalg::YieldOp>(loc, value);
        });
    op->erase();
  }
}

struct CpuParallelLoopsPass
    : impl::CpuParallelLoopsPassBase<CpuParallelLoopsPass> {

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::tuple<linalg::GenericOp, unsigned, SmallVector<int64_t>>>
        work;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isDeclaration() || func.isPrivate())
        continue;
      generalizeCopies(func);
      for (auto op : func.getBody().front().getOps<linalg::GenericOp>())
        if (auto split = chooseSplit(op))
          work.push_back({op, split->first, split->second});
    }
    int index = 0;
    for (auto &[op, loop, dims] : work)
      outline(module, op, loop, dims, index++);
    index = 0;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isDeclaration() || func.isPrivate())
        continue;
      SmallVector<linalg::GenericOp> sequential;
      for (auto op : func.getBody().front().getOps<linalg::GenericOp>())
        if (outlinable(op))
          sequential.push_back(op);
      for (linalg::GenericOp op : sequential)
        outlineSequential(module, op, index++);
    }
  }

  /// A loop nest on buffers.
  static bool outlinable(linalg::GenericOp op) {
    return op.hasPureBufferSemantics() && op.getNumLoops() > 0;
  }

  /// A loop nest that does not split (a reduction to a scalar, a loop of
  /// fewer than 4, a body that writes outside its outputs) moves
  /// whole into `@loom_seq_N(%operands..., %captured...)`, called directly:
  /// the step's function keeps only calls, and the nests of identical
  /// layers become identical functions that code generation merges
  /// (shareIdenticalFunctions in LlvmBackend.cpp).
  void outlineSequential(ModuleOp module, linalg::GenericOp op, int index) {
    Location loc = op.getLoc();
    OpBuilder b(module.getContext());
    SmallVector<Value> operands(op->getOperands());
    SetVector<Value> captured;
    getUsedValuesDefinedAbove(op.getRegion(), captured);
    for (Value v : captured)
      if (!isConstant(v))
        operands.push_back(v);
    b.setInsertionPointToEnd(module.getBody());
    auto fn = b.create<func::FuncOp>(
        loc, kSequentialPrefix + std::to_string(index),
        b.getFunctionType(ValueRange(operands).getTypes(), {}));
    fn.setPrivate();
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    IRMapping mapping;
    mapping.map(operands, entry->getArguments());
    for (Value v : captured)
      if (isConstant(v))
        mapping.map(v, b.clone(*v.getDefiningOp())->getResult(0));
    b.clone(*op.getOperation(), mapping);
    b.create<func::ReturnOp>(loc);
    b.setInsertionPoint(op);
    b.create<func::CallOp>(loc, fn, operands);
    op.erase();
  }

  void outline(ModuleOp module, linalg::GenericOp op, unsigned loop,
               ArrayRef<int64_t> dims, int index) {
    MLIRContext *ctx = module.getContext();
    Location loc = op.getLoc();
    OpBuilder b(ctx);
    Type indexType = b.getIndexType();
    SmallVector<Value> operands(op->getOperands());
    // Tables the body gathers from follow the operands, whole.
    SetVector<Value> captured;
    getUsedValuesDefinedAbove(op.getRegion(), captured);
    SmallVector<Value> tables;
    for (Value v : captured)
      if (!isConstant(v))
        tables.push_back(v);
    operands.append(tables.begin(), tables.end());
    SmallVector<Type> argTypes = {indexType, indexType};
    for (Value v : operands)
      argTypes.push_back(v.getType());

    // The body function: the generic on [lo, hi) of the split dim.
    b.setInsertionPointToEnd(module.getBody());
    std::string bodyName = kBodyPrefix + std::to_string(index);
    auto body =
        b.create<func::FuncOp>(loc, bodyName, b.getFunctionType(argTypes, {}));
    body.setPrivate();
    body->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                  b.getUnitAttr());
    Block *entry = body.addEntryBlock();
    b.setInsertionPointToStart(entry);
    Value lo = entry->getArgument(0), hi = entry->getArgument(1);
    Value count = b.create<arith::SubIOp>(loc, hi, lo);
    SmallVector<Value> views;
    for (auto [i, pos] : llvm::enumerate(dims)) {
      Value arg = entry->getArgument(i + 2);
      if (pos < 0) {
        views.push_back(arg);
        continue;
      }
      auto type = cast<MemRefType>(arg.getType());
      SmallVector<OpFoldResult> offsets, sizes, strides;
      for (int64_t d = 0; d < type.getRank(); ++d) {
        strides.push_back(b.getIndexAttr(1));
        if (d == pos) {
          offsets.push_back(lo);
          sizes.push_back(count);
          continue;
        }
        offsets.push_back(b.getIndexAttr(0));
        if (type.isDynamicDim(d))
          sizes.push_back(b.create<memref::DimOp>(loc, arg, d).getResult());
        else
          sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
      }
      views.push_back(
          b.create<memref::SubViewOp>(loc, arg, offsets, sizes, strides));
    }
    IRMapping mapping;
    for (auto [i, table] : llvm::enumerate(tables))
      mapping.map(table, entry->getArgument(2 + dims.size() + i));
    for (Value v : captured)
      if (isConstant(v))
        mapping.map(v, b.clone(*v.getDefiningOp())->getResult(0));
    auto clone = b.create<linalg::GenericOp>(
        loc, TypeRange{}, ValueRange(views).take_front(op.getNumDpsInputs()),
        ValueRange(views).drop_front(op.getNumDpsInputs()),
        op.getIndexingMapsArray(), op.getIteratorTypesArray());
    op.getRegion().cloneInto(&clone.getRegion(), mapping);
    // linalg.index of the split loop counts from lo in a chunk.
    clone.getRegion().walk([&](linalg::IndexOp idx) {
      if (idx.getDim() != loop)
        return;
      OpBuilder ib(idx->getContext());
      ib.setInsertionPointAfter(idx);
      auto shifted = ib.create<arith::AddIOp>(idx.getLoc(), idx, lo);
      idx.getResult().replaceAllUsesExcept(shifted, shifted);
    });
    b.create<func::ReturnOp>(loc);

    // The dispatcher's declaration, and the call in place of the generic.
    std::string dispatchName = kDispatchPrefix + std::to_string(index);
    SmallVector<Type> dispatchTypes = {b.getI64Type(), b.getI64Type()};
    for (Value v : operands)
      dispatchTypes.push_back(v.getType());
    func::FuncOp decl = declareRuntimeFunction(
        module, dispatchName, b.getFunctionType(dispatchTypes, {}),
        /*cInterface=*/true);

    b.setInsertionPoint(op);
    // n: the split loop's trip count (the first output's split dim);
    // grain: the other loops' iterations per index of it.
    Value out = op.getDpsInits()[0];
    int64_t outPos = dims[op.getNumDpsInputs()];
    Value n = b.create<memref::DimOp>(loc, out, outPos);
    Value grain = b.create<arith::ConstantIndexOp>(loc, 1);
    for (Range r :
         cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc)) {
      Value size = getValueOrCreateConstantIndexOp(b, loc, r.size);
      grain = b.create<arith::MulIOp>(loc, grain, size);
    }
    grain = b.create<arith::DivUIOp>(
        loc, grain,
        b.create<arith::MaxUIOp>(loc, n,
                                 b.create<arith::ConstantIndexOp>(loc, 1)));
    SmallVector<Value> args = {
        b.create<arith::IndexCastOp>(loc, b.getI64Type(), n),
        b.create<arith::IndexCastOp>(loc, b.getI64Type(), grain)};
    args.append(operands.begin(), operands.end());
    b.create<func::CallOp>(loc, decl, args);
    op.erase();
  }
};

} // namespace

LogicalResult addParallelDispatchers(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  Type i64 = b.getI64Type();
  auto voidType = LLVM::LLVMVoidType::get(ctx);
  // void loom_rt_parallel_for(void (*)(void *, i64, i64), void *, i64, i64)
  auto runtimeType =
      LLVM::LLVMFunctionType::get(voidType, {ptr, ptr, i64, i64});
  auto trampolineType = LLVM::LLVMFunctionType::get(voidType, {ptr, i64, i64});
  // Sequential loop nests stay calls, like the dispatchers below.
  for (int index = 0;; ++index) {
    auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(
        std::string(kSequentialPrefix) + std::to_string(index));
    if (!fn)
      break;
    fn.setNoInline(true);
  }
  for (int index = 0;; ++index) {
    std::string suffix = std::to_string(index);
    auto dispatch = module.lookupSymbol<LLVM::LLVMFuncOp>(
        "_mlir_ciface_" + std::string(kDispatchPrefix) + suffix);
    auto body = module.lookupSymbol<LLVM::LLVMFuncOp>(
        "_mlir_ciface_" + std::string(kBodyPrefix) + suffix);
    if (!dispatch)
      return success();
    if (!body || !dispatch.isExternal())
      return module.emitError("CPU codegen: parallel loop ")
             << index << " is broken";
    // The wrapper the caller calls (descriptors to pointers) stays a call:
    // inlined at each of a training step's ~1500 loops it would triple the
    // size of the step's function, whose code generation time grows faster
    // than its size.
    if (auto wrapper = module.lookupSymbol<LLVM::LLVMFuncOp>(
            std::string(kDispatchPrefix) + suffix))
      wrapper.setNoInline(true);
    Location loc = dispatch.getLoc();
    b.setInsertionPointToEnd(module.getBody());
    if (!module.lookupSymbol<LLVM::LLVMFuncOp>(abi::kRtParallelFor))
      b.create<LLVM::LLVMFuncOp>(loc, abi::kRtParallelFor, runtimeType);
    unsigned numOperands = dispatch.getNumArguments() - 2;

    // The trampoline: ctx holds the operands' descriptor pointers.
    auto trampoline = b.create<LLVM::LLVMFuncOp>(
        loc, "loom_par_trampoline_" + suffix, trampolineType);
    {
      Block *block = trampoline.addEntryBlock(b);
      OpBuilder tb = OpBuilder::atBlockBegin(block);
      SmallVector<Value> args = {block->getArgument(1), block->getArgument(2)};
      for (unsigned i = 0; i < numOperands; ++i) {
        Value slot = tb.create<LLVM::GEPOp>(
            loc, ptr, ptr, block->getArgument(0),
            ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
        args.push_back(tb.create<LLVM::LoadOp>(loc, ptr, slot));
      }
      tb.create<LLVM::CallOp>(loc, body, args);
      tb.create<LLVM::ReturnOp>(loc, ValueRange{});
    }
    // The dispatcher: (n, grain, descriptor pointers...).
    {
      Block *block = dispatch.addEntryBlock(b);
      OpBuilder db = OpBuilder::atBlockBegin(block);
      Value count = db.create<LLVM::ConstantOp>(
          loc, i64, std::max<int64_t>(1, numOperands));
      Value context = db.create<LLVM::AllocaOp>(loc, ptr, ptr, count, 8);
      for (unsigned i = 0; i < numOperands; ++i) {
        Value slot = db.create<LLVM::GEPOp>(
            loc, ptr, ptr, context,
            ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
        db.create<LLVM::StoreOp>(loc, block->getArgument(i + 2), slot);
      }
      Value fn = db.create<LLVM::AddressOfOp>(loc, ptr, trampoline.getName());
      db.create<LLVM::CallOp>(loc, TypeRange{}, abi::kRtParallelFor,
                              ValueRange{fn, context, block->getArgument(0),
                                         block->getArgument(1)});
      db.create<LLVM::ReturnOp>(loc, ValueRange{});
    }
  }
}

} // namespace loom::codegen
