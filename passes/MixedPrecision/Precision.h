//===- Precision.h - float type facts the precision passes share -*- C++
//-*-===//

#ifndef LOOM_PASSES_MIXEDPRECISION_PRECISION_H
#define LOOM_PASSES_MIXEDPRECISION_PRECISION_H

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"

namespace loom::precision {

/// The float element type of a ranked tensor type, or null.
inline mlir::FloatType floatElement(mlir::Type type) {
  auto t = llvm::dyn_cast<mlir::RankedTensorType>(type);
  return t ? llvm::dyn_cast<mlir::FloatType>(t.getElementType())
           : mlir::FloatType();
}

/// Every value of `from`, subnormals included, is one of `to` (bf16 and
/// f16 in f32, not f16 in bf16).
inline bool isExactIn(mlir::FloatType from, mlir::FloatType to) {
  using llvm::APFloat;
  const llvm::fltSemantics &f = from.getFloatSemantics();
  const llvm::fltSemantics &t = to.getFloatSemantics();
  auto smallest = [](const llvm::fltSemantics &s) {
    return APFloat::semanticsMinExponent(s) -
           static_cast<int>(APFloat::semanticsPrecision(s));
  };
  return APFloat::semanticsPrecision(f) <= APFloat::semanticsPrecision(t) &&
         APFloat::semanticsMaxExponent(f) <= APFloat::semanticsMaxExponent(t) &&
         smallest(f) >= smallest(t);
}

} // namespace loom::precision

#endif // LOOM_PASSES_MIXEDPRECISION_PRECISION_H
