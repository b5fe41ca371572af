//===- ConvLayout.cpp - layouts and fusions around CPU convolutions -------===//
//
// After CpuLibraryCallsPass has turned convolutions and max poolings into
// calls of the runtime's oneDNN kernels, on buffers:
//
// * foldResidualAdds: `relu(conv(x) + r)`, a residual block's end, is one
//   convolution that accumulates into a buffer holding r (oneDNN's sum
//   post-op, the ReLU after it), instead of a convolution, then a loop
//   reading both tensors and writing a third.
// * chooseNhwcLayouts: the buffers between the kernels are kept in NHWC,
//   the layout oneDNN's brgconv kernels run on, so no kernel reorders its
//   input or output; the layout travels through elementwise loops (which
//   do not care about the order of the elements as long as all their
//   operands share it) and stops where another kind of op reads or writes
//   the buffer, which then sees it through a strided [N, C, H, W] view.
//
// Both work on the buffer IR, where a layout is a property of an
// allocation only these ops see: nothing is transposed, the first and
// last kernel of a chain read and write the caller's NCHW tensors.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cpu/ConvLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace loom::codegen {

int64_t callFlags(func::CallOp call, unsigned flags) {
  return call.getOperand(flags).getDefiningOp<arith::ConstantIntOp>().value();
}

void setCallFlags(func::CallOp call, unsigned flags, int64_t value) {
  OpBuilder b(call);
  Operation *old = call.getOperand(flags).getDefiningOp();
  call->setOperand(flags,
                   b.create<arith::ConstantIntOp>(call.getLoc(), value, 64));
  if (old->use_empty())
    old->erase();
}

namespace {

/// The buffer a call's operand `i` casts (an unranked cast used only
/// there), or null.
Value castSource(func::CallOp call, unsigned i) {
  auto cast = call.getOperand(i).getDefiningOp<memref::CastOp>();
  return cast && cast->hasOneUse() ? cast.getSource() : Value();
}

/// Whether `sv` is the first rows of its source along dim 0, all of the
/// other dims: offsets 0, unit strides, no rank change. Its elements are a
/// prefix of the source's in any order of dims 1-3 too.
bool isBatchPrefix(memref::SubViewOp sv) {
  auto source = cast<MemRefType>(sv.getSource().getType());
  if (sv.getType().getRank() != source.getRank() || source.getRank() < 1)
    return false;
  for (int64_t o : sv.getStaticOffsets())
    if (o != 0)
      return false;
  for (int64_t s : sv.getStaticStrides())
    if (s != 1)
      return false;
  ArrayRef<int64_t> sizes = sv.getStaticSizes();
  for (int64_t d = 1; d < source.getRank(); ++d)
    if (source.isDynamicDim(d) || sizes[d] != source.getDimSize(d))
      return false;
  return true;
}

/// The buffer `v` is, or is a batch prefix of; null for other views.
Value prefixRoot(Value v) {
  if (auto sv = v.getDefiningOp<memref::SubViewOp>())
    return isBatchPrefix(sv) ? sv.getSource() : Value();
  return v;
}

/// The buffer `v` views (through any view ops).
Value viewRoot(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  while (auto cast = v.getDefiningOp<memref::CastOp>())
    v = cast.getSource();
  return v;
}

/// Whether `op`'s loops run over the elements of same-shaped 4-D buffers
/// in any order: all parallel, identity maps, no use of the indices
/// (scalar inputs allowed: a fill).
bool isElementwise4d(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() != 4 ||
      op.getNumParallelLoops() != 4)
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type) {
      if (isa<ShapedType>(operand.get().getType()))
        return false;
      continue; // a scalar
    }
    if (type.getRank() != 4 ||
        !op.getMatchingIndexingMap(&operand).isIdentity())
      return false;
  }
  bool usesIndex = false;
  op->walk([&](linalg::IndexOp index) { usesIndex |= !index->use_empty(); });
  return !usesIndex;
}

