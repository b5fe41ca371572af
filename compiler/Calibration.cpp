//===- Calibration.cpp - an ONNX model run on calibration data ------------===//

#include "compiler/Calibration.h"

#include "compiler/Compile.h"
#include "frontends/onnx/OnnxImporter.h"
#include "loom/common/DType.h"

#include <onnx/onnx_pb.h>

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

using llvm::StringRef;

namespace loom::calibration {
namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// "[40, 64]"; a dynamic dim (-1) is "?".
std::string shapeText(llvm::ArrayRef<int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + (dims[i] < 0 ? "?" : std::to_string(dims[i]));
  return s + "]";
}

/// "[S, 8, 64]": `dims` after a dim of S samples.
std::string samplesFirst(llvm::ArrayRef<int64_t> dims) {
  return dims.empty() ? "[S]" : "[S, " + shapeText(dims).substr(1);
}

/// The graph inputs that are not initializers (defaults).
std::vector<const onnx::ValueInfoProto *>
graphInputs(const onnx::GraphProto &g) {
  std::set<std::string> initializers;
  for (const onnx::TensorProto &t : g.initializer())
    initializers.insert(t.name());
  std::vector<const onnx::ValueInfoProto *> inputs;
  for (const onnx::ValueInfoProto &v : g.input())
    if (!initializers.count(v.name()))
      inputs.push_back(&v);
  return inputs;
}

/// The last line of `path` that holds something (a tool's error).
std::string lastLine(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return "";
  llvm::SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (!it->trim().empty())
      return it->trim().str();
  return "";
}

/// `model` with `shapes` for its graph inputs and `tensors` (through
/// Identity nodes) as its only outputs, named `observed`.
onnx::ModelProto observing(const onnx::ModelProto &model,
                           const std::vector<std::vector<int64_t>> &shapes,
                           const std::vector<std::string> &tensors,
                           std::vector<std::string> &observed) {
  onnx::ModelProto copy = model;
  onnx::GraphProto &g = *copy.mutable_graph();
  std::set<std::string> names;
  for (const onnx::NodeProto &n : g.node())
    for (const std::string &v : n.output())
      names.insert(v);
  for (const onnx::ValueInfoProto &v : g.input())
    names.insert(v.name());
  std::set<std::string> initializers;
  for (const onnx::TensorProto &t : g.initializer())
    initializers.insert(t.name());
  size_t i = 0;
  for (onnx::ValueInfoProto &v : *g.mutable_input()) {
    if (initializers.count(v.name()))
      continue;
    onnx::TypeProto::Tensor *type = v.mutable_type()->mutable_tensor_type();
    type->clear_shape();
    for (int64_t d : shapes[i++])
      type->mutable_shape()->add_dim()->set_dim_value(d);
  }
  // The intermediate types were inferred for the model's own shapes.
  g.clear_value_info();
  g.clear_output();
  observed.clear();
  for (size_t k = 0; k < tensors.size(); ++k) {
    std::string name = "loom_observed_" + std::to_string(k);
    while (names.count(name))
      name += "_";
    names.insert(name);
    onnx::NodeProto *n = g.add_node();
    n->set_op_type("Identity");
    n->set_name(name);
    n->add_input(tensors[k]);
    n->add_output(name);
    onnx::ValueInfoProto *out = g.add_output();
    out->set_name(name);
    out->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::FLOAT);
    observed.push_back(name);
  }
  return copy;
}

/// A tensor's statistics: its extremes and, for the percentile method, a
/// histogram over [histLo, histHi] that widens (rebinning what it holds)
/// when a batch goes past it.
struct Statistics {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  std::vector<double> counts;
  double histLo = 0, histHi = 0;

