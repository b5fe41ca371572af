//===- Model.cpp - one served model: its session and its batcher ----------===//

#include "tools/loom-serve/Model.h"

#include <cstdint>
#include <cstring>

namespace loom::serve {

namespace {

/// Takes a status's message and frees it.
std::string take(loom_status status) {
  std::string message = loom_status_message(status);
  loom_status_free(status);
  return message;
}

TensorSpec toSpec(const loom_tensor_info &info) {
  TensorSpec s;
  s.name = info.name;
  s.dtype = info.dtype;
  s.dims.assign(info.dims, info.dims + info.rank);
  for (size_t d = 0; d < info.rank; ++d)
    s.dimNames.push_back(info.dim_names[d] ? info.dim_names[d] : "");
  return s;
}

/// Whether dim 0 of every input and output is one dynamic batch dim: one
/// name (or none) on the inputs, the same or none on the outputs (shape
/// inference may not name them; a run checks their size), a name used in
/// no other dim.
bool batchDimIsShared(const ModelSpec &spec) {
  if (spec.inputs.empty() || spec.outputs.empty())
    return false;
  const std::string &batch = spec.inputs[0].dimNames.empty()
                                 ? std::string()
                                 : spec.inputs[0].dimNames[0];
  for (const auto *list : {&spec.inputs, &spec.outputs})
    for (const TensorSpec &s : *list) {
      if (s.dims.empty() || s.dims[0] >= 0)
        return false;
      if (s.dimNames[0] != batch &&
          (list == &spec.inputs || !s.dimNames[0].empty()))
        return false;
      for (size_t d = 1; d < s.dims.size(); ++d)
        if (!batch.empty() && s.dimNames[d] == batch)
          return false;
    }
  return true;
}

int64_t rowsOf(const InferRequest &request) {
  return loom_tensor_shape(request.inputs[0].get())[0];
}

/// Bytes of one dim-0 row of `t`.
size_t rowBytes(const loom_tensor *t) {
  int64_t rows = loom_tensor_rank(t) ? loom_tensor_shape(t)[0] : 0;
  return rows ? loom_tensor_size_bytes(t) / static_cast<size_t>(rows) : 0;
}

} // namespace

struct Model::Pending {
  const InferRequest *request;
  std::vector<TensorPtr> outputs;
  HttpError error;
  bool ok = false, done = false;
};

struct Model::Batch {
  std::vector<Pending *> items;
  int64_t rows = 0;
  bool full = false;
};

std::unique_ptr<Model>
Model::load(loom_instance *instance, const std::string &name,
            const std::string &path, const BatchOptions &batching,
            size_t maxConcurrentRuns, std::string &error) {
  std::unique_ptr<Model> model(new Model());
  if (loom_status s = loom_session_create_from_file(instance, path.c_str(),
                                                    &model->session_)) {
    error = take(s);
    return nullptr;
  }
  if (loom_session_is_training(model->session_)) {
    error = path + ": a training artifact (loomc train) cannot be served";
    return nullptr;
  }
  if (loom_session_mesh(model->session_, 0, nullptr, nullptr, nullptr)) {
    error = path + ": an artifact compiled for a mesh cannot be served";
    return nullptr;
  }
  if (loom_status s = loom_session_set_max_concurrent_runs(model->session_,
                                                           maxConcurrentRuns)) {
    error = take(s);
    return nullptr;
  }
  model->spec_.name = name;
  for (size_t i = 0; i < loom_session_input_count(model->session_); ++i) {
    loom_tensor_info info;
    if (loom_status s = loom_session_input_info(model->session_, i, &info)) {
      error = take(s);
      return nullptr;
    }
    model->spec_.inputs.push_back(toSpec(info));
  }
  for (size_t i = 0; i < loom_session_output_count(model->session_); ++i) {
    loom_tensor_info info;
    if (loom_status s = loom_session_output_info(model->session_, i, &info)) {
      error = take(s);
      return nullptr;
    }
    model->spec_.outputs.push_back(toSpec(info));
  }
  for (const auto *list : {&model->spec_.inputs, &model->spec_.outputs})
    for (const TensorSpec &s : *list)
      if (!datatypeName(s.dtype)) {
        error = path + ": '" + s.name + "' has dtype " +
                loom_dtype_name(s.dtype) +
                ", which the inference protocol cannot carry";
        return nullptr;
      }
  model->batching_ = batching;
  model->freeSlots_ = maxConcurrentRuns ? maxConcurrentRuns : SIZE_MAX;
  model->batchable_ = batching.maxRows > 1 && batchDimIsShared(model->spec_);
  return model;
}

Model::~Model() { loom_session_release(session_); }

loom_session_memory Model::memory() const {
  loom_session_memory m = {};
  if (loom_status s = loom_session_memory_stats(session_, &m))
    loom_status_free(s);
  return m;
}

bool Model::runAlone(const InferRequest &request,
                     std::vector<TensorPtr> &outputs, HttpError &error) {
  std::vector<const loom_tensor *> in;
  for (const TensorPtr &t : request.inputs)
    in.push_back(t.get());
  std::vector<loom_tensor *> out(spec_.outputs.size(), nullptr);
  loom_status s =
      loom_session_run(session_, in.data(), in.size(), out.data(), out.size());
  if (s) {
    loom_status_code code = loom_status_get_code(s);
    // The request was checked against the signature: what the model still
    // rejects is a value of the request (a bad input); anything else is
    // the server's failure.
    int status = code == LOOM_INVALID_ARGUMENT || code == LOOM_SHAPE_MISMATCH
                     ? 400
                     : 500;
    error = {status, take(s)};
    return false;
  }
  outputs.clear();
  for (loom_tensor *t : out)
    outputs.emplace_back(t);
  return true;
}

bool Model::fits(const Batch &batch, const InferRequest &request) {
  const InferRequest &first = *batch.items.front()->request;
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const loom_tensor *a = first.inputs[i].get(), *b = request.inputs[i].get();
    size_t rank = loom_tensor_rank(a);
    if (loom_tensor_rank(b) != rank ||
        !std::equal(loom_tensor_shape(a) + 1, loom_tensor_shape(a) + rank,
                    loom_tensor_shape(b) + 1))
      return false;
  }
  return true;
}

