//===- Protocol.cpp - the Open Inference Protocol v2's JSON ---------------===//

#include "tools/loom-serve/Protocol.h"
#include "loom/common/Float16.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

namespace loom::serve {

using loom::runtime::bf16ToFloat;
using loom::runtime::f16ToFloat;
using loom::runtime::floatToBf16;
using loom::runtime::floatToF16;
using nlohmann::json;

namespace {

struct Datatype {
  const char *name;
  loom_dtype dtype;
};
constexpr Datatype kDatatypes[] = {
    {"FP32", LOOM_DTYPE_F32},   {"FP16", LOOM_DTYPE_F16},
    {"BF16", LOOM_DTYPE_BF16},  {"FP64", LOOM_DTYPE_F64},
    {"INT64", LOOM_DTYPE_I64},  {"INT32", LOOM_DTYPE_I32},
    {"INT16", LOOM_DTYPE_I16},  {"INT8", LOOM_DTYPE_I8},
    {"UINT8", LOOM_DTYPE_U8},   {"UINT16", LOOM_DTYPE_U16},
    {"UINT32", LOOM_DTYPE_U32}, {"UINT64", LOOM_DTYPE_U64},
    {"BOOL", LOOM_DTYPE_BOOL},
};

/// The deepest nesting of arrays and objects in `text` (strings skipped);
/// stops counting past `limit`.
size_t nestingDepth(const std::string &text, size_t limit) {
  size_t depth = 0, deepest = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit)
        return deepest;
    } else if ((c == ']' || c == '}') && depth) {
      --depth;
    }
  }
  return deepest;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string specString(const TensorSpec &spec) {
  std::string s =
      std::string(datatypeName(spec.dtype) ? datatypeName(spec.dtype)
                                           : loom_dtype_name(spec.dtype)) +
      "[";
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    s += i ? ", " : "";
    if (spec.dims[i] >= 0)
      s += std::to_string(spec.dims[i]);
    else
      s += spec.dimNames[i].empty() ? "?" : spec.dimNames[i];
  }
  return s + "]";
}

/// The leaves of `data` (flat or nested arrays), at most `limit` of them:
/// false when there are more.
bool collectLeaves(const json &data, size_t limit,
                   std::vector<const json *> &out) {
  if (!data.is_array()) {
    if (out.size() >= limit)
      return false;
    out.push_back(&data);
    return true;
  }
  for (const json &v : data)
    if (!collectLeaves(v, limit, out))
      return false;
  return true;
}

/// Writes `v` into element `i` of `dst` as `dtype`; false when `v` is not
/// a value of that type (a string, a fraction for an integer type, an
/// integer out of range).
bool storeElement(const json &v, loom_dtype dtype, char *dst, size_t i) {
  auto integer = [&](int64_t lo, int64_t hi, int64_t &r) {
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(hi))
        return false;
      r = static_cast<int64_t>(u);
      return true;
    }
    if (!v.is_number_integer())
      return false;
    r = v.get<int64_t>();
    return r >= lo && r <= hi;
  };
  int64_t r = 0;
  switch (dtype) {
  case LOOM_DTYPE_F32:
  case LOOM_DTYPE_F16:
  case LOOM_DTYPE_BF16:
  case LOOM_DTYPE_F64: {
    if (!v.is_number())
      return false;
    double d = v.get<double>();
    if (dtype == LOOM_DTYPE_F64) {
      std::memcpy(dst + 8 * i, &d, 8);
      return true;
    }
    float f = static_cast<float>(d);
    if (dtype == LOOM_DTYPE_F32) {
      std::memcpy(dst + 4 * i, &f, 4);
      return true;
    }
    uint16_t h = dtype == LOOM_DTYPE_F16 ? floatToF16(f) : floatToBf16(f);
    std::memcpy(dst + 2 * i, &h, 2);
    return true;
  }
  case LOOM_DTYPE_I64:
    if (!integer(std::numeric_limits<int64_t>::min(),
                 std::numeric_limits<int64_t>::max(), r))
      return false;
    std::memcpy(dst + 8 * i, &r, 8);
    return true;
  case LOOM_DTYPE_I32: {
    if (!integer(INT32_MIN, INT32_MAX, r))
      return false;
    int32_t x = static_cast<int32_t>(r);
    std::memcpy(dst + 4 * i, &x, 4);
    return true;
  }
  case LOOM_DTYPE_I16: {
    if (!integer(INT16_MIN, INT16_MAX, r))
      return false;
    int16_t x = static_cast<int16_t>(r);
    std::memcpy(dst + 2 * i, &x, 2);
    return true;
  }
  case LOOM_DTYPE_I8:
    if (!integer(INT8_MIN, INT8_MAX, r))
      return false;
    dst[i] = static_cast<char>(r);
    return true;
  case LOOM_DTYPE_U8:
    if (!integer(0, UINT8_MAX, r))
      return false;
    dst[i] = static_cast<char>(r);
    return true;
  case LOOM_DTYPE_U16: {
    if (!integer(0, UINT16_MAX, r))
      return false;
    uint16_t x = static_cast<uint16_t>(r);
    std::memcpy(dst + 2 * i, &x, 2);
    return true;
  }
  case LOOM_DTYPE_U32: {
    if (!integer(0, UINT32_MAX, r))
      return false;
    uint32_t x = static_cast<uint32_t>(r);
    std::memcpy(dst + 4 * i, &x, 4);
    return true;
  }
  case LOOM_DTYPE_U64: {
    // Beyond int64's range: only a JSON unsigned number reaches it.
    uint64_t x;
    if (v.is_number_unsigned())
      x = v.get<uint64_t>();
    else if (integer(0, std::numeric_limits<int64_t>::max(), r))
      x = static_cast<uint64_t>(r);
    else
      return false;
    std::memcpy(dst + 8 * i, &x, 8);
    return true;
  }
  case LOOM_DTYPE_BOOL:
    if (!v.is_boolean())
      return false;
    dst[i] = v.get<bool>() ? 1 : 0;
    return true;
  default:
    return false;
  }
}

