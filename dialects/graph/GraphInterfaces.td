//===- GraphInterfaces.td - graph dialect op interfaces ----*- tablegen -*-===//
//
// VjpOpInterface: the reverse-mode derivative of an op. Every
// differentiable graph op implements it (dialects/graph/GraphVjp.cpp, one
// rule per op); the autodiff pass (passes/Autodiff) calls it op by op, in
// reverse order, to build the backward graph.
//
// CostOpInterface: a rough FLOPs and bytes estimate of one op for the cost
// models (recomputation's, ...). Every graph op has it (Graph_Op), with
// the estimate computed from the op's class traits and static shapes
// (dialects/graph/GraphCost.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_GRAPH_GRAPHINTERFACES_TD
#define LOOM_DIALECTS_GRAPH_GRAPHINTERFACES_TD

include "mlir/IR/OpBase.td"

def Graph_VjpOpInterface : OpInterface<"VjpOpInterface"> {
  let cppNamespace = "::loom::graph";
  let description = [{
    The vector-Jacobian product of an op: given the gradients of the loss
    with respect to the op's results, builds graph ops computing the
    gradients with respect to its operands.
  }];
  let methods = [
    InterfaceMethod<[{
      Builds, at the builder's insertion point, the gradient of every
      differentiable operand. `resultGrads` has one entry per result, null
      where no gradient flows into that result (it is zero). On success
      `operandGrads` holds one entry per operand, each null or of the
      operand's type; null means the gradient is zero or the operand is not
      differentiable. Fails with a diagnostic on the op for an attribute
      combination the rule does not cover.
    }], "::llvm::LogicalResult", "buildVjp",
    (ins "::mlir::OpBuilder &":$builder,
         "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
         "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
    InterfaceMethod<[{
      Whether a gradient may flow into operand `index`. Integer and boolean
      operands never are; some float operands are not either (batch norm's
      running statistics, which are frozen in the inference form).
    }], "bool", "isDifferentiableOperand", (ins "unsigned":$index)>,
  ];
}

def Graph_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::loom::graph";
  let description = [{
    A rough cost of one op, for the cost models that weigh recomputation,
    fusion and scheduling choices: its floating-point operations and the
    bytes it reads and writes. Estimates from static shapes; an op with a
    dynamic dim counts 0.
  }];
  let methods = [
    InterfaceMethod<[{
      Floating-point operations, roughly: 2 per multiply-add of a
      contraction (matmul, convolution), a few per element of a
      normalization or softmax, one per element of elementwise math, a
      reduction or pooling, none for data movement.
    }], "int64_t", "estimateFlops", (ins), [{}],
    [{ return ::loom::graph::detail::estimateFlops($_op.getOperation()); }]>,
    InterfaceMethod<[{
      Bytes read and written if the op ran alone: each operand and result
      once. A reshape-like op (a view of its operand) moves none.
    }], "int64_t", "estimateBytes", (ins), [{}],
    [{ return ::loom::graph::detail::estimateBytes($_op.getOperation()); }]>,
  ];
}

#endif // LOOM_DIALECTS_GRAPH_GRAPHINTERFACES_TD
