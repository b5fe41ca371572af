//===- OnnxEinsum.cpp - ONNX Einsum as graph ops --------------------------===//
//
// An Einsum equation becomes transposes, reductions and batched matmuls:
//  1. every operand sums out the labels no other operand and not the output
//     uses (reduce_sum);
//  2. operands are contracted left to right. A pair whose batch, left-only,
//     right-only and contracted label groups hold at most one label each is
//     a matmul (transpose to [batch, M, K] x [batch, K, N], unsqueeze the
//     empty groups); any other pair is a broadcast multiply followed by a
//     reduce_sum over the contracted labels;
//  3. the result is transposed to the output's label order.
// Ellipses broadcast like NumPy (aligned on the right). A label repeated
// within one operand (a diagonal, "ii->i") first takes that diagonal (an
// identity mask and a reduce_sum; the dims must be static).
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;

namespace {

/// Labels are letters (0-51) or ellipsis dims (100 + k, right-aligned).
using Labels = SmallVector<int>;

struct Operand {
  Value value;
  Labels labels;
};

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

/// Parses one term ("ab...c") for an operand of `rank` (or, with rank < 0,
/// the output term). `ellipsis` is the number of dims "..." stands for.
FailureOr<Labels> parseTerm(ImportContext &c, StringRef term, int64_t rank,
                            int64_t &ellipsis, int64_t maxEllipsis) {
  Labels labels;
  size_t dots = term.find("...");
  int64_t letters = (int64_t)term.size() - (dots == StringRef::npos ? 0 : 3);
  if (rank >= 0) {
    ellipsis = dots == StringRef::npos ? 0 : rank - letters;
    if (ellipsis < 0 || (dots == StringRef::npos && letters != rank))
      return c.error("Einsum term '" + term + "' does not match rank " +
                     Twine(rank));
  } else {
    ellipsis = dots == StringRef::npos ? 0 : maxEllipsis;
  }
  for (size_t i = 0; i < term.size(); ++i) {
    char ch = term[i];
    if (i == dots) {
      for (int64_t k = 0; k < ellipsis; ++k)
        labels.push_back(100 + (int)(maxEllipsis - ellipsis + k));
      i += 2;
      continue;
    }
    int label = ch >= 'a' && ch <= 'z'   ? ch - 'a'
                : ch >= 'A' && ch <= 'Z' ? 26 + ch - 'A'
                                         : -1;
    if (label < 0)
      return c.error("Einsum term '" + term + "' has a bad character '" +
                     Twine(ch) + "'");
    if (rank < 0 && llvm::is_contained(labels, label))
      return c.error("Einsum output term '" + term + "' repeats a label");
    labels.push_back(label);
  }
  return labels;
}

/// Takes the diagonal of each label `op` repeats ("ii" -> "i"): the two
/// dims moved last, masked by an identity and summed over the second.
LogicalResult takeDiagonals(ImportContext &c, Operand &op) {
  GraphBuilder &b = c.b;
  for (;;) {
    // The first label that occurs again later: at p and qi.
    size_t p = 0, qi = 0;
    for (size_t i = 0; i < op.labels.size() && !qi; ++i)
      for (size_t j = i + 1; j < op.labels.size() && !qi; ++j)
        if (op.labels[j] == op.labels[i]) {
          p = i;
          qi = j;
        }
    if (!qi)
      return success();
    if (!op.value) // an op before failed: the builder holds why
      return failure();
    auto type = cast<RankedTensorType>(op.value.getType());
    int64_t n = type.getDimSize(p);
    if (ShapedType::isDynamic(n) || type.getDimSize(qi) != n)
      return c.error("an Einsum diagonal needs two equal static dims");
    SmallVector<int64_t> perm;
    Labels labels;
    for (size_t i = 0; i < op.labels.size(); ++i)
      if (i != p && i != qi) {
        perm.push_back(i);
        labels.push_back(op.labels[i]);
      }
    perm.append({(int64_t)p, (int64_t)qi});
    labels.push_back(op.labels[p]);
    Value eye = b.compare(graph::CompareDirection::eq, b.iota({n, n}, 0),
                          b.iota({n, n}, 1));
    Type elem = type.getElementType();
    Value zero = b.scalar(0, fromMlirType(elem).value_or(DType::f32));
    op.value =
        b.reduceSum(b.where(eye, b.transpose(op.value, perm), zero), {-1});
    op.labels = labels;
  }
}

/// Sums out the labels of `op` that are not in `keep`.
void sumOut(GraphBuilder &b, Operand &op, const Labels &keep) {
  SmallVector<int64_t> axes;
  Labels rest;
  for (auto [i, l] : llvm::enumerate(op.labels)) {
    if (llvm::is_contained(keep, l))
      rest.push_back(l);
    else
      axes.push_back(i);
  }
  if (axes.empty())
    return;
  op.value = b.reduceSum(op.value, axes);
  op.labels = rest;
}

/// `op` transposed to `order` (a permutation of its labels), then with a
/// size-1 dim inserted for each label of `full` it lacks.
Value arrange(GraphBuilder &b, const Operand &op, const Labels &full) {
  Labels order;
  for (int l : full)
    if (llvm::is_contained(op.labels, l))
      order.push_back(l);
  SmallVector<int64_t> perm;
  for (int l : order)
    perm.push_back(llvm::find(op.labels, l) - op.labels.begin());
  Value v = op.value;
  if (!llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    v = b.transpose(v, perm);
  SmallVector<int64_t> missing;
  for (auto [i, l] : llvm::enumerate(full))
    if (!llvm::is_contained(op.labels, l))
      missing.push_back(i);
  if (!missing.empty())
    v = b.unsqueeze(v, missing);
  return v;
}

/// Contracts two operands, keeping the labels in `keep`.
Operand contract(GraphBuilder &b, const Operand &a, const Operand &o,
                 const Labels &keep) {
  Labels batch, lhsOnly, rhsOnly, summed;
  for (int l : a.labels) {
    if (!llvm::is_contained(o.labels, l))
      lhsOnly.push_back(l);
    else if (llvm::is_contained(keep, l))
      batch.push_back(l);
    else
      summed.push_back(l);
  }
  for (int l : o.labels)
    if (!llvm::is_contained(a.labels, l))
      rhsOnly.push_back(l);
  Labels out = batch;
  out.append(lhsOnly);
  out.append(rhsOnly);
  if (lhsOnly.size() <= 1 && rhsOnly.size() <= 1 && summed.size() <= 1) {
    // [batch, M, K] x [batch, K, N] with empty groups as size-1 dims; the
    // placeholders -1 (M), -2 (K), -3 (N) stand for absent labels.
    int m = lhsOnly.empty() ? -1 : lhsOnly[0];
    int k = summed.empty() ? -2 : summed[0];
    int n = rhsOnly.empty() ? -3 : rhsOnly[0];
    Labels lhsFull = batch, rhsFull = batch;
    lhsFull.append({m, k});
    rhsFull.append({k, n});
    Value prod = b.matmul(arrange(b, a, lhsFull), arrange(b, o, rhsFull));
    SmallVector<int64_t> drop;
    int64_t nb = batch.size();
    if (lhsOnly.empty())
      drop.push_back(nb);
    if (rhsOnly.empty())
      drop.push_back(nb + 1);
    if (!drop.empty())
      prod = b.squeeze(prod, drop);
    return {prod, out};
  }
  Labels full = out;
  full.append(summed);
  Value prod = b.mul(arrange(b, a, full), arrange(b, o, full));
  SmallVector<int64_t> axes;
  for (size_t i = out.size(); i < full.size(); ++i)
    axes.push_back(i);
  return {b.reduceSum(prod, axes), out};
}

} // namespace

LogicalResult loom::onnx_import::einsum(ImportContext &c) {
  std::string eq;
  for (char ch : c.attrString("equation", ""))
    if (ch != ' ')
      eq += ch;
  StringRef lhs = eq, rhs;
  bool explicitOutput = false;
  if (size_t arrow = lhs.find("->"); arrow != StringRef::npos) {
    rhs = lhs.substr(arrow + 2);
    lhs = lhs.substr(0, arrow);
    explicitOutput = true;
  }
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if ((int)terms.size() != c.node->input_size())
    return c.error("Einsum equation '" + eq + "' has " + Twine(terms.size()) +
                   " terms for " + Twine(c.node->input_size()) + " inputs");
  SmallVector<Operand> ops;
  int64_t maxEllipsis = 0;
  for (int i = 0; i < (int)terms.size(); ++i) {
    Value v = c.input(i);
    if (!v)
      return failure();
    int64_t rank = rankOf(v);
    size_t dots = terms[i].find("...");
    if (dots != StringRef::npos)
      maxEllipsis =
          std::max<int64_t>(maxEllipsis, rank - ((int64_t)terms[i].size() - 3));
    ops.push_back({v, {}});
  }
  for (auto [i, term] : llvm::enumerate(terms)) {
    int64_t ellipsis = 0;
    auto labels =
        parseTerm(c, term, rankOf(ops[i].value), ellipsis, maxEllipsis);
    if (failed(labels))
      return failure();
    ops[i].labels = *labels;
  }
  // Implicit output: the labels that occur once in the whole equation.
  SmallVector<int> occurrences(52, 0);
  for (const Operand &op : ops)
    for (int l : op.labels)
      if (l < 52)
        ++occurrences[l];
  for (Operand &op : ops)
    if (failed(takeDiagonals(c, op)))
      return failure();
  Labels output;
  if (explicitOutput) {
    int64_t ellipsis = 0;
    auto labels = parseTerm(c, rhs, -1, ellipsis, maxEllipsis);
    if (failed(labels))
      return failure();
    output = *labels;
    for (int l : output)
      if (!llvm::any_of(ops, [&](const Operand &op) {
            return llvm::is_contained(op.labels, l);
          }))
        return c.error("Einsum output label is in no input");
  } else {
    // Implicit output: the ellipsis dims, then the labels used once, sorted.
    for (int64_t k = 0; k < maxEllipsis; ++k)
      output.push_back(100 + k);
    for (int l = 0; l < 52; ++l)
      if (occurrences[l] == 1)
        output.push_back(l);
  }
  // Labels still needed after operand i: the output's and later operands'.
  auto neededAfter = [&](size_t i) {
    Labels keep = output;
    for (size_t j = i + 1; j < ops.size(); ++j)
      keep.append(ops[j].labels);
    return keep;
  };
  GraphBuilder &b = c.b;
  for (size_t i = 0; i < ops.size(); ++i) {
    Labels keep = neededAfter(i);
    for (size_t j = 0; j < i; ++j)
      keep.append(ops[j].labels);
    sumOut(b, ops[i], keep);
  }
  Operand acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i)
    acc = contract(b, acc, ops[i], neededAfter(i));
  sumOut(b, acc, output);
  c.setOutput(0, arrange(b, acc, output));
  return success();
}