/// Appends element `i` of `src` (of `dtype`) as JSON.
void appendElement(std::string &out, loom_dtype dtype, const char *src,
                   size_t i) {
  char buf[40];
  auto number = [&](auto x) {
    auto r = std::to_chars(buf, buf + sizeof(buf), x);
    out.append(buf, r.ptr);
  };
  auto real = [&](auto x) {
    if (std::isfinite(x))
      number(x);
    else
      out += "null";
  };
  switch (dtype) {
  case LOOM_DTYPE_F32: {
    float f;
    std::memcpy(&f, src + 4 * i, 4);
    real(f);
    return;
  }
  case LOOM_DTYPE_F64: {
    double d;
    std::memcpy(&d, src + 8 * i, 8);
    real(d);
    return;
  }
  case LOOM_DTYPE_F16:
  case LOOM_DTYPE_BF16: {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    real(dtype == LOOM_DTYPE_F16 ? f16ToFloat(h) : bf16ToFloat(h));
    return;
  }
  case LOOM_DTYPE_I64: {
    int64_t x;
    std::memcpy(&x, src + 8 * i, 8);
    number(x);
    return;
  }
  case LOOM_DTYPE_I32: {
    int32_t x;
    std::memcpy(&x, src + 4 * i, 4);
    number(x);
    return;
  }
  case LOOM_DTYPE_I16: {
    int16_t x;
    std::memcpy(&x, src + 2 * i, 2);
    number(x);
    return;
  }
  case LOOM_DTYPE_I8:
    number(static_cast<int>(static_cast<int8_t>(src[i])));
    return;
  case LOOM_DTYPE_U8:
    number(static_cast<int>(static_cast<uint8_t>(src[i])));
    return;
  case LOOM_DTYPE_U16: {
    uint16_t x;
    std::memcpy(&x, src + 2 * i, 2);
    number(x);
    return;
  }
  case LOOM_DTYPE_U32: {
    uint32_t x;
    std::memcpy(&x, src + 4 * i, 4);
    number(x);
    return;
  }
  case LOOM_DTYPE_U64: {
    uint64_t x;
    std::memcpy(&x, src + 8 * i, 8);
    number(x);
    return;
  }
  case LOOM_DTYPE_BOOL:
    out += src[i] ? "true" : "false";
    return;
  default:
    out += "null";
  }
}

bool fail(HttpError &error, std::string message) {
  error = {400, std::move(message)};
  return false;
}

/// The request's shape of input `name`: non-negative integers.
bool readShape(const json &shape, const std::string &name,
               std::vector<int64_t> &out, HttpError &error) {
  if (!shape.is_array())
    return fail(error, "input '" + name + "': 'shape' must be an array");
  for (const json &d : shape) {
    if (d.is_number_unsigned() &&
        d.get<uint64_t>() <=
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      out.push_back(d.get<int64_t>());
      continue;
    }
    if (d.is_number_integer() && d.get<int64_t>() >= 0) {
      out.push_back(d.get<int64_t>());
      continue;
    }
    return fail(error, "input '" + name +
                           "': 'shape' must hold non-negative integers");
  }
  return true;
}

