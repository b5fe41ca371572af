//===- OnnxQuantizer.cpp - ONNX f32 model -> int8 ONNX model -------------===//
//
// Dynamic quantization on the ONNX graph itself (see OnnxQuantizer.h): the
// nodes it writes are standard ONNX (opset 11), so the result runs in ONNX
// Runtime too; Loom's importer makes each MatMulInteger a
// graph.matmul_integer, which the CPU code runs as oneDNN's int8 matmul.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxQuantizer.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <vector>

namespace loom::onnx_quantize {
namespace {

/// The float values of initializer `t` (raw_data or float_data), or why
/// not.
std::string floatsOf(const onnx::TensorProto &t, std::vector<float> &out) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return "its data is in an external file (not read by loomc quantize "
           "yet)";
  int64_t n = 1;
  for (int64_t d : t.dims())
    n *= d;
  out.resize(static_cast<size_t>(n));
  if (!t.raw_data().empty()) {
    if (t.raw_data().size() != out.size() * sizeof(float))
      return "its raw_data holds " + std::to_string(t.raw_data().size()) +
             " bytes for " + std::to_string(n) + " floats";
    std::memcpy(out.data(), t.raw_data().data(), t.raw_data().size());
    return "";
  }
  if (t.float_data_size() != n)
    return "it holds " + std::to_string(t.float_data_size()) +
           " floats for its " + std::to_string(n) + " elements";
  std::copy(t.float_data().begin(), t.float_data().end(), out.begin());
  return "";
}

/// `s` as a JSON string, quoted.
std::string jsonString(const std::string &s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::json::Value(llvm::json::isUTF8(s) ? s : llvm::json::fixUTF8(s));
  return os.str();
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

onnx::NodeProto *addNode(onnx::GraphProto &g, const std::string &op,
                         std::vector<std::string> inputs,
                         std::vector<std::string> outputs,
                         const std::string &name) {
  onnx::NodeProto *n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const std::string &i : inputs)
    n->add_input(i);
  for (const std::string &o : outputs)
    n->add_output(o);
  return n;
}

int64_t intAttr(const onnx::NodeProto &n, const char *name, int64_t dflt) {
  for (const onnx::AttributeProto &a : n.attribute())
    if (a.name() == name)
      return a.i();
  return dflt;
}

float floatAttr(const onnx::NodeProto &n, const char *name, float dflt) {
  for (const onnx::AttributeProto &a : n.attribute())
    if (a.name() == name)
      return a.f();
  return dflt;
}

} // namespace

