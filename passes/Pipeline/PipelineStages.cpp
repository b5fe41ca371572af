//===- PipelineStages.cpp - a loss function cut into pipeline stages ------===//
//
// `--loom-pipeline-stages`: the batch-dependent ops in program order are
// cut into contiguous stages (balanced by a cost model, or where named);
// constants and parameter-only ops are copied where used; a value crosses
// every boundary between its stage and its last use. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Pipeline/Passes.h"
#include "passes/Pipeline/PipelineUtils.h"
#include "passes/Training/TrainingUtils.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>

namespace loom {
#define GEN_PASS_DEF_PIPELINESTAGESPASS
#include "passes/Pipeline/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::pipeline;

double loom::pipeline::opFlops(Operation *op) {
  auto numel = [](Type t) -> double {
    auto r = dyn_cast<RankedTensorType>(t);
    return r && r.hasStaticShape() ? double(r.getNumElements()) : 0.0;
  };
  // Contractions count their multiply-adds as the graph ops estimate them
  // (CostOpInterface: the contracted size honours transpose_lhs), the same
  // figure the recompute pass weighs.
  if (op->hasTrait<graph::GraphTrait::Contraction>())
    return double(cast<graph::CostOpInterface>(op).estimateFlops());
  double n = 0;
  for (Value v : op->getOperands())
    n = std::max(n, numel(v.getType()));
  for (Value v : op->getResults())
    n = std::max(n, numel(v.getType()));
  return n;
}

double loom::pipeline::opBytes(Operation *op) {
  double bytes = 0;
  for (ValueRange values :
       {ValueRange(op->getOperands()), ValueRange(op->getResults())})
    for (Value v : values)
      bytes += double(valueBytes(v));
  return bytes;
}

int64_t loom::pipeline::valueBytes(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return 0;
  unsigned bits = t.getElementType().isIntOrFloat()
                      ? t.getElementType().getIntOrFloatBitWidth()
                      : 8;
  return t.getNumElements() * std::max(1u, bits / 8);
}

std::string loom::pipeline::locationName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (std::string n = locationName(l); !n.empty())
        return n;
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return locationName(call.getCallee());
  return "";
}

bool loom::pipeline::isCopyable(Operation *op,
                                const llvm::DenseSet<Value> &copyable) {
  if (op->getNumRegions() || !isMemoryEffectFree(op) ||
      op->getNumResults() == 0)
    return false;
  return llvm::all_of(op->getOperands(),
                      [&](Value v) { return copyable.contains(v); });
}