void Model::runBatch(Batch &batch, const std::function<void(size_t)> &onRun) {
  auto oneByOne = [&] {
    for (Pending *p : batch.items) {
      p->ok = runAlone(*p->request, p->outputs, p->error);
      onRun(1);
    }
  };
  if (batch.items.size() == 1)
    return oneByOne();
  // The inputs, concatenated along dim 0.
  InferRequest merged;
  const InferRequest &first = *batch.items.front()->request;
  for (size_t i = 0; i < first.inputs.size(); ++i) {
    const loom_tensor *t = first.inputs[i].get();
    std::vector<int64_t> shape(loom_tensor_shape(t),
                               loom_tensor_shape(t) + loom_tensor_rank(t));
    shape[0] = batch.rows;
    loom_tensor *m = nullptr;
    if (loom_status s = loom_tensor_create(loom_tensor_dtype(t), shape.size(),
                                           shape.data(), &m)) {
      loom_status_free(s);
      return oneByOne();
    }
    merged.inputs.emplace_back(m);
    char *dst = static_cast<char *>(loom_tensor_data(m));
    for (Pending *p : batch.items) {
      const loom_tensor *part = p->request->inputs[i].get();
      size_t bytes = loom_tensor_size_bytes(part);
      if (bytes)
        std::memcpy(dst, loom_tensor_data_const(part), bytes);
      dst += bytes;
    }
  }
  std::vector<TensorPtr> outputs;
  HttpError error;
  if (!runAlone(merged, outputs, error)) {
    if (error.status == 400)
      return oneByOne(); // one request's values: find it
    for (Pending *p : batch.items)
      p->error = error;
    onRun(batch.items.size());
    return;
  }
  onRun(batch.items.size());
  for (const TensorPtr &o : outputs)
    if (!loom_tensor_rank(o.get()) ||
        loom_tensor_shape(o.get())[0] != batch.rows)
      return oneByOne(); // an output that is not per row after all
  // Each request's rows of each output.
  std::vector<size_t> offsets(outputs.size(), 0);
  for (Pending *p : batch.items) {
    int64_t rows = rowsOf(*p->request);
    p->outputs.clear();
    for (size_t o = 0; o < outputs.size(); ++o) {
      const loom_tensor *all = outputs[o].get();
      std::vector<int64_t> shape(loom_tensor_shape(all),
                                 loom_tensor_shape(all) +
                                     loom_tensor_rank(all));
      shape[0] = rows;
      loom_tensor *part = nullptr;
      if (loom_status s = loom_tensor_create(
              loom_tensor_dtype(all), shape.size(), shape.data(), &part)) {
        p->error = {500, take(s)};
        break;
      }
      p->outputs.emplace_back(part);
      size_t bytes = rowBytes(all) * static_cast<size_t>(rows);
      if (bytes)
        std::memcpy(loom_tensor_data(part),
                    static_cast<const char *>(loom_tensor_data_const(all)) +
                        offsets[o],
                    bytes);
      offsets[o] += bytes;
    }
    p->ok = p->outputs.size() == outputs.size();
  }
}

bool Model::infer(const InferRequest &request, std::vector<TensorPtr> &outputs,
                  HttpError &error, const std::function<void(size_t)> &onRun) {
  int64_t rows = batchable_ ? rowsOf(request) : 0;
  if (!batchable_ || rows <= 0 || rows >= batching_.maxRows) {
    bool ok = runAlone(request, outputs, error);
    onRun(1);
    return ok;
  }
  Pending me{&request};
  std::unique_lock<std::mutex> lock(mutex_);
  if (open_ && !open_->full && open_->rows + rows <= batching_.maxRows &&
      fits(*open_, request)) {
    // Join the open batch; its leader runs it.
    open_->items.push_back(&me);
    open_->rows += rows;
    if (open_->rows == batching_.maxRows) {
      open_->full = true;
      open_.reset();
      changed_.notify_all();
    }
    changed_.wait(lock, [&] { return me.done; });
  } else {
    // Lead a new batch: wait for others to join, then run it.
    auto batch = std::make_shared<Batch>();
    batch->items.push_back(&me);
    batch->rows = rows;
    open_ = batch;
    changed_.wait_for(lock, batching_.maxWait, [&] { return batch->full; });
    // While every run slot is busy the batch stays open: requests that
    // arrive meanwhile join it instead of queueing behind it.
    changed_.wait(lock, [&] { return freeSlots_ > 0; });
    --freeSlots_;
    if (open_ == batch)
      open_.reset();
    lock.unlock();
    runBatch(*batch, onRun);
    lock.lock();
    ++freeSlots_;
    for (Pending *p : batch->items)
      p->done = true;
    changed_.notify_all();
  }
  if (!me.ok) {
    error = me.error.status ? me.error : HttpError{500, "the run failed"};
    return false;
  }
  outputs = std::move(me.outputs);
  return true;
}

} // namespace loom::serve
