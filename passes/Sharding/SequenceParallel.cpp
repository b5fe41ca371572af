//===- SequenceParallel.cpp - Megatron's sequence parallelism ------------===//
//
// `--loom-tensor-parallel sequence-parallel`. Tensor parallelism leaves the
// activations between a row-parallel matmul and the next column-parallel
// one whole on every rank: the residual adds, layer norms and dropout run
// M times over. Here they are split along the sequence (the rows of the
// row-parallel matmul, dim rank - 2) over the `tensor` axis:
//
// * the row-parallel matmul's all-reduce becomes a reduce-scatter: each
//   rank keeps the sum of its part of the rows (the backward gathers the
//   parts' gradients);
// * the split then follows the ops that work per row (elementwise ops with
//   broadcasting, casts, dropout, layer norms over the trailing dims), each
//   cloned on the rank's rows; a value every rank holds whole and reads
//   along the rows (the residual from before the region) is sliced
//   (`mesh.all_slice`, no communication; its gradient is gathered), and
//   one it reads broadcast along them (layer norm scale and shift, biases)
//   is marked `graph.grad_all_reduce`: each rank's backward gives the part
//   of its gradient from its rows, and the parts are summed;
// * a column-parallel matmul's input all-gathers the rows instead of
//   carrying the `graph.grad_all_reduce` marker: its backward
//   reduce-scatters the ranks' partial gradients (Megatron's pair); an
//   input computed per row from whole values (the first block's layer
//   norm of the embeddings) is computed on the rows too, from its
//   operands' pieces: an all-reduced sum's reduce-scatter (the
//   vocab-parallel embedding's), else a slice;
// * any other reader of a split value (an LM head left whole, the
//   function's results) gets the value back whole: each rank places its
//   rows in zeros and an all-reduce sums them, so the backward hands each
//   rank its rows' gradient exactly.
//
// The runtime gathers and scatters along dim 0, so a split along another
// dim is transposed to the front around the collective.
//
//===----------------------------------------------------------------------===//

#include "passes/PassReport.h"
#include "passes/Sharding/TensorParallelRewrites.h"
#include "passes/Training/TrainingUtils.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace loom;
using namespace loom::graph;

namespace loom::tensor_parallel {
namespace {

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}
ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// A value's piece: its rows of dim `dim` on this rank.
struct Piece {
  Value value;
  int64_t dim;
};

bool isRowwise(Operation *op) {
  if (auto d = dyn_cast<DropoutOp>(op))
    return !d.getTraining();
  if (isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, WhereOp, CompareOp>(
          op))
    return true;
  return op->getNumOperands() == 1 && op->getNumResults() == 1 &&
         op->hasTrait<OpTrait::Elementwise>() && !isa<GradAllReduceOp>(op);
}

class SequenceRewriter {
public:
  SequenceRewriter(func::FuncOp f, const sharding::MeshAxis &axis,
                   llvm::json::Object &out, llvm::raw_ostream &os)
      : f(f), axis(axis), out(out), os(os), b(f.getContext()) {}

