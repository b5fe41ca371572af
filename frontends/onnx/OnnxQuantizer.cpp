//===- OnnxQuantizer.cpp - ONNX f32 model -> int8 ONNX model -------------===//
//
// Dynamic and static (QDQ) quantization on the ONNX graph itself (see
// OnnxQuantizer.h): the nodes it writes are standard ONNX, so the result
// runs in ONNX Runtime too. Loom's importer makes each MatMulInteger a
// graph.matmul_integer, and --loom-integer-matmul makes each
// DequantizeLinear -> MatMul of the QDQ form one; the CPU code runs both
// as oneDNN's int8 matmul. The static mode quantizes Conv nodes too, which
// --loom-integer-conv makes graph.conv_integer (oneDNN's int8 convolution).
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

/// An initializer of `g`: `dims`, `type` and the bytes `raw`.
void addInitializer(onnx::GraphProto &g, const std::string &name, int type,
                    std::vector<int64_t> dims, std::string raw) {
  onnx::TensorProto *t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims)
    t->add_dims(d);
  t->set_raw_data(std::move(raw));
}

std::string floatBytes(const std::vector<float> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()),
                     v.size() * sizeof(float));
}

/// The node's name in messages: its name, else its first output.
std::string labelOf(const onnx::NodeProto &n) {
  if (!n.name().empty())
    return n.name();
  return n.output_size() ? n.output(0) : std::string();
}

/// A MatMul or Gemm of the default domain.
bool isProduct(const onnx::NodeProto &n) {
  return (n.op_type() == "MatMul" || n.op_type() == "Gemm") &&
         n.domain().empty();
}

/// A Conv of the default domain.
bool isConv(const onnx::NodeProto &n) {
  return n.op_type() == "Conv" && n.domain().empty();
}

/// A node the mode quantizes when it fits (whyKept): products, and in the
/// static mode convolutions too (the dynamic mode keeps them f32, as
/// Loom's QDQ path is the one with an int8 convolution).
bool isCandidate(const onnx::NodeProto &n, bool isStatic) {
  return isProduct(n) || (isStatic && isConv(n));
}

/// Why product `n` stays f32, or "" when it is quantized.
std::string whyKept(const onnx::NodeProto &n, const onnx::GraphProto &g,
                    const std::map<std::string, int> &initializers,
                    const llvm::Regex *exclude) {
  if (exclude && exclude->match(labelOf(n)))
    return "excluded by --exclude";
  if (n.input_size() < 2 || !initializers.count(n.input(1)))
    return "its second input is not an initializer (a weight)";
  const onnx::TensorProto &w = g.initializer(initializers.at(n.input(1)));
  if (isConv(n)) {
    if (w.data_type() != onnx::TensorProto::FLOAT || w.dims_size() < 3 ||
        w.dims_size() > 5)
      return "its filter is not a 3-D to 5-D float tensor";
    return "";
  }
  if (w.data_type() != onnx::TensorProto::FLOAT || w.dims_size() != 2)
    return "its weight is not a 2-D float tensor";
  if (n.op_type() == "Gemm" &&
      (intAttr(n, "transA", 0) || floatAttr(n, "alpha", 1.0f) != 1.0f ||
       (n.input_size() > 2 && floatAttr(n, "beta", 1.0f) != 1.0f)))
    return "Gemm with transA, alpha or beta other than 1";
  return "";
}

/// A weight rounded to s8 with symmetric scales (one per output column, or
/// one), and the error that leaves.
struct QuantizedWeight {
  std::string values;
  std::vector<float> scales;
  /// The scales' initializer.
  std::string scaleName;
  int64_t k = 0, n = 0;
  double signal = 0, noise = 0;
};