  void add(const float *v, size_t n, bool histogram) {
    double bLo = std::numeric_limits<double>::infinity(), bHi = -bLo;
    for (size_t i = 0; i < n; ++i)
      if (std::isfinite(v[i])) {
        bLo = std::min(bLo, double(v[i]));
        bHi = std::max(bHi, double(v[i]));
      }
    if (bLo > bHi)
      return;
    lo = std::min(lo, bLo);
    hi = std::max(hi, bHi);
    if (!histogram)
      return;
    if (counts.empty()) {
      counts.assign(kHistogramBins, 0);
      histLo = bLo;
      histHi = bHi;
    } else if (bLo < histLo || bHi > histHi) {
      std::vector<double> old(kHistogramBins, 0);
      old.swap(counts);
      double oldLo = histLo, oldWidth = (histHi - histLo) / kHistogramBins;
      histLo = std::min(histLo, bLo);
      histHi = std::max(histHi, bHi);
      for (int i = 0; i < kHistogramBins; ++i)
        if (old[i])
          counts[bin(oldLo + (i + 0.5) * oldWidth)] += old[i];
    }
    for (size_t i = 0; i < n; ++i)
      if (std::isfinite(v[i]))
        counts[bin(v[i])] += 1;
  }

  /// The entropy method's second pass: a histogram over [-t, t], t the
  /// largest magnitude the first pass saw (ONNX Runtime's bins: numpy's
  /// histogram of x with that range).
  void addSymmetric(const float *v, size_t n) {
    if (counts.empty()) {
      counts.assign(kHistogramBins, 0);
      histHi = std::max(std::fabs(lo), std::fabs(hi));
      histLo = -histHi;
    }
    if (!(histHi > 0))
      return;
    double width = (histHi - histLo) / kHistogramBins;
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(v[i]))
        continue;
      double x = v[i];
      int b = std::clamp(static_cast<int>(std::floor((x - histLo) / width)), 0,
                         kHistogramBins - 1);
      // The bin whose edges hold x, as numpy corrects its division.
      if (b > 0 && x < histLo + b * width)
        --b;
      else if (b < kHistogramBins - 1 && x >= histLo + (b + 1) * width)
        ++b;
      counts[b] += 1;
    }
  }

  int bin(double v) const {
    double width = (histHi - histLo) / kHistogramBins;
    if (!(width > 0))
      return 0;
    return std::clamp(static_cast<int>((v - histLo) / width), 0,
                      kHistogramBins - 1);
  }

  /// The range: the extremes, or the values between the tails that hold
  /// (100 - percentile) / 2 percent each.
  std::pair<float, float> range(bool histogram, double percentile) const {
    if (lo > hi)
      return {0.0f, 0.0f};
    if (!histogram || counts.empty())
      return {float(lo), float(hi)};
    double total = 0;
    for (double c : counts)
      total += c;
    double cut = total * (100.0 - percentile) / 200.0;
    double width = (histHi - histLo) / kHistogramBins;
    int left = 0, right = kHistogramBins - 1;
    for (double seen = 0; left < kHistogramBins - 1; ++left)
      if ((seen += counts[left]) > cut)
        break;
    for (double seen = 0; right > 0; --right)
      if ((seen += counts[right]) > cut)
        break;
    double rLo = std::max(lo, histLo + left * width);
    double rHi = std::min(hi, histLo + (right + 1) * width);
    if (rLo > rHi)
      return {float(lo), float(hi)};
    return {float(rLo), float(rHi)};
  }
};

/// ONNX Runtime's `smooth_distribution`: each zero count becomes `eps`,
/// taken evenly off the nonzero ones. False when all are zero.
bool smooth(std::vector<double> &p, double eps = 1e-4) {
  size_t zeros = llvm::count(p, 0.0);
  if (zeros == p.size())
    return false;
  double take = eps * double(zeros) / double(p.size() - zeros);
  for (double &v : p)
    v = v == 0 ? eps : v - take;
  return true;
}

