//===- OnnxRecurrent.cpp - LSTM, GRU and RNN as graph ops -----------------===//
//
// ONNX's recurrent layers in every form the spec has (forward, reverse and
// bidirectional; layout 0 and 1; any activations with their alpha and
// beta; biases, initial states, peepholes, clip, input_forget,
// linear_before_reset, sequence_lens), unrolled over the sequence, whose
// length must be static: the input projection of all steps is one matmul
// per direction, then each step is a matmul of the hidden state and the
// elementwise gates. Training needs nothing recurrent-specific: the graph
// ops' VJP rules give backpropagation through time. With sequence_lens, a
// step past a sequence's end keeps its state and writes zeros to Y, as the
// spec says; a reverse pass starts at each sequence's own last step.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporterImpl.h"

using namespace mlir;
using namespace loom;
using namespace loom::onnx_import;
using graph::CompareDirection;

namespace {

enum class Cell { Lstm, Gru, Rnn };

/// Steps a layer may be unrolled over: past this, the graph would be too
/// large to compile in reasonable time.
constexpr int64_t kMaxSteps = 4096;

struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
};

const StringRef kActivations[] = {
    "Relu",       "Tanh",        "Sigmoid",
    "Affine",     "LeakyRelu",   "ThresholdedRelu",
    "ScaledTanh", "HardSigmoid", "Elu",
    "Softsign",   "Softplus"};

bool takesAlpha(StringRef n) {
  return n == "Affine" || n == "LeakyRelu" || n == "ThresholdedRelu" ||
         n == "ScaledTanh" || n == "HardSigmoid" || n == "Elu";
}
bool takesBeta(StringRef n) {
  return n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid";
}
/// ONNX's defaults for the activations' own operators.
float defaultAlpha(StringRef n) {
  return n == "LeakyRelu" ? 0.01f : n == "HardSigmoid" ? 0.2f : 1.0f;
}
float defaultBeta(StringRef n) { return n == "HardSigmoid" ? 0.5f : 0.0f; }

/// The activations of each direction, in order (f, g, h for LSTM; f, g
/// for GRU; f for RNN), with the alphas and betas consumed in order by
/// the activations that take them.
FailureOr<SmallVector<Activation>> activations(ImportContext &c, Cell cell,
                                               int64_t directions) {
  SmallVector<std::string> defaults =
      cell == Cell::Lstm  ? SmallVector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : cell == Cell::Gru ? SmallVector<std::string>{"Sigmoid", "Tanh"}
                          : SmallVector<std::string>{"Tanh"};
  SmallVector<std::string> names;
  SmallVector<float> alphas, betas;
  for (const auto &a : c.node->attribute()) {
    if (a.name() == "activations")
      names.assign(a.strings().begin(), a.strings().end());
    else if (a.name() == "activation_alpha")
      alphas.assign(a.floats().begin(), a.floats().end());
    else if (a.name() == "activation_beta")
      betas.assign(a.floats().begin(), a.floats().end());
  }
  size_t perDirection = defaults.size();
  if (names.empty())
    for (int64_t d = 0; d < directions; ++d)
      names.append(defaults.begin(), defaults.end());
  else if (names.size() == perDirection && directions == 2)
    names.append(SmallVector<std::string>(names)); // one list for both
  if (names.size() != perDirection * directions)
    return c.error("activations lists " + Twine(names.size()) +
                   " functions; expected " + Twine(perDirection * directions) +
                   " (" + Twine(perDirection) + " per direction)");
  SmallVector<Activation> out;
  size_t nextAlpha = 0, nextBeta = 0;
  for (const std::string &n : names) {
    if (!llvm::is_contained(kActivations, n))
      return c.error("activation '" + n + "' is not one of ONNX's (Relu, " +
                     "Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, " +
                     "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)");
    Activation a{n, defaultAlpha(n), defaultBeta(n)};
    if (takesAlpha(n) && nextAlpha < alphas.size())
      a.alpha = alphas[nextAlpha++];
    if (takesBeta(n) && nextBeta < betas.size())
      a.beta = betas[nextBeta++];
    out.push_back(a);
  }
  return out;
}

/// "[4, 16, ?]" for messages.
std::string describe(RankedTensorType t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.getRank(); ++i)
    s +=
        (i ? ", " : "") + (t.isDynamicDim(i) ? std::string("?")
                                             : std::to_string(t.getDimSize(i)));
  return s + "]";
}

class Unroller {
public:
  Unroller(ImportContext &c, Cell cell) : c(c), b(c.b), cell(cell) {}