/// A buffer the layout may be chosen for: a 4-D allocation (of any
/// integer or float elements) of dense identity layout whose dims 1-3 are
/// static.
bool isCandidate(Value v) {
  auto alloc = v ? v.getDefiningOp<memref::AllocOp>() : nullptr;
  if (!alloc)
    return false;
  MemRefType type = alloc.getType();
  return type.getRank() == 4 && type.getElementType().isIntOrFloat() &&
         type.getLayout().isIdentity() && !type.isDynamicDim(1) &&
         !type.isDynamicDim(2) && !type.isDynamicDim(3);
}

bool isZeroConstant(Value v) { return matchPattern(v, m_AnyZeroFloat()); }

/// A residual add: `out = a + b` or `out = max(a + b, 0)` over 4-D
/// buffers with identity maps. Sets `relu`.
bool isResidualAdd(linalg::GenericOp g, bool &relu) {
  if (g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 ||
      !isElementwise4d(g))
    return false;
  Block &body = g.getRegion().front();
  auto ops = body.without_terminator();
  auto it = ops.begin();
  if (it == ops.end())
    return false;
  auto add = dyn_cast<arith::AddFOp>(*it);
  if (!add || !add.getType().isF32() ||
      !((add.getLhs() == body.getArgument(0) &&
         add.getRhs() == body.getArgument(1)) ||
        (add.getLhs() == body.getArgument(1) &&
         add.getRhs() == body.getArgument(0))))
    return false;
  Value result = add;
  relu = false;
  if (++it != ops.end()) {
    auto max = dyn_cast<arith::MaximumFOp>(*it);
    if (!max || !((max.getLhs() == result && isZeroConstant(max.getRhs())) ||
                  (max.getRhs() == result && isZeroConstant(max.getLhs()))))
      return false;
    result = max;
    relu = true;
    if (++it != ops.end())
      return false;
  }
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  return yield.getValues().size() == 1 && yield.getValues()[0] == result;
}

/// Whether `op` only reports a failed run-time check (an scf.if around a
/// loom_rt_fail call): it touches no buffer.
bool onlyReportsFailure(Operation *op) {
  auto ifOp = dyn_cast<scf::IfOp>(op);
  if (!ifOp || ifOp->getNumResults() != 0)
    return false;
  bool ok = true;
  ifOp->walk([&](Operation *inner) {
    if (inner == op || isa<scf::YieldOp>(inner) || isPure(inner))
      return;
    auto call = dyn_cast<func::CallOp>(inner);
    ok &= call && call.getCallee() == "loom_rt_fail";
  });
  return ok;
}

/// Whether the ops strictly between `from` and `to` (one block) leave the
/// buffers `a` and `b` alone: they neither write them nor free them.
bool leavesAlone(Operation *from, Operation *to, Value a, Value b) {
  auto touches = [&](Value v) {
    Value root = viewRoot(v);
    return root == a || root == b;
  };
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode()) {
    if (isPure(op) || onlyReportsFailure(op) ||
        isa<memref::AllocOp, memref::AllocaOp, memref::DimOp, memref::SubViewOp,
            memref::CastOp>(op))
      continue;
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      if (llvm::any_of(linalgOp.getDpsInits(), touches))
        return false;
      continue;
    }
    // A call (another kernel) may write what it is given.
    if (isa<func::CallOp>(op) && !llvm::any_of(op->getOperands(), touches))
      continue;
    return false;
  }
  return true;
}

/// Whether `v` is defined before `op` in its block (or is an argument of
/// the block or an enclosing one).
bool availableBefore(Value v, Operation *op) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner()->getParentOp()->isAncestor(op);
  Operation *def = v.getDefiningOp();
  return def->getBlock() == op->getBlock() && def->isBeforeInBlock(op);
}

/// Whether buffer `r` is read by nothing but `add` (directly or through
/// its operand `operand`, a view) after `call`: its other users are
/// size queries or come before `call`.
bool deadAfter(Value r, func::CallOp call, linalg::GenericOp add,
               Value operand) {
  for (Operation *user : r.getUsers()) {
    if (user == add.getOperation() || user == operand.getDefiningOp() ||
        isa<memref::DimOp>(user))
      continue;
    Operation *at = call->getBlock()->findAncestorOpInBlock(*user);
    if (!at || !at->isBeforeInBlock(call))
      return false;
    // A view made before is read where its users are.
    if (isa<ViewLikeOpInterface, memref::CastOp>(user))
      for (Value view : user->getResults())
        if (!deadAfter(view, call, add, operand))
          return false;
  }
  return true;
}

