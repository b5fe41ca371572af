//===- OnnxImporter.cpp - ONNX ModelProto -> graph IR ---------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

#include "dialects/graph/TensorBytes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;

std::optional<DType> loom::onnx_import::convertDataType(int t) {
  switch (t) {
  case onnx::TensorProto::FLOAT:
    return DType::f32;
  case onnx::TensorProto::FLOAT16:
    return DType::f16;
  case onnx::TensorProto::BFLOAT16:
    return DType::bf16;
  case onnx::TensorProto::DOUBLE:
    return DType::f64;
  case onnx::TensorProto::BOOL:
    return DType::i1;
  case onnx::TensorProto::INT8:
    return DType::i8;
  case onnx::TensorProto::INT16:
    return DType::i16;
  case onnx::TensorProto::UINT8:
    return DType::u8;
  case onnx::TensorProto::UINT16:
    return DType::u16;
  case onnx::TensorProto::UINT32:
    return DType::u32;
  case onnx::TensorProto::UINT64:
    return DType::u64;
  case onnx::TensorProto::INT32:
    return DType::i32;
  case onnx::TensorProto::INT64:
    return DType::i64;
  default:
    return std::nullopt;
  }
}

std::string loom::onnx_import::dataTypeName(int t) {
  if (onnx::TensorProto::DataType_IsValid(t))
    return onnx::TensorProto::DataType_Name(
        static_cast<onnx::TensorProto::DataType>(t));
  return "type " + std::to_string(t);
}

//===----------------------------------------------------------------------===//
// ImportContext
//===----------------------------------------------------------------------===//

Location ImportContext::nodeLoc() const {
  return NameLoc::get(StringAttr::get(&ctx, node->name()),
                      NameLoc::get(StringAttr::get(&ctx, node->op_type())));
}

LogicalResult ImportContext::error(const Twine &message) const {
  std::string label = node->name().empty() && node->output_size()
                          ? "producing '" + node->output(0) + "'"
                          : "'" + node->name() + "'";
  std::string text = message.str();
  // A value needed at import that is a graph input: say how to give it.
  // The graph inputs the handler asked for and did not get (the data
  // input 0 only when alone).
  if (StringRef(text).contains("known at import")) {
    std::vector<std::string> names;
    bool others = llvm::any_of(unknownAsked, [](int i) { return i > 0; });
    for (int i = 0; i < node->input_size(); ++i) {
      if (!llvm::is_contained(unknownAsked, i) || (i == 0 && others))
        continue;
      auto v = values.find(node->input(i));
      if (v != values.end() && isa<BlockArgument>(v->second))
        names.push_back(node->input(i));
    }
    if (!names.empty()) {
      text += names.size() == 1 ? "; graph input " : "; graph inputs ";
      for (size_t i = 0; i < names.size(); ++i)
        text += (i ? ", '" : "'") + names[i] + "'";
      text += names.size() == 1 ? " is" : " are";
      text += " known only at run time: freeze with";
      for (const std::string &n : names)
        text += " --bind " + n + "=FILE";
    }
  }
  return emitError(nodeLoc()) << text << " (at node " << label << ", "
                              << node->op_type() << ", opset " << opset << ")";
}

bool ImportContext::hasInput(int i) const {
  return i < node->input_size() && !node->input(i).empty();
}

Value ImportContext::input(int i) {
  if (!hasInput(i)) {
    (void)error("missing input " + Twine(i));
    return {};
  }
  const std::string &name = node->input(i);
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  if (sequences.count(name)) {
    (void)error("input '" + name +
                "' is a sequence; a tensor is expected there");
    return {};
  }
  if (optionals.count(name)) {
    (void)error("input '" + name +
                "' is an optional; a tensor is expected there "
                "(OptionalGetElement takes its element)");
    return {};
  }
  auto k = known.find(name);
  if (k == known.end()) {
    // A shape vector with dynamic dims taken as data: computed at run time
    // from the dims it names, once.
    auto sym = symbolic.find(name);
    if (sym != symbolic.end() && canMaterialize(sym->second)) {
      auto scope = b.scope(name);
      Value v = materializeSymbolic(*this, sym->second);
      values[name] = v;
      return v;
    }
    if (symbolic.count(name))
      (void)error("input '" + name +
                  "' is a shape vector with a product of dynamic dims, "
                  "which only shape arithmetic can use; give the dims sizes "
                  "(loomc compile or train --dim NAME=SIZE or --batch N)");
    else
      (void)error("input '" + name +
                  "' is not produced by any node, input or "
                  "initializer");
    return {};
  }
  // One constant per distinct value (Identity copies share theirs).
  Value &v = materialized[k->second];
  if (!v) {
    auto s = b.scope(name);
    v = b.constant(k->second);
  }
  values[name] = v;
  return v;
}

