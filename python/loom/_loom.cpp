//===- _loom.cpp - the Python module's native part ------------------------===//
//
// `loom._loom`: the compiler's commands through compiler/Driver.h (the
// same table and runner as loomc, in this process) and the runtime's
// sessions and trainers through its C++ wrapper (loom/runtime.hpp).
// Tensors cross as NumPy arrays: inputs are wrapped where they lie (the
// Python layer makes them C-contiguous in the input's dtype), outputs are
// arrays over the runtime's tensors, freed with the last array. The GIL is
// released while the compiler or a run works. The Python API over this
// is python/loom/__init__.py (docs/python.md).
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver.h"
#include "compiler/InitAll.h"
#include "loom/runtime.hpp"

#include "mlir/IR/Diagnostics.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <stdexcept>

namespace py = pybind11;

namespace {

/// Raised to Python as loom.LoomError (a RuntimeError) with the message.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(const loom::Status &status, const std::string &what) {
  if (!status)
    throw Failure(what + ": " + status.message());
}

/// Runs loomc's `command` with `options` (name, value) pairs; "input" is
/// the model. Returns the warnings; errors raise with the diagnostics.
std::string
runCommand(const std::string &command,
           const std::vector<std::pair<std::string, std::string>> &options) {
  using namespace loom::driver;
  const CommandInfo *info = findCommand(command);
  if (!info)
    throw Failure("unknown command '" + command + "'");
  DriverOptions driver;
  for (const auto &[name, value] : options) {
    if (name == "input") {
      driver.input = value;
      continue;
    }
    if (llvm::Error e = setOption(driver, info->command, name, value))
      throw Failure(llvm::toString(std::move(e)));
  }
  static std::once_flag passes;
  std::call_once(passes, [] { loom::registerAllPasses(); });
  std::string diagnostics, message;
  bool failed = false;
  {
    py::gil_scoped_release released;
    mlir::DialectRegistry registry;
    loom::registerAllDialects(registry);
    mlir::MLIRContext ctx(registry);
    ctx.loadAllAvailableDialects();
    mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &diag) {
      if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(diag.getLocation()))
        diagnostics += file.getFilename().str() + ": ";
      diagnostics += diag.getSeverity() == mlir::DiagnosticSeverity::Error
                         ? "error: "
                     : diag.getSeverity() == mlir::DiagnosticSeverity::Warning
                         ? "warning: "
                         : "note: ";
      diagnostics += diag.str() + "\n";
      return mlir::success();
    });
    if (llvm::Error e = run(info->command, driver, ctx)) {
      failed = true;
      message = llvm::toString(std::move(e));
    }
  }
  if (failed) {
    if (!message.empty())
      diagnostics += "error: " + message + "\n";
    throw Failure("loom " + command + " failed:\n" + diagnostics);
  }
  return diagnostics;
}

/// The options of loomc's `command` as (name, value name, help, category,
/// hidden): loom.compile's keyword arguments and their documentation.
py::list commandOptions(const std::string &command) {
  using namespace loom::driver;
  const CommandInfo *info = findCommand(command);
  if (!info)
    throw Failure("unknown command '" + command + "'");
  py::list out;
  for (const OptionInfo &o : options())
    if (o.commands & info->command)
      out.append(py::make_tuple(o.name, o.valueName ? o.valueName : "", o.help,
                                o.category, o.hidden, o.repeats));
  return out;
}

/// NumPy's name for a runtime dtype (bf16: its bits as uint16).
std::string numpyName(loom_dtype dtype) {
  switch (dtype) {
  case LOOM_DTYPE_F32:
    return "float32";
  case LOOM_DTYPE_F64:
    return "float64";
  case LOOM_DTYPE_F16:
    return "float16";
  case LOOM_DTYPE_BF16:
    return "uint16";
  case LOOM_DTYPE_U8:
    return "uint8";
  case LOOM_DTYPE_I8:
    return "int8";
  case LOOM_DTYPE_I16:
    return "int16";
  case LOOM_DTYPE_U16:
    return "uint16";
  case LOOM_DTYPE_U32:
    return "uint32";
  case LOOM_DTYPE_U64:
    return "uint64";
  case LOOM_DTYPE_I32:
    return "int32";
  case LOOM_DTYPE_I64:
    return "int64";
  case LOOM_DTYPE_BOOL:
    return "bool";
  default:
    return "";
  }
}

py::dict describe(const loom_tensor_info &info) {
  py::dict d;
  d["name"] = info.name;
  d["dtype"] = loom_dtype_name(info.dtype);
  d["numpy_dtype"] = numpyName(info.dtype);
  py::list shape, names;
  for (size_t i = 0; i < info.rank; ++i) {
    shape.append(info.dims[i] < 0 ? py::object(py::none())
                                  : py::object(py::int_(info.dims[i])));
    names.append(info.dim_names && info.dim_names[i] ? info.dim_names[i] : "");
  }
  d["shape"] = shape;
  d["dim_names"] = names;
  return d;
}