  void run(ArrayRef<Operation *> rowSums, ArrayRef<GradAllReduceOp> columns) {
    llvm::json::Array &scatters = reduceScatters;
    llvm::json::Array kept;
    for (Operation *op : rowSums) {
      Value partial = op->getOperand(0);
      int64_t d = rankOf(partial) - 2;
      std::string where = report::describe(partial.getDefiningOp());
      if (d < 0 || shapeOf(partial)[d] % axis.size) {
        std::string why = d < 0 ? "its product has no rows"
                                : "its " + std::to_string(shapeOf(partial)[d]) +
                                      " rows do not split over " +
                                      std::to_string(axis.size) + " ranks";
        kept.push_back(llvm::json::Object{{"after", where}, {"why", why}});
        os << "  sequence parallel: keeps the all_reduce after " << where
           << ": " << why << "\n";
        continue;
      }
      b.setInsertionPoint(op);
      Value piece = move(partial, d, [&](Value x) {
        return sharding::reduceScatter(b, op->getLoc(), axis, x, 0);
      });
      pieces[op->getResult(0)] = {piece, d};
      obsolete.push_back(op);
      scatters.push_back(llvm::json::Object{
          {"after", where},
          {"dim", d},
          {"why", "the row-parallel matmul's partial sums are reduced and "
                  "each rank keeps its part of the rows (dim " +
                      std::to_string(d) + ")"}});
      os << "  reduce_scatter (forward) along dim " << d << " after " << where
         << "\n";
    }
    for (GradAllReduceOp m : columns)
      columnSet.insert(m);

    SmallVector<Operation *> ops;
    for (Operation &op : f.getBody().front())
      ops.push_back(&op);
    for (Operation *op : ops) {
      // A column-parallel input computed per row from whole values (the
      // first block's layer norm of the embeddings) joins the region too.
      if (auto m = dyn_cast<GradAllReduceOp>(op);
          m && columnSet.count(m) && !pieces.count(m.getX()) && pullBack(m)) {
        gather(m);
        continue;
      }
      if (!llvm::any_of(op->getOperands(),
                        [&](Value v) { return pieces.count(v) > 0; }))
        continue;
      if (auto m = dyn_cast<GradAllReduceOp>(op); m && columnSet.count(m)) {
        gather(m);
        continue;
      }
      if (clone(op))
        continue;
      for (OpOperand &use : op->getOpOperands())
        if (pieces.count(use.get()))
          use.set(exit(use.get(), op));
    }
    // The whole originals the pieces replaced, users before definitions.
    llvm::SetVector<Operation *> dead(obsolete.begin(), obsolete.end());
    for (bool erased = true; erased;) {
      erased = false;
      for (Operation *op : dead.takeVector())
        if (op->use_empty())
          op->erase(), erased = true;
        else
          dead.insert(op);
    }

    out["rows_dim"] = "the rows of the row-parallel matmuls (dim rank - 2)";
    out["reduce_scatters"] = std::move(scatters);
    out["all_gathers"] = std::move(gathers);
    out["slices"] = std::move(slices);
    out["exits"] = std::move(exits);
    out["partial_gradients"] = std::move(partials);
    out["kept_all_reduces"] = std::move(kept);
    out["split_ops"] = (int64_t)splitOps;
    os << "  sequence parallel: " << splitOps
       << " op(s) run on each rank's rows\n";
  }

private:
  func::FuncOp f;
  const sharding::MeshAxis &axis;
  llvm::json::Object &out;
  llvm::raw_ostream &os;
  OpBuilder b;
  DenseMap<Value, Piece> pieces;
  DenseSet<Operation *> columnSet;
  SmallVector<Operation *> obsolete;
  DenseMap<Value, Value> marked, exited;
  DenseMap<std::pair<Value, int64_t>, Value> sliced;
  llvm::json::Array gathers, slices, exits, partials, reduceScatters;
  int64_t splitOps = 0;

  /// `collective(x)` along dim `d` of `x`: through a transpose of `d` to
  /// the front and back when `d` is not 0.
  Value move(Value x, int64_t d, llvm::function_ref<Value(Value)> collective) {
    if (d == 0)
      return collective(x);
    int64_t r = rankOf(x);
    SmallVector<int64_t> perm{d}, back;
    for (int64_t i = 0; i < r; ++i)
      if (i != d)
        perm.push_back(i);
    back.resize(r);
    for (int64_t i = 0; i < r; ++i)
      back[perm[i]] = i;
    Location loc = x.getLoc();
    Value front = b.create<TransposeOp>(loc, x, perm);
    return b.create<TransposeOp>(loc, collective(front), back);
  }

  /// Sets the insertion point right after `v` is defined.
  void after(Value v) {
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(&f.getBody().front());
  }

  std::string name(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      for (StringRef kind : {"graph.param", "graph.input"})
        if (auto n = f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kind))
          return n.str();
    if (Operation *def = v.getDefiningOp())
      return report::describe(def);
    return "argument " + std::to_string(cast<BlockArgument>(v).getArgNumber());
  }

  /// A column-parallel matmul's input: the rows gathered (its backward
  /// reduce-scatters the partial gradients) instead of the marker.
  void gather(GradAllReduceOp m) {
    Piece p = pieces.lookup(m.getX());
    b.setInsertionPoint(m);
    Value whole = move(p.value, p.dim, [&](Value x) {
      return sharding::allGather(b, m.getLoc(), axis, x, 0);
    });
    std::string where = m->use_empty()
                            ? report::describe(m)
                            : report::describe(*m->getUsers().begin());
    m.getResult().replaceAllUsesWith(whole);
    m->erase();
    gathers.push_back(llvm::json::Object{
        {"before", where},
        {"dim", p.dim},
        {"why", "the column-parallel matmul reads every row; its backward "
                "reduce-scatters the ranks' partial gradients"}});
    os << "  all_gather (forward) along dim " << p.dim << " before " << where
       << "\n";
  }