std::optional<DenseElementsAttr> ImportContext::knownInput(int i) const {
  if (!hasInput(i))
    return std::nullopt;
  auto k = known.find(node->input(i));
  if (k == known.end()) {
    if (!llvm::is_contained(unknownAsked, i))
      unknownAsked.push_back(i);
    return std::nullopt;
  }
  if (auto dense = dyn_cast<DenseElementsAttr>(k->second))
    return dense;
  return std::nullopt;
}

FailureOr<SmallVector<int64_t>> ImportContext::intsInput(int i,
                                                         StringRef what) {
  auto value = knownInput(i);
  if (!value || !isa<IntegerType>(value->getElementType()))
    return error(what + " must be an integer tensor known at import "
                        "(an initializer or a Constant)");
  SmallVector<int64_t> out;
  for (const APInt &v : value->getValues<APInt>())
    out.push_back(v.getSExtValue());
  return out;
}

void ImportContext::setOutput(int i, Value v) {
  if (v && i < node->output_size() && !node->output(i).empty())
    values[node->output(i)] = v;
}

const onnx::AttributeProto *ImportContext::attr(StringRef name) const {
  for (const auto &a : node->attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

bool ImportContext::hasAttr(StringRef name) const { return attr(name); }

int64_t ImportContext::attrInt(StringRef name, int64_t dflt) const {
  const auto *a = attr(name);
  return a ? a->i() : dflt;
}

float ImportContext::attrFloat(StringRef name, float dflt) const {
  const auto *a = attr(name);
  return a ? a->f() : dflt;
}

std::string ImportContext::attrString(StringRef name, StringRef dflt) const {
  const auto *a = attr(name);
  return a ? a->s() : dflt.str();
}

SmallVector<int64_t> ImportContext::attrInts(StringRef name) const {
  const auto *a = attr(name);
  if (!a)
    return {};
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

const onnx::TensorProto *ImportContext::attrTensor(StringRef name) const {
  const auto *a = attr(name);
  return a && a->has_t() ? &a->t() : nullptr;
}

/// Reads the bytes of a tensor stored in an external file; its location
/// is appended to `read` (when set) unless already there.
static LogicalResult readExternal(const onnx::TensorProto &t,
                                  StringRef modelDir, uint64_t maxBytes,
                                  Location loc, std::string &out,
                                  std::vector<std::string> *read) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto &kv : t.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
      continue;
    }
    if (kv.key() != "offset" && kv.key() != "length")
      continue;
    uint64_t n = 0;
    if (StringRef(kv.value()).getAsInteger(10, n))
      return emitError(loc)
             << "tensor '" << t.name() << "' has external " << kv.key() << " '"
             << kv.value() << "', not a number";
    if (kv.key() == "offset")
      offset = n;
    else
      length = n;
  }
  if (location.empty())
    return emitError(loc) << "tensor '" << t.name()
                          << "' has external data without a location";
  // As ONNX's checker: a relative path inside the model's folder, naming a
  // regular file (not /dev/zero, not ../../etc/passwd).
  bool escapes = llvm::sys::path::is_absolute(location) ||
                 llvm::any_of(llvm::make_range(llvm::sys::path::begin(location),
                                               llvm::sys::path::end(location)),
                              [](StringRef c) { return c == ".."; });
  if (escapes)
    return emitError(loc) << "tensor '" << t.name() << "' has external data '"
                          << location
                          << "' outside the model's folder (an absolute "
                             "path or one with '..')";
  SmallString<256> path(modelDir);
  llvm::sys::path::append(path, location);
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) &&
      status.type() != llvm::sys::fs::file_type::regular_file)
    return emitError(loc) << "external data '" << path << "' of tensor '"
                          << t.name() << "' is not a regular file";
  if (length && *length > maxBytes)
    return emitError(loc) << "external data of tensor '" << t.name() << "' is "
                          << *length << " bytes, more than the limit of "
                          << maxBytes << " (loomc --max-tensor-bytes)";
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return emitError(loc) << "cannot read external data '" << path
                          << "' of tensor '" << t.name()
                          << "': " << buffer.getError().message();
  StringRef data = (*buffer)->getBuffer();
  uint64_t size =
      length ? *length : data.size() - std::min<uint64_t>(offset, data.size());
  if (offset > data.size() || size > data.size() - offset)
    return emitError(loc) << "external data '" << path << "' of tensor '"
                          << t.name() << "' is truncated: needs bytes ["
                          << offset << ", " << offset + size << "), file has "
                          << data.size();
  out.assign(data.data() + offset, size);
  if (read && !llvm::is_contained(*read, location))
    read->push_back(location);
  return success();
}

