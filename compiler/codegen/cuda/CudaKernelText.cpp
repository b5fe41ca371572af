//===- CudaKernelText.cpp - the text of one CUDA kernel -------------------===//
//
// KernelText builds a kernel's body as evaluations of values at indices:
// each (value, index) becomes one local, computed once per scope, by the
// emitter its op registered (see CudaEmitInternal.h). Also the C++
// spelling of the element types and literals every family uses.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/CudaEmitInternal.h"

#include "dialects/graph/LocationString.h"
#include "dialects/graph/TensorBytes.h"
#include "loom/common/SourceChunks.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace mlir;
using loom::graph::locationString;

namespace loom::codegen::cuda::detail {

//===----------------------------------------------------------------------===//
// Shapes, types and literals
//===----------------------------------------------------------------------===//

ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

Type elemOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

int64_t numel(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

std::string computeType(Type type) {
  if (type.isF16() || type.isBF16() || type.isF32())
    return "float";
  if (type.isF64())
    return "double";
  if (type.isInteger(1))
    return "bool";
  // Unsigned integers compute as unsigned from 16 bits up (ui16 products
  // overflow int); ui8 and the narrow signed ones compute in int and wrap
  // when stored.
  if (type.isUnsignedInteger(64))
    return "loom::u64";
  if (type.isUnsignedInteger(16) || type.isUnsignedInteger(32))
    return "unsigned";
  if (type.isInteger(64))
    return "loom::i64";
  return "int";
}

std::string storageType(Type type) {
  if (type.isF16())
    return "__half";
  if (type.isBF16())
    return "__nv_bfloat16";
  if (type.isF32())
    return "float";
  if (type.isF64())
    return "double";
  if (type.isInteger(1))
    return "bool";
  if (type.isUnsignedInteger(8))
    return "unsigned char";
  if (type.isUnsignedInteger(16))
    return "unsigned short";
  if (type.isUnsignedInteger(32))
    return "unsigned";
  if (type.isUnsignedInteger(64))
    return "loom::u64";
  if (type.isInteger(8))
    return "signed char";
  if (type.isInteger(16))
    return "short";
  if (type.isInteger(64))
    return "loom::i64";
  return "int";
}

int64_t storageBytes(Type type) {
  if (type.isInteger(1))
    return 1;
  return type.getIntOrFloatBitWidth() / 8;
}

bool supportedElement(Type type) {
  return type.isF16() || type.isBF16() || type.isF32() || type.isF64() ||
         type.isInteger(1) || type.isInteger(8) || type.isInteger(16) ||
         type.isInteger(32) || type.isInteger(64);
}

std::string literal(double value, Type type) {
  std::string cxxType = computeType(type);
  if (cxxType == "bool")
    return value != 0 ? "true" : "false";
  if (cxxType == "unsigned" || cxxType == "loom::u64") {
    // An unsigned type's lowest is 0 and its largest all ones (the
    // identities of max and min).
    bool wide = cxxType == "loom::u64";
    if (value <= 0 || std::isnan(value))
      return wide ? "0ULL" : "0u";
    if (value >= (wide ? 1.8e19 : 4294967295.0))
      return wide ? "18446744073709551615ULL" : "4294967295u";
    return std::to_string(static_cast<unsigned long long>(value)) +
           (wide ? "ULL" : "u");
  }
  if (cxxType == "int" || cxxType == "loom::i64") {
    if (value >= 9.2e18)
      return "9223372036854775807LL";
    if (value <= -9.2e18)
      return "(-9223372036854775807LL - 1)";
    return std::to_string(static_cast<long long>(value)) +
           (cxxType == "int" ? "" : "LL");
  }
  bool isFloat = cxxType == "float";
  if (std::isnan(value))
    return isFloat ? "__int_as_float(0x7fc00000)"
                   : "__longlong_as_double(0x7ff8000000000000LL)";
  if (std::isinf(value)) {
    std::string infinity = isFloat
                               ? "__int_as_float(0x7f800000)"
                               : "__longlong_as_double(0x7ff0000000000000LL)";
    return value < 0 ? "(-" + infinity + ")" : infinity;
  }
  char buffer[64];
  if (isFloat)
    std::snprintf(buffer, sizeof(buffer), "%.9gf", static_cast<float>(value));
  else
    std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  std::string text = buffer;
  // "1f" is not a float literal: make it "1.f".
  if (text.find_first_of(".eEn") == std::string::npos) {
    if (isFloat)
      text.insert(text.size() - 1, ".");
    else
      text += ".0";
  }
  return text;
}

double elementAsDouble(ElementsAttr attr, int64_t index) {
  Type type = attr.getElementType();
  // A resource blob gives no element access: its bytes as dense elements.
  if (!isa<DenseElementsAttr>(attr))
    if (DenseElementsAttr dense = graph::denseElements(attr))
      attr = dense;
  if (!isa<DenseElementsAttr>(attr))
    return 0;
  auto values = attr.getValues<Attribute>();
  Attribute element = values[index];
  if (auto floatAttr = dyn_cast<FloatAttr>(element))
    return floatAttr.getValueAsDouble();
  if (auto intAttr = dyn_cast<IntegerAttr>(element))
    return type.isInteger(1) ? (intAttr.getValue().isZero() ? 0 : 1)
           : type.isUnsignedInteger()
               ? static_cast<double>(intAttr.getValue().getZExtValue())
               : static_cast<double>(intAttr.getValue().getSExtValue());
  if (auto boolAttr = dyn_cast<BoolAttr>(element))
    return boolAttr.getValue() ? 1 : 0;
  return 0;
}

Idx broadcastIdx(const Idx &index, ArrayRef<int64_t> from,
                 ArrayRef<int64_t> to) {
  Idx operandIndex;
  size_t lead = from.size() - to.size();
  for (size_t dim = 0; dim < to.size(); ++dim)
    operandIndex.push_back(to[dim] == 1 ? "0" : index[dim + lead]);
  return operandIndex;
}

std::string linearize(const Idx &index, ArrayRef<int64_t> shape) {
  std::string offset;
  int64_t stride = 1;
  for (int64_t dim = static_cast<int64_t>(shape.size()) - 1; dim >= 0; --dim) {
    if (shape[dim] != 1 && index[dim] != "0") {
      std::string term = stride == 1
                             ? index[dim]
                             : index[dim] + " * " + std::to_string(stride);
      offset = offset.empty() ? term : term + " + " + offset;
    }
    stride *= shape[dim];
  }
  return offset.empty() ? "0" : offset;
}

int64_t gridFor(int64_t iterations, int64_t block) {
  return std::clamp<int64_t>((iterations + block - 1) / block, 1, kMaxGrid);
}

FailureOr<std::string> emitUnsupported(Operation *op, StringRef why) {
  InFlightDiagnostic diag = op->emitError("CUDA codegen: ")
                            << op->getName() << " is not supported yet";
  if (!why.empty())
    diag << " (" << why << ")";
  diag << " [" << locationString(op->getLoc()) << "]";
  return failure();
}

std::string rounded(KernelText &kernel, Type type, const std::string &expr) {
  if (type.isF16())
    return kernel.let("float", "loom::rnd_f16(" + expr + ")");
  if (type.isBF16())
    return kernel.let("float", "loom::rnd_bf16(" + expr + ")");
  return kernel.let(computeType(type), expr);
}

//===----------------------------------------------------------------------===//
// KernelText
//===----------------------------------------------------------------------===//

std::string KernelText::param(int buffer, Type type, bool output) {
  auto it = paramOfBuffer.find(buffer);
  if (it != paramOfBuffer.end())
    return it->second;
  std::string paramName =
      (output ? "out" : "in") + std::to_string(params.size());
  std::string declaration = (output ? "" : "const ") + storageType(type) +
                            " *" + (output ? "" : "__restrict__ ") + paramName;
  params.push_back({declaration, buffer});
  paramOfBuffer[buffer] = paramName;
  return paramName;
}

Idx KernelText::decompose(StringRef flat, ArrayRef<int64_t> shape,
                          StringRef prefix) {
  Idx index(shape.size(), "0");
  int64_t stride = 1;
  for (int64_t dim = static_cast<int64_t>(shape.size()) - 1; dim >= 0; --dim) {
    if (shape[dim] != 1) {
      std::string expr = flat.str();
      if (stride != 1)
        expr = "(" + expr + ") / " + std::to_string(stride);
      if (stride * shape[dim] != numel(shape))
        expr = "(" + expr + ") % " + std::to_string(shape[dim]);
      index[dim] = let("loom::i64", expr, prefix);
    }
    stride *= shape[dim];
  }
  return index;
}

FailureOr<std::string> KernelText::eval(Value value, const Idx &index) {
  std::string key = llvm::formatv("{0}", value.getAsOpaquePointer()).str();
  for (const std::string &component : index)
    key += "," + component;
  for (auto &scope : llvm::reverse(scopes)) {
    auto it = scope.find(key);
    if (it != scope.end())
      return it->second;
  }
  auto overridden = overrides.find(value);
  FailureOr<std::string> result = failure();
  if (overridden != overrides.end()) {
    result = overridden->second(index);
  } else if (auto arg = dyn_cast<BlockArgument>(value)) {
    int buffer = region.bufferOfArg(arg);
    std::string pointer = param(buffer, elemOf(value), false);
    result = let(computeType(elemOf(value)),
                 "loom::ld(" + pointer + "[" +
                     linearize(index, shapeOf(value)) + "])");
  } else {
    result = evalOp(value.getDefiningOp(), value, index);
  }
  if (failed(result))
    return failure();
  scopes.back()[key] = *result;
  return result;
}

FailureOr<std::string> KernelText::evalOp(Operation *op, Value value,
                                          const Idx &index) {
  if (!op)
    return failure();
  if (const OpEmitter *emitter = opEmitters().lookup(op))
    if (emitter->value)
      return emitter->value(*this, op, value, index);
  if (op->getName().getStringRef().starts_with("graph.dynamic_") ||
      isa<graph::RangeOp>(op))
    return emitUnsupported(op, "run-time shape parameters");
  if (isa<graph::NonZeroOp>(op))
    return emitUnsupported(op, "a result size that depends on the data");
  return emitUnsupported(op);
}

std::string KernelText::definition() const {
  // The runtime finds a kernel's parameters after this declaration.
  std::string text = ::loom::cuda::kKernelDecl + name + "(";
  if (usesPointerTable()) {
    // One parameter: the buffers' addresses, read into the names the body
    // uses.
    text += "void *const *__restrict__ loom_table) {\n";
    for (size_t i = 0; i < params.size(); ++i) {
      const std::string &decl = params[i].first;
      size_t star = decl.rfind('*');
      text += "  " + decl + " = static_cast<" + decl.substr(0, star + 1) +
              ">(loom_table[" + std::to_string(i) + "]);\n";
    }
    return text + body + "}\n";
  }
  for (size_t i = 0; i < params.size(); ++i)
    text += (i ? ", " : "") + params[i].first;
  return text + ") {\n" + body + "}\n";
}

} // namespace loom::codegen::cuda::detail