/// An array over `t`, which it owns from now on.
py::array ownedArray(loom::Tensor t) {
  auto *owned = new loom::Tensor(std::move(t));
  py::capsule free(owned,
                   [](void *p) { delete static_cast<loom::Tensor *>(p); });
  std::vector<py::ssize_t> shape;
  for (int64_t d : owned->shape())
    shape.push_back(d);
  return py::array(py::dtype(numpyName(owned->dtype())), shape,
                   owned->data<char>(), free);
}

/// A copy of `t` (the trainer's state, which the next step replaces).
py::array copiedArray(const loom_tensor *t) {
  std::vector<py::ssize_t> shape;
  const int64_t *dims = loom_tensor_shape(t);
  for (size_t i = 0; i < loom_tensor_rank(t); ++i)
    shape.push_back(dims[i]);
  py::array out(py::dtype(numpyName(loom_tensor_dtype(t))), shape);
  std::memcpy(out.mutable_data(), loom_tensor_data_const(t),
              loom_tensor_size_bytes(t));
  return out;
}

/// The `count` tensor infos that `info(i)` gives: a session's inputs, a
/// trainer's batch inputs.
template <typename Info>
std::vector<loom_tensor_info> signature(size_t count, Info info) {
  std::vector<loom_tensor_info> out;
  for (size_t i = 0; i < count; ++i)
    out.push_back(info(i));
  return out;
}

/// Tensors over the arrays' memory (C-contiguous, checked), one per entry
/// of `expected` (whose dtype and name they take), which the arrays keep
/// alive while the tensors are used.
std::vector<loom::Tensor>
wrapArrays(const std::vector<py::array> &arrays,
           const std::vector<loom_tensor_info> &expected) {
  if (arrays.size() != expected.size())
    throw Failure("expected " + std::to_string(expected.size()) +
                  " inputs, got " + std::to_string(arrays.size()));
  std::vector<loom::Tensor> tensors;
  for (size_t i = 0; i < arrays.size(); ++i) {
    const py::array &a = arrays[i];
    std::string name = expected[i].name;
    if (!(a.flags() & py::array::c_style))
      throw Failure("input '" + name + "' is not C-contiguous");
    std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    loom::Status status;
    tensors.push_back(loom::Tensor::wrap(expected[i].dtype, shape,
                                         const_cast<void *>(a.data()),
                                         a.nbytes(), &status));
    check(status, "input '" + name + "'");
  }
  return tensors;
}

std::vector<const loom::Tensor *>
pointers(const std::vector<loom::Tensor> &tensors) {
  std::vector<const loom::Tensor *> out;
  for (const loom::Tensor &t : tensors)
    out.push_back(&t);
  return out;
}

loom_device parseDevice(const std::string &device) {
  if (device == "auto")
    return LOOM_DEVICE_AUTO;
  if (device == "cpu")
    return LOOM_DEVICE_CPU;
  if (device == "cuda")
    return LOOM_DEVICE_CUDA;
  if (device == "cuda-sim")
    return LOOM_DEVICE_CUDA_SIM;
  throw Failure("device takes auto, cpu, cuda or cuda-sim, not '" + device +
                "'");
}

class Session {
public:
  Session(const std::string &path, const std::string &device, int threads,
          int ordinal)
      : instance_(std::make_shared<loom::Instance>(threads, parseDevice(device),
                                                   ordinal)) {
    check(instance_->status(), "loom runtime");
    check(loom::Session::load(*instance_, path, session_), path);
  }

  py::list inputs() const {
    py::list out;
    for (size_t i = 0; i < session_.inputCount(); ++i)
      out.append(describe(session_.input(i)));
    return out;
  }
  py::list outputs() const {
    py::list out;
    for (size_t i = 0; i < session_.outputCount(); ++i)
      out.append(describe(session_.output(i)));
    return out;
  }

  py::list run(const std::vector<py::array> &arrays) const {
    std::vector<loom::Tensor> in =
        wrapArrays(arrays, signature(session_.inputCount(), [&](size_t i) {
                     return session_.input(i);
                   }));
    std::vector<loom::Tensor> out;
    loom::Status status;
    {
      py::gil_scoped_release released;
      status = session_.run(pointers(in), out);
    }
    check(status, "run");
    py::list result;
    for (loom::Tensor &t : out)
      result.append(ownedArray(std::move(t)));
    return result;
  }

  std::string device() const {
    switch (session_.device()) {
    case LOOM_DEVICE_CUDA:
      return "cuda";
    case LOOM_DEVICE_CUDA_SIM:
      return "cuda-sim";
    default:
      return "cpu";
    }
  }
  std::string deviceDescription() const { return session_.deviceDescription(); }
  bool isTraining() const { return loom_session_is_training(session_.get()); }
  py::dict memory() const {
    loom_session_memory m = session_.memory();
    py::dict d;
    d["weight_bytes"] = m.weight_bytes;
    d["scratch_bytes"] = m.scratch_bytes;
    d["run_contexts"] = m.run_contexts;
    return d;
  }

  const loom::Session &get() const { return session_; }

private:
  // Declared first: the session is released before its instance.
  std::shared_ptr<loom::Instance> instance_;
  loom::Session session_;
};