FailureOr<ElementsAttr> ImportContext::convertTensor(const onnx::TensorProto &t,
                                                     Location loc,
                                                     std::string *taken) {
  std::optional<DType> dtype = convertDataType(t.data_type());
  if (!dtype)
    return emitError(loc) << "tensor '" << t.name() << "' has element type "
                          << dataTypeName(t.data_type())
                          << ", which Loom does not support";
  SmallVector<int64_t> shape(t.dims().begin(), t.dims().end());
  if (llvm::any_of(shape, [](int64_t d) { return d < 0; }))
    return emitError(loc) << "tensor '" << t.name() << "' has a negative dim";
  Type elem = toMlirType(ctx, *dtype);
  size_t width = *dtype == DType::i1 ? 1 : elem.getIntOrFloatBitWidth() / 8;
  // Its size before anything is allocated (overflow-safe: the product only
  // grows while it stays within the limit).
  uint64_t maxBytes = options.maxTensorBytes;
  uint64_t size = width;
  bool empty = llvm::is_contained(shape, 0);
  for (int64_t d : shape) {
    if (empty)
      break;
    if (size > maxBytes / static_cast<uint64_t>(d)) {
      size = maxBytes + 1;
      break;
    }
    size *= static_cast<uint64_t>(d);
  }
  if (!empty && size > maxBytes)
    return emitError(loc) << "tensor '" << t.name() << "' of shape ["
                          << llvm::make_range(shape.begin(), shape.end())
                          << "] is larger than the limit of " << maxBytes
                          << " bytes (loomc --max-tensor-bytes)";
  auto type = RankedTensorType::get(shape, elem);
  int64_t count = type.getNumElements();

  // Gather the little-endian bytes, whatever field holds them.
  std::string bytes;
  if (taken) {
    bytes = std::move(*taken);
  } else if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    if (failed(readExternal(t, options.modelDir, maxBytes, loc, bytes,
                            options.externalFilesRead)))
      return failure();
  } else if (t.has_raw_data()) {
    bytes = t.raw_data();
  } else {
    bytes.resize(count * width);
    char *out = bytes.data();
    auto fill = [&](auto &field, auto convert) -> LogicalResult {
      if (field.size() != count)
        return emitError(loc)
               << "tensor '" << t.name() << "' holds " << field.size()
               << " values for shape with " << count << " elements";
      for (int64_t i = 0; i < count; ++i) {
        auto v = convert(field.Get(i));
        std::memcpy(out + i * width, &v, width);
      }
      return success();
    };
    LogicalResult ok = success();
    switch (*dtype) {
    case DType::f32:
      ok = fill(t.float_data(), [](float v) { return v; });
      break;
    case DType::f64:
      ok = fill(t.double_data(), [](double v) { return v; });
      break;
    case DType::i64:
      ok = fill(t.int64_data(), [](int64_t v) { return v; });
      break;
    case DType::i32:
      ok = fill(t.int32_data(), [](int32_t v) { return v; });
      break;
    case DType::i8:
      ok = fill(t.int32_data(), [](int32_t v) { return (int8_t)v; });
      break;
    case DType::i16:
      ok = fill(t.int32_data(), [](int32_t v) { return (int16_t)v; });
      break;
    case DType::u8:
      ok = fill(t.int32_data(), [](int32_t v) { return (uint8_t)v; });
      break;
    case DType::u16:
      ok = fill(t.int32_data(), [](int32_t v) { return (uint16_t)v; });
      break;
    // ONNX keeps uint32 and uint64 in uint64_data.
    case DType::u32:
      ok = fill(t.uint64_data(), [](uint64_t v) { return (uint32_t)v; });
      break;
    case DType::u64:
      ok = fill(t.uint64_data(), [](uint64_t v) { return v; });
      break;
    case DType::i1:
      ok = fill(t.int32_data(), [](int32_t v) { return (uint8_t)(v != 0); });
      break;
    case DType::f16:
    case DType::bf16:
      ok = fill(t.int32_data(), [](int32_t v) { return (uint16_t)v; });
      break;
    }
    if (failed(ok))
      return failure();
  }
  if ((int64_t)bytes.size() != count * (int64_t)width)
    return emitError(loc) << "tensor '" << t.name() << "' has " << bytes.size()
                          << " bytes of data, expected " << count * width
                          << " for shape and type";
  if (*dtype == DType::i1) {
    SmallVector<bool> values;
    for (char c : bytes)
      values.push_back(c != 0);
    return ElementsAttr(DenseElementsAttr::get(type, values));
  }
  // Weights larger than 1 KiB go to a resource blob: no copy into the IR
  // text, printed once in the file's resource section.
  ElementsAttr value = loom::graph::elementsFromBytes(
      type, std::move(bytes), t.name().empty() ? "onnx_tensor" : t.name());
  if (!value)
    return emitError(loc) << "tensor '" << t.name() << "' has invalid data";
  return value;
}

