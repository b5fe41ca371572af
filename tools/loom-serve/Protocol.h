//===- Protocol.h - the Open Inference Protocol v2's JSON ------*- C++ -*-===//
//
// The request and response bodies of KServe's and Triton's protocol
// ("v2"), checked against a model's signature before anything is
// allocated for them: datatypes, shapes, element counts, nesting depth.
// No HTTP here: the caller maps an error's status to its response.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOMSERVE_PROTOCOL_H
#define LOOM_TOOLS_LOOMSERVE_PROTOCOL_H

#include "loom/runtime.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace loom::serve {

struct TensorDeleter {
  void operator()(loom_tensor *t) const { loom_tensor_release(t); }
};
using TensorPtr = std::unique_ptr<loom_tensor, TensorDeleter>;

/// A request the server refuses or could not serve: an HTTP status (4xx
/// for the client's fault, 5xx for a failed run) and a message.
struct HttpError {
  int status = 0;
  std::string message;
};

/// One input or output of a model's signature.
struct TensorSpec {
  std::string name;
  loom_dtype dtype;
  std::vector<int64_t> dims; ///< -1: dynamic
  std::vector<std::string> dimNames;
};

struct ModelSpec {
  std::string name;
  std::vector<TensorSpec> inputs, outputs;
};

/// The protocol's datatype name of `dtype` ("FP32", "INT64", ...), or
/// nullptr when the protocol has none.
const char *datatypeName(loom_dtype dtype);
/// The dtype of a protocol datatype name; LOOM_DTYPE_UNDEFINED if unknown.
loom_dtype datatypeOf(const std::string &name);

/// A checked inference request: one tensor per model input, in signature
/// order, and the outputs to answer with (indices into the signature).
struct InferRequest {
  bool hasId = false;
  std::string id;
  std::vector<TensorPtr> inputs;
  std::vector<size_t> outputs;
};

struct ParseLimits {
  /// The deepest nesting of arrays and objects accepted.
  size_t maxDepth = 32;
};

/// Parses `body` as a request for `model`. Every input must be present,
/// once, with the model's datatype, rank and static dims; dynamic dims
/// sharing a name agree; `data` (flat, or nested as the shape) holds
/// exactly as many elements as the shape, each representable in the
/// datatype. On failure returns false with `error` (status 400).
bool parseInferRequest(const std::string &body, const ModelSpec &model,
                       const ParseLimits &limits, InferRequest &out,
                       HttpError &error);

/// The response body: {"model_name", "id"?, "outputs": [...]}, where
/// `outputs` holds one tensor per model output (those the request asked
/// for are written). NaN and infinities are written as null (JSON has no
/// such numbers).
std::string inferResponse(const ModelSpec &model, const InferRequest &request,
                          const std::vector<TensorPtr> &outputs);

/// GET /v2/models/NAME: name, versions, platform, inputs and outputs.
std::string modelMetadata(const ModelSpec &model);

/// {"error": message}.
std::string errorBody(const std::string &message);

/// `s` as a JSON string literal (invalid UTF-8 replaced).
std::string jsonString(const std::string &s);

} // namespace loom::serve

#endif // LOOM_TOOLS_LOOMSERVE_PROTOCOL_H