/// KL(p || q) of the two normalized (scipy.stats.entropy).
double klDivergence(llvm::ArrayRef<double> p, llvm::ArrayRef<double> q) {
  double sp = 0, sq = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    sp += p[i];
    sq += q[i];
  }
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0)
      kl += p[i] / sp * std::log((p[i] / sp) / (q[i] / sq));
  return kl;
}

} // namespace

std::pair<float, float> entropyRange(llvm::ArrayRef<double> counts,
                                     double threshold, double lo, double hi,
                                     int quantizedBins) {
  int bins = static_cast<int>(counts.size());
  int zero = bins / 2, half = quantizedBins / 2;
  if (!(threshold > 0) || lo > hi || half < 1 || zero < half)
    return lo > hi ? std::pair<float, float>{0.0f, 0.0f}
                   : std::pair<float, float>{float(lo), float(hi)};
  // prefix[k]: the counts of the bins before k.
  std::vector<double> prefix(bins + 1, 0);
  for (int k = 0; k < bins; ++k)
    prefix[k + 1] = prefix[k] + counts[k];
  double width = 2 * threshold / bins;
  auto edge = [&](int k) {
    return k == bins ? threshold : -threshold + k * width;
  };
  double best = std::numeric_limits<double>::infinity();
  int bestStart = 0, bestEnd = bins;
  std::vector<double> p, q, merged(quantizedBins);
  for (int i = half; i <= zero; ++i) {
    int start = zero - i, end = std::min(zero + i + 1, bins),
        size = end - start;
    // P: the window, the outliers clipped into its end bins.
    p.assign(counts.begin() + start, counts.begin() + end);
    p.front() += prefix[start];
    p.back() += prefix[bins] - prefix[end];
    // Q: the window (without the outliers) merged into quantizedBins
    // levels of `per` bins, the remainder into the last level; each
    // level's count spread in whole counts over the bins of its `per`
    // where P is nonzero (ORT's integer array; the remainder's bins get
    // none, as in ORT).
    int per = size / quantizedBins;
    for (int l = 0; l < quantizedBins; ++l)
      merged[l] = prefix[start + (l + 1) * per] - prefix[start + l * per];
    merged.back() += prefix[end] - prefix[start + quantizedBins * per];
    q.assign(size, 0);
    for (int l = 0; l < quantizedBins; ++l) {
      int nonzero = 0;
      for (int b = l * per; b < (l + 1) * per; ++b)
        nonzero += p[b] != 0;
      if (nonzero)
        std::fill(q.begin() + l * per, q.begin() + (l + 1) * per,
                  std::floor(merged[l] / nonzero));
    }
    double kl = smooth(p) && smooth(q)
                    ? klDivergence(p, q)
                    : std::numeric_limits<double>::infinity();
    if (kl < best) {
      best = kl;
      bestStart = start;
      bestEnd = end;
    }
  }
  return {float(std::max(edge(bestStart), lo)),
          float(std::min(edge(bestEnd), hi))};
}

Runner::~Runner() {
  if (!dir_.empty())
    llvm::sys::fs::remove_directories(dir_);
}