//===----------------------------------------------------------------------===//
// The graph
//===----------------------------------------------------------------------===//

/// The tensor graph input `name` of ONNX tensor type `tt`, with its shape
/// from `--input-shape` (the first of `shapeKeys` given) or as declared,
/// dynamic dims sized by --dim and --batch. Null after a diagnostic.
static Value tensorInput(ImportContext &ic, StringRef name,
                         const onnx::TypeProto &type,
                         ArrayRef<std::string> shapeKeys, Location loc,
                         bool element = false) {
  const ImportOptions &options = ic.options;
  if (!type.has_tensor_type()) {
    const char *kind = type.has_sequence_type()   ? "a sequence"
                       : type.has_optional_type() ? "an optional"
                       : type.has_map_type()      ? "a map"
                                                  : nullptr;
    if (kind)
      return emitError(loc) << "graph input '" << name << "' is " << kind
                            << (element ? " inside a sequence" : "")
                            << ", which Loom does not support",
             Value();
    return emitError(loc) << "graph input '" << name << "' is not a tensor",
           Value();
  }
  const auto &tt = type.tensor_type();
  std::optional<DType> dtype = convertDataType(tt.elem_type());
  if (!dtype)
    return emitError(loc) << "graph input '" << name << "' has element type "
                          << dataTypeName(tt.elem_type())
                          << ", which Loom does not support",
           Value();
  const std::vector<int64_t> *given = nullptr;
  for (const std::string &key : shapeKeys)
    if (auto it = options.inputShapes.find(key);
        !given && it != options.inputShapes.end())
      given = &it->second;
  if (!tt.has_shape() && !given)
    return emitError(loc) << "graph input '" << name
                          << "' has no shape (its rank must be known; "
                             "give one with --input-shape "
                          << name << "=D0xD1...)",
           Value();
  SmallVector<int64_t> shape;
  SmallVector<std::string> dimNames;
  if (tt.has_shape())
    for (const auto &d : tt.shape().dim()) {
      shape.push_back(d.has_dim_value() ? d.dim_value() : kDyn);
      dimNames.push_back(d.has_dim_param() ? d.dim_param() : "");
    }
  if (given) {
    if (tt.has_shape() && given->size() != shape.size())
      return emitError(loc) << "--input-shape gives graph input '" << name
                            << "' rank " << given->size()
                            << ", the model declares rank " << shape.size(),
             Value();
    for (size_t d = 0; d < given->size(); ++d)
      if (tt.has_shape() && shape[d] != kDyn && shape[d] != (*given)[d])
        return emitError(loc)
                   << "--input-shape gives dim " << d << " of graph input '"
                   << name << "' size " << (*given)[d]
                   << ", the model declares " << shape[d],
               Value();
    shape.assign(given->begin(), given->end());
    dimNames.resize(shape.size());
  }
  for (auto [d, size] : llvm::enumerate(shape)) {
    if (size != kDyn)
      continue;
    auto named = options.dimSizes.find(dimNames[d]);
    if (!dimNames[d].empty() && named != options.dimSizes.end())
      size = named->second;
    else if (d == 0 && options.batch > 0)
      size = options.batch;
  }
  // A sequence's elements may differ in shape: a dim_param of the element
  // type does not tie them together.
  if (element)
    dimNames.assign(dimNames.size(), "");
  Value v = ic.b.input(name, shape, *dtype, dimNames);
  if (!v)
    return emitError(loc) << ic.b.error(), Value();
  return v;
}