  LogicalResult run();

private:
  Value scalar(Value like, double v) { return scalarLike(c, like, v); }
  Value zerosLike(Value like) {
    if (!like)
      return {};
    Type elem = cast<RankedTensorType>(like.getType()).getElementType();
    return b.fillLike(like, 0.0, fromMlirType(elem).value_or(DType::f32));
  }
  /// Columns [i*H, (i+1)*H) of a [.., G*H] value: gate `i`.
  Value gate(Value v, int64_t i, int64_t count = 1) {
    return b.slice(v, {i * hidden}, {(i + count) * hidden}, {-1});
  }
  /// Entry `d` of dim `axis`, that dim dropped.
  Value pick(Value v, int64_t d, int64_t axis) {
    return b.squeeze(b.slice(v, {d}, {d + 1}, {axis}), {axis});
  }
  Value activate(const Activation &a, Value x);
  Value clipped(Value x) {
    return clip > 0 ? b.clamp(x, -double(clip), double(clip)) : x;
  }
  /// One direction: the Y of each step in time order, the last h and c.
  LogicalResult direction(int64_t d, Value x, SmallVector<Value> &ys, Value &h,
                          Value &cell);

  ImportContext &c;
  GraphBuilder &b;
  Cell cell;
  int64_t hidden = 0, gates = 0, steps = 0, layout = 0;
  float clip = 0;
  bool reverse = false, bidirectional = false;
  /// GRU: Rbh inside r * (.); LSTM: the forget gate is 1 - input.
  bool linearBeforeReset = false, inputForget = false;
  /// Each direction's activations, acts.size() / directions of them.
  SmallVector<Activation> acts;
  Value w, r, bias, seqLens, initialH, initialC, peepholes;
};

Value Unroller::activate(const Activation &a, Value x) {
  StringRef n = a.name;
  if (n == "Sigmoid")
    return b.sigmoid(x);
  if (n == "Tanh")
    return b.tanh(x);
  if (n == "Relu")
    return b.relu(x);
  if (n == "Affine")
    return b.add(b.mul(x, scalar(x, a.alpha)), scalar(x, a.beta));
  if (n == "LeakyRelu")
    return b.where(b.compare(CompareDirection::ge, x, scalar(x, 0)), x,
                   b.mul(x, scalar(x, a.alpha)));
  if (n == "ThresholdedRelu")
    return b.where(b.compare(CompareDirection::gt, x, scalar(x, a.alpha)), x,
                   zerosLike(x));
  if (n == "ScaledTanh")
    return b.mul(b.tanh(b.mul(x, scalar(x, a.beta))), scalar(x, a.alpha));
  if (n == "HardSigmoid")
    return b.clamp(b.add(b.mul(x, scalar(x, a.alpha)), scalar(x, a.beta)), 0.0,
                   1.0);
  if (n == "Elu")
    return b.where(b.compare(CompareDirection::lt, x, scalar(x, 0)),
                   b.mul(b.sub(b.exp(x), scalar(x, 1)), scalar(x, a.alpha)), x);
  if (n == "Softsign")
    return b.div(x, b.add(b.abs(x), scalar(x, 1)));
  if (n == "Softplus")
    return b.log(b.add(b.exp(x), scalar(x, 1)));
  return {};
}