llvm::Expected<std::unique_ptr<Runner>>
Runner::create(const CalibrationOptions &options,
               const onnx::ModelProto &model) {
  std::unique_ptr<Runner> r(new Runner());
  r->options_ = options;
  const std::string &file = options.data;
  std::vector<std::pair<std::string, files::MappedTensor>> arrays;
  std::string why;
  if (!files::mapNpz(file, arrays, why))
    return error("--calibration: " + why);
  std::vector<const onnx::ValueInfoProto *> inputs = graphInputs(model.graph());
  std::vector<std::string> names;
  for (const onnx::ValueInfoProto *v : inputs)
    names.push_back(v->name());
  std::string listed = llvm::join(names, ", ");
  for (const std::string &name : names)
    if (!llvm::any_of(arrays, [&](const auto &a) { return a.first == name; }))
      return error("calibration data " + file + " has no array '" + name +
                   "' (the model's inputs: " + listed + ")");
  for (const auto &[name, array] : arrays)
    if (!llvm::is_contained(names, name))
      return error(
          "calibration data " + file + " holds '" + name +
          "', which is not an input of the model (its inputs: " + listed + ")");
  // The model's dims of each input (-1: dynamic; none: no shape given).
  std::vector<std::vector<int64_t>> dims(inputs.size());
  std::vector<bool> shaped(inputs.size(), false);
  r->batched_ = true;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const onnx::TypeProto::Tensor &t = inputs[i]->type().tensor_type();
    auto it = llvm::find_if(
        arrays, [&](const auto &a) { return a.first == inputs[i]->name(); });
    if (it->second.dtype != t.elem_type())
      return error("calibration data " + file + ": '" + it->first + "' is " +
                   dtypes::nameOf(it->second.dtype) + ", the model's input " +
                   "is " + dtypes::nameOf(t.elem_type()));
    shaped[i] = t.has_shape();
    for (const onnx::TensorShapeProto::Dimension &d : t.shape().dim())
      dims[i].push_back(d.has_dim_value() && d.dim_value() > 0 ? d.dim_value()
                                                               : -1);
    r->inputs_.push_back({it->first, std::move(it->second), true});
    const std::vector<int64_t> &have = r->inputs_.back().data.shape;
    if (shaped[i] &&
        (dims[i].empty() || dims[i][0] >= 0 || have.size() != dims[i].size()))
      r->batched_ = false;
  }
  // Each array's samples, checked against the input's dims.
  for (size_t i = 0; i < inputs.size(); ++i) {
    Input &in = r->inputs_[i];
    const std::vector<int64_t> &have = in.data.shape;
    auto fits = [&](size_t skip) {
      if (!shaped[i])
        return !have.empty();
      if (have.size() != dims[i].size() + skip)
        return false;
      for (size_t d = 0; d < dims[i].size(); ++d)
        if (dims[i][d] >= 0 && have[d + skip] != dims[i][d])
          return false;
      return true;
    };
    if (r->batched_ ? !fits(0) : !fits(1)) {
      if (!r->batched_ && fits(0)) {
        in.sampled = false; // one sample, the whole array
      } else {
        // The forms that fit: S samples first, or along a dynamic dim 0.
        std::string want = samplesFirst(dims[i]);
        if (!dims[i].empty() && dims[i][0] < 0)
          want = samplesFirst(llvm::ArrayRef(dims[i]).drop_front()) + " or " +
                 want;
        return error("calibration data " + file + ": '" + in.name + "' is " +
                     shapeText(have) + ", the model's input is " +
                     shapeText(dims[i]) + ": give " + want + " for S samples");
      }
    }
    int64_t samples = in.sampled ? have[0] : 1;
    if (i == 0)
      r->samples_ = samples;
    else if (samples != r->samples_)
      return error("calibration data " + file + ": '" + in.name + "' holds " +
                   std::to_string(samples) + " samples, '" +
                   r->inputs_[0].name + "' " + std::to_string(r->samples_));
  }
  if (inputs.empty())
    return error("the model has no inputs to calibrate with");
  if (r->samples_ <= 0)
    return error("calibration data " + file + " holds no samples");
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("loomc-calibration", dir))
    return error("cannot create a temporary folder: " + ec.message());
  r->dir_ = dir.str().str();
  return std::move(r);
}

std::vector<std::vector<int64_t>> Runner::shapes(int64_t count) const {
  std::vector<std::vector<int64_t>> shapes;
  for (const Input &in : inputs_) {
    std::vector<int64_t> s = in.data.shape;
    if (batched_)
      s[0] = count;
    else if (in.sampled)
      s.erase(s.begin());
    shapes.push_back(std::move(s));
  }
  return shapes;
}