/// Quantizes the rows x cols weight `values` of a product (transB: stored
/// [N, K]). The s8 values are [K, N] (`keepLayout`: the weight's layout).
QuantizedWeight quantizeWeight(const std::vector<float> &values, int64_t rows,
                               int64_t cols, bool transB, bool perChannel,
                               bool keepLayout) {
  QuantizedWeight q;
  q.k = transB ? cols : rows;
  q.n = transB ? rows : cols;
  auto source = [&](int64_t k, int64_t c) {
    return transB ? c * cols + k : k * cols + c;
  };
  q.scales.assign(static_cast<size_t>(perChannel ? q.n : 1), 0.0f);
  for (int64_t k = 0; k < q.k; ++k)
    for (int64_t c = 0; c < q.n; ++c) {
      float &s = q.scales[perChannel ? c : 0];
      s = std::max(s, std::fabs(values[source(k, c)]));
    }
  for (float &s : q.scales)
    s = s > 0 && std::isfinite(s) ? s / 127.0f : 1.0f;
  q.values.assign(static_cast<size_t>(q.k * q.n), '\0');
  for (int64_t k = 0; k < q.k; ++k)
    for (int64_t c = 0; c < q.n; ++c) {
      float s = q.scales[perChannel ? c : 0], v = values[source(k, c)];
      float r = std::nearbyint(v / s);
      r = std::min(127.0f, std::max(-127.0f, r));
      q.values[keepLayout ? source(k, c) : k * q.n + c] =
          static_cast<char>(static_cast<int8_t>(r));
      q.signal += double(v) * v;
      q.noise += (double(v) - double(r) * s) * (double(v) - double(r) * s);
    }
  return q;
}

/// The main domain's opset of `model` (0 when it has none).
int64_t opsetOf(const onnx::ModelProto &model) {
  int64_t opset = 0;
  for (const onnx::OperatorSetIdProto &id : model.opset_import())
    if (id.domain().empty() || id.domain() == "ai.onnx")
      opset = id.version();
  return opset;
}

/// --exclude compiled, or why it is not a regular expression.
std::string compileExclude(const std::string &text, llvm::Regex &exclude) {
  exclude = llvm::Regex(text);
  if (std::string why; !text.empty() && !exclude.isValid(why))
    return "--exclude '" + text + "' is not a regular expression (" + why + ")";
  return "";
}

std::map<std::string, int> initializerIndex(const onnx::GraphProto &g) {
  std::map<std::string, int> index;
  for (int i = 0; i < g.initializer_size(); ++i)
    index[g.initializer(i).name()] = i;
  return index;
}

} // namespace

void activationParams(double lo, double hi, float &scale, int &zero) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  double s = (hi - lo) / 255.0;
  if (!(s > 0) || !std::isfinite(s)) {
    scale = 1.0f;
    zero = 0;
    return;
  }
  scale = static_cast<float>(s);
  zero = static_cast<int>(
      std::min(255.0, std::max(0.0, std::nearbyint(-lo / double(scale)))));
}

std::string QuantizeReport::json() const {
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::json::OStream j(os, 2);
  auto text = [&](const char *key, const std::string &s) {
    j.attribute(key, llvm::json::isUTF8(s) ? s : llvm::json::fixUTF8(s));
  };
  auto number = [&](const char *key, double v) {
    if (std::isfinite(v))
      j.attribute(key, v);
    else
      j.attribute(key, nullptr);
  };
  j.object([&] {
    text("mode", mode);
    if (!method.empty())
      text("method", method);
    j.attributeArray("quantized", [&] {
      for (const QuantizedNode &q : nodes)
        j.object([&] {
          text("node", q.node);
          text("op", q.op);
          text("weight", q.weight);
          j.attribute("k", q.k);
          j.attribute("n", q.n);
          j.attribute("per_channel", q.perChannel);
          number("scale_min", q.scaleMin);
          number("scale_max", q.scaleMax);
          number("weight_sqnr_db", q.weightSqnr);
          if (mode != "static")
            return;
          text("activation", q.activation);
          number("activation_min", q.rangeMin);
          number("activation_max", q.rangeMax);
          number("activation_scale", q.activationScale);
          j.attribute("activation_zero_point", q.activationZero);
          text("output", q.output);
          number("output_sqnr_db", q.outputSqnr);
        });
    });
    j.attributeArray("kept", [&] {
      for (const KeptNode &k : kept)
        j.object([&] {
          text("node", k.node);
          text("op", k.op);
          text("why", k.why);
        });
    });
  });
  os << "\n";
  return out;
}