  /// `op` on this rank's rows, when it works per row; false otherwise.
  bool clone(Operation *op) {
    if (op->getNumResults() != 1)
      return false;
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type)
      return false;
    int64_t ro = type.getRank();
    std::optional<int64_t> d;
    for (Value v : op->getOperands()) {
      auto it = pieces.find(v);
      if (it == pieces.end())
        continue;
      int64_t aligned = it->second.dim + (ro - rankOf(v));
      if (d && *d != aligned)
        return false;
      d = aligned;
    }
    if (auto ln = dyn_cast<LayerNormOp>(op)) {
      // Normalized over trailing dims after the rows, the rows its own
      // operand's.
      int64_t a = ln.getAxis() < 0 ? ln.getAxis() + ro : ln.getAxis();
      if (!pieces.count(ln.getX()) || a <= *d)
        return false;
    } else if (!isRowwise(op)) {
      return false;
    }
    IRMapping map;
    for (Value v : op->getOperands()) {
      if (auto it = pieces.find(v); it != pieces.end()) {
        map.map(v, it->second.value);
        continue;
      }
      if (!isa<RankedTensorType>(v.getType()))
        return false;
      int64_t dv = *d - (ro - rankOf(v));
      if (dv < 0 || shapeOf(v)[dv] == 1)
        map.map(v, readWhole(v, op));
      else
        map.map(v, slice(v, dv, op));
    }
    b.setInsertionPoint(op);
    Operation *c = b.clone(*op, map);
    c->getResult(0).setType(
        sharding::splitType(op->getResult(0), *d, axis.size));
    pieces[op->getResult(0)] = {c->getResult(0), *d};
    obsolete.push_back(op);
    ++splitOps;
    return true;
  }

  /// Whether `op` works per row of dim `d` of its result.
  bool rowwiseAt(Operation *op, int64_t d) {
    if (op->getNumResults() != 1)
      return false;
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type || d < 0 || d >= type.getRank() || type.getDimSize(d) % axis.size)
      return false;
    if (auto ln = dyn_cast<LayerNormOp>(op)) {
      int64_t a =
          ln.getAxis() < 0 ? ln.getAxis() + type.getRank() : ln.getAxis();
      return a > d;
    }
    return isRowwise(op);
  }

  /// The marked input of a column-parallel matmul, whole so far, as the
  /// gather of its piece when it is computed per row (a layer norm): the
  /// region then starts below it. False when it is not.
  bool pullBack(GradAllReduceOp m) {
    Value x = m.getX();
    int64_t d = rankOf(x) - 2;
    Operation *def = x.getDefiningOp();
    if (!def || isa<mesh::AllReduceOp>(def) || !rowwiseAt(def, d))
      return false;
    pieceOf(x, d, m);
    return true;
  }

  /// The piece of a whole value along dim `d`: a row-parallel sum's
  /// reduce-scatter, a per-row op on its operands' pieces, else a slice.
  Value pieceOf(Value v, int64_t d, Operation *user) {
    if (auto it = pieces.find(v); it != pieces.end() && it->second.dim == d)
      return it->second.value;
    OpBuilder::InsertionGuard guard(b);
    Operation *def = v.getDefiningOp();
    auto sum = dyn_cast_or_null<mesh::AllReduceOp>(def);
    if (sum && sum.getReduction() == mesh::ReductionKind::Sum &&
        sum.getMeshAxes() == ArrayRef<int16_t>{axis.index} &&
        shapeOf(v)[d] % axis.size == 0) {
      b.setInsertionPointAfter(def);
      Value piece = move(sum.getInput(), d, [&](Value x) {
        return sharding::reduceScatter(b, def->getLoc(), axis, x, 0);
      });
      pieces[v] = {piece, d};
      obsolete.push_back(def);
      std::string where = report::describe(def);
      reduceScatters.push_back(llvm::json::Object{
          {"after", where},
          {"dim", d},
          {"why", "the sum enters the split rows: each rank reduces only its "
                  "part of them"}});
      os << "  reduce_scatter (forward) along dim " << d << " instead of "
         << where << "\n";
      return piece;
    }
    if (!def || !rowwiseAt(def, d))
      return slice(v, d, user);
    int64_t ro = rankOf(v);
    IRMapping map;
    for (Value u : def->getOperands()) {
      if (!isa<RankedTensorType>(u.getType()))
        return slice(v, d, user);
      int64_t du = d - (ro - rankOf(u));
      map.map(u, du < 0 || shapeOf(u)[du] == 1 ? readWhole(u, def)
                                               : pieceOf(u, du, def));
    }
    b.setInsertionPointAfter(def);
    Operation *c = b.clone(*def, map);
    c->getResult(0).setType(sharding::splitType(v, d, axis.size));
    pieces[v] = {c->getResult(0), d};
    obsolete.push_back(def);
    ++splitOps;
    return c->getResult(0);
  }

  /// A value the rows read broadcast: whole, its gradient's parts summed.
  Value readWhole(Value v, Operation *user) {
    if (!isa<FloatType>(getElementTypeOrSelf(v.getType())) ||
        matchPattern(v, m_Constant()))
      return v;
    Value &m = marked[v];
    if (m)
      return m;
    OpBuilder::InsertionGuard guard(b);
    after(v);
    m = b.create<GradAllReduceOp>(v.getLoc(), v, sharding::meshRef(b, axis),
                                  b.getDenseI16ArrayAttr({axis.index}));
    partials.push_back(llvm::json::Object{
        {"value", name(v)},
        {"read_by", report::describe(user)},
        {"why", "each rank's rows give part of its gradient; the parts are "
                "summed (graph.grad_all_reduce)"}});
    os << "  all_reduce (backward) of the gradient of " << name(v)
       << " (read by each rank's rows)\n";
    return m;
  }

  /// A whole value the rows read along dim `d`: this rank's rows of it.
  Value slice(Value v, int64_t d, Operation *user) {
    Value &s = sliced[{v, d}];
    if (s)
      return s;
    OpBuilder::InsertionGuard guard(b);
    after(v);
    s = move(v, d, [&](Value x) {
      return sharding::allSlice(b, v.getLoc(), axis, x, 0);
    });
    slices.push_back(llvm::json::Object{
        {"of", name(v)},
        {"read_by", report::describe(user)},
        {"dim", d},
        {"why", "a value every rank holds whole enters the split rows "
                "(no communication; its gradient is all-gathered)"}});
    os << "  all_slice of " << name(v) << " along dim " << d << " for "
       << report::describe(user) << "\n";
    return s;
  }

  /// `v` whole again for a reader outside the region: the rank's rows put
  /// in place among zeros and summed over the ranks.
  Value exit(Value v, Operation *user) {
    Value &w = exited[v];
    if (w)
      return w;
    Piece p = pieces.lookup(v);
    OpBuilder::InsertionGuard guard(b);
    after(p.value);
    Location loc = v.getLoc();
    int64_t n = shapeOf(v)[p.dim], local = n / axis.size;
    training::Scalars si(b, loc, b.getI64Type());
    Value offset =
        b.create<SliceOp>(loc, rankRange(b, loc, axis, n), ArrayRef<int64_t>{0},
                          ArrayRef<int64_t>{1}, ArrayRef<int64_t>{1});
    Value rows =
        b.create<IotaOp>(loc, ArrayRef<int64_t>{n}, (int64_t)0, b.getI64Type());
    Value shifted = b.create<SubOp>(loc, rows, offset);
    Value clamped = b.create<MinOp>(
        loc, b.create<MaxOp>(loc, shifted, si.constant(0.0)).getResult(),
        si.constant((double)(local - 1)));
    Value mine =
        b.create<CompareOp>(loc, CompareDirection::eq, clamped, shifted);
    Value placed = b.create<GatherOp>(loc, p.value, clamped, p.dim);
    SmallVector<int64_t> maskShape(rankOf(v), 1);
    maskShape[p.dim] = n;
    Value mask = b.create<ReshapeOp>(loc, mine, maskShape);
    Value zero = training::Scalars(b, loc, getElementTypeOrSelf(v.getType()))
                     .constant(0);
    Value own = b.create<WhereOp>(loc, mask, placed, zero);
    w = sharding::allReduce(b, loc, axis, own);
    exits.push_back(llvm::json::Object{
        {"of", name(v)},
        {"read_by", report::describe(user)},
        {"why", "a reader outside the split rows needs the whole value: "
                "each rank's rows in place among zeros, all-reduced (the "
                "backward hands each rank its rows' gradient)"}});
    os << "  all_reduce (forward) of " << name(v) << " whole again for "
       << report::describe(user) << "\n";
    return w;
  }
};

} // namespace

void rewriteSequenceParallel(func::FuncOp f, const sharding::MeshAxis &axis,
                             ArrayRef<Operation *> rowSums,
                             ArrayRef<GradAllReduceOp> columnInputs,
                             llvm::json::Object &out, llvm::raw_ostream &os) {
  SequenceRewriter(f, axis, out, os).run(rowSums, columnInputs);
}

} // namespace loom::tensor_parallel