/// Folds the residual add that reads the output of `conv` (see the
/// header); false when it is not one.
bool foldResidualAdd(const LayoutCall &conv, int64_t overwrite, int64_t relu) {
  func::CallOp call = conv.call;
  int64_t flags = callFlags(call, conv.flags);
  if (!(flags & overwrite) || (flags & relu))
    return false;
  Value x = castSource(call, conv.out);
  if (!isCandidate(x))
    return false;
  // x's one reader: the add, directly or through a batch prefix.
  linalg::GenericOp add;
  memref::SubViewOp xPrefix;
  for (OpOperand &use : x.getUses()) {
    Operation *user = use.getOwner();
    if (isa<memref::DimOp>(user) ||
        user == call.getOperand(conv.out).getDefiningOp())
      continue;
    if (add)
      return false;
    if (auto sv = dyn_cast<memref::SubViewOp>(user);
        sv && isBatchPrefix(sv) && sv->hasOneUse()) {
      xPrefix = sv;
      user = *sv->user_begin();
    }
    add = dyn_cast<linalg::GenericOp>(user);
    if (!add)
      return false;
  }
  bool addRelu = false;
  if (!add || !isResidualAdd(add, addRelu) ||
      add->getBlock() != call->getBlock() || !call->isBeforeInBlock(add))
    return false;
  Value xOperand = xPrefix ? xPrefix.getResult() : x;
  Value a = add.getDpsInputs()[0], b = add.getDpsInputs()[1];
  if ((a == xOperand) == (b == xOperand))
    return false;
  Value r = a == xOperand ? b : a;
  Value residual = prefixRoot(r);
  Value y = add.getDpsInits()[0];
  if (!residual || residual == x || residual.getType() != x.getType() ||
      !availableBefore(residual, call) || y.getType() != x.getType() ||
      !y.getDefiningOp<memref::AllocOp>() ||
      !leavesAlone(call, add, residual, x))
    return false;
  // y is written first by the add.
  for (Operation *user : y.getUsers()) {
    Operation *at = add->getBlock()->findAncestorOpInBlock(*user);
    if (user != add.getOperation() && at &&
        (at == add.getOperation() || at->isBeforeInBlock(add)) &&
        !isa<memref::DimOp>(user))
      return false;
  }

  // When nothing reads r after the add (a residual block's input, read by
  // the block's first convolution and the add), the convolution adds
  // itself to r where it lies, and x goes.
  bool readByCall = llvm::any_of(
      call.getOperands(), [&](Value v) { return viewRoot(v) == residual; });
  if (isCandidate(residual) && !readByCall &&
      deadAfter(residual, call, add, r)) {
    setCallFlags(call, conv.flags, (flags & ~overwrite) | (addRelu ? relu : 0));
    Operation *yAlloc = y.getDefiningOp(), *xAlloc = x.getDefiningOp();
    add->erase();
    if (xPrefix)
      xPrefix->erase();
    if (auto sv = r.getDefiningOp<memref::SubViewOp>(); sv && sv->use_empty())
      sv->erase();
    y.replaceAllUsesWith(residual);
    x.replaceAllUsesWith(residual);
    yAlloc->erase();
    xAlloc->erase();
    return true;
  }
  // Else r into x before the convolution, which then adds itself to it.
  OpBuilder builder(call);
  Location loc = add.getLoc();
  auto type = cast<MemRefType>(x.getType());
  Value from = residual, to = x;
  if (type.isDynamicDim(0)) {
    // The sizes agree unless a run-time check failed; then the smaller.
    Value rows = builder.create<arith::MinUIOp>(
        loc, builder.create<memref::DimOp>(loc, residual, 0),
        builder.create<memref::DimOp>(loc, x, 0));
    SmallVector<OpFoldResult> offsets(4, builder.getIndexAttr(0)),
        strides(4, builder.getIndexAttr(1)), sizes = {rows};
    for (int64_t d = 1; d < 4; ++d)
      sizes.push_back(builder.getIndexAttr(type.getDimSize(d)));
    from = builder.create<memref::SubViewOp>(loc, residual, offsets, sizes,
                                             strides);
    to = builder.create<memref::SubViewOp>(loc, x, offsets, sizes, strides);
  }
  builder.create<linalg::CopyOp>(loc, from, to);
  setCallFlags(call, conv.flags, (flags & ~overwrite) | (addRelu ? relu : 0));
  Operation *yAlloc = y.getDefiningOp();
  add->erase();
  y.replaceAllUsesWith(x);
  yAlloc->erase();
  if (xPrefix && xPrefix->use_empty())
    xPrefix->erase();
  if (auto sv = r.getDefiningOp<memref::SubViewOp>(); sv && sv->use_empty())
    sv->erase();
  return true;
}

} // namespace

