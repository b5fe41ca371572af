//===- GraphFolds.cpp - trivial folds of graph ops ------------------------===//
//
// Only folds that never change a result type: identities (x + 0, x * 1,
// reshape to the same type, ...), composition of reshapes and transposes,
// and arithmetic on two constants of the same type. Note that `x + 0.0`
// folds to `x` for floats, as XLA does, although it maps -0.0 to -0.0
// instead of +0.0; likewise `x - (-0.0)` folds to `x`.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

using namespace mlir;
using namespace loom::graph;

namespace {
enum class ArithKind { Add, Sub, Mul, Div };
} // namespace

/// Folds `lhs op rhs` when both are constants of the result's own type.
static Attribute foldConstantArith(Attribute lhs, Attribute rhs, Type result,
                                   ArithKind kind) {
  auto l = dyn_cast_or_null<DenseElementsAttr>(lhs);
  auto r = dyn_cast_or_null<DenseElementsAttr>(rhs);
  if (!l || !r || l.getType() != result || r.getType() != result)
    return {};
  auto shaped = cast<ShapedType>(result);
  Type elem = shaped.getElementType();
  if (isa<FloatType>(elem)) {
    SmallVector<APFloat> out;
    for (auto [a, b] :
         llvm::zip(l.getValues<APFloat>(), r.getValues<APFloat>())) {
      APFloat v = a;
      switch (kind) {
      case ArithKind::Add:
        v.add(b, APFloat::rmNearestTiesToEven);
        break;
      case ArithKind::Sub:
        v.subtract(b, APFloat::rmNearestTiesToEven);
        break;
      case ArithKind::Mul:
        v.multiply(b, APFloat::rmNearestTiesToEven);
        break;
      case ArithKind::Div:
        v.divide(b, APFloat::rmNearestTiesToEven);
        break;
      }
      out.push_back(v);
    }
    return DenseElementsAttr::get(shaped, out);
  }
  // Integers: i1 is a boolean, and division may trap, so neither folds.
  if (elem.isInteger(1) || kind == ArithKind::Div)
    return {};
  SmallVector<APInt> out;
  for (auto [a, b] : llvm::zip(l.getValues<APInt>(), r.getValues<APInt>())) {
    switch (kind) {
    case ArithKind::Add:
      out.push_back(a + b);
      break;
    case ArithKind::Sub:
      out.push_back(a - b);
      break;
    case ArithKind::Mul:
      out.push_back(a * b);
      break;
    case ArithKind::Div:
      llvm_unreachable("integer division does not fold");
    }
  }
  return DenseElementsAttr::get(shaped, out);
}

static bool isSplatZero(Value v) {
  return matchPattern(v, m_AnyZeroFloat()) || matchPattern(v, m_Zero());
}

static bool isSplatOne(Value v) {
  return matchPattern(v, m_OneFloat()) || matchPattern(v, m_One());
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

/// Iotas up to this many elements fold to constants.
static constexpr int64_t kIotaFoldLimit = 4096;

OpFoldResult IotaOp::fold(FoldAdaptor) {
  auto type = cast<RankedTensorType>(getType());
  if (type.getNumElements() > kIotaFoldLimit)
    return {};
  return computeValue();
}

DenseElementsAttr IotaOp::computeValue() {
  auto type = cast<RankedTensorType>(getType());
  Type elem = type.getElementType();
  int64_t inner = 1;
  for (int64_t d = getAxis() + 1; d < type.getRank(); ++d)
    inner *= type.getDimSize(d);
  int64_t n = type.getDimSize(getAxis());
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < type.getNumElements(); ++i) {
    int64_t v = (i / inner) % n;
    values.push_back(isa<FloatType>(elem)
                         ? (Attribute)FloatAttr::get(elem, (double)v)
                         : IntegerAttr::get(elem, v));
  }
  return DenseElementsAttr::get(type, values);
}

OpFoldResult FillLikeOp::fold(FoldAdaptor) {
  auto type = cast<RankedTensorType>(getType());
  if (!type.hasStaticShape())
    return {};
  return SplatElementsAttr::get(type, cast<TypedAttr>(getValue()));
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getX().getDefiningOp<NegOp>())
    return inner.getX();
  return {};
}

OpFoldResult DropoutOp::fold(FoldAdaptor) {
  if (!getTraining() || getRatio().isZero())
    return getX();
  return {};
}

// Autodiff has read it by the time anything folds (its description).
OpFoldResult GradAllReduceOp::fold(FoldAdaptor) { return getX(); }

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getX().getType() == getType())
    return getX();
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (getRhs().getType() == getType() && isSplatZero(getLhs()))
    return getRhs();
  if (getLhs().getType() == getType() && isSplatZero(getRhs()))
    return getLhs();
  return foldConstantArith(adaptor.getLhs(), adaptor.getRhs(), getType(),
                           ArithKind::Add);
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (getLhs().getType() == getType() && isSplatZero(getRhs()))
    return getLhs();
  return foldConstantArith(adaptor.getLhs(), adaptor.getRhs(), getType(),
                           ArithKind::Sub);
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (getRhs().getType() == getType() && isSplatOne(getLhs()))
    return getRhs();
  if (getLhs().getType() == getType() && isSplatOne(getRhs()))
    return getLhs();
  return foldConstantArith(adaptor.getLhs(), adaptor.getRhs(), getType(),
                           ArithKind::Mul);
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (getLhs().getType() == getType() && isSplatOne(getRhs()))
    return getLhs();
  return foldConstantArith(adaptor.getLhs(), adaptor.getRhs(), getType(),
                           ArithKind::Div);
}