/// Checks input `raw` against `spec` and makes its tensor.
bool readInput(const json &raw, const TensorSpec &spec, TensorPtr &out,
               HttpError &error) {
  const std::string &name = spec.name;
  auto dt = raw.find("datatype");
  if (dt == raw.end() || !dt->is_string())
    return fail(error, "input '" + name + "': 'datatype' must be a string");
  loom_dtype dtype = datatypeOf(dt->get<std::string>());
  if (dtype == LOOM_DTYPE_UNDEFINED)
    return fail(error, "input '" + name + "': unknown datatype " +
                           jsonString(dt->get<std::string>()));
  if (dtype != spec.dtype)
    return fail(error, "input '" + name + "' has datatype " +
                           datatypeName(dtype) + ", the model expects " +
                           specString(spec));
  auto sh = raw.find("shape");
  if (sh == raw.end())
    return fail(error, "input '" + name + "': 'shape' is missing");
  std::vector<int64_t> shape;
  if (!readShape(*sh, name, shape, error))
    return false;
  bool fits = shape.size() == spec.dims.size();
  for (size_t d = 0; fits && d < shape.size(); ++d)
    fits = spec.dims[d] < 0 || spec.dims[d] == shape[d];
  if (!fits)
    return fail(error, "input '" + name + "' has shape " + shapeString(shape) +
                           ", the model expects " + specString(spec));
  auto params = raw.find("parameters");
  if (params != raw.end() && params->is_object() &&
      params->contains("binary_data_size"))
    return fail(error, "input '" + name +
                           "': binary tensor data is not supported; send "
                           "'data' as JSON");
  auto data = raw.find("data");
  if (data == raw.end() || !data->is_array())
    return fail(error, "input '" + name + "': 'data' must be an array");
  // The element count the shape holds, saturating: the data bounds it
  // (the body is bounded), so nothing is allocated for a shape alone.
  size_t count = 1;
  bool overflow = false;
  for (int64_t d : shape) {
    if (d &&
        count > std::numeric_limits<size_t>::max() / 2 / static_cast<size_t>(d))
      overflow = true;
    count = overflow ? count : count * static_cast<size_t>(d);
  }
  std::vector<const json *> leaves;
  bool tooMany = overflow || !collectLeaves(*data, count, leaves);
  if (tooMany)
    return fail(error, "input '" + name +
                           "' has more data elements than its shape " +
                           shapeString(shape) + " holds");
  if (leaves.size() != count)
    return fail(error, "input '" + name + "' has " +
                           std::to_string(leaves.size()) +
                           " data elements, its shape " + shapeString(shape) +
                           " holds " + std::to_string(count));
  loom_tensor *t = nullptr;
  if (loom_status s =
          loom_tensor_create(dtype, shape.size(), shape.data(), &t)) {
    std::string message = loom_status_message(s);
    loom_status_free(s);
    return fail(error, "input '" + name + "': " + message);
  }
  out.reset(t);
  char *dst = static_cast<char *>(loom_tensor_data(t));
  for (size_t i = 0; i < count; ++i)
    if (!storeElement(*leaves[i], dtype, dst, i))
      return fail(error, "input '" + name + "': element " + std::to_string(i) +
                             " (" +
                             leaves[i]->dump(-1, ' ', false,
                                             json::error_handler_t::replace) +
                             ") is not a " + datatypeName(dtype) + " value");
  return true;
}

} // namespace

const char *datatypeName(loom_dtype dtype) {
  for (const Datatype &d : kDatatypes)
    if (d.dtype == dtype)
      return d.name;
  return nullptr;
}

loom_dtype datatypeOf(const std::string &name) {
  for (const Datatype &d : kDatatypes)
    if (name == d.name)
      return d.dtype;
  return LOOM_DTYPE_UNDEFINED;
}