void foldResidualAdds(ArrayRef<LayoutCall> convs, int64_t overwrite,
                      int64_t relu) {
  for (const LayoutCall &conv : convs)
    foldResidualAdd(conv, overwrite, relu);
}

void chooseNhwcLayouts(ArrayRef<LayoutCall> calls) {
  // The buffers reached, in classes linked by elementwise ops; a class is
  // NHWC when a call touches it and no member has a use that cannot take
  // the layout.
  DenseMap<Value, unsigned> index;
  SmallVector<Value> buffers;
  SmallVector<unsigned> parent;
  SmallVector<char> bad, touched;
  SmallVector<unsigned> worklist;
  auto find = [&](unsigned i) {
    while (parent[i] != i)
      i = parent[i] = parent[parent[i]];
    return i;
  };
  auto add = [&](Value v) -> unsigned {
    auto [it, added] = index.try_emplace(v, buffers.size());
    if (added) {
      buffers.push_back(v);
      parent.push_back(it->second);
      bad.push_back(!isCandidate(v));
      touched.push_back(false);
      worklist.push_back(it->second);
    }
    return it->second;
  };
  auto unite = [&](unsigned a, unsigned b) {
    a = find(a), b = find(b);
    if (a != b) {
      parent[b] = a;
      bad[a] |= bad[b];
      touched[a] |= touched[b];
    }
  };
  // Where a cast's one user is a call: which LayoutCall and position.
  DenseMap<Operation *, const LayoutCall *> callOf;
  for (const LayoutCall &c : calls) {
    callOf[c.call] = &c;
    for (unsigned i : {c.in, c.out})
      if (Value v = castSource(c.call, i); isCandidate(v))
        touched[add(v)] = true;
  }
  // An elementwise op links the buffers of all its operands.
  auto link = [&](unsigned from, linalg::LinalgOp op) {
    for (Value operand : op->getOperands()) {
      if (!isa<MemRefType>(operand.getType()))
        continue;
      Value root = prefixRoot(operand);
      if (!root) {
        bad[find(from)] = true;
        continue;
      }
      unite(from, add(root));
    }
  };
  // A use of a buffer (or of a view of it) that reads or writes it
  // element by element through its indexing: a strided view serves it.
  auto viewable = [](Operation *user) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
    return (linalgOp && linalgOp.hasPureBufferSemantics()) ||
           isa<memref::CopyOp>(user);
  };
  while (!worklist.empty()) {
    unsigned i = worklist.pop_back_val();
    Value v = buffers[i];
    if (bad[i])
      continue; // its class is NCHW anyway
    for (Operation *user : v.getUsers()) {
      if (isa<memref::DimOp, memref::DeallocOp>(user))
        continue;
      if (auto cast = dyn_cast<memref::CastOp>(user)) {
        auto call = cast->hasOneUse()
                        ? dyn_cast<func::CallOp>(*cast->user_begin())
                        : func::CallOp();
        const LayoutCall *c = call ? callOf.lookup(call) : nullptr;
        if (!c || llvm::count(call.getOperands(), cast.getResult()) != 1 ||
            (call.getOperand(c->in) != cast.getResult() &&
             call.getOperand(c->out) != cast.getResult()))
          bad[find(i)] = true;
        continue;
      }
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
          linalgOp && isElementwise4d(linalgOp)) {
        link(i, linalgOp);
        continue;
      }
      if (viewable(user))
        continue;
      if (auto sv = dyn_cast<memref::SubViewOp>(user)) {
        for (Operation *svUser : sv->getUsers()) {
          auto linalgOp = dyn_cast<linalg::LinalgOp>(svUser);
          if (linalgOp && isBatchPrefix(sv) && isElementwise4d(linalgOp))
            link(i, linalgOp);
          else if (!viewable(svUser))
            bad[find(i)] = true;
        }
        continue;
      }
      bad[find(i)] = true;
    }
  }

  // The NHWC buffers: calls get their flags, other users a strided view.
  for (unsigned i = 0; i < buffers.size(); ++i) {
    unsigned root = find(i);
    if (bad[root] || !touched[root])
      continue;
    Value v = buffers[i];
    auto alloc = v.getDefiningOp<memref::AllocOp>();
    MemRefType type = alloc.getType();
    Value view;
    auto viewOf = [&]() {
      if (view)
        return view;
      OpBuilder b(alloc->getBlock(), std::next(alloc->getIterator()));
      Location loc = alloc.getLoc();
      int64_t C = type.getDimSize(1), H = type.getDimSize(2),
              W = type.getDimSize(3);
      auto viewType = MemRefType::get(
          type.getShape(), type.getElementType(),
          StridedLayoutAttr::get(b.getContext(), 0, {C * H * W, 1, W * C, C}));
      SmallVector<OpFoldResult> sizes;
      sizes.push_back(type.isDynamicDim(0)
                          ? OpFoldResult(alloc.getDynamicSizes()[0])
                          : OpFoldResult(b.getIndexAttr(type.getDimSize(0))));
      for (int64_t d = 1; d < 4; ++d)
        sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
      SmallVector<OpFoldResult> strides = {
          b.getIndexAttr(C * H * W), b.getIndexAttr(1), b.getIndexAttr(W * C),
          b.getIndexAttr(C)};
      view = b.create<memref::ReinterpretCastOp>(
          loc, viewType, v, b.getIndexAttr(0), sizes, strides);
      return view;
    };
    for (OpOperand &use : llvm::make_early_inc_range(v.getUses())) {
      Operation *user = use.getOwner();
      if (isa<memref::DimOp, memref::DeallocOp>(user) ||
          (view && user == view.getDefiningOp()))
        continue;
      if (auto castOp = dyn_cast<memref::CastOp>(user)) {
        auto call = cast<func::CallOp>(*castOp->user_begin());
        const LayoutCall *c = callOf.lookup(call);
        int64_t flag = call.getOperand(c->in) == castOp.getResult()
                           ? c->inNhwc
                           : c->outNhwc;
        setCallFlags(call, c->flags, callFlags(call, c->flags) | flag);
        continue;
      }
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
          linalgOp && isElementwise4d(linalgOp))
        continue;
      if (auto sv = dyn_cast<memref::SubViewOp>(user)) {
        memref::SubViewOp strided;
        for (OpOperand &svUse : llvm::make_early_inc_range(sv->getUses())) {
          auto linalgOp = dyn_cast<linalg::LinalgOp>(svUse.getOwner());
          if (linalgOp && isBatchPrefix(sv) && isElementwise4d(linalgOp))
            continue;
          if (!strided) {
            OpBuilder b(sv->getBlock(), std::next(sv->getIterator()));
            strided = b.create<memref::SubViewOp>(
                sv.getLoc(), viewOf(), sv.getMixedOffsets(), sv.getMixedSizes(),
                sv.getMixedStrides());
          }
          svUse.set(strided);
        }
        if (sv->use_empty())
          sv->erase();
        continue;
      }
      use.set(viewOf());
    }
  }
}

} // namespace loom::codegen
