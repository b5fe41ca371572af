// loom/runtime.hpp - a C++ wrapper over the runtime's C API (runtime.h).
//
// Header-only RAII handles; no exceptions: every call that can fail returns
// a loom::Status (false when it failed, with the message). The threading
// contract is the C API's: a Session may run on many threads at once.
//
//   loom::Instance instance;
//   loom::Session session;
//   if (loom::Status s = loom::Session::load(instance, "model.loom", session);
//       !s)
//     std::cerr << s.message() << "\n";
//   loom::Tensor x = loom::Tensor::zeros(LOOM_DTYPE_F32, {2, 16});
//   std::vector<loom::Tensor> outputs;
//   loom::Status s = session.run({&x}, outputs);
#ifndef LOOM_RUNTIME_HPP
#define LOOM_RUNTIME_HPP

#include "loom/runtime.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace loom {

/// The API version of the runtime library loaded (LOOM_RUNTIME_API_VERSION
/// of the header it was built with).
inline uint32_t runtimeApiVersion() { return loom_runtime_api_version(); }

/// The result of a call: ok, or a code and a message.
class Status {
public:
  Status() = default;
  /// Takes ownership of `status` (NULL is ok).
  explicit Status(loom_status status) {
    if (status) {
      code_ = loom_status_get_code(status);
      message_ = loom_status_message(status);
      loom_status_free(status);
    }
  }
  explicit operator bool() const { return code_ == LOOM_OK; }
  loom_status_code code() const { return code_; }
  const std::string &message() const { return message_; }

private:
  loom_status_code code_ = LOOM_OK;
  std::string message_;
};

/// A dense tensor: owned, or a view of caller memory (Tensor::wrap).
class Tensor {
public:
  Tensor() = default;
  explicit Tensor(loom_tensor *t) : t_(t) {}
  Tensor(Tensor &&o) noexcept : t_(std::exchange(o.t_, nullptr)) {}
  Tensor &operator=(Tensor &&o) noexcept {
    std::swap(t_, o.t_);
    return *this;
  }
  Tensor(const Tensor &) = delete;
  Tensor &operator=(const Tensor &) = delete;
  ~Tensor() { loom_tensor_release(t_); }

  /// A zero-filled tensor; empty (get() == nullptr) with `status` set on
  /// a bad dtype or shape.
  static Tensor zeros(loom_dtype dtype, const std::vector<int64_t> &shape,
                      Status *status = nullptr) {
    loom_tensor *t = nullptr;
    Status s(loom_tensor_create(dtype, shape.size(), shape.data(), &t));
    if (status)
      *status = std::move(s);
    return Tensor(t);
  }
  /// A view of `data` (`bytes` long), which must outlive the tensor.
  static Tensor wrap(loom_dtype dtype, const std::vector<int64_t> &shape,
                     void *data, size_t bytes, Status *status = nullptr) {
    loom_tensor *t = nullptr;
    Status s(
        loom_tensor_wrap(dtype, shape.size(), shape.data(), data, bytes, &t));
    if (status)
      *status = std::move(s);
    return Tensor(t);
  }

  loom_tensor *get() const { return t_; }
  loom_dtype dtype() const { return loom_tensor_dtype(t_); }
  std::vector<int64_t> shape() const {
    const int64_t *s = loom_tensor_shape(t_);
    return s ? std::vector<int64_t>(s, s + loom_tensor_rank(t_))
             : std::vector<int64_t>();
  }
  size_t size() const { return loom_tensor_element_count(t_); }
  template <typename T> T *data() {
    return static_cast<T *>(loom_tensor_data(t_));
  }
  template <typename T> const T *data() const {
    return static_cast<const T *>(loom_tensor_data_const(t_));
  }

private:
  loom_tensor *t_ = nullptr;
};

class Instance {
public:
  /// `num_threads` 0: one per core; `device`: see loom_device. Check ok()
  /// for a failure.
  explicit Instance(int32_t num_threads = 0,
                    loom_device device = LOOM_DEVICE_AUTO,
                    int32_t device_ordinal = 0) {
    loom_instance_options options;
    loom_instance_options_initialize(&options);
    options.num_threads = num_threads;
    options.device = device;
    options.device_ordinal = device_ordinal;
    status_ = Status(loom_instance_create(&options, &i_));
  }
  Instance(const Instance &) = delete;
  Instance &operator=(const Instance &) = delete;
  ~Instance() { loom_instance_release(i_); }
  const Status &status() const { return status_; }
  loom_instance *get() const { return i_; }

private:
  loom_instance *i_ = nullptr;
  Status status_;
};