/// The elements of sequence graph input `name` (element type `elem`): the
/// tensor inputs NAME.0 ... NAME.N-1 for N given by --seq-len.
static FailureOr<std::vector<Value>>
sequenceInput(ImportContext &ic, StringRef name, const onnx::TypeProto &elem,
              Location loc, StringRef kind = "is a sequence") {
  auto length = ic.options.sequenceLengths.find(name.str());
  if (length == ic.options.sequenceLengths.end())
    return emitError(loc) << "graph input '" << name << "' " << kind
                          << ": give its length for this compile with "
                             "--seq-len "
                          << name << "=N (it becomes the tensor inputs " << name
                          << ".0 ... " << name << ".N-1)";
  std::vector<Value> list;
  for (int64_t k = 0; k < length->second; ++k) {
    std::string element = (name + "." + Twine(k)).str();
    Value v = tensorInput(ic, element, elem, {element, name.str()}, loc,
                          /*element=*/true);
    if (!v)
      return failure();
    list.push_back(v);
  }
  return list;
}

/// Graph input `in` of a sequence or optional type, defined in `ic`.
static LogicalResult structuredInput(ImportContext &ic,
                                     const onnx::ValueInfoProto &in,
                                     Location loc) {
  const std::string &name = in.name();
  AnyValue v;
  const onnx::TypeProto &type = in.type();
  if (type.has_sequence_type()) {
    v.kind = AnyValue::Kind::Sequence;
    auto list = sequenceInput(ic, name, type.sequence_type().elem_type(), loc);
    if (failed(list))
      return failure();
    v.list = std::move(*list);
    defineAny(ic, name, v);
    return success();
  }
  const onnx::TypeProto &elem = type.optional_type().elem_type();
  v.kind = AnyValue::Kind::Optional;
  v.optional.holdsSequence = elem.has_sequence_type();
  if (!elem.has_sequence_type() && !elem.has_tensor_type())
    return emitError(loc) << "graph input '" << name
                          << "' is an optional of a type other than a "
                             "tensor or a sequence, which Loom does not "
                             "support";
  v.optional.present = !ic.options.absentInputs.count(name);
  if (v.optional.present && elem.has_sequence_type()) {
    auto list = sequenceInput(ic, name, elem.sequence_type().elem_type(), loc,
                              "is an optional holding a sequence (present "
                              "unless --absent " +
                                  name + ")");
    if (failed(list))
      return failure();
    v.optional.list = std::move(*list);
  } else if (v.optional.present) {
    v.optional.tensor = tensorInput(ic, name, elem, {name}, loc);
    if (!v.optional.tensor)
      return failure();
  }
  defineAny(ic, name, v);
  return success();
}

/// Refuses --seq-len, --absent and --input-shape naming no graph input of
/// their kind.
static LogicalResult checkInputOptions(ImportContext &ic,
                                       const onnx::GraphProto &graph,
                                       Location loc) {
  const ImportOptions &options = ic.options;
  llvm::StringMap<const onnx::TypeProto *> types;
  for (const auto &in : graph.input())
    if (!ic.known.count(in.name()))
      types[in.name()] = &in.type();
  auto isSequence = [&](StringRef name) {
    const onnx::TypeProto *t = types.lookup(name);
    return t && (t->has_sequence_type() ||
                 (t->has_optional_type() &&
                  t->optional_type().elem_type().has_sequence_type()));
  };
  for (const auto &[name, n] : options.sequenceLengths) {
    if (!isSequence(name))
      return emitError(loc) << "--seq-len " << name << ": the model has no "
                            << "sequence graph input '" << name << "'";
    if (n < 0)
      return emitError(loc)
             << "--seq-len " << name << "=" << n << ": a length is 0 or more";
  }
  for (const std::string &name : options.absentInputs) {
    const onnx::TypeProto *t = types.lookup(name);
    if (!t || !t->has_optional_type())
      return emitError(loc) << "--absent " << name << ": the model has no "
                            << "optional graph input '" << name << "'";
  }
  for (const auto &[key, dims] : options.inputShapes) {
    StringRef name = key;
    bool found = types.count(name);
    // NAME.K: an element of sequence input NAME.
    auto [base, index] = name.rsplit('.');
    unsigned k = 0;
    if (!found && !index.empty() && !index.getAsInteger(10, k) &&
        isSequence(base)) {
      auto length = options.sequenceLengths.find(base.str());
      found = length == options.sequenceLengths.end() || k < length->second;
    }
    if (!found)
      return emitError(loc) << "--input-shape " << key
                            << ": the model has no graph input '" << key
                            << "' (nor a sequence input whose element that "
                               "is)";
    if (llvm::any_of(dims, [](int64_t d) { return d < 0; }))
      return emitError(loc)
             << "--input-shape " << key << ": dims are sizes of 0 or more";
  }
  return success();
}