llvm::Error Runner::run(
    mlir::MLIRContext &ctx, llvm::ArrayRef<const onnx::ModelProto *> models,
    llvm::ArrayRef<std::vector<std::string>> tensors,
    llvm::function_ref<
        llvm::Error(std::vector<std::vector<files::HostTensor>> &values)>
        visit) {
  int64_t step = batched_ ? kBatchSamples : 1;
  // The fingerprint of each model's observing copy (the same for every
  // batch size).
  std::vector<uint64_t> keys;
  for (size_t m = 0; m < models.size(); ++m) {
    std::vector<std::string> names;
    std::string bytes =
        observing(*models[m], shapes(1), tensors[m], names).SerializeAsString();
    keys.push_back(llvm::xxh3_64bits(llvm::arrayRefFromStringRef(bytes)));
  }
  // By model and batch size: the artifact and its outputs' names.
  auto compile = [&](size_t m, int64_t count) -> llvm::Error {
    auto &[path, observed] = compiled_[{keys[m], count}];
    if (!path.empty())
      return llvm::Error::success();
    onnx::ModelProto copy =
        observing(*models[m], shapes(count), tensors[m], observed);
    onnx_import::ImportOptions import;
    import.modelDir = options_.modelDir;
    // The model's own warnings were the user's to see when it compiled;
    // errors still go through.
    mlir::ScopedDiagnosticHandler quiet(&ctx, [](mlir::Diagnostic &d) {
      return mlir::success(d.getSeverity() != mlir::DiagnosticSeverity::Error);
    });
    auto module = onnx_import::importModel(ctx, copy, import);
    CompileOptions options;
    std::string target =
        dir_ + "/model" + std::to_string(compiled_.size()) + ".loom";
    options.outputPath = target;
    std::string bytes;
    if (failed(module) || failed(compileToArtifact(**module, options, bytes)))
      return error("cannot compile the model for calibration (the errors "
                   "are above)");
    path = target;
    return llvm::Error::success();
  };
  for (int64_t start = 0; start < samples_; start += step) {
    int64_t count = std::min(step, samples_ - start);
    std::string which = count == 1 ? "sample " + std::to_string(start)
                                   : "samples " + std::to_string(start) + "-" +
                                         std::to_string(start + count - 1);
    // The batch's inputs.
    std::vector<std::string> args;
    std::vector<std::vector<int64_t>> batchShapes = shapes(count);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Input &in = inputs_[i];
      size_t offset = in.sampled
                          ? in.data.bytes / static_cast<size_t>(samples_) *
                                static_cast<size_t>(start)
                          : 0;
      std::string path = dir_ + "/input" + std::to_string(i) + ".npy", why;
      files::TensorView view{in.data.dtype, batchShapes[i].data(),
                             batchShapes[i].size(), in.data.data + offset};
      if (!files::writeNpy(path, view, why))
        return error(why);
      args.push_back("--in");
      args.push_back(in.name + "=" + path);
    }
    std::vector<std::vector<files::HostTensor>> values(models.size());
    for (size_t m = 0; m < models.size(); ++m) {
      if (llvm::Error e = compile(m, count))
        return e;
      const auto &[artifact, observed] = compiled_[{keys[m], count}];
      std::string out = dir_ + "/out" + std::to_string(m),
                  log = dir_ + "/loom-run.log";
      llvm::sys::fs::create_directories(out);
      std::vector<StringRef> argv = {options_.loomRun, artifact};
      for (const std::string &a : args)
        argv.push_back(a);
      argv.push_back("--out-dir");
      argv.push_back(out);
      std::optional<StringRef> redirects[] = {StringRef(""), StringRef(log),
                                              StringRef(log)};
      std::string message;
      int rc = llvm::sys::ExecuteAndWait(options_.loomRun, argv, std::nullopt,
                                         redirects, 0, 0, &message);
      ++runs_;
      if (rc == -1)
        return error("cannot run " + options_.loomRun + ": " + message);
      if (rc != 0) {
        // Its error, or the signal that ended it.
        std::string said = rc < 0 ? message : lastLine(log);
        return error("loom-run failed on calibration " + which + " of " +
                     options_.data +
                     (rc > 0 ? " (exit " + std::to_string(rc) + ")" : "") +
                     (said.empty() ? "" : ": " + said));
      }
      for (const std::string &name : observed) {
        files::HostTensor t;
        std::string why;
        if (!files::readNpy(out + "/" + name + ".npy", t, why))
          return error("loom-run's output: " + why);
        if (t.dtype != dtypes::kF32)
          return error("loom-run's output " + name + " is " +
                       dtypes::nameOf(t.dtype) + ", not f32");
        values[m].push_back(std::move(t));
      }
    }
    if (llvm::Error e = visit(values))
      return e;
  }
  return llvm::Error::success();
}