LogicalResult Unroller::direction(int64_t d, Value x, SmallVector<Value> &ys,
                                  Value &h, Value &state) {
  const Activation *f = &acts[d * acts.size() / (bidirectional ? 2 : 1)];
  Value wd = pick(w, d, 0), rd = pick(r, d, 0);
  // Every step's input projection at once: [T, B, I] x [I, G*H].
  Value xw = b.matmul(x, wd, false, true);
  Value recurrentBias; // GRU with linear_before_reset: Rbh, inside r * (.)
  if (bias) {
    Value bd = pick(bias, d, 0);
    Value wb = b.slice(bd, {0}, {gates * hidden}, {0});
    Value rb = b.slice(bd, {gates * hidden}, {2 * gates * hidden}, {0});
    if (linearBeforeReset) {
      recurrentBias = gate(rb, 2);
      rb = b.concat({gate(rb, 0, 2), zerosLike(recurrentBias)}, 0);
    }
    xw = b.add(xw, b.add(wb, rb));
  }
  if (!xw)
    return failure();
  auto stepInput = [&](int64_t t) { return pick(xw, t, 0); };
  // The initial state: given, or zeros shaped [B, H].
  Value zeros = zerosLike(gate(stepInput(0), 0));
  int64_t stateAxis = layout == 0 ? 0 : 1;
  h = initialH ? pick(initialH, d, stateAxis) : zeros;
  state = cell == Cell::Lstm ? (initialC ? pick(initialC, d, stateAxis) : zeros)
                             : Value();
  Value pi, po, pf;
  if (peepholes) {
    Value pd = pick(peepholes, d, 0);
    pi = gate(pd, 0), po = gate(pd, 1), pf = gate(pd, 2);
  }
  bool backward = reverse || (bidirectional && d == 1);
  ys.assign(steps, Value());
  for (int64_t i = 0; i < steps; ++i) {
    int64_t t = backward ? steps - 1 - i : i;
    Value gx = stepInput(t), hNew, cNew;
    if (cell == Cell::Lstm) {
      Value g = b.add(gx, b.matmul(h, rd, false, true));
      Value in = gate(g, 0), out = gate(g, 1), forget = gate(g, 2),
            candidate = gate(g, 3);
      if (peepholes) {
        in = b.add(in, b.mul(pi, state));
        forget = b.add(forget, b.mul(pf, state));
      }
      Value it = activate(f[0], clipped(in));
      Value ft = inputForget ? b.sub(scalar(it, 1), it)
                             : activate(f[0], clipped(forget));
      Value ct = activate(f[1], clipped(candidate));
      cNew = b.add(b.mul(ft, state), b.mul(it, ct));
      if (peepholes)
        out = b.add(out, b.mul(po, cNew));
      hNew = b.mul(activate(f[0], clipped(out)), activate(f[2], cNew));
    } else if (cell == Cell::Gru) {
      Value zr =
          b.add(gate(gx, 0, 2),
                b.matmul(h, b.slice(rd, {0}, {2 * hidden}, {0}), false, true));
      Value zt = activate(f[0], clipped(gate(zr, 0)));
      Value rt = activate(f[0], clipped(gate(zr, 1)));
      Value rh = b.slice(rd, {2 * hidden}, {3 * hidden}, {0});
      Value candidate;
      if (linearBeforeReset) {
        Value hr = b.matmul(h, rh, false, true);
        if (recurrentBias)
          hr = b.add(hr, recurrentBias);
        candidate = b.add(gate(gx, 2), b.mul(rt, hr));
      } else {
        candidate = b.add(gate(gx, 2), b.matmul(b.mul(rt, h), rh, false, true));
      }
      Value ht = activate(f[1], clipped(candidate));
      hNew = b.add(b.mul(b.sub(scalar(zt, 1), zt), ht), b.mul(zt, h));
    } else {
      hNew = activate(f[0], clipped(b.add(gx, b.matmul(h, rd, false, true))));
    }
    if (!hNew || !c.b.ok())
      return failure();
    if (seqLens) {
      // Past the sequence's end the state stays and Y is zero.
      Value live = b.unsqueeze(
          b.compare(CompareDirection::lt, scalarLike(c, seqLens, t), seqLens),
          {1});
      ys[t] = b.where(live, hNew, zerosLike(hNew));
      hNew = b.where(live, hNew, h);
      if (cNew)
        cNew = b.where(live, cNew, state);
    } else {
      ys[t] = hNew;
    }
    h = hNew;
    if (cNew)
      state = cNew;
  }
  return success();
}

