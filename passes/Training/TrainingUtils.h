//===- TrainingUtils.h - helpers of the training passes ---------*- C++ -*-===//

#ifndef LOOM_PASSES_TRAINING_TRAININGUTILS_H
#define LOOM_PASSES_TRAINING_TRAININGUTILS_H

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace loom::training {

/// The function named `name`, or the module's only public one.
inline mlir::FailureOr<mlir::func::FuncOp> pickFunction(mlir::ModuleOp module,
                                                        llvm::StringRef name,
                                                        llvm::StringRef pass) {
  if (!name.empty()) {
    auto f = module.lookupSymbol<mlir::func::FuncOp>(name);
    if (!f)
      return module.emitError() << pass << ": no function '" << name << "'";
    return f;
  }
  mlir::func::FuncOp found;
  for (auto f : module.getOps<mlir::func::FuncOp>()) {
    if (f.isPrivate() || f.isDeclaration())
      continue;
    if (found)
      return module.emitError()
             << pass << ": several public functions; name one with func=";
    found = f;
  }
  if (!found)
    return module.emitError() << pass << ": no public function";
  return found;
}

/// Rank-0 constants and scalar arithmetic of one element type.
/// The gradient function of `module`: `name` when given, else the one
/// function returning `graph.grad_of` results (`--loom-autodiff`'s
/// output). Errors name `pass`.
inline mlir::FailureOr<mlir::func::FuncOp>
gradientFunction(mlir::ModuleOp module, llvm::StringRef name,
                 llvm::StringRef pass) {
  if (!name.empty())
    return pickFunction(module, name, pass);
  mlir::func::FuncOp found;
  for (auto f : module.getOps<mlir::func::FuncOp>()) {
    bool hasGrads = false;
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      hasGrads |= bool(f.getResultAttr(i, "graph.grad_of"));
    if (!hasGrads)
      continue;
    if (found)
      return f.emitError() << pass
                           << ": several gradient functions; name one with "
                              "func=";
    found = f;
  }
  if (!found)
    return module.emitError()
           << pass << ": no gradient function (run --loom-autodiff first)";
  return found;
}

class Scalars {
public:
  Scalars(mlir::OpBuilder &b, mlir::Location loc, mlir::Type elem)
      : b(b), loc(loc), elem(elem) {}

  mlir::Value constant(double v) { return constant(elem, v); }
  mlir::Value constant(mlir::Type type, double v) {
    auto t = mlir::RankedTensorType::get({}, type);
    mlir::Attribute a =
        llvm::isa<mlir::FloatType>(type)
            ? mlir::Attribute(b.getFloatAttr(type, v))
            : mlir::Attribute(mlir::IntegerAttr::get(
                  type, llvm::APInt(type.getIntOrFloatBitWidth(), (int64_t)v,
                                    /*isSigned=*/true)));
    return b.create<graph::ConstantOp>(loc, mlir::DenseElementsAttr::get(t, a));
  }
  mlir::Value intConst(int64_t v) {
    return constant(b.getI64Type(), (double)v);
  }
  mlir::Value add(mlir::Value x, mlir::Value y) {
    return b.create<graph::AddOp>(loc, x, y);
  }
  mlir::Value sub(mlir::Value x, mlir::Value y) {
    return b.create<graph::SubOp>(loc, x, y);
  }
  mlir::Value mul(mlir::Value x, mlir::Value y) {
    return b.create<graph::MulOp>(loc, x, y);
  }
  mlir::Value div(mlir::Value x, mlir::Value y) {
    return b.create<graph::DivOp>(loc, x, y);
  }
  mlir::Value mul(mlir::Value x, double c) {
    return mul(x, constant(mlir::getElementTypeOrSelf(x.getType()), c));
  }
  mlir::Value add(mlir::Value x, double c) {
    return add(x, constant(mlir::getElementTypeOrSelf(x.getType()), c));
  }

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::Type elem;
};

} // namespace loom::training

#endif // LOOM_PASSES_TRAINING_TRAININGUTILS_H
