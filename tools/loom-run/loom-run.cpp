//===- loom-run.cpp - run a compiled model, or train one ------------------===//
//
//   loom-run MODEL.loom|MODEL.onnx [--in NAME=FILE.npy ...] [--in-pb DIR]
//            [--out-dir DIR] [--out-pb DIR] [--check-pb DIR [--rtol R]
//            [--atol A]] [--print] [--bench N [--warmup W]] [--threads N]
//            [--profile TRACE.json] [--max-file-bytes N] [--max-tensor-bytes N]
//            [--print-memory]
//   loom-run TRAIN.loom --data FILE.npz --steps N --batch B [--log-every K]
//            [--tokens uint16|uint32 [--seq S] [--seed N]]
//            [--save CKPT.loomckpt [--save-every K]] [--resume CKPT.loomckpt]
//            [--init WEIGHTS.npz]
//            [--total-steps H] [--skip-nonfinite] [--threads N]
//            [--warmup W] [--profile TRACE.json] [--print-memory]
//
// Links the runtime only (the C API): no compiler, MLIR or LLVM. An .onnx
// MODEL is compiled by the `loomc` installed beside loom-run, and the
// artifact cached by content hash under $XDG_CACHE_HOME/loom/compiled (or
// ~/.cache/loom/compiled).
//
// Inputs: `--in NAME=FILE.npy` by input name, or `--in-pb DIR` reading
// DIR/input_K.pb (ONNX TensorProto) in input order. Outputs: `--out-dir`
// writes NAME.npy, `--out-pb DIR` output_K.pb; `--check-pb DIR` compares
// with DIR/output_K.pb (floats within atol + rtol * |expected|, integers
// and booleans exactly) and exits 1 on a mismatch; `--print` prints them.
// bf16, which numpy lacks, travels as float32 in .npy files: a float32
// .npy given for a bf16 input is rounded to nearest even, and bf16 outputs
// are written as float32 .npy (exactly); f16 is numpy's float16 ('<f2').
// `--bench N` runs N more times and prints latency min/median/p90.
// `--profile FILE` writes a Chrome trace of the runs: one event per kernel.
// Sequence and optional values (docs/architecture.md): an input_K.pb or
// output_K.pb holding an ONNX SequenceProto or OptionalProto is matched by
// its name to the artifact's NAME.0 ... NAME.N-1 (or NAME), a length or
// presence other than the compile's refused naming the input; --out-pb
// writes outputs NAME.0 ... (with no output NAME) as one SequenceProto.
// `--print-memory` prints what the run holds by role (weights, parameters,
// optimizer state, the arena, data) and the resident set (Memory.h).
// A training artifact (loomc train) trains instead: see Train.h. Under a
// launcher, as one rank of a distributed job: see Distributed.h.
//
//===----------------------------------------------------------------------===//

#include "loom/common/DynamicLibrary.h"
#include "loom/common/FileHeader.h"
#include "loom/common/FileIO.h"
#include "loom/common/Hash.h"
#include "loom/runtime.h"
#include "tools/loom-run/Memory.h"
#include "tools/loom-run/Tensors.h"
#include "tools/loom-run/Train.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

using loom::tools::readNpy;
using loom::tools::readTensorProto;

struct Options {
  std::string model;
  std::vector<std::pair<std::string, std::string>> in;
  std::string inPb, outPb, outDir, checkPb, profile;
  double rtol = 1e-4, atol = 1e-5;
  bool print = false, printMemory = false;
  int bench = 0, warmup = 1, threads = 0;
  /// The runtime's limits on loaded files (loom_instance_options); 0: the
  /// defaults.
  uint64_t maxFileBytes = 0, maxTensorBytes = 0;
  /// cpu, cuda, cuda-sim or auto (docs/cuda.md).
  std::string device = "auto";
  /// --gpu: the CUDA device's ordinal; -1: the launcher's local rank
  /// modulo the device count under a launcher, else GPU 0.
  int gpu = -1;
  bool printDevice = false;
  /// Training mode (a training artifact): set when --data is given.
  loom::tools::TrainOptions train;
  /// The training flags given, for the check that --data is there.
  std::vector<std::string> trainFlags;
};

void usage() {
  std::fprintf(
      stderr,
      "usage: loom-run MODEL.loom|MODEL.onnx [--in NAME=FILE.npy ...]\n"
      "                [--in-pb DIR] [--out-dir DIR] [--out-pb DIR]\n"
      "                [--check-pb DIR [--rtol R] [--atol A]] [--print]\n"
      "                [--bench N [--warmup W]] [--threads N]\n"
      "                [--profile TRACE.json] [--device "
      "cpu|cuda|cuda-sim|auto]\n"
      "                [--gpu N]\n"
      "                [--max-file-bytes N] [--max-tensor-bytes N] "
      "[--print-device]\n"
      "                [--print-memory]\n"
      "       loom-run TRAIN.loom --data FILE.npz --steps N --batch B\n"
      "                [--tokens uint16|uint32 [--seq S] [--seed N]]\n"
      "                [--log-every K] [--save CKPT.loomckpt [--save-every "
      "K]]\n"
      "                [--resume CKPT.loomckpt] [--init WEIGHTS.npz]\n"
      "                [--total-steps H]\n"
      "                [--skip-nonfinite] [--threads N] [--warmup W]\n"
      "                [--profile TRACE.json] [--print-memory]\n");
}