llvm::Error calibrate(mlir::MLIRContext &ctx, Runner &runner,
                      const CalibrationOptions &options,
                      const onnx::ModelProto &model,
                      const std::vector<std::string> &tensors,
                      std::map<std::string, std::pair<float, float>> &ranges) {
  bool histogram = options.method == "percentile";
  bool entropy = options.method == "entropy";
  std::vector<Statistics> stats(tensors.size());
  // The extremes (and the percentile method's histogram); the entropy
  // method's histogram, over the extremes' largest magnitude, takes a
  // second pass, as ORT's calibrator bins all the values at once.
  for (bool second : {false, true}) {
    if (second && !entropy)
      break;
    llvm::Error e =
        runner.run(ctx, {&model}, {tensors},
                   [&](std::vector<std::vector<files::HostTensor>> &values) {
                     for (size_t k = 0; k < tensors.size(); ++k) {
                       const files::HostTensor &t = values[0][k];
                       const float *v =
                           reinterpret_cast<const float *>(t.bytes.data());
                       size_t n = t.bytes.size() / sizeof(float);
                       if (second)
                         stats[k].addSymmetric(v, n);
                       else
                         stats[k].add(v, n, histogram);
                     }
                     return llvm::Error::success();
                   });
    if (e)
      return e;
  }
  for (size_t k = 0; k < tensors.size(); ++k) {
    const Statistics &s = stats[k];
    ranges[tensors[k]] = entropy ? entropyRange(s.counts, s.histHi, s.lo, s.hi,
                                                kEntropyQuantizedBins)
                                 : s.range(histogram, options.percentile);
  }
  return llvm::Error::success();
}

llvm::Error measureSqnr(mlir::MLIRContext &ctx, Runner &runner,
                        const onnx::ModelProto &original,
                        const onnx::ModelProto &quantized,
                        const std::vector<std::string> &tensors,
                        std::map<std::string, double> &sqnr) {
  std::vector<double> signal(tensors.size()), noise(tensors.size());
  llvm::Error e = runner.run(
      ctx, {&original, &quantized}, {tensors, tensors},
      [&](std::vector<std::vector<files::HostTensor>> &values) -> llvm::Error {
        for (size_t k = 0; k < tensors.size(); ++k) {
          const files::HostTensor &ref = values[0][k], &got = values[1][k];
          if (ref.bytes.size() != got.bytes.size())
            return error("the quantized model's " + tensors[k] +
                         " has another shape than the f32 model's");
          const float *r = reinterpret_cast<const float *>(ref.bytes.data());
          const float *g = reinterpret_cast<const float *>(got.bytes.data());
          for (size_t i = 0; i < ref.bytes.size() / sizeof(float); ++i) {
            signal[k] += double(r[i]) * r[i];
            noise[k] += (double(r[i]) - g[i]) * (double(r[i]) - g[i]);
          }
        }
        return llvm::Error::success();
      });
  if (e)
    return e;
  for (size_t k = 0; k < tensors.size(); ++k)
    sqnr[tensors[k]] = noise[k] > 0 ? 10 * std::log10(signal[k] / noise[k])
                                    : std::numeric_limits<double>::infinity();
  return llvm::Error::success();
}

} // namespace loom::calibration
