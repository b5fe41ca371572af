//===- sample.cpp - generate text with a character-level model ------------===//
//
// loom-example-charlm MODEL.loom [--prompt TEXT] [--chars N]
//                     [--temperature X] [--seed S] [--threads T]
//
// Embeds the runtime through its C++ wrapper (loom/runtime.hpp) only, no
// compiler: loads an inference artifact of a character model (one input
// i64[batch, T] of character codes, an output `logits` f32[batch, T, V]
// with V <= 256, as `scripts/main.sh` trains and compiles it) and writes
// the prompt and N characters generated from it, one at a time: the last T
// characters are the context (a shorter one is left-aligned; the causal
// mask keeps the padding after it out of the logits read), the next
// character is drawn from softmax(logits / X) at the context's last
// position with a seeded std::mt19937 (X = 0: the most likely one). A
// static batch gets the same context in every row.
//
//===----------------------------------------------------------------------===//

#include <loom/runtime.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string model;
  std::string prompt = "This License";
  long chars = 300;
  double temperature = 0.8;
  unsigned long seed = 0;
  int threads = 0;
};

int usage(const char *argv0) {
  std::fprintf(stderr,
               "usage: %s MODEL.loom [--prompt TEXT] [--chars N] "
               "[--temperature X] [--seed S] [--threads T]\n",
               argv0);
  return 2;
}

int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

/// Parses `text` as a number into `out`; false when it is not one whole.
template <typename T> bool parse(const char *text, T &out) {
  char *end = nullptr;
  errno = 0;
  if constexpr (std::is_floating_point_v<T>)
    out = std::strtod(text, &end);
  else
    out = (T)std::strtol(text, &end, 10);
  return errno == 0 && end != text && *end == '\0';
}

/// False (with a message) on a bad command line.
bool parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : nullptr;
    bool ok = true;
    if (arg == "--prompt" && value)
      o.prompt = value;
    else if (arg == "--chars" && value)
      ok = parse(value, o.chars) && o.chars >= 0;
    else if (arg == "--temperature" && value)
      ok = parse(value, o.temperature) && o.temperature >= 0;
    else if (arg == "--seed" && value)
      ok = parse(value, o.seed);
    else if (arg == "--threads" && value)
      ok = parse(value, o.threads) && o.threads >= 0;
    else if (arg[0] != '-' && o.model.empty()) {
      o.model = arg;
      continue;
    } else {
      std::fprintf(stderr, "error: unknown or incomplete option '%s'\n",
                   arg.c_str());
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "error: bad value '%s' for %s\n", value,
                   arg.c_str());
      return false;
    }
    ++i;
  }
  return !o.model.empty();
}

/// "i64[?, 64]"
std::string describe(const loom_tensor_info &info) {
  std::string s = std::string(loom_dtype_name(info.dtype)) + "[";
  for (size_t d = 0; d < info.rank; ++d)
    s += (d ? ", " : "") +
         (info.dims[d] >= 0 ? std::to_string(info.dims[d]) : "?");
  return s + "]";
}

/// The model's shape: batch rows, context length and vocabulary.
struct Shape {
  int64_t batch = 1, seq = 0, vocab = 0;
  size_t logits = 0; ///< the output index of the logits
};

