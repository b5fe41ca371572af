//===- GraphRandom.cpp - verifiers of the random ops ----------------------===//
//
// graph.random_uniform, random_normal, bernoulli, multinomial and
// random_dropout (GraphOps.td, "Random ops"). Their generator is described
// in passes/Conversion/GraphToLinalg/Random.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphOps.h"

using namespace mlir;
using namespace loom::graph;

static LogicalResult staticResult(Operation *op, Type t) {
  auto type = cast<RankedTensorType>(t);
  if (!type.hasStaticShape())
    return op->emitOpError("needs a static result shape, not ") << type;
  return success();
}

LogicalResult RandomUniformOp::verify() {
  // random_uniform_c1: low <= high.
  if (getLow().convertToDouble() > getHigh().convertToDouble())
    return emitOpError("low ")
           << getLow().convertToDouble() << " is greater than high "
           << getHigh().convertToDouble();
  return staticResult(*this, getType());
}

LogicalResult RandomNormalOp::verify() {
  // random_normal_c1: scale >= 0.
  if (!(getScale().convertToDouble() >= 0))
    return emitOpError("scale ")
           << getScale().convertToDouble() << " must be >= 0";
  return staticResult(*this, getType());
}

LogicalResult BernoulliOp::verify() {
  // bernoulli_c1: the result has the shape of probs.
  auto p = cast<RankedTensorType>(getProbs().getType());
  auto r = cast<RankedTensorType>(getType());
  if (p.getShape() != r.getShape())
    return emitOpError("result ") << r << " must have the shape of probs " << p;
  return success();
}

LogicalResult MultinomialOp::verify() {
  // multinomial_c1: logits [batch, classes], classes >= 1; result
  // [batch, sample_size], sample_size >= 1.
  auto l = cast<RankedTensorType>(getLogits().getType());
  auto r = cast<RankedTensorType>(getType());
  if (l.getRank() != 2 || l.isDynamicDim(1) || l.getDimSize(1) < 1)
    return emitOpError("logits must be [batch, classes] with a static "
                       "classes >= 1, not ")
           << l;
  if ((int64_t)getSampleSize() < 1)
    return emitOpError("sample_size ") << getSampleSize() << " must be >= 1";
  if (r.getRank() != 2 || r.getDimSize(0) != l.getDimSize(0) ||
      r.getDimSize(1) != (int64_t)getSampleSize())
    return emitOpError("result ")
           << r << " must be [batch, sample_size] = [" << l.getDimSize(0)
           << ", " << getSampleSize() << "]";
  return success();
}

LogicalResult RandomDropoutOp::verify() {
  // random_dropout_c1: 0 <= ratio < 1.
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError("ratio ") << ratio << " must be in [0, 1)";
  return success();
}
