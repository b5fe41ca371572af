//===- ServeProtocolTest.cpp - loom-serve's request and response JSON -----===//
//
// Every datatype through parseInferRequest and inferResponse (the lit test
// serve/serve.test drives FP32 over HTTP), and the checks that refuse a
// request before anything is allocated. No compiler, no server.
//
//===----------------------------------------------------------------------===//

#include "tools/loom-serve/Protocol.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace loom::serve;

namespace {

/// A model of one input `x` of `dtype` and shape [-1 (batch), 2], with
/// output `y` alike.
ModelSpec model(loom_dtype dtype) {
  ModelSpec m;
  m.name = "m";
  m.inputs.push_back({"x", dtype, {-1, 2}, {"batch", ""}});
  m.outputs.push_back({"y", dtype, {-1, 2}, {"batch", ""}});
  return m;
}

std::string request(const std::string &datatype, const std::string &data,
                    const std::string &shape = "[2, 2]") {
  return R"({"id": "r", "inputs": [{"name": "x", "shape": )" + shape +
         R"(, "datatype": ")" + datatype + R"(", "data": )" + data + "}]}";
}

/// Parses `body` for `m`; the error message when it fails.
std::string parse(const ModelSpec &m, const std::string &body,
                  InferRequest &out) {
  HttpError error;
  if (parseInferRequest(body, m, ParseLimits(), out, error))
    return "";
  EXPECT_EQ(error.status, 400);
  return error.message;
}

/// The response of echoing the request's input as the output.
std::string echo(const ModelSpec &m, InferRequest &req) {
  std::vector<TensorPtr> outputs;
  outputs.push_back(std::move(req.inputs[0]));
  return inferResponse(m, req, outputs);
}

TEST(ServeProtocolTest, EveryDatatypeRoundTrips) {
  struct Case {
    loom_dtype dtype;
    const char *name, *data, *expect;
  } cases[] = {
      {LOOM_DTYPE_F32, "FP32", "[0.1, -2, 3.5, 1e30]", "[0.1,-2,3.5,1e+30]"},
      {LOOM_DTYPE_F64, "FP64", "[0.1, -2, 3.5, 1e300]", "[0.1,-2,3.5,1e+300]"},
      // 16-bit floats round to nearest even: 0.1 is not exact.
      {LOOM_DTYPE_F16, "FP16", "[0.5, -2, 65504, 1e9]", "[0.5,-2,65504,null]"},
      {LOOM_DTYPE_BF16, "BF16", "[0.5, -2, 3, 1.00390625]", "[0.5,-2,3,1]"},
      {LOOM_DTYPE_I64, "INT64",
       "[-9223372036854775808, 9223372036854775807, 0, 1]",
       "[-9223372036854775808,9223372036854775807,0,1]"},
      {LOOM_DTYPE_I32, "INT32", "[-2147483648, 2147483647, 0, 1]",
       "[-2147483648,2147483647,0,1]"},
      {LOOM_DTYPE_I16, "INT16", "[-32768, 32767, 0, 1]", "[-32768,32767,0,1]"},
      {LOOM_DTYPE_I8, "INT8", "[-128, 127, 0, 1]", "[-128,127,0,1]"},
      {LOOM_DTYPE_U8, "UINT8", "[0, 255, 7, 1]", "[0,255,7,1]"},
      {LOOM_DTYPE_U16, "UINT16", "[0, 65535, 7, 1]", "[0,65535,7,1]"},
      {LOOM_DTYPE_U32, "UINT32", "[0, 4294967295, 7, 1]", "[0,4294967295,7,1]"},
      {LOOM_DTYPE_U64, "UINT64", "[0, 18446744073709551615, 7, 1]",
       "[0,18446744073709551615,7,1]"},
      {LOOM_DTYPE_BOOL, "BOOL", "[true, false, false, true]",
       "[true,false,false,true]"},
  };
  for (const Case &c : cases) {
    ModelSpec m = model(c.dtype);
    InferRequest req;
    ASSERT_EQ(parse(m, request(c.name, c.data), req), "") << c.name;
    EXPECT_EQ(datatypeOf(c.name), c.dtype);
    std::string body = echo(m, req);
    EXPECT_EQ(body, std::string(R"({"model_name":"m","id":"r","outputs":[)") +
                        R"({"name":"y","datatype":")" + c.name +
                        R"(","shape":[2,2],"data":)" + c.expect + "}]}")
        << c.name;
  }
}

TEST(ServeProtocolTest, NestedDataIsFlattened) {
  ModelSpec m = model(LOOM_DTYPE_F32);
  InferRequest req;
  ASSERT_EQ(parse(m, request("FP32", "[[1, 2], [3, 4]]"), req), "");
  const float *x =
      static_cast<const float *>(loom_tensor_data_const(req.inputs[0].get()));
  EXPECT_EQ(x[0], 1);
  EXPECT_EQ(x[3], 4);
}

