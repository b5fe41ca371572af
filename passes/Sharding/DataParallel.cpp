//===- DataParallel.cpp - gradients reduced over the data axis ------------===//
//
// `--loom-data-parallel`: every rank runs the gradient function on its slice
// of the global batch; its gradients are partial sums and its loss the loss
// of its slice. The pass buckets the gradients in the order the backward
// produces them and reduces each bucket over the mesh's data axis right
// after its last gradient (all-reduce, or reduce-scatter for ZeRO-2), with
// MLIR's upstream mesh collectives. See Passes.td for the contract and
// docs/distributed.md for the whole flow.
//
//===----------------------------------------------------------------------===//

#include "passes/PassReport.h"
#include "passes/Sharding/Passes.h"
#include "passes/Sharding/ShardingUtils.h"
#include "passes/Training/TrainingUtils.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace loom {
#define GEN_PASS_DEF_DATAPARALLELPASS
#include "passes/Sharding/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::graph;

namespace {

/// One gradient result of the function.
struct Grad {
  unsigned result;   ///< its index among the function's results
  std::string param; ///< graph.grad_of
  Value value;
  int64_t numel = 0, bytes = 0;
  int64_t position = -1; ///< of its defining op in the body; -1: an argument
};

struct Bucket {
  SmallVector<Grad *> grads;
  int64_t bytes = 0;
  Operation *after = nullptr; ///< the last gradient's defining op (or null)
};

struct DataParallelPass : loom::impl::DataParallelPassBase<DataParallelPass> {
  using DataParallelPassBase::DataParallelPassBase;
  /// Where the report goes instead of `report`.
  report::Sink *sink = nullptr;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  /// The bucket size: the option, else a quarter of the gradient bytes
  /// between 256 KiB and 25 MiB.
  int64_t chooseBucketBytes(int64_t total) const {
    if (bucketBytes > 0)
      return bucketBytes;
    return std::clamp<int64_t>(total / 4, 256 << 10, 25 << 20);
  }