int fail(const std::string &message) {
  std::fprintf(stderr, "loom-run: error: %s\n", message.c_str());
  return 1;
}

/// Prints and frees a failed status; true when there was one.
bool failed(loom_status s, const std::string &context = "") {
  if (!s)
    return false;
  std::fprintf(stderr, "loom-run: error: %s%s\n",
               context.empty() ? "" : (context + ": ").c_str(),
               loom_status_message(s));
  loom_status_free(s);
  return true;
}

using Tensor = loom::tools::TensorPtr;

bool fileExists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string selfDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0)
    return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

bool readAll(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::stringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

/// Compiles an ONNX model with the loomc beside this binary, cached by the
/// hash of the model and of loomc itself. Returns the artifact's path.
bool compileOnnx(const std::string &model, std::string &artifact,
                 std::string &error) {
  std::string loomc = selfDir() + "/loomc";
  if (!fileExists(loomc)) {
    error = "'" + model +
            "' is an ONNX model, and there is no loomc beside "
            "loom-run (" +
            loomc +
            ") to compile it; compile it elsewhere "
            "with `loomc compile` and pass the .loom file";
    return false;
  }
  std::string modelBytes, loomcBytes;
  if (!readAll(model, modelBytes)) {
    error = "cannot open '" + model + "'";
    return false;
  }
  readAll(loomc, loomcBytes);
  char key[40];
  std::snprintf(key, sizeof(key), "%016llx",
                static_cast<unsigned long long>(
                    loom::fnv1a(modelBytes, loom::fnv1a(loomcBytes))));
  const char *xdg = std::getenv("XDG_CACHE_HOME");
  const char *home = std::getenv("HOME");
  std::string cache = xdg && *xdg ? std::string(xdg) + "/loom"
                      : home      ? std::string(home) + "/.cache/loom"
                                  : std::string("/tmp/loom-cache");
  cache += "/compiled";
  if (!loom::files::makeDirectories(cache, error)) {
    error = "cannot create the compile cache " + cache + ": " + error;
    return false;
  }
  artifact = cache + "/" + key + ".loom";
  // A cached artifact is used only when its header, length and message
  // checksum hold: a damaged entry is a miss, compiled again and replaced
  // (loomc writes it atomically). Its tensors' checksums are checked when
  // it loads.
  loom::files::MappedFile cached;
  loom::artifact::FileParts parts;
  std::string ignored;
  if (fileExists(artifact) && cached.open(artifact, ignored) &&
      loom::artifact::checkFile(cached.data(), cached.size(),
                                loom::artifact::kArtifactFile, parts, ignored))
    return true;
  pid_t pid = fork();
  if (pid == 0) {
    // This is the cache: loomc's own would keep a second copy.
    execl(loomc.c_str(), loomc.c_str(), "compile", model.c_str(), "-o",
          artifact.c_str(), "--no-cache", static_cast<char *>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    error = "loomc could not compile '" + model + "' (its errors are above)";
    return false;
  }
  return true;
}

double elementAsDouble(loom_dtype dtype, const void *data, size_t i) {
  switch (dtype) {
  case LOOM_DTYPE_F32:
    return static_cast<const float *>(data)[i];
  case LOOM_DTYPE_F64:
    return static_cast<const double *>(data)[i];
  case LOOM_DTYPE_I64:
    return static_cast<double>(static_cast<const int64_t *>(data)[i]);
  case LOOM_DTYPE_I32:
    return static_cast<const int32_t *>(data)[i];
  case LOOM_DTYPE_I16:
    return static_cast<const int16_t *>(data)[i];
  case LOOM_DTYPE_U64:
    return static_cast<double>(static_cast<const uint64_t *>(data)[i]);
  case LOOM_DTYPE_U32:
    return static_cast<const uint32_t *>(data)[i];
  case LOOM_DTYPE_U16:
    return static_cast<const uint16_t *>(data)[i];
  case LOOM_DTYPE_I8:
    return static_cast<const int8_t *>(data)[i];
  case LOOM_DTYPE_U8:
  case LOOM_DTYPE_BOOL:
    return static_cast<const uint8_t *>(data)[i];
  case LOOM_DTYPE_BF16: {
    uint32_t bits =
        static_cast<uint32_t>(static_cast<const uint16_t *>(data)[i]) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  case LOOM_DTYPE_F16: {
    uint16_t h = static_cast<const uint16_t *>(data)[i];
    int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v = exp == 0    ? std::ldexp(mant, -24)
               : exp == 31 ? (mant ? NAN : INFINITY)
                           : std::ldexp(mant + 1024, exp - 25);
    return (h & 0x8000) ? -v : v;
  }
  default:
    return NAN;
  }
}

bool isFloat(loom_dtype d) {
  return d == LOOM_DTYPE_F32 || d == LOOM_DTYPE_F64 || d == LOOM_DTYPE_F16 ||
         d == LOOM_DTYPE_BF16;
}

std::string shapeText(const loom_tensor *t) {
  std::string s = std::string(loom_dtype_name(loom_tensor_dtype(t))) + "[";
  for (size_t i = 0; i < loom_tensor_rank(t); ++i)
    s += (i ? ", " : "") + std::to_string(loom_tensor_shape(t)[i]);
  return s + "]";
}

/// Compares `got` with `want`; prints one line per output.
bool check(const std::string &what, const loom_tensor *got,
           const loom_tensor *want, double rtol, double atol) {
  if (loom_tensor_dtype(got) != loom_tensor_dtype(want) ||
      loom_tensor_rank(got) != loom_tensor_rank(want) ||
      !std::equal(loom_tensor_shape(got),
                  loom_tensor_shape(got) + loom_tensor_rank(got),
                  loom_tensor_shape(want))) {
    std::printf("%s: MISMATCH: got %s, expected %s\n", what.c_str(),
                shapeText(got).c_str(), shapeText(want).c_str());
    return false;
  }
  loom_dtype dtype = loom_tensor_dtype(got);
  bool exact = !isFloat(dtype);
  double maxErr = 0;
  size_t bad = 0, firstBad = 0;
  for (size_t i = 0; i < loom_tensor_element_count(got); ++i) {
    double g = elementAsDouble(dtype, loom_tensor_data_const(got), i);
    double w = elementAsDouble(dtype, loom_tensor_data_const(want), i);
    if (std::isnan(w) && std::isnan(g))
      continue;
    if (std::isinf(w) && g == w)
      continue;
    double err = std::fabs(g - w);
    if (!(err <= (exact ? 0 : atol + rtol * std::fabs(w)))) {
      if (!bad++)
        firstBad = i;
    }
    if (!std::isnan(err))
      maxErr = std::max(maxErr, err);
  }
  if (bad) {
    double g = elementAsDouble(dtype, loom_tensor_data_const(got), firstBad);
    double w = elementAsDouble(dtype, loom_tensor_data_const(want), firstBad);
    std::printf("%s: MISMATCH: %zu of %zu elements differ; first at flat "
                "index %zu: got %.9g, expected %.9g (max abs err %.3g)\n",
                what.c_str(), bad, loom_tensor_element_count(got), firstBad, g,
                w, maxErr);
    return false;
  }
  std::printf("%s: ok %s (max abs err %.3g)\n", what.c_str(),
              shapeText(got).c_str(), maxErr);
  return true;
}

void printTensor(const std::string &name, const loom_tensor *t) {
  std::printf("%s %s =", name.c_str(), shapeText(t).c_str());
  loom_dtype dtype = loom_tensor_dtype(t);
  for (size_t i = 0; i < loom_tensor_element_count(t); ++i)
    std::printf(" %.6g", elementAsDouble(dtype, loom_tensor_data_const(t), i));
  std::printf("\n");
}

int parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    bool ok = true;
    if (a == "--in") {
      ok = value(v);
      size_t eq = v.find('=');
      if (ok && eq == std::string::npos)
        return fail("--in takes NAME=FILE.npy, not '" + v + "'");
      if (ok)
        o.in.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (a == "--in-pb") {
      ok = value(o.inPb);
    } else if (a == "--out-pb") {
      ok = value(o.outPb);
    } else if (a == "--out-dir") {
      ok = value(o.outDir);
    } else if (a == "--check-pb") {
      ok = value(o.checkPb);
    } else if (a == "--profile") {
      ok = value(o.profile);
    } else if (a == "--print-device") {
      o.printDevice = true;
    } else if (a == "--device") {
      ok = value(o.device);
      if (ok && o.device != "cpu" && o.device != "cuda" &&
          o.device != "cuda-sim" && o.device != "auto")
        return fail("--device takes cpu, cuda, cuda-sim or auto, not '" +
                    o.device + "'");
    } else if (a == "--gpu") {
      if (!value(v))
        return fail(a + " needs a value");
      char *end = nullptr;
      errno = 0;
      long n = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end || errno || n < 0 || n > 1023)
        return fail("--gpu takes a GPU's ordinal from 0 to 1023, not '" + v +
                    "'");
      o.gpu = static_cast<int>(n);
    } else if (a == "--rtol" || a == "--atol" || a == "--bench" ||
               a == "--warmup" || a == "--threads") {
      ok = value(v);
      if (!ok)
        return fail(a + " needs a value");
      char *end = nullptr;
      errno = 0;
      if (a == "--rtol" || a == "--atol") {
        double d = std::strtod(v.c_str(), &end);
        if (end == v.c_str() || *end || errno || !std::isfinite(d) || d < 0)
          return fail(a + " takes a non-negative number, not '" + v + "'");
        (a == "--rtol" ? o.rtol : o.atol) = d;
      } else {
        long n = std::strtol(v.c_str(), &end, 10);
        if (end == v.c_str() || *end || errno || n < 0 || n > 1000000)
          return fail(a + " takes a whole number from 0 to 1000000, not '" + v +
                      "'");
        (a == "--bench"    ? o.bench
         : a == "--warmup" ? o.warmup
                           : o.threads) = static_cast<int>(n);
      }
    } else if (a == "--max-file-bytes" || a == "--max-tensor-bytes") {
      ok = value(v);
      if (!ok)
        return fail(a + " needs a value");
      char *end = nullptr;
      errno = 0;
      unsigned long long n = std::strtoull(v.c_str(), &end, 10);
      if (end == v.c_str() || *end || errno || v[0] == '-')
        return fail(a + " takes a number of bytes, not '" + v + "'");
      (a == "--max-file-bytes" ? o.maxFileBytes : o.maxTensorBytes) = n;
    } else if (a == "--data" || a == "--save" || a == "--resume" ||
               a == "--tokens" || a == "--init") {
      ok = value(a == "--data"     ? o.train.data
                 : a == "--save"   ? o.train.save
                 : a == "--tokens" ? o.train.tokens
                 : a == "--init"   ? o.train.init
                                   : o.train.resume);
      o.trainFlags.push_back(a);
    } else if (a == "--seed") {
      if (!value(v))
        return fail(a + " needs a value");
      char *end = nullptr;
      errno = 0;
      unsigned long long n = std::strtoull(v.c_str(), &end, 10);
      if (end == v.c_str() || *end || errno || v[0] == '-')
        return fail(a + " takes a whole number, not '" + v + "'");
      o.train.seed = n;
      o.trainFlags.push_back(a);
    } else if (a == "--steps" || a == "--batch" || a == "--log-every" ||
               a == "--save-every" || a == "--total-steps" || a == "--seq") {
      if (!value(v))
        return fail(a + " needs a value");
      char *end = nullptr;
      errno = 0;
      long long n = std::strtoll(v.c_str(), &end, 10);
      if (end == v.c_str() || *end || errno || n < 1 || n > (1ll << 40))
        return fail(a + " takes a whole number of at least 1, not '" + v + "'");
      (a == "--steps"        ? o.train.steps
       : a == "--batch"      ? o.train.batch
       : a == "--log-every"  ? o.train.logEvery
       : a == "--save-every" ? o.train.saveEvery
       : a == "--seq"        ? o.train.seq
                             : o.train.totalSteps) = static_cast<int64_t>(n);
      o.trainFlags.push_back(a);
    } else if (a == "--skip-nonfinite") {
      o.train.skipNonfinite = true;
      o.trainFlags.push_back(a);
    } else if (a == "--print") {
      o.print = true;
    } else if (a == "--print-memory") {
      o.printMemory = true;
    } else if (a == "-h" || a == "--help") {
      usage();
      std::exit(0);
    } else if (!a.empty() && a[0] == '-') {
      usage();
      return fail("unknown option '" + a + "'");
    } else if (o.model.empty()) {
      o.model = a;
    } else {
      usage();
      return fail("more than one model: '" + o.model + "' and '" + a + "'");
    }
    if (!ok)
      return fail(a + " needs a value");
  }
  if (o.model.empty()) {
    usage();
    return fail("no model given");
  }
  if (o.train.data.empty() && !o.trainFlags.empty())
    return fail(o.trainFlags.front() +
                " is for training: give --data FILE.npz (and a training "
                "artifact)");
  if ((o.train.seq || o.train.seed) && o.train.tokens.empty())
    return fail("--seq and --seed are for a token file: give --tokens "
                "uint16|uint32");
  if (o.train.saveEvery && o.train.save.empty())
    return fail("--save-every needs --save CKPT.loomckpt");
  return 0;
}

/// The GPU of this rank under a launcher, as the NCCL communicator picks
/// its own (runtime/src/collectives/NcclCommunicator.cpp): the local rank
/// (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID; else the rank,
/// as the communicator takes it) modulo the device count. 0 without a
/// launcher, and where the count cannot be known (no CUDA driver: the
/// session then says why it has no GPU).
int launcherGpu() {
  auto number = [](const char *name, long &value) {
    const char *s = std::getenv(name);
    if (!s || !*s)
      return false;
    char *end = nullptr;
    errno = 0;
    value = std::strtol(s, &end, 10);
    return end != s && !*end && !errno && value >= 0;
  };
  long local = -1;
  for (const char *v :
       {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "RANK",
        "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"})
    if (number(v, local))
      break;
  if (local <= 0)
    return 0;
  // The device count from the driver (cuInit and cuDeviceGetCount only;
  // the session loads the rest).
  std::string ignored;
  void *cuda = loom::dl::openFirst("LOOM_LIBCUDA", {"libcuda.so.1"}, ignored);
  int (*init)(unsigned) = nullptr;
  int (*count)(int *) = nullptr;
  int devices = 0;
  if (!cuda ||
      !loom::dl::lookup(cuda, "cuInit", init, "libcuda.so.1", ignored) ||
      !loom::dl::lookup(cuda, "cuDeviceGetCount", count, "libcuda.so.1",
                        ignored) ||
      init(0) != 0 || count(&devices) != 0 || devices < 1)
    return 0;
  return static_cast<int>(local % devices);
}

/// Sequence and optional values (docs/architecture.md, "Sequence and
/// optional graph inputs"): the artifact takes and gives plain tensors, a
/// sequence NAME of N as NAME.0 ... NAME.N-1 and a present optional
/// holding a tensor as NAME.

/// The index of the tensor named `name` among `infos`, or -1.
long indexOf(const std::vector<loom_tensor_info> &infos,
             const std::string &name) {
  for (size_t k = 0; k < infos.size(); ++k)
    if (name == infos[k].name)
      return static_cast<long>(k);
  return -1;
}

/// The indices of NAME.0, NAME.1, ... among `infos`, as far as they run.
std::vector<size_t> elementsOf(const std::vector<loom_tensor_info> &infos,
                               const std::string &name) {
  std::vector<size_t> out;
  for (long k;
       (k = indexOf(infos, name + "." + std::to_string(out.size()))) >= 0;)
    out.push_back(static_cast<size_t>(k));
  return out;
}

/// The artifact's tensors for value `v` (read from `path`): `slots` gets
/// their indices among `infos`, each matching v.tensors in order. False
/// with `error` when the artifact was compiled for another length or
/// presence; `what` is "input" or "output".
bool slotsOf(const loom::tools::ValueTensors &v, const std::string &path,
             const std::vector<loom_tensor_info> &infos, const char *what,
             std::vector<size_t> &slots, std::string &error) {
  slots.clear();
  if (v.name.empty()) {
    error = "'" + path +
            "' holds a sequence or optional without a name: loom-run "
            "matches those to the model's " +
            what + "s by name";
    return false;
  }
  size_t n = v.tensors.size();
  long plain = indexOf(infos, v.name);
  if (plain >= 0) {
    // A present optional holding a tensor.
    if (n == 1 && !v.nested && v.elemType == 1) {
      slots.push_back(static_cast<size_t>(plain));
      return true;
    }
    error = std::string(what) + " '" + v.name + "' is one tensor in the " +
            "artifact, and '" + path + "' holds " +
            (n == 0 ? std::string("an empty optional or sequence")
                    : "a sequence of " + std::to_string(n)) +
            (n == 0 && std::string(what) == "input"
                 ? " (compile with loomc --absent " + v.name + ")"
                 : "");
    return false;
  }
  slots = elementsOf(infos, v.name);
  if (slots.size() == n)
    return true;
  error = std::string(what) + " '" + v.name + "' holds " + std::to_string(n) +
          (n == 1 ? " tensor" : " tensors") + " in '" + path +
          "', and the artifact was compiled for " +
          (slots.empty()
               ? std::string("none (an empty sequence or an absent "
                             "optional)")
               : std::to_string(slots.size()) + " (" + v.name + ".0 ... " +
                     v.name + "." + std::to_string(slots.size() - 1) + ")") +
          (std::string(what) != "input" ? ""
           : slots.empty()
               ? "; compile with loomc --seq-len " + v.name + "=" +
                     std::to_string(n) + " (a sequence) or without --absent " +
                     v.name + " (an optional)"
               : "; compile with loomc --seq-len " + v.name + "=" +
                     std::to_string(n));
  slots.clear();
  return false;
}

/// The inference options given, for the check that a training run has
/// none.
std::string inferenceFlag(const Options &o) {
  return !o.in.empty()        ? "--in"
         : !o.inPb.empty()    ? "--in-pb"
         : !o.outPb.empty()   ? "--out-pb"
         : !o.outDir.empty()  ? "--out-dir"
         : !o.checkPb.empty() ? "--check-pb"
         : o.print            ? "--print"
         : o.bench            ? "--bench"
                              : "";
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (int rc = parseArgs(argc, argv, o))
    return rc;
  std::string artifact = o.model, error;
  if (o.model.size() > 5 &&
      o.model.compare(o.model.size() - 5, 5, ".onnx") == 0)
    if (!compileOnnx(o.model, artifact, error))
      return fail(error);

  // --device: cuda runs the artifact's CUDA code (or says why it cannot:
  // no CUDA code, no driver, no device); auto runs it when a GPU answers,
  // else the CPU code; cuda-sim runs the CUDA code on the host (a check of
  // the generated code, docs/cuda.md).
  loom_instance_options instanceOptions;
  loom_instance_options_initialize(&instanceOptions);
  instanceOptions.num_threads = o.threads;
  instanceOptions.device = o.device == "cuda"       ? LOOM_DEVICE_CUDA
                           : o.device == "cuda-sim" ? LOOM_DEVICE_CUDA_SIM
                           : o.device == "cpu"      ? LOOM_DEVICE_CPU
                                                    : LOOM_DEVICE_AUTO;
  instanceOptions.max_file_bytes = o.maxFileBytes;
  instanceOptions.max_tensor_bytes = o.maxTensorBytes;
  // The GPU: --gpu, else under a launcher the GPU of the local rank, the
  // one the NCCL communicator takes (a CUDA program ordered against NCCL
  // must share its GPU; docs/distributed.md). The simulator has no GPUs
  // to pick and the CPU none to need.
  if (o.device == "cuda" || o.device == "auto")
    instanceOptions.device_ordinal = o.gpu >= 0 ? o.gpu : launcherGpu();
  else if (o.gpu >= 0)
    return fail(
        "--gpu picks the GPU of --device cuda or auto, not of --device " +
        o.device);
  loom_instance *instance = nullptr;
  if (failed(loom_instance_create(&instanceOptions, &instance)))
    return 1;
  loom_session *session = nullptr;
  if (failed(
          loom_session_create_from_file(instance, artifact.c_str(), &session),
          o.device == "cuda"       ? "--device cuda"
          : o.device == "cuda-sim" ? "--device cuda-sim"
                                   : "")) {
    loom_instance_release(instance);
    return 1;
  }
  if (o.printDevice)
    std::fprintf(stderr, "loom-run: device: %s\n",
                 loom_session_device_description(session));
  int rc = 0;
  bool training = loom_session_is_training(session);
  // One rank of a distributed job: join it (the communicator outlives the
  // session); only rank 0 prints its results, errors come from every rank.
  loom::tools::Distributed dist;
  if (!loom::tools::joinJob(session, training, dist, error)) {
    loom_session_release(session);
    loom_communicator_release(dist.comm);
    loom_instance_release(instance);
    return fail(error);
  }
  struct ReleaseComm {
    loom_communicator *comm;
    ~ReleaseComm() { loom_communicator_release(comm); }
  } releaseComm{dist.comm};
  if (dist.rank != 0 && !std::freopen("/dev/null", "w", stdout))
    return fail("cannot quiet rank " + std::to_string(dist.rank));
  if (training || !o.train.data.empty()) {
    std::string flag = inferenceFlag(o);
    if (!training)
      rc = fail("'" + artifact +
                "' is not a training artifact; --data trains one (made by "
                "loomc train)");
    else if (o.train.data.empty())
      rc = fail("'" + artifact +
                "' is a training artifact: give --data FILE.npz --steps N "
                "--batch B");
    else if (!flag.empty())
      rc = fail(flag + " does not apply to a training artifact");
    else {
      o.train.warmup = o.warmup;
      o.train.profile = o.profile;
      o.train.printMemory = o.printMemory;
      rc = loom::tools::train(session, o.train, dist);
    }
    // The other ranks may wait on this one: tell them it gave up.
    if (rc && dist.comm)
      loom_communicator_abort(dist.comm, "its loom-run stopped with an error");
    loom_session_release(session);
    loom_instance_release(instance);
    return rc;
  }
  size_t numInputs = loom_session_input_count(session);
  size_t numOutputs = loom_session_output_count(session);
  std::vector<Tensor> inputs(numInputs);
  std::vector<loom_tensor_info> inInfo(numInputs), outInfo(numOutputs);
  for (size_t i = 0; i < numInputs; ++i)
    loom_status_free(loom_session_input_info(session, i, &inInfo[i]));
  for (size_t i = 0; i < numOutputs; ++i)
    loom_status_free(loom_session_output_info(session, i, &outInfo[i]));

  // Inputs: by name, then from the .pb directory in order.
  for (auto &[name, path] : o.in) {
    size_t k = 0;
    while (k < numInputs && name != inInfo[k].name)
      ++k;
    if (k == numInputs) {
      std::string names;
      for (auto &info : inInfo)
        names += std::string(names.empty() ? "" : ", ") + info.name;
      rc =
          fail("the model has no input '" + name + "' (inputs: " + names + ")");
      break;
    }
    inputs[k].reset(readNpy(path, error));
    if (!inputs[k]) {
      rc = fail(error);
      break;
    }
    // NumPy has no bfloat16: a bf16 input takes float32 values, rounded.
    loom_dtype got = loom_tensor_dtype(inputs[k].get());
    if (inInfo[k].dtype == LOOM_DTYPE_BF16 && got == LOOM_DTYPE_F32) {
      inputs[k].reset(loom::tools::convertBf16(inputs[k].get(), error));
      if (!inputs[k])
        rc = fail(error);
    } else if (inInfo[k].dtype == LOOM_DTYPE_BF16 && got != LOOM_DTYPE_BF16) {
      rc = fail("input '" + name + "' is bf16, and '" + path + "' holds " +
                loom_dtype_name(got) +
                ": give float32 values (numpy has no bfloat16; loom-run "
                "rounds them to bf16, to nearest even)");
    }
  }
  // DIR/input_K.pb: matched by the tensor's name when it has one (an input
  // bound at compile time is skipped), else by position.
  for (size_t k = 0; rc == 0 && !o.inPb.empty(); ++k) {
    std::string path = o.inPb + "/input_" + std::to_string(k) + ".pb";
    if (!fileExists(path))
      break;
    // A sequence or optional: its tensors to the inputs named for it.
    loom::tools::ValueTensors value;
    bool isValue = false;
    if (!loom::tools::readValueProto(path, value, isValue, error)) {
      rc = fail(error);
      break;
    }
    if (isValue) {
      std::vector<size_t> slots;
      if (!slotsOf(value, path, inInfo, "input", slots, error)) {
        rc = fail(error);
        break;
      }
      for (size_t j = 0; j < slots.size(); ++j)
        if (!inputs[slots[j]])
          inputs[slots[j]] = std::move(value.tensors[j]);
      continue;
    }
    std::string name;
    Tensor t(readTensorProto(path, name, error,
                             k < numInputs ? inInfo[k].dtype
                                           : LOOM_DTYPE_UNDEFINED));
    if (!t) {
      rc = fail(error);
      break;
    }
    size_t slot = numInputs;
    for (size_t j = 0; j < numInputs && !name.empty(); ++j)
      if (name == inInfo[j].name)
        slot = j;
    if (name.empty() && k < numInputs)
      slot = k;
    if (slot == numInputs) {
      std::fprintf(stderr,
                   "loom-run: note: %s holds '%s', which is not an input of "
                   "the model (bound at compile time?): skipped\n",
                   path.c_str(), name.c_str());
      continue;
    }
    if (!inputs[slot]) {
      // Re-read with the dtype the input expects (bf16 stored as uint16).
      if (loom_tensor_dtype(t.get()) != inInfo[slot].dtype)
        t.reset(readTensorProto(path, name, error, inInfo[slot].dtype));
      inputs[slot] = std::move(t);
    }
  }
  for (size_t k = 0; rc == 0 && k < numInputs; ++k)
    if (!inputs[k])
      rc = fail("no value for input " + std::to_string(k) + " '" +
                inInfo[k].name + "' (give --in " + inInfo[k].name +
                "=FILE.npy or --in-pb DIR)");

  std::vector<const loom_tensor *> in;
  for (auto &t : inputs)
    in.push_back(t.get());
  loom_profile *profile = nullptr;
  if (!o.profile.empty() && failed(loom_profile_create(&profile)))
    rc = 1;
  // One run, profiled when asked.
  auto runOnce = [&](loom_tensor **out) {
    return profile ? loom_session_run_profiled(session, in.data(), numInputs,
                                               out, numOutputs, profile)
                   : loom_session_run(session, in.data(), numInputs, out,
                                      numOutputs);
  };
  std::vector<loom_tensor *> raw(numOutputs, nullptr);
  if (rc == 0 && failed(runOnce(raw.data())))
    rc = 1;
  std::vector<Tensor> outputs;
  for (loom_tensor *t : raw)
    outputs.emplace_back(t);
  // Output folders are made as needed (mkdir -p).
  for (const std::string *dir : {&o.outDir, &o.outPb})
    if (rc == 0 && !dir->empty() && !loom::files::makeDirectories(*dir, error))
      rc = fail(error);

  for (size_t k = 0; rc == 0 && k < numOutputs; ++k) {
    std::string name = outInfo[k].name;
    if (o.print)
      printTensor(name, outputs[k].get());
    if (!o.outDir.empty() &&
        !loom::tools::writeNpy(o.outDir + "/" + name + ".npy", outputs[k].get(),
                               error))
      rc = fail(error);
  }
  // output_J.pb per ONNX output: the outputs NAME.0, NAME.1, ... (with no
  // output NAME) are one sequence NAME, written as a SequenceProto.
  for (size_t k = 0, j = 0; rc == 0 && !o.outPb.empty() && k < numOutputs;
       ++j) {
    std::string path = o.outPb + "/output_" + std::to_string(j) + ".pb";
    std::string name = outInfo[k].name;
    size_t dot = name.rfind('.');
    if (dot != std::string::npos && name.compare(dot, 3, ".0") == 0 &&
        dot + 2 == name.size() && indexOf(outInfo, name.substr(0, dot)) < 0) {
      std::string base = name.substr(0, dot);
      std::vector<const loom_tensor *> elements;
      for (size_t e : elementsOf(outInfo, base))
        elements.push_back(outputs[e].get());
      if (!loom::tools::writeSequenceProto(path, base, elements, error))
        rc = fail(error);
      k += elements.size();
      continue;
    }
    if (!loom::tools::writeTensorProto(path, name, outputs[k].get(), error))
      rc = fail(error);
    ++k;
  }
  // Expected sequences or optionals: every expected file is matched to
  // the outputs by its name.
  bool structured = false;
  for (size_t k = 0; rc == 0 && !o.checkPb.empty(); ++k) {
    std::string path = o.checkPb + "/output_" + std::to_string(k) + ".pb";
    loom::tools::ValueTensors value;
    bool isValue = false;
    if (!fileExists(path))
      break;
    if (!loom::tools::readValueProto(path, value, isValue, error))
      rc = fail(error);
    structured |= isValue;
  }
  for (size_t k = 0, checking = rc == 0 && structured; checking; ++k) {
    std::string path = o.checkPb + "/output_" + std::to_string(k) + ".pb";
    if (!fileExists(path))
      break;
    loom::tools::ValueTensors value;
    bool isValue = false;
    std::vector<size_t> slots;
    std::vector<Tensor> want;
    if (!loom::tools::readValueProto(path, value, isValue, error)) {
      rc = fail(error);
      break;
    }
    if (isValue) {
      if (!slotsOf(value, path, outInfo, "output", slots, error)) {
        std::printf("output %zu: MISMATCH: %s\n", k, error.c_str());
        rc = 1;
        continue;
      }
      want = std::move(value.tensors);
    } else {
      std::string name;
      want.emplace_back(readTensorProto(path, name, error));
      if (!want.back()) {
        rc = fail(error);
        break;
      }
      long slot = name.empty() ? -1 : indexOf(outInfo, name);
      if (slot < 0 && k < numOutputs)
        slot = static_cast<long>(k);
      if (slot < 0) {
        std::printf("output %zu: MISMATCH: the artifact has no output '%s'\n",
                    k, name.c_str());
        rc = 1;
        continue;
      }
      slots.push_back(static_cast<size_t>(slot));
    }
    for (size_t j = 0; j < slots.size(); ++j)
      if (!check("output " + std::to_string(slots[j]) + " '" +
                     outInfo[slots[j]].name + "'",
                 outputs[slots[j]].get(), want[j].get(), o.rtol, o.atol))
        rc = 1;
  }
  if (rc == 0 && !o.checkPb.empty() && !structured) {
    for (size_t k = 0; k < numOutputs; ++k) {
      std::string ignored;
      Tensor want(
          readTensorProto(o.checkPb + "/output_" + std::to_string(k) + ".pb",
                          ignored, error, outInfo[k].dtype));
      if (!want) {
        rc = fail(error);
        continue;
      }
      if (!check("output " + std::to_string(k) + " '" + outInfo[k].name + "'",
                 outputs[k].get(), want.get(), o.rtol, o.atol))
        rc = 1;
    }
  }

  if (rc == 0 && o.bench > 0) {
    std::vector<double> ms;
    for (int i = 0; i < o.warmup + o.bench && rc == 0; ++i) {
      std::vector<loom_tensor *> out(numOutputs, nullptr);
      auto start = std::chrono::steady_clock::now();
      if (failed(runOnce(out.data())))
        rc = 1;
      auto end = std::chrono::steady_clock::now();
      for (loom_tensor *t : out)
        loom_tensor_release(t);
      if (i >= o.warmup)
        ms.push_back(
            std::chrono::duration<double, std::milli>(end - start).count());
    }
    if (rc == 0) {
      std::sort(ms.begin(), ms.end());
      std::printf("latency over %d runs: min %.3f ms, median %.3f ms, p90 "
                  "%.3f ms\n",
                  o.bench, ms.front(), ms[ms.size() / 2],
                  ms[std::min(ms.size() - 1, ms.size() * 9 / 10)]);
    }
  }
  if (rc == 0 && o.printMemory) {
    size_t data = 0;
    for (const auto &t : inputs)
      data += loom_tensor_size_bytes(t.get());
    for (const auto &t : outputs)
      data += loom_tensor_size_bytes(t.get());
    std::string problem = loom::tools::printMemory(session, nullptr, data);
    if (!problem.empty())
      rc = fail(problem);
  }
  if (rc == 0 && profile) {
    if (failed(loom_profile_write_chrome_trace(profile, o.profile.c_str())))
      rc = 1;
    else
      std::fprintf(stderr, "loom-run: wrote %zu events to %s\n",
                   loom_profile_event_count(profile), o.profile.c_str());
  }
  loom_profile_release(profile);
  outputs.clear();
  loom_session_release(session);
  loom_instance_release(instance);
  return rc;
}