namespace {

struct PipelineStagesPass
    : loom::impl::PipelineStagesPassBase<PipelineStagesPass> {
  using PipelineStagesPassBase::PipelineStagesPassBase;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run() {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> picked =
        training::pickFunction(module, funcName, "loom-pipeline-stages");
    if (failed(picked))
      return failure();
    func::FuncOp f = *picked;
    auto error = [&]() { return f.emitError() << "loom-pipeline-stages: "; };
    if (stages < 1 || stages > 1024)
      return error() << "stages must be from 1 to 1024, not " << stages;
    if (f.getNumResults() != 1 || !f.getResultAttr(0, "graph.output"))
      return error() << "'" << f.getName()
                     << "' must return one loss (run --loom-loss first)";
    if (!f.getBody().hasOneBlock())
      return error() << "'" << f.getName() << "' must have one block";
    if (failed(freezeParams(f)))
      return failure();

    // Copyable values: constants, parameters and what only they make.
    Block &body = f.getBody().front();
    llvm::DenseSet<Value> copyable;
    for (BlockArgument arg : f.getArguments())
      if (f.getArgAttr(arg.getArgNumber(), "graph.param"))
        copyable.insert(arg);
    SmallVector<Operation *> compute;
    for (Operation &op : body.without_terminator()) {
      if (isCopyable(&op, copyable)) {
        copyable.insert(op.result_begin(), op.result_end());
        continue;
      }
      compute.push_back(&op);
    }
    int64_t n = stages;
    if (static_cast<int64_t>(compute.size()) < n)
      return error() << "cannot cut " << compute.size()
                     << " ops that read the batch into " << n << " stages";

    // Cut points: begin[k] is the index in `compute` where stage k starts.
    SmallVector<size_t> begin;
    if (failed(boundaries.empty() ? balance(compute, n, begin)
                                  : named(f, compute, n, begin)))
      return failure();
    llvm::DenseMap<Operation *, int> stageOf;
    for (int k = 0; k < n; ++k) {
      size_t end = k + 1 < n ? begin[k + 1] : compute.size();
      for (size_t i = begin[k]; i < end; ++i)
        stageOf[compute[i]] = k;
    }

    // The stages that use each value, directly or through copied ops; a
    // parameter belongs to the first.
    llvm::DenseMap<Value, llvm::SmallSetVector<int, 4>> usedIn;
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    for (Value v : ret.getOperands())
      usedIn[v].insert(static_cast<int>(n - 1));
    for (Operation &op : llvm::reverse(body.without_terminator())) {
      llvm::SmallSetVector<int, 4> here;
      if (auto it = stageOf.find(&op); it != stageOf.end()) {
        here.insert(it->second);
      } else {
        for (Value r : op.getResults())
          if (auto u = usedIn.find(r); u != usedIn.end())
            here.insert(u->second.begin(), u->second.end());
      }
      for (Value v : op.getOperands())
        usedIn[v].insert(here.begin(), here.end());
    }
    auto firstUse = [&](Value v) {
      auto it = usedIn.find(v);
      if (it == usedIn.end() || it->second.empty())
        return 0;
      return *std::min_element(it->second.begin(), it->second.end());
    };
    auto lastUse = [&](Value v) {
      auto it = usedIn.find(v);
      if (it == usedIn.end() || it->second.empty())
        return -1;
      return *std::max_element(it->second.begin(), it->second.end());
    };
    // Where each crossing value is made: its op's stage, a parameter's
    // owner.
    auto madeIn = [&](Value v) -> int {
      if (auto arg = dyn_cast<BlockArgument>(v))
        return f.getArgAttr(arg.getArgNumber(), "graph.param") ? firstUse(v)
                                                               : -1;
      auto it = stageOf.find(v.getDefiningOp());
      return it == stageOf.end() ? -1 : it->second;
    };
    // The values crossing boundary k -> k+1, in a fixed order: parameters
    // by argument, then results in program order.
    SmallVector<Value> candidates;
    for (BlockArgument arg : f.getArguments())
      candidates.push_back(arg);
    for (Operation *op : compute)
      candidates.append(op->result_begin(), op->result_end());
    SmallVector<SmallVector<Value>> sends(n);
    for (Value v : candidates) {
      int from = madeIn(v), to = lastUse(v);
      for (int k = std::max(from, 0); from >= 0 && k < to; ++k)
        sends[k].push_back(v);
    }

    // The stage functions.
    OpBuilder b(f);
    b.setInsertionPointAfter(f);
    MLIRContext *ctx = &getContext();
    std::string out;
    llvm::raw_string_ostream os(out);
    for (int k = 0; k < n; ++k) {
      SmallVector<Type> argTypes;
      SmallVector<DictionaryAttr> argAttrs;
      IRMapping map;
      SmallVector<std::pair<Value, unsigned>> bind; // value -> arg index
      auto addArg = [&](Value v, DictionaryAttr attrs) {
        bind.push_back({v, static_cast<unsigned>(argTypes.size())});
        argTypes.push_back(v.getType());
        argAttrs.push_back(attrs);
      };
      if (k > 0)
        for (auto [i, v] : llvm::enumerate(sends[k - 1]))
          addArg(v, b.getDictionaryAttr(
                        {b.getNamedAttr(kInAttr, b.getI64IntegerAttr(i))}));
      llvm::DenseSet<Value> received;
      if (k > 0)
        received.insert(sends[k - 1].begin(), sends[k - 1].end());
      // Batch inputs it reads and parameters it owns, in argument order.
      int64_t paramBytes = 0;
      SmallVector<std::string> paramNames;
      for (BlockArgument arg : f.getArguments()) {
        bool param = bool(f.getArgAttr(arg.getArgNumber(), "graph.param"));
        auto uses = usedIn.find(arg);
        bool usedHere = uses != usedIn.end() && uses->second.contains(k);
        if (received.contains(arg) || !usedHere ||
            (param && firstUse(arg) != k))
          continue;
        addArg(arg, f.getArgAttrDict(arg.getArgNumber()));
        if (param) {
          paramBytes += valueBytes(arg);
          paramNames.push_back(
              f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "graph.param")
                  .str());
        }
      }
      // An unused parameter still needs an owner: the first stage.
      if (k == 0)
        for (BlockArgument arg : f.getArguments())
          if (f.getArgAttr(arg.getArgNumber(), "graph.param") &&
              lastUse(arg) < 0)
            addArg(arg, f.getArgAttrDict(arg.getArgNumber()));

      SmallVector<Type> resultTypes;
      SmallVector<Attribute> resultAttrs;
      SmallVector<Value> results;
      if (k + 1 < n) {
        for (auto [i, v] : llvm::enumerate(sends[k])) {
          results.push_back(v);
          resultTypes.push_back(v.getType());
          resultAttrs.push_back(b.getDictionaryAttr(
              {b.getNamedAttr(kOutAttr, b.getI64IntegerAttr(i))}));
        }
      } else {
        results.push_back(ret.getOperand(0));
        resultTypes.push_back(ret.getOperand(0).getType());
        resultAttrs.push_back(f.getResultAttrDict(0));
      }
      auto stage = b.create<func::FuncOp>(
          f.getLoc(), (f.getName() + "_stage" + std::to_string(k)).str(),
          FunctionType::get(ctx, argTypes, resultTypes));
      stage.setAllArgAttrs(argAttrs);
      stage.setAllResultAttrs(resultAttrs);
      Block *entry = stage.addEntryBlock();
      for (auto [v, i] : bind)
        map.map(v, entry->getArgument(i));
      OpBuilder sb = OpBuilder::atBlockEnd(entry);
      // Copies what it needs of the copyable ops, before their first use.
      std::function<void(Value)> need = [&](Value v) {
        if (map.contains(v))
          return;
        Operation *def = v.getDefiningOp();
        if (!def || stageOf.count(def))
          return;
        for (Value operand : def->getOperands())
          need(operand);
        sb.clone(*def, map);
      };
      double flops = 0, bytes = 0;
      int ops = 0;
      std::string first, last;
      for (Operation *op : compute) {
        if (stageOf[op] != k)
          continue;
        for (Value operand : op->getOperands())
          need(operand);
        sb.clone(*op, map);
        flops += opFlops(op);
        bytes += opBytes(op);
        ++ops;
        std::string name = locationName(op->getLoc());
        if (!name.empty()) {
          if (first.empty())
            first = name;
          last = name;
        }
      }
      SmallVector<Value> mapped;
      for (Value v : results) {
        need(v);
        if (!map.contains(v))
          return error() << "internal error: stage " << k
                         << " cannot produce a value it sends";
        mapped.push_back(map.lookup(v));
      }
      sb.create<func::ReturnOp>(f.getLoc(), mapped);
      int64_t sentBytes = 0;
      if (k + 1 < n)
        for (Value v : sends[k])
          sentBytes += valueBytes(v);
      stage->setAttr(kStageAttr, b.getI64IntegerAttr(k));
      stage->setAttr(kFlopsAttr, b.getF64FloatAttr(flops));
      std::string description =
          std::to_string(ops) + " ops" +
          (first.empty() ? "" : " (" + first + " .. " + last + ")");
      stage->setAttr(kDescriptionAttr, b.getStringAttr(description));
      SmallVector<StringRef> names(paramNames.begin(), paramNames.end());
      stage->setAttr(kParamsAttr, b.getStrArrayAttr(names));
      stage->setAttr(kSentBytesAttr, b.getI64IntegerAttr(sentBytes));
      os << "  stage " << k << ": " << description << ", "
         << llvm::format("%.3g", flops) << " FLOPs, "
         << llvm::format("%.3g", bytes) << " bytes moved, " << paramNames.size()
         << " parameters (" << paramBytes << " bytes), sends "
         << (k + 1 < n ? sends[k].size() : 0) << " values (" << sentBytes
         << " bytes)\n";
      b.setInsertionPointAfter(stage);
    }
    if (summary)
      llvm::errs() << "loom-pipeline-stages: '" << f.getName() << "' in " << n
                   << " stages\n"
                   << out;
    return success();
  }