  LogicalResult run() {
    ModuleOp module = getOperation();
    if (ranks < 1)
      return module.emitError("loom-data-parallel: ranks must be at least 1, "
                              "not ")
             << (int64_t)ranks;
    if (zero < 0 || zero > 2)
      return module.emitError("loom-data-parallel: zero takes 0, 1 or 2, not ")
             << (int64_t)zero;
    FailureOr<func::FuncOp> found =
        training::gradientFunction(module, funcName, "loom-data-parallel");
    if (failed(found))
      return failure();
    func::FuncOp f = *found;
    if (!f.getBody().hasOneBlock())
      return f.emitError("loom-data-parallel: the gradient function must be "
                         "one block");
    FailureOr<sharding::MeshAxis> axis =
        sharding::getOrCreateAxis(module, "data", ranks, "loom-data-parallel");
    if (failed(axis))
      return failure();
    sharding::findMesh(module)->setAttr(
        sharding::kZeroAttr,
        IntegerAttr::get(IntegerType::get(module.getContext(), 64), zero));

    Block &body = f.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    DenseMap<Operation *, int64_t> position;
    int64_t n = 0;
    for (Operation &op : body)
      position[&op] = n++;

    // The loss and the gradients, in the order the backward computes them.
    std::optional<unsigned> lossResult;
    std::vector<Grad> grads;
    int64_t total = 0;
    for (unsigned i = 0; i < f.getNumResults(); ++i) {
      Value v = ret.getOperand(i);
      if (auto of = f.getResultAttrOfType<StringAttr>(i, "graph.grad_of")) {
        auto type = dyn_cast<RankedTensorType>(v.getType());
        if (!type || !type.hasStaticShape() ||
            !isa<FloatType>(type.getElementType()))
          return f.emitError("loom-data-parallel: the gradient of '")
                 << of.getValue() << "' is not a static float tensor ("
                 << v.getType() << ")";
        Grad g;
        g.result = i;
        g.param = of.getValue().str();
        g.value = v;
        g.numel = type.getNumElements();
        g.bytes = g.numel * type.getElementTypeBitWidth() / 8;
        if (Operation *def = v.getDefiningOp())
          g.position = position.lookup(def);
        total += g.bytes;
        grads.push_back(g);
        continue;
      }
      auto out = f.getResultAttrOfType<StringAttr>(i, "graph.output");
      if (out && out.getValue() == "loss")
        lossResult = i;
    }
    // Without gradients (a pipeline rank whose stages train nothing) the
    // loss is still averaged.
    if (grads.empty() && !lossResult)
      return f.emitError("loom-data-parallel: no gradients to reduce");
    // A mean over the labels that are not ignored: each rank's weight in
    // the global mean is its share of the counted labels, not 1/N.
    Value weight = labelWeight(f, *axis);
    if (weight)
      for (Grad &g : grads)
        g.value = scaleBy(g.value, weight,
                          g.position >= 0 ? g.value.getDefiningOp() : nullptr);
    std::stable_sort(
        grads.begin(), grads.end(),
        [](const Grad &a, const Grad &b) { return a.position < b.position; });
    int64_t cap = chooseBucketBytes(total);
    std::vector<Bucket> buckets;
    for (Grad &g : grads) {
      if (buckets.empty() || buckets.back().bytes >= cap)
        buckets.emplace_back();
      Bucket &bk = buckets.back();
      bk.grads.push_back(&g);
      bk.bytes += g.bytes;
      if (Operation *def = g.value.getDefiningOp())
        bk.after = def;
    }

    SmallVector<Value> results(ret.getOperands());
    SmallVector<Type> resultTypes(f.getResultTypes());
    for (Bucket &bk : buckets)
      reduceBucket(f, *axis, bk, results, resultTypes);
    if (lossResult) {
      Value loss = results[*lossResult];
      OpBuilder b(f.getContext());
      if (Operation *def = loss.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(&body);
      Location loc = NameLoc::get(b.getStringAttr("data_parallel/loss"));
      training::Scalars s(b, loc, getElementTypeOrSelf(loss.getType()));
      if (weight)
        loss = scaleBy(loss, weight, loss.getDefiningOp());
      Value sum = sharding::allReduce(b, loc, *axis, loss);
      results[*lossResult] = s.mul(sum, 1.0 / ranks);
    }
    ret->setOperands(results);
    f.setFunctionType(
        FunctionType::get(f.getContext(), f.getArgumentTypes(), resultTypes));
    for (Grad &g : grads)
      if (zero > 0)
        f.setResultAttr(
            g.result, "graph.shard",
            sharding::shardAttr(
                f.getContext(),
                cast<RankedTensorType>(g.value.getType()).getShape()));
    f->setAttr("loom.data_parallel",
               IntegerAttr::get(IntegerType::get(f.getContext(), 64), ranks));
    return writeReport(f, *axis, buckets, cap, lossResult.has_value());
  }

  /// For a cross-entropy mean over the labels other than `ignore_index`
  /// (the labels a function argument): this rank's weight `N * c / C`,
  /// with c its counted labels and C the ranks' total (an all-reduce at
  /// the function's start), so that the mean over the ranks of weighted
  /// losses and gradients is the global batch's mean, whatever the ranks'
  /// shares of ignored labels. Null when the loss has no such mean.
  Value labelWeight(func::FuncOp f, const sharding::MeshAxis &axis) {
    CrossEntropyOp ce;
    f.walk([&](CrossEntropyOp op) {
      if (op.getIgnoreIndexAttr() && isa<BlockArgument>(op.getLabels()) &&
          op.getReduction() == Reduction::mean)
        ce = op;
    });
    if (!ce)
      return {};
    Value labels = ce.getLabels();
    OpBuilder b(f.getContext());
    b.setInsertionPointToStart(&f.getBody().front());
    Location loc = NameLoc::get(b.getStringAttr("data_parallel/labels"));
    Type f32 = b.getF32Type();
    training::Scalars s(b, loc, f32);
    Value ignore =
        training::Scalars(b, loc, getElementTypeOrSelf(labels.getType()))
            .intConst(ce.getIgnoreIndexAttr().getInt());
    Value kept = b.create<CastOp>(
        loc, b.create<CompareOp>(loc, CompareDirection::ne, labels, ignore),
        f32);
    SmallVector<int64_t> all;
    for (int64_t i = 0; i < cast<RankedTensorType>(labels.getType()).getRank();
         ++i)
      all.push_back(i);
    Value count =
        all.empty() ? kept : b.create<ReduceSumOp>(loc, kept, all, false);
    Value total = sharding::allReduce(b, loc, axis, count);
    return s.div(s.mul(count, (double)ranks),
                 b.create<MaxOp>(loc, total, s.constant(1.0)));
  }

  /// `v * weight` (in `v`'s element type), after `after` (or at the start).
  Value scaleBy(Value v, Value weight, Operation *after) {
    OpBuilder b(v.getContext());
    if (after)
      b.setInsertionPointAfter(after);
    else
      b.setInsertionPointAfterValue(weight);
    Location loc = NameLoc::get(b.getStringAttr("data_parallel/labels"));
    Type elem = getElementTypeOrSelf(v.getType());
    Value w = elem == weight.getType().cast<ShapedType>().getElementType()
                  ? weight
                  : b.create<CastOp>(loc, weight, elem).getResult();
    return b.create<MulOp>(loc, v, w);
  }

  /// Reduces one bucket after its last gradient and replaces the bucket's
  /// results by the reduced values (ZeRO: the shards).
  void reduceBucket(func::FuncOp f, const sharding::MeshAxis &axis, Bucket &bk,
                    SmallVector<Value> &results,
                    SmallVector<Type> &resultTypes) {
    OpBuilder b(f.getContext());
    if (bk.after)
      b.setInsertionPointAfter(bk.after);
    else
      b.setInsertionPointToStart(&f.getBody().front());
    Location loc = NameLoc::get(b.getStringAttr(
        llvm::formatv("data_parallel/bucket{0}", bk.grads.front()->param)
            .str()));
    Type elem = getElementTypeOrSelf(bk.grads.front()->value.getType());
    bool sameType = llvm::all_of(bk.grads, [&](Grad *g) {
      return getElementTypeOrSelf(g->value.getType()) == elem;
    });
    training::Scalars s(b, loc, elem);
    // The sum over the ranks, divided by them where it is read (the
    // division fuses into the optimizer's kernels; the bucket reads the
    // gradients as they are).
    auto mean = [&](Value v) -> Value {
      return ranks == 1 ? v : s.mul(v, 1.0 / ranks);
    };
    if (zero == 0) {
      if (bk.grads.size() == 1 || !sameType) {
        for (Grad *g : bk.grads) {
          Value r = sharding::allReduce(b, loc, axis, g->value);
          results[g->result] = mean(r);
        }
        return;
      }
      SmallVector<Value> flat;
      for (Grad *g : bk.grads)
        flat.push_back(
            b.create<ReshapeOp>(loc, g->value, ArrayRef<int64_t>{g->numel}));
      Value all = b.create<ConcatOp>(loc, flat, 0);
      Value r = sharding::allReduce(b, loc, axis, all);
      int64_t offset = 0;
      for (Grad *g : bk.grads) {
        Value piece = b.create<SliceOp>(loc, r, ArrayRef<int64_t>{offset},
                                        ArrayRef<int64_t>{offset + g->numel},
                                        ArrayRef<int64_t>{1});
        results[g->result] = mean(b.create<ReshapeOp>(
            loc, piece, cast<RankedTensorType>(g->value.getType()).getShape()));
        offset += g->numel;
      }
      return;
    }
    // ZeRO: [ranks, chunk] per gradient, concatenated along the chunks, so
    // that row r of the bucket is every gradient's chunk r.
    SmallVector<Value> rows;
    SmallVector<int64_t> chunks;
    for (Grad *g : bk.grads) {
      int64_t chunk = (g->numel + ranks - 1) / ranks;
      chunks.push_back(chunk);
      Value flat =
          b.create<ReshapeOp>(loc, g->value, ArrayRef<int64_t>{g->numel});
      if (chunk * ranks != g->numel)
        flat = b.create<PadOp>(loc, flat,
                               ArrayRef<int64_t>{0, chunk * ranks - g->numel},
                               PadMode::constant, llvm::APFloat(0.0));
      rows.push_back(
          b.create<ReshapeOp>(loc, flat, ArrayRef<int64_t>{ranks, chunk}));
    }
    Value all = rows.size() == 1 || !sameType
                    ? Value()
                    : b.create<ConcatOp>(loc, rows, 1).getResult();
    auto shardOf = [&](Value rowsValue) {
      return zero == 2 ? sharding::reduceScatter(b, loc, axis, rowsValue, 0)
                       : sharding::allSlice(
                             b, loc, axis,
                             sharding::allReduce(b, loc, axis, rowsValue), 0);
    };
    if (!all) {
      for (auto [g, row, chunk] : llvm::zip(bk.grads, rows, chunks)) {
        Value mine = shardOf(row);
        results[g->result] =
            mean(b.create<ReshapeOp>(loc, mine, ArrayRef<int64_t>{chunk}));
        resultTypes[g->result] = results[g->result].getType();
      }
      return;
    }
    Value mine = shardOf(all);
    int64_t offset = 0;
    for (auto [g, chunk] : llvm::zip(bk.grads, chunks)) {
      Value piece = b.create<SliceOp>(loc, mine, ArrayRef<int64_t>{0, offset},
                                      ArrayRef<int64_t>{1, offset + chunk},
                                      ArrayRef<int64_t>{1, 1});
      results[g->result] =
          mean(b.create<ReshapeOp>(loc, piece, ArrayRef<int64_t>{chunk}));
      resultTypes[g->result] = results[g->result].getType();
      offset += chunk;
    }
  }

  LogicalResult writeReport(func::FuncOp f, const sharding::MeshAxis &axis,
                            ArrayRef<Bucket> buckets, int64_t cap, bool loss) {
    StringRef kind = zero == 2   ? "reduce_scatter"
                     : zero == 1 ? "all_reduce + all_slice"
                                 : "all_reduce";
    llvm::json::Array bucketsJson;
    llvm::json::Array params;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "loom-data-parallel: " << ranks << " ranks on axis 'data' of @"
       << axis.mesh << ", ZeRO-" << zero << ", " << buckets.size()
       << " gradient bucket(s) of up to " << cap << " bytes\n";
    for (auto [i, bk] : llvm::enumerate(buckets)) {
      llvm::json::Array names;
      for (Grad *g : bk.grads) {
        names.push_back(g->param);
        params.push_back(llvm::json::Object{
            {"name", g->param},
            {"bytes", g->bytes},
            {"param", "replicated over 'data'"},
            {"gradient",
             zero == 2 ? "reduce-scattered: shard of 1/" + std::to_string(ranks)
                       : "all-reduced (mean over the ranks)"},
            {"optimizer_state",
             zero > 0 ? "sharded over 'data' (1/" + std::to_string(ranks) + ")"
                      : "replicated"},
            {"bucket", (int64_t)i}});
      }
      std::string after = bk.after ? report::describe(bk.after)
                                   : std::string("the function's entry");
      bucketsJson.push_back(llvm::json::Object{
          {"index", (int64_t)i},
          {"collective", kind},
          {"bytes", bk.bytes},
          {"gradients", std::move(names)},
          {"starts_after", after},
          {"why", "the gradients are partial sums over the data-parallel "
                  "ranks' batch slices; started as soon as the bucket's "
                  "last gradient is computed, to overlap the rest of the "
                  "backward"}});
      os << llvm::formatv("  bucket {0}: {1} of {2} bytes ({3} gradient(s)) "
                          "after {4}\n",
                          i, kind, bk.bytes, bk.grads.size(), after);
    }
    if (summary)
      llvm::errs() << text;
    if (!sink && report.empty())
      return success();
    llvm::json::Object out{
        {"mesh",
         llvm::json::Object{{"name", axis.mesh},
                            {"shape", llvm::json::Array{(int64_t)ranks}},
                            {"axes", llvm::json::Array{"data"}}}},
        {"zero", (int64_t)zero},
        {"bucket_bytes", cap},
        {"buckets", std::move(bucketsJson)},
        {"parameters", std::move(params)},
        {"loss", loss ? "all_reduce, divided by the ranks (the mean of the "
                        "ranks' losses)"
                      : "none"}};
    return report::emit(sink, "sharding", f, "loom-data-parallel", report,
                        llvm::json::Value(std::move(out)));
  }
};

} // namespace

std::unique_ptr<mlir::Pass>
loom::createDataParallelPass(const DataParallelPassOptions &options,
                             report::Sink *sink) {
  auto pass = std::make_unique<DataParallelPass>(options);
  pass->sink = sink;
  return pass;
}
