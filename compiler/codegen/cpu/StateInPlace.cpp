//===- StateInPlace.cpp - a training step updates its state in place ------===//
//
// A training step returns each state's next value (the parameters, the
// optimizer's moments). Returned as new buffers, a step held the state
// twice: GPT-2 small's AdamW state is 1.4 GB, and the step's peak RSS was
// 1.3x PyTorch's for that alone. With `loom.state_in_place` (set by
// compileToArtifact for the CPU: Training.state_in_place) the next values
// are written into the state arguments' buffers, which the runtime owns
// and keeps, and leave the results:
//
//   --loom-cpu-state-in-place (tensors): return %next becomes
//       %in = bufferization.materialize_in_destination %next in %state
//       return %in                    // and %state is writable
//   and the op computing %next gets %state as its init instead of an
//   empty tensor, so the elementwise update reads and writes one buffer
//   (One-Shot Bufferize copies where that would conflict);
//   --loom-cpu-drop-in-place-results (buffers): return %state's buffer is
//   dropped from the results.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cpu/CpuCodegen.h"
#include "compiler/codegen/cpu/CpuTransforms.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

using namespace mlir;

namespace loom::codegen {

#define GEN_PASS_DEF_CPUSTATEINPLACEPASS
#define GEN_PASS_DEF_CPUDROPINPLACERESULTSPASS
#include "compiler/codegen/cpu/Passes.h.inc"

namespace {

/// The [result, argument] pairs of `func`, checked against its type.
FailureOr<SmallVector<std::pair<unsigned, unsigned>>>
inPlacePairs(func::FuncOp func) {
  SmallVector<std::pair<unsigned, unsigned>> pairs;
  auto attr = func->getAttrOfType<DenseI64ArrayAttr>(kStateInPlaceAttr);
  if (!attr)
    return pairs;
  ArrayRef<int64_t> v = attr.asArrayRef();
  if (v.size() % 2)
    return func.emitError(kStateInPlaceAttr) << " must hold pairs";
  for (size_t i = 0; i < v.size(); i += 2) {
    if (v[i] < 0 || v[i] >= (int64_t)func.getNumResults() || v[i + 1] < 0 ||
        v[i + 1] >= (int64_t)func.getNumArguments())
      return func.emitError(kStateInPlaceAttr)
             << ": result " << v[i] << " or argument " << v[i + 1]
             << " does not exist";
    pairs.push_back(
        {static_cast<unsigned>(v[i]), static_cast<unsigned>(v[i + 1])});
  }
  return pairs;
}

/// Calls `update(func, return, pairs)` for each function of `module` with
/// a body and in-place pairs; then, with `drop`, removes the attribute.
template <typename Fn>
LogicalResult forEachInPlace(ModuleOp module, bool drop, Fn update) {
  for (auto func : module.getOps<func::FuncOp>()) {
    auto pairs = inPlacePairs(func);
    if (failed(pairs))
      return failure();
    if (drop)
      func->removeAttr(kStateInPlaceAttr);
    if (pairs->empty() || func.isDeclaration())
      continue;
    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    if (failed(update(func, ret, *pairs)))
      return failure();
  }
  return success();
}

using Pairs = ArrayRef<std::pair<unsigned, unsigned>>;

struct CpuStateInPlacePass
    : impl::CpuStateInPlacePassBase<CpuStateInPlacePass> {
  void runOnOperation() override {
    if (failed(forEachInPlace(getOperation(), /*drop=*/false, update)))
      signalPassFailure();
  }

  static LogicalResult update(func::FuncOp func, func::ReturnOp ret,
                              Pairs pairs) {
    OpBuilder b(ret);
    // A state returned as it was (a loss-scaled step's "loss_scale"
    // output is the scale it ran with) is returned as a copy: its buffer
    // is about to hold the next value.
    llvm::SmallDenseSet<unsigned> inPlace;
    for (auto [result, arg] : pairs)
      inPlace.insert(result);
    for (auto [result, arg] : pairs)
      for (OpOperand &operand : ret->getOpOperands())
        if (operand.get() == func.getArgument(arg) &&
            !inPlace.contains(operand.getOperandNumber()))
          operand.set(b.create<bufferization::AllocTensorOp>(
              ret.getLoc(), cast<RankedTensorType>(operand.get().getType()),
              ValueRange{}, operand.get()));
    for (auto [result, arg] : pairs) {
      Value state = func.getArgument(arg);
      Value next = ret.getOperand(result);
      if (state.getType() != next.getType())
        return func.emitError("the next value of argument ")
               << arg << " (result " << result << ") is " << next.getType()
               << ", not " << state.getType();
      func.setArgAttr(arg,
                      bufferization::BufferizationDialect::kWritableAttrName,
                      b.getBoolAttr(true));
      auto in = b.create<bufferization::MaterializeInDestinationOp>(
          ret.getLoc(), next, state);
      ret.setOperand(result, in.getResult());
      // The op that computes the next value writes it into the state:
      // its init, an empty tensor, becomes the state argument (this use
      // alone; empties are shared). One-Shot Bufferize then updates the
      // buffer in place, or copies where a later read of the old value
      // would conflict.
      if (auto value = dyn_cast<OpResult>(next))
        if (auto dps = dyn_cast<DestinationStyleOpInterface>(value.getOwner()))
          if (OpOperand *init = dps.getTiedOpOperand(value))
            if (init->get().getDefiningOp<tensor::EmptyOp>() &&
                init->get().getType() == state.getType())
              init->set(state);
    }
    return success();
  }
};

struct CpuDropInPlaceResultsPass
    : impl::CpuDropInPlaceResultsPassBase<CpuDropInPlaceResultsPass> {
  void runOnOperation() override {
    if (failed(forEachInPlace(getOperation(), /*drop=*/true, update)))
      signalPassFailure();
  }

  static LogicalResult update(func::FuncOp func, func::ReturnOp ret,
                              Pairs pairs) {
    llvm::BitVector drop(func.getNumResults());
    for (auto [result, arg] : pairs) {
      Value v = ret.getOperand(result);
      while (auto cast = v.getDefiningOp<memref::CastOp>())
        v = cast.getSource();
      if (v != func.getArgument(arg))
        return func.emitError("result ")
               << result << " is not written into argument " << arg
               << " after bufferization";
      drop.set(result);
    }
    SmallVector<Value> kept;
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      if (!drop.test(i))
        kept.push_back(v);
    OpBuilder(ret).create<func::ReturnOp>(ret.getLoc(), kept);
    ret.erase();
    func.eraseResults(drop);
    return success();
  }
};

} // namespace

} // namespace loom::codegen