std::string findTargets(const onnx::ModelProto &model, const QuantizeOptions &o,
                        std::vector<QuantizeTarget> &targets) {
  llvm::Regex exclude;
  if (std::string why = compileExclude(o.exclude, exclude); !why.empty())
    return why;
  const onnx::GraphProto &g = model.graph();
  std::map<std::string, int> initializers = initializerIndex(g);
  for (const onnx::NodeProto &n : g.node())
    if (isCandidate(n, o.mode == "static") &&
        whyKept(n, g, initializers, o.exclude.empty() ? nullptr : &exclude)
            .empty())
      targets.push_back({labelOf(n), n.input(0), n.output(0)});
  return "";
}

std::string quantizeModel(onnx::ModelProto &model, const QuantizeOptions &o,
                          QuantizeReport &report) {
  bool isStatic = o.mode == "static";
  if (o.mode != "dynamic" && !isStatic)
    return "--mode must be dynamic or static, not '" + o.mode + "'";
  llvm::Regex exclude;
  if (std::string why = compileExclude(o.exclude, exclude); !why.empty())
    return why;
  int64_t opset = opsetOf(model);
  if (!isStatic && opset < 11)
    return "the model's opset is " + std::to_string(opset) +
           "; DynamicQuantizeLinear needs 11 or later (re-export the model "
           "at a newer opset)";
  if (isStatic && opset < 10)
    return "the model's opset is " + std::to_string(opset) +
           "; QuantizeLinear needs 10 or later (re-export the model at a "
           "newer opset)";
  if (isStatic && o.perChannel && opset < 13)
    return "the model's opset is " + std::to_string(opset) +
           "; --per-channel needs DequantizeLinear's axis, opset 13 or later "
           "(re-export the model, or quantize per tensor)";
  report.mode = o.mode;
  report.method = o.method;

  onnx::GraphProto &g = *model.mutable_graph();
  std::map<std::string, int> initializers = initializerIndex(g);
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

  google::protobuf::RepeatedPtrField<onnx::NodeProto> old;
  old.Swap(g.mutable_node());
  std::set<std::string> replacedWeights;
  // Static: each activation's dequantized name, each weight's (by name and
  // whether its output channels are its dim 0: Gemm's transB, a Conv's
  // filter) with its quantization.
  std::map<std::string, std::string> dequantizedActivations;
  std::map<std::pair<std::string, bool>,
           std::pair<std::string, QuantizedWeight>>
      dequantizedWeights;
  for (onnx::NodeProto &n : old) {
    if (!isCandidate(n, isStatic)) {
      *g.add_node() = std::move(n);
      continue;
    }
    std::string label = labelOf(n);
    auto skip = [&](const std::string &why) {
      report.kept.push_back({label, n.op_type(), why});
      *g.add_node() = std::move(n);
    };
    if (std::string why =
            whyKept(n, g, initializers, o.exclude.empty() ? nullptr : &exclude);
        !why.empty()) {
      skip(why);
      continue;
    }
    // (Initializers added below leave it where it is.)
    const onnx::TensorProto &w = g.initializer(initializers[n.input(1)]);
    bool gemm = n.op_type() == "Gemm";
    bool conv = isConv(n);
    // Whether the output channels are the weight's dim 0 (a Conv's filter
    // [O, C / group, kernel...] is read as an O x rest matrix).
    bool transB = conv || (gemm && intAttr(n, "transB", 0));
    int64_t rows = w.dims(0), cols = 1;
    for (int i = 1; i < w.dims_size(); ++i)
      cols *= w.dims(i);
    std::string base = label.empty() ? "matmul" : label;
    QuantizedNode entry;
    entry.node = label;
    entry.op = n.op_type();
    entry.weight = w.name();
    entry.perChannel = o.perChannel;
    entry.output = n.output(0);

    const QuantizedWeight *q = nullptr;
    std::string wq;
    auto known = dequantizedWeights.find({w.name(), transB});
    if (known != dequantizedWeights.end()) {
      wq = known->second.first;
      q = &known->second.second;
    } else {
      std::vector<float> values;
      if (std::string why = floatsOf(w, values); !why.empty()) {
        skip("its weight " + w.name() + ": " + why);
        continue;
      }
      QuantizedWeight made =
          quantizeWeight(values, rows, cols, transB, o.perChannel,
                         /*keepLayout=*/isStatic);
      std::vector<int64_t> perColumn;
      if (o.perChannel)
        perColumn.push_back(made.n);
      std::string ws = fresh(w.name() + "_scale");
      made.scaleName = ws;
      wq = fresh(w.name() + "_quantized");
      addInitializer(g, ws, onnx::TensorProto::FLOAT, perColumn,
                     floatBytes(made.scales));
      if (isStatic) {
        std::string wz = fresh(w.name() + "_zero_point"),
                    wdq = fresh(w.name() + "_dequantized");
        addInitializer(g, wq, onnx::TensorProto::INT8,
                       std::vector<int64_t>(w.dims().begin(), w.dims().end()),
                       std::move(made.values));
        addInitializer(g, wz, onnx::TensorProto::INT8, perColumn,
                       std::string(o.perChannel ? made.n : 1, '\0'));
        onnx::NodeProto *dq =
            addNode(g, "DequantizeLinear", {wq, ws, wz}, {wdq},
                    fresh(w.name() + "_DequantizeLinear"));
        if (o.perChannel) {
          onnx::AttributeProto *axis = dq->add_attribute();
          axis->set_name("axis");
          axis->set_type(onnx::AttributeProto::INT);
          axis->set_i(transB ? 0 : 1);
        }
        wq = wdq;
      } else {
        addInitializer(g, wq, onnx::TensorProto::INT8, {made.k, made.n},
                       std::move(made.values));
      }
      auto &slot = dequantizedWeights[{w.name(), transB}];
      slot = {wq, std::move(made)};
      q = &slot.second;
    }
    replacedWeights.insert(n.input(1));
    entry.k = q->k;
    entry.n = q->n;
    entry.scaleMin = *std::min_element(q->scales.begin(), q->scales.end());
    entry.scaleMax = *std::max_element(q->scales.begin(), q->scales.end());
    if (q->noise > 0)
      entry.weightSqnr = 10 * std::log10(q->signal / q->noise);

    if (isStatic) {
      const std::string &x = n.input(0);
      auto range = o.ranges.find(x);
      if (range == o.ranges.end())
        return "node " + label + ": its input " + x +
               " has no calibrated range";
      entry.activation = x;
      entry.rangeMin = range->second.first;
      entry.rangeMax = range->second.second;
      float scale = 1.0f;
      activationParams(entry.rangeMin, entry.rangeMax, scale,
                       entry.activationZero);
      entry.activationScale = scale;
      std::string &xdq = dequantizedActivations[x];
      if (xdq.empty()) {
        std::string xs = fresh(x + "_scale"), xz = fresh(x + "_zero_point"),
                    xq = fresh(x + "_quantized");
        xdq = fresh(x + "_dequantized");
        addInitializer(g, xs, onnx::TensorProto::FLOAT, {},
                       floatBytes({scale}));
        addInitializer(g, xz, onnx::TensorProto::UINT8, {},
                       std::string(1, static_cast<char>(entry.activationZero)));
        addNode(g, "QuantizeLinear", {x, xs, xz}, {xq},
                fresh(x + "_QuantizeLinear"));
        addNode(g, "DequantizeLinear", {xq, xs, xz}, {xdq},
                fresh(x + "_DequantizeLinear"));
      }
      n.set_input(0, xdq);
      n.set_input(1, wq);
      *g.add_node() = std::move(n);
    } else {
      const std::string &ws = q->scaleName;
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
    }
    report.nodes.push_back(std::move(entry));
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
  return "";
}

} // namespace loom::onnx_quantize
