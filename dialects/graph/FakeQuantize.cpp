//===- FakeQuantize.cpp - graph.fake_quantize's checks --------------------===//
//
// The shape and range rules of `graph.fake_quantize` (GraphOps.td), tagged
// as test/dialects/graph/invalid.mlir's cases are: its result type comes
// from NumPy broadcasting, these check the rest.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace loom::graph;

LogicalResult FakeQuantizeOp::checkParams(std::optional<Location> loc,
                                          Adaptor adaptor) {
  auto fail = [&](const Twine &msg) {
    return emitOptionalError(loc, "'", getOperationName(), "' op ", msg);
  };
  auto xt = cast<RankedTensorType>(adaptor.getX().getType());
  auto st = cast<RankedTensorType>(adaptor.getScale().getType());
  auto zt = cast<RankedTensorType>(adaptor.getZeroPoint().getType());
  // fake_quantize_c1: a non-empty integer range (I64Attr reads unsigned).
  auto qmin = static_cast<int64_t>(adaptor.getQmin());
  auto qmax = static_cast<int64_t>(adaptor.getQmax());
  if (qmin >= qmax)
    return fail("qmin (" + Twine(qmin) + ") must be below qmax (" +
                Twine(qmax) + ")");
  // fake_quantize_c2..c4: scale and zero point have one shape, which
  // broadcasts into x without widening it, per tensor or per channel.
  return checkQuantScale(loc, getOperationName(), xt, st, zt);
}