LogicalResult Unroller::run() {
  std::string dir = c.attrString("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return c.error("direction must be forward, reverse or bidirectional, "
                   "not '" +
                   dir + "'");
  reverse = dir == "reverse";
  bidirectional = dir == "bidirectional";
  int64_t directions = bidirectional ? 2 : 1;
  gates = cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1;
  linearBeforeReset = cell == Cell::Gru && c.attrInt("linear_before_reset", 0);
  inputForget = cell == Cell::Lstm && c.attrInt("input_forget", 0);
  layout = c.attrInt("layout", 0);
  if (layout != 0 && layout != 1)
    return c.error("layout must be 0 or 1, not " + Twine(layout));
  clip = c.attrFloat("clip", 0);
  if (c.hasAttr("clip") && !(clip > 0))
    return c.error("clip must be above 0");
  auto a = activations(c, cell, directions);
  if (failed(a))
    return failure();
  acts = std::move(*a);

  Value x = c.input(0);
  w = c.input(1);
  r = c.input(2);
  if (!x || !w || !r)
    return failure();
  auto xType = cast<RankedTensorType>(x.getType());
  auto rType = cast<RankedTensorType>(r.getType());
  if (xType.getRank() != 3 || rType.getRank() != 3 ||
      cast<RankedTensorType>(w.getType()).getRank() != 3)
    return c.error("X, W and R must have rank 3");
  if (layout == 1)
    x = b.transpose(x, {1, 0, 2});
  steps = cast<RankedTensorType>(x.getType()).getDimSize(0);
  if (ShapedType::isDynamic(steps))
    return c.error("the sequence length must be static: the layer is "
                   "unrolled over it (fix it with loomc --dim)");
  if (steps < 1 || steps > kMaxSteps)
    return c.error("the layer is unrolled over its " + Twine(steps) +
                   " steps; supported are 1 to " + Twine(kMaxSteps));
  hidden = c.attrInt("hidden_size", rType.getDimSize(2));
  if (hidden <= 0 || ShapedType::isDynamic(hidden))
    return c.error("hidden_size is missing and R's last dim is not static");
  for (Value v : {w, r}) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getDimSize(0) != directions || t.getDimSize(1) != gates * hidden)
      return c.error(Twine(v == w ? "W" : "R") + " must be [" +
                     Twine(directions) + ", " + Twine(gates * hidden) +
                     ", ...] for a " + dir + " layer of " + Twine(hidden) +
                     " units, not " + describe(t));
  }
  if (rType.getDimSize(2) != hidden)
    return c.error("R must be [" + Twine(directions) + ", " +
                   Twine(gates * hidden) + ", " + Twine(hidden) + "], not " +
                   describe(rType));
  if (c.hasInput(3))
    bias = c.input(3);
  if (c.hasInput(4))
    seqLens = c.input(4);
  if (c.hasInput(5))
    initialH = c.input(5);
  if (cell == Cell::Lstm && c.hasInput(6))
    initialC = c.input(6);
  if (cell == Cell::Lstm && c.hasInput(7))
    peepholes = c.input(7);
  // The optional inputs' shapes, against X's batch (kDynamic: any).
  int64_t batch = cast<RankedTensorType>(x.getType()).getDimSize(1);
  SmallVector<int64_t> stateShape =
      layout == 0 ? SmallVector<int64_t>{directions, batch, hidden}
                  : SmallVector<int64_t>{batch, directions, hidden};
  for (auto [v, name, want] :
       {std::make_tuple(bias, "B",
                        SmallVector<int64_t>{directions, 2 * gates * hidden}),
        std::make_tuple(seqLens, "sequence_lens", SmallVector<int64_t>{batch}),
        std::make_tuple(initialH, "initial_h", stateShape),
        std::make_tuple(initialC, "initial_c", stateShape),
        std::make_tuple(peepholes, "P",
                        SmallVector<int64_t>{directions, 3 * hidden})}) {
    if (!v)
      continue;
    auto t = cast<RankedTensorType>(v.getType());
    bool fits = t.getRank() == (int64_t)want.size();
    for (int64_t i = 0; fits && i < t.getRank(); ++i)
      fits = t.isDynamicDim(i) || ShapedType::isDynamic(want[i]) ||
             t.getDimSize(i) == want[i];
    if (!fits)
      return c.error(Twine(name) + " is " + describe(t) + "; expected " +
                     describe(RankedTensorType::get(want, t.getElementType())) +
                     " (directions, batch, hidden size from X and R)");
  }
  if (seqLens &&
      !cast<RankedTensorType>(seqLens.getType()).getElementType().isInteger())
    return c.error("sequence_lens must hold integers");
  Type elem = xType.getElementType();
  if (!isa<FloatType>(elem))
    return c.error("X must hold floats");
  for (auto [v, name] :
       {std::make_pair(w, "W"), std::make_pair(r, "R"),
        std::make_pair(bias, "B"), std::make_pair(initialH, "initial_h"),
        std::make_pair(initialC, "initial_c"), std::make_pair(peepholes, "P")})
    if (v && cast<RankedTensorType>(v.getType()).getElementType() != elem)
      return c.error(Twine(name) + " must have X's element type");

  SmallVector<Value> ysByDirection, hs, cs;
  for (int64_t d = 0; d < directions; ++d) {
    SmallVector<Value> ys;
    Value h, state;
    if (failed(direction(d, x, ys, h, state)))
      return failure();
    SmallVector<Value> stacked;
    for (Value y : ys)
      stacked.push_back(b.unsqueeze(y, {0}));
    // [T, 1, B, H]
    ysByDirection.push_back(b.unsqueeze(b.concat(stacked, 0), {1}));
    hs.push_back(b.unsqueeze(h, {0}));
    if (state)
      cs.push_back(b.unsqueeze(state, {0}));
  }
  Value y = b.concat(ysByDirection, 1);
  Value yh = b.concat(hs, 0);
  Value yc = cs.empty() ? Value() : b.concat(cs, 0);
  if (layout == 1) {
    y = b.transpose(y, {2, 0, 1, 3});
    yh = b.transpose(yh, {1, 0, 2});
    if (yc)
      yc = b.transpose(yc, {1, 0, 2});
  }
  if (!y || !yh)
    return failure();
  c.setOutput(0, y);
  c.setOutput(1, yh);
  if (yc)
    c.setOutput(2, yc);
  return success();
}

} // namespace

namespace loom::onnx_import {

LogicalResult lstm(ImportContext &c) { return Unroller(c, Cell::Lstm).run(); }
LogicalResult gru(ImportContext &c) { return Unroller(c, Cell::Gru).run(); }
LogicalResult rnn(ImportContext &c) { return Unroller(c, Cell::Rnn).run(); }

} // namespace loom::onnx_import