  /// Parameters matching `freeze`, and those that are not floats, become
  /// constants of their initial value.
  LogicalResult freezeParams(func::FuncOp f) {
    llvm::Regex re(freeze.empty() ? std::string("^$") : std::string(freeze));
    std::string why;
    if (!re.isValid(why))
      return f.emitError("loom-pipeline-stages: bad freeze regex '")
             << freeze << "': " << why;
    OpBuilder b = OpBuilder::atBlockBegin(&f.getBody().front());
    for (BlockArgument arg : f.getArguments()) {
      auto name =
          f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "graph.param");
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      bool isFloat = type && isa<FloatType>(type.getElementType());
      if (!name || (isFloat && (freeze.empty() || !re.match(name.getValue()))))
        continue;
      auto init = f.getArgAttrOfType<ElementsAttr>(arg.getArgNumber(),
                                                   "graph.initial_value");
      if (!init)
        return f.emitError("loom-pipeline-stages: frozen parameter '")
               << name.getValue() << "' has no initial value";
      arg.replaceAllUsesWith(
          b.create<graph::ConstantOp>(arg.getLoc(), init).getResult());
      // No stage owns it now.
      f.removeArgAttr(arg.getArgNumber(), "graph.param");
      f.setArgAttr(arg.getArgNumber(), "loom.pipeline.frozen", name);
    }
    return success();
  }

  /// Stages of about equal cost: stage k starts at the op where the
  /// running cost comes nearest to k / n of the total.
  LogicalResult balance(ArrayRef<Operation *> compute, int64_t n,
                        SmallVector<size_t> &begin) {
    SmallVector<double> prefix{0.0};
    for (Operation *op : compute)
      prefix.push_back(prefix.back() + opFlops(op) + 4.0 * opBytes(op));
    double total = prefix.back();
    begin.assign(1, 0);
    for (int64_t k = 1; k < n; ++k) {
      double target = total * double(k) / double(n);
      // At least one op per stage, before and after.
      size_t lo = begin.back() + 1, hi = compute.size() - (n - k);
      size_t best = lo;
      for (size_t i = lo; i <= hi; ++i)
        if (std::abs(prefix[i] - target) < std::abs(prefix[best] - target))
          best = i;
      begin.push_back(best);
    }
    return success();
  }

  /// Stage k starts at the first op after stage k-1's start whose
  /// location names the k-th boundary text.
  LogicalResult named(func::FuncOp f, ArrayRef<Operation *> compute, int64_t n,
                      SmallVector<size_t> &begin) {
    SmallVector<StringRef> texts;
    StringRef(boundaries).split(texts, ',', -1, false);
    if (static_cast<int64_t>(texts.size()) != n - 1)
      return f.emitError("loom-pipeline-stages: ")
             << n << " stages need " << n - 1 << " boundaries, not "
             << texts.size() << " ('" << boundaries << "')";
    begin.assign(1, 0);
    for (auto [k, text] : llvm::enumerate(texts)) {
      size_t i = begin.back() + 1;
      while (i < compute.size() &&
             locationName(compute[i]->getLoc()).find(text.trim().str()) ==
                 std::string::npos)
        ++i;
      if (i >= compute.size())
        return f.emitError("loom-pipeline-stages: boundary ")
               << k + 1 << " ('" << text.trim()
               << "'): no op after the previous boundary has a name "
                  "containing it";
      begin.push_back(i);
    }
    return success();
  }
};

} // namespace