class Trainer {
public:
  explicit Trainer(std::shared_ptr<Session> session)
      : session_(std::move(session)) {
    check(loom::Trainer::create(session_->get(), trainer_), "trainer");
  }

  py::list batchInputs() const {
    py::list out;
    for (size_t i = 0; i < trainer_.batchInputCount(); ++i)
      out.append(describe(trainer_.batchInput(i)));
    return out;
  }

  py::dict step(const std::vector<py::array> &arrays) {
    std::vector<loom::Tensor> in =
        wrapArrays(arrays, signature(trainer_.batchInputCount(), [&](size_t i) {
                     return trainer_.batchInput(i);
                   }));
    loom_train_stats stats = {};
    loom::Status status;
    {
      py::gil_scoped_release released;
      status = trainer_.step(pointers(in), &stats);
    }
    check(status, "step");
    py::dict d;
    d["loss"] = stats.loss;
    d["grad_norm"] = stats.grad_norm;
    d["lr"] = stats.lr;
    d["micro_step"] = stats.micro_step;
    d["optimizer_step"] = stats.optimizer_step;
    d["applied"] = bool(stats.applied);
    d["nonfinite"] = bool(stats.nonfinite);
    d["loss_scale"] = stats.loss_scale;
    return d;
  }

  py::list stateNames() const {
    py::list out;
    for (size_t i = 0; i < trainer_.stateCount(); ++i) {
      const char *name = nullptr, *kind = nullptr;
      const loom_tensor *tensor = nullptr;
      check(loom::Status(
                loom_trainer_state(trainer_.get(), i, &name, &kind, &tensor)),
            "state");
      out.append(py::make_tuple(name, kind));
    }
    return out;
  }
  py::array state(const std::string &name) const {
    const loom_tensor *t = trainer_.state(name);
    if (!t)
      throw py::key_error("no state tensor '" + name + "'");
    return copiedArray(t);
  }
  void setState(const std::string &name, const py::array &value) {
    const loom_tensor *t = trainer_.state(name);
    if (!t)
      throw py::key_error("no state tensor '" + name + "'");
    std::vector<loom::Tensor> in = wrapArrays(
        {value}, {loom_tensor_info{name.c_str(), loom_tensor_dtype(t), 0,
                                   nullptr, nullptr}});
    check(trainer_.setState(name, in[0].get()), "set_state " + name);
  }

  void save(const std::string &path) const {
    check(trainer_.save(path), "save " + path);
  }
  void load(const std::string &path) {
    check(trainer_.load(path), "load " + path);
  }
  int64_t microStep() const { return trainer_.microStep(); }
  int64_t totalSteps() const { return trainer_.totalSteps(); }
  void setTotalSteps(int64_t steps) {
    check(trainer_.setTotalSteps(steps), "total_steps");
  }
  std::string description() const { return trainer_.description(); }
  std::string labels() const { return trainer_.labels(); }
  int accumulate() const { return trainer_.accumulate(); }

private:
  std::shared_ptr<Session> session_; // outlives the trainer
  loom::Trainer trainer_;
};

} // namespace

PYBIND11_MODULE(_loom, m) {
  m.doc() = "Loom's native module: the compiler driver and the runtime";
  static py::exception<Failure> error(m, "LoomError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const Failure &e) {
      error(e.what());
    }
  });
  m.def("run_command", &runCommand, py::arg("command"), py::arg("options"));
  m.def("command_options", &commandOptions, py::arg("command"));
  m.def("runtime_api_version", &loom::runtimeApiVersion);

  py::class_<Session, std::shared_ptr<Session>>(m, "Session")
      .def(py::init<const std::string &, const std::string &, int, int>(),
           py::arg("path"), py::arg("device") = "auto", py::arg("threads") = 0,
           py::arg("device_ordinal") = 0)
      .def_property_readonly("inputs", &Session::inputs)
      .def_property_readonly("outputs", &Session::outputs)
      .def_property_readonly("device", &Session::device)
      .def_property_readonly("device_description", &Session::deviceDescription)
      .def_property_readonly("is_training", &Session::isTraining)
      .def("memory", &Session::memory)
      .def("run", &Session::run, py::arg("arrays"));

  py::class_<Trainer>(m, "Trainer")
      .def(py::init<std::shared_ptr<Session>>(), py::arg("session"))
      .def_property_readonly("batch_inputs", &Trainer::batchInputs)
      .def_property_readonly("state_names", &Trainer::stateNames)
      .def_property_readonly("micro_step", &Trainer::microStep)
      .def_property("total_steps", &Trainer::totalSteps,
                    &Trainer::setTotalSteps)
      .def_property_readonly("description", &Trainer::description)
      .def_property_readonly("labels", &Trainer::labels)
      .def_property_readonly("accumulate", &Trainer::accumulate)
      .def("step", &Trainer::step, py::arg("arrays"))
      .def("state", &Trainer::state, py::arg("name"))
      .def("set_state", &Trainer::setState, py::arg("name"), py::arg("value"))
      .def("save", &Trainer::save, py::arg("path"))
      .def("load", &Trainer::load, py::arg("path"));
}