/// Re-infers a reshape or transpose with a new operand and attribute, and
/// accepts the rewrite only when the result type is unchanged.
template <typename OpTy>
static bool sameResultWith(OpTy op, Value x, StringRef attrName,
                           ArrayRef<int64_t> values) {
  MLIRContext *ctx = op.getContext();
  NamedAttribute attr(StringAttr::get(ctx, attrName),
                      DenseI64ArrayAttr::get(ctx, values));
  SmallVector<Type> types;
  if (failed(OpTy::inferReturnTypes(ctx, std::nullopt, ValueRange{x},
                                    DictionaryAttr::get(ctx, {attr}),
                                    OpaqueProperties(nullptr), {}, types)))
    return false;
  return types.front() == op.getType();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  auto type = getType();
  if (getX().getType() == type) {
    // Same type: an identity when static, or when every entry copies (0)
    // or restates a static input dim.
    if (type.hasStaticShape())
      return getX();
    bool identity = true;
    for (auto [i, v] : llvm::enumerate(getShape()))
      identity &= v == 0 || v == type.getDimSize(i);
    if (identity)
      return getX();
  }
  auto inner = getX().getDefiningOp<ReshapeOp>();
  if (!inner)
    return {};
  // A 0 in the outer shape refers to the inner result's dim: make it
  // static, or keep it when the inner shape also copied that dim.
  SmallVector<int64_t> shape(getShape());
  for (auto [i, v] : llvm::enumerate(shape)) {
    if (v != 0)
      continue;
    int64_t d = inner.getType().getDimSize(i);
    if (!ShapedType::isDynamic(d))
      v = d;
    else if (!(i < inner.getShape().size() && inner.getShape()[i] == 0))
      return {};
  }
  if (!sameResultWith(*this, inner.getX(), getShapeAttrName(), shape))
    return {};
  setOperand(inner.getX());
  setShape(shape);
  return getResult();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPerm();
  auto isIdentity = [](ArrayRef<int64_t> p) {
    for (auto [i, v] : llvm::enumerate(p))
      if (v != (int64_t)i)
        return false;
    return true;
  };
  if (isIdentity(perm))
    return getX();
  auto inner = getX().getDefiningOp<TransposeOp>();
  if (!inner)
    return {};
  SmallVector<int64_t> composed;
  for (int64_t p : perm)
    composed.push_back(inner.getPerm()[p]);
  if (isIdentity(composed))
    return inner.getX();
  setOperand(inner.getX());
  setPerm(composed);
  return getResult();
}

/// Whether `perm` swaps the last two dims and keeps the others in place.
static bool swapsLastTwo(ArrayRef<int64_t> perm) {
  int64_t rank = perm.size();
  if (rank < 2 || perm[rank - 1] != rank - 2 || perm[rank - 2] != rank - 1)
    return false;
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (perm[i] != i)
      return false;
  return true;
}

LogicalResult TransposeOp::canonicalize(TransposeOp op,
                                        PatternRewriter &rewriter) {
  // (A B)^T = B^T A^T: the product computed in the transposed layout,
  // when the transpose is its only user (else both layouts would exist).
  auto mm = op.getX().getDefiningOp<MatmulOp>();
  if (!mm || !mm->hasOneUse() || !swapsLastTwo(op.getPerm()))
    return failure();
  auto lhs = cast<ShapedType>(mm.getLhs().getType());
  auto rhs = cast<ShapedType>(mm.getRhs().getType());
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return failure();
  std::string why;
  FailureOr<MatmulShape> shape =
      inferMatmulShape(rhs.getShape(), lhs.getShape(), !mm.getTransposeRhs(),
                       !mm.getTransposeLhs(), why);
  if (failed(shape) || ArrayRef<int64_t>(shape->result) !=
                           cast<ShapedType>(op.getType()).getShape())
    return failure();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(mm);
  auto swapped =
      rewriter.create<MatmulOp>(mm.getLoc(), mm.getRhs(), mm.getLhs(),
                                !mm.getTransposeRhs(), !mm.getTransposeLhs());
  rewriter.replaceOp(op, swapped.getResult());
  rewriter.eraseOp(mm);
  return success();
}

OpFoldResult MatmulOp::fold(FoldAdaptor) {
  // A transpose of an operand's last two dims becomes its flag: the
  // product reads the operand in place instead of a transposed copy.
  bool changed = false;
  for (unsigned i = 0; i < 2; ++i) {
    auto t = getOperand(i).getDefiningOp<TransposeOp>();
    if (!t || !swapsLastTwo(t.getPerm()))
      continue;
    setOperand(i, t.getX());
    if (i == 0)
      setTransposeLhs(!getTransposeLhs());
    else
      setTransposeRhs(!getTransposeRhs());
    changed = true;
  }
  return changed ? getResult() : OpFoldResult();
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor) {
  // Same type means every dim is kept (a static target dim never yields a
  // dynamic result dim), so this is the identity.
  if (getX().getType() == getType())
    return getX();
  return {};
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  return {};
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  auto in = cast<RankedTensorType>(getX().getType());
  if (!in.hasStaticShape() || in != getType())
    return {};
  // With unit steps, a slice as long as every static dim starts at 0.
  if (llvm::all_of(getSteps(), [](int64_t s) { return s == 1; }))
    return getX();
  return {};
}

OpFoldResult FlattenOp::fold(FoldAdaptor) {
  if (getX().getType() == getType())
    return getX();
  return {};
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  if (llvm::all_of(getPads(), [](int64_t p) { return p == 0; }))
    return getX();
  return {};
}