/// The model's shape, or a message saying why it is not a character model.
std::string checkModel(const loom::Session &session, const std::string &path,
                       Shape &shape) {
  if (loom_session_is_training(session.get()))
    return path +
           " is a training artifact; sample from its inference model "
           "(loomc export TRAIN.loom --checkpoint CK.loomckpt -o M.onnx, "
           "then loomc compile M.onnx -o M.loom)";
  std::string expected = "; a character model takes one input i64[batch, T] "
                         "and returns logits f32[batch, T, V], V <= 256";
  if (session.inputCount() != 1)
    return path + " has " + std::to_string(session.inputCount()) + " inputs" +
           expected;
  loom_tensor_info in = session.input(0);
  if (in.dtype != LOOM_DTYPE_I64 || in.rank != 2 || in.dims[1] < 1)
    return path + ": input '" + in.name + "' is " + describe(in) + expected;
  shape.batch = in.dims[0] >= 0 ? in.dims[0] : 1;
  shape.seq = in.dims[1];
  shape.logits = session.outputCount();
  for (size_t i = 0; i < session.outputCount(); ++i)
    if (std::strcmp(session.output(i).name, "logits") == 0 ||
        session.outputCount() == 1)
      shape.logits = i;
  if (shape.logits == session.outputCount())
    return path + " has no output named 'logits'" + expected;
  loom_tensor_info out = session.output(shape.logits);
  if (out.dtype != LOOM_DTYPE_F32 || out.rank != 3 ||
      out.dims[1] != shape.seq || out.dims[2] < 1 || out.dims[2] > 256 ||
      shape.batch < 1)
    return path + ": output '" + out.name + "' is " + describe(out) +
           " for input " + describe(in) + expected;
  shape.vocab = out.dims[2];
  return "";
}

/// A character code the model knows: '?' for one outside its vocabulary.
int64_t encode(unsigned char c, int64_t vocab) {
  return c < vocab ? c : (vocab > '?' ? '?' : 0);
}

/// Draws an index from softmax(logits / temperature); the largest logit
/// for temperature 0.
int64_t sample(const float *logits, int64_t vocab, double temperature,
               std::mt19937 &rng) {
  int64_t best = std::max_element(logits, logits + vocab) - logits;
  if (temperature == 0)
    return best;
  std::vector<double> p(vocab);
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i)
    sum += p[i] = std::exp((logits[i] - logits[best]) / temperature);
  // u in [0, sum): mt19937's output is specified, so a seed gives the
  // same text everywhere.
  double u = rng() / 4294967296.0 * sum;
  for (int64_t i = 0; i < vocab; ++i)
    if ((u -= p[i]) < 0)
      return i;
  return best;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (!parseArgs(argc, argv, o))
    return usage(argv[0]);

  loom::Instance instance(o.threads);
  if (!instance.status())
    return fail(instance.status().message());
  loom::Session session;
  if (loom::Status s = loom::Session::load(instance, o.model, session); !s)
    return fail("cannot load " + o.model + ": " + s.message());
  Shape shape;
  if (std::string problem = checkModel(session, o.model, shape);
      !problem.empty())
    return fail(problem);

  std::string text;
  for (unsigned char c : o.prompt.empty() ? std::string("\n") : o.prompt)
    text.push_back((char)encode(c, shape.vocab));
  std::fwrite(text.data(), 1, text.size(), stdout);

  std::vector<int64_t> ids(shape.batch * shape.seq, ' ');
  loom::Status status;
  loom::Tensor input =
      loom::Tensor::wrap(LOOM_DTYPE_I64, {shape.batch, shape.seq}, ids.data(),
                         ids.size() * sizeof(int64_t), &status);
  if (!status)
    return fail(status.message());
  std::mt19937 rng(o.seed);
  std::vector<loom::Tensor> outputs;
  auto start = std::chrono::steady_clock::now();
  for (long n = 0; n < o.chars; ++n) {
    // The context: the last T characters, left-aligned in every row.
    size_t len = std::min<size_t>(text.size(), shape.seq);
    for (int64_t row = 0; row < shape.batch; ++row)
      for (size_t j = 0; j < len; ++j)
        ids[row * shape.seq + j] = (unsigned char)text[text.size() - len + j];
    if (loom::Status s = session.run({&input}, outputs); !s)
      return fail("run: " + s.message());
    const float *logits = outputs[shape.logits].data<float>() +
                          (len - 1) * shape.vocab; // row 0, position len - 1
    char c = (char)sample(logits, shape.vocab, o.temperature, rng);
    text.push_back(c);
    std::fputc(c, stdout);
    std::fflush(stdout);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("\n");
  std::fflush(stdout);
  std::fprintf(stderr,
               "sampled %ld characters in %.2f s (context %lld, "
               "vocabulary %lld, temperature %g, seed %lu)\n",
               o.chars, seconds, (long long)shape.seq, (long long)shape.vocab,
               o.temperature, o.seed);
  return 0;
}