TEST(ServeProtocolTest, ValuesOutsideTheDatatypeAreRefused) {
  struct Case {
    loom_dtype dtype;
    const char *name, *data, *message;
  } cases[] = {
      {LOOM_DTYPE_I8, "INT8", "[128, 0, 0, 0]", "element 0 (128)"},
      {LOOM_DTYPE_U8, "UINT8", "[0, -1, 0, 0]", "element 1 (-1)"},
      {LOOM_DTYPE_I32, "INT32", "[0, 0, 1.5, 0]", "element 2 (1.5)"},
      {LOOM_DTYPE_I64, "INT64", "[0, 0, 0, 9223372036854775808]", "element 3"},
      {LOOM_DTYPE_BOOL, "BOOL", "[1, true, true, true]", "element 0 (1)"},
      {LOOM_DTYPE_F32, "FP32", "[null, 0, 0, 0]", "element 0 (null)"},
      {LOOM_DTYPE_F32, "FP32", "[[1, 2], {\"a\": 3}, 4]", "is not a FP32"},
  };
  for (const Case &c : cases) {
    InferRequest req;
    std::string message = parse(model(c.dtype), request(c.name, c.data), req);
    EXPECT_NE(message.find(c.message), std::string::npos)
        << c.name << ": " << message;
  }
}

TEST(ServeProtocolTest, ShapesAreCheckedBeforeAllocating) {
  ModelSpec m = model(LOOM_DTYPE_F32);
  InferRequest req;
  // A shape far beyond the data: refused by count, nothing allocated.
  EXPECT_EQ(
      parse(m, request("FP32", "[1, 2]", "[4611686018427387904, 2]"), req),
      "input 'x' has more data elements than its shape "
      "[4611686018427387904, 2] holds");
  EXPECT_EQ(parse(m, request("FP32", "[1, 2]", "[1000000000, 2]"), req),
            "input 'x' has 2 data elements, its shape [1000000000, 2] holds "
            "2000000000");
  EXPECT_EQ(parse(m, request("FP32", "[1, 2]", "[1, 2.5]"), req),
            "input 'x': 'shape' must hold non-negative integers");
  EXPECT_EQ(parse(m, request("FP32", "[]", "[0, 2]"), req), "");
  EXPECT_EQ(parse(m, request("FP32", "[1, 2]", "[2]"), req),
            "input 'x' has shape [2], the model expects FP32[batch, 2]");
}

TEST(ServeProtocolTest, HostileDocumentsAreRefused) {
  ModelSpec m = model(LOOM_DTYPE_F32);
  InferRequest req;
  std::string deep(100000, '[');
  EXPECT_EQ(parse(m, deep, req), "the request nests deeper than 32 levels");
  // Brackets inside strings do not count as nesting.
  std::string quoted = R"({"id": ")" + std::string(1000, '[') +
                       R"(", "inputs": [{"name": "x", "shape": [1, 2],)"
                       R"( "datatype": "FP32", "data": [1, 2]}]})";
  EXPECT_EQ(parse(m, quoted, req), "");
  EXPECT_NE(parse(m, "", req).find("malformed JSON"), std::string::npos);
  EXPECT_NE(parse(m, "{\"inputs\": [}", req).find("malformed JSON"),
            std::string::npos);
  EXPECT_EQ(parse(m, "[]", req), "the request must be a JSON object");
  EXPECT_EQ(parse(m, R"({"id": 5, "inputs": []})", req),
            "'id' must be a string");
  // A name that is not UTF-8 is reported, not thrown.
  std::string bad = "{\"inputs\": [{\"name\": \"\xff\"}]}";
  EXPECT_NE(parse(m, bad, req).find("malformed JSON"), std::string::npos);
  EXPECT_EQ(errorBody("a \"quoted\" \xff name"),
            "{\"error\":\"a \\\"quoted\\\" \xEF\xBF\xBD name\"}");
}

TEST(ServeProtocolTest, NamedDimsAgreeAcrossInputs) {
  ModelSpec m = model(LOOM_DTYPE_F32);
  m.inputs.push_back({"z", LOOM_DTYPE_F32, {-1}, {"batch"}});
  InferRequest req;
  std::string body =
      R"({"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32",)"
      R"( "data": [1, 2]}, {"name": "z", "shape": [2], "datatype": "FP32",)"
      R"( "data": [1, 2]}]})";
  EXPECT_EQ(parse(m, body, req),
            "dim 'batch' is 1 in input 'x' dim 0 but 2 in input 'z' dim 0");
}

TEST(ServeProtocolTest, MetadataHasDynamicDimsAsMinusOne) {
  EXPECT_EQ(modelMetadata(model(LOOM_DTYPE_I64)),
            R"({"inputs":[{"datatype":"INT64","name":"x","shape":[-1,2]}],)"
            R"("name":"m","outputs":[{"datatype":"INT64","name":"y",)"
            R"("shape":[-1,2]}],"platform":"loom","versions":["1"]})");
}

} // namespace