/// importModel; `owned`: the model is importFile's own, so the data of
/// large initializers may move out of it into the IR (KeptSource).
LogicalResult loom::onnx_import::importNode(ImportContext &ic,
                                            const onnx::NodeProto &node,
                                            const OpEntry *entry) {
  GraphBuilder &b = ic.b;
  ic.node = &node;
  ic.unknownAsked.clear();
  auto scope = b.scope(node.name().empty() ? node.op_type() : node.name());
  // Every named input must exist before a converter runs: the converters
  // build on the values they read, and one that is missing would leave
  // them working on a null value.
  for (int i = 0; i < node.input_size(); ++i) {
    const std::string &name = node.input(i);
    if (!name.empty() && !ic.values.count(name) && !ic.known.count(name) &&
        !ic.symbolic.count(name) && !ic.sequences.count(name) &&
        !ic.optionals.count(name))
      return ic.error("input " + Twine(i) + " ('" + name +
                      "') is not produced by any node, input or "
                      "initializer");
    // A sequence is a list known at import (OnnxSequence.cpp): only the
    // sequence ops read one.
    if (!entry->takesSequences && ic.sequences.count(name))
      return ic.error("input " + Twine(i) + " ('" + name +
                      "') is a sequence; " + node.op_type() +
                      " takes tensors (sequences are lists known at import "
                      "in Loom, read only by the sequence ops)");
    if (!entry->takesSequences && ic.optionals.count(name))
      return ic.error("input " + Twine(i) + " ('" + name +
                      "') is an optional; " + node.op_type() +
                      " takes tensors (optionals are known at import to be "
                      "empty or not in Loom, read only by the optional ops)");
  }
  if (foldShapeArithmetic(ic))
    return success();
  // Past shape arithmetic, a shape vector with dynamic dims is data for
  // any input but the one its op takes a shape at: computed at run time
  // from the dims it names (once), or refused here (input() says why)
  // when an entry is not tracked, never given as a null value.
  ic.shapeInput = entry->shapeInput;
  for (int i = 0; i < node.input_size(); ++i) {
    const std::string &name = node.input(i);
    if (i == entry->shapeInput || !ic.symbolic.count(name) ||
        ic.values.count(name) || ic.known.count(name))
      continue;
    if (!canMaterialize(ic.symbolic[name])) {
      (void)ic.input(i);
      return failure();
    }
  }
  // A converter may give up because a graph op it built failed: the
  // builder holds that reason, not the diagnostics.
  LogicalResult converted = entry->handler(ic);
  if (!b.ok())
    return ic.error(b.error());
  if (failed(converted))
    return failure();
  for (int i = 0; i < node.output_size(); ++i)
    if (!node.output(i).empty() && !ic.values.count(node.output(i)) &&
        !ic.known.count(node.output(i)) && !ic.symbolic.count(node.output(i)) &&
        !ic.sequences.count(node.output(i)) &&
        !ic.optionals.count(node.output(i)))
      return ic.error("output " + Twine(i) + " ('" + node.output(i) +
                      "') is not supported");
  return success();
}