/// A communicator joining the ranks of a distributed job (see runtime.h).
/// Release order: after the sessions it is attached to.
class Communicator {
public:
  Communicator() = default;
  Communicator(Communicator &&o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
  Communicator &operator=(Communicator &&o) noexcept {
    std::swap(c_, o.c_);
    return *this;
  }
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;
  ~Communicator() { loom_communicator_release(c_); }

  /// Joins the job the launcher's environment describes (one rank when
  /// there is none). `timeout_seconds` 0: $LOOM_COLLECTIVE_TIMEOUT or 300.
  static Status fromEnv(Communicator &out, double timeout_seconds = 0) {
    loom_communicator_options options;
    loom_communicator_options_initialize(&options);
    options.timeout_seconds = timeout_seconds;
    loom_communicator *c = nullptr;
    Status s(loom_communicator_create_from_env(&options, &c));
    out = Communicator(c);
    return s;
  }
  int32_t rank() const { return loom_communicator_rank(c_); }
  int32_t size() const { return loom_communicator_size(c_); }
  Status barrier() { return Status(loom_communicator_barrier(c_)); }
  /// This rank gives up: the others' collectives waiting on it fail.
  void abort(const char *reason) { loom_communicator_abort(c_, reason); }
  loom_communicator *get() const { return c_; }

private:
  explicit Communicator(loom_communicator *c) : c_(c) {}
  loom_communicator *c_ = nullptr;
};

class Session {
public:
  Session() = default;
  Session(Session &&o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Session &operator=(Session &&o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;
  ~Session() { loom_session_release(s_); }

  static Status load(const Instance &instance, const std::string &path,
                     Session &out) {
    loom_session *s = nullptr;
    Status status(
        loom_session_create_from_file(instance.get(), path.c_str(), &s));
    out = Session(s);
    return status;
  }

  /// LOOM_DEVICE_CPU or LOOM_DEVICE_CUDA, and a line describing it.
  loom_device device() const { return loom_session_device(s_); }
  const char *deviceDescription() const {
    return loom_session_device_description(s_);
  }
  size_t inputCount() const { return loom_session_input_count(s_); }
  size_t outputCount() const { return loom_session_output_count(s_); }
  loom_tensor_info input(size_t i) const {
    loom_tensor_info info = {};
    Status(loom_session_input_info(s_, i, &info));
    return info;
  }
  loom_tensor_info output(size_t i) const {
    loom_tensor_info info = {};
    Status(loom_session_output_info(s_, i, &info));
    return info;
  }

  /// Runs with `inputs` in signature order; `outputs` receives one tensor
  /// per output.
  Status run(const std::vector<const Tensor *> &inputs,
             std::vector<Tensor> &outputs) const {
    std::vector<const loom_tensor *> in;
    for (const Tensor *t : inputs)
      in.push_back(t ? t->get() : nullptr);
    std::vector<loom_tensor *> out(outputCount(), nullptr);
    Status status(
        loom_session_run(s_, in.data(), in.size(), out.data(), out.size()));
    outputs.clear();
    for (loom_tensor *t : out)
      outputs.emplace_back(t);
    return status;
  }

  /// At most `maxRuns` runs at once (0: no cap); see the C API.
  Status setMaxConcurrentRuns(size_t maxRuns) const {
    return Status(loom_session_set_max_concurrent_runs(s_, maxRuns));
  }
  loom_session_memory memory() const {
    loom_session_memory m = {};
    Status(loom_session_memory_stats(s_, &m));
    return m;
  }

  /// Runs use `comm`'s collectives; before the first run.
  Status attach(const Communicator &comm) {
    return Status(loom_session_attach_communicator(s_, comm.get()));
  }
  loom_session *get() const { return s_; }

private:
  explicit Session(loom_session *s) : s_(s) {}
  loom_session *s_ = nullptr;
};

/// Trains with a training artifact's session (loom_trainer_*): owns the
/// state between steps. Not thread-safe; the session must outlive it.
///
///   loom::Trainer trainer;
///   if (loom::Status s = loom::Trainer::create(session, trainer); !s) ...
///   loom_train_stats stats;
///   loom::Status s = trainer.step({&x, &y}, &stats);
class Trainer {
public:
  Trainer() = default;
  Trainer(Trainer &&o) noexcept : t_(std::exchange(o.t_, nullptr)) {}
  Trainer &operator=(Trainer &&o) noexcept {
    std::swap(t_, o.t_);
    return *this;
  }
  Trainer(const Trainer &) = delete;
  Trainer &operator=(const Trainer &) = delete;
  ~Trainer() { loom_trainer_release(t_); }

  static Status create(const Session &session, Trainer &out) {
    loom_trainer *t = nullptr;
    Status status(loom_trainer_create(session.get(), &t));
    out = Trainer(t);
    return status;
  }

  size_t batchInputCount() const { return loom_trainer_batch_input_count(t_); }
  loom_tensor_info batchInput(size_t i) const {
    loom_tensor_info info = {};
    Status(loom_trainer_batch_input_info(t_, i, &info));
    return info;
  }
  std::string labels() const { return loom_trainer_labels(t_); }
  std::string description() const { return loom_trainer_description(t_); }
  int32_t accumulate() const { return loom_trainer_accumulate(t_); }

  /// One micro-batch, the batch inputs in order; `stats` may be null.
  Status step(const std::vector<const Tensor *> &batch,
              loom_train_stats *stats = nullptr) {
    std::vector<const loom_tensor *> in;
    for (const Tensor *t : batch)
      in.push_back(t ? t->get() : nullptr);
    return Status(loom_trainer_step(t_, in.data(), in.size(), stats));
  }

  int64_t microStep() const { return loom_trainer_micro_step(t_); }
  int64_t totalSteps() const { return loom_trainer_total_steps(t_); }
  Status setTotalSteps(int64_t steps) {
    return Status(loom_trainer_set_total_steps(t_, steps));
  }

  size_t stateCount() const { return loom_trainer_state_count(t_); }
  /// The state tensor named `name` (owned by the trainer, valid until the
  /// next step or load), or null.
  const loom_tensor *state(const std::string &name) const {
    const loom_tensor *t = nullptr;
    Status(loom_trainer_find_state(t_, name.c_str(), &t));
    return t;
  }
  /// Sets state tensor `name` to a copy of `value` (loom_trainer_set_state).
  Status setState(const std::string &name, const loom_tensor *value) {
    return Status(loom_trainer_set_state(t_, name.c_str(), value));
  }

  Status save(const std::string &path) const {
    return Status(loom_trainer_save(t_, path.c_str()));
  }
  Status load(const std::string &path) {
    return Status(loom_trainer_load(t_, path.c_str()));
  }

  loom_trainer *get() const { return t_; }

private:
  explicit Trainer(loom_trainer *t) : t_(t) {}
  loom_trainer *t_ = nullptr;
};

} // namespace loom

#endif // LOOM_RUNTIME_HPP
