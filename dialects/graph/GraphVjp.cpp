//===- GraphVjp.cpp - reverse-mode derivative rules of the graph ops ------===//
//
// One VJP rule per differentiable op, attached to the op as its
// VjpOpInterface (GraphInterfaces.td). A rule receives the gradients of the
// op's results and builds graph ops for the gradients of its operands.
// Rules assume static shapes (the autodiff pass checks that) and reduce a
// gradient that was broadcast back to its operand's shape.
//
// Conventions: `dy` is a result's gradient, `dx` an operand's; a null
// operand gradient is zero. Ops without a rule here (resize, reduce_prod,
// the run-time shape ops) make the autodiff pass fail naming the op.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace loom::graph;

namespace {

/// Builds the graph ops of a rule at one location.
class Grad {
public:
  Grad(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  static RankedTensorType type(Value v) {
    return cast<RankedTensorType>(v.getType());
  }
  static Type elem(Value v) { return type(v).getElementType(); }

  /// A rank-0 constant of `v`'s element type.
  Value scalar(Value like, double value) {
    Type e = elem(like);
    auto t = RankedTensorType::get({}, e);
    Attribute a = isa<FloatType>(e)
                      ? Attribute(b.getFloatAttr(e, value))
                      : Attribute(IntegerAttr::get(
                            e, APInt(e.getIntOrFloatBitWidth(), (int64_t)value,
                                     /*isSigned=*/true)));
    return b.create<ConstantOp>(loc, DenseElementsAttr::get(t, a));
  }
  Value zerosLike(Value v) {
    return b.create<FillLikeOp>(loc, v, b.getFloatAttr(elem(v), 0.0));
  }
  Value add(Value x, Value y) { return b.create<AddOp>(loc, x, y); }
  Value sub(Value x, Value y) { return b.create<SubOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.create<MulOp>(loc, x, y); }
  Value div(Value x, Value y) { return b.create<DivOp>(loc, x, y); }
  Value mul(Value x, double c) { return mul(x, scalar(x, c)); }
  Value neg(Value x) { return b.create<NegOp>(loc, x); }
  Value exp(Value x) { return b.create<ExpOp>(loc, x); }
  Value log(Value x) { return b.create<LogOp>(loc, x); }
  Value floor(Value x) { return b.create<FloorOp>(loc, x); }
  Value tanh(Value x) { return b.create<TanhOp>(loc, x); }
  Value cmp(CompareDirection d, Value x, Value y) {
    return b.create<CompareOp>(loc, d, x, y);
  }
  Value cmp(CompareDirection d, Value x, double c) {
    return cmp(d, x, scalar(x, c));
  }
  /// A boolean tensor as 0/1 of `like`'s element type.
  Value mask(Value cond, Value like) {
    return b.create<CastOp>(loc, cond, elem(like));
  }
  Value select(Value cond, Value x, Value y) {
    return b.create<WhereOp>(loc, cond, x, y);
  }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    if (type(x).getShape() == shape)
      return x;
    return b.create<ReshapeOp>(loc, x, shape);
  }
  Value broadcastTo(Value x, ArrayRef<int64_t> shape) {
    if (type(x).getShape() == shape)
      return x;
    return b.create<BroadcastToOp>(loc, x, shape);
  }
  Value reduceSum(Value x, ArrayRef<int64_t> axes, bool keepdims) {
    if (axes.empty())
      return x;
    return b.create<ReduceSumOp>(loc, x, axes, keepdims);
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    return b.create<TransposeOp>(loc, x, perm);
  }
  Value matmul(Value x, Value y, bool tx, bool ty) {
    return b.create<MatmulOp>(loc, x, y, tx, ty);
  }

  /// Sums a gradient of a broadcast result down to `target`'s shape: over
  /// the leading dims `target` lacks and the dims where it has size 1.
  Value sumTo(Value g, Value target) {
    ArrayRef<int64_t> gs = type(g).getShape();
    ArrayRef<int64_t> ts = type(target).getShape();
    if (gs == ts)
      return g;
    int64_t lead = (int64_t)gs.size() - (int64_t)ts.size();
    SmallVector<int64_t> axes;
    for (int64_t i = 0; i < (int64_t)gs.size(); ++i)
      if (i < lead || (ts[i - lead] == 1 && gs[i] != 1))
        axes.push_back(i);
    return reshape(reduceSum(g, axes, /*keepdims=*/true), ts);
  }

  /// The gradient of a reduction's result spread back over its input:
  /// `dy` reshaped with the reduced dims as 1, then broadcast to `x`.
  Value unreduce(Value dy, Value x, ArrayRef<int64_t> axes) {
    SmallVector<int64_t> keep(type(x).getShape());
    for (int64_t a : axes)
      keep[a] = 1;
    return broadcastTo(reshape(dy, keep), type(x).getShape());
  }