static FailureOr<OwningOpRef<ModuleOp>>
importModelImpl(MLIRContext &ctx, const onnx::ModelProto &original,
                const ImportOptions &options, bool owned) {
  using namespace loom::onnx_import;
  // Bound graph inputs become initializers of a copy of the model.
  onnx::ModelProto boundCopy;
  if (!options.bindings.empty()) {
    boundCopy = original;
    onnx::GraphProto *g = boundCopy.mutable_graph();
    Location loc = NameLoc::get(StringAttr::get(&ctx, "onnx model"));
    for (const auto &[name, bytes] : options.bindings) {
      auto *inputs = g->mutable_input();
      auto it = std::find_if(
          inputs->begin(), inputs->end(),
          [&](const onnx::ValueInfoProto &v) { return v.name() == name; });
      if (it == inputs->end()) {
        std::string names;
        for (const auto &v : g->input())
          names += (names.empty() ? "" : ", ") + v.name();
        return emitError(loc)
               << "--bind " << name << ": the model has no "
               << "graph input '" << name << "' (inputs: " << names << ")";
      }
      onnx::TensorProto t;
      if (!t.ParseFromString(bytes))
        return emitError(loc)
               << "--bind " << name << ": the value is not a tensor";
      int32_t declared = it->type().tensor_type().elem_type();
      if (declared && t.data_type() != declared)
        return emitError(loc)
               << "--bind " << name << ": the value has ONNX data type "
               << t.data_type() << ", the graph input is declared with "
               << declared;
      t.set_name(name);
      *g->add_initializer() = std::move(t);
      inputs->erase(it);
    }
  }
  const onnx::ModelProto &model =
      options.bindings.empty() ? original : boundCopy;
  Location modelLoc = NameLoc::get(StringAttr::get(&ctx, "onnx model"));
  llvm::StringMap<int64_t> opsets;
  for (const auto &o : model.opset_import())
    opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
  int64_t opset = opsets.lookup("");
  if (opset == 0)
    opset = 1;
  if (opset < 1 || opset > kNewestOpset)
    return emitError(modelLoc)
           << "the model imports opset " << opset
           << " of ai.onnx; this importer knows opsets 1 to " << kNewestOpset
           << " (re-export the model at one of them)";
  const onnx::GraphProto &graph = model.graph();
  if (options.maxNodes > 0 && graph.node_size() > options.maxNodes)
    return emitError(modelLoc) << "the model has " << graph.node_size()
                               << " nodes, more than the limit of "
                               << options.maxNodes << " (loomc --max-nodes)";

  // Report every unsupported node before building anything.
  bool unsupported = false;
  for (auto [index, node] : llvm::enumerate(graph.node())) {
    // Not `cond ? "" : node.domain()`: that is a temporary std::string.
    StringRef domain = node.domain();
    if (domain == "ai.onnx")
      domain = "";
    int64_t domainOpset = domain.empty() ? opset : opsets.lookup(domain);
    if (lookupOp(domain, node.op_type(), domainOpset))
      continue;
    unsupported = true;
    std::string label =
        !node.name().empty() ? "'" + node.name() + "'"
        : node.output_size()
            ? "#" + std::to_string(index) + " (output '" + node.output(0) + "')"
            : "#" + std::to_string(index);
    emitError(NameLoc::get(StringAttr::get(&ctx, node.name())))
        << "unsupported ONNX op '" << node.op_type() << "' ("
        << (domain.empty() ? "ai.onnx" : domain) << ", opset " << domainOpset
        << ") at node " << label;
  }
  if (unsupported)
    return failure();

  GraphBuilder b(ctx, options.funcName);
  ImportContext ic(b, ctx, opset, options);
  // Every node against ONNX's schema of its op, before anything is
  // converted: a converter reads the inputs and attributes its op defines.
  bool invalid = false;
  for (const auto &node : graph.node()) {
    ic.node = &node;
    // Every ONNX op lists at least one output; the converters name output 0.
    if (node.output_size() == 0) {
      invalid = true;
      (void)ic.error("the node lists no outputs (every ONNX op has one)");
      continue;
    }
    StringRef domain = node.domain();
    if (!domain.empty() && domain != "ai.onnx")
      continue;
    std::string reason = checkNodeSchema(node, opset);
    if (!reason.empty()) {
      invalid = true;
      (void)ic.error(reason);
    }
  }
  if (invalid)
    return failure();
  std::map<std::string, ElementsAttr> initialValues;
  KeptSource *kept = options.keepSource;
  bool movable = owned && options.bindings.empty();
  for (const auto &init : graph.initializer()) {
    // The raw data of a large initializer of importFile's own model moves
    // into its blob (convertTensor makes one above 1 KiB): the weights are
    // in memory once. External data is read into one, and a kept model
    // stops pointing at the file.
    auto &mine = const_cast<onnx::TensorProto &>(init);
    bool moves =
        movable && init.data_type() != onnx::TensorProto::BOOL &&
        ((kept && init.data_location() == onnx::TensorProto::EXTERNAL) ||
         init.raw_data().size() > 1024);
    std::string taken;
    bool take = moves && init.data_location() != onnx::TensorProto::EXTERNAL;
    if (take) {
      taken = std::move(*mine.mutable_raw_data());
      mine.clear_raw_data();
    }
    auto value =
        ic.convertTensor(init, NameLoc::get(StringAttr::get(&ctx, init.name())),
                         take ? &taken : nullptr);
    if (failed(value))
      return failure();
    if (kept && moves && isa<DenseResourceElementsAttr>(*value)) {
      kept->data[init.name()] = *value;
      mine.clear_external_data();
      mine.clear_data_location();
    }
    ic.known[init.name()] = *value;
    auto type = cast<RankedTensorType>(value->getType());
    if (options.initializersAsParams && type.getRank() >= 1 &&
        isa<FloatType>(type.getElementType())) {
      // A trainable weight: an argument (its value stays known for the
      // rare import-time read of a float initializer).
      auto dtype = fromMlirType(type.getElementType());
      Value arg = b.param(init.name(), type.getShape(), *dtype);
      if (!arg)
        return emitError(modelLoc) << b.error();
      ic.values[init.name()] = arg;
      initialValues[init.name()] = *value;
    }
  }
  if (failed(checkInputOptions(ic, graph, modelLoc)))
    return failure();
  for (const auto &in : graph.input()) {
    // Older exporters list initializers as inputs too: those are weights.
    if (ic.known.count(in.name()))
      continue;
    Location loc = NameLoc::get(StringAttr::get(&ctx, in.name()));
    if (in.type().has_sequence_type() || in.type().has_optional_type()) {
      if (failed(structuredInput(ic, in, loc)))
        return failure();
      continue;
    }
    Value v = tensorInput(ic, in.name(), in.type(), {in.name()}, loc);
    if (!v)
      return failure();
    ic.values[in.name()] = v;
  }
  for (const auto &node : graph.node()) {
    // The opset of the node's domain, as the check above looked it up.
    StringRef domain = node.domain();
    if (domain == "ai.onnx")
      domain = "";
    const OpEntry *entry = lookupOp(
        domain, node.op_type(), domain.empty() ? opset : opsets.lookup(domain));
    if (failed(importNode(ic, node, entry)))
      return failure();
  }
  // A sequence output of N elements is the outputs NAME.0 ... NAME.N-1, a
  // present optional its tensor (NAME) or elements, an empty one nothing.
  size_t outputs = 0;
  for (const auto &out : graph.output()) {
    auto v = lookupAny(ic, out.name());
    if (!v)
      return emitError(modelLoc)
             << "graph output '" << out.name() << "' is never produced";
    auto elements = [&](ArrayRef<Value> list) {
      for (auto [k, e] : llvm::enumerate(list))
        b.output(out.name() + "." + std::to_string(k), e);
      outputs += list.size();
    };
    switch (v->kind) {
    case AnyValue::Kind::Tensor: {
      Value t = v->tensor;
      if (!t) {
        auto s = b.scope(out.name());
        t = b.constant(*v->known);
      }
      b.output(out.name(), t);
      ++outputs;
      break;
    }
    case AnyValue::Kind::Sequence:
      elements(v->list);
      break;
    case AnyValue::Kind::Optional:
      if (v->optional.present && v->optional.holdsSequence)
        elements(v->optional.list);
      if (v->optional.present && !v->optional.holdsSequence) {
        b.output(out.name(), v->optional.tensor);
        ++outputs;
      }
      break;
    }
  }
  if (outputs == 0 && graph.output_size() > 0)
    return emitError(modelLoc)
           << "every graph output is an empty sequence or an absent "
              "optional in this compile: the model would compute nothing";
  auto module = b.finish();
  if (failed(module))
    return emitError(modelLoc) << b.error();
  for (auto func : (*module)->getOps<func::FuncOp>())
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto name = func.getArgAttrOfType<StringAttr>(i, "graph.param"))
        if (auto it = initialValues.find(name.str()); it != initialValues.end())
          func.setArgAttr(i, "graph.initial_value", it->second);
  if (kept && !original.SerializeToString(&kept->model))
    return emitError(modelLoc)
           << "cannot keep the source model for export (over 2 GiB?)";
  return module;
}

FailureOr<OwningOpRef<ModuleOp>>
loom::onnx_import::importModel(MLIRContext &ctx, const onnx::ModelProto &model,
                               const ImportOptions &options) {
  return importModelImpl(ctx, model, options, /*owned=*/false);
}

FailureOr<OwningOpRef<ModuleOp>>
loom::onnx_import::importFile(MLIRContext &ctx, StringRef path,
                              ImportOptions options) {
  onnx::ModelProto model;
  if (failed(readModelFile(ctx, path, model)))
    return failure();
  StringRef dir = llvm::sys::path::parent_path(path);
  options.modelDir = dir.empty() ? "." : dir.str();
  return importModelImpl(ctx, model, options, /*owned=*/true);
}