std::string quantizeModel(onnx::ModelProto &model, const QuantizeOptions &o,
                          QuantizeReport &report) {
  if (o.mode != "dynamic")
    return o.mode == "static"
               ? "--mode static (activation scales from a calibration set) "
                 "is not implemented yet; --mode dynamic quantizes the "
                 "weights now and each activation at run time"
               : "--mode must be dynamic or static, not '" + o.mode + "'";
  llvm::Regex exclude(o.exclude);
  if (std::string why; !o.exclude.empty() && !exclude.isValid(why))
    return "--exclude '" + o.exclude + "' is not a regular expression (" + why +
           ")";
  int64_t opset = 0;
  for (const onnx::OperatorSetIdProto &id : model.opset_import())
    if (id.domain().empty() || id.domain() == "ai.onnx")
      opset = id.version();
  if (opset < 11)
    return "the model's opset is " + std::to_string(opset) +
           "; DynamicQuantizeLinear needs 11 or later (re-export the model "
           "at a newer opset)";

  onnx::GraphProto &g = *model.mutable_graph();
  std::map<std::string, int> initializers;
  for (int i = 0; i < g.initializer_size(); ++i)
    initializers[g.initializer(i).name()] = i;
  // Every name in use: new ones must not collide.
  std::set<std::string> names;
  for (const onnx::NodeProto &n : g.node())
    for (const std::string &v : n.output())
      names.insert(v);
  for (const auto &[name, i] : initializers)
    names.insert(name);
  for (const onnx::ValueInfoProto &v : g.input())
    names.insert(v.name());
  auto fresh = [&](const std::string &base) {
    std::string name = base;
    for (int k = 1; names.count(name); ++k)
      name = base + "_" + std::to_string(k);
    names.insert(name);
    return name;
  };

  std::string nodesJson, keptJson;
  auto keep = [&](const onnx::NodeProto &n, const std::string &label,
                  const std::string &why) {
    keptJson += std::string(keptJson.empty() ? "" : ",") +
                "\n    {\"node\": " + jsonString(label) +
                ", \"op\": " + jsonString(n.op_type()) +
                ", \"why\": " + jsonString(why) + "}";
    ++report.kept;
  };

  google::protobuf::RepeatedPtrField<onnx::NodeProto> old;
  old.Swap(g.mutable_node());
  std::set<std::string> replacedWeights;
  for (onnx::NodeProto &n : old) {
    bool gemm = n.op_type() == "Gemm";
    if (!(n.op_type() == "MatMul" || gemm) || !n.domain().empty()) {
      *g.add_node() = std::move(n);
      continue;
    }
    std::string label = !n.name().empty()
                            ? n.name()
                            : (n.output_size() ? n.output(0) : std::string());
    auto skip = [&](const std::string &why) {
      keep(n, label, why);
      *g.add_node() = std::move(n);
    };
    if (!o.exclude.empty() && exclude.match(label)) {
      skip("excluded by --exclude");
      continue;
    }
    if (n.input_size() < 2 || !initializers.count(n.input(1))) {
      skip("its second input is not an initializer (a weight)");
      continue;
    }
    const onnx::TensorProto &w = g.initializer(initializers[n.input(1)]);
    if (w.data_type() != onnx::TensorProto::FLOAT || w.dims_size() != 2) {
      skip("its weight is not a 2-D float tensor");
      continue;
    }
    bool transB = false;
    if (gemm) {
      if (intAttr(n, "transA", 0) || floatAttr(n, "alpha", 1.0f) != 1.0f ||
          (n.input_size() > 2 && floatAttr(n, "beta", 1.0f) != 1.0f)) {
        skip("Gemm with transA, alpha or beta other than 1");
        continue;
      }
      transB = intAttr(n, "transB", 0);
    }
    std::vector<float> values;
    if (std::string why = floatsOf(w, values); !why.empty()) {
      skip("its weight " + w.name() + ": " + why);
      continue;
    }
    // The weight as [K, N].
    int64_t rows = w.dims(0), cols = w.dims(1);
    int64_t K = transB ? cols : rows, N = transB ? rows : cols;
    auto at = [&](int64_t k, int64_t c) {
      return values[transB ? c * cols + k : k * cols + c];
    };
    int64_t groups = o.perChannel ? N : 1;
    std::vector<float> scales(static_cast<size_t>(groups), 0.0f);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < N; ++c) {
        float &s = scales[o.perChannel ? c : 0];
        s = std::max(s, std::fabs(at(k, c)));
      }
    for (float &s : scales)
      s = s > 0 && std::isfinite(s) ? s / 127.0f : 1.0f;
    std::string q(static_cast<size_t>(K * N), '\0');
    double signal = 0, noise = 0;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < N; ++c) {
        float s = scales[o.perChannel ? c : 0], v = at(k, c);
        float r = std::nearbyint(v / s);
        r = std::min(127.0f, std::max(-127.0f, r));
        q[k * N + c] = static_cast<char>(static_cast<int8_t>(r));
        signal += double(v) * v;
        noise += (double(v) - double(r) * s) * (double(v) - double(r) * s);
      }
    std::string base = label.empty() ? "matmul" : label;
    std::string wq = fresh(w.name() + "_quantized"),
                ws = fresh(w.name() + "_scale");
    onnx::TensorProto *tq = g.add_initializer();
    tq->set_name(wq);
    tq->set_data_type(onnx::TensorProto::INT8);
    tq->add_dims(K);
    tq->add_dims(N);
    tq->set_raw_data(std::move(q));
    onnx::TensorProto *ts = g.add_initializer();
    ts->set_name(ws);
    ts->set_data_type(onnx::TensorProto::FLOAT);
    if (o.perChannel)
      ts->add_dims(N);
    ts->set_raw_data(std::string(reinterpret_cast<const char *>(scales.data()),
                                 scales.size() * sizeof(float)));
    replacedWeights.insert(n.input(1));

    std::string xq = fresh(base + "_x_quantized"),
                xs = fresh(base + "_x_scale"), xz = fresh(base + "_x_zero"),
                acc = fresh(base + "_int32"), wide = fresh(base + "_f32"),
                scale = fresh(base + "_scale"), out = n.output(0);
    std::string product = gemm && n.input_size() > 2 && !n.input(2).empty()
                              ? fresh(base + "_product")
                              : out;
    addNode(g, "DynamicQuantizeLinear", {n.input(0)}, {xq, xs, xz},
            fresh(base + "_quantize"));
    addNode(g, "MatMulInteger", {xq, wq, xz}, {acc},
            fresh(base + "_matmul_integer"));
    onnx::NodeProto *cast =
        addNode(g, "Cast", {acc}, {wide}, fresh(base + "_cast"));
    onnx::AttributeProto *to = cast->add_attribute();
    to->set_name("to");
    to->set_type(onnx::AttributeProto::INT);
    to->set_i(onnx::TensorProto::FLOAT);
    addNode(g, "Mul", {xs, ws}, {scale}, fresh(base + "_scales"));
    addNode(g, "Mul", {wide, scale}, {product}, fresh(base + "_rescale"));
    if (product != out)
      addNode(g, "Add", {product, n.input(2)}, {out}, fresh(base + "_bias"));

    nodesJson += std::string(nodesJson.empty() ? "" : ",") +
                 "\n    {\"node\": " + jsonString(label) +
                 ", \"op\": " + jsonString(n.op_type()) +
                 ", \"weight\": " + jsonString(w.name()) +
                 ", \"k\": " + std::to_string(K) +
                 ", \"n\": " + std::to_string(N) +
                 ", \"per_channel\": " + (o.perChannel ? "true" : "false") +
                 ", \"scale_min\": " +
                 number(*std::min_element(scales.begin(), scales.end())) +
                 ", \"scale_max\": " +
                 number(*std::max_element(scales.begin(), scales.end())) +
                 ", \"weight_sqnr_db\": " +
                 (noise > 0 ? number(10 * std::log10(signal / noise))
                            : std::string("null")) +
                 "}";
    ++report.quantized;
  }
  // Weights no node reads any more go.
  std::set<std::string> read;
  for (const onnx::NodeProto &n : g.node())
    for (const std::string &i : n.input())
      read.insert(i);
  for (const onnx::ValueInfoProto &v : g.output())
    read.insert(v.name());
  // (An initializer listed as a graph input too is a default: it stays.)
  for (const onnx::ValueInfoProto &v : g.input())
    read.insert(v.name());
  auto *inits = g.mutable_initializer();
  inits->erase(std::remove_if(inits->begin(), inits->end(),
                              [&](const onnx::TensorProto &t) {
                                return replacedWeights.count(t.name()) &&
                                       !read.count(t.name());
                              }),
               inits->end());
  report.json = "{\n  \"mode\": " + jsonString(o.mode) +
                ",\n  \"quantized\": [" + nodesJson +
                (nodesJson.empty() ? "]" : "\n  ]") + ",\n  \"kept\": [" +
                keptJson + (keptJson.empty() ? "]" : "\n  ]") + "\n}\n";
  return "";
}

} // namespace loom::onnx_quantize