  OpBuilder &b;
  Location loc;
};

using Grads = SmallVectorImpl<Value>;

static int64_t product(ArrayRef<int64_t> dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

/// Axes [from, rank).
static SmallVector<int64_t> trailingAxes(int64_t from, int64_t rank) {
  SmallVector<int64_t> axes;
  for (int64_t i = from; i < rank; ++i)
    axes.push_back(i);
  return axes;
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

LogicalResult vjp(NegOp, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = g.neg(dy[0]);
  return success();
}

LogicalResult vjp(AbsOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  // sign(x), 0 at 0 as in PyTorch.
  Value x = op.getX();
  Value sign = g.sub(g.mask(g.cmp(CompareDirection::gt, x, 0.0), x),
                     g.mask(g.cmp(CompareDirection::lt, x, 0.0), x));
  dx[0] = g.mul(dy[0], sign);
  return success();
}

LogicalResult vjp(ExpOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = g.mul(dy[0], op.getResult());
  return success();
}

LogicalResult vjp(LogOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = g.div(dy[0], op.getX());
  return success();
}

LogicalResult vjp(SqrtOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = g.div(g.mul(dy[0], 0.5), op.getResult());
  return success();
}

LogicalResult vjp(RsqrtOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  // d/dx x^-1/2 = -1/2 x^-3/2 = -1/2 y^3.
  Value y = op.getResult();
  dx[0] = g.mul(g.mul(dy[0], -0.5), g.mul(y, g.mul(y, y)));
  return success();
}

LogicalResult vjp(TanhOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  Value y = op.getResult();
  dx[0] = g.mul(dy[0], g.sub(g.scalar(y, 1.0), g.mul(y, y)));
  return success();
}

LogicalResult vjp(CosOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = g.neg(g.mul(dy[0], g.b.create<SinOp>(g.loc, op.getX())));
  return success();
}

LogicalResult vjp(SinOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = g.mul(dy[0], g.b.create<CosOp>(g.loc, op.getX()));
  return success();
}

/// d atan(x) = dx / (1 + x^2).
LogicalResult vjp(AtanOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  Value x = op.getX();
  dx[0] = g.div(dy[0], g.add(g.scalar(x, 1.0), g.mul(x, x)));
  return success();
}

LogicalResult vjp(SigmoidOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  Value y = op.getResult();
  dx[0] = g.mul(dy[0], g.mul(y, g.sub(g.scalar(y, 1.0), y)));
  return success();
}

LogicalResult vjp(ReluOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  Value x = op.getX();
  dx[0] = g.mul(dy[0], g.mask(g.cmp(CompareDirection::gt, x, 0.0), x));
  return success();
}

LogicalResult vjp(ErfOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  Value x = op.getX();
  Value e = g.exp(g.neg(g.mul(x, x)));
  dx[0] = g.mul(dy[0], g.mul(e, 2.0 / std::sqrt(M_PI)));
  return success();
}

/// floor, ceil and round are flat almost everywhere: a zero gradient, as in
/// PyTorch.
template <typename OpT>
LogicalResult zeroVjp(OpT, Grad &, ArrayRef<Value>, Grads &) {
  return success();
}
LogicalResult vjp(FloorOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  return zeroVjp(op, g, dy, dx);
}
LogicalResult vjp(CeilOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  return zeroVjp(op, g, dy, dx);
}
LogicalResult vjp(RoundOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  return zeroVjp(op, g, dy, dx);
}

LogicalResult vjp(GeluOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  Value x = op.getX();
  Value d;
  if (op.getApproximate() == GeluApproximation::tanh) {
    // u = c (x + a x^3), gelu = x/2 (1 + tanh u),
    // d = (1 + t)/2 + x/2 (1 - t^2) c (1 + 3 a x^2).
    const double c = std::sqrt(2.0 / M_PI), a = 0.044715;
    Value x2 = g.mul(x, x);
    Value u = g.mul(g.add(x, g.mul(g.mul(x2, x), a)), c);
    Value t = g.tanh(u);
    Value one = g.scalar(x, 1.0);
    Value du = g.mul(g.add(one, g.mul(x2, 3.0 * a)), c);
    d = g.add(g.mul(g.add(one, t), 0.5),
              g.mul(g.mul(g.mul(x, 0.5), g.sub(one, g.mul(t, t))), du));
  } else {
    // Phi(x) + x phi(x).
    Value phiCdf =
        g.mul(g.add(g.scalar(x, 1.0),
                    g.b.create<ErfOp>(g.loc, g.mul(x, 1.0 / std::sqrt(2.0)))),
              0.5);
    Value pdf =
        g.mul(g.exp(g.mul(g.mul(x, x), -0.5)), 1.0 / std::sqrt(2 * M_PI));
    d = g.add(phiCdf, g.mul(x, pdf));
  }
  dx[0] = g.mul(dy[0], d);
  return success();
}

LogicalResult vjp(ClampOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  // The gradient passes where min <= x <= max (both ends included, as in
  // PyTorch).
  Value x = op.getX(), pass = dy[0];
  if (auto lo = op.getMin())
    pass = g.mul(
        pass, g.mask(g.cmp(CompareDirection::ge, x, lo->convertToDouble()), x));
  if (auto hi = op.getMax())
    pass = g.mul(
        pass, g.mask(g.cmp(CompareDirection::le, x, hi->convertToDouble()), x));
  dx[0] = pass;
  return success();
}

// fake_quantize: the straight-through estimator. With q = round(x / s) + z
// (z the rounded, clamped zero point), x gets dy where qmin <= q <= qmax
// and 0 elsewhere. A `learned` scale and zero point get LSQ's gradients
// (PyTorch's _fake_quantize_learnable_per_*_affine without its grad
// factor): the scale round(x / s) - x / s inside and clamp(q) - z outside,
// the zero point -s outside and 0 inside, each summed to its shape.
LogicalResult vjp(FakeQuantizeOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  OpBuilder &b = g.b;
  auto lo = b.getF64FloatAttr((double)(int64_t)op.getQmin());
  auto hi = b.getF64FloatAttr((double)(int64_t)op.getQmax());
  Value x = op.getX(), s = op.getScale();
  Value z = b.create<ClampOp>(
      g.loc, b.create<RoundOp>(g.loc, op.getZeroPoint()), lo, hi);
  Value xs = g.div(x, s);
  Value r = b.create<RoundOp>(g.loc, xs);
  Value q = g.add(r, z);
  Value inside = g.mul(
      g.mask(g.cmp(CompareDirection::ge, q, (double)(int64_t)op.getQmin()), q),
      g.mask(g.cmp(CompareDirection::le, q, (double)(int64_t)op.getQmax()), q));
  dx[0] = g.sumTo(g.mul(dy[0], inside), x);
  if (!op.getLearned())
    return success();
  Value outside = g.sub(g.scalar(q, 1.0), inside);
  Value clamped = b.create<ClampOp>(g.loc, q, lo, hi);
  Value ds =
      g.add(g.mul(inside, g.sub(r, xs)), g.mul(outside, g.sub(clamped, z)));
  dx[1] = g.sumTo(g.mul(dy[0], ds), s);
  dx[2] = g.sumTo(g.mul(dy[0], g.mul(outside, g.neg(s))), op.getZeroPoint());
  return success();
}

// Training dropout is x times a mask that depends on the seed (and, for
// random_dropout, the step counter) and the element index only: its VJP is
// the same dropout applied to dy, the mask rebuilt rather than stored.
// (loom-optimizer turns each training graph.dropout of the step, forward
// and backward alike, into a random_dropout of the micro-step counter.)
LogicalResult vjp(DropoutOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  if (op.getTraining()) {
    dx[0] =
        g.b.create<DropoutOp>(g.loc, dy[0].getType(), dy[0], op->getAttrs());
    return success();
  }
  dx[0] = dy[0];
  return success();
}

LogicalResult vjp(RandomDropoutOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = g.b.create<RandomDropoutOp>(
      g.loc, dy[0].getType(), ValueRange{dy[0], op.getKey(), op.getCounter()},
      op->getAttrs());
  return success();
}

// Tensor parallelism's pair (GradAllReduceOp's description): the parts of
// a gradient are summed where a whole value entered split computation...
LogicalResult vjp(GradAllReduceOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = g.b.create<mesh::AllReduceOp>(
      g.loc, dy[0].getType(), op.getMeshAttr(), op.getMeshAxesAttr(), dy[0],
      mesh::ReductionKindAttr::get(g.b.getContext(), mesh::ReductionKind::Sum));
  return success();
}

// ...and a value summed from the ranks' parts has, on each part, the
// gradient of the sum, which every rank holds whole. Before autodiff an
// all-reduce only ever sums parts into a value every rank holds (the loss
// is computed alike on each rank and counted once), so this is its VJP.
LogicalResult vjp(mesh::AllReduceOp op, Grad &, ArrayRef<Value> dy, Grads &dx) {
  if (op.getReduction() != mesh::ReductionKind::Sum)
    return op.emitError("only a sum all-reduce has a VJP rule");
  dx[0] = dy[0];
  return success();
}

// Sequence parallelism's pairs (--loom-tensor-parallel sequence-parallel):
// a value gathered from the ranks' sequence pieces is read by
// column-parallel matmuls, whose backward gives each rank a part of its
// gradient: the parts are summed and each rank keeps its piece's gradient
// (Megatron's all-gather / reduce-scatter pair)...
LogicalResult vjp(mesh::AllGatherOp op, Grad &g, ArrayRef<Value> dy,
                  Grads &dx) {
  dx[0] = g.b.create<mesh::ReduceScatterOp>(
      g.loc, op.getInput().getType(), op.getMeshAttr(), op.getMeshAxesAttr(),
      dy[0],
      mesh::ReductionKindAttr::get(g.b.getContext(), mesh::ReductionKind::Sum),
      op.getGatherAxisAttr());
  return success();
}

// ...a piece of the sum of the ranks' parts (a row-parallel matmul's
// products, each rank keeping its part of the sequence) has on every part
// the gradient of the whole sum: the pieces' gradients gathered...
LogicalResult vjp(mesh::ReduceScatterOp op, Grad &g, ArrayRef<Value> dy,
                  Grads &dx) {
  if (op.getReduction() != mesh::ReductionKind::Sum)
    return op.emitError("only a sum reduce-scatter has a VJP rule");
  dx[0] = g.b.create<mesh::AllGatherOp>(g.loc, op.getInput().getType(),
                                        op.getMeshAttr(), op.getMeshAxesAttr(),
                                        dy[0], op.getScatterAxisAttr());
  return success();
}

// ...and a rank's piece of a value every rank holds whole gives the whole
// value's gradient once the pieces' gradients are gathered.
LogicalResult vjp(mesh::AllSliceOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = g.b.create<mesh::AllGatherOp>(g.loc, op.getInput().getType(),
                                        op.getMeshAttr(), op.getMeshAxesAttr(),
                                        dy[0], op.getSliceAxisAttr());
  return success();
}

LogicalResult vjp(CastOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  if (isa<FloatType>(Grad::elem(op.getX())) &&
      isa<FloatType>(Grad::elem(op.getResult())))
    dx[0] = g.b.create<CastOp>(g.loc, dy[0], Grad::elem(op.getX()));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise binary (with broadcasting)
//===----------------------------------------------------------------------===//

LogicalResult vjp(AddOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = g.sumTo(dy[0], op.getLhs());
  dx[1] = g.sumTo(dy[0], op.getRhs());
  return success();
}

LogicalResult vjp(SubOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = g.sumTo(dy[0], op.getLhs());
  dx[1] = g.sumTo(g.neg(dy[0]), op.getRhs());
  return success();
}

LogicalResult vjp(MulOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = g.sumTo(g.mul(dy[0], op.getRhs()), op.getLhs());
  dx[1] = g.sumTo(g.mul(dy[0], op.getLhs()), op.getRhs());
  return success();
}

LogicalResult vjp(DivOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  // d(l/r)/dr = -(l/r)/r.
  dx[0] = g.sumTo(g.div(dy[0], op.getRhs()), op.getLhs());
  dx[1] = g.sumTo(g.neg(g.div(g.mul(dy[0], op.getResult()), op.getRhs())),
                  op.getRhs());
  return success();
}

LogicalResult vjp(PowOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  Value l = op.getLhs(), r = op.getRhs(), y = op.getResult();
  Value rm1 = g.sub(r, g.scalar(r, 1.0));
  dx[0] = g.sumTo(g.mul(dy[0], g.mul(r, g.b.create<PowOp>(g.loc, l, rm1))), l);
  // d/dr = y log(l); 0 where l == 0 (PyTorch's convention, no 0 * -inf).
  Value dr = g.mul(dy[0], g.mul(y, g.log(l)));
  Value lIsZero = g.cmp(CompareDirection::eq, l, 0.0);
  dx[1] = g.sumTo(g.select(lIsZero, g.zerosLike(dr), dr), r);
  return success();
}

/// max / min: the gradient goes to the winning side, half to each on a tie
/// (PyTorch's maximum / minimum).
static LogicalResult extremumVjp(Value l, Value r, CompareDirection wins,
                                 Grad &g, ArrayRef<Value> dy, Grads &dx) {
  Value tie = g.mul(g.mask(g.cmp(CompareDirection::eq, l, r), dy[0]), 0.5);
  Value lw = g.add(g.mask(g.cmp(wins, l, r), dy[0]), tie);
  Value rw = g.add(g.mask(g.cmp(wins, r, l), dy[0]), tie);
  dx[0] = g.sumTo(g.mul(dy[0], lw), l);
  dx[1] = g.sumTo(g.mul(dy[0], rw), r);
  return success();
}
LogicalResult vjp(MaxOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  return extremumVjp(op.getLhs(), op.getRhs(), CompareDirection::gt, g, dy, dx);
}
LogicalResult vjp(MinOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  return extremumVjp(op.getLhs(), op.getRhs(), CompareDirection::lt, g, dy, dx);
}

LogicalResult vjp(RemOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  // l - r trunc(l / r); trunc(q) = q - rem(q, 1).
  Value l = op.getLhs(), r = op.getRhs();
  Value q = g.div(l, r);
  Value trunc = g.sub(q, g.b.create<RemOp>(g.loc, q, g.scalar(q, 1.0)));
  dx[0] = g.sumTo(dy[0], l);
  dx[1] = g.sumTo(g.neg(g.mul(dy[0], trunc)), r);
  return success();
}

LogicalResult vjp(ModOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  Value l = op.getLhs(), r = op.getRhs();
  dx[0] = g.sumTo(dy[0], l);
  dx[1] = g.sumTo(g.neg(g.mul(dy[0], g.floor(g.div(l, r)))), r);
  return success();
}

LogicalResult vjp(WhereOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  Value zeros = g.zerosLike(dy[0]);
  Value cond = op.getCond();
  dx[1] = g.sumTo(g.select(cond, dy[0], zeros), op.getX());
  dx[2] = g.sumTo(g.select(cond, zeros, dy[0]), op.getY());
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra and normalization
//===----------------------------------------------------------------------===//

LogicalResult vjp(MatmulOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  Value a = op.getLhs(), b = op.getRhs(), d = dy[0];
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  // A 1-D side is a row (lhs) or column (rhs) vector whose added dim was
  // removed from the result: put both back.
  SmallVector<int64_t> dShape(Grad::type(d).getShape());
  Value a2 = a, b2 = b;
  if (Grad::type(a).getRank() == 1) {
    a2 = g.reshape(a, {1, Grad::type(a).getDimSize(0)});
    dShape.insert(dShape.end() - (Grad::type(b).getRank() == 1 ? 0 : 1), 1);
    ta = false;
  }
  if (Grad::type(b).getRank() == 1) {
    b2 = g.reshape(b, {Grad::type(b).getDimSize(0), 1});
    dShape.push_back(1);
    tb = false;
  }
  d = g.reshape(d, dShape);
  // A_eff = ta ? A^T : A (same for B); Y = A_eff B_eff.
  Value da = ta ? g.matmul(b2, d, tb, true) : g.matmul(d, b2, false, !tb);
  Value db;
  ArrayRef<int64_t> aShape = Grad::type(a2).getShape();
  if (Grad::type(b2).getRank() == 2 && aShape.size() > 2 && !ta &&
      Grad::type(a2).hasStaticShape() && Grad::type(d).hasStaticShape()) {
    // x[..., M, K] . W[K, N]: W's gradient sums x^T d over the batch. As
    // one GEMM over every row (x as [rows, K], d as [rows, N]) it needs no
    // per-sample [batch, K, N] products and no batch sum.
    int64_t rows = product(aShape.drop_back());
    Value x = g.reshape(a2, {rows, aShape.back()});
    Value dd = g.reshape(d, {rows, Grad::type(d).getShape().back()});
    db = tb ? g.matmul(dd, x, true, false) : g.matmul(x, dd, true, false);
  } else {
    db = tb ? g.matmul(d, a2, true, ta) : g.matmul(a2, d, !ta, false);
  }
  dx[0] = g.reshape(g.sumTo(da, a2), Grad::type(a).getShape());
  dx[1] = g.reshape(g.sumTo(db, b2), Grad::type(b).getShape());
  return success();
}

LogicalResult vjp(LayerNormOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  // xhat = (x - mean) rstd over dims [axis, rank); y = xhat scale + bias.
  // dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)).
  Value x = op.getX(), d = dy[0];
  int64_t rank = Grad::type(x).getRank();
  int64_t axis = op.getAxis();
  SmallVector<int64_t> norm = trailingAxes(axis, rank);
  SmallVector<int64_t> lead = trailingAxes(0, axis);
  double n = (double)product(Grad::type(x).getShape().drop_front(axis));
  Value mean = g.mul(g.reduceSum(x, norm, true), 1.0 / n);
  Value xc = g.sub(x, mean);
  Value var = g.mul(g.reduceSum(g.mul(xc, xc), norm, true), 1.0 / n);
  Value rstd = g.b.create<RsqrtOp>(
      g.loc, g.add(var, g.scalar(var, op.getEpsilon().convertToDouble())));
  Value xhat = g.mul(xc, rstd);
  Value dxhat = g.mul(d, op.getScale());
  Value m1 = g.mul(g.reduceSum(dxhat, norm, true), 1.0 / n);
  Value m2 = g.mul(g.reduceSum(g.mul(dxhat, xhat), norm, true), 1.0 / n);
  dx[0] = g.mul(rstd, g.sub(g.sub(dxhat, m1), g.mul(xhat, m2)));
  dx[1] = g.reduceSum(g.mul(d, xhat), lead, false);
  if (op.getBias())
    dx[2] = g.reduceSum(d, lead, false);
  return success();
}

LogicalResult vjp(BatchNormOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  // The inference form: statistics are operands, frozen (no gradient).
  Value x = op.getX(), d = dy[0];
  int64_t rank = Grad::type(x).getRank();
  int64_t c = Grad::type(x).getDimSize(1);
  SmallVector<int64_t> perChannel(rank, 1);
  perChannel[1] = c;
  SmallVector<int64_t> others;
  for (int64_t i = 0; i < rank; ++i)
    if (i != 1)
      others.push_back(i);
  Value var = op.getVariance();
  Value rstd = g.reshape(
      g.b.create<RsqrtOp>(
          g.loc, g.add(var, g.scalar(var, op.getEpsilon().convertToDouble()))),
      perChannel);
  Value xhat = g.mul(g.sub(x, g.reshape(op.getMean(), perChannel)), rstd);
  dx[0] = g.mul(d, g.mul(g.reshape(op.getScale(), perChannel), rstd));
  dx[1] = g.reduceSum(g.mul(d, xhat), others, false);
  dx[2] = g.reduceSum(d, others, false);
  return success();
}

bool differentiable(BatchNormOp, unsigned index) { return index < 3; }

LogicalResult vjp(SoftmaxOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  Value y = op.getResult(), d = dy[0];
  int64_t axis = op.getAxis();
  dx[0] = g.mul(y, g.sub(d, g.reduceSum(g.mul(d, y), {axis}, true)));
  return success();
}

LogicalResult vjp(AttentionOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  // The log-sum-exp is read only by the gradient below.
  if (dy[1])
    return op.emitError("the log-sum-exp result of 'graph.attention' has no "
                        "gradient rule");
  if (!dy[0])
    return success();
  auto grad = g.b.create<AttentionGradOp>(
      g.loc, op.getQ(), op.getK(), op.getV(), op.getOut(), op.getLse(), dy[0],
      op.getMask(), op.getScaleAttr(), op.getFillAttr(), op.getCausalAttr());
  dx[0] = grad.getDq();
  dx[1] = grad.getDk();
  dx[2] = grad.getDv();
  return success();
}

LogicalResult vjp(LogSoftmaxOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  Value y = op.getResult(), d = dy[0];
  int64_t axis = op.getAxis();
  dx[0] = g.sub(d, g.mul(g.exp(y), g.reduceSum(d, {axis}, true)));
  return success();
}

LogicalResult vjp(GlobalAvgPoolOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  Value x = op.getX();
  ArrayRef<int64_t> shape = Grad::type(x).getShape();
  dx[0] = g.mul(g.broadcastTo(dy[0], shape),
                1.0 / (double)product(shape.drop_front(2)));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and scans
//===----------------------------------------------------------------------===//

LogicalResult vjp(ReduceSumOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = g.unreduce(dy[0], op.getX(), op.getAxes());
  return success();
}

LogicalResult vjp(ReduceMeanOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  int64_t count = 1;
  for (int64_t a : op.getAxes())
    count *= Grad::type(op.getX()).getDimSize(a);
  dx[0] =
      g.mul(g.unreduce(dy[0], op.getX(), op.getAxes()), 1.0 / (double)count);
  return success();
}

/// reduce_max / reduce_min: the gradient is shared evenly by the elements
/// equal to the result (PyTorch's amax / amin).
template <typename OpT>
static LogicalResult extremeReduceVjp(OpT op, Grad &g, ArrayRef<Value> dy,
                                      Grads &dx) {
  Value x = op.getX();
  Value hit = g.mask(g.cmp(CompareDirection::eq, x,
                           g.unreduce(op.getResult(), x, op.getAxes())),
                     x);
  Value count = g.reduceSum(hit, op.getAxes(), true);
  dx[0] = g.div(g.mul(hit, g.unreduce(dy[0], x, op.getAxes())),
                g.broadcastTo(count, Grad::type(x).getShape()));
  return success();
}
LogicalResult vjp(ReduceMaxOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  return extremeReduceVjp(op, g, dy, dx);
}
LogicalResult vjp(ReduceMinOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  return extremeReduceVjp(op, g, dy, dx);
}

LogicalResult vjp(CumSumOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  // Each input element feeds the outputs after (before, reversed) it.
  dx[0] = g.b.create<CumSumOp>(g.loc, dy[0], op.getAxis(), op.getExclusive(),
                               !op.getReverse());
  return success();
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

/// Ops that only rearrange elements into another shape.
template <typename OpT>
static LogicalResult reshapeVjp(OpT op, Grad &g, ArrayRef<Value> dy,
                                Grads &dx) {
  dx[0] = g.reshape(dy[0], Grad::type(op->getOperand(0)).getShape());
  return success();
}
LogicalResult vjp(ReshapeOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  return reshapeVjp(op, g, dy, dx);
}
LogicalResult vjp(FlattenOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  return reshapeVjp(op, g, dy, dx);
}
LogicalResult vjp(SqueezeOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  return reshapeVjp(op, g, dy, dx);
}
LogicalResult vjp(UnsqueezeOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  return reshapeVjp(op, g, dy, dx);
}

LogicalResult vjp(TransposeOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  dx[0] = g.transpose(dy[0], inverse);
  return success();
}

LogicalResult vjp(BroadcastToOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = g.sumTo(dy[0], op.getX());
  return success();
}

LogicalResult vjp(ConcatOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  int64_t axis = op.getAxis();
  ArrayRef<int64_t> shape = Grad::type(dy[0]).getShape();
  int64_t offset = 0;
  for (auto [i, in] : llvm::enumerate(op.getInputs())) {
    int64_t size = Grad::type(in).getDimSize(axis);
    SmallVector<int64_t> starts(shape.size(), 0), ends(shape),
        steps(shape.size(), 1);
    starts[axis] = offset;
    ends[axis] = offset + size;
    dx[i] = g.b.create<SliceOp>(g.loc, dy[0], starts, ends, steps);
    offset += size;
  }
  return success();
}

/// The gradient of a slice put back where the slice came from, zeros
/// elsewhere: `d` holds `counts[i]` elements of dim i of a tensor shaped
/// `in`, taken from `starts[i]` (normalized, in range) by `steps[i]`. A pad
/// for the dims of step 1, a gather + mask along each dim of another step.
static Value unslice(Grad &g, Value d, ArrayRef<int64_t> in,
                     ArrayRef<int64_t> starts, ArrayRef<int64_t> steps,
                     ArrayRef<int64_t> counts) {
  int64_t rank = in.size();
  SmallVector<int64_t> pads(2 * rank, 0);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t n = in[i], step = steps[i], start = starts[i], count = counts[i];
    if (step == 1) {
      pads[i] = start;
      pads[rank + i] = n - start - count;
      continue;
    }
    // Input position p takes output j = (p - start) / step when that is an
    // integer in [0, count).
    SmallVector<int64_t> index(n, 0);
    SmallVector<bool> hit(n, false);
    for (int64_t j = 0; j < count; ++j) {
      int64_t p = start + j * step;
      index[p] = j;
      hit[p] = true;
    }
    auto idxType = RankedTensorType::get({n}, g.b.getI64Type());
    Value idx = g.b.create<ConstantOp>(
        g.loc, DenseElementsAttr::get(idxType, ArrayRef<int64_t>(index)));
    Value gathered = g.b.create<GatherOp>(g.loc, d, idx, i);
    SmallVector<int64_t> maskShape(rank, 1);
    maskShape[i] = n;
    auto maskType = RankedTensorType::get(maskShape, g.b.getI1Type());
    Value mask = g.b.create<ConstantOp>(
        g.loc, DenseElementsAttr::get(maskType, ArrayRef<bool>(hit)));
    d = g.select(mask, gathered, g.zerosLike(gathered));
  }
  if (llvm::any_of(pads, [](int64_t p) { return p != 0; }))
    d = g.b.create<PadOp>(g.loc, d, pads, PadMode::constant, APFloat(0.0));
  return d;
}

LogicalResult vjp(SliceOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  ArrayRef<int64_t> in = Grad::type(op.getX()).getShape();
  ArrayRef<int64_t> counts = Grad::type(op.getResult()).getShape();
  SmallVector<int64_t> starts;
  for (int64_t i = 0; i < (int64_t)in.size(); ++i) {
    int64_t n = in[i], step = op.getSteps()[i], start = op.getStarts()[i];
    // Normalize the start as the slice does: negative from the end, then
    // clamped to the dim ([0, n] forward, [-1, n-1] backward).
    if (start < 0)
      start = start < -n ? (step > 0 ? 0 : -1) : start + n;
    start = step > 0 ? std::min(start, n) : std::min(start, n - 1);
    if (counts[i] == 0)
      return op.emitError("an empty slice has no VJP rule");
    starts.push_back(start);
  }
  dx[0] = unslice(g, dy[0], in, starts, op.getSteps(), counts);
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling: one strided slice of the padded input per kernel
// offset (the window elements that offset reads), so that each gradient is
// a sum over kernel offsets of products and "unslices".
//===----------------------------------------------------------------------===//

namespace {
/// The windows of a convolution or pooling op over `x` [N, C, S...].
struct Windows {
  SmallVector<int64_t> in;  ///< x's shape
  SmallVector<int64_t> out; ///< the result's spatial sizes
  SmallVector<int64_t> kernel, strides, dilations, padBegin, padEnd;
  /// Extra end padding so that every window (ceil mode) lies inside.
  SmallVector<int64_t> extra;

  Windows(Value x, Value y, ArrayRef<int64_t> k, ArrayRef<int64_t> s,
          ArrayRef<int64_t> d, ArrayRef<int64_t> pads) {
    in.assign(Grad::type(x).getShape().begin(), Grad::type(x).getShape().end());
    auto ys = Grad::type(y).getShape();
    out.assign(ys.begin() + 2, ys.end());
    size_t n = out.size();
    kernel.assign(k.begin(), k.end());
    strides.assign(s.begin(), s.end());
    dilations.assign(d.begin(), d.end());
    if (strides.empty())
      strides.assign(n, 1);
    if (dilations.empty())
      dilations.assign(n, 1);
    padBegin.assign(pads.begin(), pads.begin() + n);
    padEnd.assign(pads.begin() + n, pads.end());
    for (size_t i = 0; i < n; ++i) {
      int64_t need =
          (out[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1;
      extra.push_back(
          std::max<int64_t>(0, need - (in[2 + i] + padBegin[i] + padEnd[i])));
    }
  }
  int64_t spatial() const { return out.size(); }
  /// The padded shape.
  SmallVector<int64_t> padded() const {
    SmallVector<int64_t> p(in);
    for (int64_t i = 0; i < spatial(); ++i)
      p[2 + i] += padBegin[i] + padEnd[i] + extra[i];
    return p;
  }
  SmallVector<int64_t> pads() const {
    SmallVector<int64_t> p(2 * (2 + spatial()), 0);
    for (int64_t i = 0; i < spatial(); ++i) {
      p[2 + i] = padBegin[i];
      p[2 + spatial() + 2 + i] = padEnd[i] + extra[i];
    }
    return p;
  }
  /// Every kernel offset, row-major (the scan order of a window).
  SmallVector<SmallVector<int64_t>> offsets() const {
    SmallVector<SmallVector<int64_t>> all{{}};
    for (int64_t k : kernel) {
      SmallVector<SmallVector<int64_t>> next;
      for (auto &prefix : all)
        for (int64_t j = 0; j < k; ++j) {
          next.push_back(prefix);
          next.back().push_back(j);
        }
      all = std::move(next);
    }
    return all;
  }
  /// starts / steps / counts of the slice of the padded input that kernel
  /// offset `o` reads, on `channels` channels.
  void slice(ArrayRef<int64_t> o, int64_t channels,
             SmallVectorImpl<int64_t> &starts, SmallVectorImpl<int64_t> &ends,
             SmallVectorImpl<int64_t> &steps,
             SmallVectorImpl<int64_t> &counts) const {
    starts.assign({0, 0});
    ends.assign({in[0], channels});
    steps.assign({1, 1});
    counts.assign({in[0], channels});
    for (int64_t i = 0; i < spatial(); ++i) {
      int64_t start = o[i] * dilations[i];
      starts.push_back(start);
      ends.push_back(start + (out[i] - 1) * strides[i] + 1);
      steps.push_back(strides[i]);
      counts.push_back(out[i]);
    }
  }
  /// The window elements of offset `o` of the padded `xp`.
  Value take(Grad &g, Value xp, ArrayRef<int64_t> o) const {
    SmallVector<int64_t> starts, ends, steps, counts;
    slice(o, Grad::type(xp).getDimSize(1), starts, ends, steps, counts);
    return g.b.create<SliceOp>(g.loc, xp, starts, ends, steps);
  }
  /// `d` (shaped like the result) added back at offset `o`'s positions of
  /// the padded input.
  Value put(Grad &g, Value d, ArrayRef<int64_t> o) const {
    SmallVector<int64_t> starts, ends, steps, counts;
    int64_t channels = Grad::type(d).getDimSize(1);
    slice(o, channels, starts, ends, steps, counts);
    SmallVector<int64_t> shape = padded();
    shape[1] = channels;
    return unslice(g, d, shape, starts, steps, counts);
  }
  /// The unpadded part of a padded-input gradient.
  Value crop(Grad &g, Value dp) const {
    SmallVector<int64_t> starts{0, 0}, ends{in[0], in[1]}, steps(in.size(), 1);
    for (int64_t i = 0; i < spatial(); ++i) {
      starts.push_back(padBegin[i]);
      ends.push_back(padBegin[i] + in[2 + i]);
    }
    return g.b.create<SliceOp>(g.loc, dp, starts, ends, steps);
  }
};
} // namespace

LogicalResult vjp(ConvOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  // y[n, o, i] = sum_{c, k} xp[n, c, i * s + k * d] w[o, c, k]: per kernel
  // offset k a product over channels, in each of the `groups` groups.
  Value x = op.getInput(), w = op.getFilter(), d = dy[0];
  Windows win(x, op.getResult(), Grad::type(w).getShape().drop_front(2),
              op.getStrides(), op.getDilations(), op.getPadding());
  int64_t n = win.in[0], c = win.in[1], o = Grad::type(w).getDimSize(0);
  int64_t groups = op.getGroups(), cg = c / groups, og = o / groups;
  int64_t positions = product(win.out);
  Value xp =
      g.b.create<PadOp>(g.loc, x, win.pads(), PadMode::constant, APFloat(0.0));
  // dy as [groups, N * P, O / groups].
  Value dyG = g.reshape(
      g.transpose(g.reshape(d, {n, groups, og, positions}), {1, 0, 3, 2}),
      {groups, n * positions, og});
  Value dxp;
  SmallVector<Value> dwParts;
  SmallVector<int64_t> rowShape{n, groups, cg, positions};
  SmallVector<int64_t> outShape{n, c};
  outShape.append(win.out);
  for (const auto &off : win.offsets()) {
    // w at this offset, as [groups, O / groups, C / groups].
    SmallVector<int64_t> ws{0, 0}, we{o, cg}, wst(2 + off.size(), 1);
    for (int64_t k : off) {
      ws.push_back(k);
      we.push_back(k + 1);
    }
    Value wk =
        g.reshape(g.b.create<SliceOp>(g.loc, w, ws, we, wst), {groups, og, cg});
    // d x at this offset: dy[n, o, i] w[o, c] summed over o.
    Value part = g.matmul(dyG, wk, false, false); // [groups, N*P, C/groups]
    part = g.reshape(
        g.transpose(g.reshape(part, {groups, n, positions, cg}), {1, 0, 3, 2}),
        outShape);
    Value put = win.put(g, part, off);
    dxp = dxp ? g.add(dxp, put) : put;
    // d w at this offset: dy[n, o, i] xs[n, c, i] summed over n and i.
    Value xs = g.reshape(
        g.transpose(g.reshape(win.take(g, xp, off), rowShape), {1, 0, 3, 2}),
        {groups, n * positions, cg});
    Value dwk = g.matmul(dyG, xs, true, false); // [groups, O/groups, C/groups]
    dwParts.push_back(g.reshape(dwk, {o, cg, 1}));
  }
  dx[0] = win.crop(g, dxp);
  Value dw = dwParts.size() == 1
                 ? dwParts[0]
                 : g.b.create<ConcatOp>(g.loc, dwParts, 2).getResult();
  dx[1] = g.reshape(dw, Grad::type(w).getShape());
  if (op.getBias()) {
    SmallVector<int64_t> axes{0};
    for (int64_t i = 0; i < win.spatial(); ++i)
      axes.push_back(2 + i);
    dx[2] = g.reduceSum(d, axes, false);
  }
  return success();
}

LogicalResult vjp(MaxPoolOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  // The gradient goes to the first maximum of each window in scan order
  // (PyTorch's argmax); padded positions (-inf) never win.
  Value x = op.getX(), y = op.getResult();
  Windows win(x, y, op.getKernel(), op.getStrides(), op.getDilations(),
              op.getPadding());
  Value xp = g.b.create<PadOp>(
      g.loc, x, win.pads(), PadMode::constant,
      APFloat::getInf(APFloat::IEEEdouble(), /*Negative=*/true));
  Value taken = g.zerosLike(y), dxp;
  for (const auto &off : win.offsets()) {
    Value hit =
        g.mul(g.mask(g.cmp(CompareDirection::eq, win.take(g, xp, off), y), y),
              g.sub(g.scalar(y, 1.0), taken));
    taken = g.add(taken, hit);
    Value put = win.put(g, g.mul(dy[0], hit), off);
    dxp = dxp ? g.add(dxp, put) : put;
  }
  dx[0] = win.crop(g, dxp);
  return success();
}

LogicalResult vjp(AvgPoolOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  // Each output spreads dy / count over its window; count counts the
  // window's real elements (and its padding with count_include_pad, but
  // never the extra of ceil mode).
  Value x = op.getX(), y = op.getResult();
  Windows win(x, y, op.getKernel(), op.getStrides(), {}, op.getPadding());
  SmallVector<int64_t> countShape{1, 1};
  countShape.append(win.out);
  SmallVector<double> counts(product(win.out), 0.0);
  for (int64_t flat = 0; flat < (int64_t)counts.size(); ++flat) {
    SmallVector<int64_t> pos(win.spatial());
    for (int64_t i = win.spatial() - 1, rest = flat; i >= 0; --i) {
      pos[i] = rest % win.out[i];
      rest /= win.out[i];
    }
    for (const auto &off : win.offsets()) {
      bool inside = true;
      for (int64_t i = 0; i < win.spatial(); ++i) {
        int64_t p = pos[i] * win.strides[i] + off[i]; // padded coordinate
        int64_t lo = op.getCountIncludePad() ? 0 : win.padBegin[i];
        int64_t hi = op.getCountIncludePad()
                         ? win.in[2 + i] + win.padBegin[i] + win.padEnd[i]
                         : win.padBegin[i] + win.in[2 + i];
        inside &= p >= lo && p < hi;
      }
      counts[flat] += inside;
    }
  }
  auto countType = RankedTensorType::get(countShape, Grad::elem(y));
  SmallVector<Attribute> values;
  for (double v : counts)
    values.push_back(FloatAttr::get(Grad::elem(y), std::max(v, 1.0)));
  Value count =
      g.b.create<ConstantOp>(g.loc, DenseElementsAttr::get(countType, values));
  Value share = g.div(dy[0], count), dxp;
  for (const auto &off : win.offsets()) {
    Value put = win.put(g, share, off);
    dxp = dxp ? g.add(dxp, put) : put;
  }
  dx[0] = win.crop(g, dxp);
  return success();
}

LogicalResult vjp(PadOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  if (op.getMode() != PadMode::constant)
    return op.emitError("pad in mode '")
           << stringifyPadMode(op.getMode())
           << "' has no VJP rule yet (constant mode has)";
  ArrayRef<int64_t> in = Grad::type(op.getX()).getShape();
  int64_t rank = in.size();
  SmallVector<int64_t> starts, ends, steps(rank, 1);
  for (int64_t i = 0; i < rank; ++i) {
    starts.push_back(op.getPads()[i]);
    ends.push_back(op.getPads()[i] + in[i]);
  }
  dx[0] = g.b.create<SliceOp>(g.loc, dy[0], starts, ends, steps);
  return success();
}

/// fill_like's value does not depend on its operand's (only its shape):
/// no gradient flows back, and its result is a constant to autodiff.
LogicalResult vjp(FillLikeOp, Grad &, ArrayRef<Value>, Grads &) {
  return success();
}

LogicalResult vjp(TriluOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = g.b.create<TriluOp>(g.loc, dy[0], op.getUpper(), op.getK());
  return success();
}

/// Indices with negative entries counted from the end of a dim of size n.
static Value normalizeIndices(Grad &g, Value idx, int64_t n) {
  Value neg = g.cmp(CompareDirection::lt, idx, 0.0);
  return g.select(neg, g.add(idx, g.scalar(idx, (double)n)), idx);
}

/// Adds `d` (shaped data.shape[:axis] + indices.shape + data.shape[axis+1:])
/// into zeros shaped like `data` at the gathered positions.
static Value scatterAddGather(Grad &g, Value data, Value indices, int64_t axis,
                              Value d) {
  ArrayRef<int64_t> ds = Grad::type(data).getShape();
  int64_t rank = ds.size();
  int64_t n = product(Grad::type(indices).getShape());
  SmallVector<int64_t> flat(ds.begin(), ds.begin() + axis);
  flat.push_back(n);
  flat.append(ds.begin() + axis + 1, ds.end());
  Value df = g.reshape(d, flat);
  SmallVector<int64_t> idxShape(rank, 1);
  idxShape[axis] = n;
  Value idx = g.broadcastTo(
      g.reshape(normalizeIndices(g, indices, ds[axis]), idxShape), flat);
  return g.b.create<ScatterElementsOp>(g.loc, g.zerosLike(data), idx, df, axis,
                                       ScatterReduction::add);
}

LogicalResult vjp(GatherOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] =
      scatterAddGather(g, op.getData(), op.getIndices(), op.getAxis(), dy[0]);
  return success();
}

LogicalResult vjp(EmbeddingOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  dx[0] = scatterAddGather(g, op.getTable(), op.getIds(), 0, dy[0]);
  return success();
}

LogicalResult vjp(GatherElementsOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  int64_t axis = op.getAxis();
  Value idx = normalizeIndices(g, op.getIndices(),
                               Grad::type(op.getData()).getDimSize(axis));
  dx[0] = g.b.create<ScatterElementsOp>(g.loc, g.zerosLike(op.getData()), idx,
                                        dy[0], axis, ScatterReduction::add);
  return success();
}

LogicalResult vjp(ScatterElementsOp op, Grad &g, ArrayRef<Value> dy,
                  Grads &dx) {
  int64_t axis = op.getAxis();
  Value idx = normalizeIndices(g, op.getIndices(),
                               Grad::type(op.getData()).getDimSize(axis));
  switch (op.getReduction()) {
  case ScatterReduction::none:
    // Overwritten elements of data get no gradient.
    dx[0] = g.b.create<ScatterElementsOp>(g.loc, dy[0], idx,
                                          g.zerosLike(op.getUpdates()), axis,
                                          ScatterReduction::none);
    break;
  case ScatterReduction::add:
    dx[0] = dy[0];
    break;
  default:
    return op.emitError("scatter_elements with reduction '")
           << stringifyScatterReduction(op.getReduction())
           << "' has no VJP rule yet (none and add have)";
  }
  dx[2] = g.b.create<GatherElementsOp>(g.loc, dy[0], idx, axis);
  return success();
}

LogicalResult vjp(TopKOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  if (!dy[0])
    return success();
  dx[0] = g.b.create<ScatterElementsOp>(g.loc, g.zerosLike(op.getX()),
                                        op.getIndices(), dy[0], op.getAxis(),
                                        ScatterReduction::add);
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// The per-row weight of a loss gradient: `dy` spread over the rows (with
/// `none` it already is per row), divided by the row count for `mean`.
static Value lossRowWeight(Grad &g, Reduction reduction, Value dy,
                           ArrayRef<int64_t> rows, Value count) {
  if (reduction == Reduction::none)
    return dy;
  Value w = g.broadcastTo(dy, rows);
  if (reduction == Reduction::mean)
    w = g.div(w, count);
  return w;
}

LogicalResult vjp(CrossEntropyOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  // d/dlogits = (softmax - onehot(label)) per row, 0 for ignored rows.
  Value logits = op.getLogits(), labels = op.getLabels();
  auto lt = Grad::type(logits);
  int64_t rank = lt.getRank(), classes = lt.getDimSize(rank - 1);
  ArrayRef<int64_t> rows = Grad::type(labels).getShape();
  Value sm = g.b.create<SoftmaxOp>(g.loc, logits, rank - 1);
  Value iota = g.b.create<IotaOp>(g.loc, ArrayRef<int64_t>{classes}, 0,
                                  Grad::elem(labels));
  SmallVector<int64_t> col(rows);
  col.push_back(1);
  Value onehot =
      g.mask(g.cmp(CompareDirection::eq, g.reshape(labels, col), iota), sm);
  Value valid;
  Value count = g.scalar(sm, (double)product(rows));
  if (IntegerAttr ignore = op.getIgnoreIndexAttr()) {
    valid = g.mask(g.cmp(CompareDirection::ne, labels, (double)ignore.getInt()),
                   sm);
    SmallVector<int64_t> all = trailingAxes(0, rows.size());
    count = all.empty() ? valid : g.reduceSum(valid, all, false);
  }
  Value w = lossRowWeight(g, op.getReduction(), dy[0], rows, count);
  if (valid)
    w = g.mul(w, valid);
  dx[0] = g.mul(g.sub(sm, onehot), g.reshape(w, col));
  return success();
}

LogicalResult vjp(MseLossOp op, Grad &g, ArrayRef<Value> dy, Grads &dx) {
  Value p = op.getPred(), t = op.getTarget();
  ArrayRef<int64_t> shape = Grad::type(p).getShape();
  Value w = lossRowWeight(g, op.getReduction(), dy[0], shape,
                          g.scalar(p, (double)product(shape)));
  Value d = g.mul(g.mul(g.sub(p, t), w), 2.0);
  dx[0] = d;
  dx[1] = g.neg(d);
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

/// By default a float operand is differentiable.
bool differentiable(Operation *op, unsigned index) {
  return isa<FloatType>(getElementTypeOrSelf(op->getOperand(index).getType()));
}

template <typename OpT>
struct VjpModel : public VjpOpInterface::ExternalModel<VjpModel<OpT>, OpT> {
  LogicalResult buildVjp(Operation *op, OpBuilder &b,
                         ArrayRef<Value> resultGrads,
                         SmallVectorImpl<Value> &operandGrads) const {
    operandGrads.assign(op->getNumOperands(), Value());
    if (llvm::all_of(resultGrads, [](Value v) { return !v; }))
      return success();
    Grad g(b, op->getLoc());
    return vjp(cast<OpT>(op), g, resultGrads, operandGrads);
  }
  bool isDifferentiableOperand(Operation *op, unsigned index) const {
    if constexpr (std::is_same_v<OpT, FillLikeOp>)
      return false;
    // An observed (not learned) scale and zero point are not trained.
    if constexpr (std::is_same_v<OpT, FakeQuantizeOp>)
      if (index > 0 && !cast<OpT>(op).getLearned())
        return false;
    if constexpr (std::is_same_v<OpT, BatchNormOp>)
      if (!::differentiable(cast<OpT>(op), index))
        return false;
    return ::differentiable(op, index);
  }
};

template <typename... Ops> void attach(MLIRContext &ctx) {
  (Ops::template attachInterface<VjpModel<Ops>>(ctx), ...);
}

} // namespace

/// Not registered, so autodiff refuses them by name should a gradient ever
/// reach one: ops whose results are integer indices (arg_max, arg_min,
/// nonzero), which no float gradient flows through. nonzero's result size
/// is also the data's, which autodiff's static-shape check refuses first.
void loom::graph::registerVjpRules(MLIRContext &ctx) {
  attach<NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, CosOp, SinOp,
         AtanOp, SigmoidOp, ReluOp, ErfOp, FloorOp, CeilOp, RoundOp, GeluOp,
         ClampOp, DropoutOp, CastOp, GradAllReduceOp, FakeQuantizeOp,
         RandomDropoutOp>(ctx);
  attach<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, RemOp, ModOp,
         WhereOp>(ctx);
  attach<MatmulOp, LayerNormOp, BatchNormOp, SoftmaxOp, LogSoftmaxOp,
         AttentionOp, GlobalAvgPoolOp, ConvOp, MaxPoolOp, AvgPoolOp>(ctx);
  attach<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, CumSumOp>(ctx);
  attach<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, TransposeOp,
         BroadcastToOp, ConcatOp, SliceOp, PadOp, TriluOp, GatherOp,
         EmbeddingOp, GatherElementsOp, ScatterElementsOp, TopKOp, FillLikeOp>(
      ctx);
  attach<CrossEntropyOp, MseLossOp>(ctx);
}

void loom::graph::registerMeshVjpRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, mesh::MeshDialect *) {
    attach<mesh::AllReduceOp>(*ctx);
    attach<mesh::AllGatherOp, mesh::ReduceScatterOp, mesh::AllSliceOp>(*ctx);
  });
}