std::string jsonString(const std::string &s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string errorBody(const std::string &message) {
  return "{\"error\":" + jsonString(message) + "}";
}

bool parseInferRequest(const std::string &body, const ModelSpec &model,
                       const ParseLimits &limits, InferRequest &out,
                       HttpError &error) {
  if (nestingDepth(body, limits.maxDepth) > limits.maxDepth)
    return fail(error, "the request nests deeper than " +
                           std::to_string(limits.maxDepth) + " levels");
  json doc;
  try {
    doc = json::parse(body);
  } catch (const json::exception &e) {
    return fail(error, std::string("malformed JSON: ") + e.what());
  }
  if (!doc.is_object())
    return fail(error, "the request must be a JSON object");
  if (auto id = doc.find("id"); id != doc.end()) {
    if (!id->is_string())
      return fail(error, "'id' must be a string");
    out.hasId = true;
    out.id = id->get<std::string>();
  }
  auto inputs = doc.find("inputs");
  if (inputs == doc.end() || !inputs->is_array())
    return fail(error, "'inputs' must be an array");
  out.inputs.clear();
  out.inputs.resize(model.inputs.size());
  for (const json &raw : *inputs) {
    if (!raw.is_object())
      return fail(error, "each input must be an object");
    auto nameIt = raw.find("name");
    if (nameIt == raw.end() || !nameIt->is_string())
      return fail(error, "each input needs a string 'name'");
    std::string name = nameIt->get<std::string>();
    size_t index = 0;
    while (index < model.inputs.size() && model.inputs[index].name != name)
      ++index;
    if (index == model.inputs.size()) {
      std::string known;
      for (const TensorSpec &s : model.inputs)
        known += (known.empty() ? "" : ", ") + s.name;
      return fail(error, "unknown input " + jsonString(name) + " (model '" +
                             model.name + "' takes: " + known + ")");
    }
    if (out.inputs[index])
      return fail(error, "input '" + name + "' is given twice");
    if (!readInput(raw, model.inputs[index], out.inputs[index], error))
      return false;
  }
  for (size_t i = 0; i < model.inputs.size(); ++i)
    if (!out.inputs[i])
      return fail(error, "input '" + model.inputs[i].name + "' is missing");
  // Dynamic dims that share a name agree.
  std::map<std::string, std::pair<int64_t, std::string>> symbols;
  for (size_t i = 0; i < model.inputs.size(); ++i) {
    const TensorSpec &s = model.inputs[i];
    const int64_t *shape = loom_tensor_shape(out.inputs[i].get());
    for (size_t d = 0; d < s.dims.size(); ++d) {
      if (s.dims[d] >= 0 || s.dimNames[d].empty())
        continue;
      std::string where = "input '" + s.name + "' dim " + std::to_string(d);
      auto [it, inserted] = symbols.try_emplace(s.dimNames[d], shape[d], where);
      if (!inserted && it->second.first != shape[d])
        return fail(error, "dim '" + s.dimNames[d] + "' is " +
                               std::to_string(it->second.first) + " in " +
                               it->second.second + " but " +
                               std::to_string(shape[d]) + " in " + where);
    }
  }
  out.outputs.clear();
  auto outputs = doc.find("outputs");
  if (outputs == doc.end()) {
    for (size_t i = 0; i < model.outputs.size(); ++i)
      out.outputs.push_back(i);
    return true;
  }
  if (!outputs->is_array())
    return fail(error, "'outputs' must be an array");
  for (const json &raw : *outputs) {
    auto nameIt = raw.is_object() ? raw.find("name") : raw.end();
    if (!raw.is_object() || nameIt == raw.end() || !nameIt->is_string())
      return fail(error, "each requested output needs a string 'name'");
    std::string name = nameIt->get<std::string>();
    size_t index = 0;
    while (index < model.outputs.size() && model.outputs[index].name != name)
      ++index;
    if (index == model.outputs.size())
      return fail(error, "unknown output " + jsonString(name));
    out.outputs.push_back(index);
  }
  return true;
}

std::string inferResponse(const ModelSpec &model, const InferRequest &request,
                          const std::vector<TensorPtr> &outputs) {
  std::string out = "{\"model_name\":" + jsonString(model.name);
  if (request.hasId)
    out += ",\"id\":" + jsonString(request.id);
  out += ",\"outputs\":[";
  bool first = true;
  for (size_t index : request.outputs) {
    const loom_tensor *t = outputs[index].get();
    loom_dtype dtype = loom_tensor_dtype(t);
    const char *datatype = datatypeName(dtype);
    out += first ? "{" : ",{";
    first = false;
    out += "\"name\":" + jsonString(model.outputs[index].name) +
           ",\"datatype\":\"" + (datatype ? datatype : "UNKNOWN") +
           "\",\"shape\":[";
    for (size_t d = 0; d < loom_tensor_rank(t); ++d)
      out += (d ? "," : "") + std::to_string(loom_tensor_shape(t)[d]);
    out += "],\"data\":[";
    const char *src = static_cast<const char *>(loom_tensor_data_const(t));
    size_t count = loom_tensor_element_count(t);
    out.reserve(out.size() + count * 12);
    for (size_t i = 0; i < count; ++i) {
      if (i)
        out += ',';
      appendElement(out, dtype, src, i);
    }
    out += "]}";
  }
  return out + "]}";
}

std::string modelMetadata(const ModelSpec &model) {
  auto tensors = [](const std::vector<TensorSpec> &list) {
    json arr = json::array();
    for (const TensorSpec &s : list) {
      const char *datatype = datatypeName(s.dtype);
      arr.push_back({{"name", s.name},
                     {"datatype", datatype ? datatype : "UNKNOWN"},
                     {"shape", s.dims}});
    }
    return arr;
  };
  json doc = {{"name", model.name},
              {"versions", json::array({"1"})},
              {"platform", "loom"},
              {"inputs", tensors(model.inputs)},
              {"outputs", tensors(model.outputs)}};
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace loom::serve
